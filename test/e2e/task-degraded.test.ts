// Faults the tenant cannot see reach the task's status: a reconcile that keeps failing sets Degraded,
// naming what fails and since when, and clears it by itself once the cause is gone.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter, type Sim } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-degraded.example.com/sdk';
const world = vcenter({ url: URL_VC, hosts: [{ id: 'host-1', address: '192.0.2.10' }], vms: [
  { id: 'vm-1', name: 'app01', disks: [{ capacityGiB: 2 }] },
  // Its transfer holds at 99.92% for conversionMs (CDI's qemu-img convert): a window in which its transfer
  // claim exists and the handoff's has not been asked for yet.
  { id: 'vm-2', name: 'app02', disks: [{ capacityGiB: 2 }], faults: { conversionFreeze: true } },
] });

let booted: BootedWorld;
let sim: Sim;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'degraded-fast' }], sim: { timings: { conversionMs: 15_000 } } });
  ({ sim, c } = booted);
});

after(async () => {
  await sim?.setInventoryCertMismatch(false).catch(() => undefined);
  await booted?.shutdown();
});

const degradedOf = async (ns: string): Promise<{ status: string; reason: string; message: string; lastTransitionTime: string } | undefined> => {
  const t = (await c.get(GVRs.VMImportTask, ns, 't')) as unknown as VMImportTask | undefined;
  return t?.status?.conditions?.find((x) => x.type === 'Degraded');
};

test('a task whose preflight cannot read Forklift\'s inventory reports Degraded InventoryUnavailable since when within seconds, and clears it by itself once the inventory answers', async () => {
  const ns = await freshNamespace('degraded');
  // The inventory keeps its certificate while the published CA no longer matches it: every new connection
  // to it fails (set before anything here reads the inventory).
  await sim.setInventoryCertMismatch(true);
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  const createdAt = Date.now();
  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 't', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'degraded-fast', vms: [{ id: 'vm-1' }] } } as KubeObject);
  // Within one backoff step of becoming a fault: seconds, not the 16 minutes of an uncapped backoff.
  const d = await waitFor('Degraded=True', async () => {
    const x = await degradedOf(ns);
    return x?.status === 'True' ? x : undefined;
  }, { timeoutMs: 10_000 });
  assert.equal(d.reason, 'InventoryUnavailable');
  assert.match(d.message, /^failing since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(\d+ attempts, retrying with backoff\): Forklift's inventory service cannot be read: /);
  const since = Date.parse(/failing since (\S+)/.exec(d.message)![1]!);
  assert.ok(since >= Math.floor(createdAt / 1000) * 1000 - 1000 && since <= Date.now(), `since: when the failures began (${d.message})`);
  assert.equal(d.lastTransitionTime, /failing since (\S+)/.exec(d.message)![1]);

  await sim.setInventoryCertMismatch(false);
  const cleared = await waitFor('Degraded=False', async () => {
    const x = await degradedOf(ns);
    return x?.status === 'False' ? x : undefined;
  }, { timeoutMs: 90_000 });
  assert.equal(cleared.reason, 'Recovered');
  assert.match(cleared.message, /after failing since .* \(InventoryUnavailable\)/);
  const t = await waitFor('the VM imported', async () => {
    const x = (await c.get(GVRs.VMImportTask, ns, 't')) as unknown as VMImportTask | undefined;
    return x?.status?.phase === 'Succeeded' ? x : undefined;
  }, { timeoutMs: 60_000 });
  assert.equal(t.status?.phase, 'Succeeded');
  await waitFor('Degraded=False once the import ended', async () => (await degradedOf(ns))?.status === 'False', { timeoutMs: 30_000 });
});

test('a quota that refuses the handoff\'s claim reports Degraded QuotaExceeded with the API server\'s words, and the import finishes once the quota allows it', async () => {
  const ns = await freshNamespace('degraded-quota');
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 't', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'degraded-fast', vms: [{ id: 'vm-2' }] } } as KubeObject);
  // The preflight budgets the handoff's second claim and would refuse a one-claim quota up front, so the
  // quota arrives after it, while the transfer holds at 99.92%: room for Forklift's transfer claim, none
  // for the handoff's target claim beside it.
  await waitFor('the transfer held at 99.92%', async () => ((await c.get(GVRs.VMImportTask, ns, 't')) as unknown as VMImportTask | undefined)?.status?.vms?.[0]?.reason === 'Converting', { timeoutMs: 30_000 });
  await c.create(GVRs.ResourceQuota, { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'claims', namespace: ns }, spec: { hard: { persistentvolumeclaims: '1' } } } as KubeObject);
  // The quota admission refuses every claim until the quota controller has computed its usage.
  await waitFor('quota usage computed', async () => ((await c.get(GVRs.ResourceQuota, ns, 'claims'))?.status as { used?: Record<string, string> } | undefined)?.used?.persistentvolumeclaims === '1');
  const d = await waitFor('Degraded=True', async () => {
    const x = await degradedOf(ns);
    return x?.status === 'True' ? x : undefined;
  }, { timeoutMs: 60_000 });
  assert.equal(d.reason, 'QuotaExceeded');
  assert.match(d.message, /failing since .*a ResourceQuota refuses a write this controller needs: .*exceeded quota: claims/);
  const t0 = (await c.get(GVRs.VMImportTask, ns, 't')) as unknown as VMImportTask;
  assert.equal(t0.status?.vms?.[0]?.phase, 'Creating', 'the VM waits in the handoff, not failed');

  await c.patch(GVRs.ResourceQuota, ns, 'claims', { spec: { hard: { persistentvolumeclaims: '10' } } });
  await waitFor('the VM imported', async () => {
    const x = (await c.get(GVRs.VMImportTask, ns, 't')) as unknown as VMImportTask | undefined;
    return x?.status?.phase === 'Succeeded' ? x : undefined;
  }, { timeoutMs: 90_000 });
  const cleared = await waitFor('Degraded=False once the import ended', async () => {
    const x = await degradedOf(ns);
    return x?.status === 'False' ? x : undefined;
  }, { timeoutMs: 30_000 });
  assert.equal(cleared?.status, 'False', JSON.stringify(cleared));
  assert.equal(cleared?.reason, 'Recovered');
});
