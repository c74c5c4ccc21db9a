// VMImportTask preflight on the real API server with the simulator: every check fails the task (or the VM)
// before any Forklift object exists, with a reason and a message a tenant can act on; a task whose source
// turns Ready later proceeds by itself.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask, VMImportTaskSpec } from '../../src/api/types.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, getSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-preflight.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [
    { id: 'host-1', address: '192.0.2.10' },
    // vCenter advertises this host inside the Service CIDR (10.96.0.0/12); 192.0.2.31 reaches it.
    { id: 'host-2', address: '10.96.0.50', otherAddresses: ['192.0.2.31'] },
  ],
  networks: ['VM Network', 'backup'],
  vms: [
    { id: 'vm-1', name: 'web01', disks: [{ capacityGiB: 16 }] },
    { id: 'vm-2', name: 'svc01', host: 'host-2', disks: [{ capacityGiB: 2 }] },
    { id: 'vm-3', name: 'twonic01', nics: [{ network: 'VM Network' }, { network: 'backup' }] },
  ],
});

let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({
    worlds: [world],
    storageClasses: [{ name: 'pf-fast' }, { name: 'pf-wffc', bindingMode: 'WaitForFirstConsumer' }],
  });
  c = booted.c;
});

after(async () => {
  await booted?.shutdown();
});

const creds = { username: world.user, password: world.password, caCert: world.caPEM };

async function readySource(ns: string, extra: object = {}): Promise<void> {
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: creds, ...extra });
  await waitForReason(c, ns, 'vc', 'Connected');
}

async function createTask(ns: string, name: string, spec: Partial<VMImportTaskSpec> & { vms: VMImportTaskSpec['vms'] }): Promise<void> {
  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name, namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'pf-fast', ...spec } } as KubeObject);
}

async function getTask(ns: string, name: string): Promise<VMImportTask | undefined> {
  return (await c.get(GVRs.VMImportTask, ns, name)) as unknown as VMImportTask | undefined;
}

const cond = (t: VMImportTask | undefined, type: string) => t?.status?.conditions?.find((x) => x.type === type);

async function waitForEnd(ns: string, name: string): Promise<VMImportTask> {
  return await waitFor(`task ${name} to end`, async () => {
    const t = await getTask(ns, name);
    return t?.status?.completedAt ? t : undefined;
  }, { timeoutMs: 60_000 });
}

async function forkliftObjects(ns: string): Promise<string[]> {
  const out: string[] = [];
  for (const gvr of [GVRs.NetworkMap, GVRs.StorageMap, GVRs.Plan, GVRs.Migration, GVRs.DataVolume]) {
    for (const o of (await c.list(gvr, ns)).items) out.push(`${gvr.kind}/${o.metadata?.name}`);
  }
  return out;
}

/** The task failed in preflight with `reason` and created nothing of Forklift's. */
async function assertRefused(ns: string, name: string, reason: string, message: RegExp): Promise<VMImportTask> {
  const t = await waitForEnd(ns, name);
  assert.equal(t.status?.phase, 'Failed');
  const ready = cond(t, 'Ready')!;
  assert.equal(ready.status, 'False');
  assert.equal(ready.reason, reason, ready.message);
  assert.match(ready.message, message);
  assert.equal(cond(t, 'Validated')?.status, 'False');
  assert.equal(cond(t, 'Validated')?.reason, reason);
  assert.deepEqual(await forkliftObjects(ns), []);
  return t;
}

test('a task naming a WaitForFirstConsumer class fails before any Forklift object exists, naming the class and the Immediate ones', async () => {
  const ns = await freshNamespace('pf-wffc');
  await readySource(ns);
  await createTask(ns, 't', { vms: [{ id: 'vm-1' }], storageClass: 'pf-wffc' });
  await assertRefused(ns, 't', 'StorageClassWaitForFirstConsumer', /"pf-wffc" has volumeBindingMode WaitForFirstConsumer.*pf-fast/);
});

