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
  /**
   * Drop the handoff's finalizer from each target claim (CLAIM_FINALIZER): the last step, once the VM is
   * complete. Until then a claim deleted by anyone stays Terminating, its volume Bound, so the handoff can
   * put the volume back on Retain before it is Released (a Released volume under Delete is deleted at once).
   */
  ReleaseClaims: 'release-claims',
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
export const VM_STEPS: readonly StepName[] = [Step.CreateVMInstance, Step.DeleteScaffoldingVM, Step.ReleaseClaims];

/** Every step boundary, in order. */
export const HANDOFF_STEPS: readonly StepName[] = [...DISK_STEPS, ...VM_STEPS];

/** Checkpoint recorded in DiskStatus.handoff once a disk is finished. */
export const DISK_DONE = 'done';

/**
 * Steps that create an output the tenant may delete. Their checkpoint is written to the task's status
 * BEFORE the create is sent (record before you advance): from then on, a missing output is one that was
 * made and lost, never one still to be made — so the handoff never re-creates what a tenant deleted, and
 * never re-creates an empty DataVolume over a claim that went with it.
 */
export const RECORDED_BEFORE: ReadonlySet<StepName> = new Set([Step.CreateClaim, Step.CreateDataVolume, Step.CreateVMDisk]);

/** The recorded checkpoint is `step` or later: a decision past it was taken (and recorded) earlier. */
export function checkpointReached(checkpoint: string | undefined, step: StepName): boolean {
  if (!checkpoint) return false;
  if (checkpoint === DISK_DONE) return true;
  const i = DISK_STEPS.indexOf(checkpoint as StepName);
  return i >= 0 && i >= DISK_STEPS.indexOf(step);
}
