// Every kind the controller reads or writes, as group/version/resource. Optional kinds (Forklift, CDI,
// KubeVirt, Cozystack apps) may be absent or appear later: see `optional`.
export interface GVR {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  /** The kind may not be installed; never block start-up on it. */
  optional?: boolean;
  /**
   * Served by an aggregated API server (an APIService), not by a CRD: discovery asks the group's API
   * document whether it is served and whether it serves watch (src/runtime/discovery.ts).
   */
  aggregated?: boolean;
}

const g = (group: string, version: string, plural: string, kind: string, namespaced = true, optional = false, aggregated = false): GVR => ({ group, version, plural, kind, namespaced, optional, ...(aggregated ? { aggregated } : {}) });

export const GVRs = {
  // ours
  VMImportSource: g('forklift.cozystack.io', 'v1alpha1', 'vmimportsources', 'VMImportSource'),
  VMImportTask: g('forklift.cozystack.io', 'v1alpha1', 'vmimporttasks', 'VMImportTask'),
  // core
  Namespace: g('', 'v1', 'namespaces', 'Namespace', false),
  Node: g('', 'v1', 'nodes', 'Node', false),
  EndpointSlice: g('discovery.k8s.io', 'v1', 'endpointslices', 'EndpointSlice'),
  Secret: g('', 'v1', 'secrets', 'Secret'),
  ConfigMap: g('', 'v1', 'configmaps', 'ConfigMap'),
  Event: g('', 'v1', 'events', 'Event'),
  Service: g('', 'v1', 'services', 'Service'),
  PersistentVolumeClaim: g('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim'),
  PersistentVolume: g('', 'v1', 'persistentvolumes', 'PersistentVolume', false),
  ResourceQuota: g('', 'v1', 'resourcequotas', 'ResourceQuota'),
  StorageClass: g('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', false),
  Lease: g('coordination.k8s.io', 'v1', 'leases', 'Lease'),
  CustomResourceDefinition: g('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false),
  APIService: g('apiregistration.k8s.io', 'v1', 'apiservices', 'APIService', false),
  ServiceCIDR: g('networking.k8s.io', 'v1', 'servicecidrs', 'ServiceCIDR', false, true),
  // Forklift (docs/forklift-contract.md)
  Provider: g('forklift.konveyor.io', 'v1beta1', 'providers', 'Provider', true, true),
  Host: g('forklift.konveyor.io', 'v1beta1', 'hosts', 'Host', true, true),
  NetworkMap: g('forklift.konveyor.io', 'v1beta1', 'networkmaps', 'NetworkMap', true, true),
  StorageMap: g('forklift.konveyor.io', 'v1beta1', 'storagemaps', 'StorageMap', true, true),
  Plan: g('forklift.konveyor.io', 'v1beta1', 'plans', 'Plan', true, true),
  Migration: g('forklift.konveyor.io', 'v1beta1', 'migrations', 'Migration', true, true),
  // CDI, KubeVirt, Cozystack
  DataVolume: g('cdi.kubevirt.io', 'v1beta1', 'datavolumes', 'DataVolume', true, true),
  VirtualMachine: g('kubevirt.io', 'v1', 'virtualmachines', 'VirtualMachine', true, true),
  // Cozystack's aggregated API (cozystack-api), which implements list and watch for every application
  // kind (cozystack/cozystack@v1.6.2:pkg/registry/apps/application/rest.go: `_ rest.Watcher = &REST{}`).
  VMDisk: g('apps.cozystack.io', 'v1alpha1', 'vmdisks', 'VMDisk', true, true, true),
  VMInstance: g('apps.cozystack.io', 'v1alpha1', 'vminstances', 'VMInstance', true, true, true),
} as const satisfies Record<string, GVR>;

export function gvrKey(gvr: GVR): string {
  return `${gvr.group || 'core'}/${gvr.version}/${gvr.plural}`;
}
