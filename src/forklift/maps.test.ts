import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { VMImportTask } from '../api/types.ts';
import { foreignNetworkProblem, podNetworkProblem, renderNetworkMap, renderStorageMap, type InventoryVMLike } from './maps.ts';

function task(networks: VMImportTask['spec']['networks'] = []): VMImportTask {
  return {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name: 'web', namespace: 'tenant-a', uid: 'uid-1' },
    spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1' }, { id: 'vm-2' }], networks },
  };
}
const providers = { source: { name: 'vmimport-vc', namespace: 'tenant-a' }, destination: { name: 'vmimport-vc-destination', namespace: 'tenant-a' } };
const vm1: InventoryVMLike = { id: 'vm-1', networks: [{ id: 'network-1' }], nics: [{ network: { id: 'network-1' } }], disks: [{ datastore: { id: 'datastore-1' } }, { datastore: { id: 'datastore-2' } }] };
const vm2: InventoryVMLike = { id: 'vm-2', networks: [{ id: 'network-1' }, { id: 'network-2' }], nics: [{ network: { id: 'network-1' } }, { network: { id: 'network-2' } }], disks: [{ datastore: { id: 'datastore-1' } }] };
const nets = [{ id: 'network-1', name: 'VM Network' }, { id: 'network-2', name: 'backup' }];

test('every network goes to pod unless spec.networks maps it to multus (by id or by name)', () => {
  const m = renderNetworkMap({ task: task([{ source: 'backup', type: 'multus', name: 'backup-net' }]), vms: [vm1, vm2], networks: nets, providers }) as { spec: { map: unknown[]; provider: unknown } };
  assert.deepEqual(m.spec.map, [
    { source: { id: 'network-1' }, destination: { type: 'pod' } },
    { source: { id: 'network-2' }, destination: { type: 'multus', namespace: 'tenant-a', name: 'backup-net' } },
  ]);
  assert.deepEqual(m.spec.provider, { source: providers.source, destination: providers.destination });
});

test('a multus namespace/name is kept as given', () => {
  const m = renderNetworkMap({ task: task([{ source: 'network-2', type: 'multus', name: 'shared/backup' }]), vms: [vm2], networks: nets, providers }) as { spec: { map: Array<{ destination: unknown }> } };
  assert.deepEqual(m.spec.map[1]!.destination, { type: 'multus', namespace: 'shared', name: 'backup' });
});

test('a VM with two NICs on the pod network is refused up front, naming Forklift\'s check', () => {
  const p = podNetworkProblem(task(), vm2, nets);
  assert.match(p ?? '', /2 NICs.*VM Network \(network-1\), backup \(network-2\).*VMMultiplePodNetworkMappings/);
  assert.equal(podNetworkProblem(task([{ source: 'network-2', type: 'multus', name: 'b' }]), vm2, nets), undefined);
  assert.equal(podNetworkProblem(task(), vm1, nets), undefined);
});

test('a VM NIC mapped to an attachment of another namespace is refused up front; the task\'s own namespace passes', () => {
  assert.match(foreignNetworkProblem(task([{ source: 'network-2', type: 'multus', name: 'shared/backup' }]), vm2, nets) ?? '', /mapped to shared\/backup, outside namespace tenant-a/);
  assert.equal(foreignNetworkProblem(task([{ source: 'network-2', type: 'multus', name: 'tenant-a/backup' }]), vm2, nets), undefined);
  assert.equal(foreignNetworkProblem(task([{ source: 'network-2', type: 'multus', name: 'backup' }]), vm2, nets), undefined);
  // A mapping for a network this VM has no NIC on does not concern it.
  assert.equal(foreignNetworkProblem(task([{ source: 'network-2', type: 'multus', name: 'shared/backup' }]), vm1, nets), undefined);
});

test('every datastore maps to the resolved class; maps are labelled and owned by the task', () => {
  const m = renderStorageMap({ task: task(), vms: [vm1, vm2], providers, storageClass: 'replicated' }) as unknown as { metadata: { labels: Record<string, string>; ownerReferences: Array<{ uid: string; kind: string }> }; spec: { map: unknown[] } };
  assert.deepEqual(m.spec.map, [
    { source: { id: 'datastore-1' }, destination: { storageClass: 'replicated' } },
    { source: { id: 'datastore-2' }, destination: { storageClass: 'replicated' } },
  ]);
  assert.equal(m.metadata.labels['forklift.cozystack.io/task'], 'web');
  assert.equal(m.metadata.ownerReferences[0]!.uid, 'uid-1');
  assert.equal(m.metadata.ownerReferences[0]!.kind, 'VMImportTask');
});
