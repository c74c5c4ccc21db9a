// The copy-free handoff: the volumes Forklift/CDI filled become the tenant's VMDisks without copying a
// byte, then a Halted VMInstance is created and Forklift's scaffolding VirtualMachine deleted.
//
// A checkpoint machine. Each call observes the real world, decides the ONE next step for the first
// unfinished disk (plan.ts, pure), executes it, and returns the disks' evidence for the caller to persist
// with the VM's phase in one status write. Every step is idempotent and safe to resume after a crash
// between any two steps: the first step writes the disk's identity onto the PV itself, so even a lost
// status write cannot lose which volume is disk i.
//
// Observation reads the informer caches, never behind this process's own writes (expectations.ts), and
// falls back to the API server where a cache cannot answer. That is safe because of how each outcome is
// used: a step that rests on a stale read fails harmlessly (creates tolerate AlreadyExists, deletes carry
// UID preconditions, volume and claim patches carry the resourceVersion they were decided on); a wait
// is woken by the event that ends it; and a verdict that ends the VM — done or failed — is only ever
// returned from a second, entirely live observation.
import {
  ANNOTATION_BIND_REQUESTED,
  ANNOTATION_HANDOFF,
  ANNOTATION_KEEP_VOLUMES,
  CLAIM_FINALIZER,
  ANNOTATION_ORIGINAL_RECLAIM_POLICY,
  ANNOTATION_TRANSFER_CLAIM,
  FORKLIFT_LABEL_VM_ID,
  HANDOFF_SETTLED,
  LABEL_TASK_UID,
  LABEL_VM_ID,
  vmDiskClaimName,
  vmDiskName,
} from '../../api/labels.ts';
import { TaskReason } from '../../api/conditions.ts';
import { readVMDisks } from '../../api/disks.ts';
import type { DiskStatus, ShapeStatus, TaskVM, VMImportSource, VMImportTask, VMStatus } from '../../api/types.ts';
import { readScaffoldingDisks, readScaffoldingShape } from '../../cozystack/kubevirt.ts';
import { APPLICATION_DEFINITION, BASELINE_CAPABILITIES, VM_INSTANCE_DEFINITION, carryShape, guestFactsFrom, shapeStatus, vmInstanceCapabilities, type VMInstanceCapabilities } from '../../cozystack/platform.ts';
import { parseQuantity } from '../../cozystack/quantity.ts';
import {
  hasOutputMarkers,
  markedDiskIndex,
  markerLabels,
  renderHandoffDataVolume,
  renderTargetClaim,
  renderVMDisk,
  renderVMInstance,
  volumeFacts,
  type OutputMarkers,
} from '../../cozystack/render.ts';
import { GVRs, type GVR } from '../../runtime/gvr.ts';
import { Expectations, type ReadCounters } from '../../runtime/expectations.ts';
import { ApiError, isAlreadyExists, isConflict, type KubeObject } from '../../runtime/kube.ts';
import type { ReconcileContext } from '../../runtime/reconciler.ts';
import {
  IRREVERSIBLE_STEPS,
  claimRefMatches,
  desiredReclaimPolicy,
  forkliftOwners,
  foreignOutput,
  foreignVMInstance,
  holdsClaim,
  nextStep,
  nextVMStep,
  type DiskObservation,
  type Markers,
  type VMObservation,
} from './plan.ts';
import { DISK_DONE, RECORDED_BEFORE, Step, checkpointReached, pendingCheckpoint, pendingStep, type StepName } from './steps.ts';

export { HANDOFF_STEPS, DISK_STEPS, VM_STEPS, RECORDED_BEFORE, Step, checkpointReached, type StepName } from './steps.ts';
export { IRREVERSIBLE_STEPS, nextStep, nextVMStep, type DiskObservation, type DiskAction, type VMObservation, type VMAction } from './plan.ts';

export interface HandoffInput {
  task: VMImportTask;
  spec: TaskVM;
  vmName: string;
  status: VMStatus;
  className: string;
  /** The scaffolding KubeVirt VirtualMachine Forklift built; undefined once deleted. */
  forkliftVM: KubeObject | undefined;
  /** Claims Forklift labelled plan/migration/vmID for this VM. */
  transferClaims: KubeObject[];
  /**
   * Writes the VM's disks' checkpoints (and, for the VMInstance, its name) to the task's status and
   * resolves once the API server accepted the write. Called before a create that needs it (RECORDED_BEFORE):
   * the output is sent only after its checkpoint is recorded.
   */
  record: (disks: DiskStatus[], vmInstance?: string) => Promise<void>;
}

export interface HandoffOutcome {
  state: 'progress' | 'done' | 'failed';
  disks: DiskStatus[];
  vmInstance?: string;
  reason?: string;
  message?: string;
  requeueAfterMs?: number;
  /** The step this pass took (undefined: it waited, failed or found the VM done). */
  step?: StepName;
  /** Set by the pass that created the VMInstance: what of the source's shape it carries (status.vms[].shape). */
  shape?: ShapeStatus;
}

/**
 * What the platform's vm-instance chart takes, read live from its ApplicationDefinition each time a
 * VMInstance is made (an upgrade of the platform between two VMs changes the answer). Readable but
 * stating no schema, or not readable for want of the right (a chart without that rule), the VMInstance is
 * made as v1.6.0–v1.6.2 take it (neither firmware nor MACs): the EFI profile it then gets boots on a
 * platform with a firmware value as well. No such definition at all (every Cozystack release serves it:
 * this is no platform whose chart is known) the values are written as stated, firmware included.
 */
async function vmInstancePlatform(ctx: ReconcileContext): Promise<VMInstanceCapabilities> {
  const asV162 = "the VMInstance is made as Cozystack v1.6.2's chart takes it (no firmware value, no MACs)";
  try {
    const def = await ctx.client.get<KubeObject>(APPLICATION_DEFINITION, undefined, VM_INSTANCE_DEFINITION);
    if (!def) {
      ctx.log.warn(`ApplicationDefinition ${VM_INSTANCE_DEFINITION} not found: the VMInstance's values are written as stated (firmware included)`);
      return AS_STATED;
    }
    const caps = vmInstanceCapabilities(def);
    if (!caps) ctx.log.warn(`ApplicationDefinition ${VM_INSTANCE_DEFINITION} states no values schema: ${asV162}`);
    return caps ?? BASELINE_CAPABILITIES;
  } catch (e) {
    if (!(e instanceof ApiError) || e.code !== 403) throw e;
    ctx.log.warn({ err: e.message }, `ApplicationDefinition ${VM_INSTANCE_DEFINITION} not readable: ${asV162}`);
    return BASELINE_CAPABILITIES;
  }
}

/** A platform without a vm-instance ApplicationDefinition: firmware written as stated; no MAC (no chart has one). */
const AS_STATED: VMInstanceCapabilities = { firmware: true, macAddress: false };

/**
 * After a step whose write no watch reports: look again almost at once. That is the VMDisk's and the
 * VMInstance's creation where Cozystack's aggregated API is served without watch (discovery leaves the
 * kind uncached); where it serves watch, their creation wakes the task like any watched write.
 */
export const AFTER_STEP_REQUEUE_MS = 20;
/**
 * Steps whose write changes an object the task watches (a marked volume, a claim or DataVolume of the
 * task or of its Plan, the Plan's VirtualMachine, and VMDisk/VMInstance where they are watched): that
 * watch event wakes the next pass, so the requeue is only a safety net, and the pass it would cost is
 * superseded by the event's.
 */
