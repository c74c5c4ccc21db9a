// Condition types and reasons of our two kinds. Reasons are CamelCase, stable, and documented in the
// README's troubleshooting table; alerts and tests key on them.

export const CONDITION_READY = 'Ready';
export const CONDITION_VALIDATED = 'Validated';
export const CONDITION_TRANSFERRED = 'Transferred';
/**
 * A task's end, either way (as a Job's Complete/Failed pair, folded into one): True once every VM is
 * terminal, with Ready's reason (Succeeded, PartiallyFailed or the failure reason); False while any VM
 * runs. `kubectl wait --for=condition=Finished` therefore returns at once on a failure too, and Ready
 * then tells which end it was.
 */
export const CONDITION_FINISHED = 'Finished';
/** Finished=False while the task runs. */
export const REASON_IN_PROGRESS = 'InProgress';

/**
 * True while the controller keeps failing to reconcile the object for a reason outside it (the API server,
 * Forklift's inventory, a quota); False (reason Recovered) once a reconcile succeeds again.
 */
export const CONDITION_DEGRADED = 'Degraded';

export const DegradedReason = {
  APIError: 'APIError',
  APIUnreachable: 'APIUnreachable',
  InventoryUnavailable: 'InventoryUnavailable',
  QuotaExceeded: 'QuotaExceeded',
  AdmissionWebhookUnavailable: 'AdmissionWebhookUnavailable',
  Error: 'Error',
  Recovered: 'Recovered',
} as const;
export type DegradedReason = (typeof DegradedReason)[keyof typeof DegradedReason];

export const SourceReason = {
  Connected: 'Connected',
  Connecting: 'Connecting',
  ConnectionFailed: 'ConnectionFailed',
  AuthenticationFailed: 'AuthenticationFailed',
  InvalidCACertificate: 'InvalidCACertificate',
  CredentialsMissing: 'CredentialsMissing',
  VDDKNotConfigured: 'VDDKNotConfigured',
  ForkliftNotInstalled: 'ForkliftNotInstalled',
  /** The installed Plan CRD lacks a field every Plan relies on (src/forklift/features.ts). */
  ForkliftTooOld: 'ForkliftTooOld',
  HostUnreachable: 'HostUnreachable',
  /** spec.url or a host address is (or resolves to) a destination the platform's egress policy denies. */
  AddressNotAllowed: 'AddressNotAllowed',
  /** A Secret, Provider or Host this source would write exists and carries another source's owner label. */
  NameConflict: 'NameConflict',
  Deleting: 'Deleting',
} as const;
export type SourceReason = (typeof SourceReason)[keyof typeof SourceReason];

export const TaskReason = {
  // progress
  Pending: 'Pending',
  SourceNotReady: 'SourceNotReady',
  SourceNotFound: 'SourceNotFound',
  Validating: 'Validating',
  Transferring: 'Transferring',
  Converting: 'Converting',
  /** A warm import copies while the source runs. */
  Precopying: 'Precopying',
  /** A warm import's precopy failed and Forklift retries it (CDI restarts its importer); still Precopying. */
  PrecopyRetrying: 'PrecopyRetrying',
  /** A warm import's cutover: the source is off, the final changes are copied. */
  CuttingOver: 'CuttingOver',
  Stalled: 'Stalled',
  Creating: 'Creating',
  Succeeded: 'Succeeded',
  ForkliftNotInstalled: 'ForkliftNotInstalled',
  ForkliftTooOld: 'ForkliftTooOld',
  // preflight (terminal: the user must change something)
  StorageClassNotFound: 'StorageClassNotFound',
  StorageClassWaitForFirstConsumer: 'StorageClassWaitForFirstConsumer',
  NoDefaultStorageClass: 'NoDefaultStorageClass',
  InvalidOutputName: 'InvalidOutputName',
  OutputExists: 'OutputExists',
  HostAddressInServiceCIDR: 'HostAddressInServiceCIDR',
  QuotaExceeded: 'QuotaExceeded',
  VMNotFound: 'VMNotFound',
  /** The source VM's readiness assessment has a Critical concern (src/forklift/assess.ts). */
  VMBlocked: 'VMBlocked',
  // warm preflight (src/preflight/warm.ts)
  /** Warm: changed block tracking is off on the VM or one of its disks. */
  ChangeTrackingDisabled: 'ChangeTrackingDisabled',
  /** Warm: the VM already has vSphere snapshots. */
  SnapshotsPresent: 'SnapshotsPresent',
  /** Warm: an RDM, independent or shared disk, which snapshot-based precopies cannot carry. */
  DiskNotWarmCapable: 'DiskNotWarmCapable',
  // engine failures, translated
  PlanNotValid: 'PlanNotValid',
  HostUnreachable: 'HostUnreachable',
  /** VDDK could not open the disk: the ESXi host's NFC service has no buffers left for another transfer. */
  HostTransferLimit: 'HostTransferLimit',
  TransferFailed: 'TransferFailed',
  /** A warm import's precopy failed more often than Forklift retries it (its IMPORTER_RETRY). */
  PrecopyFailed: 'PrecopyFailed',
  VDDKNotConfigured: 'VDDKNotConfigured',
  /** Warm: vCenter refused to create or remove a precopy snapshot (often the account lacks the snapshot privileges). */
  SnapshotFailed: 'SnapshotFailed',
  EngineReportedSuccessWithoutOutput: 'EngineReportedSuccessWithoutOutput',
  OutputRejected: 'OutputRejected',
  /** A VMDisk the handoff created was deleted before the VM was finished: its volume is kept on Retain. */
  OutputDeleted: 'OutputDeleted',
  /** A VMDisk or VMInstance was accepted but its Helm release failed (the chart's message is kept). */
  ReleaseFailed: 'ReleaseFailed',
  Canceled: 'Canceled',
  Failed: 'Failed',
  PartiallyFailed: 'PartiallyFailed',
} as const;
export type TaskReason = (typeof TaskReason)[keyof typeof TaskReason];
