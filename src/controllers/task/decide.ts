// The pure core of a task's per-VM pass: from what was observed, the ONE next action and the status it
// records. Observation is gathered by observe.ts, actions are executed by effects.ts, the task's status is
// derived by status.ts; reconciler.ts only loops. Every branch names what it prevents.
//
// Decision table (first match wins):
//   recorded phase terminal ............................................ none (a terminal VM is a record)
//   no Plan, never started ............................................. create-plan
//   no Plan, started ................................................... fail Failed (Plan disappeared)
//   no Migration, started .............................................. fail Canceled (Migration deleted)
//   no Migration, Plan has hard blockers ............................... fail (blockers translated)
//   no Migration, Plan not Ready ....................................... report Validating
//   no Migration, Plan Ready, the budget keeps it waiting .............. report Queued (host, disks ahead)
//   no Migration, Plan Ready (admitted, or no budget) .................. create-migration
//   Migration, no run for the VM, hard Migration conditions ............ fail (conditions translated)
//   Migration, no run for the VM ....................................... report Transferring (waiting)
//   warm run precopying, task's cutover newer than the Migration's ..... set-cutover
//   warm run precopying / cutting over ................................. report Precopying / CuttingOver
//   run moving bytes: converting / idle past the stall limit / else .... report Converting / stalled / report
//   run before any byte, idle past the stall limit / else .............. stalled / report Transferring
//   run canceled ....................................................... fail Canceled
//   run failed ......................................................... fail (Forklift's errors translated)
//   transfer done, Forklift still building the VM ...................... report Creating
//   Forklift Succeeded, no output and the handoff never started ........ fail EngineReportedSuccessWithoutOutput
//   Forklift Succeeded ................................................. handoff (its own checkpoint machine)
import { SourceReason, TaskReason } from '../../api/conditions.ts';
import { readVMDisks } from '../../api/disks.ts';
import type { VMStatus } from '../../api/types.ts';
import { DISK_STEPS, VM_STEPS, diskStepsLeft } from '../handoff/steps.ts';
import { SUCCESS_WITHOUT_OUTPUT_MESSAGE, pendingAfterCopyMessage } from '../../forklift/failures.ts';
import { QUEUED_MESSAGE, currentStep, sourcePoweredOff, transferDone, type VMMigration } from '../../forklift/migration.ts';
import { describeCondition, type ForkliftCondition, type PlanVerdict } from '../../forklift/plan.ts';
import { isStalled } from '../../forklift/progress.ts';
import { cutoverPatch, precopySummary, warmSourcePoweredOff, warmStage, type ImportMode } from '../../forklift/warm.ts';
import { failVM } from './preflight.ts';
import { isTerminalPhase } from './status.ts';

/**
 * Plan blockers that mean "not yet" rather than "never": the maps and providers are created moments
 * before the Plan and validate asynchronously. Anything else Critical/Error fails the VM.
 */
export const TRANSIENT_BLOCKERS: ReadonlySet<string> = new Set(['NetworkMapNotReady', 'StorageMapNotReady', 'SourceProviderNotReady', 'DestinationProviderNotReady', 'ProviderNotReady', 'ValidatingVDDK']);

/** The reason of a VM waiting for a transfer slot under the platform's budget (phase Queued). */
export const REASON_QUEUED = 'Queued';

/**
 * The platform's transfer budget on one VM whose Migration does not exist yet (task/admission.ts): admitted
 * (its checkpoint is recorded in status.vms[].transferSlot.admittedAt), or waiting with the sentence its
 * status carries (the host and the disks ahead of it, never another tenant's names).
 */
export type SlotVerdict = { admitted: true } | { admitted: false; message: string };

/** Itinerary phases reached only once every disk is copied: CreateVM, PostHook, Completed. */
const PHASES_AFTER_COPY: ReadonlySet<string> = new Set(['CreateVM', 'PostHook', 'Completed']);

