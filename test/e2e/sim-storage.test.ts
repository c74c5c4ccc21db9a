// The simulator's storage side (external provisioner + the real PV binder), CDI claim adoption, and the
// Cozystack apps API: create-time name limits and rendering of VMDisk / VMInstance.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootSim, type BootedSim } from './fixtures.ts';
import { POPULATED_FOR, SIM_PROVISIONER, vcenter } from '../sim/index.ts';
import type { Rest} from '../sim/testing.ts';
import { R, type Obj } from '../sim/testing.ts';

describe('simulated storage, CDI and Cozystack apps', () => {
  let rest: Rest;
  let booted: BootedSim;
  before(async () => {
    booted = await bootSim({ worlds: [vcenter({ url: 'https://vcenter-sto.example.com/sdk' })], storageClasses: [{ name: 'sim-del', reclaimPolicy: 'Delete' }, { name: 'sim-retain', reclaimPolicy: 'Retain' }, { name: 'sim-wffc', bindingMode: 'WaitForFirstConsumer' }] });
    rest = booted.rest;
  });
  after(async () => {
    await booted?.shutdown();
  });

  const claim = (ns: string, name: string, sc: string, extra: Record<string, unknown> = {}, annotations: Record<string, string> = {}): Promise<Obj> =>
    rest.create(R.PVC, { metadata: { name, namespace: ns, annotations }, spec: { accessModes: ['ReadWriteOnce'], volumeMode: 'Block', storageClassName: sc, resources: { requests: { storage: '2Gi' } }, ...extra } });
  const bound = (ns: string, name: string): Promise<Obj> =>
    waitFor(`claim ${name} Bound`, async () => {
      const c = await rest.get(R.PVC, ns, name);
      return c?.status?.phase === 'Bound' ? c : undefined;
    });

  test('an Immediate class gets a PV per pending claim and the real PV binder binds them', async () => {
    const ns = await freshNamespace('sim-sto');
    const c0 = await claim(ns, 'data', 'sim-del');
    const c = await bound(ns, 'data');
    const pv = (await rest.get(R.PV, undefined, c.spec.volumeName))!;
    assert.equal(pv.metadata.annotations!['pv.kubernetes.io/provisioned-by'], SIM_PROVISIONER);
    assert.equal(pv.spec.claimRef.uid, c0.metadata.uid);
    assert.equal(pv.spec.storageClassName, 'sim-del');
    assert.equal(pv.spec.persistentVolumeReclaimPolicy, 'Delete');
    assert.equal(pv.spec.volumeMode, 'Block');
    assert.deepEqual(pv.spec.accessModes, ['ReadWriteOnce']);
    assert.equal(pv.spec.capacity.storage, '2Gi');
  });

  test('a WaitForFirstConsumer claim stays Pending without a volume', async () => {
    const ns = await freshNamespace('sim-sto');
    await claim(ns, 'late', 'sim-wffc');
    await claim(ns, 'witness', 'sim-del');
    // The Immediate claim created after it binds: by then the WFFC claim has been seen and left alone.
    await bound(ns, 'witness');
    const c = (await rest.get(R.PVC, ns, 'late'))!;
    assert.equal(c.status.phase, 'Pending');
    assert.equal(c.spec.volumeName, undefined);
  });

  test('a released volume is deleted when its policy is Delete and kept when it is Retain', async () => {
    const ns = await freshNamespace('sim-sto');
    const d = await bound(ns, (await claim(ns, 'd', 'sim-del')).metadata.name);
    const r = await bound(ns, (await claim(ns, 'r', 'sim-retain')).metadata.name);
    await rest.del(R.PVC, ns, 'd');
    await rest.del(R.PVC, ns, 'r');
    await waitFor('Delete PV gone', async () => !(await rest.get(R.PV, undefined, d.spec.volumeName)));
    const kept = await waitFor('Retain PV Released', async () => {
      const pv = await rest.get(R.PV, undefined, r.spec.volumeName);
      return pv?.status?.phase === 'Released' ? pv : undefined;
    });
    assert.equal(kept.spec.persistentVolumeReclaimPolicy, 'Retain');
    await rest.del(R.PV, undefined, r.spec.volumeName);
  });

  test('a blank DataVolume without a claim creates one, which is filled, and goes Succeeded', async () => {
    const ns = await freshNamespace('sim-cdi');
    const dv = await rest.create(R.DataVolume, { metadata: { name: 'blank', namespace: ns }, spec: { source: { blank: {} }, storage: { storageClassName: 'sim-del', resources: { requests: { storage: '1Gi' } } } } });
    const done = await waitFor('DataVolume Succeeded', async () => {
      const x = await rest.get(R.DataVolume, ns, 'blank');
      return x?.status?.phase === 'Succeeded' ? x : undefined;
    });
    assert.equal(done.status.progress, '100.0%');
    const c = await bound(ns, 'blank');
    assert.deepEqual(c.metadata.ownerReferences!.map((r) => [r.kind, r.uid, r.controller]), [['DataVolume', dv.metadata.uid, true]]);
  });

  test('a DataVolume named like a claim marked populatedFor adopts it at once as its controller owner', async () => {
    const ns = await freshNamespace('sim-cdi');
    await claim(ns, 'vm-disk-root', 'sim-del', {}, { [POPULATED_FOR]: 'vm-disk-root' });
    const c = await bound(ns, 'vm-disk-root');
    const dv = await rest.create(R.DataVolume, { metadata: { name: 'vm-disk-root', namespace: ns }, spec: { source: { blank: {} }, contentType: 'kubevirt', storage: { storageClassName: 'sim-del', resources: { requests: { storage: '2Gi' } } } } });
    await waitFor('DataVolume Succeeded', async () => (await rest.get(R.DataVolume, ns, 'vm-disk-root'))?.status?.phase === 'Succeeded');
    const after = (await rest.get(R.PVC, ns, 'vm-disk-root'))!;
    assert.equal(after.metadata.uid, c.metadata.uid, 'the same claim, not a new one');
    assert.equal(after.spec.volumeName, c.spec.volumeName, 'the same volume');
    assert.deepEqual(after.metadata.ownerReferences!.filter((r) => r.controller).map((r) => [r.kind, r.uid]), [['DataVolume', dv.metadata.uid]]);
  });

  test('a DataVolume named like a claim without populatedFor is refused the way CDI refuses it', async () => {
    const ns = await freshNamespace('sim-cdi');
    await claim(ns, 'taken', 'sim-del');
    await assert.rejects(
      rest.create(R.DataVolume, { metadata: { name: 'taken', namespace: ns }, spec: { source: { blank: {} }, storage: { resources: { requests: { storage: '1Gi' } } } } }),
      /datavolume-validate\.cdi\.kubevirt\.io.*Destination PVC .*\/taken already exists/,
    );
  });

  test('VMDisk and VMInstance names beyond the Helm release limit or not DNS-1035 are refused at create', async () => {
    const ns = await freshNamespace('sim-apps');
    const disk = (name: string): Promise<Obj> => rest.create(R.VMDisk, { metadata: { name, namespace: ns }, spec: { storage: '1Gi', storageClass: 'sim-del' } });
    const inst = (name: string): Promise<Obj> => rest.create(R.VMInstance, { metadata: { name, namespace: ns }, spec: { runStrategy: 'Halted' } });
    await assert.rejects(disk('d'.repeat(46)), /no more than 45 characters/);
    await disk('d'.repeat(45));
    await assert.rejects(disk('1st-disk'), /DNS-1035/);
    await assert.rejects(inst('i'.repeat(42)), /no more than 41 characters/);
    await inst('i'.repeat(41));
  });

  test('a VMDisk renders DataVolume vm-disk-<name>, but keeps an existing one verbatim', async () => {
    const ns = await freshNamespace('sim-apps');
    await rest.create(R.VMDisk, { metadata: { name: 'fresh', namespace: ns }, spec: { storage: '3Gi', storageClass: 'sim-del', optical: false } });
    const dv = await waitFor('vm-disk-fresh', async () => rest.get(R.DataVolume, ns, 'vm-disk-fresh'));
    assert.deepEqual(dv.spec.source, { blank: {} });
    assert.equal(dv.spec.storage.resources.requests.storage, '3Gi');
    assert.equal(dv.metadata.labels!['app.kubernetes.io/instance'], 'vm-disk-fresh');
    await waitFor('vm-disk-fresh Succeeded', async () => (await rest.get(R.DataVolume, ns, 'vm-disk-fresh'))?.status?.phase === 'Succeeded');

    const pre = await rest.create(R.DataVolume, { metadata: { name: 'vm-disk-kept', namespace: ns, labels: { mine: 'yes' } }, spec: { source: { blank: {} }, storage: { storageClassName: 'sim-retain', resources: { requests: { storage: '7Gi' } } } } });
    await rest.create(R.VMDisk, { metadata: { name: 'kept', namespace: ns }, spec: { storage: '1Gi', storageClass: 'sim-del' } });
    // The VMDisk's own rendering is observable on an unrelated disk created after it.
    await rest.create(R.VMDisk, { metadata: { name: 'later', namespace: ns }, spec: { storage: '1Gi', storageClass: 'sim-del' } });
    await waitFor('vm-disk-later', async () => rest.get(R.DataVolume, ns, 'vm-disk-later'));
    const kept = (await rest.get(R.DataVolume, ns, 'vm-disk-kept'))!;
    assert.deepEqual(kept.spec, pre.spec);
    assert.equal(kept.metadata.labels!.mine, 'yes');
  });

  test('a VMInstance renders VirtualMachine vm-instance-<name> as the v1.6.2 chart does: run strategy, disk-<name> disks, resources, pod + Multus networks', async () => {
    const ns = await freshNamespace('sim-apps');
    await rest.create(R.VMInstance, {
      metadata: { name: 'web', namespace: ns },
      spec: { runStrategy: 'Halted', resources: { cpu: 2, sockets: 1, memory: '4Gi' }, disks: [{ name: 'root', bus: 'sata' }, { name: 'data' }], networks: [{ name: 'lan' }] },
    });
    const vm = await waitFor('vm-instance-web', async () => rest.get(R.VirtualMachine, ns, 'vm-instance-web'));
    assert.equal(vm.spec.runStrategy, 'Halted');
    assert.deepEqual(vm.spec.template.spec.domain.cpu, { cores: 2, sockets: 1 });
    assert.equal(vm.spec.template.spec.domain.resources.requests.memory, '4Gi');
    assert.deepEqual(vm.spec.template.spec.domain.devices.disks, [
      { name: 'disk-root', disk: { bus: 'sata' }, bootOrder: 1 },
      { name: 'disk-data', disk: {}, bootOrder: 2 },
    ]);
    assert.deepEqual(vm.spec.template.spec.volumes, [
      { name: 'disk-root', dataVolume: { name: 'vm-disk-root' } },
      { name: 'disk-data', dataVolume: { name: 'vm-disk-data' } },
    ]);
    assert.deepEqual(vm.spec.template.spec.domain.devices.interfaces, [{ name: 'default', bridge: {} }, { name: 'lan', bridge: {} }]);
    assert.deepEqual(vm.spec.template.spec.networks, [{ name: 'default', pod: {} }, { name: 'lan', multus: { networkName: `${ns}/lan` } }]);
    await rest.del(R.VMInstance, ns, 'web');
    await waitFor('VirtualMachine removed with its VMInstance', async () => !(await rest.get(R.VirtualMachine, ns, 'vm-instance-web')));
  });
});