const OUTPUT_OF_STEP: Partial<Record<StepName, GVR>> = { [Step.CreateVMDisk]: GVRs.VMDisk, [Step.CreateVMInstance]: GVRs.VMInstance };
function afterStepRequeueMs(ctx: ReconcileContext, step: StepName): number {
  const output = OUTPUT_OF_STEP[step];
  return output && !ctx.cache(output) ? AFTER_STEP_REQUEUE_MS : WAIT_REQUEUE_MS;
}
/**
 * While the PV controller, CDI or the garbage collector acts: a safety-net poll only. Every wait ends with
 * a write to an object the task watches (the volume's binding, the claim's adoption or binding, a
 * DataVolume's deletion), and that event wakes the next pass — a pass that also drops this timer. Polling
 * at 250 ms made hundreds of waiting handoffs saturate the API server in the scale benchmark; at 2 s the
 * polls of the 800-task run were still most of the controller's reconciles.
 */
export const WAIT_REQUEUE_MS = 5_000;

/**
 * While a VMDisk's or the VMInstance's Helm release deploys and the aggregated API is served without watch:
 * nothing this controller watches reports it, so look again at this pace — a release takes seconds to
 * minutes. Where both kinds are watched, their status change wakes the task and WAIT_REQUEUE_MS applies.
 */
export const RELEASE_WAIT_REQUEUE_MS = 2_000;
function releaseWaitRequeueMs(ctx: ReconcileContext): number {
  return ctx.cache(GVRs.VMDisk) && ctx.cache(GVRs.VMInstance) ? WAIT_REQUEUE_MS : RELEASE_WAIT_REQUEUE_MS;
}

/**
 * Test seam: called right after each step's API write, before the caller could persist anything. The
 * crash-safety tests crash here: in-process by throwing, and the real controller process through a
 * module they preload (test/e2e/kill-after-step.ts) that SIGKILLs it. A test that must act between two
 * steps (a tenant's delete of what a step just made) returns a promise: the handoff goes on once it settles.
 */
export const handoffHooks: { afterStep?: (step: StepName, diskIndex: number | undefined) => void | Promise<void> } = {};

async function afterStep(step: StepName, diskIndex: number | undefined): Promise<void> {
  await handoffHooks.afterStep?.(step, diskIndex);
}

/**
 * Writes a checkpoint back after the create it announced answered an error. Tried a few times: a
 * checkpoint left advanced over an output that was never made reads, on the next pass, as an output a
 * tenant deleted (OutputDeleted), and one failed status write (a 500 or a dropped connection) must not
 * end a VM that way. Still failing, it gives up quietly: the create's own error is the one retried.
 */
const PUT_BACK_ATTEMPTS = 3;
async function putBack(write: () => Promise<void>): Promise<void> {
  for (let i = 0; i < PUT_BACK_ATTEMPTS; i++) {
    try {
      await write();
      return;
    } catch {
      // retried below; the create's error is rethrown by the caller
    }
  }
}

/** True for an API refusal of an object's content or name: retrying the same object cannot help. */
function isRefusal(e: unknown): e is ApiError {
  return e instanceof ApiError && (e.code === 400 || e.code === 422);
}

interface DiskPlan {
  index: number;
  vmDisk: string;
  claimName: string;
  transferClaimName?: string;
  /** The PV recorded (labelled) as this disk, from the label query. */
  recorded?: KubeObject;
  previous?: DiskStatus;
}

function parseTransferAnnotation(v: string | undefined): string | undefined {
  if (!v) return undefined;
  const i = v.indexOf('/');
  return i < 0 ? v : v.slice(i + 1);
}

/** Which disks this VM has and what is known of each, from the scaffolding VM, the PVs and status. */
function planDisks(input: HandoffInput, recordedPVs: KubeObject[]): DiskPlan[] {
  const scaffold = input.forkliftVM ? readScaffoldingDisks(input.forkliftVM) : [];
  const byIndex = new Map<number, KubeObject>();
  for (const pv of recordedPVs) {
    const i = markedDiskIndex(pv);
    if (i !== undefined) byIndex.set(i, pv);
  }
  const prev = new Map(readVMDisks(input.status).evidence.map((d) => [d.index, d]));
  // The scaffolding VM is the source order while it exists; after it is gone, the recorded volumes
  // and the status carry the disk list.
  const count = scaffold.length || Math.max(0, ...[...byIndex.keys()].map((i) => i + 1), ...[...prev.keys()].map((i) => i + 1));
  const out: DiskPlan[] = [];
  for (let index = 0; index < count; index++) {
    const vmDisk = vmDiskName(input.vmName, index);
    const recorded = byIndex.get(index);
    out.push({
      index,
      vmDisk,
      claimName: vmDiskClaimName(vmDisk),
      transferClaimName:
        scaffold[index]?.claimName ?? prev.get(index)?.transferClaim ?? parseTransferAnnotation(recorded?.metadata?.annotations?.[ANNOTATION_TRANSFER_CLAIM]),
      recorded,
      previous: prev.get(index),
    });
  }
  return out;
}

/** What one Handoff object remembers between passes; a new object (a restart) starts with none of it. */
interface HandoffState {
  /** Its writes of handoff objects, so that the caches are never read behind them (keys name the object). */
  ex: Expectations;
  known: KnownVMDisks;
}

/** How one handoff pass reads: from the caches (guarded by the expectations) or, for verdicts, all live. */
interface Reader {
  live: boolean;
  st: HandoffState;
  /** True where a watch feeds a cache of the kind. */
  watched(gvr: GVR): boolean;
  counters: ReadCounters;
  /** Any object: absent from a label-filtered cache, the API server is asked (it may lack the labels). */
  get(gvr: GVR, ns: string | undefined, name: string | undefined): Promise<KubeObject | undefined>;
  /**
   * An output of this handoff (target claim, its DataVolume, VMDisk, VMInstance), read where a foreign
   * object of that name needs no telling apart: ours carry the task's labels from their creation, so
   * absence from the cache filtered on them is believed. Without that, every wait asked the API server
   * for outputs not made yet and answered 404 — the top requests of the 800-task benchmark once the
   * claim and DataVolume caches were split per selector. What can go wrong stays harmless: a create over
   * an object the cache missed meets AlreadyExists, which makes the next read live (expectations.ts), and
   * a verdict is confirmed by a live pass. Before the first write the foreign check reads with get().
   */
  own(gvr: GVR, ns: string | undefined, name: string | undefined): Promise<KubeObject | undefined>;
}

/**
 * A reader from the caches (`live` false), from the API server (`live` true), or — `liveKinds` — from
 * the API server for those kinds only: a cached pass's view with what a step's precondition names read
 * again (STEP_PRECONDITION_KINDS).
 */
function reader(ctx: ReconcileContext, st: HandoffState, live: boolean, liveKinds?: ReadonlySet<GVR>): Reader {
  const counters: ReadCounters = { cache: 0, live: 0 };
  const isLive = (gvr: GVR): boolean => live || !!liveKinds?.has(gvr);
  return {
    live,
    st,
    watched: (gvr) => !!ctx.cache(gvr),
    counters,
    get: (gvr, ns, name) => st.ex.get(ctx, gvr, ns, name, { live: isLive(gvr), counters }),
    own: (gvr, ns, name) => st.ex.get(ctx, gvr, ns, name, { live: isLive(gvr), counters, trustAbsence: true }),
  };
}

