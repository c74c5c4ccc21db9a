// The task rules that need the Forklift inventory, with the real inventory client (src/forklift) talking
// to the simulated Forklift inventory (test/sim) for a Provider the simulated Forklift connected.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { testEnv, adminKubeConfig, freshNamespace, installOurCRDs, waitFor } from './env/index.ts';
import { applyAs, denial, tenantWithRole, waitForWebhookEffective } from './fixtures.ts';
import { startSim, vcenter, type Sim } from '../sim/index.ts';
import { KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { InventoryClient } from '../../src/forklift/inventory.ts';
import { startTestWebhook, type TestWebhook } from '../../src/webhook/testkit.ts';

const id = randomBytes(3).toString('hex');
const FAST = `wh-inv-fast-${id}`;
const world = vcenter({
  url: `https://vcenter-${id}.lab.example/sdk`,
  hosts: [
    { id: 'host-1', address: '192.0.2.10' },
    // vCenter advertises this ESXi host at an address inside the Service CIDR (10.96.0.0/12).
    { id: 'host-2', address: '10.96.0.20' },
  ],
  vms: [
    { id: 'vm-1', name: 'web01', host: 'host-1', disks: [{ capacityGiB: 4 }] },
    { id: 'vm-2', name: 'legacy-erp', host: 'host-2', disks: [{ capacityGiB: 4 }] },
    { id: 'vm-3', name: 'fileserver', host: 'host-1', disks: Array.from({ length: 12 }, () => ({ capacityGiB: 1 })) },
    { id: 'vm-4', name: 'router', host: 'host-1', disks: [{ capacityGiB: 4 }], nics: [{ network: 'VM Network' }, { network: 'Backup' }, { network: 'Storage' }] },
  ],
  networks: ['VM Network', 'Backup', 'Storage'],
});

let sim: Sim;
let client: KubeClient;
let wh: TestWebhook;
let ns: string;
let tenantKubeconfig: string;

const task = (name: string, vms: unknown[]) => ({ apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name }, spec: { sourceRef: { name: 'lab' }, storageClass: FAST, vms } });
const applyAsTenant = (obj: unknown) => applyAs(tenantKubeconfig, ns, obj);

before(async () => {
  const env = await testEnv();
  await installOurCRDs();
  client = new KubeClient(await adminKubeConfig());
  sim = await startSim({ kubeconfigPath: env.admin.kubeconfigPath, worlds: [world] });
  await client.create(GVRs.StorageClass, { metadata: { name: FAST }, provisioner: 'example.com/none', volumeBindingMode: 'Immediate' } as KubeObject);
  const inventory = new InventoryClient({ baseURL: sim.inventory.url, ca: () => sim.inventory.caPEM, token: () => env.admin.token, timeoutMs: 1000 });
  wh = await startTestWebhook({ client, inventory });
  ns = await freshNamespace('wh-inv', { [wh.selector.key]: wh.selector.value });

  // What the source reconciler does: a credentials Secret and a Provider; the simulated Forklift connects it.
  await client.create(GVRs.Secret, { metadata: { name: 'lab-credentials', namespace: ns }, type: 'Opaque', stringData: { user: world.user, password: world.password, insecureSkipVerify: 'true', url: world.url } } as KubeObject);
  const provider = await client.create<KubeObject>(GVRs.Provider, { metadata: { name: 'lab', namespace: ns }, spec: { type: 'vsphere', url: world.url, secret: { name: 'lab-credentials', namespace: ns } } } as KubeObject);
  await waitFor('the simulated Forklift to load the inventory', async () => (await client.get<KubeObject & { status?: { phase?: string } }>(GVRs.Provider, ns, 'lab'))?.status?.phase === 'Ready', { timeoutMs: 60_000 });
  await client.create(GVRs.VMImportSource, {
    metadata: { name: 'lab', namespace: ns },
    spec: { type: 'vsphere', url: world.url, credentials: { username: world.user, password: world.password, insecureSkipVerify: true } },
  } as KubeObject);
  await client.patch(GVRs.VMImportSource, ns, 'lab', { status: { provider: { name: 'lab', uid: provider.metadata!.uid }, conditions: [{ type: 'Ready', status: 'True', reason: 'Connected', message: 'connected', lastTransitionTime: new Date().toISOString() }] } }, 'merge', { subresource: 'status' });

  tenantKubeconfig = await tenantWithRole(ns);
  await waitForWebhookEffective(ns, { ...task('probe', [{ id: 'vm-1' }]), spec: { sourceRef: { name: 'absent' }, vms: [{ id: 'vm-1' }] } });
});

after(async () => {
  await wh?.stop();
  await sim?.stop();
  await client?.delete(GVRs.StorageClass, undefined, FAST).catch(() => undefined);
  client?.close();
});

test('a VM whose ESXi host vCenter advertises inside the Service CIDR is refused at apply, naming host, address, range and remedy', async () => {
  const r = await applyAsTenant(task('erp', [{ id: 'vm-2' }]));
  assert.equal(
    denial(r.stderr),
    'spec.vms[0]: VM "legacy-erp" runs on ESXi host host-2, which vCenter advertises at 10.96.0.20, inside the cluster\'s Service CIDR 10.96.0.0/12: service routing would capture the transfer\'s traffic and it would fail late. Add spec.hosts[] on the VMImportSource with id: host-2, an address the cluster can reach, and the ESXi host\'s own credentials',
  );
});

test('the disk count comes from the inventory: a name that fits one disk is refused for a VM with twelve', async () => {
  const name = 'fileserver-department-of-finance-0001'; // 37 characters + "-disk-11" = 45 fits; one more does not
  const bad = await applyAsTenant(task('files', [{ id: 'vm-3', name: `${name}x` }]));
  assert.equal(
    denial(bad.stderr),
    `spec.vms[0].name: VMDisk name "${name}x-disk-11" is 46 characters; the limit is 45 (Helm release names are limited to 53, minus the "vm-disk-" prefix); with 12 disks the VM name may have at most 37 characters`,
  );
  const ok = await applyAsTenant(task('files', [{ id: 'vm-3', name }]));
  assert.equal(ok.code, 0, ok.stderr);
});

test('a VM on a reachable host with a default name is admitted without warnings', async () => {
  const r = await applyAsTenant(task('web', [{ id: 'vm-1' }]));
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /Warning/);
});

test('two NICs of one VM mapped to the same Multus attachment are refused at apply, naming the attachment and both networks; one attachment each passes', async () => {
  const spec = (second: string) => ({
    ...task('router', [{ id: 'vm-4' }]),
    spec: { ...task('router', []).spec, vms: [{ id: 'vm-4' }], networks: [{ source: 'Backup', type: 'multus', name: 'vlan10' }, { source: 'Storage', type: 'multus', name: second }] },
  });
  const bad = await applyAsTenant(spec('vlan10'));
  assert.match(denial(bad.stderr), /spec\.vms\[0\]: VM "router" \(vm-4\): VM has more than one NIC on one Multus attachment \(\S+\/vlan10: Backup \(network-\d+\), Storage \(network-\d+\)\); Forklift refuses that \(VMDuplicateNADMappings/);
  const good = await applyAsTenant(spec('vlan20'));
  assert.equal(good.code, 0, good.stderr);
});
