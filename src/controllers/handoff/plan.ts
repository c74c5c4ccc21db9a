// The pure core of the handoff: from what was observed, the ONE next step.
// Every rule here is a fact from docs/cozystack-contract.md ("The copy-free handoff") or the Kubernetes PV
// controller's behaviour; each branch names the failure it prevents.
import { ANNOTATION_BIND_REQUESTED, ANNOTATION_HANDOFF, CLAIM_FINALIZER, HANDOFF_SETTLED } from '../../api/labels.ts';
import { TaskReason } from '../../api/conditions.ts';
import { releaseState } from '../../cozystack/release.ts';
import { hasOutputMarkers, markedDiskIndex } from '../../cozystack/render.ts';
import type { KubeObject } from '../../runtime/kube.ts';
import { Step, checkpointReached, pendingStep, type StepName } from './steps.ts';

/**
 * The steps after which data cannot be brought back, each with what it is decided on. Every one of them is
 * decided on a live observation (the caller re-reads from the API server whatever a cached pass decided
 * it on: index.ts, IRREVERSIBLE_STEPS) and its write carries a precondition on what was read.
 *
 * - retain-volume is the guard all others rest on: the volume carries our markers and reclaim policy
 *   Retain before any claim is touched (patch on the volume's resourceVersion).
 * - delete-transfer-datavolume: the volume, read live, is ours and Retain (a DataVolume deleted without
 *   Orphan, or one the garbage collector follows to the claim, releases the volume); delete preconditioned
 *   on the DataVolume's UID, propagation Orphan.
 * - delete-transfer-claim: the volume, read live, is ours and Retain, and the target claim exists
 *   pre-bound to it (the volume is Released when the claim goes: under Delete, the provisioner deletes it);
 *   delete preconditioned on the transfer claim's UID.
 * - settle-volume (the reclaim policy leaves Retain): read live, the VMDisk exists and is not being
 *   deleted; its DataVolume exists, is not being deleted and is the claim's only owner and controller;
 *   the claim exists, is not being deleted, is Bound, and the volume's claimRef names it by UID; the volume is Bound; the transfer claim is gone. The patch carries the volume's
 *   resourceVersion from that same read.
 * - release-claims (the claims' finalizer goes, after which a deleted claim releases its volume under
 *   the class's policy): read live, every output of the VM exists, none is being deleted, every release
 *   deployed, and Forklift's scaffolding VM is gone or going; each claim's patch carries its
 *   resourceVersion. Taken right after the scaffolding VM's delete, in the same call, on an observation
 *   read again after it.
 * - create-datavolume and create-vmdisk (each makes CDI or the VMDisk chart act on what it finds: a
 *   DataVolume over a claim gone provisions an empty volume in its place, and a VMDisk over a DataVolume
 *   gone makes its chart create an empty one): read live, the claim (and for the VMDisk, the DataVolume)
 *   exists and is not being deleted.
 * - create-vminstance (not destructive, but irreversible for the tenant: a VMInstance over a missing
 *   disk): read live, every disk's VMDisk, DataVolume and claim exist and none is being deleted.
 */
export const IRREVERSIBLE_STEPS: ReadonlySet<StepName> = new Set([
  Step.DeleteTransferDataVolume,
  Step.DeleteTransferClaim,
  Step.CreateDataVolume,
  Step.CreateVMDisk,
  Step.SettleVolume,
  Step.CreateVMInstance,
  Step.ReleaseClaims,
]);

export interface Markers {
  taskUid: string;
  vmId: string;
}

/** Everything known about one disk, as observed by this pass (caches guarded by expectations, or live). */
export interface DiskObservation {
  index: number;
  /** VMDisk name `<vm>-disk-<i>`. */
  vmDisk: string;
  /** Target claim and DataVolume name `vm-disk-<vm>-disk-<i>`. */
  claimName: string;
  namespace: string;
  /** Name of the claim Forklift filled (from the scaffolding VM, status or the PV's annotation). */
  transferClaimName?: string;
  /** The transfer claim as it exists now (undefined: not found). */
  transferClaim?: KubeObject;
  /** Name of the PV that is this disk, when recorded or learned from the transfer claim. */
  volumeName?: string;
  /** The PV as it exists now. */
  volume?: KubeObject;
  /** DataVolumes that own the transfer claim or would recreate it. */
  transferDataVolumes: KubeObject[];
  /** `vm-disk-<…>` claim, DataVolume and VMDisk as they exist now. */
  claim?: KubeObject;
  dataVolume?: KubeObject;
  vmDiskObject?: KubeObject;
  /**
   * The disk's checkpoint as recorded in the task's status. A create step's intent is recorded before the
   * create is sent and confirmed after it (RECORDED_BEFORE), so an output missing past a confirmed
   * checkpoint was made and then deleted by someone else, not still to be made. The VMDisk is always read
   * once create-vmdisk is recorded.
   */
  checkpoint?: string;
}

