import { test } from 'node:test';
import assert from 'node:assert/strict';
import { convertedDiskBus, diskBus, hasOutputMarkers, renderHandoffDataVolume, renderTargetClaim, renderVMDisk, renderVMInstance, volumeFacts, type OutputMarkers } from './render.ts';
import { readScaffoldingDisks, readScaffoldingShape } from './kubevirt.ts';
import { parseQuantity } from './quantity.ts';
import type { KubeObject } from '../runtime/kube.ts';

const M: OutputMarkers = { taskUid: 'uid-1', taskName: 'import-web', vmId: 'vm-42' };
const MARKERS = { 'forklift.cozystack.io/task': 'import-web', 'forklift.cozystack.io/task-uid': 'uid-1', 'forklift.cozystack.io/vm-id': 'vm-42' };
const PV: KubeObject = {
  metadata: { name: 'pvc-123' },
  spec: { capacity: { storage: '16Gi' }, storageClassName: 'replicated', volumeMode: 'Block', accessModes: ['ReadWriteMany'], persistentVolumeReclaimPolicy: 'Delete' },
};

test('the target claim is pre-bound to the PV with class, volumeMode, accessModes and size copied from it, and annotated for CDI adoption', () => {
  assert.deepEqual(renderTargetClaim({ namespace: 'tenant-a', diskName: 'web-disk-0', diskIndex: 0, volume: volumeFacts(PV)!, markers: M }), {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: 'vm-disk-web-disk-0',
      namespace: 'tenant-a',
      labels: { 'app.kubernetes.io/managed-by': 'migration-controller', ...MARKERS, 'forklift.cozystack.io/disk-index': '0' },
      annotations: { 'cdi.kubevirt.io/storage.populatedFor': 'vm-disk-web-disk-0' },
    },
    spec: { volumeName: 'pvc-123', storageClassName: 'replicated', volumeMode: 'Block', accessModes: ['ReadWriteMany'], resources: { requests: { storage: '16Gi' } } },
  });
});

