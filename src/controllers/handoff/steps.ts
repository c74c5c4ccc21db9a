// Every step of the copy-free handoff, in order. One place: the crash-safety test kills the controller
// right after each of these (HANDOFF_STEPS), so a step added here cannot escape that test.

export const Step = {
  /** PV: our markers (task uid, vm id, disk index, transfer claim, original policy) + reclaim policy Retain. */
  RetainVolume: 'retain-volume',
  /** Delete (orphaning) any DataVolume that owns the transfer claim: CDI would recreate it and re-import. */
  DeleteTransferDataVolume: 'delete-transfer-datavolume',
  /** Clear the transfer claim's ownerReferences to Forklift's VM: GC would delete it with the VM. */
  OrphanTransferClaim: 'orphan-transfer-claim',
  /** Create `vm-disk-<disk>` pre-bound to the PV. */
  CreateClaim: 'create-claim',
  /** Delete the transfer claim (the PV is Retain, so it turns Released, data intact). */
  DeleteTransferClaim: 'delete-transfer-claim',
  /** PV claimRef → the new claim, UID included. */
  RebindVolume: 'rebind-volume',
  /** Touch the new claim once the PV controller marked the PV Bound: the binder finishes from the event. */
  RequestBind: 'request-bind',
  /** DataVolume `vm-disk-<disk>` with Helm ownership metadata (CDI adopts the populated claim). */
  CreateDataVolume: 'create-datavolume',
  /** The VMDisk. */
  CreateVMDisk: 'create-vmdisk',
  /** PV reclaim policy back to its class's, once everything holds the volume. */
  SettleVolume: 'settle-volume',
  /** The Halted VMInstance. */
  CreateVMInstance: 'create-vminstance',
  /** Delete the VirtualMachine Forklift built. */
  DeleteScaffoldingVM: 'delete-scaffolding-vm',
} as const;
export type StepName = (typeof Step)[keyof typeof Step];

/** Per-disk steps, in order. */
export const DISK_STEPS: readonly StepName[] = [
  Step.RetainVolume,
  Step.DeleteTransferDataVolume,
  Step.OrphanTransferClaim,
  Step.CreateClaim,
  Step.DeleteTransferClaim,
  Step.RebindVolume,
  Step.RequestBind,
  Step.CreateDataVolume,
  Step.CreateVMDisk,
  Step.SettleVolume,
];

/** Per-VM steps, after every disk settled. */
export const VM_STEPS: readonly StepName[] = [Step.CreateVMInstance, Step.DeleteScaffoldingVM];

/** Every step boundary, in order. */
export const HANDOFF_STEPS: readonly StepName[] = [...DISK_STEPS, ...VM_STEPS];

/** Checkpoint recorded in DiskStatus.handoff once a disk is finished. */
export const DISK_DONE = 'done';

/**
 * Steps whose checkpoint is written to the task's status before the next pass: the world cannot give it
 * back. After create-vmdisk a missing VMDisk means someone deleted it (OutputDeleted), not that it is
 * still to be made, and only the recorded checkpoint tells the two apart. Every other step leaves its
 * evidence on the objects it wrote (the volume's markers and policy, the claim's owners and binding, the
 * outputs themselves), which the next pass observes afresh: their checkpoints ride along with the next
 * status write that is made anyway, and a crash before it loses nothing but a read skipped (the handoff's
 * crash tests throw a step's evidence away after every step).
 */
export const RECORDED_AT_ONCE: ReadonlySet<StepName> = new Set([Step.CreateVMDisk]);