export type DiskAction =
  | { type: 'step'; step: StepName }
  | { type: 'wait'; message: string }
  | { type: 'fail'; reason: string; message: string }
  | { type: 'done' };

type Obj = Record<string, unknown>;
const spec = (o: KubeObject | undefined): Obj => ((o?.spec ?? {}) as Obj);
const status = (o: KubeObject | undefined): Obj => ((o?.status ?? {}) as Obj);
const phase = (o: KubeObject | undefined): string | undefined => status(o).phase as string | undefined;
const claimRef = (pv: KubeObject | undefined): { name?: string; namespace?: string; uid?: string } | undefined =>
  spec(pv).claimRef as { name?: string; namespace?: string; uid?: string } | undefined;

/** Reclaim policy the volume settles on: its class's, Delete when no class is named or it is gone. */
export function desiredReclaimPolicy(storageClass: KubeObject | undefined): 'Delete' | 'Retain' {
  return (storageClass as { reclaimPolicy?: string } | undefined)?.reclaimPolicy === 'Retain' ? 'Retain' : 'Delete';
}

/** True when the PV's claimRef names exactly this claim (namespace, name and UID). */
export function claimRefMatches(pv: KubeObject | undefined, claim: KubeObject | undefined): boolean {
  const ref = claimRef(pv);
  return !!ref && !!claim && ref.name === claim.metadata?.name && ref.namespace === claim.metadata?.namespace && !!ref.uid && ref.uid === claim.metadata?.uid;
}

/** True when the DataVolume is the claim's only owner and its controller (CDI adopted the claim). */
export function adoptedBy(claim: KubeObject | undefined, dv: KubeObject | undefined): boolean {
  const refs = claim?.metadata?.ownerReferences ?? [];
  return !!dv && refs.length === 1 && refs[0]!.kind === 'DataVolume' && refs[0]!.uid === dv.metadata?.uid && refs[0]!.controller === true;
}

/** The transfer claim's ownerReferences that tie its life to Forklift's objects. */
export function forkliftOwners(claim: KubeObject | undefined): NonNullable<NonNullable<KubeObject['metadata']>['ownerReferences']> {
  return (claim?.metadata?.ownerReferences ?? []).filter((r) => r.kind === 'VirtualMachine' || r.kind === 'DataVolume');
}

/** True when the PV is already labelled as this task's disk `index`. */
export function volumeRecorded(pv: KubeObject, m: Markers, index: number): boolean {
  return hasOutputMarkers(pv, m) && markedDiskIndex(pv) === index;
}

/** A finished disk: the volume settled and its claimRef names the target claim. */
export function diskDone(o: DiskObservation, m: Markers): boolean {
  const pv = o.volume;
  if (!pv || !volumeRecorded(pv, m, o.index)) return false;
  return pv.metadata?.annotations?.[ANNOTATION_HANDOFF] === HANDOFF_SETTLED && claimRefMatches(pv, o.claim);
}

/** An output that exists without our markers is someone else's: never overwritten. */
export function foreignOutput(o: Pick<DiskObservation, 'claim' | 'dataVolume' | 'vmDiskObject' | 'claimName' | 'vmDisk'>, m: Markers): { reason: string; message: string } | undefined {
  const found: Array<[KubeObject | undefined, string]> = [
    [o.claim, `PersistentVolumeClaim ${o.claimName}`],
    [o.dataVolume, `DataVolume ${o.claimName}`],
    [o.vmDiskObject, `VMDisk ${o.vmDisk}`],
  ];
  for (const [obj, what] of found) {
    if (obj && !hasOutputMarkers(obj, m)) {
      return { reason: TaskReason.OutputExists, message: `${what} already exists and was not created by this task; it is left untouched` };
    }
  }
  return undefined;
}