/**
 * The kinds a disk step's precondition names (plan.ts, IRREVERSIBLE_STEPS), read again from the API
 * server before the step is taken; the rest of the observation stands as the cached pass read it. Every
 * kind of each: a target claim and the transfer claim are both claims, and so on. Settling rests on the
 * whole observation, and is not here: it is observed again entirely live. Every read saved is a turn in
 * the client's rate limit that every other VM of a campaign waits behind.
 */
const STEP_PRECONDITION_KINDS: Partial<Record<StepName, ReadonlySet<GVR>>> = {
  // The volume ours and Retain; the DataVolumes named as, or owning, the transfer claim.
  [Step.DeleteTransferDataVolume]: new Set([GVRs.PersistentVolume, GVRs.PersistentVolumeClaim, GVRs.DataVolume]),
  // The volume ours and Retain; the target claim pre-bound to it.
  [Step.DeleteTransferClaim]: new Set([GVRs.PersistentVolume, GVRs.PersistentVolumeClaim]),
  // The claim exists, not being deleted.
  [Step.CreateDataVolume]: new Set([GVRs.PersistentVolumeClaim, GVRs.DataVolume]),
  // The claim and its DataVolume exist, neither being deleted.
  [Step.CreateVMDisk]: new Set([GVRs.PersistentVolumeClaim, GVRs.DataVolume, GVRs.VMDisk]),
};

/**
 * An entry is dropped when its disk settles or its VM ends; one whose task was deleted mid-handoff would
 * stay forever, so entries older than this go too (a later pass then simply reads the VMDisk again).
 */
export const KNOWN_VMDISK_TTL_MS = 10 * 60_000;

class KnownVMDisks {
  private readonly m = new Map<string, { obj: KubeObject; at: number }>();
  private nextSweep = 0;
  get(k: string): KubeObject | undefined {
    return this.m.get(k)?.obj;
  }
  set(k: string, obj: KubeObject): void {
    const now = Date.now();
    if (now >= this.nextSweep) {
      for (const [key, e] of this.m) if (now - e.at > KNOWN_VMDISK_TTL_MS) this.m.delete(key);
      this.nextSweep = now + KNOWN_VMDISK_TTL_MS;
    }
    this.m.set(k, { obj, at: now });
  }
  delete(k: string): void {
    this.m.delete(k);
  }
  get size(): number {
    return this.m.size;
  }
}

const vmDiskKey = (ns: string, name: string): string => `${ns}/${name}`;
/** `read` if it is the object `known` was (by UID), else undefined. */
const sameUID = (read: KubeObject | undefined, known: KubeObject | undefined): KubeObject | undefined => (read && read.metadata?.uid === known?.metadata?.uid ? read : undefined);

/**
 * The disk's outputs. The VMDisk is read only when a decision can depend on it (from the cache where
 * the aggregated API serves watch, from the API server where it does not: see AFTER_STEP_REQUEUE_MS): before the first write (a foreign VMDisk fails the VM untouched), once the
 * claim is bound and its DataVolume exists (steps 9 and 10), and on a live pass. A foreign VMDisk made in
 * between is met by our create's AlreadyExists, which the next (live) read turns into the verdict.
 */
async function observeOutputs(rd: Reader, ns: string, d: DiskPlan, markers: Markers, o: { vmDisk?: boolean; foreignCheck?: boolean } = {}): Promise<Pick<DiskObservation, 'claim' | 'dataVolume' | 'vmDiskObject'>> {
  const read = o.foreignCheck ? rd.get : rd.own;
  const readVMDisk = async (): Promise<KubeObject | undefined> => {
    // Only where no watch reports VMDisks: a watched VMDisk's deletion shows in its cache.
    const known = rd.live || rd.watched(GVRs.VMDisk) ? undefined : rd.st.known.get(vmDiskKey(ns, d.vmDisk));
    const obj = known ?? (await read(GVRs.VMDisk, ns, d.vmDisk));
    if (obj && !known && hasOutputMarkers(obj, markers)) rd.st.known.set(vmDiskKey(ns, d.vmDisk), obj);
    return obj;
  };
  // Reads that depend on none of the others go out together: on a live pass each is a round trip to the
  // API server, and the handoff's latency is the sum of its sequential round trips.
  const vmDiskAnyway = o.vmDisk || rd.live;
  const [claim, dataVolume, early] = await Promise.all([
    read(GVRs.PersistentVolumeClaim, ns, d.claimName),
    read(GVRs.DataVolume, ns, d.claimName),
    vmDiskAnyway ? readVMDisk() : undefined,
  ]);
  const needVMDisk = !vmDiskAnyway && !!dataVolume && (claim?.status as { phase?: string } | undefined)?.phase === 'Bound';
  const vmDiskObject = vmDiskAnyway ? early : needVMDisk ? await readVMDisk() : undefined;
  return { claim, dataVolume, vmDiskObject };
}


/** Reads everything one disk's decision depends on. */
async function observeDisk(rd: Reader, input: HandoffInput, d: DiskPlan): Promise<DiskObservation> {
  const ns = input.task.metadata.namespace!;
  // Forklift's transfer objects, once a recorded step proves them gone, are not read again on cached
  // passes: nothing recreates them (Forklift is done, and CDI recreates a claim only for a DataVolume that
  // still exists), and the filtered caches cannot answer their absence, so each pass asked the API server
  // and got 404 — most of the 800-task benchmark's requests. The proofs are the recipe's own order
  // (plan.ts): no step past DeleteTransferDataVolume is decided while a transfer DataVolume exists; and
  // once DeleteTransferClaim was taken (a UID-preconditioned delete) the claim is going or gone, while
  // the next step, RebindVolume, waits for the volume to leave Bound, which the PV controller does only
  // once that claim is gone. A checkpoint lost to a crash only makes a pass read more; a live pass
  // (settling, every verdict) reads them all.
  const at = d.previous?.handoff;
  // A settled disk's, not even on a live pass: settling was decided on a live observation that found them
  // gone, and a settled disk's decision (diskDone, deletedOutput) never reads them again. The VM's live
  // passes (its VMInstance, the claims' release, each verdict) read two 404s a disk less.
  const settled = at === DISK_DONE || d.recorded?.metadata?.annotations?.[ANNOTATION_HANDOFF] === HANDOFF_SETTLED;
  const transferClaimGone = settled || (!rd.live && checkpointReached(at, Step.DeleteTransferClaim));
  const transferDataVolumesGone = settled || (!rd.live && checkpointReached(at, Step.OrphanTransferClaim));
  const knownVolumeName = d.recorded?.metadata?.name ?? d.previous?.volumeName;
  const vmDiskCreated = checkpointReached(at, Step.CreateVMDisk) || pendingStep(at) === Step.CreateVMDisk;
  // Everything whose name is known before any read is read at once (a live pass — settling, verdicts —
  // then costs one round trip to the API server instead of five); only a volume named by the transfer
  // claim alone, and DataVolumes named only by its owners, wait for the claim.
  const [transferClaim, knownVolume, namedDataVolume, outputs] = await Promise.all([
    transferClaimGone ? undefined : rd.get(GVRs.PersistentVolumeClaim, ns, d.transferClaimName),
    knownVolumeName ? rd.get(GVRs.PersistentVolume, undefined, knownVolumeName) : undefined,
    transferDataVolumesGone ? undefined : rd.get(GVRs.DataVolume, ns, d.transferClaimName),
    observeOutputs(rd, ns, d, { taskUid: input.task.metadata.uid!, vmId: input.spec.id }, { vmDisk: vmDiskCreated }),
  ]);
  const volumeName = knownVolumeName ?? ((transferClaim?.spec as { volumeName?: string } | undefined)?.volumeName || undefined);
  const volume = knownVolumeName ? knownVolume : await rd.get(GVRs.PersistentVolume, undefined, volumeName);

  // DataVolumes that own the transfer claim, or are named as it and belong to this source VM.
  const dvNames = new Set<string>((transferClaim?.metadata?.ownerReferences ?? []).filter((r) => r.kind === 'DataVolume').map((r) => r.name));
  if (d.transferClaimName) dvNames.add(d.transferClaimName);
  const ownerUids = new Set((transferClaim?.metadata?.ownerReferences ?? []).map((r) => r.uid));
  const names = transferDataVolumesGone ? [] : [...dvNames];
  const dvs = await Promise.all(names.map((name) => (name === d.transferClaimName ? namedDataVolume : rd.get(GVRs.DataVolume, ns, name))));
  const transferDataVolumes = dvs.filter(
    (dv): dv is KubeObject => !!dv && (ownerUids.has(dv.metadata?.uid ?? '') || dv.metadata?.labels?.[FORKLIFT_LABEL_VM_ID] === input.spec.id),
  );
  return {
    checkpoint: at,
    index: d.index,
    vmDisk: d.vmDisk,
    claimName: d.claimName,
    namespace: ns,
    transferClaimName: d.transferClaimName,
    transferClaim,
    volumeName,
    volume,
    transferDataVolumes,
    ...outputs,
  };
}

