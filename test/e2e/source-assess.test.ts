// The readiness assessment, end to end on the real API server with the simulator: a source publishes each
// VM's facts, concerns and verdict with a per-verdict summary in its printer columns; a task naming a
// Blocked VM is refused at admission in Forklift's words with the fix; a ReadyWithWarnings VM imports and
// keeps its warnings in status; an inventory that cannot be read shows on the source as Degraded.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter, type Sim } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { SourceInventoryVM, VMImportSource, VMImportTask } from '../../src/api/types.ts';
import { InventoryClient } from '../../src/forklift/inventory.ts';
import { startTestWebhook, type TestWebhook } from '../../src/webhook/testkit.ts';
import { freshNamespace, kubectl, testEnv, waitFor } from './env/index.ts';
import { applyAs, bootWorld, denial, tenantWithRole, waitForWebhookEffective, type BootedWorld } from './fixtures.ts';
import { createSource, getSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-assess.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.10' }],
  vms: [
    // Nothing to say: CBT on, a supported guest running its Tools.
    { id: 'vm-1', name: 'web01', changeTrackingEnabled: true, disks: [{ capacityGiB: 2 }] },
    // Forklift's rdm_disk policy: Critical.
    { id: 'vm-2', name: 'db01', changeTrackingEnabled: true, disks: [{ capacityGiB: 2 }, { capacityGiB: 1, rdm: true }] },
    // Ours: a shared (multi-writer) disk cannot be handed to one VMInstance.
    { id: 'vm-3', name: 'cluster01', changeTrackingEnabled: true, disks: [{ capacityGiB: 2 }, { capacityGiB: 1, shared: true }] },
    // UEFI with Secure Boot and a TPM (Forklift's tpm_enabled policy): Warnings only.
    { id: 'vm-4', name: 'app01', changeTrackingEnabled: true, firmware: 'efi', secureBoot: true, tpmEnabled: true, disks: [{ capacityGiB: 2 }] },
  ],
});

let booted: BootedWorld;
let sim: Sim;
let c: KubeClient;
let wh: TestWebhook | undefined;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'assess-fast' }] });
  ({ sim, c } = booted);
});

after(async () => {
  await sim?.setInventoryCertMismatch(false).catch(() => undefined);
  await wh?.stop();
  await booted?.shutdown();
});

const creds = { username: world.user, password: world.password, caCert: world.caPEM };
const entry = (s: VMImportSource | undefined, id: string): SourceInventoryVM | undefined => s?.status?.inventory?.vms.find((v) => v.id === id);

async function assessedSource(ns: string): Promise<VMImportSource> {
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: creds });
  await waitForReason(c, ns, 'vc', 'Connected');
  return await waitFor('the assessed inventory', async () => {
    const s = await getSource(c, ns, 'vc');
    return s?.status?.inventory?.summary ? s : undefined;
  }, { timeoutMs: 30_000 });
}

