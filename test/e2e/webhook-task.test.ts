// VMImportTask admission, through the real API server: a tenant runs `kubectl apply` and reads the
// message the webhook gives. The Forklift inventory is reached through the webhook's InventoryReader
// interface; here a scripted reader stands in for it (the Forklift inventory cannot run here).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { adminKubeConfig, freshNamespace, installOurCRDs, waitFor } from './env/index.ts';
import { applyAs, denial, tenantWithRole, waitForWebhookEffective } from './fixtures.ts';
import { KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { startTestWebhook, type TestWebhook } from '../../src/webhook/testkit.ts';
import type { InventoryReader, InventoryVM } from '../../src/webhook/validate-task.ts';

const Gi = 2 ** 30;
const id = randomBytes(3).toString('hex');
const FAST = `wh-fast-${id}`;
const LOCAL = `wh-local-${id}`;
let client: KubeClient;
let wh: TestWebhook;
let ns: string;
let tenantKubeconfig: string;

const disks = (n: number, gib = 10) => Array.from({ length: n }, () => ({ capacity: gib * Gi }));
const VMS: Record<string, InventoryVM> = {
  'vm-101': { name: 'web-01', host: 'host-1', disks: disks(1) },
  'vm-102': { name: 'db-01', host: 'host-1', disks: disks(3) },
  'vm-103': { name: 'file-server', host: 'host-1', disks: disks(12) },
  'vm-104': { name: 'legacy-app', host: 'host-9', disks: disks(1) },
  'vm-105': { name: 'archive', host: 'host-1', disks: disks(1, 10) },
};
// Inventory calls per provider, so a test can tell which reviews reached the inventory.
const inventoryCalls: Record<string, number> = {};
const counted = (providerUID: string): void => {
  inventoryCalls[providerUID] = (inventoryCalls[providerUID] ?? 0) + 1;
};
const inventory: InventoryReader = {
  async getVM(providerUID, vmId) {
    counted(providerUID);
    if (providerUID === 'p-flaky') throw new Error('connect ECONNREFUSED forklift-inventory');
    return ['p-lab', 'p-lab2', 'p-lab-fresh'].includes(providerUID) ? VMS[vmId] : undefined;
  },
  async listHosts(providerUID) {
    counted(providerUID);
    if (providerUID === 'p-flaky') throw new Error('connect ECONNREFUSED forklift-inventory');
    // host-9 is advertised inside the Service CIDR (10.96.0.0/12): the trap the seed warns about.
    return [
      { id: 'host-1', name: '192.168.40.11' },
      { id: 'host-9', name: '10.100.3.9' },
    ];
  },
};

function task(name: string, spec: Record<string, unknown>) {
  return { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name }, spec: { sourceRef: { name: 'lab' }, storageClass: FAST, vms: [{ id: 'vm-101' }], ...spec } };
}

const applyAsTenant = (obj: unknown) => applyAs(tenantKubeconfig, ns, obj);

function warnings(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('Warning: '))
    .map((l) => l.slice('Warning: '.length));
}

async function createSource(name: string, providerUID: string | undefined, hosts: unknown[] = []): Promise<void> {
  await client.create(GVRs.VMImportSource, {
    metadata: { name, namespace: ns },
    spec: { type: 'vsphere', url: 'https://vcenter.lab.example/sdk', credentials: { username: 'mtv@vsphere.local', password: 'pw', insecureSkipVerify: true }, hosts },
  } as KubeObject);
  if (providerUID) {
    const now = new Date().toISOString();
    await client.patch(GVRs.VMImportSource, ns, name, { status: { provider: { name, uid: providerUID }, conditions: [{ type: 'Ready', status: 'True', reason: 'Connected', message: 'connected', lastTransitionTime: now }] } }, 'merge', { subresource: 'status' });
  }
}