function evidence(d: DiskPlan, o: DiskObservation | undefined, checkpoint: string | undefined): DiskStatus {
  const pv = o?.volume ?? d.recorded;
  const capacity = (pv?.spec as { capacity?: { storage?: string } } | undefined)?.capacity?.storage;
  const out: DiskStatus = { index: d.index, vmDisk: d.vmDisk };
  const volumeName = pv?.metadata?.name ?? o?.volumeName ?? d.previous?.volumeName;
  if (volumeName) out.volumeName = volumeName;
  const transferClaim = d.transferClaimName ?? d.previous?.transferClaim;
  if (transferClaim) out.transferClaim = transferClaim;
  const bytes = parseQuantity(capacity) ?? d.previous?.capacityBytes;
  if (bytes !== undefined) out.capacityBytes = bytes;
  const handoff = checkpoint ?? d.previous?.handoff;
  if (handoff) out.handoff = handoff;
  return out;
}

/** A StorageClass read started ahead of the step that needs it. */
interface StorageClassRead {
  name: string | undefined;
  object: Promise<KubeObject | undefined>;
}

function readStorageClass(ctx: ReconcileContext, name: string | undefined): StorageClassRead {
  const object = name ? ctx.client.get<KubeObject>(GVRs.StorageClass, undefined, name) : Promise.resolve(undefined);
  // Awaited only if the step is still settling after the live observation.
  object.catch(() => undefined);
  return { name, object };
}

/** The class whose policy a settled volume takes: its own, or the task's resolved class when it names none. */
function settleClassName(o: DiskObservation, taskClassName: string): string | undefined {
  return (o.volume?.spec as { storageClassName?: string } | undefined)?.storageClassName || taskClassName || undefined;
}

/** Creates an output; AlreadyExists is fine (the next observation decides), a refusal is terminal. */
async function createOutput(ctx: ReconcileContext, st: HandoffState, gvr: GVR, obj: KubeObject): Promise<{ refused?: string }> {
  const ex = st.ex;
  try {
    const created = await ctx.client.create(gvr, obj);
    // Read from the API server until the cache shows this very version. Not answered from the create's
    // response while the cache lacks it: an output deleted right after its create never shows in the cache,
    // and the answer would make it look alive until the expectation lapsed — a VMDisk created over a
    // DataVolume already gone, whose chart then makes an empty one.
    ex.wrote(gvr, created);
    if (gvr === GVRs.VMDisk) st.known.set(vmDiskKey(created.metadata?.namespace ?? '', created.metadata?.name ?? ''), created);
    return {};
  } catch (e) {
    if (isAlreadyExists(e)) {
      // Ours from a pass the cache has not caught up with, or someone else's: the next read asks the server.
      ex.exists(gvr, obj.metadata?.namespace, obj.metadata?.name ?? '');
      return {};
    }
    if (isRefusal(e)) return { refused: `the API server refused ${gvr.kind} ${obj.metadata?.name}: ${e.message}` };
    throw e;
  }
}

/**
 * Runs one disk step; returns a refusal message when the API refused an output, and `conflicted` when the
 * API server answered 409 Conflict: the write did not happen, so the step is not taken and its checkpoint
 * must not be recorded. (A create answered Conflict, not AlreadyExists, created nothing: recording
 * create-vmdisk for it would make the next pass read the missing VMDisk as deleted by someone, OutputDeleted.)
 */
