// The simulated Forklift inventory service: HTTPS with a CA published in a Secret, bearer tokens checked with
// a TokenReview, and Forklift's vSphere inventory model answered from the fixture.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootSim, type BootedSim } from './fixtures.ts';
import { type Sim, INVENTORY_SECRET, vcenter } from '../sim/index.ts';
import type { Rest } from '../sim/testing.ts';
import type { Obj, Res } from '../sim/rest.ts';
import { R, condition, forkliftSetup } from '../sim/testing.ts';

const URL_I = 'https://vcenter-inv.example.com/sdk';
const world = vcenter({
  url: URL_I,
  hosts: [{ id: 'host-7', address: '10.96.3.7', otherAddresses: ['192.0.2.77'] }],
  networks: ['VM Network', 'Backup'],
  datastores: ['datastore1'],
  vms: [{ id: 'vm-42', name: 'app01', firmware: 'efi', secureBoot: true, cpuCount: 8, coresPerSocket: 4, memoryMB: 16384, disks: [{ capacityGiB: 32 }, { capacityGiB: 1 }], nics: [{ network: 'VM Network' }, { network: 'Backup' }] }],
});

function get(url: string, o: { ca: string; token?: string }): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca: o.ca, headers: o.token ? { Authorization: `Bearer ${o.token}` } : {}, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
  });
}