test('a PV without class or volumeMode gives an explicit empty class and Filesystem', () => {
  const f = volumeFacts({ metadata: { name: 'p' }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'] } })!;
  assert.equal(f.storageClassName, '');
  assert.equal(f.volumeMode, 'Filesystem');
  assert.equal(volumeFacts({ metadata: { name: 'p' }, spec: {} }), undefined, 'no capacity, no facts');
});

test('the DataVolume carries the Helm ownership metadata of release vm-disk-<disk> and a blank kubevirt source', () => {
  const dv = renderHandoffDataVolume({ namespace: 'tenant-a', diskName: 'web-disk-1', diskIndex: 1, volume: volumeFacts(PV)!, markers: M });
  assert.deepEqual(dv.metadata, {
    name: 'vm-disk-web-disk-1',
    namespace: 'tenant-a',
    labels: { ...MARKERS, 'forklift.cozystack.io/disk-index': '1', 'app.kubernetes.io/managed-by': 'Helm', 'app.kubernetes.io/instance': 'vm-disk-web-disk-1' },
    annotations: { 'meta.helm.sh/release-name': 'vm-disk-web-disk-1', 'meta.helm.sh/release-namespace': 'tenant-a', 'vm-disk.cozystack.io/optical': 'false' },
  });
  assert.deepEqual(dv.spec, {
    contentType: 'kubevirt',
    source: { blank: {} },
    storage: { resources: { requests: { storage: '16Gi' } }, storageClassName: 'replicated', volumeMode: 'Block', accessModes: ['ReadWriteMany'] },
  });
});

test('the VMDisk has size and class, is not optical, has no source and no ownerReference', () => {
  assert.deepEqual(renderVMDisk({ namespace: 'tenant-a', diskName: 'web-disk-0', diskIndex: 0, volume: volumeFacts(PV)!, markers: M }), {
    apiVersion: 'apps.cozystack.io/v1alpha1',
    kind: 'VMDisk',
    metadata: { name: 'web-disk-0', namespace: 'tenant-a', labels: { ...MARKERS, 'forklift.cozystack.io/disk-index': '0' } },
    spec: { storage: '16Gi', storageClass: 'replicated', optical: false },
  });
});

const scaffold = (domain: Record<string, unknown>, n = 2): KubeObject => ({
  metadata: { name: 'web' },
  spec: {
    template: {
      spec: {
        domain,
        volumes: [
          ...Array.from({ length: n }, (_, i) => (i % 2 ? { name: `v${i}`, dataVolume: { name: `dv-${i}` } } : { name: `v${i}`, persistentVolumeClaim: { claimName: `pvc-${i}` } })),
          { name: 'cloudinit', cloudInitNoCloud: { userData: 'x' } },
        ],
      },
    },
  },
});

test('the scaffolding VM gives the disk order from its volumes, skipping non-disk volumes', () => {
  assert.deepEqual(readScaffoldingDisks(scaffold({}, 3)), [
    { index: 0, volume: 'v0', claimName: 'pvc-0' },
    { index: 1, volume: 'v1', claimName: 'dv-1' },
    { index: 2, volume: 'v2', claimName: 'pvc-2' },
  ]);
  assert.deepEqual(readScaffoldingDisks({ metadata: {} }), []);
});

test('CPU, memory and firmware are read as stated; efi without secureBoot means Secure Boot (KubeVirt default)', () => {
  assert.deepEqual(readScaffoldingShape(scaffold({ cpu: { cores: 4, sockets: 2 }, memory: { guest: '8Gi' }, firmware: { bootloader: { bios: {} } } })), {
    disks: readScaffoldingDisks(scaffold({})),
    cpu: { cores: 4, sockets: 2, threads: 1 },
    memory: '8Gi',
    firmware: { bootloader: 'bios' },
    networks: [],
    foreignNetworks: [],
    nics: [],
  });
  const efi = readScaffoldingShape(scaffold({ cpu: { cores: 1 }, resources: { requests: { memory: '2Gi' } }, firmware: { bootloader: { efi: {} } } }));
  assert.deepEqual([efi.memory, efi.firmware], ['2Gi', { bootloader: 'uefi', secureBoot: true }]);
  assert.deepEqual(readScaffoldingShape(scaffold({ firmware: { bootloader: { efi: { secureBoot: false } } } })).firmware, { bootloader: 'uefi', secureBoot: false });
  const bare = readScaffoldingShape(scaffold({}));
  assert.deepEqual([bare.cpu, bare.memory, bare.firmware], [undefined, undefined, undefined]);
});

test('the VMInstance is Halted, disks in order with six on sata then virtio, resources carried, firmware carried', () => {
  const shape = readScaffoldingShape(scaffold({ cpu: { cores: 2, sockets: 2, threads: 2 }, memory: { guest: '12Gi' }, firmware: { bootloader: { efi: { secureBoot: true } } } }));
  const names = Array.from({ length: 8 }, (_, i) => `web-disk-${i}`);
  const r = renderVMInstance({ namespace: 'tenant-a', name: 'web', vm: { id: 'vm-42' }, shape, diskNames: names, markers: M });
  assert.ok(r.ok);
  assert.deepEqual(r.object.metadata, { name: 'web', namespace: 'tenant-a', labels: MARKERS });
  assert.deepEqual(r.object.spec, {
    runStrategy: 'Halted',
    instanceType: '',
    instanceProfile: '',
    disks: names.map((name, i) => ({ name, bus: i < 6 ? 'sata' : 'virtio' })),
    // threads fold into cores: 2 sockets × 2 cores × 2 threads = 8 vCPUs either way
    resources: { cpu: 4, sockets: 2, memory: '12Gi' },
    firmware: { bootloader: 'uefi', secureBoot: true },
  });
});

test('an instanceType from the task sizes the VM: no resources are written', () => {
  const shape = readScaffoldingShape(scaffold({ cpu: { cores: 2 }, memory: { guest: '4Gi' } }));
  const r = renderVMInstance({ namespace: 'n', name: 'web', vm: { id: 'vm-42', instanceType: 'u1.large', instanceProfile: 'windows' }, shape, diskNames: ['web-disk-0'], markers: M });
  assert.ok(r.ok);
  assert.equal((r.object.spec as Record<string, unknown>).instanceType, 'u1.large');
  assert.equal((r.object.spec as Record<string, unknown>).instanceProfile, 'windows');
  assert.equal((r.object.spec as Record<string, unknown>).resources, undefined);
  assert.equal((r.object.spec as Record<string, unknown>).firmware, undefined, 'no firmware stated, none carried');
});

test('without an instanceType, a VM whose size cannot be read is refused rather than silently resized', () => {
  const r = renderVMInstance({ namespace: 'n', name: 'web', vm: { id: 'vm-42' }, shape: readScaffoldingShape(scaffold({ cpu: { cores: 2 } })), diskNames: [], markers: M });
  assert.equal(r.ok, false);
  assert.match((r as { message: string }).message, /states no memory; name an instanceType/);
});

/** A scaffolding VM in namespace tenant-a with the given template networks (as Forklift writes them). */
const withNetworks = (networks: unknown[]): KubeObject => {
  const vm = scaffold({ cpu: { cores: 1 }, memory: { guest: '1Gi' } });
  vm.metadata = { name: 'web', namespace: 'tenant-a' };
  (vm.spec as { template: { spec: Record<string, unknown> } }).template.spec.networks = networks;
  return vm;
};

test('Multus NICs become the VMInstance networks in NIC order, once each; the pod NIC is its default interface', () => {
  const shape = readScaffoldingShape(
    withNetworks([
      { name: 'net-0', multus: { networkName: 'tenant-a/backup' } },
      { name: 'net-1', pod: {} },
      { name: 'net-2', multus: { networkName: 'storage' } },
      { name: 'net-3', multus: { networkName: 'tenant-a/backup' } },
    ]),
  );
  assert.deepEqual([shape.networks, shape.foreignNetworks], [['backup', 'storage'], []]);
  const r = renderVMInstance({ namespace: 'tenant-a', name: 'web', vm: { id: 'vm-42' }, shape, diskNames: ['web-disk-0'], markers: M });
  assert.ok(r.ok);
  assert.deepEqual((r.object.spec as Record<string, unknown>).networks, [{ name: 'backup' }, { name: 'storage' }]);
  // Only the pod network: no networks field at all (the chart's default interface is it).
  const podOnly = renderVMInstance({ namespace: 'tenant-a', name: 'web', vm: { id: 'vm-42' }, shape: readScaffoldingShape(withNetworks([{ name: 'net-0', pod: {} }])), diskNames: [], markers: M });
  assert.ok(podOnly.ok);
  assert.equal((podOnly.object.spec as Record<string, unknown>).networks, undefined);
});

test('a NIC on an attachment of another namespace is refused with the namespace the VMInstance can attach', () => {
  const shape = readScaffoldingShape(withNetworks([{ name: 'net-0', multus: { networkName: 'infra/backup' } }]));
  assert.deepEqual(shape.foreignNetworks, ['infra/backup']);
  const r = renderVMInstance({ namespace: 'tenant-a', name: 'web', vm: { id: 'vm-42' }, shape, diskNames: [], markers: M });
  assert.equal(r.ok, false);
  assert.match((r as { message: string }).message, /attaches infra\/backup from another namespace; .*namespace tenant-a only/);
});

test('disk bus: sata for the first six (q35 AHCI ports), virtio after', () => {
  assert.deepEqual([0, 5, 6, 7].map(diskBus), ['sata', 'sata', 'virtio', 'virtio']);
});

test('a converted guest has every disk on virtio, past and before the six SATA ports', () => {
  assert.deepEqual([0, 5, 6, 7].map((i) => convertedDiskBus(i, true)), ['virtio', 'virtio', 'virtio', 'virtio']);
  assert.deepEqual([0, 5, 6, 7].map((i) => convertedDiskBus(i, false)), ['sata', 'sata', 'virtio', 'virtio']);
});

test('the VMInstance of a converted guest carries virtio buses on every disk, and is otherwise the same as a raw copy', () => {
  const shape = readScaffoldingShape(scaffold({ cpu: { cores: 2, sockets: 1 }, memory: { guest: '4Gi' }, firmware: { bootloader: { bios: {} } } }));
  const names = ['app-disk-0', 'app-disk-1'];
  const conv = renderVMInstance({ namespace: 'tenant-a', name: 'app', vm: { id: 'vm-42' }, shape, diskNames: names, markers: M, converted: true });
  const raw = renderVMInstance({ namespace: 'tenant-a', name: 'app', vm: { id: 'vm-42' }, shape, diskNames: names, markers: M });
  assert.ok(conv.ok && raw.ok);
  const cs = conv.object.spec as Record<string, unknown>;
  const rs = raw.object.spec as Record<string, unknown>;
  assert.deepEqual(cs.disks, [{ name: 'app-disk-0', bus: 'virtio' }, { name: 'app-disk-1', bus: 'virtio' }]);
  assert.deepEqual(rs.disks, [{ name: 'app-disk-0', bus: 'sata' }, { name: 'app-disk-1', bus: 'sata' }]);
  assert.deepEqual({ ...cs, disks: undefined }, { ...rs, disks: undefined });
});

test('output markers: both task uid and vm id must match; Cozystack-prefixed labels count', () => {
  assert.ok(hasOutputMarkers({ metadata: { labels: MARKERS } }, M));
  assert.ok(!hasOutputMarkers({ metadata: { labels: { ...MARKERS, 'forklift.cozystack.io/vm-id': 'vm-7' } } }, M));
  assert.ok(!hasOutputMarkers({ metadata: {} }, M));
  assert.ok(hasOutputMarkers({ metadata: { labels: { 'apps.cozystack.io-forklift.cozystack.io/task-uid': 'uid-1', 'apps.cozystack.io-forklift.cozystack.io/vm-id': 'vm-42' } } }, M));
});

test('quantities parse to bytes', () => {
  assert.equal(parseQuantity('16Gi'), 16 * 2 ** 30);
  assert.equal(parseQuantity('500M'), 5e8);
  assert.equal(parseQuantity('1073741824'), 2 ** 30);
  assert.equal(parseQuantity('1e3'), 1000);
  assert.equal(parseQuantity(42), 42);
  assert.equal(parseQuantity('lots'), undefined);
  assert.equal(parseQuantity(undefined), undefined);
});