async function executeDiskStep(
  ctx: ReconcileContext,
  st: HandoffState,
  markers: OutputMarkers,
  o: DiskObservation,
  step: StepName,
  taskClassName: string,
  classRead?: StorageClassRead,
): Promise<{ refused?: string; conflicted?: boolean }> {
  const ns = o.namespace;
  const c = ctx.client;
  const ex = st.ex;
  const pv = o.volume!;
  const pvName = pv.metadata!.name!;
  const pvSpec = (pv.spec ?? {}) as { persistentVolumeReclaimPolicy?: string; storageClassName?: string };
  // The object the step writes, for the expectation a conflict leaves.
  let target: [GVR, string | undefined, string] = [GVRs.PersistentVolume, undefined, pvName];
  try {
    switch (step) {
      case Step.RetainVolume: {
        const ann = pv.metadata?.annotations ?? {};
        const written = await c.patch<KubeObject>(GVRs.PersistentVolume, undefined, pvName, {
          metadata: {
            labels: markerLabels(markers, o.index),
            annotations: {
              // The policy before the handoff, written once: a repeat must not record our own Retain.
              [ANNOTATION_ORIGINAL_RECLAIM_POLICY]: ann[ANNOTATION_ORIGINAL_RECLAIM_POLICY] ?? pvSpec.persistentVolumeReclaimPolicy ?? 'Delete',
              ...(o.transferClaimName ? { [ANNOTATION_TRANSFER_CLAIM]: `${ns}/${o.transferClaimName}` } : {}),
              [ANNOTATION_HANDOFF]: null,
            },
          },
          spec: { persistentVolumeReclaimPolicy: 'Retain' },
        });
        ex.wrote(GVRs.PersistentVolume, written);
        return {};
      }
      case Step.DeleteTransferDataVolume: {
        const dv = o.transferDataVolumes.find((d) => !d.metadata?.deletionTimestamp)!;
        target = [GVRs.DataVolume, ns, dv.metadata!.name!];
        // Orphan: the garbage collector strips the DataVolume's ownerReference from the claim instead of
        // deleting the claim along with it.
        await c.delete(GVRs.DataVolume, ns, dv.metadata!.name!, { propagationPolicy: 'Orphan', uid: dv.metadata?.uid });
        ex.deleted(GVRs.DataVolume, ns, dv.metadata!.name!, dv.metadata?.uid);
        return {};
      }
      case Step.OrphanTransferClaim: {
        const tc = o.transferClaim!;
        target = [GVRs.PersistentVolumeClaim, ns, tc.metadata!.name!];
        const drop = new Set(forkliftOwners(tc).map((r) => r.uid));
        const written = await c.patch<KubeObject>(GVRs.PersistentVolumeClaim, ns, tc.metadata!.name!, {
          metadata: { resourceVersion: tc.metadata?.resourceVersion, ownerReferences: (tc.metadata?.ownerReferences ?? []).filter((r) => !drop.has(r.uid)) },
        });
        ex.wrote(GVRs.PersistentVolumeClaim, written, { over: tc.metadata?.resourceVersion });
        return {};
      }
      case Step.CreateClaim: {
        target = [GVRs.PersistentVolumeClaim, ns, o.claimName];
        const facts = volumeFacts(pv);
        if (!facts) return { refused: `PersistentVolume ${pvName} states no capacity` };
        const claim = renderTargetClaim({ namespace: ns, diskName: o.vmDisk, diskIndex: o.index, volume: facts, markers });
        // Held by the handoff until the VM is complete (CLAIM_FINALIZER): a claim deleted meanwhile keeps
        // its volume Bound until the handoff has put the volume back on Retain.
        claim.metadata = { ...claim.metadata, finalizers: [CLAIM_FINALIZER] };
        return await createOutput(ctx, st, GVRs.PersistentVolumeClaim, claim);
      }
      case Step.DeleteTransferClaim: {
        const tc = o.transferClaim!;
        target = [GVRs.PersistentVolumeClaim, ns, tc.metadata!.name!];
        await c.delete(GVRs.PersistentVolumeClaim, ns, tc.metadata!.name!, { uid: tc.metadata?.uid });
        ex.deleted(GVRs.PersistentVolumeClaim, ns, tc.metadata!.name!, tc.metadata?.uid);
        return {};
      }
      case Step.RebindVolume: {
        const claim = o.claim!;
        const written = await c.patch<KubeObject>(GVRs.PersistentVolume, undefined, pvName, {
          metadata: { resourceVersion: pv.metadata?.resourceVersion },
          spec: {
            claimRef: {
              kind: 'PersistentVolumeClaim',
              apiVersion: 'v1',
              namespace: ns,
              name: claim.metadata!.name,
              uid: claim.metadata!.uid,
              // A merge patch merges into the old reference: clear what belonged to the old claim.
              resourceVersion: null,
              fieldPath: null,
            },
          },
        });
        ex.wrote(GVRs.PersistentVolume, written, { over: pv.metadata?.resourceVersion });
        return {};
      }
      case Step.RequestBind: {
        target = [GVRs.PersistentVolumeClaim, ns, o.claimName];
        const written = await c.patch<KubeObject>(GVRs.PersistentVolumeClaim, ns, o.claimName, { metadata: { annotations: { [ANNOTATION_BIND_REQUESTED]: ctx.now().toISOString() } } });
        ex.wrote(GVRs.PersistentVolumeClaim, written);
        return {};
      }
      case Step.CreateDataVolume: {
        target = [GVRs.DataVolume, ns, o.claimName];
        const facts = volumeFacts(pv)!;
        return await createOutput(ctx, st, GVRs.DataVolume, renderHandoffDataVolume({ namespace: ns, diskName: o.vmDisk, diskIndex: o.index, volume: facts, markers }));
      }
      case Step.CreateVMDisk: {
        target = [GVRs.VMDisk, ns, o.vmDisk];
        const facts = volumeFacts(pv)!;
        return await createOutput(ctx, st, GVRs.VMDisk, renderVMDisk({ namespace: ns, diskName: o.vmDisk, diskIndex: o.index, volume: facts, markers }));
      }
      case Step.SettleVolume: {
        // The volume's own class decides its reclaim policy; the task's resolved class when the PV names
        // none. Read live, once per disk: it is needed here only (read beside the settle's live
        // observation when that named the same class).
        const className = settleClassName(o, taskClassName);
        const storageClass = await (classRead && classRead.name === className ? classRead : readStorageClass(ctx, className)).object;
        const written = await c.patch<KubeObject>(GVRs.PersistentVolume, undefined, pvName, {
          metadata: { resourceVersion: pv.metadata?.resourceVersion, annotations: { [ANNOTATION_HANDOFF]: HANDOFF_SETTLED } },
          spec: { persistentVolumeReclaimPolicy: desiredReclaimPolicy(storageClass) },
        });
        ex.wrote(GVRs.PersistentVolume, written, { over: pv.metadata?.resourceVersion });
        st.known.delete(vmDiskKey(ns, o.vmDisk));
        return {};
      }
      default:
        throw new Error(`not a disk step: ${step}`);
    }
  } catch (e) {
    // Someone wrote in between (optimistic concurrency, delete preconditions): observe again, from the
    // server for this object — the cache the step was decided on is behind it.
    if (isConflict(e)) {
      ex.stale(...target);
      return { conflicted: true };
    }
    throw e;
  }
}

/** Dependencies of a Handoff beyond the reconcile context (none yet: the reconcile context carries the client and caches). */
export type HandoffOptions = Record<string, never>;

/**
 * The handoff of one controller: the checkpoint machine with what it remembers between passes (its own
 * writes, so the caches are never read behind them; the VMDisks it made). An in-process restart is a new
 * object, which remembers nothing: every pass stands on the task's status and the objects themselves.
 */
export class Handoff {
  private readonly st: HandoffState = { ex: new Expectations(), known: new KnownVMDisks() };

  /** Sizes of what it remembers (the soak test checks they return to their baseline). */
  memory(): Record<string, number> {
    return { knownVMDisks: this.st.known.size, handoffExpectations: this.st.ex.size() };
  }

  /**
   * One step of the handoff for one VM. Never throws for a user-facing failure (state `failed` with a
   * reason); throws only for transient API errors (the caller retries with backoff).
   */
  async reconcile(ctx: ReconcileContext, input: HandoffInput): Promise<HandoffOutcome> {
    const st = this.st;
    const first = await handoffPass(ctx, st, input, reader(ctx, st, false));
    // A pass that took a step or waits returns as it is. A verdict — every disk and the VM done, or the VM
    // failed — reached without a write is confirmed on a live observation before it is returned; the one
    // the last step reached stands on the live observation that step was decided on, and on its writes'
    // preconditions (handoffPass).
    if (first.state === 'progress') return first;
    const verdict = first.state === 'done' && first.step === Step.ReleaseClaims ? first : await handoffPass(ctx, st, input, reader(ctx, st, true));
    if (verdict.state !== 'progress') for (const d of verdict.disks) st.known.delete(vmDiskKey(input.task.metadata.namespace ?? '', d.vmDisk));
    if (verdict.state !== 'failed') return verdict;
    // A failed VM's data waits for the tenant: every volume this VM's handoff marked goes back on Retain
    // and into the task's custody before the failure is reported (after which the task never looks again).
    // A release the chart failed leaves every output in place (the VMInstance under the VM's name among
    // them): the scaffolding VM is kept beside them, as it was built, for the tenant who fixes the values.
    const kept = await keepInCustody(ctx, st, input, { removeScaffolding: verdict.reason !== TaskReason.ReleaseFailed });
    return { ...verdict, message: `${verdict.message ?? 'the handoff failed'}${custodyMessage(kept)}` };
  }
}

