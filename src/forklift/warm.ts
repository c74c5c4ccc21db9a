// Warm migration as Forklift runs it (kubev2v/forklift@v2.11.5): the Plan's `type: warm`, a precopy loop
// while the source VM keeps running (a snapshot, the blocks changed since the last one by changed block
// tracking, every `precopyInterval` minutes), then at the Migration's `spec.cutover` the source is powered
// off, a final snapshot and delta are copied, and the VM is built. Pure readers of that run.
import type { TaskMode, VMImportTask } from '../api/types.ts';
import { parseRFC3339 } from '../api/warm.ts';
import type { VMMigration } from './migration.ts';

export type ImportMode = TaskMode;

/** The task's mode (spec.mode; cold when absent). */
export function importMode(task: Pick<VMImportTask, 'spec'>): ImportMode {
  return task.spec.mode === 'warm' ? 'warm' : 'cold';
}

/** The task's cutover (spec.cutover, RFC 3339 as the webhook admits it), in seconds; undefined when absent. */
export function taskCutover(task: Pick<VMImportTask, 'spec'>): string | undefined {
  const t = parseRFC3339(task.spec.cutover);
  return t === undefined ? undefined : new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * The warm itinerary's phases, by the pipeline step Forklift files them under
 * (kubev2v/forklift@v2.11.5:pkg/controller/plan/migrator/base/migrator.go, Step and warmItinerary).
 * Before and during the precopy loop the source VM runs.
 */
export const WARM_PRECOPY_PHASES: ReadonlySet<string> = new Set([
  'Started',
  'PreHook',
  'CreateInitialSnapshot',
  'WaitForInitialSnapshot',
  'StoreInitialSnapshotDeltas',
  'PreflightInspection',
  'CreateDataVolumes',
  'CopyDisks',
  'CopyingPaused',
  'RemovePreviousSnapshot',
  'WaitForPreviousSnapshotRemoval',
  'CreateSnapshot',
  'WaitForSnapshot',
  'StoreSnapshotDeltas',
  'AddCheckpoint',
]);

/** The Cutover step: the source is stopped, the final snapshot's delta copied, the snapshots removed. */
export const WARM_CUTOVER_PHASES: ReadonlySet<string> = new Set([
  'StorePowerState',
  'PowerOffSource',
  'WaitForPowerOff',
  'RemovePenultimateSnapshot',
  'WaitForPenultimateSnapshotRemoval',
  'CreateFinalSnapshot',
  'WaitForFinalSnapshot',
  'AddFinalCheckpoint',
  'Finalize',
  'RemoveFinalSnapshot',
  'WaitForFinalSnapshotRemoval',
]);

/** Cutover phases before which the source still runs: Forklift powers it off in PowerOffSource. */
const CUTOVER_BEFORE_POWER_OFF: ReadonlySet<string> = new Set(['StorePowerState', 'PowerOffSource']);

export type WarmStage = 'precopy' | 'cutover' | 'after';

/** Where a warm run is: precopying (source running), cutting over, or past both (building the VM). */
export function warmStage(run: Pick<VMMigration, 'phase'>): WarmStage {
  if (!run.phase || WARM_PRECOPY_PHASES.has(run.phase)) return 'precopy';
  if (WARM_CUTOVER_PHASES.has(run.phase)) return 'cutover';
  return 'after';
}

/** A warm run's source is off once Forklift moved past PowerOffSource (WaitForPowerOff and later). */
export function warmSourcePoweredOff(run: Pick<VMMigration, 'phase'>): boolean {
  const s = warmStage(run);
  return s === 'after' || (s === 'cutover' && !CUTOVER_BEFORE_POWER_OFF.has(run.phase ?? ''));
}

/** The finished precopies (an end time), the last one's duration, and when the next starts. */
export function precopySummary(run: Pick<VMMigration, 'warm'>): { precopies: number; lastPrecopySeconds?: number; nextPrecopyAt?: string } {
  const done = (run.warm?.precopies ?? []).filter((p) => p.end);
  const last = done[done.length - 1];
  const secs = last?.start && last.end ? (Date.parse(last.end) - Date.parse(last.start)) / 1000 : NaN;
  return {
    precopies: done.length,
    lastPrecopySeconds: Number.isFinite(secs) && secs >= 0 ? Math.round(secs) : undefined,
    nextPrecopyAt: run.warm?.nextPrecopyAt,
  };
}

/**
 * The Migration's cutover to write: the task's, when the Migration has none or a later one. The contract
 * lets a tenant set the cutover or move it earlier, never later (a later one after Forklift's own check
 * could come too late to matter), and never once the cutover started.
 */
export function cutoverPatch(taskCutoverAt: string | undefined, migrationCutoverAt: string | undefined): string | undefined {
  if (!taskCutoverAt) return undefined;
  if (!migrationCutoverAt) return taskCutoverAt;
  return Date.parse(taskCutoverAt) < Date.parse(migrationCutoverAt) ? taskCutoverAt : undefined;
}
