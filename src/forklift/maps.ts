// Pure rendering of the task's NetworkMap and StorageMap, and the network checks Forklift would otherwise
// only report on the Plan after everything was created. Plain JSON (docs/forklift-contract.md): no typed model
// that could drop a field.
import { API_VERSION, KIND_TASK } from '../api/types.ts';
import type { VMImportTask } from '../api/types.ts';
import { LABEL_MANAGED_BY, LABEL_TASK, LABEL_TASK_UID, MANAGED_BY_VALUE } from '../api/labels.ts';
import type { KubeObject } from '../runtime/kube.ts';
import { networkMapName, storageMapName } from './names.ts';

import { FORKLIFT_API_VERSION } from './provider.ts';

export { FORKLIFT_API_VERSION };

/** A namespaced reference. Forklift needs the namespace spelled out on every reference (else `NotSet`). */
export interface Ref {
  name: string;
  namespace: string;
}

export interface ProviderRefs {
  source: Ref;
  destination: Ref;
}

/** The parts of a Forklift inventory vSphere VM this code reads. */
export interface InventoryVMLike {
  id: string;
  name?: string;
  /** ESXi host id (host-N), or an object with an id on some inventory versions. */
  host?: string | { id?: string };
  networks?: Array<{ id?: string; kind?: string }>;
  nics?: Array<{ mac?: string; network?: { id?: string } }>;
  disks?: Array<{ datastore?: { id?: string }; capacity?: number; file?: string; key?: number }>;
}

export interface InventoryNetworkLike {
  id: string;
  name?: string;
}

export function hostIdOf(vm: InventoryVMLike): string | undefined {
  if (!vm.host) return undefined;
  return typeof vm.host === 'string' ? vm.host : vm.host.id;
}

/** The network ids a VM's NICs attach to, one entry per NIC (duplicates kept: two NICs on one network count twice). */
export function nicNetworkIds(vm: InventoryVMLike): string[] {
  if (vm.nics && vm.nics.length) return vm.nics.map((n) => n.network?.id).filter((x): x is string => !!x);
  return (vm.networks ?? []).map((n) => n.id).filter((x): x is string => !!x);
}

export function vmNetworkIds(vm: InventoryVMLike): string[] {
  const ids = new Set<string>([...nicNetworkIds(vm), ...(vm.networks ?? []).map((n) => n.id).filter((x): x is string => !!x)]);
  return [...ids].sort();
}

export function vmDatastoreIds(vm: InventoryVMLike): string[] {
  return [...new Set((vm.disks ?? []).map((d) => d.datastore?.id).filter((x): x is string => !!x))].sort();
}

export function taskLabels(task: VMImportTask): Record<string, string> {
  return {
    [LABEL_MANAGED_BY]: MANAGED_BY_VALUE,
    [LABEL_TASK]: task.metadata.name ?? '',
    [LABEL_TASK_UID]: task.metadata.uid ?? '',
  };
}

/** Scaffolding only: garbage collection removes it with the task even if the finalizer never runs. */
export function taskOwnerReference(task: VMImportTask): NonNullable<NonNullable<KubeObject['metadata']>['ownerReferences']>[number] {
  return { apiVersion: API_VERSION, kind: KIND_TASK, name: task.metadata.name ?? '', uid: task.metadata.uid ?? '', controller: true };
}

export type NetworkDestination = { type: 'pod' } | { type: 'multus'; namespace: string; name: string };

/**
 * Where a source network goes: the first spec.networks entry naming it by id or by name, else `pod`.
 * A multus `name` may be `namespace/name`; a bare name is in the task's namespace.
 */
export function destinationFor(task: VMImportTask, network: InventoryNetworkLike): NetworkDestination {
  const m = (task.spec.networks ?? []).find((n) => n.source === network.id || (network.name !== undefined && n.source === network.name));
  if (!m || m.type !== 'multus' || !m.name) return { type: 'pod' };
  const i = m.name.indexOf('/');
  return i < 0 ? { type: 'multus', namespace: task.metadata.namespace ?? '', name: m.name } : { type: 'multus', namespace: m.name.slice(0, i), name: m.name.slice(i + 1) };
}

function networkById(networks: InventoryNetworkLike[], id: string): InventoryNetworkLike {
  return networks.find((n) => n.id === id) ?? { id };
}

/**
 * Forklift rejects a Plan whose VM has more than one NIC on the pod network (`VMMultiplePodNetworkMappings`,
 * Critical) — only after the maps and Plan exist. Returns the problem for this VM up front, or undefined.
 */
export function podNetworkProblem(task: VMImportTask, vm: InventoryVMLike, networks: InventoryNetworkLike[]): string | undefined {
  const onPod = nicNetworkIds(vm).filter((id) => destinationFor(task, networkById(networks, id)).type === 'pod');
  if (onPod.length <= 1) return undefined;
  const names = onPod.map((id) => {
    const n = networkById(networks, id);
    return n.name ? `${n.name} (${id})` : id;
  });
  return (
    `VM has ${onPod.length} NICs mapped to the pod network (${names.join(', ')}); Forklift allows at most one ` +
    `(VMMultiplePodNetworkMappings). Map the others to a Multus NetworkAttachmentDefinition in spec.networks ` +
    `({source: <network id or name>, type: multus, name: <attachment>})`
  );
}