const deleting = (o: KubeObject | undefined): boolean => !!o?.metadata?.deletionTimestamp;

/** Field managers of the API server's own writers and of this controller: not who deleted an output. */
const OWN_MANAGERS = new Set(['migration-controller', 'kube-controller-manager', 'kube-apiserver']);

/**
 * Who else wrote the object, from its managedFields (Kubernetes records writers, not the deleter: an
 * object being deleted names whoever wrote it besides us — a tenant's kubectl, Helm, a GitOps tool).
 * Empty when nothing is known (the object is already gone).
 */
export function deleters(obj: KubeObject | undefined): string {
  const managers = [...new Set(((obj?.metadata as { managedFields?: Array<{ manager?: string }> } | undefined)?.managedFields ?? []).map((f) => f.manager).filter((x): x is string => !!x && !OWN_MANAGERS.has(x)))];
  return managers.length ? ` (last written by ${managers.slice(0, 3).map((x) => x.slice(0, 63)).join(', ')})` : ' by someone other than this controller';
}

/**
 * An output whose create was recorded (RECORDED_BEFORE), now missing or being deleted — or present without
 * our markers: ours was deleted and another writer made one of that name again (a Helm release that
 * re-renders its DataVolume, say), which is left untouched.
 */
export function deletedOutput(o: Pick<DiskObservation, 'checkpoint' | 'claim' | 'dataVolume' | 'vmDiskObject' | 'claimName' | 'vmDisk'>, m?: Markers): { what: string; object?: KubeObject; replaced?: boolean } | undefined {
  const outputs: Array<[StepName, KubeObject | undefined, string]> = [
    [Step.CreateClaim, o.claim, `PersistentVolumeClaim ${o.claimName}`],
    [Step.CreateDataVolume, o.dataVolume, `DataVolume ${o.claimName}`],
    [Step.CreateVMDisk, o.vmDiskObject, `VMDisk ${o.vmDisk}`],
  ];
  for (const [step, obj, what] of outputs) {
    if (checkpointReached(o.checkpoint, step) && (!obj || deleting(obj))) return { what, object: obj };
    if (checkpointReached(o.checkpoint, step) && obj && m && !hasOutputMarkers(obj, m)) return { what, replaced: true };
    // Announced and not yet confirmed (steps.ts RECORDED_BEFORE): an output being deleted was made; a
    // missing one may never have been, and is made again.
    if (pendingStep(o.checkpoint) === step && obj && deleting(obj)) return { what, object: obj };
  }
  return undefined;
}

/** True while the claim carries the handoff's finalizer. */
export function holdsClaim(claim: KubeObject | undefined): boolean {
  return (claim?.metadata?.finalizers ?? []).includes(CLAIM_FINALIZER);
}

/**
 * The next step for one disk. Order matters and is the recipe's:
 * record+Retain → orphan (DataVolumes first, then ownerReferences) → target claim → delete transfer claim →
 * claimRef with the new UID → let the binder finish → DataVolume → VMDisk → settle.
 */
