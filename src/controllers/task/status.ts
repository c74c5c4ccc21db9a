// Pure derivation of a VMImportTask's phase, conditions and aggregate progress from its per-VM states.
import { CONDITION_FINISHED, CONDITION_READY, CONDITION_TRANSFERRED, CONDITION_VALIDATED, REASON_IN_PROGRESS, TaskReason } from '../../api/conditions.ts';
import type { HeldVolume, TaskPhase, TaskTransferStatus, VMImportTaskStatus, VMPhase, VMStatus } from '../../api/types.ts';
import { readVMDisks } from '../../api/disks.ts';
import { setCondition } from '../../runtime/status.ts';

/** Reasons for the True side of Validated/Transferred (not failure reasons, so not in TaskReason). */
export const REASON_PREFLIGHT_PASSED = 'PreflightPassed';
export const REASON_TRANSFERRED = 'Transferred';


const ORDER: VMPhase[] = ['Pending', 'Validating', 'Queued', 'Transferring', 'Precopying', 'CuttingOver', 'Creating', 'Succeeded', 'Failed'];

export function isTerminalPhase(p: string | undefined): boolean {
  return p === 'Succeeded' || p === 'Failed';
}

/**
 * The task's phase: the least advanced phase among VMs still running; once all are terminal, Succeeded
 * only if every VM succeeded, else Failed. No VMs yet → Pending.
 */
export function aggregatePhase(vms: VMStatus[]): TaskPhase {
  if (vms.length === 0) return 'Pending';
  const running = vms.filter((v) => !isTerminalPhase(v.phase));
  if (running.length === 0) return vms.every((v) => v.phase === 'Succeeded') ? 'Succeeded' : 'Failed';
  let min = ORDER.length;
  for (const v of running) min = Math.min(min, ORDER.indexOf(v.phase));
  const p = ORDER[min] ?? 'Pending';
  // A warm import's precopies and cutover are the task's transfer.
  return p === 'Precopying' || p === 'CuttingOver' ? 'Transferring' : p;
}

/** Aggregate percent over every VM: bytes where known; a succeeded VM counts whole, a failed one not at all. */
export function aggregateProgress(vms: VMStatus[]): number {
  // What was imported, of what the task asked for: a failed VM counts with nothing imported (a task with
  // one VM of two failed must not read 100). Weighed by bytes when every VM's size is known; otherwise
  // (a VM failed before its transfer told its size) VM by VM.
  if (vms.length === 0) return 0;
  const fraction = (v: VMStatus): number => (v.phase === 'Succeeded' ? 1 : v.phase === 'Failed' || !v.bytesTotal ? 0 : Math.min(1, (v.bytesDone ?? 0) / v.bytesTotal));
  const round = (x: number): number => Math.round(x * 10000) / 100;
  if (vms.every((v) => (v.bytesTotal ?? 0) > 0)) {
    let total = 0;
    let done = 0;
    for (const v of vms) {
      total += v.bytesTotal!;
      done += fraction(v) * v.bytesTotal!;
    }
    return round(done / total);
  }
  return round(vms.reduce((a, v) => a + fraction(v), 0) / vms.length);
}

/** A VM's bytes to copy: its transfer's total once Forklift reports it, else its disks' capacities (a queued VM). */
export function vmBytesTotal(v: VMStatus): number {
  if (v.bytesTotal && v.bytesTotal > 0) return v.bytesTotal;
  return (v.transferSlot?.diskBytes ?? []).reduce((a, b) => a + Math.max(0, b), 0);
}

