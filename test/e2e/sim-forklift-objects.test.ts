// The simulated Forklift judges Providers, Hosts, maps and Plans the way Forklift does (docs/forklift-contract.md):
// conditions only ever status "True", with categories, re-staged on every reconcile.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshNamespace, kubectl, testEnv, waitFor } from './env/index.ts';
import { bootSim, type BootedSim } from './fixtures.ts';
import { vcenter } from '../sim/index.ts';
import type { Rest} from '../sim/testing.ts';
import { FORKLIFT_SECRET_LABELS, R, type Obj, condition, createPlan, forkliftSetup, goodSecretData, hostProvider, vsphereProvider, vsphereSecret } from '../sim/testing.ts';

const URL_A = 'https://vcenter-a.example.com/sdk';
const world = vcenter({
  url: URL_A,
  user: 'mtv@vsphere.local',
  password: 'correct horse',
  hosts: [
    { id: 'host-1', address: '192.0.2.11' },
    { id: 'host-2', address: '10.96.0.40', otherAddresses: ['192.0.2.40'] },
    { id: 'host-3', address: '192.0.2.13', reachable: false },
  ],
  networks: ['VM Network', 'Storage Net'],
  datastores: ['ds1', 'ds2'],
  vms: [
    { id: 'vm-1', name: 'web01', nics: [{ network: 'VM Network' }] },
    { id: 'vm-2', name: 'db01', nics: [{ network: 'Storage Net' }], disks: [{ capacityGiB: 8, datastore: 'ds2' }] },
    { id: 'vm-3', name: 'notools01', toolsStatus: 'toolsNotInstalled', toolsRunningStatus: 'guestToolsNotRunning' },
    { id: 'vm-4', name: 'stopped01', toolsStatus: 'toolsOk', toolsRunningStatus: 'guestToolsNotRunning' },
    { id: 'vm-5', name: 'coldnotools01', powerState: 'poweredOff', toolsStatus: 'toolsNotInstalled', toolsRunningStatus: 'guestToolsNotRunning' },
  ],
});