export function nextStep(o: DiskObservation, m: Markers): DiskAction {
  // An output this handoff created and someone else deleted: re-creating it would undo the tenant's
  // delete (and a DataVolume re-created over a claim gone with it makes CDI provision an empty volume);
  // settling without it would leave the volume on Delete with nothing holding it. The VM fails, saying
  // what was deleted and by whom; the caller keeps the volume on Retain in the task's custody.
  const gone = deletedOutput(o, m);
  if (gone?.replaced) {
    return { type: 'fail', reason: TaskReason.OutputDeleted, message: `${gone.what} was deleted after the handoff created it, and one of that name was made again by another writer (left untouched); the VM is not finished and no VMInstance is created over it` };
  }
  if (gone) {
    return { type: 'fail', reason: TaskReason.OutputDeleted, message: `${gone.what} was ${gone.object ? 'being ' : ''}deleted${deleters(gone.object)} after the handoff created it; the VM is not finished and no VMInstance is created over it` };
  }
  if (diskDone(o, m)) return { type: 'done' };
  const foreign = foreignOutput(o, m);
  if (foreign) return { type: 'fail', ...foreign };

  const pv = o.volume;
  if (!pv) {
    if (o.volumeName) {
      return { type: 'fail', reason: TaskReason.Failed, message: `PersistentVolume ${o.volumeName} of disk ${o.index} no longer exists` };
    }
    if (!o.transferClaim) {
      return {
        type: 'fail',
        reason: TaskReason.EngineReportedSuccessWithoutOutput,
        message: `the transferred claim ${o.transferClaimName ?? `of disk ${o.index}`} does not exist and no volume was recorded for disk ${o.index}; create a new task`,
      };
    }
    return { type: 'wait', message: `waiting for the transferred claim ${o.transferClaimName} to be Bound` };
  }

  // 1. Record which volume is disk i on the volume itself, and Retain it, before touching any claim:
  //    a dynamically provisioned PV defaults to Delete, and every later step passes through a moment
  //    where the volume has no live claim.
  if (!volumeRecorded(pv, m, o.index) || spec(pv).persistentVolumeReclaimPolicy !== 'Retain') {
    return { type: 'step', step: Step.RetainVolume };
  }

  // 2. A DataVolume that still owns (or is named as) the transfer claim would make CDI recreate the
  //    claim and re-run the whole import: delete it first, orphaning the claim.
  const liveDVs = o.transferDataVolumes.filter((d) => !deleting(d));
  if (liveDVs.length) return { type: 'step', step: Step.DeleteTransferDataVolume };
  if (o.transferDataVolumes.length) {
    return { type: 'wait', message: `waiting for DataVolume ${o.transferDataVolumes[0]!.metadata?.name} to be deleted` };
  }

  // 3. Forklift's VM owns the claim: GC would delete the claim within a second of the VM.
  if (o.transferClaim && !deleting(o.transferClaim) && forkliftOwners(o.transferClaim).length) {
    return { type: 'step', step: Step.OrphanTransferClaim };
  }

  // 4. The target claim, pre-bound to the volume.
  if (!o.claim) return { type: 'step', step: Step.CreateClaim };
  if (spec(o.claim).volumeName !== pv.metadata?.name) {
    return { type: 'fail', reason: TaskReason.OutputExists, message: `PersistentVolumeClaim ${o.claimName} names volume ${String(spec(o.claim).volumeName)}, not ${pv.metadata?.name}` };
  }
  if (deleting(o.claim)) return { type: 'wait', message: `PersistentVolumeClaim ${o.claimName} is being deleted` };

  // 5. Delete the transfer claim (the volume is Retain: it turns Released, its data intact) …
  if (o.transferClaim) {
    if (!deleting(o.transferClaim)) return { type: 'step', step: Step.DeleteTransferClaim };
    if (!claimRefMatches(pv, o.claim)) return { type: 'wait', message: `waiting for the transferred claim ${o.transferClaimName} to be deleted` };
  }

  // 6. … then point the volume at the new claim, UID included (no window for another claim).
  if (!claimRefMatches(pv, o.claim)) {
    // Only once the PV controller has seen the old claim go (the volume is no longer Bound): its cache
    // then holds this volume as Released, and it reacts to our claimRef write at once.
    if (phase(pv) === 'Bound') {
      return { type: 'wait', message: `waiting for the PV controller to release ${pv.metadata?.name} from the deleted transfer claim` };
    }
    return { type: 'step', step: Step.RebindVolume };
  }

  // 7. The binder marks the volume Bound from the claimRef event; the claim itself is only re-examined
  //    on a claim event (or the periodic resync, 15 s by default): touch it once the volume is Bound.
  if (phase(o.claim) !== 'Bound') {
    if (phase(pv) !== 'Bound') return { type: 'wait', message: `waiting for the PV controller to bind ${pv.metadata?.name} to ${o.claimName}` };
    if (!o.claim.metadata?.annotations?.[ANNOTATION_BIND_REQUESTED]) return { type: 'step', step: Step.RequestBind };
    return { type: 'wait', message: `waiting for the PV controller to bind claim ${o.claimName}` };
  }

  // 8. The DataVolume the VMDisk chart adopts; CDI adopts the populated claim into it.
  if (!o.dataVolume) return { type: 'step', step: Step.CreateDataVolume };
  // 9. The VMDisk.
  if (!o.vmDiskObject) return { type: 'step', step: Step.CreateVMDisk };

  // 10. Settle: the volume goes back to its class's reclaim policy only when everything holds it —
  //     otherwise deleting the wrong thing in between would delete the data. Every condition is part of
  //     this observation, which the caller takes live before it settles (settleConditions).
  if (o.transferClaim) return { type: 'wait', message: `waiting for the transferred claim ${o.transferClaimName} to be gone` };
  if (!adoptedBy(o.claim, o.dataVolume)) {
    return { type: 'wait', message: `waiting for CDI to adopt claim ${o.claimName} into DataVolume ${o.claimName}` };
  }
  if (phase(pv) !== 'Bound') return { type: 'wait', message: `waiting for volume ${pv.metadata?.name} to report Bound` };
  return { type: 'step', step: Step.SettleVolume };
}