test('a source publishes each VM\'s facts, concerns and verdict, and kubectl get shows the VMs per verdict', async () => {
  const ns = await freshNamespace('assess');
  const s = await assessedSource(ns);
  assert.deepEqual(s.status?.inventory?.summary, { ready: 1, readyWithWarnings: 1, blocked: 2 });
  assert.deepEqual(s.status?.inventory?.vms.map((v) => [v.id, v.verdict]), [['vm-4', 'ReadyWithWarnings'], ['vm-3', 'Blocked'], ['vm-2', 'Blocked'], ['vm-1', 'Ready']]);

  const web = entry(s, 'vm-1')!;
  assert.deepEqual(
    { power: web.power, os: web.os, guestId: web.guestId, firmware: web.firmware, tools: web.tools, cbt: web.cbt, disks: web.disks, nics: web.nics, concerns: web.concerns },
    { power: 'poweredOn', os: 'linux', guestId: 'rhel9_64Guest', firmware: 'bios', tools: 'running', cbt: true, disks: [{ capacity: 2 * 2 ** 30, bus: 'scsi', mode: 'persistent' }], nics: [{ network: 'network-1' }], concerns: [] },
  );
  // Forklift's concern, as its inventory computed it, with its category.
  const db = entry(s, 'vm-2')!;
  assert.deepEqual(db.disks?.[1], { capacity: 2 ** 30, bus: 'scsi', mode: 'persistent', rdm: true });
  assert.deepEqual(db.concerns?.map((x) => [x.id, x.category, x.label]), [['vmware.disk.rdm.detected', 'Critical', 'Raw Device Mapped disk detected']]);
  // Ours: Forklift raises nothing for a shared disk.
  assert.deepEqual(entry(s, 'vm-3')!.concerns?.map((x) => [x.id, x.category]), [['cozystack.disk.shared', 'Critical']]);
  const app = entry(s, 'vm-4')!;
  assert.deepEqual([app.firmware, app.secureBoot], ['efi', true]);
  assert.deepEqual(app.concerns?.map((x) => [x.id, x.category]), [['vmware.tpm.detected', 'Warning'], ['cozystack.firmware.efi', 'Warning'], ['cozystack.firmware.secure_boot', 'Warning']]);

  const r = await kubectl(['get', 'vmimportsource', 'vc', '-n', ns]);
  assert.equal(r.code, 0, r.stderr);
  const [head, row] = r.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/));
  const col = (name: string) => row![head!.indexOf(name)];
  assert.deepEqual([col('VMS'), col('READY-VMS'), col('WARNINGS'), col('BLOCKED')], ['4', '1', '1', '2']);
});

test('a task naming a Blocked VM is refused at admission in Forklift\'s words with the fix; a ReadyWithWarnings VM is admitted with warnings, imports, and keeps them in status', async () => {
  const ns = await freshNamespace('assess-admit');
  // The source first (the test webhook would seal its password with a key the controller does not hold),
  // then the namespace joins the webhook.
  await assessedSource(ns);
  const env = await testEnv();
  const inventory = new InventoryClient({ baseURL: sim.inventory.url, ca: () => sim.inventory.caPEM, token: () => env.admin.token, timeoutMs: 2000 });
  wh = await startTestWebhook({ client: c, inventory });
  await c.patch(GVRs.Namespace, undefined, ns, { metadata: { labels: { [wh.selector.key]: wh.selector.value } } });
  const task = (name: string, id: string) => ({ apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name }, spec: { sourceRef: { name: 'vc' }, storageClass: 'assess-fast', vms: [{ id }] } });
  await waitForWebhookEffective(ns, { ...task('probe', 'vm-1'), spec: { sourceRef: { name: 'absent' }, vms: [{ id: 'vm-1' }] } });
  const tenant = await tenantWithRole(ns);

  const refused = await applyAs(tenant, ns, task('db', 'vm-2'));
  assert.notEqual(refused.code, 0);
  assert.equal(
    denial(refused.stderr),
    'spec.vms[0]: VM "db01" (vm-2) is Blocked: Raw Device Mapped disk detected (Critical, Forklift): RDM disks are not currently supported by Migration Toolkit for Virtualization. The VM cannot be migrated unless the RDM disks are removed. You can reattach them to the VM after migration. Fix: remove the RDM disk from the VM in vSphere (copy its data to a virtual disk if it must come along) and import again.',
  );
  assert.equal(await c.get(GVRs.VMImportTask, ns, 'db'), undefined);
  const shared = await applyAs(tenant, ns, task('cluster', 'vm-3'));
  assert.match(denial(shared.stderr), /^spec\.vms\[0\]: VM "cluster01" \(vm-3\) is Blocked: Shared disk detected \(Critical, migration-controller\): .* Fix: detach the shared disk/);

  const ok = await applyAs(tenant, ns, task('app', 'vm-4'));
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stderr, /Warning: spec\.vms\[0\]: VM "app01" \(vm-4\): TPM detected \(Warning, Forklift\): The VM is configured with a TPM device\. TPM data will not be transferred during the migration\./);
  assert.match(ok.stderr, /Warning: spec\.vms\[0\]: VM "app01" \(vm-4\): UEFI with Secure Boot \(Warning, migration-controller\)/);
  const done = await waitFor('the ReadyWithWarnings VM imported', async () => {
    const t = (await c.get(GVRs.VMImportTask, ns, 'app')) as unknown as VMImportTask | undefined;
    return t?.status?.phase === 'Succeeded' || t?.status?.phase === 'Failed' ? t : undefined;
  }, { timeoutMs: 120_000 });
  const vm = done.status!.vms![0]!;
  assert.equal(vm.phase, 'Succeeded', JSON.stringify(vm));
  assert.deepEqual(vm.warnings?.map((w) => w.slice(0, w.indexOf(':'))), ['TPM detected (Warning, Forklift)', 'UEFI firmware (Warning, migration-controller)', 'UEFI with Secure Boot (Warning, migration-controller)']);
  await wh.stop();
  wh = undefined;
});