test('a task naming a class that does not exist fails with StorageClassNotFound before any Forklift object exists', async () => {
  const ns = await freshNamespace('pf-nosc');
  await readySource(ns);
  await createTask(ns, 't', { vms: [{ id: 'vm-1' }], storageClass: 'no-such-class' });
  await assertRefused(ns, 't', 'StorageClassNotFound', /"no-such-class" does not exist/);
});

test('a VM the inventory does not know fails with VMNotFound before any Forklift object exists', async () => {
  const ns = await freshNamespace('pf-novm');
  await readySource(ns);
  await createTask(ns, 't', { vms: [{ id: 'vm-999' }] });
  await assertRefused(ns, 't', 'VMNotFound', /vm-999 is not in the inventory/);
});

test('an output name too long for its VMDisks fails with InvalidOutputName before any Forklift object exists', async () => {
  const ns = await freshNamespace('pf-name');
  await readySource(ns);
  const name = 'a'.repeat(40);
  await createTask(ns, 't', { vms: [{ id: 'vm-1', name }] });
  await assertRefused(ns, 't', 'InvalidOutputName', /VMDisk name "a{40}-disk-0" is 47 characters; the limit is 45/);
});

test('an output name taken by someone else\'s VMInstance fails with OutputExists and is never overwritten', async () => {
  const ns = await freshNamespace('pf-taken');
  await readySource(ns);
  await c.create(GVRs.VMInstance, { apiVersion: 'apps.cozystack.io/v1alpha1', kind: 'VMInstance', metadata: { name: 'web01', namespace: ns }, spec: { runStrategy: 'Halted' } } as KubeObject);
  const before = await c.get(GVRs.VMInstance, ns, 'web01');
  await createTask(ns, 't', { vms: [{ id: 'vm-1' }] });
  await assertRefused(ns, 't', 'OutputExists', /VMInstance "web01" already exists.*not belong to this task/);
  // Cozystack's own status (its release) may move; what the tenant wrote may not.
  const after = await c.get(GVRs.VMInstance, ns, 'web01');
  assert.equal(after?.metadata?.generation, before?.metadata?.generation);
  assert.deepEqual([after?.spec, after?.metadata?.labels, after?.metadata?.annotations], [before?.spec, before?.metadata?.labels, before?.metadata?.annotations]);
});

test('a VM whose ESXi host vCenter advertises inside the Service CIDR fails with HostAddressInServiceCIDR naming host, address and range', async () => {
  const ns = await freshNamespace('pf-cidr');
  await readySource(ns);
  await createTask(ns, 't', { vms: [{ id: 'vm-2' }] });
  await assertRefused(ns, 't', 'HostAddressInServiceCIDR', /host-2.*10\.96\.0\.50.*10\.96\.0\.0\/12.*spec\.hosts/);
});

test('with a spec.hosts override for that host the same VM passes preflight', async () => {
  const ns = await freshNamespace('pf-cidr-ok');
  await readySource(ns, { hosts: [{ id: 'host-2', address: '192.0.2.31', credentials: { username: 'root', password: 'esxi-host-2', insecureSkipVerify: true } }] });
  await createTask(ns, 't', { vms: [{ id: 'vm-2' }] });
  const t = await waitFor('Validated=True', async () => {
    const x = await getTask(ns, 't');
    return cond(x, 'Validated')?.status === 'True' ? x : undefined;
  }, { timeoutMs: 60_000 });
  assert.notEqual(t.status?.vms?.[0]?.reason, 'HostAddressInServiceCIDR');
});

test('an import that cannot fit the namespace quota fails with QuotaExceeded before any Forklift object exists', async () => {
  const ns = await freshNamespace('pf-quota');
  await readySource(ns);
  await c.create(GVRs.ResourceQuota, { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'storage', namespace: ns }, spec: { hard: { 'requests.storage': '20Gi' } } } as KubeObject);
  await waitFor('quota status', async () => ((await c.get(GVRs.ResourceQuota, ns, 'storage')) as { status?: { hard?: object } } | undefined)?.status?.hard);
  await createTask(ns, 't', { vms: [{ id: 'vm-1' }] });
  await assertRefused(ns, 't', 'QuotaExceeded', /requests\.storage to 20\.0 GiB.*certainly needs 32\.0 GiB/);
});