before(async () => {
  await installOurCRDs();
  client = new KubeClient(await adminKubeConfig());
  for (const [name, mode] of [
    [FAST, 'Immediate'],
    [LOCAL, 'WaitForFirstConsumer'],
  ] as const) {
    await client.create(GVRs.StorageClass, { metadata: { name }, provisioner: 'example.com/none', volumeBindingMode: mode, reclaimPolicy: 'Delete' } as KubeObject);
  }
  wh = await startTestWebhook({ client, inventory });
  ns = await freshNamespace('wh-task', { [wh.selector.key]: wh.selector.value });
  tenantKubeconfig = await tenantWithRole(ns);
  await createSource('lab', 'p-lab');
  await createSource('lab-override', 'p-lab2', [{ id: 'host-9', address: '192.168.40.19', credentials: { username: 'root', password: 'esxi', insecureSkipVerify: true } }]);
  await createSource('connecting', undefined);
  await createSource('flaky', 'p-flaky');
  await waitForWebhookEffective(ns, task('probe', { sourceRef: { name: 'absent' } }));
});

after(async () => {
  await wh?.stop();
  for (const n of [FAST, LOCAL]) await client?.delete(GVRs.StorageClass, undefined, n).catch(() => undefined);
  client?.close();
});

test('a task naming a Ready source, an Immediate class and VMs whose names fit is admitted without warnings', async () => {
  const r = await applyAsTenant(task('good', { vms: [{ id: 'vm-101' }, { id: 'vm-102', name: 'db' }] }));
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(warnings(r.stderr), []);
});

test('a task whose source does not exist is refused', async () => {
  const r = await applyAsTenant(task('orphan', { sourceRef: { name: 'nope' } }));
  assert.equal(denial(r.stderr), `spec.sourceRef.name: VMImportSource "nope" does not exist in namespace "${ns}"; create it first or fix the name`);
});

test('a task whose source is not Ready yet is admitted with warnings', async () => {
  const r = await applyAsTenant(task('early', { sourceRef: { name: 'connecting' } }));
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(warnings(r.stderr), [
    'VMImportSource "connecting" is not Ready; the task waits until it is',
    'could not read the inventory of VMImportSource "connecting" (the source has not registered with Forklift yet (no status.provider.uid)); VM names were checked assuming up to 100 disks per VM, and host addresses and quota were not checked',
  ]);
});

test('a task naming a WaitForFirstConsumer class is refused, naming the class, its mode and the Immediate classes', async () => {
  const r = await applyAsTenant(task('wffc', { storageClass: LOCAL }));
  const m = denial(r.stderr);
  assert.match(m, new RegExp(`^spec\\.storageClass: storage class "${LOCAL}" has volumeBindingMode WaitForFirstConsumer; the import needs a class that binds Immediate, or its transfer volumes never bind \\(storage classes that bind Immediate: .*\\)$`));
  assert.ok(m.includes(FAST), m);
  assert.ok(!m.slice(m.indexOf('Immediate:')).includes(LOCAL), m);
});

test('a task naming a class that does not exist is refused', async () => {
  const r = await applyAsTenant(task('noclass', { storageClass: 'no-such-class' }));
  const m = denial(r.stderr);
  assert.match(m, /^spec\.storageClass: storage class "no-such-class" does not exist; storage classes that bind Immediate: /);
  assert.ok(m.includes(FAST), m);
});