/** What is known about the VM-level outputs once every disk is finished. */
export interface VMObservation {
  vmInstanceName: string;
  vmInstance?: KubeObject;
  /** The task's status records the VMInstance as created (written before its create was sent). */
  vmInstanceRecorded?: boolean;
  scaffoldingVM?: KubeObject;
  /** Each disk's VMDisk as the aggregated API reports it now (undefined: gone); read once the VMInstance exists. */
  vmDisks?: Array<{ name: string; object: KubeObject | undefined }>;
  /** Each disk's target claim as it is now (read once the VMInstance exists). */
  claims?: Array<{ name: string; object: KubeObject | undefined }>;
}

export type VMAction = { type: 'step'; step: StepName } | { type: 'wait'; message: string } | { type: 'fail'; reason: string; message: string } | { type: 'done' };

/** A VMInstance name taken by someone else fails the VM before any disk is touched. */
export function foreignVMInstance(o: VMObservation, m: Markers): { reason: string; message: string } | undefined {
  if (o.vmInstance && !hasOutputMarkers(o.vmInstance, m)) {
    return { reason: TaskReason.OutputExists, message: `VMInstance ${o.vmInstanceName} already exists and was not created by this task; it is left untouched` };
  }
  return undefined;
}

/**
 * The next VM-level step, once every disk is done: the VMInstance; then every VMDisk and the VMInstance
 * deployed (their Helm releases — an object the API accepted can still fail in its chart, e.g. an
 * instanceType the cluster does not have); only then the scaffolding VM goes. A VM is never reported
 * imported while its outputs could still fail, and a failed release keeps the scaffolding VM.
 */
export function nextVMStep(o: VMObservation, m: Markers): VMAction {
  const foreign = foreignVMInstance(o, m);
  if (foreign) return { type: 'fail', ...foreign };
  if (o.vmInstanceRecorded && (!o.vmInstance || deleting(o.vmInstance))) {
    return { type: 'fail', reason: TaskReason.OutputDeleted, message: `VMInstance ${o.vmInstanceName} was ${o.vmInstance ? 'being ' : ''}deleted${deleters(o.vmInstance)} after the handoff created it; the VM is not finished` };
  }
  if (!o.vmInstance) {
    if (!o.scaffoldingVM) {
      return { type: 'fail', reason: TaskReason.Failed, message: `the Forklift-built VirtualMachine is gone before VMInstance ${o.vmInstanceName} was created; its disks are in place as VMDisks` };
    }
    return { type: 'step', step: Step.CreateVMInstance };
  }
  const outputs: Array<[string, KubeObject | undefined]> = [...(o.vmDisks ?? []).map((d): [string, KubeObject | undefined] => [`VMDisk ${d.name}`, d.object]), [`VMInstance ${o.vmInstanceName}`, o.vmInstance]];
  const pending: string[] = [];
  for (const [what, obj] of outputs) {
    const r = releaseState(obj);
    if (r.state === 'failed') return { type: 'fail', reason: TaskReason.ReleaseFailed, message: `${what} did not deploy (${r.reason}): ${r.message}` };
    if (r.state === 'pending') pending.push(`${what}: ${r.message}`);
  }
  if (pending.length) return { type: 'wait', message: `waiting for the releases to deploy — ${pending.join('; ')}` };
  if (o.scaffoldingVM && !deleting(o.scaffoldingVM)) return { type: 'step', step: Step.DeleteScaffoldingVM };
  // Last: the claims leave the handoff's custody, once everything else holds them.
  if ((o.claims ?? []).some((c) => holdsClaim(c.object))) return { type: 'step', step: Step.ReleaseClaims };
  return { type: 'done' };
}
