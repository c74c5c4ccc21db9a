// Types of our two kinds, forklift.cozystack.io/v1alpha1 VMImportSource and VMImportTask.
// The CRD schemas in crds/ are the wire contract; these types mirror them field for field.

export const GROUP = 'forklift.cozystack.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND_SOURCE = 'VMImportSource';
export const KIND_TASK = 'VMImportTask';
export const PLURAL_SOURCE = 'vmimportsources';
export const PLURAL_TASK = 'vmimporttasks';

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  generateName?: string;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** Kubernetes API-conventions condition. */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

// ---------------------------------------------------------------------------------------------------
// VMImportSource
// ---------------------------------------------------------------------------------------------------

export interface SecretKeyRef {
  /** A Secret in the source's namespace. */
  name: string;
  /** Key of the password in its data (default `password`). */
  key?: string;
}

export interface TLSCredentials {
  username: string;
  /**
   * Written in plain text; stored sealed (`enc:v2:<kid>:<base64>`, bound to the endpoint; src/credentials/seal.ts). Exactly one
   * of password / secretRef.
   */
  password?: string;
  /** The password from a Secret in the source's namespace instead. */
  secretRef?: SecretKeyRef;
  /** PEM CA that signed the endpoint's certificate. Exactly one of caCert / insecureSkipVerify. */
  caCert?: string;
  insecureSkipVerify?: boolean;
}

export interface SourceHost {
  /** ESXi host managed-object id as the VM inventory names it (host-N). */
  id: string;
  /** An address the cluster can reach (IP or DNS name). */
  address: string;
  /** The ESXi host's own account (not the vCenter one). */
  credentials: TLSCredentials;
}

export interface VMImportSourceSpec {
  type: 'vsphere';
  url: string;
  credentials: TLSCredentials;
  hosts?: SourceHost[];
}

export interface SourceHostStatus {
  id: string;
  address: string;
  ready: boolean;
  reason?: string;
  message?: string;
}

/** Credentials Forklift refused at the Secret write (403): not presented again before retryAfter unless the spec changes. */
export interface CredentialsRejection {
  /** metadata.generation whose credentials were refused. */
  generation: number;
  /** Refusals of that generation in a row. */
  attempts: number;
  /** RFC 3339 time of the next attempt with the same spec. */
  retryAfter: string;
}

export interface VMImportSourceStatus {
  observedGeneration?: number;
  credentialsRejected?: CredentialsRejection;
  conditions?: Condition[];
  /** The Forklift source Provider's observed state. */
  provider?: {
    name?: string;
    uid?: string;
    phase?: string;
    fingerprint?: string;
  };
  hosts?: SourceHostStatus[];
  /** Number of VMs the inventory reports (published in the inventory ConfigMap). */
  vmCount?: number;
  /** The VMs the source sees, for tenants (who cannot read ConfigMaps on Cozystack): bounded. */
  inventory?: SourceInventoryStatus;
}

/** Readiness of a source VM for an import (src/forklift/assess.ts): the worst category of its concerns. */
export const VM_VERDICTS = ['Ready', 'ReadyWithWarnings', 'Blocked'] as const;
export type VMVerdict = (typeof VM_VERDICTS)[number];

/** One concern about a VM: Forklift's own (its inventory's validation policies) or the controller's. */
export interface VMConcern {
  /** Stable id: Forklift's policy id (vmware.…) or ours (cozystack.…); docs/assessment.md lists each. */
  id?: string;
  /** Critical blocks the import; Warning lets it run with a caveat; Information is a note. */
  category: 'Critical' | 'Warning' | 'Information';
  label: string;
  assessment: string;
}

/** A disk as the assessment needs it. */
export interface SourceInventoryDisk {
  /** Bytes. */
  capacity: number;
  /** Controller bus: scsi, sata, ide, nvme. */
  bus?: string;
  /** vSphere disk mode: persistent, independent_persistent, independent_nonpersistent. */
  mode?: string;
  /** Raw Device Mapping. */
  rdm?: boolean;
  /** Shared with other VMs (multi-writer). */
  shared?: boolean;
}

/** A NIC as the assessment needs it. */
export interface SourceInventoryNIC {
  /** The source network id (network-N, dvportgroup-N). */
  network: string;
}

/** One VM of the source's inventory, as a tenant needs it to write a task and to know if it will boot. */
export interface SourceInventoryVM {
  /** Managed-object reference (vm-N): what `spec.vms[].id` of a task names. */
  id: string;
  name: string;
  /** Inventory folder path. */
  path: string;
  /** The ESXi host (managed-object id, host-N) the VM runs on: what `spec.hosts[].id` of a source names. */
  host?: string;
  /** poweredOn, poweredOff or suspended. */
  power?: string;
  /** Guest OS family from the guest id: windows, linux or other. */
  os?: 'windows' | 'linux' | 'other';
  /** vSphere guest id (rhel9_64Guest, windows2019srv_64Guest, …). */
  guestId?: string;
  firmware?: 'bios' | 'efi';
  /** Set (true) only when UEFI Secure Boot is on. */
  secureBoot?: boolean;
  /** VMware Tools: running, notRunning, notInstalled or unknown. */
  tools?: 'running' | 'notRunning' | 'notInstalled' | 'unknown';
  /** Changed Block Tracking enabled on the VM (warm imports need it). */
  cbt?: boolean;
  disks?: SourceInventoryDisk[];
  /** NICs by the network (id) they are on, in order. */
  nics?: SourceInventoryNIC[];
  verdict?: VMVerdict;
  /** Critical and Warning concerns first; empty when none. */
  concerns?: VMConcern[];
}