describe('simulated Forklift inventory', () => {
  let sim: Sim;
  let rest: Rest;
  let token: string;
  let base: string;
  let booted: BootedSim;
  let ns: string;
  before(async () => {
    booted = await bootSim({ worlds: [world], storageClasses: [{ name: 'sim-inv' }] });
    ({ sim, rest } = booted);
    token = booted.env.admin.token;
    ns = await freshNamespace('sim-inv');
    const { source } = await forkliftSetup(rest, ns, world, { storageClass: 'sim-inv' });
    await waitFor('Provider Ready', async () => condition(await rest.get(R.Provider, ns, 'vsphere'), 'Ready'));
    base = `${sim.inventory.url}/providers/vsphere/${source.metadata.uid}`;
  });
  after(async () => {
    await booted?.shutdown();
  });

  test('the serving CA is published in the forklift-inventory-serving-cert Secret', async () => {
    const s = await rest.get(R.Secret, 'cozy-forklift', INVENTORY_SECRET);
    assert.equal(Buffer.from(s!.data['ca.crt'], 'base64').toString(), sim.inventory.caPEM);
  });

  test('requests without a token or with a token the API server does not know get 401', async () => {
    assert.equal((await get(`${base}/vms`, { ca: sim.inventory.caPEM })).status, 401);
    assert.equal((await get(`${base}/vms`, { ca: sim.inventory.caPEM, token: 'not-a-token' })).status, 401);
  });

  test('an authenticated user who may not get the Provider gets 403; an unknown provider is 404 before any authentication', async () => {
    const tenant = booted.env.tenants[0]!;
    assert.equal((await get(`${base}/vms`, { ca: sim.inventory.caPEM, token: tenant.token })).status, 403);
    assert.equal((await get(`${sim.inventory.url}/providers/vsphere/00000000-0000-0000-0000-000000000000/vms`, { ca: sim.inventory.caPEM })).status, 404);
  });

  test('a token let through for a Provider stays let through for 10 s, its RBAC revoked meanwhile; another token is reviewed', async () => {
    // Auth.Permit's cache (forklift v2.11.5 and v2.12.5 pkg/controller/provider/web/base/auth.go, TTL 10 s).
    const [granted, other] = booted.env.tenants;
    const Role: Res = { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'roles', kind: 'Role', namespaced: true };
    const Binding: Res = { ...Role, plural: 'rolebindings', kind: 'RoleBinding' };
    await rest.create(Role, { apiVersion: 'rbac.authorization.k8s.io/v1', metadata: { name: 'read-providers', namespace: ns }, rules: [{ apiGroups: ['forklift.konveyor.io'], resources: ['providers'], verbs: ['get'] }] } as Obj);
    const binding = { apiVersion: 'rbac.authorization.k8s.io/v1', metadata: { name: 'read-providers', namespace: ns }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-providers' } } as Obj;
    await rest.create(Binding, { ...binding, subjects: [{ kind: 'User', name: granted!.name, apiGroup: 'rbac.authorization.k8s.io' }] });
    // RBAC's authorizer reads from the API server's cache: the grant is seen once the SAR allows it.
    await waitFor('the granted tenant let through', async () => (await get(`${base}/vms`, { ca: sim.inventory.caPEM, token: granted!.token })).status === 200);
    await rest.del(Binding, ns, 'read-providers');
    // Revoked as far as RBAC is concerned: a review of the tenant's own now refuses.
    const provider = (await rest.list(R.Provider, ns)).items[0]!;
    await waitFor('RBAC refusing the revoked tenant', async () => {
      const review = await rest.post(R.SubjectAccessReview, {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: { resourceAttributes: { group: 'forklift.konveyor.io', resource: 'providers', namespace: ns, name: provider.metadata.name, verb: 'get' }, user: granted!.name, groups: granted!.groups },
      });
      return review.status?.allowed !== true;
    });
    assert.equal((await get(`${base}/vms`, { ca: sim.inventory.caPEM, token: granted!.token })).status, 200, 'within the TTL the cached pass stands');
    assert.equal((await get(`${base}/vms`, { ca: sim.inventory.caPEM, token: other!.token })).status, 403, 'a token never let through is reviewed');
    await rest.del(Role, ns, 'read-providers');
  });

  test('VMs are listed by id, name and path, and one VM carries the full vSphere model', async () => {
    const list = await get(`${base}/vms`, { ca: sim.inventory.caPEM, token });
    assert.equal(list.status, 200);
    const [item] = list.body as Array<Record<string, unknown>>;
    assert.deepEqual([item!.id, item!.name, item!.path], ['vm-42', 'app01', '/dc1/vm/app01']);
    const one = await get(`${base}/vms/vm-42`, { ca: sim.inventory.caPEM, token });
    const vm = one.body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.equal(vm.host, 'host-7');
    assert.equal(vm.powerState, 'poweredOn');
    assert.deepEqual([vm.toolsStatus, vm.toolsRunningStatus], ['toolsOk', 'guestToolsRunning']);
    assert.equal(vm.firmware, 'efi');
    assert.equal(vm.secureBoot, true);
    assert.deepEqual([vm.cpuCount, vm.coresPerSocket, vm.memoryMB], [8, 4, 16384]);
    assert.deepEqual(vm.disks.map((d: { key: number; file: string; datastore: unknown; capacity: number }) => [d.key, d.file, d.datastore, d.capacity]), [
      [2000, '[datastore1] app01/app01.vmdk', { kind: 'Datastore', id: 'datastore-1' }, 32 * 1024 ** 3],
      [2001, '[datastore1] app01/app01_1.vmdk', { kind: 'Datastore', id: 'datastore-1' }, 1024 ** 3],
    ]);
    assert.deepEqual(vm.networks, [{ kind: 'Network', id: 'network-1' }, { kind: 'Network', id: 'network-2' }]);
    assert.deepEqual(vm.nics.map((n: { network: unknown }) => n.network), [{ kind: 'Network', id: 'network-1' }, { kind: 'Network', id: 'network-2' }]);
    // Forklift's policies on this VM (vSphere's default: CBT off): changed_block_tracking.rego and, per disk,
    // changed_block_tracking_per_disk.rego; nothing else applies to a running, supported, Tools-reporting guest.
    assert.deepEqual(vm.concerns.map((c: { id: string; category: string; label: string }) => [c.id, c.category, c.label]), [
      ['vmware.changed_block_tracking.disabled', 'Warning', 'Changed Block Tracking (CBT) not enabled'],
      ['vmware.changed_block_tracking.disk.disabled', 'Warning', 'Disk - scsi0:0 does not have CBT enabled'],
      ['vmware.changed_block_tracking.disk.disabled', 'Warning', 'Disk - scsi0:1 does not have CBT enabled'],
    ]);
    assert.equal((await get(`${base}/vms/vm-404`, { ca: sim.inventory.caPEM, token })).status, 404);
  });

  test('hosts carry the address vCenter advertises as their name, and their adapters', async () => {
    const r = await get(`${base}/hosts?detail=1`, { ca: sim.inventory.caPEM, token });
    const [h] = r.body as Array<Record<string, any>>; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.equal(h!.id, 'host-7');
    assert.equal(h!.name, '10.96.3.7');
    assert.equal(h!.inMaintenance, false);
    assert.equal(h!.managementServerIp, 'vcenter-inv.example.com');
    assert.deepEqual(h!.networkAdapters.map((a: { ipAddress: string }) => a.ipAddress), ['10.96.3.7', '192.0.2.77']);
  });

  test('networks and datastores list ids and names', async () => {
    const n = await get(`${base}/networks`, { ca: sim.inventory.caPEM, token });
    assert.deepEqual((n.body as Array<{ id: string; name: string }>).map((x) => [x.id, x.name]), [['network-1', 'VM Network'], ['network-2', 'Backup']]);
    const d = await get(`${base}/datastores`, { ca: sim.inventory.caPEM, token });
    assert.deepEqual((d.body as Array<{ id: string; name: string }>).map((x) => [x.id, x.name]), [['datastore-1', 'datastore1']]);
  });

  test('an unknown provider UID is 404', async () => {
    assert.equal((await get(`${sim.inventory.url}/providers/vsphere/00000000-0000-0000-0000-000000000000/vms`, { ca: sim.inventory.caPEM, token })).status, 404);
  });

  test('a rotated serving certificate no longer matches the published CA until it is restored', async () => {
    const oldCA = sim.inventory.caPEM;
    await sim.setInventoryCertMismatch(true);
    try {
      const s = await rest.get(R.Secret, 'cozy-forklift', INVENTORY_SECRET);
      const published = Buffer.from(s!.data['ca.crt'], 'base64').toString();
      assert.notEqual(published, oldCA);
      await assert.rejects(get(`${base}/vms`, { ca: published, token }), /self[- ]signed|unable to verify|certificate/i);
    } finally {
      await sim.setInventoryCertMismatch(false);
    }
    const s = await rest.get(R.Secret, 'cozy-forklift', INVENTORY_SECRET);
    assert.equal((await get(`${base}/vms`, { ca: Buffer.from(s!.data['ca.crt'], 'base64').toString(), token })).status, 200);
  });
});