/**
 * One step of the handoff for one VM with a Handoff of its own (nothing remembered from an earlier call:
 * the caller's status and the objects carry everything).
 */
export async function reconcileHandoff(ctx: ReconcileContext, input: HandoffInput): Promise<HandoffOutcome> {
  return await new Handoff().reconcile(ctx, input);
}

/** A volume kept for a failed VM: its name, disk and size. */
export interface KeptVolume {
  name: string;
  disk: number | undefined;
  capacity: string | undefined;
}

/**
 * Puts every volume marked as this VM's disk back on reclaim policy Retain (read live, patched on the
 * resourceVersion read), removes any output of ours that would be filled again with nothing (below), then
 * takes the handoff's finalizer off its target claims: a claim deleted meanwhile can go only once its
 * volume can no longer be deleted with it. Idempotent; a conflict throws (the caller retries the pass).
 */
async function keepInCustody(ctx: ReconcileContext, st: HandoffState, input: HandoffInput, o: { removeScaffolding: boolean }): Promise<KeptVolume[]> {
  const ns = input.task.metadata.namespace!;
  const uid = input.task.metadata.uid!;
  const pvs = (await ctx.client.listAll<KubeObject>(GVRs.PersistentVolume, undefined, { labelSelector: `${LABEL_TASK_UID}=${uid},${LABEL_VM_ID}=${input.spec.id}` })).items;
  const kept: KeptVolume[] = [];
  for (const pv of pvs) {
    const name = pv.metadata!.name!;
    if ((pv.spec as { persistentVolumeReclaimPolicy?: string } | undefined)?.persistentVolumeReclaimPolicy !== 'Retain') {
      const written = await ctx.client.patch<KubeObject>(GVRs.PersistentVolume, undefined, name, {
        metadata: { resourceVersion: pv.metadata?.resourceVersion, annotations: { [ANNOTATION_HANDOFF]: null } },
        spec: { persistentVolumeReclaimPolicy: 'Retain' },
      });
      st.ex.wrote(GVRs.PersistentVolume, written, { over: pv.metadata?.resourceVersion });
    }
    kept.push({ name, disk: markedDiskIndex(pv), capacity: (pv.spec as { capacity?: { storage?: string } } | undefined)?.capacity?.storage });
  }
  const markers: Markers = { taskUid: uid, vmId: input.spec.id };
  const diskNames = new Set([...readVMDisks(input.status).evidence.map((d) => d.vmDisk), ...kept.map((k) => (k.disk === undefined ? '' : vmDiskName(input.vmName, k.disk)))]);
  for (const disk of diskNames) {
    if (!disk) continue;
    const name = vmDiskClaimName(disk);
    const [claim, dv, vmDisk] = await Promise.all([
      ctx.client.get<KubeObject>(GVRs.PersistentVolumeClaim, ns, name),
      ctx.client.get<KubeObject>(GVRs.DataVolume, ns, name),
      ctx.client.get<KubeObject>(GVRs.VMDisk, ns, disk),
    ]);
    // An output of ours left over a claim or DataVolume that is gone would be filled again with nothing:
    // CDI re-creates a missing claim for its DataVolume (an empty volume), and the VMDisk's chart re-creates
    // its missing DataVolume blank. They go too; the data stays on its volume, on Retain.
    const claimGone = !claim || !!claim.metadata?.deletionTimestamp;
    const dvGone = !dv || !!dv.metadata?.deletionTimestamp;
    if ((claimGone || dvGone) && vmDisk && !vmDisk.metadata?.deletionTimestamp && hasOutputMarkers(vmDisk, markers)) {
      await ctx.client.delete(GVRs.VMDisk, ns, disk, { uid: vmDisk.metadata?.uid, propagationPolicy: 'Background' });
      st.ex.deleted(GVRs.VMDisk, ns, disk, vmDisk.metadata?.uid);
    }
    if (claimGone && dv && !dvGone && hasOutputMarkers(dv, markers)) {
      await ctx.client.delete(GVRs.DataVolume, ns, name, { uid: dv.metadata?.uid, propagationPolicy: 'Background' });
      st.ex.deleted(GVRs.DataVolume, ns, name, dv.metadata?.uid);
    }
    if (!claim || !holdsClaim(claim) || claim.metadata?.labels?.[LABEL_TASK_UID] !== uid) continue;
    const written = await ctx.client.patch<KubeObject>(GVRs.PersistentVolumeClaim, ns, name, {
      metadata: { resourceVersion: claim.metadata?.resourceVersion, finalizers: (claim.metadata?.finalizers ?? []).filter((f) => f !== CLAIM_FINALIZER) },
    });
    st.ex.wrote(GVRs.PersistentVolumeClaim, written, { over: claim.metadata?.resourceVersion });
  }
  // The VirtualMachine Forklift built carries the source VM's name: while it stays, a new task importing
  // the same VM into this namespace fails (virtualmachines.kubevirt.io "<name>" already exists). Once every
  // one of its disks is on a volume of ours on Retain, it holds nothing the data needs: it goes (claims it
  // still owns go with it, their volumes Released and kept). Before that — a failure ahead of the first
  // step — it stays: its claims' volumes may still be on Delete.
  const vm = input.forkliftVM;
  const scaffoldDisks = vm ? readScaffoldingDisks(vm).length : 0;
  if (o.removeScaffolding && vm && !vm.metadata?.deletionTimestamp && scaffoldDisks > 0 && kept.length >= scaffoldDisks) {
    await ctx.client.delete(GVRs.VirtualMachine, ns, vm.metadata!.name!, { uid: vm.metadata?.uid, propagationPolicy: 'Background' }).catch((e: unknown) => {
      if (!isConflict(e)) throw e;
    });
  }
  return kept.sort((a, b) => (a.disk ?? 0) - (b.disk ?? 0));
}

/** The sentence a failure message ends with when volumes are kept: what the task now holds and how it lets go. */
export function custodyMessage(kept: readonly KeptVolume[]): string {
  if (!kept.length) return '';
  const list = kept.map((k) => `${k.name}${k.disk !== undefined ? ` (disk ${k.disk}${k.capacity ? `, ${k.capacity}` : ''})` : ''}`).join(', ');
  const one = kept.length === 1;
  return `. PersistentVolume${one ? '' : 's'} ${list} ${one ? 'is' : 'are'} kept with reclaim policy Retain, held by this task: deleting the task releases ${one ? 'it' : 'them'} under ${one ? 'its' : 'their'} storage class's reclaim policy, unless the task is annotated ${ANNOTATION_KEEP_VOLUMES}=true`;
}