/** Bytes of a transfer as last seen, with the progress view computed against the previous sample. */
export interface TransferView {
  totalBytes: number;
  doneBytes: number;
  percent: number;
  bytesPerSecond?: number;
  etaSeconds?: number;
  /** Epoch ms when bytesDone last increased. */
  lastChangeAt: number;
  /** Milliseconds since the bytes last moved, by this view alone. */
  idleMs: number;
  /** CDI downloaded everything and converts with the counter frozen. */
  converting: boolean;
  /** The bytes come from the DataVolumes (no DiskTransfer step reported them). */
  fromDataVolumes: boolean;
}

/** Everything known about one VM of a task in this pass, observed afresh (caches behind expectations, or live). */
export interface VMObservation {
  /** The VM's status as last recorded. */
  status: VMStatus;
  /** The name of the VM's Migration (deterministic). */
  migrationName: string;
  /** The task's mode (cold when absent). */
  mode?: ImportMode;
  /** The task's spec.cutover (RFC 3339 seconds), a warm import's go for the cutover. */
  cutoverAt?: string;
  now: Date;
  stallAfterMs: number;
  /** Forklift's Plan for the VM (absence confirmed live once the VM started). */
  plan?: { verdict: PlanVerdict };
  /** The Migration of the Plan (absence confirmed live once the VM started). */
  migration?: { creationTimestamp?: string; conditions: ForkliftCondition[]; cutover?: string };
  /** The VM's run, from the Migration (else the Plan's history). */
  run?: VMMigration;
  /** Bytes moving (from the DiskTransfer step, else the DataVolumes). */
  transfer?: TransferView;
  /** How long since the DataVolumes' own bytes last moved (the second witness against a false stall). */
  dataVolumeIdleMs?: number;
  /** Before any bytes are reported: how long since the run started without progress. */
  idleBeforeBytesMs?: number;
  /** The transfer budget's verdict before the Migration exists; absent: no budget (the Migration is created once the Plan is Ready). */
  slot?: SlotVerdict;
  /** Once Forklift says Succeeded: what it produced and whether the handoff had begun on it. */
  outputs?: { handoffStarted: boolean; succeededWithoutOutput: boolean; /** transfer claims still Pending */ pendingClaims?: string[] };
}

export type VMAction =
  /** Nothing to do: the VM is terminal. */
  | { type: 'none'; status: VMStatus }
  /** Create the VM's Plan (deterministic name; AlreadyExists tolerated). */
  | { type: 'create-plan'; status: VMStatus }
  /** Create the Plan's Migration: the run starts. */
  | { type: 'create-migration'; status: VMStatus }
  /** Nothing to write but the status. */
  | { type: 'report'; status: VMStatus }
  /** Terminal failure with a final reason and message. */
  | { type: 'fail'; status: VMStatus }
  /** Terminal failure whose words need a diagnosis (host, source) from the inventory: translated by effects. */
  | { type: 'fail-diagnosed'; status: VMStatus; blockers?: ForkliftCondition[]; text?: string }
  /** The transfer moved nothing for too long: diagnose (claims' events, host) or cancel a VDDK wait. */
  | { type: 'stalled'; status: VMStatus; idleMs: number; percent: number }
  /** A warm run precopying: give its Migration the task's cutover (set, or moved earlier). */
  | { type: 'set-cutover'; status: VMStatus; cutover: string }
  /** The transfer is done and Forklift succeeded: the handoff's checkpoint machine takes its next step. */
  | { type: 'handoff'; status: VMStatus };

export type VMActionType = VMAction['type'];

/** An action whose status is its whole effect: no request is made for it. */
export function writesNothing(a: VMAction): boolean {
  return a.type === 'none' || a.type === 'report' || a.type === 'fail';
}

/**
 * What a VM's status may say while its action has not run: the action's status, which is what was
 * observed, unless it states the action's own effect — a `started` stamp before the Migration exists
 * would read as "the Migration was deleted" to the next pass, a cutover before Forklift has it as
 * scheduled — where it stays as it was.
 */