/** Seconds in words for the ETA column: `45s`, `12m`, `1h20m`, `2d3h`. */
export function formatETA(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${m % 60 ? `${m % 60}m` : ''}`;
  const d = Math.floor(h / 24);
  return `${d}d${h % 24 ? `${h % 24}h` : ''}`;
}

/**
 * The task's transfer as a whole: bytes done and total over the VMs that did not fail (a succeeded one
 * whole), the rate of those moving now, and the ETA the budget's play of the hosts gave (`etaSeconds`;
 * 0 once every byte is copied). Undefined while no VM's size is known.
 */
export function taskTransfer(vms: readonly VMStatus[], etaSeconds: number | undefined): TaskTransferStatus | undefined {
  let total = 0;
  let done = 0;
  let rate = 0;
  for (const v of vms) {
    if (v.phase === 'Failed') continue;
    const t = vmBytesTotal(v);
    total += t;
    done += v.phase === 'Succeeded' || v.timestamps?.transferred ? t : Math.min(t, Math.max(0, v.bytesDone ?? 0));
    if (v.phase !== 'Queued' && v.reason !== TaskReason.Stalled) rate += Math.max(0, v.bytesPerSecond ?? 0);
  }
  if (total <= 0) return undefined;
  const eta = done >= total ? 0 : etaSeconds === undefined ? undefined : Math.max(0, Math.round(etaSeconds));
  return { bytesDone: Math.round(done), bytesTotal: Math.round(total), bytesPerSecond: Math.round(rate), ...(eta !== undefined ? { etaSeconds: eta, eta: formatETA(eta) } : {}) };
}

/**
 * The volumes the task holds for its failed VMs: every disk whose handoff had begun (its volume marked and
 * put on Retain, where the handoff keeps it when the VM fails — handoff/index.ts, keepInCustody).
 */
export function heldVolumes(vms: readonly VMStatus[]): HeldVolume[] {
  const out: HeldVolume[] = [];
  for (const v of vms) {
    if (v.phase !== 'Failed') continue;
    for (const d of readVMDisks(v).evidence) {
      if (!d.handoff || !d.volumeName) continue;
      out.push({ name: d.volumeName, vm: v.id, disk: d.index, ...(d.capacityBytes !== undefined ? { capacityBytes: d.capacityBytes } : {}) });
    }
  }
  return out;
}

/**
 * A VM's transfer figures as its status shows them: a rate and an ETA only while it moves — a Stalled or
 * Failed VM moves nothing, so its last ETA would promise a finish that is not coming.
 */
function withLiveFigures(v: VMStatus): VMStatus {
  if (v.phase !== 'Failed' && v.reason !== TaskReason.Stalled) return v;
  if (v.etaSeconds === undefined && v.bytesPerSecond === undefined) return v;
  const out = { ...v };
  delete out.etaSeconds;
  delete out.bytesPerSecond;
  return out;
}

/** downtime: source powered off → VMInstance created (completed). */
export function downtimeSeconds(v: VMStatus): number | undefined {
  const off = v.timestamps?.sourcePoweredOff;
  const done = v.timestamps?.completed;
  if (!off || !done || v.phase !== 'Succeeded') return undefined;
  const s = (Date.parse(done) - Date.parse(off)) / 1000;
  return Number.isFinite(s) && s >= 0 ? Math.round(s) : undefined;
}

function failureSummary(vms: VMStatus[]): string {
  return vms
    .filter((v) => v.phase === 'Failed')
    .map((v) => `${v.name || v.id} (${v.id}): ${v.reason ?? TaskReason.Failed}: ${v.message ?? ''}`.trim())
    .join('; ');
}

export interface DeriveInput {
  prev: VMImportTaskStatus | undefined;
  vms: VMStatus[];
  generation: number | undefined;
  now: Date;
  /** A task-level state before any VM was examined (source not ready, Forklift missing...). */
  waiting?: { reason: string; message: string };
  storageClass?: string;
  startedAt?: string;
  /** The whole task's ETA in seconds from `now`, from the transfer budget's play of the hosts; absent: unknown. */
  etaSeconds?: number;
}

/**
 * The whole status from per-VM states. Ready is True only when every VM succeeded; otherwise False with
 * the current reason (including a terminal failure). Pure.
 */
export function deriveTaskStatus(i: DeriveInput): VMImportTaskStatus {
  const prev = i.prev ?? {};
  const now = i.now;
  const iso = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const vms = i.vms;
  let phase: TaskPhase = i.waiting ? 'Pending' : aggregatePhase(vms);
  if (i.waiting && vms.length && vms.every((v) => isTerminalPhase(v.phase))) phase = aggregatePhase(vms);
  const terminal = isTerminalPhase(phase);
  let conds = prev.conditions ?? [];

  // Ready
  let readyReason: string;
  let readyMessage: string;
  const failed = vms.filter((v) => v.phase === 'Failed');
  const succeeded = vms.filter((v) => v.phase === 'Succeeded');
  if (phase === 'Succeeded') {
    readyReason = TaskReason.Succeeded;
    readyMessage = `${succeeded.length} VM${succeeded.length === 1 ? '' : 's'} imported`;
  } else if (phase === 'Failed') {
    const reasons = [...new Set(failed.map((v) => v.reason ?? TaskReason.Failed))];
    readyReason = succeeded.length ? TaskReason.PartiallyFailed : reasons.length === 1 ? reasons[0]! : TaskReason.Failed;
    readyMessage = `${failed.length} of ${vms.length} VMs failed: ${failureSummary(vms)}`;
  } else if (i.waiting) {
    readyReason = i.waiting.reason;
    readyMessage = i.waiting.message;
  } else {
    const running = vms.filter((v) => !isTerminalPhase(v.phase));
    // The most telling in-progress reason: a stall beats converting beats the plain phase.
    const pick = running.find((v) => v.reason === TaskReason.Stalled) ?? running.find((v) => v.reason === TaskReason.Converting) ?? running.find((v) => v.phase === phase);
    readyReason = pick?.reason ?? phase;
    const parts = running.map((v) => `${v.name || v.id}: ${v.phase}${v.message ? ` (${v.message})` : ''}`);
    if (failed.length) parts.push(`failed: ${failureSummary(vms)}`);
    readyMessage = parts.join('; ');
  }
  conds = setCondition(conds, { type: CONDITION_READY, status: phase === 'Succeeded' ? 'True' : 'False', reason: readyReason, message: readyMessage }, now, i.generation);
  // Finished: the end either way, carrying the outcome's reason (what `kubectl wait` keys on).
  conds = setCondition(
    conds,
    terminal
      ? { type: CONDITION_FINISHED, status: 'True', reason: readyReason, message: readyMessage }
      : { type: CONDITION_FINISHED, status: 'False', reason: REASON_IN_PROGRESS, message: `the import is still running (phase ${phase})` },
    now,
    i.generation,
  );

  // Validated
  // Preflight verdicts: a VM that passed gets its Plan name; one that failed never does.
  const preflightFailed = failed.filter((v) => !v.plan);
  const validated = vms.length > 0 && vms.every((v) => !!v.plan || v.phase === 'Failed');
  if (preflightFailed.length) {
    const reasons = [...new Set(preflightFailed.map((v) => v.reason!))];
    conds = setCondition(conds, { type: CONDITION_VALIDATED, status: 'False', reason: reasons.length === 1 ? reasons[0]! : TaskReason.Failed, message: failureSummary(preflightFailed) }, now, i.generation);
  } else if (validated && !i.waiting) {
    conds = setCondition(conds, { type: CONDITION_VALIDATED, status: 'True', reason: REASON_PREFLIGHT_PASSED, message: 'source ready, storage class, output names, host addresses and quota checked' }, now, i.generation);
  } else {
    conds = setCondition(conds, { type: CONDITION_VALIDATED, status: 'False', reason: i.waiting?.reason ?? TaskReason.Validating, message: i.waiting?.message ?? 'preflight checks running' }, now, i.generation);
  }

  // Transferred
  const live = vms.filter((v) => v.phase !== 'Failed');
  const transferred = live.filter((v) => v.timestamps?.transferred);
  if (live.length > 0 && transferred.length === live.length) {
    conds = setCondition(conds, { type: CONDITION_TRANSFERRED, status: 'True', reason: REASON_TRANSFERRED, message: `${transferred.length} VM${transferred.length === 1 ? '' : 's'} transferred` }, now, i.generation);
  } else {
    const reason = terminal ? TaskReason.Failed : (vms.find((v) => v.reason === TaskReason.Stalled)?.reason ?? (phase === 'Transferring' ? TaskReason.Transferring : phase === 'Queued' ? 'Queued' : (i.waiting?.reason ?? TaskReason.Pending)));
    conds = setCondition(conds, { type: CONDITION_TRANSFERRED, status: 'False', reason, message: terminal ? 'no VM was transferred' : `${transferred.length} of ${live.length} VMs transferred` }, now, i.generation);
  }

  const held = heldVolumes(vms);
  const transfer = terminal ? undefined : taskTransfer(vms, i.etaSeconds);
  const out: VMImportTaskStatus = {
    observedGeneration: i.generation,
    phase,
    conditions: conds,
    startedAt: prev.startedAt ?? i.startedAt ?? iso,
    completedAt: terminal ? (prev.completedAt ?? iso) : undefined,
    message: readyMessage,
    storageClass: i.storageClass ?? prev.storageClass,
    progress: aggregateProgress(vms),
    ...(transfer ? { transfer } : {}),
    ...(held.length ? { heldVolumes: held } : {}),
    vms: vms.map((v0) => {
      const v = withLiveFigures(v0);
      const d = downtimeSeconds(v);
      return d === undefined ? v : { ...v, downtimeSeconds: d };
    }),
  };
  return out;
}

/**
 * A task that ended before the Finished condition existed has none, and a terminal task is never
 * derived again: without it, `kubectl wait --for=condition=Finished` would wait out its timeout on such a
 * task. Returns its status with Finished=True (Ready's reason and message, transition time completedAt),
 * or undefined when there is nothing to add. Pure.
 */
export function backfillFinished(status: VMImportTaskStatus | undefined, generation: number | undefined, now: Date): VMImportTaskStatus | undefined {
  if (!status || !isTerminalPhase(status.phase)) return undefined;
  if (status.conditions?.some((c) => c.type === CONDITION_FINISHED)) return undefined;
  const ready = status.conditions?.find((c) => c.type === CONDITION_READY);
  const reason = ready?.reason ?? (status.phase === 'Succeeded' ? TaskReason.Succeeded : TaskReason.Failed);
  const message = ready?.message ?? status.message ?? `the import ended ${status.phase}`;
  const at = status.completedAt ?? now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const conditions = setCondition(status.conditions, { type: CONDITION_FINISHED, status: 'True', reason, message, lastTransitionTime: at }, now, ready?.observedGeneration ?? generation);
  return { ...status, conditions };
}
