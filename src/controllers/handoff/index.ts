// The copy-free handoff: the volumes Forklift/CDI filled become the tenant's VMDisks without copying a
// byte, then a Halted VMInstance is created and Forklift's scaffolding VirtualMachine deleted.
//
// A checkpoint machine. Each call observes the real world afresh (API reads), decides the ONE next step
// for the first unfinished disk (plan.ts, pure), executes it, and returns the disks' evidence for the
// caller to persist with the VM's phase in one status write. Every step is idempotent and safe to resume
// after a crash between any two steps: the first step writes the disk's identity onto the PV itself, so
// even a lost status write cannot lose which volume is disk i.
import {
  ANNOTATION_BIND_REQUESTED,
  ANNOTATION_HANDOFF,
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
import type { DiskStatus, TaskVM, VMImportTask, VMStatus } from '../../api/types.ts';
import { readScaffoldingDisks, readScaffoldingShape } from '../../cozystack/kubevirt.ts';
import { parseQuantity } from '../../cozystack/quantity.ts';
import {
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
import { ApiError, isAlreadyExists, isConflict, type KubeObject } from '../../runtime/kube.ts';
import type { ReconcileContext } from '../../runtime/reconciler.ts';
import {
  claimRefMatches,
  desiredReclaimPolicy,
  forkliftOwners,
  foreignOutput,
  foreignVMInstance,
  nextStep,
  nextVMStep,
  type DiskObservation,
  type Markers,
} from './plan.ts';
import { DISK_DONE, Step, type StepName } from './steps.ts';

export { HANDOFF_STEPS, DISK_STEPS, VM_STEPS, Step, type StepName } from './steps.ts';
export { nextStep, nextVMStep, type DiskObservation, type DiskAction, type VMObservation, type VMAction } from './plan.ts';

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
}

export interface HandoffOutcome {
  state: 'progress' | 'done' | 'failed';
  disks: DiskStatus[];
  vmInstance?: string;
  reason?: string;
  message?: string;
  requeueAfterMs?: number;
}

/**
 * After a step: look again almost at once. The next step needs a fresh observation of what the write
 * changed; the caller's status write usually wakes the reconciler sooner anyway.
 */
export const AFTER_STEP_REQUEUE_MS = 20;
/**
 * While the PV controller, CDI or the garbage collector acts: a safety-net poll only. Their writes wake the
 * task reconciler through its watches on the claims, DataVolumes and volumes the handoff marks; polling
 * faster than this made hundreds of waiting handoffs saturate the API server in the scale benchmark.
 */
export const WAIT_REQUEUE_MS = 2_000;

/** Test seam: called right after each step's API write (the crash-safety tests crash here). */
export const handoffHooks: { afterStep?: (step: StepName, diskIndex: number | undefined) => void } = {};

/**
 * MC_KILL_AFTER_STEP=<step>[:<disk index>] makes the process SIGKILL itself right after that step's API
 * write — before the caller could persist anything. The crash-safety e2e test runs the real controller
 * with it for every entry of HANDOFF_STEPS.
 */
export const ENV_KILL_AFTER_STEP = 'MC_KILL_AFTER_STEP';

function afterStep(step: StepName, diskIndex: number | undefined): void {
  handoffHooks.afterStep?.(step, diskIndex);
  const kill = process.env[ENV_KILL_AFTER_STEP];
  if (!kill) return;
  const [s, d] = kill.split(':');
  if (s === step && (d === undefined || d === '' || Number(d) === diskIndex)) {
    process.kill(process.pid, 'SIGKILL');
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
  const prev = new Map((input.status.disks ?? []).map((d) => [d.index, d]));
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

async function get(ctx: ReconcileContext, gvr: GVR, ns: string | undefined, name: string | undefined): Promise<KubeObject | undefined> {
  if (!name) return undefined;
  return await ctx.client.get<KubeObject>(gvr, ns, name);
}

async function observeOutputs(ctx: ReconcileContext, ns: string, d: DiskPlan): Promise<Pick<DiskObservation, 'claim' | 'dataVolume' | 'vmDiskObject'>> {
  const [claim, dataVolume, vmDiskObject] = await Promise.all([
    get(ctx, GVRs.PersistentVolumeClaim, ns, d.claimName),
    get(ctx, GVRs.DataVolume, ns, d.claimName),
    get(ctx, GVRs.VMDisk, ns, d.vmDisk),
  ]);
  return { claim, dataVolume, vmDiskObject };
}

/** Reads everything one disk's decision depends on, afresh. */
async function observeDisk(ctx: ReconcileContext, input: HandoffInput, d: DiskPlan): Promise<DiskObservation> {
  const ns = input.task.metadata.namespace!;
  const transferClaim = await get(ctx, GVRs.PersistentVolumeClaim, ns, d.transferClaimName);
  const volumeName =
    d.recorded?.metadata?.name ?? d.previous?.volumeName ?? ((transferClaim?.spec as { volumeName?: string } | undefined)?.volumeName || undefined);
  // Always read the volume itself afresh: the label query that found it may be served from the watch cache.
  const volume = await get(ctx, GVRs.PersistentVolume, undefined, volumeName);

  // DataVolumes that own the transfer claim, or are named as it and belong to this source VM.
  const dvNames = new Set<string>((transferClaim?.metadata?.ownerReferences ?? []).filter((r) => r.kind === 'DataVolume').map((r) => r.name));
  if (d.transferClaimName) dvNames.add(d.transferClaimName);
  const ownerUids = new Set((transferClaim?.metadata?.ownerReferences ?? []).map((r) => r.uid));
  const transferDataVolumes: KubeObject[] = [];
  for (const name of dvNames) {
    const dv = await get(ctx, GVRs.DataVolume, ns, name);
    if (dv && (ownerUids.has(dv.metadata?.uid ?? '') || dv.metadata?.labels?.[FORKLIFT_LABEL_VM_ID] === input.spec.id)) transferDataVolumes.push(dv);
  }

  const outputs = await observeOutputs(ctx, ns, d);
  // The volume's own class decides its reclaim policy; the task's resolved class when the PV names none.
  const className = (volume?.spec as { storageClassName?: string } | undefined)?.storageClassName || input.className;
  const storageClass = await get(ctx, GVRs.StorageClass, undefined, className || undefined);
  return {
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
    storageClass,
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

/** Creates an output; AlreadyExists is fine (the next observation decides), a refusal is terminal. */
async function createOutput(ctx: ReconcileContext, gvr: GVR, obj: KubeObject): Promise<{ refused?: string }> {
  try {
    await ctx.client.create(gvr, obj);
    return {};
  } catch (e) {
    if (isAlreadyExists(e)) return {};
    if (isRefusal(e)) return { refused: `the API server refused ${gvr.kind} ${obj.metadata?.name}: ${e.message}` };
    throw e;
  }
}

/** Runs one disk step; returns a refusal message when the API refused an output. */
async function executeDiskStep(ctx: ReconcileContext, markers: OutputMarkers, o: DiskObservation, step: StepName): Promise<{ refused?: string }> {
  const ns = o.namespace;
  const c = ctx.client;
  const pv = o.volume!;
  const pvName = pv.metadata!.name!;
  const pvSpec = (pv.spec ?? {}) as { persistentVolumeReclaimPolicy?: string };
  try {
    switch (step) {
      case Step.RetainVolume: {
        const ann = pv.metadata?.annotations ?? {};
        await c.patch(GVRs.PersistentVolume, undefined, pvName, {
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
        return {};
      }
      case Step.DeleteTransferDataVolume: {
        const dv = o.transferDataVolumes.find((d) => !d.metadata?.deletionTimestamp)!;
        // Orphan: the garbage collector strips the DataVolume's ownerReference from the claim instead of
        // deleting the claim along with it.
        await c.delete(GVRs.DataVolume, ns, dv.metadata!.name!, { propagationPolicy: 'Orphan', uid: dv.metadata?.uid });
        return {};
      }
      case Step.OrphanTransferClaim: {
        const tc = o.transferClaim!;
        const drop = new Set(forkliftOwners(tc).map((r) => r.uid));
        await c.patch(GVRs.PersistentVolumeClaim, ns, tc.metadata!.name!, {
          metadata: { resourceVersion: tc.metadata?.resourceVersion, ownerReferences: (tc.metadata?.ownerReferences ?? []).filter((r) => !drop.has(r.uid)) },
        });
        return {};
      }
      case Step.CreateClaim: {
        const facts = volumeFacts(pv);
        if (!facts) return { refused: `PersistentVolume ${pvName} states no capacity` };
        return await createOutput(ctx, GVRs.PersistentVolumeClaim, renderTargetClaim({ namespace: ns, diskName: o.vmDisk, diskIndex: o.index, volume: facts, markers }));
      }
      case Step.DeleteTransferClaim: {
        const tc = o.transferClaim!;
        await c.delete(GVRs.PersistentVolumeClaim, ns, tc.metadata!.name!, { uid: tc.metadata?.uid });
        return {};
      }
      case Step.RebindVolume: {
        const claim = o.claim!;
        await c.patch(GVRs.PersistentVolume, undefined, pvName, {
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
        return {};
      }
      case Step.RequestBind: {
        await c.patch(GVRs.PersistentVolumeClaim, ns, o.claimName, { metadata: { annotations: { [ANNOTATION_BIND_REQUESTED]: ctx.now().toISOString() } } });
        return {};
      }
      case Step.CreateDataVolume: {
        const facts = volumeFacts(pv)!;
        return await createOutput(ctx, GVRs.DataVolume, renderHandoffDataVolume({ namespace: ns, diskName: o.vmDisk, diskIndex: o.index, volume: facts, markers }));
      }
      case Step.CreateVMDisk: {
        const facts = volumeFacts(pv)!;
        return await createOutput(ctx, GVRs.VMDisk, renderVMDisk({ namespace: ns, diskName: o.vmDisk, diskIndex: o.index, volume: facts, markers }));
      }
      case Step.SettleVolume: {
        await c.patch(GVRs.PersistentVolume, undefined, pvName, {
          metadata: { resourceVersion: pv.metadata?.resourceVersion, annotations: { [ANNOTATION_HANDOFF]: HANDOFF_SETTLED } },
          spec: { persistentVolumeReclaimPolicy: desiredReclaimPolicy(o.storageClass) },
        });
        return {};
      }
      default:
        throw new Error(`not a disk step: ${step}`);
    }
  } catch (e) {
    // Someone wrote in between (optimistic concurrency, delete preconditions): observe again.
    if (isConflict(e)) return {};
    throw e;
  }
}

/**
 * One step of the handoff for one VM. Never throws for a user-facing failure (state `failed` with a
 * reason); throws only for transient API errors (the caller retries with backoff).
 */
export async function reconcileHandoff(ctx: ReconcileContext, input: HandoffInput): Promise<HandoffOutcome> {
  const ns = input.task.metadata.namespace!;
  const markers: OutputMarkers = { taskUid: input.task.metadata.uid!, taskName: input.task.metadata.name!, vmId: input.spec.id };
  const m: Markers = markers;
  const log = ctx.log.child({ vm: input.spec.id, vmName: input.vmName });

  // Volumes are cluster-scoped and many: ask the API server's watch cache (resourceVersion 0) rather than
  // etcd on every pass; an empty answer is confirmed from etcd before anything is decided on absence.
  const pvSelector = `${LABEL_TASK_UID}=${markers.taskUid},${LABEL_VM_ID}=${markers.vmId}`;
  let recordedPVs = (await ctx.client.list<KubeObject>(GVRs.PersistentVolume, undefined, { labelSelector: pvSelector, resourceVersion: '0' })).items;
  if (!recordedPVs.length) recordedPVs = (await ctx.client.listAll<KubeObject>(GVRs.PersistentVolume, undefined, { labelSelector: pvSelector })).items;
  const disks = planDisks(input, recordedPVs);
  const vmInstance = await get(ctx, GVRs.VMInstance, ns, input.vmName);
  const vmObs = { vmInstanceName: input.vmName, vmInstance, scaffoldingVM: input.forkliftVM };
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

  // Someone else's VMInstance name fails the VM before a single disk is touched.
  const foreignVMI = foreignVMInstance(vmObs, m);
  if (foreignVMI) return failed(foreignVMI.reason, foreignVMI.message, plainEvidence());
  // Before the first write: every disk's output names must be free or ours.
  if (recordedPVs.length === 0) {
    for (const d of disks) {
      const f = foreignOutput({ ...(await observeOutputs(ctx, ns, d)), claimName: d.claimName, vmDisk: d.vmDisk }, m);
      if (f) return failed(f.reason, f.message, plainEvidence());
    }
  }

  const out: DiskStatus[] = [];
  for (let i = 0; i < disks.length; i++) {
    const d = disks[i]!;
    // A settled disk needs one read to confirm (its claim's UID against the volume's claimRef), not the
    // whole observation: a many-disk VM would otherwise re-read every finished disk on every call.
    if (d.recorded?.metadata?.annotations?.[ANNOTATION_HANDOFF] === HANDOFF_SETTLED) {
      const claim = await get(ctx, GVRs.PersistentVolumeClaim, ns, d.claimName);
      if (claimRefMatches(d.recorded, claim)) {
        out.push(evidence(d, undefined, DISK_DONE));
        continue;
      }
    }
    const o = await observeDisk(ctx, input, d);
    const action = nextStep(o, m);
    if (action.type === 'done') {
      out.push(evidence(d, o, DISK_DONE));
      continue;
    }
    const rest = disks.slice(i + 1).map((x) => evidence(x, undefined, undefined));
    if (action.type === 'fail') {
      log.warn({ disk: d.index, reason: action.reason }, action.message);
      return failed(action.reason, action.message, [...out, evidence(d, o, undefined), ...rest]);
    }
    if (action.type === 'wait') {
      log.debug({ disk: d.index }, action.message);
      return { state: 'progress', disks: [...out, evidence(d, o, undefined), ...rest], message: action.message, requeueAfterMs: WAIT_REQUEUE_MS };
    }
    log.info({ disk: d.index, step: action.step, volume: o.volume?.metadata?.name }, 'handoff step');
    const r = await executeDiskStep(ctx, markers, o, action.step);
    if (r.refused) return failed(TaskReason.OutputRejected, r.refused, [...out, evidence(d, o, undefined), ...rest]);
    afterStep(action.step, d.index);
    const done = action.step === Step.SettleVolume;
    return {
      state: 'progress',
      disks: [...out, evidence(d, o, done ? DISK_DONE : action.step), ...rest],
      message: `disk ${d.index}: ${action.step}`,
      requeueAfterMs: AFTER_STEP_REQUEUE_MS,
    };
  }

  // Every disk settled: the VMInstance, then the scaffolding VM goes.
  const va = nextVMStep(vmObs, m);
  if (va.type === 'fail') return failed(va.reason, va.message, out);
  if (va.type === 'done') return { state: 'done', disks: out, vmInstance: input.vmName };
  log.info({ step: va.step }, 'handoff step');
  if (va.step === Step.CreateVMInstance) {
    const r = renderVMInstance({
      namespace: ns,
      name: input.vmName,
      vm: input.spec,
      shape: readScaffoldingShape(input.forkliftVM!),
      diskNames: disks.map((d) => d.vmDisk),
      markers,
    });
    if (!r.ok) return failed(TaskReason.Failed, r.message, out);
    const c = await createOutput(ctx, GVRs.VMInstance, r.object);
    if (c.refused) return failed(TaskReason.OutputRejected, c.refused, out);
  } else {
    const vm = input.forkliftVM!;
    try {
      await ctx.client.delete(GVRs.VirtualMachine, ns, vm.metadata!.name!, { uid: vm.metadata?.uid, propagationPolicy: 'Background' });
    } catch (e) {
      if (!isConflict(e)) throw e;
    }
  }
  afterStep(va.step, undefined);
  return { state: 'progress', disks: out, vmInstance: input.vmName, message: va.step, requeueAfterMs: AFTER_STEP_REQUEUE_MS };
}