test("a quota that holds the certain need but maybe not CDI's prime claims lets the import run, warning with a QuotaMayBeExceeded Event", async () => {
  const ns = await freshNamespace('pf-quota');
  await readySource(ns);
  // web01 is one 16 GiB disk: 32 GiB certain (its claim, and twice during the handoff), up to 33.9 GiB
  // on a CSI class (CDI's prime claim, 6% overhead). The API server's quota admission enforces it.
  await c.create(GVRs.ResourceQuota, { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'storage', namespace: ns }, spec: { hard: { 'requests.storage': '32.5Gi' } } } as KubeObject);
  await waitFor('quota status', async () => ((await c.get(GVRs.ResourceQuota, ns, 'storage')) as { status?: { hard?: object } } | undefined)?.status?.hard);
  await createTask(ns, 't', { vms: [{ id: 'vm-1' }] });
  const t = await waitFor('the task to end', async () => {
    const x = await getTask(ns, 't');
    return x?.status?.completedAt ? x : undefined;
  }, { timeoutMs: 120_000 });
  assert.equal(t.status?.vms?.[0]?.phase, 'Succeeded', JSON.stringify(t.status?.vms?.[0]));
  const events = (await c.list(GVRs.Event, ns)).items as Array<KubeObject & { reason?: string; message?: string }>;
  const warn = events.find((e) => e.reason === 'QuotaMayBeExceeded');
  assert.ok(warn, 'a QuotaMayBeExceeded Event');
  assert.match(warn.message ?? '', /may need up to 33\.9 GiB/);
});

test('a VM with two NICs on the pod network is refused up front, naming Forklift\'s check and the fix', async () => {
  const ns = await freshNamespace('pf-nics');
  await readySource(ns);
  await createTask(ns, 't', { vms: [{ id: 'vm-3' }] });
  await assertRefused(ns, 't', 'PlanNotValid', /2 NICs mapped to the pod network.*VMMultiplePodNetworkMappings.*spec\.networks/);
});

test('a preflight failure of one VM does not stop its sibling', async () => {
  const ns = await freshNamespace('pf-sib');
  await readySource(ns);
  await createTask(ns, 't', { vms: [{ id: 'vm-1' }, { id: 'vm-2' }] });
  const t = await waitForEnd(ns, 't');
  assert.equal(t.status?.vms?.find((v) => v.id === 'vm-2')?.reason, 'HostAddressInServiceCIDR');
  assert.equal(t.status?.vms?.find((v) => v.id === 'vm-1')?.phase, 'Succeeded');
  assert.equal(cond(t, 'Ready')?.reason, 'PartiallyFailed');
});

test('a task whose source is not Ready waits in Pending naming the source\'s reason, and proceeds by itself once it is', async () => {
  const ns = await freshNamespace('pf-late');
  await createTask(ns, 't', { vms: [{ id: 'vm-1' }] });
  const missing = await waitFor('SourceNotFound', async () => {
    const t = await getTask(ns, 't');
    return cond(t, 'Ready')?.reason === 'SourceNotFound' ? t : undefined;
  });
  assert.equal(missing.status?.phase, 'Pending');
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { ...creds, password: 'wrong' } });
  const waiting = await waitFor('SourceNotReady naming AuthenticationFailed', async () => {
    const t = await getTask(ns, 't');
    return cond(t, 'Ready')?.reason === 'SourceNotReady' && /AuthenticationFailed/.test(cond(t, 'Ready')!.message) ? t : undefined;
  }, { timeoutMs: 30_000 });
  assert.equal(waiting.status?.phase, 'Pending');
  assert.deepEqual(await forkliftObjects(ns), []);
  const src = (await getSource(c, ns, 'vc'))!;
  await c.patch(GVRs.VMImportSource, ns, 'vc', { spec: { credentials: { ...src.spec.credentials, password: world.password } } });
  const done = await waitForEnd(ns, 't');
  assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
});