/**
 * Forklift rejects a Plan whose VM has two NICs on one Multus NetworkAttachmentDefinition
 * (`VMDuplicateNADMappings`, Critical: kubev2v/forklift@v2.11.5 and @v2.12.5:pkg/controller/plan/validation.go,
 * adapter/base/network.go ValidateNetworkDuplicates, keyed by the attachment's namespace/name) — only after
 * the maps and Plan exist. Returns the problem for this VM up front, or undefined.
 */
export function multusDuplicateProblem(task: VMImportTask, vm: InventoryVMLike, networks: InventoryNetworkLike[]): string | undefined {
  const byNad = new Map<string, string[]>();
  for (const id of nicNetworkIds(vm)) {
    const d = destinationFor(task, networkById(networks, id));
    if (d.type !== 'multus') continue;
    const key = `${d.namespace}/${d.name}`;
    const n = networkById(networks, id);
    byNad.set(key, [...(byNad.get(key) ?? []), n.name ? `${n.name} (${id})` : id]);
  }
  const dup = [...byNad].filter(([, nics]) => nics.length > 1);
  if (!dup.length) return undefined;
  return (
    `VM has more than one NIC on one Multus attachment (${dup.map(([nad, nics]) => `${nad}: ${nics.join(', ')}`).join('; ')}); Forklift refuses that ` +
    `(VMDuplicateNADMappings: OVN-Kubernetes keys a pod's networks by attachment). Give each NIC's network its own NetworkAttachmentDefinition in spec.networks`
  );
}

/**
 * A VMInstance attaches Multus networks of its own namespace only (Cozystack's chart writes
 * `networkName: <release namespace>/<name>`), so a NIC mapped to an attachment elsewhere could be
 * transferred but never handed over. Returns the problem for this VM up front, or undefined.
 */
export function foreignNetworkProblem(task: VMImportTask, vm: InventoryVMLike, networks: InventoryNetworkLike[]): string | undefined {
  const ns = task.metadata.namespace ?? '';
  const foreign = [
    ...new Set(
      nicNetworkIds(vm)
        .map((id) => destinationFor(task, networkById(networks, id)))
        .filter((d): d is Extract<NetworkDestination, { type: 'multus' }> => d.type === 'multus' && d.namespace !== ns)
        .map((d) => `${d.namespace}/${d.name}`),
    ),
  ];
  if (!foreign.length) return undefined;
  return `VM NICs are mapped to ${foreign.join(', ')}, outside namespace ${ns}; a VMInstance attaches NetworkAttachmentDefinitions of its own namespace only — name one in ${ns} in spec.networks`;
}

export interface MapInput {
  task: VMImportTask;
  /** Inventory records of the VMs the task still imports (those that passed preflight). */
  vms: InventoryVMLike[];
  providers: ProviderRefs;
}

function mapMeta(task: VMImportTask, name: string): KubeObject['metadata'] {
  return { name, namespace: task.metadata.namespace, labels: taskLabels(task), ownerReferences: [taskOwnerReference(task)] };
}

function providerSpec(p: ProviderRefs): Record<string, unknown> {
  return {
    source: { name: p.source.name, namespace: p.source.namespace },
    destination: { name: p.destination.name, namespace: p.destination.namespace },
  };
}

/** Every network of the task's VMs → pod unless spec.networks maps it to a Multus attachment. */
export function renderNetworkMap(input: MapInput & { networks: InventoryNetworkLike[] }): KubeObject {
  const ids = [...new Set(input.vms.flatMap(vmNetworkIds))].sort();
  const map = ids.map((id) => {
    const d = destinationFor(input.task, networkById(input.networks, id));
    return { source: { id }, destination: d.type === 'pod' ? { type: 'pod' } : { type: 'multus', namespace: d.namespace, name: d.name } };
  });
  return {
    apiVersion: FORKLIFT_API_VERSION,
    kind: 'NetworkMap',
    metadata: mapMeta(input.task, networkMapName(input.task.metadata.name ?? '', input.task.metadata.uid ?? '')),
    spec: { provider: providerSpec(input.providers), map },
  };
}

/** Every datastore holding a disk of the task's VMs → the task's resolved storage class. */
export function renderStorageMap(input: MapInput & { storageClass: string }): KubeObject {
  const ids = [...new Set(input.vms.flatMap(vmDatastoreIds))].sort();
  return {
    apiVersion: FORKLIFT_API_VERSION,
    kind: 'StorageMap',
    metadata: mapMeta(input.task, storageMapName(input.task.metadata.name ?? '', input.task.metadata.uid ?? '')),
    spec: {
      provider: providerSpec(input.providers),
      map: ids.map((id) => ({ source: { id }, destination: { storageClass: input.storageClass } })),
    },
  };
}