/** VMs per verdict, over every VM of the inventory (not only those listed). */
export interface SourceInventorySummary {
  ready: number;
  readyWithWarnings: number;
  blocked: number;
}

export interface SourceInventoryStatus {
  /** VMs the inventory reports. */
  total: number;
  /** Entries in `vms` (fewer than total when truncated). */
  listed: number;
  /** True when `vms` holds only the first `listed` VMs (ordered by path, name, id). */
  truncated: boolean;
  /** VMs per verdict (printer columns). */
  summary?: SourceInventorySummary;
  vms: SourceInventoryVM[];
}

export interface VMImportSource {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND_SOURCE;
  metadata: ObjectMeta;
  spec: VMImportSourceSpec;
  status?: VMImportSourceStatus;
}

// ---------------------------------------------------------------------------------------------------
// VMImportTask
// ---------------------------------------------------------------------------------------------------

export interface TaskVM {
  /** vSphere managed-object reference (vm-N). */
  id: string;
  /** Name of the resulting VMInstance; defaults to the source VM name sanitised to fit. */
  name?: string;
  instanceType?: string;
  instanceProfile?: string;
}

export interface TaskNetworkMapping {
  /** Source network id (network-N / dvportgroup-N) or name. */
  source: string;
  /** `pod` (default for unmapped networks) or `multus` with `name` (a NetworkAttachmentDefinition in the task's namespace). */
  type: 'pod' | 'multus';
  name?: string;
}

/**
 * cold: each source VM is powered off for its whole transfer. warm: disks are copied while the VM runs
 * (Forklift precopies through vSphere changed block tracking), and the VM is powered off only at cutover
 * for a final delta.
 */
export const TASK_MODES = ['cold', 'warm'] as const;
export type TaskMode = (typeof TASK_MODES)[number];

export interface VMImportTaskSpec {
  sourceRef: { name: string };
  vms: TaskVM[];
  /** Empty → the cluster default class. Must bind Immediate. */
  storageClass?: string;
  networks?: TaskNetworkMapping[];
  /** Absent → cold (the CRD defaults it). Immutable. */
  mode?: TaskMode;
  /**
   * Warm only: when to cut over (RFC 3339); absent → precopy until the tenant sets it. The only mutable
   * field of an accepted task: it may be set, or moved earlier, until cutover starts (src/api/warm.ts).
   */
  cutover?: string;
  /**
   * Convert the guests with virt-v2v (virtio drivers, static IPs kept) instead of a raw copy. Default
   * false. Refused at admission unless the platform enables it (chart value guestConversion.enabled).
   * Immutable.
   */
  guestConversion?: boolean;
  /**
   * With guestConversion: keep the guests' vSphere static IPs (Forklift's Plan preserveStaticIPs). Absent:
   * only when every network maps to Multus (src/forklift/plan.ts preserveStaticIPsFor); true with a NIC on
   * the pod network is admitted with a warning. No effect without guestConversion. Immutable.
   */
  preserveStaticIPs?: boolean;
}

export const TASK_PHASES = ['Pending', 'Validating', 'Queued', 'Transferring', 'Creating', 'Succeeded', 'Failed'] as const;
export type TaskPhase = (typeof TASK_PHASES)[number];

/**
 * Precopying and CuttingOver are a warm import's Transferring (a cold import never shows them). Queued: the
 * VM's Plan is ready and it waits for a transfer slot on its ESXi host (the platform's transfer budget).
 */
export const VM_PHASES = ['Pending', 'Validating', 'Queued', 'Transferring', 'Precopying', 'CuttingOver', 'Creating', 'Succeeded', 'Failed'] as const;
export type VMPhase = (typeof VM_PHASES)[number];

/** One disk's handoff evidence (status.vms[].diskHandoffs[]); read through src/api/disks.ts. */
export interface DiskStatus {
  /** Index in source order. */
  index: number;
  /** VMDisk name `<vm>-disk-<i>`. */
  vmDisk: string;
  /** PersistentVolume filled by the transfer. */
  volumeName?: string;
  /** The transferred claim (Forklift's), before handoff. */
  transferClaim?: string;
  capacityBytes?: number;
  /** Handoff checkpoint reached for this disk (see src/controllers/handoff/steps.ts). */
  handoff?: string;
}

export interface WarmStatus {
  /** Precopies completed. */
  precopies: number;
  /** Bytes the last precopy moved. */
  lastDeltaBytes?: number;
  /** Duration of the last precopy. */
  lastPrecopySeconds?: number;
  /** RFC 3339: when Forklift starts the next precopy. */
  nextPrecopyAt?: string;
  /** RFC 3339: the cutover Forklift was given. */
  cutoverAt?: string;
}