test('a denial is re-checked against the cluster afresh, without asking the inventory again while its answer is fresh', async () => {
  // The inventory's answers for vm-105 (and the hosts) come into the cache with an admitted task.
  await createSource('lab-fresh', 'p-lab-fresh');
  const fresh = (name: string, storageClass: string) => task(name, { sourceRef: { name: 'lab-fresh' }, storageClass, vms: [{ id: 'vm-105' }] });
  const first = await applyAsTenant(fresh('fresh-ok', FAST));
  assert.equal(first.code, 0, first.stderr);
  const calls = inventoryCalls['p-lab-fresh'] ?? 0;
  assert.ok(calls > 0, 'the first review read the inventory');
  // A class that does not exist yet: denied after the re-check, and the inventory was not asked again.
  const later = `wh-later-${id}`;
  const denied = await applyAsTenant(fresh('fresh-denied', later));
  assert.match(denial(denied.stderr), new RegExp(`storage class "${later}" does not exist`));
  assert.equal(inventoryCalls['p-lab-fresh'], calls, 'no inventory call while its cached answer is fresh');
  // The class appears: admitted at once (a cached class list that still misses it is read afresh by the
  // re-check), again without an inventory call.
  await client.create(GVRs.StorageClass, { metadata: { name: later }, provisioner: 'example.com/none', volumeBindingMode: 'Immediate', reclaimPolicy: 'Delete' } as KubeObject);
  try {
    const admitted = await applyAsTenant(fresh('fresh-denied', later));
    assert.equal(admitted.code, 0, admitted.stderr);
    assert.equal(inventoryCalls['p-lab-fresh'], calls);
  } finally {
    await client.delete(GVRs.StorageClass, undefined, later).catch(() => undefined);
  }
});

test('with an empty storageClass the cluster default is checked: a WaitForFirstConsumer default is refused', async (t) => {
  const classes = await client.list<KubeObject>(GVRs.StorageClass);
  const otherDefault = classes.items.find((c) => c.metadata?.annotations?.['storageclass.kubernetes.io/is-default-class'] === 'true');
  if (otherDefault) return t.skip(`another test left a default class (${otherDefault.metadata?.name})`);
  await client.patch(GVRs.StorageClass, undefined, LOCAL, { metadata: { annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } } });
  try {
    const r = await waitFor('the default class to be seen', async () => {
      const x = await applyAsTenant(task('default-wffc', { storageClass: undefined }));
      return x.stderr.includes('cluster default') ? x : undefined;
    });
    assert.match(denial(r.stderr), new RegExp(`^spec\\.storageClass: the cluster default storage class "${LOCAL}" has volumeBindingMode WaitForFirstConsumer; the import needs a class that binds Immediate`));
  } finally {
    await client.patch(GVRs.StorageClass, undefined, LOCAL, { metadata: { annotations: { 'storageclass.kubernetes.io/is-default-class': null } } });
  }
});

test('a VM name too long for the disks the inventory reports is refused; one character shorter passes', async () => {
  const name = 'finance-file-server-2019-primary-node1'; // 38
  const r = await applyAsTenant(task('long', { vms: [{ id: 'vm-103', name }] }));
  assert.equal(
    denial(r.stderr),
    `spec.vms[0].name: VMDisk name "${name}-disk-11" is 46 characters; the limit is 45 (Helm release names are limited to 53, minus the "vm-disk-" prefix); with 12 disks the VM name may have at most 37 characters`,
  );
  const ok = await applyAsTenant(task('long-ok', { vms: [{ id: 'vm-103', name: name.slice(0, 37) }] }));
  assert.equal(ok.code, 0, ok.stderr);
});

test('a VM listed twice is refused with the webhook\'s message, before the schema\'s', async () => {
  const r = await applyAsTenant(task('dup-id', { vms: [{ id: 'vm-101' }, { id: 'vm-101', name: 'again' }] }));
  assert.equal(denial(r.stderr), 'spec.vms[1].id "vm-101" is listed twice (also spec.vms[0])');
  assert.doesNotMatch(r.stderr, /Duplicate value/);
});

test('two VMs with one output name are refused', async () => {
  const r = await applyAsTenant(task('dup-name', { vms: [{ id: 'vm-101', name: 'app' }, { id: 'vm-102', name: 'app' }] }));
  assert.equal(denial(r.stderr), 'spec.vms[1]: VMInstance name "app" is also the name of spec.vms[0]; give each VM its own name');
});