async function handoffPass(ctx: ReconcileContext, st: HandoffState, input: HandoffInput, rd: Reader): Promise<HandoffOutcome> {
  const ns = input.task.metadata.namespace!;
  const markers: OutputMarkers = { taskUid: input.task.metadata.uid!, taskName: input.task.metadata.name!, vmId: input.spec.id };
  const m: Markers = markers;
  const log = ctx.log.child({ vm: input.spec.id, vmName: input.vmName });

  // The volumes marked as this VM's disks: from the cache of marked volumes, each then read through the
  // reader (never behind our own writes). None there — before the first step, or a cache not yet synced —
  // is confirmed by the API server before anything is decided on it.
  const pvLabels = { [LABEL_TASK_UID]: markers.taskUid, [LABEL_VM_ID]: markers.vmId };
  // A live pass reads the VMInstance and the scaffolding VM beside the volumes (it observes everything;
  // see below): the claims leave custody only once the scaffolding VM is seen gone or going, from the server.
  const liveVMInstance = rd.live ? rd.own(GVRs.VMInstance, ns, input.vmName) : undefined;
  const scaffold = input.forkliftVM;
  const liveScaffold = rd.live && scaffold ? rd.get(GVRs.VirtualMachine, ns, scaffold.metadata?.name ?? '') : undefined;
  // Awaited only further on; a pass that returns or throws before must not leave a rejection unobserved.
  liveVMInstance?.catch(() => undefined);
  liveScaffold?.catch(() => undefined);
  const pvCache = rd.live ? undefined : ctx.cache(GVRs.PersistentVolume);
  let recordedPVs: KubeObject[] = [];
  const cachedPVs = pvCache?.list(undefined, pvLabels) ?? [];
  // Fewer cached volumes than disks whose handoff has begun: the cache dropped some (it holds a task's
  // outputs only while it knows the task runs: task/retention.ts) — the API server answers instead.
  const begun = readVMDisks(input.status).evidence.filter((d) => d.handoff).length;
  if (cachedPVs.length && cachedPVs.length >= begun) {
    const current = await Promise.all(cachedPVs.map((pv) => rd.get(GVRs.PersistentVolume, undefined, pv.metadata?.name)));
    for (const cur of current) if (cur && markedDiskIndex(cur) !== undefined && cur.metadata?.labels?.[LABEL_TASK_UID] === markers.taskUid) recordedPVs.push(cur);
  } else {
    rd.counters.live++;
    recordedPVs = (await ctx.client.listAll<KubeObject>(GVRs.PersistentVolume, undefined, { labelSelector: `${LABEL_TASK_UID}=${markers.taskUid},${LABEL_VM_ID}=${markers.vmId}` })).items;
  }
  const disks = planDisks(input, recordedPVs);
  const failed = (reason: string, message: string, evidenceOf: DiskStatus[]): HandoffOutcome => ({ state: 'failed', disks: evidenceOf, reason, message });
  const plainEvidence = (): DiskStatus[] => disks.map((d) => evidence(d, undefined, undefined));

  if (disks.length === 0) {
    return failed(
      TaskReason.EngineReportedSuccessWithoutOutput,
      input.forkliftVM
        ? `the Forklift-built VirtualMachine ${input.forkliftVM.metadata?.name} has no disks; create a new task`
        : 'Forklift reported the VM migrated but left no VirtualMachine and no volumes; create a new task',
      [],
    );
  }

  // Before the first write: the VMInstance name and every disk's output names must be free or ours.
  // (Someone else's VMInstance fails the VM before a single disk is touched.)
  // Every name is read at once (one round trip, not one per object).
  if (recordedPVs.length === 0) {
    const [vmInstance, ...outputs] = await Promise.all([
      liveVMInstance ?? rd.get(GVRs.VMInstance, ns, input.vmName),
      ...disks.map((d) => observeOutputs(rd, ns, d, m, { vmDisk: true, foreignCheck: true })),
    ]);
    const foreignVMI = foreignVMInstance({ vmInstanceName: input.vmName, vmInstance }, m);
    if (foreignVMI) return failed(foreignVMI.reason, foreignVMI.message, plainEvidence());
    for (const [i, d] of disks.entries()) {
      const f = foreignOutput({ ...outputs[i]!, claimName: d.claimName, vmDisk: d.vmDisk }, m);
      if (f) return failed(f.reason, f.message, plainEvidence());
    }
  }

  // A live pass observes every disk in full and the VMInstance, so it reads them all at once; a cached
  // pass reads disk by disk and stops at the first that is not done.
  const liveObservations = rd.live ? Promise.all(disks.map((d) => observeDisk(rd, input, d))) : undefined;
  const observed = liveObservations ? await liveObservations : undefined;

  const out: DiskStatus[] = [];
  for (let i = 0; i < disks.length; i++) {
    const d = disks[i]!;
    // A settled disk needs one read to confirm (its claim's UID against the volume's claimRef), not the
    // whole observation: a many-disk VM would otherwise re-read every finished disk on every call.
    // A live (verdict) pass observes every disk in full: a finished VM rests on every disk's VMDisk too.
    if (!rd.live && d.recorded?.metadata?.annotations?.[ANNOTATION_HANDOFF] === HANDOFF_SETTLED) {
      const claim = await rd.own(GVRs.PersistentVolumeClaim, ns, d.claimName);
      if (claimRefMatches(d.recorded, claim) && !claim?.metadata?.deletionTimestamp) {
        out.push(evidence(d, undefined, DISK_DONE));
        continue;
      }
    }
    let o = observed?.[i] ?? (await observeDisk(rd, input, d));
    let action = nextStep(o, m);
    let settleClass: StorageClassRead | undefined;
    if (action.type === 'step' && IRREVERSIBLE_STEPS.has(action.step) && !rd.live) {
      // A step after which data cannot be brought back (plan.ts, IRREVERSIBLE_STEPS): every condition it
      // rests on is re-read from the API server, never believed from a cache or from what this process
      // created earlier, and the write carries a precondition on what that read saw. The class a settled
      // volume's policy comes from is read beside it (it decides nothing about whether to settle).
      if (action.step === Step.SettleVolume) settleClass = readStorageClass(ctx, settleClassName(o, input.className));
      const kinds = STEP_PRECONDITION_KINDS[action.step];
      const first = action.step;
      o = await observeDisk(kinds ? reader(ctx, st, false, kinds) : reader(ctx, st, true), input, d);
      action = nextStep(o, m);
      // What was read again decided another irreversible step: that one rests on what it names, read
      // live too — the whole observation, from the API server.
      if (kinds && action.type === 'step' && action.step !== first && IRREVERSIBLE_STEPS.has(action.step)) {
        if (action.step === Step.SettleVolume) settleClass = readStorageClass(ctx, settleClassName(o, input.className));
        o = await observeDisk(reader(ctx, st, true), input, d);
        action = nextStep(o, m);
      }
    }
    if (action.type === 'done') {
      out.push(evidence(d, o, DISK_DONE));
      continue;
    }
    const rest = disks.slice(i + 1).map((x) => evidence(x, undefined, undefined));
    if (action.type === 'fail') {
      if (rd.live) log.warn({ disk: d.index, reason: action.reason }, action.message);
      return failed(action.reason, action.message, [...out, evidence(d, o, undefined), ...rest]);
    }
    if (action.type === 'wait') {
      log.debug({ disk: d.index }, action.message);
      return { state: 'progress', disks: [...out, evidence(d, o, undefined), ...rest], message: action.message, requeueAfterMs: WAIT_REQUEUE_MS };
    }
    const recorded = RECORDED_BEFORE.has(action.step) && !checkpointReached(d.previous?.handoff, action.step);
    // Record before you advance: from this write on, a missing output is one made and then lost.
    if (recorded) await input.record([...out, evidence(d, o, pendingCheckpoint(action.step)), ...rest]);
    log.info({ disk: d.index, step: action.step, volume: o.volume?.metadata?.name, reads: rd.counters }, 'handoff step');
    let r: { refused?: string; conflicted?: boolean };
    try {
      r = await executeDiskStep(ctx, st, markers, o, action.step, input.className, settleClass);
    } catch (e) {
      // The create answered an error: the checkpoint goes back to where it was, so that the next pass
      // makes the output instead of reading its absence as a deletion. (A create that timed out may still
      // have been made; the next pass then finds it, AlreadyExists answers the repeat.)
      if (recorded) await putBack(() => input.record([...out, evidence(d, o, undefined), ...rest]));
      throw e;
    }
    if (r.refused) return failed(TaskReason.OutputRejected, r.refused, [...out, evidence(d, o, undefined), ...rest]);
    if (r.conflicted) {
      // Not taken: the checkpoint goes back where it was (a create answered Conflict made nothing), and the
      // disk is observed again from the server.
      if (recorded) await putBack(() => input.record([...out, evidence(d, o, undefined), ...rest]));
      log.info({ disk: d.index, step: action.step }, 'handoff step answered Conflict; observing again');
      return { state: 'progress', disks: [...out, evidence(d, o, undefined), ...rest], message: `disk ${d.index}: ${action.step} (conflict, retrying)`, requeueAfterMs: 0 };
    }
    await afterStep(action.step, d.index);
    const done = action.step === Step.SettleVolume;
    return {
      state: 'progress',
      disks: [...out, evidence(d, o, done ? DISK_DONE : action.step), ...rest],
      message: `disk ${d.index}: ${action.step}`,
      requeueAfterMs: afterStepRequeueMs(ctx, action.step),
      step: action.step,
    };
  }

  // Every disk settled: the VMInstance, then the scaffolding VM goes, then the claims leave custody.
  const vmObs: VMObservation = {
    vmInstanceName: input.vmName,
    vmInstance: await (liveVMInstance ?? rd.own(GVRs.VMInstance, ns, input.vmName)),
    vmInstanceRecorded: !!input.status.vmInstance,
    // Read live, another VirtualMachine under its name (another UID) is not this VM's scaffolding.
    scaffoldingVM: liveScaffold ? sameUID(await liveScaffold, scaffold) : scaffold,
  };
  // Once the VMInstance exists: its disks' releases and claims too. A live pass has just read every
  // VMDisk and claim, live, in this same observation; a cached pass reads them through the reader.
  if (vmObs.vmInstance) {
    vmObs.vmDisks = observed
      ? disks.map((d, i) => ({ name: d.vmDisk, object: observed[i]!.vmDiskObject }))
      : await Promise.all(disks.map(async (d) => ({ name: d.vmDisk, object: await rd.own(GVRs.VMDisk, ns, d.vmDisk) })));
    vmObs.claims = observed
      ? disks.map((d, i) => ({ name: d.claimName, object: observed[i]!.claim }))
      : await Promise.all(disks.map(async (d) => ({ name: d.claimName, object: await rd.own(GVRs.PersistentVolumeClaim, ns, d.claimName) })));
  }
  const va = nextVMStep(vmObs, m);
  // The VM's irreversible steps (a VMInstance over its disks, the claims out of custody) are decided on an
  // entirely live observation: the whole pass again, from the API server.
  if (va.type === 'step' && IRREVERSIBLE_STEPS.has(va.step) && !rd.live) return await handoffPass(ctx, st, input, reader(ctx, st, true));
  if (va.type === 'fail') return failed(va.reason, va.message, out);
  if (va.type === 'wait') {
    log.debug(va.message);
    return { state: 'progress', disks: out, vmInstance: input.vmName, message: va.message, requeueAfterMs: releaseWaitRequeueMs(ctx) };
  }
  if (va.type === 'done') return { state: 'done', disks: out, vmInstance: input.vmName };
  log.info({ step: va.step }, 'handoff step');
  let shape: ShapeStatus | undefined;
  if (va.step === Step.CreateVMInstance) {
    const scaffold = readScaffoldingShape(input.forkliftVM!);
    // virt-v2v installed virtio drivers into the guest (docs/conversion.md).
    const converted = input.task.spec.guestConversion === true;
    // The guest's OS family (for an EFI profile) as the source's inventory lists it.
    const source = await ctx.client.get<VMImportSource & KubeObject>(GVRs.VMImportSource, ns, input.task.spec.sourceRef.name);
    const carriage = carryShape(scaffold, await vmInstancePlatform(ctx), guestFactsFrom(source, input.spec.id, converted), input.spec.instanceProfile);
    shape = shapeStatus(carriage);
    const r = renderVMInstance({
      namespace: ns,
      name: input.vmName,
      vm: input.spec,
      shape: scaffold,
      diskNames: disks.map((d) => d.vmDisk),
      markers,
      converted,
      carriage,
    });
    if (!r.ok) return failed(TaskReason.Failed, r.message, out);
    // Record before you advance: from this write on, a missing VMInstance is one made and then lost.
    // The VMInstance's name is recorded by this pass's status write once the create succeeded (the outcome
    // below): from then on its absence is a deletion (nextVMStep). Recorded before the create, a create
    // that never happened — its answer an error, or the record's own write answered an error after it was
    // applied — read as a deleted VMInstance and failed a healthy VM under API faults.
    const c = await createOutput(ctx, st, GVRs.VMInstance, r.object);
    if (c.refused) return failed(TaskReason.OutputRejected, c.refused, out);
  } else if (va.step === Step.ReleaseClaims) {
    for (const { name, object } of vmObs.claims ?? []) {
      if (!object || !holdsClaim(object)) continue;
      try {
        const written = await ctx.client.patch<KubeObject>(GVRs.PersistentVolumeClaim, ns, name, {
          metadata: { resourceVersion: object.metadata?.resourceVersion, finalizers: (object.metadata?.finalizers ?? []).filter((f) => f !== CLAIM_FINALIZER) },
        });
        st.ex.wrote(GVRs.PersistentVolumeClaim, written, { over: object.metadata?.resourceVersion });
      } catch (e) {
        if (!isConflict(e)) throw e;
        st.ex.stale(GVRs.PersistentVolumeClaim, ns, name);
        return { state: 'progress', disks: out, vmInstance: input.vmName, message: `${va.step} (conflict, retrying)`, requeueAfterMs: 0 };
      }
    }
  } else {
    const vm = input.forkliftVM!;
    try {
      await ctx.client.delete(GVRs.VirtualMachine, ns, vm.metadata!.name!, { uid: vm.metadata?.uid, propagationPolicy: 'Background' });
    } catch (e) {
      if (!isConflict(e)) throw e;
    }
  }
  await afterStep(va.step, undefined);
  // The scaffolding VM's delete records nothing (its absence is the evidence a later pass reads): the
  // last step, the claims' release, is decided at once on a fresh, entirely live observation instead of a
  // task pass later (a 200-VM task's pass is seconds long, and the tenant waits on this VM's end).
  // Taken from a cached pass only, so it recurses once.
  if (va.step === Step.DeleteScaffoldingVM && !rd.live) return await handoffPass(ctx, st, input, reader(ctx, st, true));
  // The last step, decided on an entirely live observation of everything else finished and written on
  // the claims' versions: the VM is done, confirmed by the verdict's own live pass (Handoff.reconcile), and
  // its phase goes into the status write that records the step. A pass more found it done a second later.
  if (va.step === Step.ReleaseClaims) return { state: 'done', disks: out, vmInstance: input.vmName, step: va.step };
  return {
    state: 'progress',
    disks: out,
    vmInstance: input.vmName,
    message: va.step,
    requeueAfterMs: afterStepRequeueMs(ctx, va.step),
    step: va.step,
    ...(shape ? { shape } : {}),
  };
}