export function statusBeforeAction(a: VMAction, before: VMStatus): VMStatus {
  return a.type === 'create-migration' || a.type === 'set-cutover' ? before : a.status;
}

function iso(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Forklift's timestamp (any precision) in our RFC 3339 seconds form; `fallback` when absent or unparsable. */
export function stampOf(x: string | undefined, fallback: Date): string {
  const t = x ? Date.parse(x) : NaN;
  return iso(Number.isFinite(t) ? new Date(t) : fallback);
}

/** The later of an observed time and a recorded earlier milestone: timestamps never run backwards. */
export function notBefore(now: Date, earlier: string | undefined): string {
  const e = earlier ? Date.parse(earlier) : NaN;
  return iso(Number.isFinite(e) && e > now.getTime() ? new Date(e) : now);
}

/**
 * Without a DiskTransfer step, the bytes were last seen on the DataVolumes, which Forklift deletes once
 * it builds the VM: a copy recorded complete in status is done, not a transfer that stopped moving.
 */
export function copiedEarlier(v0: VMStatus, run: VMMigration): boolean {
  if (run.transfer) return false;
  // The cold itinerary's phases after the copy (kubev2v/forklift@v2.11.5:pkg/controller/plan/migrator/base/migrator.go).
  if (run.phase && PHASES_AFTER_COPY.has(run.phase)) return true;
  return (v0.bytesTotal ?? 0) > 0 && (v0.bytesDone ?? 0) >= v0.bytesTotal!;
}

/** True while Forklift's run neither failed, nor was canceled, nor succeeded. */
export function runIsRunning(run: VMMigration): boolean {
  return !run.failed && !run.canceled && !run.succeeded;
}

/**
 * A warm run (kubev2v/forklift@v2.11.5:pkg/controller/plan/migration.go, CopyingPaused: the cutover is
 * taken once Migration.spec.cutover is not after now; until then a precopy every precopyInterval). While
 * it precopies or cuts over, the VM shows that; past the cutover the cold table takes over (failure,
 * VM creation, handoff). `v` is edited in place: the power-off time and the warm record.
 */
function warmDecision(o: VMObservation, v: VMStatus, run: VMMigration, running: boolean): VMAction | undefined {
  const ts = v.timestamps!;
  // Downtime counts from the power-off: the Cutover step starts with StorePowerState, moments before.
  if (!ts.sourcePoweredOff && warmSourcePoweredOff(run)) ts.sourcePoweredOff = warmPowerOffTime(run, o.now);
  const sum = precopySummary(run);
  v.warm = { ...v.warm, precopies: sum.precopies, lastPrecopySeconds: sum.lastPrecopySeconds ?? v.warm?.lastPrecopySeconds, nextPrecopyAt: sum.nextPrecopyAt, cutoverAt: o.migration?.cutover };
  if (!running) return undefined;
  const stage = warmStage(run);
  const t = o.transfer;
  if (stage !== 'after' && t && t.totalBytes > 0) {
    // The current precopy's bytes; no stall clock: between precopies nothing moves by design.
    Object.assign(v, { bytesTotal: t.totalBytes, bytesDone: t.doneBytes, progress: t.percent, bytesPerSecond: t.bytesPerSecond, etaSeconds: undefined });
  }
  if (stage === 'precopy') {
    const patch = cutoverPatch(o.cutoverAt, o.migration?.cutover);
    // v2.11.5 counts a precopy's failures as its CDI importer's restarts (migration.go updateCopyProgress:
    // `vm.Warm.Failures = RestartCount`), reset by the next precopy's fresh importer; consecutiveFailures is
    // declared but never written by it.
    const failures = Math.max(run.warm?.failures ?? 0, run.warm?.consecutiveFailures ?? 0);
    const retrying = failures > 0 ? `; the current precopy failed ${failures} time(s) and Forklift retries it (CDI restarts its importer, up to Forklift's IMPORTER_RETRY, 3 by default)${run.errors.length ? ` (${run.errors.join('; ')})` : ''}` : '';
    const cutover = patch ?? o.migration?.cutover;
    const when = cutover ? `cutover at ${cutover}` : 'waiting for spec.cutover (set it to start the cutover)';
    const next = sum.nextPrecopyAt && !(cutover && Date.parse(cutover) <= Date.parse(sum.nextPrecopyAt)) ? `; next precopy at ${sum.nextPrecopyAt}` : '';
    const status: VMStatus = { ...v, warm: { ...v.warm, cutoverAt: cutover }, phase: 'Precopying', reason: failures > 0 ? TaskReason.PrecopyRetrying : TaskReason.Precopying, message: `${sum.precopies} precopies done, the source keeps running (${run.phase ?? 'Started'})${next}; ${when}${retrying}` };
    if (patch) return { type: 'set-cutover', status, cutover: patch };
    return { type: 'report', status };
  }
  if (stage === 'cutover') {
    return { type: 'report', status: { ...v, phase: 'CuttingOver', reason: TaskReason.CuttingOver, message: `cutover: the source is ${warmSourcePoweredOff(run) ? 'off' : 'being powered off'}; copying the final changes (${run.phase})` } };
  }
  return undefined;
}

/** Copy phases of the precopy loop, where a failure is the importer's (CopyDisks; Finalize at cutover). */
const WARM_COPY_PHASES: ReadonlySet<string> = new Set(['CopyDisks', 'Finalize']);

/**
 * When a warm run's source went off, for the downtime. Forklift stamps no phase, so the controller's own
 * observation stands in: `now` when it sees the run between PowerOffSource and the final copy, which it
 * does within one status write; seen only later (a controller restart across the cutover), the last
 * precopy's end, which the power-off cannot precede: the downtime is then overstated, never hidden.
 */
export function warmPowerOffTime(run: VMMigration, now: Date): string {
  const early = run.phase !== undefined && ['WaitForPowerOff', 'RemovePenultimateSnapshot', 'WaitForPenultimateSnapshotRemoval', 'CreateFinalSnapshot', 'WaitForFinalSnapshot', 'AddFinalCheckpoint'].includes(run.phase);
  if (early) return iso(now);
  const ends = (run.warm?.precopies ?? []).map((p) => (p.end ? Date.parse(p.end) : NaN)).filter(Number.isFinite);
  return ends.length ? stampOf(new Date(Math.max(...ends)).toISOString(), now) : iso(now);
}

/**
 * A failed warm run: a copy that failed past Forklift's importer retries is named so; any other failure
 * carries the phase it happened in, so a snapshot vCenter refused reads as one (Forklift's error alone is
 * vCenter's bare fault text).
 */
function warmFailure(o: VMObservation, v: VMStatus, run: VMMigration): VMAction {
  const words = run.errors.join('; ') || 'The VM migration has FAILED.';
  if (run.errorPhase && WARM_COPY_PHASES.has(run.errorPhase) && (run.warm?.failures ?? 0) > 0) {
    const n = run.warm!.failures;
    return {
      type: 'fail',
      status: failVM(v, TaskReason.PrecopyFailed, `the copy of precopy ${Math.max(1, run.warm!.precopies.length)} failed ${n} times, more than Forklift retries it (its IMPORTER_RETRY setting, 3 by default); check the source host's disk access (NFC/VDDK) and create a new task. Forklift said: ${words}`),
    };
  }
  return { type: 'fail-diagnosed', status: v, text: run.errorPhase ? `${words} (Forklift phase ${run.errorPhase})` : words };
}

/** The run with its DiskTransfer step (and bytes) complete. */
function copiedInFull(run: VMMigration): VMMigration {
  return {
    ...run,
    pipeline: run.pipeline.map((st) => (st.name === 'DiskTransfer' ? { ...st, phase: 'Completed' } : st)),
    transfer: run.transfer ? { ...run.transfer, phase: 'Completed', doneBytes: run.transfer.totalBytes } : undefined,
  };
}

/** The ONE next action for one VM. Pure: same observation, same answer. */
export function nextVMAction(o: VMObservation): VMAction {
  const v0 = o.status;
  if (isTerminalPhase(v0.phase)) return { type: 'none', status: v0 };
  const now = o.now;
  let v: VMStatus = { ...v0, timestamps: { ...(v0.timestamps ?? {}) } };
  const ts = v.timestamps!;
  const pName = v.plan ?? '';

  if (!o.plan) {
    // A Plan that vanished under a running VM cannot be recreated: its run, its claims went with it.
    if (ts.started) return { type: 'fail', status: failVM(v, TaskReason.Failed, `Forklift Plan ${pName} disappeared while the VM was migrating; create a new task`) };
    return { type: 'create-plan', status: { ...v, phase: 'Validating', reason: TaskReason.Validating, message: 'Forklift is validating the plan' } };
  }
  if (!o.migration) {
    // Deleting the active Migration cancels the run (docs/forklift-contract.md, Plan): never restart it behind the tenant's back.
    if (ts.started) return { type: 'fail', status: failVM(v, TaskReason.Canceled, `Forklift Migration ${o.migrationName} was deleted while the VM was migrating (the run is canceled); create a new task`) };
    const hard = o.plan.verdict.blockers.filter((b) => !TRANSIENT_BLOCKERS.has(b.type));
    if (hard.length) return { type: 'fail-diagnosed', status: v, blockers: hard };
    if (!o.plan.verdict.ready) {
      const waiting = o.plan.verdict.blockers.filter((c) => TRANSIENT_BLOCKERS.has(c.type)).map(describeCondition);
      return { type: 'report', status: { ...v, phase: 'Validating', reason: TaskReason.Validating, message: `Forklift is validating the plan${waiting.length ? `: ${waiting.join('; ')}` : ''}` } };
    }
    // Queued is not Stalled: nothing started, no stall clock runs, and no Migration exists to cancel.
    if (o.slot && !o.slot.admitted) return { type: 'report', status: { ...v, phase: 'Queued', reason: REASON_QUEUED, message: o.slot.message } };
    ts.started = iso(now);
    return { type: 'create-migration', status: { ...v, phase: 'Transferring', reason: TaskReason.Transferring, message: 'migration started' } };
  }
  ts.started ??= stampOf(o.migration.creationTimestamp, now);
  let run = o.run;
  if (!run) {
    const hard = o.migration.conditions.filter((c) => (c.category === 'Critical' || c.category === 'Error') && c.type !== 'PlanNotReady');
    if (hard.length) return { type: 'fail-diagnosed', status: v, blockers: hard };
    return { type: 'report', status: { ...v, phase: 'Transferring', reason: TaskReason.Transferring, message: 'waiting for Forklift to start the migration' } };
  }
  const running = runIsRunning(run);
  if (o.mode === 'warm') {
    const w = warmDecision(o, v, run, running);
    if (w) return w;
    // Past the cutover (the VM is being built) every byte was copied, whatever the last precopy's
    // DiskTransfer counters say: the itinerary reaches CreateVM only after the final delta
    // (kubev2v/forklift@v2.11.5:pkg/controller/plan/migrator/base/migrator.go, warmItinerary).
    if (warmStage(run) === 'after') run = copiedInFull(run);
  } else if (!ts.sourcePoweredOff && sourcePoweredOff(run)) ts.sourcePoweredOff = stampOf(run.pipeline.find((s) => s.name === 'DiskTransfer')?.started, now);

  const t = o.transfer;
  if (t && t.totalBytes > 0) {
    v = {
      ...v,
      bytesTotal: t.totalBytes,
      bytesDone: t.doneBytes,
      progress: t.percent,
      bytesPerSecond: t.bytesPerSecond,
      etaSeconds: t.etaSeconds,
      lastProgressTime: iso(new Date(t.lastChangeAt)),
    };
    if (running && !transferDone(run) && !(t.fromDataVolumes && t.doneBytes >= t.totalBytes)) {
      if (t.converting) {
        return { type: 'report', status: { ...v, phase: 'Transferring', reason: TaskReason.Converting, message: `converting: the data is downloaded and CDI is writing it to the target volume (qemu-img convert; about 30 min per 230 GiB); progress stays at ${t.percent}% meanwhile` } };
      }
      const idleMs = Math.min(t.idleMs, o.dataVolumeIdleMs ?? Infinity);
      if (isStalled({ idleMs, stallAfterMs: o.stallAfterMs, converting: false })) return { type: 'stalled', status: v, idleMs, percent: t.percent };
      const step = currentStep(run);
      return { type: 'report', status: { ...v, phase: 'Transferring', reason: TaskReason.Transferring, message: `${step ?? run.phase ?? 'starting'}${run.phase ? ` (${run.phase})` : ''}` } };
    }
  } else if (running && !copiedEarlier(v0, run)) {
    // Before the DiskTransfer step reports sizes: a stall here is measured from the start.
    const idleMs = Math.min(o.idleBeforeBytesMs ?? 0, o.dataVolumeIdleMs ?? Infinity);
    if (isStalled({ idleMs, stallAfterMs: o.stallAfterMs, converting: false })) return { type: 'stalled', status: v, idleMs, percent: 0 };
    return { type: 'report', status: { ...v, phase: 'Transferring', reason: run.pending ? TaskReason.Pending : TaskReason.Transferring, message: run.pending ? QUEUED_MESSAGE : `${currentStep(run) ?? 'Initialize'} (${run.phase ?? 'Started'})` } };
  }

  if (run.canceled) return { type: 'fail', status: failVM(v, TaskReason.Canceled, `Forklift canceled the migration${run.errors.length ? `: ${run.errors.join('; ')}` : ''}; create a new task`) };
  if (run.failed && o.mode === 'warm') return warmFailure(o, v, run);
  if (run.failed) {
    let text = run.errors.join('; ');
    if (!text) text = o.migration.conditions.filter((c) => c.type === 'Failed').map(describeCondition).join('; ') || 'The VM migration has FAILED.';
    return { type: 'fail-diagnosed', status: v, text };
  }
  // transferred
  if (!ts.transferred) ts.transferred = stampOf(run.transfer?.completed, now);
  v = { ...v, progress: 100, bytesDone: v.bytesTotal ?? v.bytesDone, bytesPerSecond: undefined, etaSeconds: 0, lastProgressTime: undefined };
  if (!run.succeeded) return { type: 'report', status: { ...v, phase: 'Creating', reason: TaskReason.Creating, message: `transfer complete; Forklift is creating the VM (${run.phase ?? ''})` } };
  // Forklift says Succeeded: outputs must exist (the retry trap), unless the handoff already consumed them.
  if (o.outputs && !o.outputs.handoffStarted && o.outputs.succeededWithoutOutput) {
    return { type: 'fail', status: failVM(v, TaskReason.EngineReportedSuccessWithoutOutput, SUCCESS_WITHOUT_OUTPUT_MESSAGE) };
  }
  // claims Forklift calls copied but that never bound (src/forklift/failures.ts).
  if (o.outputs && !o.outputs.handoffStarted && o.outputs.pendingClaims?.length) {
    return { type: 'fail', status: failVM(v, TaskReason.StorageClassWaitForFirstConsumer, pendingAfterCopyMessage(o.outputs.pendingClaims)) };
  }
  return { type: 'handoff', status: v.phase === 'Creating' ? v : { ...v, phase: 'Creating', reason: TaskReason.Creating, message: 'handing the transferred volumes over to VMDisks' } };
}


/** What the task-level gate saw before any VM is examined (only asked while some VM still needs preflight). */
export interface TaskGateObservation {
  namespace: string;
  sourceName: string;
  /** The source as it exists now (undefined: not found). */
  source?: { name: string; ready?: { status?: string; reason?: string; message?: string }; providerUID?: string };
  forkliftInstalled: boolean;
}

/**
 * The task-wide wait before preflight: the source must exist and be Ready with its provider, and Forklift
 * must be installed. Each wait names what the tenant (or operator) does about it; the task proceeds by
 * itself once the watches on sources and CRDs report the change. Undefined: go on.
 */
export function taskGate(o: TaskGateObservation): { reason: string; message: string } | undefined {
  if (!o.source) return { reason: TaskReason.SourceNotFound, message: `VMImportSource "${o.sourceName}" does not exist in namespace ${o.namespace}; create it (the task proceeds by itself once it is Ready)` };
  const ready = o.source.ready;
  if (ready?.status !== 'True' || !o.source.providerUID) {
    const why = ready ? `${ready.reason}${ready.message ? `: ${ready.message}` : ''}` : 'it has not reported Ready yet';
    // A source gated on an engine too old for our Plans: the task says so in its own reason.
    const reason = ready?.reason === SourceReason.ForkliftTooOld ? TaskReason.ForkliftTooOld : TaskReason.SourceNotReady;
    return { reason, message: `VMImportSource "${o.source.name}" is not Ready (${why}); the task proceeds by itself once it is` };
  }
  if (!o.forkliftInstalled) return { reason: TaskReason.ForkliftNotInstalled, message: 'Forklift (forklift.konveyor.io) is not installed; the task proceeds by itself once it is' };
  return undefined;
}

/**
 * Where a VM's action goes in its pass, nearest its end first (reconciler.ts orders by it, the VMs an
 * earlier pass did not reach ahead of all others): the steps it still has to take before its phase
 * turns, as its status records them. A verdict waiting on a diagnosis or a cutover is one write from its
 * phase; a handoff counts its disks' remaining steps and the VM's own; a VM before its Migration has the
 * whole import ahead, and goes after every handoff (a transfer runs for minutes, and a pass more before it
 * starts is not seen; a tenant waits on each handoff step). Pure.
 */
export function stepsToEnd(a: VMAction): number {
  switch (a.type) {
    case 'none':
    case 'report':
    case 'fail':
    case 'fail-diagnosed':
    case 'stalled':
    case 'set-cutover':
      return 1;
    case 'handoff': {
      const disks = readVMDisks(a.status).evidence;
      const left = disks.length ? disks.reduce((n, d) => n + diskStepsLeft(d.handoff), 0) : DISK_STEPS.length;
      // Once the VMInstance is recorded, the scaffolding VM and the claims' custody are what is left.
      return left + (a.status.vmInstance ? VM_STEPS.length - 1 : VM_STEPS.length);
    }
    case 'create-migration':
      return BEFORE_TRANSFER;
    case 'create-plan':
      return BEFORE_TRANSFER + 1;
  }
}

/**
 * The turn of an action's requests in the client-side limiter (runtime/ratelimit.ts): nearest its end
 * first, as passOrder starts them. Started first, a VM one step from its end still queued each request
 * behind every other VM's in a saturated limiter (a 200-VM task at the default 50 requests/s: seconds a
 * step). Below 0, the priority of everything else (watches, relists, other reconcilers). Pure.
 */
export function requestPriority(a: VMAction): number {
  return -stepsToEnd(a);
}

/** Above any handoff's count (a VM has at most a few dozen disks, each DISK_STEPS long). */
const BEFORE_TRANSFER = 1_000_000;

/**
 * A pass's order of actions: the VMs the previous pass did not reach first (no VM waits more than one
 * pass behind the others, however many are nearer their end), then the rest; within each, nearest the
 * end first (stepsToEnd), and in the given order between equals. Pure.
 */
export function passOrder(ks: readonly number[], behind: ReadonlySet<number>, steps: (k: number) => number): number[] {
  const ranked = (xs: number[]): number[] => xs.map((k) => ({ k, s: steps(k) })).sort((a, b) => a.s - b.s).map((x) => x.k);
  return [...ranked(ks.filter((k) => behind.has(k))), ...ranked(ks.filter((k) => !behind.has(k)))];
}