test('a VM on an ESXi host advertised inside the Service CIDR is refused with the remedy; with a host override it passes', async () => {
  const r = await applyAsTenant(task('collide', { vms: [{ id: 'vm-104' }] }));
  assert.equal(
    denial(r.stderr),
    'spec.vms[0]: VM "legacy-app" runs on ESXi host host-9, which vCenter advertises at 10.100.3.9, inside the cluster\'s Service CIDR 10.96.0.0/12: service routing would capture the transfer\'s traffic and it would fail late. Add spec.hosts[] on the VMImportSource with id: host-9, an address the cluster can reach, and the ESXi host\'s own credentials',
  );
  const ok = await applyAsTenant(task('collide-ok', { sourceRef: { name: 'lab-override' }, vms: [{ id: 'vm-104' }] }));
  assert.equal(ok.code, 0, ok.stderr);
});

test('a storage quota that certainly cannot hold the import is admitted with a warning giving the numbers and the QuotaExceeded to come', async () => {
  await client.create(GVRs.ResourceQuota, { metadata: { name: 'small', namespace: ns }, spec: { hard: { 'requests.storage': '15Gi' } } } as KubeObject);
  try {
    const r = await waitFor('the quota to be seen', async () => {
      const x = await applyAsTenant(task(`quota-${randomBytes(2).toString('hex')}`, { vms: [{ id: 'vm-105' }] }));
      return warnings(x.stderr).length ? x : undefined;
    });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(warnings(r.stderr), [
      'storage quota: ResourceQuota "small" limits requests.storage to 15.0 GiB with 0.00 GiB used (15.0 GiB free), but the import certainly needs 20.0 GiB at its peak (every disk\'s claim, plus one disk twice while its claim is handed over); the task will fail with QuotaExceeded unless the quota is raised first',
    ]);
  } finally {
    await client.delete(GVRs.ResourceQuota, ns, 'small');
  }
});

test('when the inventory is unreachable names are checked against a conservative bound, and a warning says so', async () => {
  const r = await applyAsTenant(task('blind', { sourceRef: { name: 'flaky' }, vms: [{ id: 'vm-101', name: 'web-frontend-production-europe-west-01' }] }));
  assert.equal(
    denial(r.stderr),
    'spec.vms[0].name: VMDisk name "web-frontend-production-europe-west-01-disk-99" is 46 characters; the limit is 45 (Helm release names are limited to 53, minus the "vm-disk-" prefix); with 100 disks the VM name may have at most 37 characters (the inventory could not tell this VM\'s disk count, so 100 disks were assumed)',
  );
  const ok = await applyAsTenant(task('blind-ok', { sourceRef: { name: 'flaky' }, vms: [{ id: 'vm-101', name: 'web-frontend' }] }));
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(warnings(ok.stderr), [
    'could not read the inventory of VMImportSource "flaky" (connect ECONNREFUSED forklift-inventory); VM names were checked assuming up to 100 disks per VM, and host addresses and quota were not checked',
  ]);
});

test('a VM the inventory does not know is admitted with a warning', async () => {
  const r = await applyAsTenant(task('ghost', { vms: [{ id: 'vm-999', name: 'ghost' }] }));
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(warnings(r.stderr), ['spec.vms[0].id "vm-999" is not in the inventory of VMImportSource "lab"; unless it appears, that VM will fail with VMNotFound']);
});

test('spec is immutable once accepted, while status, label and finalizer writes pass', async () => {
  assert.equal((await applyAsTenant(task('frozen', {}))).code, 0);
  const r = await applyAsTenant(task('frozen', { storageClass: LOCAL, vms: [{ id: 'vm-102' }] }));
  assert.equal(
    denial(r.stderr),
    'spec.vms is immutable once the task is accepted; delete this task and create a new one to import differently; spec.storageClass is immutable once the task is accepted; delete this task and create a new one to import differently',
  );
  await client.patch(GVRs.VMImportTask, ns, 'frozen', { metadata: { finalizers: ['forklift.cozystack.io/finalizer'], labels: { x: 'y' } } });
  await client.patch(GVRs.VMImportTask, ns, 'frozen', { status: { phase: 'Failed' } }, 'merge', { subresource: 'status' });
  await client.patch(GVRs.VMImportTask, ns, 'frozen', { metadata: { finalizers: null } });
});