describe('simulated Forklift: Providers, Hosts, maps and Plan validation', () => {
  let rest: Rest;
  let booted: BootedSim;
  before(async () => {
    // Long enough transient conditions to be observed by polling tests.
    booted = await bootSim({ worlds: [world], storageClasses: [{ name: 'sim-objects' }], sim: { timings: { loadInventoryMs: 1500, validatingVddkMs: 1500 } } });
    rest = booted.rest;
  });
  after(async () => {
    await booted?.shutdown();
  });

  const observe = async (res: typeof R.Provider, ns: string, name: string, what: string, pred: (o: Obj) => boolean): Promise<Obj> =>
    await waitFor(`${res.kind} ${name}: ${what}`, async () => {
      const o = await rest.get(res, ns, name);
      return o && pred(o) ? o : undefined;
    });

  const provider = async (ns: string, secret: Record<string, string>, name = 'vs'): Promise<void> => {
    await vsphereSecret(rest, ns, `${name}-secret`, secret);
    await vsphereProvider(rest, ns, name, URL_A, `${name}-secret`);
  };

  test('a vSphere Provider with a good Secret loads its inventory for a moment, then is Ready with the vCenter fingerprint', async () => {
    const ns = await freshNamespace('sim-prov');
    await provider(ns, goodSecretData(world));
    const loading = await observe(R.Provider, ns, 'vs', 'LoadInventory', (o) => !!condition(o, 'LoadInventory'));
    assert.equal(condition(loading, 'LoadInventory')!.category, 'Advisory');
    assert.equal(condition(loading, 'Ready'), undefined);
    const ready = await observe(R.Provider, ns, 'vs', 'Ready', (o) => !!condition(o, 'Ready'));
    assert.equal(ready.status.phase, 'Ready');
    assert.equal(ready.status.fingerprint, world.thumbprint);
    assert.ok(condition(ready, 'ConnectionTestSucceeded'));
    assert.ok(condition(ready, 'InventoryCreated'));
    assert.equal(condition(ready, 'LoadInventory'), undefined, 'conditions are re-staged: LoadInventory is gone');
    assert.ok((ready.status.conditions as Array<{ status: string }>).every((c) => c.status === 'True'));
  });

  test('a SHA-1 thumbprint given instead of a PEM CA fails the connection test: the CA cannot be parsed', async () => {
    const ns = await freshNamespace('sim-prov');
    await provider(ns, { user: world.user, password: world.password, cacert: world.thumbprint, 'ca.crt': world.thumbprint });
    const p = await observe(R.Provider, ns, 'vs', 'ConnectionTestFailed', (o) => !!condition(o, 'ConnectionTestFailed'));
    assert.equal(condition(p, 'ConnectionTestFailed')!.message, 'failed to parse the specified certificate');
    assert.equal(condition(p, 'ConnectionTestFailed')!.category, 'Critical');
    assert.equal(p.status.phase, 'ConnectionFailed');
    assert.equal(condition(p, 'Ready'), undefined);
  });

  test('Forklift 2.11 reads the CA from cacert only: a Secret with just ca.crt lacks cacert', async () => {
    const ns = await freshNamespace('sim-prov');
    const { cacert: _omit, ...rest212 } = goodSecretData(world);
    await provider(ns, rest212);
    const p = await observe(R.Provider, ns, 'vs', 'SecretNotValid', (o) => !!condition(o, 'SecretNotValid'));
    assert.equal(condition(p, 'SecretNotValid')!.reason, 'DataErr');
    assert.deepEqual(condition(p, 'SecretNotValid')!.items, ['cacert']);
    assert.equal(condition(p, 'SecretNotValid')!.message, 'The `secret` is not valid.');
  });

  test('a Secret without user and password is not valid and names the missing keys', async () => {
    const ns = await freshNamespace('sim-prov');
    await provider(ns, { cacert: world.caPEM });
    const p = await observe(R.Provider, ns, 'vs', 'SecretNotValid', (o) => !!condition(o, 'SecretNotValid'));
    assert.equal(condition(p, 'SecretNotValid')!.reason, 'DataErr');
    assert.deepEqual(condition(p, 'SecretNotValid')!.items, ['user', 'password']);
  });

  test('a wrong CA fails the connection test with an x509 message', async () => {
    const ns = await freshNamespace('sim-prov');
    await provider(ns, { ...goodSecretData(world), cacert: world.wrongCaPEM, 'ca.crt': world.wrongCaPEM });
    const p = await observe(R.Provider, ns, 'vs', 'ConnectionTestFailed', (o) => !!condition(o, 'ConnectionTestFailed'));
    assert.match(condition(p, 'ConnectionTestFailed')!.message!, /x509: certificate signed by unknown authority/);
    assert.equal(p.status.phase, 'ConnectionFailed');
  });

  test('a wrong password and a user without the SSO domain both fail authentication', async () => {
    const ns = await freshNamespace('sim-prov');
    await provider(ns, { ...goodSecretData(world), password: 'wrong' }, 'badpw');
    await provider(ns, { ...goodSecretData(world), user: 'mtv' }, 'nodomain');
    for (const name of ['badpw', 'nodomain']) {
      const p = await observe(R.Provider, ns, name, 'ConnectionAuthFailed', (o) => !!condition(o, 'ConnectionAuthFailed'));
      assert.match(condition(p, 'ConnectionAuthFailed')!.message!, /incorrect user name or password/);
      assert.equal(p.status.phase, 'ConnectionFailed');
    }
  });

  test("Forklift's Secret webhook refuses a labelled Secret whose credentials vCenter rejects", async () => {
    const ns = await freshNamespace('sim-prov');
    await assert.rejects(vsphereSecret(rest, ns, 'bad', { ...goodSecretData(world), user: 'mtv' }, FORKLIFT_SECRET_LABELS), /Invalid credentials/);
    await vsphereSecret(rest, ns, 'good', goodSecretData(world), FORKLIFT_SECRET_LABELS);
    await vsphereSecret(rest, ns, 'unlabelled', { ...goodSecretData(world), user: 'mtv' });
  });

  test('fixing the Secret re-stages the Provider to Ready', async () => {
    const ns = await freshNamespace('sim-prov');
    await provider(ns, { ...goodSecretData(world), password: 'wrong' });
    await observe(R.Provider, ns, 'vs', 'ConnectionAuthFailed', (o) => !!condition(o, 'ConnectionAuthFailed'));
    await rest.patch(R.Secret, ns, 'vs-secret', { data: { password: Buffer.from(world.password).toString('base64') } });
    const p = await observe(R.Provider, ns, 'vs', 'Ready', (o) => !!condition(o, 'Ready'));
    assert.equal(condition(p, 'ConnectionAuthFailed'), undefined);
  });

  test('insecureSkipVerify needs no CA and warns; a Provider without a VDDK image is still Ready', async () => {
    const ns = await freshNamespace('sim-prov');
    await provider(ns, { user: world.user, password: world.password, insecureSkipVerify: 'true' });
    const p = await observe(R.Provider, ns, 'vs', 'Ready', (o) => !!condition(o, 'Ready'));
    assert.equal(condition(p, 'ConnectionInsecure')!.category, 'Warn');
    assert.equal(p.spec.settings.vddkInitImage, undefined);
  });

  test('the destination openshift Provider with an empty URL is Ready', async () => {
    const ns = await freshNamespace('sim-prov');
    await hostProvider(rest, ns);
    const p = await observe(R.Provider, ns, 'host', 'Ready', (o) => !!condition(o, 'Ready'));
    assert.equal(p.status.phase, 'Ready');
  });

  test('a Host is Ready at a reachable address with its root credentials, ConnectionTestFailed otherwise', async () => {
    const ns = await freshNamespace('sim-host');
    await provider(ns, goodSecretData(world));
    await observe(R.Provider, ns, 'vs', 'Ready', (o) => !!condition(o, 'Ready'));
    const h2 = world.hosts[1]!;
    await vsphereSecret(rest, ns, 'esxi', { user: h2.user, password: h2.password });
    const mk = (name: string, id: string, ip: string): Promise<Obj> =>
      rest.create(R.Host, { metadata: { name, namespace: ns }, spec: { id, ipAddress: ip, provider: { name: 'vs', namespace: ns }, secret: { name: 'esxi', namespace: ns } } });
    await mk('good', 'host-2', '192.0.2.40');
    await mk('cidr', 'host-2', '10.96.0.40');
    await mk('nope', 'host-2', '198.51.100.1');
    await mk('ghost', 'host-99', '192.0.2.40');
    await observe(R.Host, ns, 'good', 'Ready', (o) => !!condition(o, 'Ready'));
    for (const n of ['cidr', 'nope']) {
      const h = await observe(R.Host, ns, n, 'ConnectionTestFailed', (o) => !!condition(o, 'ConnectionTestFailed'));
      assert.equal(condition(h, 'Ready'), undefined);
    }
    await observe(R.Host, ns, 'ghost', 'RefNotValid', (o) => !!condition(o, 'RefNotValid'));
  });

  test('at Forklift 2.11 a map naming a source id the inventory does not know is Critical and never Ready', async () => {
    const ns = await freshNamespace('sim-maps');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-objects' });
    await rest.create(R.NetworkMap, {
      metadata: { name: 'typo', namespace: ns },
      spec: { provider: { source: { name: 'vsphere', namespace: ns }, destination: { name: 'host', namespace: ns } }, map: [{ source: { id: 'network-404' }, destination: { type: 'pod' } }] },
    });
    const m = await observe(R.NetworkMap, ns, 'typo', 'SourceNetworkNotValid', (o) => !!condition(o, 'SourceNetworkNotValid'));
    assert.equal(condition(m, 'SourceNetworkNotValid')!.category, 'Critical');
    assert.equal(condition(m, 'SourceNetworkNotValid')!.message, 'Source network not found.');
    assert.deepEqual(condition(m, 'SourceNetworkNotValid')!.items, [" id:network-404 name:'' "]);
    assert.equal(condition(m, 'Ready'), undefined);
    await observe(R.StorageMap, ns, 'sto', 'Ready', (o) => !!condition(o, 'Ready'));
  });

  test('a Plan names missing VMs, and the VMs whose networks or storage are unmapped', async () => {
    const ns = await freshNamespace('sim-plan');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-objects' });
    // Only ds1 and VM Network mapped: vm-2 (Storage Net, ds2) is unmapped on both.
    await rest.patch(R.NetworkMap, ns, 'net', { spec: { map: [{ source: { id: 'network-1' }, destination: { type: 'pod' } }] } });
    await rest.patch(R.StorageMap, ns, 'sto', { spec: { map: [{ source: { id: 'datastore-1' }, destination: { storageClass: 'sim-objects' } }] } });
    await createPlan(rest, ns, 'p', [{ id: 'vm-1' }, { id: 'vm-2' }, { id: 'vm-404' }]);
    const p = await observe(R.Plan, ns, 'p', 'validated', (o) => !!condition(o, 'VMNotFound') && !!condition(o, 'VMStorageNotMapped'));
    // Items are Forklift's ref.String(): the id and, once the inventory found the VM, its name.
    assert.deepEqual(condition(p, 'VMNotFound')!.items, [" id:vm-404 name:'' "]);
    assert.deepEqual(condition(p, 'VMNetworksNotMapped')!.items, [" id:vm-2 name:'db01' "]);
    assert.deepEqual(condition(p, 'VMStorageNotMapped')!.items, [" id:vm-2 name:'db01' "]);
    assert.equal(condition(p, 'VMStorageNotMapped')!.category, 'Critical');
    assert.equal(condition(p, 'Ready'), undefined);
  });

  test('a powered-on VM without running VMware Tools blocks the Plan with GuestToolsIssue; powered off it does not', async () => {
    const ns = await freshNamespace('sim-plan');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-objects' });
    await createPlan(rest, ns, 'p', [{ id: 'vm-3' }, { id: 'vm-4' }, { id: 'vm-5' }]);
    const p = await observe(R.Plan, ns, 'p', 'GuestToolsIssue', (o) => !!condition(o, 'GuestToolsIssue'));
    const c = condition(p, 'GuestToolsIssue')!;
    assert.equal(c.category, 'Critical');
    assert.equal(c.reason, 'NotValid');
    assert.match(c.message!, /^VMware Tools issues detected\./);
    assert.deepEqual(c.items, [" id:vm-3 name:'notools01' ", " id:vm-4 name:'stopped01' "]);
    assert.equal(condition(p, 'Ready'), undefined);
    await createPlan(rest, ns, 'off', [{ id: 'vm-5' }]);
    const off = await observe(R.Plan, ns, 'off', 'Ready', (o) => !!condition(o, 'Ready'));
    assert.equal(condition(off, 'GuestToolsIssue'), undefined);
  });

  test('raw copy without a VDDK image on the source Provider is VDDKInitImageUnavailable', async () => {
    const ns = await freshNamespace('sim-plan');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-objects', vddkInitImage: null });
    await createPlan(rest, ns, 'p', [{ id: 'vm-1' }]);
    const p = await observe(R.Plan, ns, 'p', 'VDDKInitImageUnavailable', (o) => !!condition(o, 'VDDKInitImageUnavailable'));
    assert.equal(condition(p, 'VDDKInitImageUnavailable')!.category, 'Critical');
    assert.equal(condition(p, 'Ready'), undefined);
  });

  test('a valid Plan validates its VDDK image for a moment, then is Ready', async () => {
    const ns = await freshNamespace('sim-plan');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-objects' });
    await createPlan(rest, ns, 'p', [{ id: 'vm-1' }]);
    const v = await observe(R.Plan, ns, 'p', 'ValidatingVDDK', (o) => !!condition(o, 'ValidatingVDDK'));
    assert.equal(condition(v, 'ValidatingVDDK')!.category, 'Advisory');
    assert.equal(condition(v, 'Ready'), undefined);
    const p = await observe(R.Plan, ns, 'p', 'Ready', (o) => !!condition(o, 'Ready'));
    assert.equal(condition(p, 'ValidatingVDDK'), undefined);
  });

  test('a map reference without a namespace is NotSet', async () => {
    const ns = await freshNamespace('sim-plan');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-objects' });
    await rest.create(R.Plan, { metadata: { name: 'p', namespace: ns }, spec: { provider: { source: { name: 'vsphere', namespace: ns }, destination: { name: 'host', namespace: ns } }, map: { network: { name: 'net' }, storage: { name: 'sto', namespace: ns } }, targetNamespace: ns, vms: [{ id: 'vm-1' }] } });
    const p = await observe(R.Plan, ns, 'p', 'NetworkMapNotValid', (o) => !!condition(o, 'NetworkMapNotValid'));
    assert.equal(condition(p, 'NetworkMapNotValid')!.reason, 'NotSet');
  });

  test("Forklift's Plan webhook refuses a Plan whose source Provider does not exist (a reference without a namespace finds none)", async () => {
    const ns = await freshNamespace('sim-plan');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-objects' });
    const spec = (source: Record<string, string>) => ({ provider: { source, destination: { name: 'host', namespace: ns } }, map: { network: { name: 'net', namespace: ns }, storage: { name: 'sto', namespace: ns } }, targetNamespace: ns, vms: [{ id: 'vm-1' }] });
    await assert.rejects(rest.create(R.Plan, { metadata: { name: 'p1', namespace: ns }, spec: spec({ name: 'vsphere' }) }), /plans\.forklift\.konveyor.*providers\.forklift\.konveyor\.io "vsphere" not found/);
    await assert.rejects(rest.create(R.Plan, { metadata: { name: 'p2', namespace: ns }, spec: spec({ name: 'gone', namespace: ns }) }), /"gone" not found/);
    // Archived: a Plan whose source is gone may still be archived.
    await rest.create(R.Plan, { metadata: { name: 'p3', namespace: ns }, spec: { ...spec({ name: 'gone', namespace: ns }), archived: true } });
  });

  test("Forklift's Plan and Migration webhooks refuse a user who may not create VirtualMachines in the target namespace", async () => {
    const ns = await freshNamespace('sim-plan');
    const target = await freshNamespace('sim-target');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-objects' });
    // A user who may write Forklift objects and read Providers in ns, and nothing in the target namespace.
    const user = (await testEnv()).tenants[0]!;
    const rbac = await kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'forklift-user', namespace: ns }, rules: [{ apiGroups: ['forklift.konveyor.io'], resources: ['*'], verbs: ['*'] }] },
          { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'forklift-user', namespace: ns }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'forklift-user' }, subjects: [{ kind: 'User', name: user.name, apiGroup: 'rbac.authorization.k8s.io' }] },
        ],
      }),
    });
    assert.equal(rbac.code, 0, rbac.stderr);
    const plan = { apiVersion: 'forklift.konveyor.io/v1beta1', kind: 'Plan', metadata: { name: 'p', namespace: ns }, spec: { provider: { source: { name: 'vsphere', namespace: ns }, destination: { name: 'host', namespace: ns } }, map: { network: { name: 'net', namespace: ns }, storage: { name: 'sto', namespace: ns } }, targetNamespace: target, vms: [{ id: 'vm-1' }] } };
    const refused = await kubectl(['create', '-f', '-'], { kubeconfig: user.kubeconfigPath, input: JSON.stringify(plan) });
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, new RegExp(`Action is forbidden: User "${user.name}" cannot create resource "virtualmachines" in API group "kubevirt.io" in the namespace "${target}"`));
    // The admin may: the Plan exists; the user's Migration of it is refused for the same reason.
    const created = await rest.create(R.Plan, plan);
    const mig = { apiVersion: 'forklift.konveyor.io/v1beta1', kind: 'Migration', metadata: { name: 'm', namespace: ns }, spec: { plan: { name: 'p', namespace: ns, uid: created.metadata.uid } } };
    const refusedM = await kubectl(['create', '-f', '-'], { kubeconfig: user.kubeconfigPath, input: JSON.stringify(mig) });
    assert.notEqual(refusedM.code, 0);
    assert.match(refusedM.stderr, /migrations\.forklift\.konveyor.*Action is forbidden.*virtualmachines/);
  });

  test("Forklift's Provider webhook refuses a vSphere sdkEndpoint other than vcenter or esxi", async () => {
    const ns = await freshNamespace('sim-prov');
    await assert.rejects(rest.create(R.Provider, { metadata: { name: 'p', namespace: ns }, spec: { type: 'vsphere', url: URL_A, secret: { name: 's', namespace: ns }, settings: { sdkEndpoint: 'vCenter' } } }), /invalid SDK endpoint type/);
    await rest.create(R.Provider, { metadata: { name: 'p', namespace: ns }, spec: { type: 'vsphere', url: URL_A, secret: { name: 's', namespace: ns }, settings: { sdkEndpoint: 'esxi' } } });
  });
});
