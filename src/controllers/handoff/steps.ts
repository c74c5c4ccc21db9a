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
 * Steps that create an output the tenant may delete. Before the create is sent, the intent is written to
 * the task's status (record before you advance): `pending:<step>`. The create's success turns it into
 * `<step>` in the same pass's status write. So the next pass tells the three cases apart:
 * - `<step>` and the output missing or being deleted: made, then deleted by someone else (OutputDeleted);
 *   the handoff never re-creates what a tenant deleted, nor an empty DataVolume over a claim that went;
 * - `pending:<step>` and the output being deleted: made (it exists), and someone is deleting it;
 * - `pending:<step>` and the output missing: the create may not have happened (its answer was an error,
 *   the intent's own write answered an error after it was applied, or the process died in between), so
 *   it is made now. Reading that as a deletion failed healthy VMs under API faults. The one case it gets
 *   wrong is an output deleted within milliseconds of its create, before the confirming write: that
 *   output is made again, over the same volume — never an empty one, the claim being held (CLAIM_FINALIZER).
 */
export const RECORDED_BEFORE: ReadonlySet<StepName> = new Set([Step.CreateClaim, Step.CreateDataVolume, Step.CreateVMDisk]);

const PENDING = 'pending:';

/** The checkpoint written before a RECORDED_BEFORE step's create is sent. */
export function pendingCheckpoint(step: StepName): string {
  return `${PENDING}${step}`;
}

/** The step whose create was announced (`pending:<step>`) and not yet confirmed; else undefined. */
export function pendingStep(checkpoint: string | undefined): StepName | undefined {
  if (!checkpoint?.startsWith(PENDING)) return undefined;
  const step = checkpoint.slice(PENDING.length) as StepName;
  return DISK_STEPS.includes(step) ? step : undefined;
}

/**
 * The recorded checkpoint is `step` or later: a decision past it was taken (and recorded) earlier. A
 * pending checkpoint has reached only the steps before the one it announces.
 */
export function checkpointReached(checkpoint: string | undefined, step: StepName): boolean {
  if (!checkpoint) return false;
  if (checkpoint === DISK_DONE) return true;
  const pending = pendingStep(checkpoint);
  const i = pending ? DISK_STEPS.indexOf(pending) - 1 : DISK_STEPS.indexOf(checkpoint as StepName);
  return i >= 0 && i >= DISK_STEPS.indexOf(step);
}

/** The per-disk steps a disk still has to take after the checkpoint recorded for it. */
export function diskStepsLeft(checkpoint: string | undefined): number {
  if (checkpoint === DISK_DONE) return 0;
  if (!checkpoint) return DISK_STEPS.length;
  const pending = pendingStep(checkpoint);
  const i = pending ? DISK_STEPS.indexOf(pending) - 1 : DISK_STEPS.indexOf(checkpoint as StepName);
  return DISK_STEPS.length - 1 - Math.max(-1, i);
}