test('a task created around the webhook naming a Blocked VM fails at preflight before any Forklift object exists', async () => {
  const ns = await freshNamespace('assess-preflight');
  await assessedSource(ns);
  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 't', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'assess-fast', vms: [{ id: 'vm-3' }] } } as KubeObject);
  const t = await waitFor('the task failed', async () => {
    const x = (await c.get(GVRs.VMImportTask, ns, 't')) as unknown as VMImportTask | undefined;
    return x?.status?.phase === 'Failed' ? x : undefined;
  }, { timeoutMs: 30_000 });
  const vm = t.status!.vms![0]!;
  assert.equal(vm.reason, 'VMBlocked');
  assert.match(vm.message ?? '', /^VM cluster01 cannot be imported: Shared disk detected \(Critical, migration-controller\): /);
  for (const gvr of [GVRs.Plan, GVRs.NetworkMap, GVRs.StorageMap]) assert.deepEqual((await c.list(gvr, ns)).items, [], `no ${gvr.kind}`);
});

test('a source whose Forklift inventory cannot be read reports Degraded InventoryUnavailable since when within seconds, and clears it by itself', async () => {
  const ns = await freshNamespace('assess-fault');
  // The inventory keeps its certificate while the published CA no longer matches it: every read fails.
  await sim.setInventoryCertMismatch(true);
  const createdAt = Date.now();
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: creds });
  const degraded = async () => (await getSource(c, ns, 'vc'))?.status?.conditions?.find((x) => x.type === 'Degraded');
  const d = await waitFor('Degraded=True', async () => {
    const x = await degraded();
    return x?.status === 'True' ? x : undefined;
  }, { timeoutMs: 20_000 });
  assert.equal(d.reason, 'InventoryUnavailable');
  assert.match(d.message, /^failing since \S+ \(\d+ attempts, retrying with backoff\): Forklift's inventory service cannot be read: .*rollout restart deploy\/forklift-controller/);
  const since = Date.parse(/failing since (\S+)/.exec(d.message)![1]!);
  assert.ok(since >= Math.floor(createdAt / 1000) * 1000 - 1000 && since <= Date.now(), d.message);
  // The connection itself is fine: Ready stays Connected while the inventory fails.
  assert.equal((await getSource(c, ns, 'vc'))?.status?.conditions?.find((x) => x.type === 'Ready')?.reason, 'Connected');

  await sim.setInventoryCertMismatch(false);
  const cleared = await waitFor('Degraded=False', async () => {
    const x = await degraded();
    return x?.status === 'False' ? x : undefined;
  }, { timeoutMs: 90_000 });
  assert.equal(cleared.reason, 'Recovered');
  await waitFor('the inventory published', async () => (await getSource(c, ns, 'vc'))?.status?.inventory?.summary, { timeoutMs: 30_000 });
});