export interface VMStatus {
  id: string;
  name: string;
  phase: VMPhase;
  reason?: string;
  message?: string;
  progress?: number;
  bytesTotal?: number;
  bytesDone?: number;
  bytesPerSecond?: number;
  etaSeconds?: number;
  /** When bytesDone last grew while the transfer runs (RFC 3339); the stall clock counts from it. */
  lastProgressTime?: string;
  vmInstance?: string;
  /**
   * The VM's VMDisk names in source order, once the handoff names them (what Cozystack's console links to
   * /console/vmdisks/<name>). A task written by an earlier version may hold DiskStatus objects here: read
   * it through src/api/disks.ts readVMDisks, never directly.
   */
  disks?: string[];
  /** Each disk's handoff evidence and checkpoint, in source order (src/controllers/handoff/steps.ts). */
  diskHandoffs?: DiskStatus[];
  downtimeSeconds?: number;
  /** A warm import: its precopies while the source runs, and its cutover. */
  warm?: WarmStatus;
  /** Forklift Plan built for this VM. */
  plan?: string;
  /**
   * The Warning concerns of the source VM's assessment at preflight, one sentence each (label,
   * assessment, what to do): the import runs, these say what may not carry over.
   */
  warnings?: string[];
  timestamps?: {
    started?: string;
    sourcePoweredOff?: string;
    transferred?: string;
    completed?: string;
  };
  /** What of the source VM's shape its VMInstance carries on this platform (docs/conversion.md). */
  shape?: ShapeStatus;
  /**
   * The VM's place under the platform's transfer budget (docs/operations.md, "Transfer budget"): the ESXi
   * host whose NFC service serves its disks, and its admission. `admittedAt` is the checkpoint written
   * before the VM's Migration is created; while it is absent the VM is Queued.
   */
  transferSlot?: TransferSlot;
}

/** Where a VM's disk transfer runs, and whether it holds its slots there. */
export interface TransferSlot {
  /** The vCenter's instance UUID from Forklift's inventory (its provider's `instanceUuid`), not its URL. */
  vcenter: string;
  /** The inventory id of the ESXi host (host-N) that serves the VM's disks. */
  host: string;
  /** The host's name as the inventory gives it. */
  hostName?: string;
  /** Disks the transfer opens on the host (one NFC connection each). */
  disks: number;
  /** Each disk's capacity in bytes, for the task's ETA while the VM waits. */
  diskBytes?: number[];
  /** RFC 3339: when the VM began to wait for its slot. */
  queuedAt?: string;
  /** RFC 3339: when the VM was admitted to its slots (the checkpoint written before its Migration exists). */
  admittedAt?: string;
}

/** The task's transfer as a whole: bytes, rate and an ETA that covers its queued VMs. */
export interface TaskTransferStatus {
  bytesDone: number;
  bytesTotal: number;
  /** The task's transfers' rate now. */
  bytesPerSecond: number;
  /** Seconds until the task's last VM is copied, queued VMs included; absent while no rate is known. */
  etaSeconds?: number;
  /** The ETA in words (`1h20m`, printer column ETA). */
  eta?: string;
}

/** One NIC of the source VM: its MAC there and on the VMInstance. */
export interface NICStatus {
  /** Position in source NIC order. */
  index: number;
  /** pod, or the Multus attachment's name. */
  network: string;
  sourceMAC?: string;
  /** The VMInstance NIC's MAC when known; absent: assigned when the VM first starts. */
  mac?: string;
  /** Whether the VMInstance keeps the source MAC. */
  kept: boolean;
}

export interface ShapeStatus {
  /** The EFI instance profile set because the platform's vm-instance takes no firmware value. */
  instanceProfile?: string;
  /** How the source's firmware is carried: why that profile, or why the VM will not boot. */
  firmware?: string;
  nics?: NICStatus[];
  /** Parts of the source's shape the VMInstance cannot carry, one phrase each. */
  notCarried?: string[];
}

export interface VMImportTaskStatus {
  observedGeneration?: number;
  phase?: TaskPhase;
  conditions?: Condition[];
  startedAt?: string;
  completedAt?: string;
  message?: string;
  /** The storage class resolved on first reconcile; frozen afterwards. */
  storageClass?: string;
  /** Aggregate progress 0–100 (printer column). */
  progress?: number;
  /** Bytes done and total, the rate now and the whole task's ETA (printer column ETA). */
  transfer?: TaskTransferStatus;
  /**
   * The volumes the task keeps on Retain for its failed VMs: deleting the task releases them under their
   * class's reclaim policy (unless annotated keep-volumes).
   */
  heldVolumes?: HeldVolume[];
  vms?: VMStatus[];
}

/** A volume a task keeps for one of its failed VMs. */
export interface HeldVolume {
  name: string;
  vm: string;
  disk?: number;
  capacityBytes?: number;
}

export interface VMImportTask {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND_TASK;
  metadata: ObjectMeta;
  spec: VMImportTaskSpec;
  status?: VMImportTaskStatus;
}
