// Which tasks still need a source that is being deleted. A source's Providers are what its tasks' Plans
// run on: Forklift's Plan controller validates the Plan's provider references on every reconcile
// (kubev2v/forklift@v2.11.5:pkg/controller/plan/validation.go, validateProvider: a missing source provider
// is a Critical SourceProviderNotValid condition) and a Migration of a Plan that is not Ready makes no
// further progress — a running import would be left half-done, with its DataVolumes and claims behind it.
// So deletion of a source waits (its finalizer stays) until no task holds it. Pure.
import { TaskReason } from '../../api/conditions.ts';
import { LABEL_TASK_UID } from '../../api/labels.ts';
import type { VMImportTask } from '../../api/types.ts';
import type { KubeObject } from '../../runtime/kube.ts';

/** Waiting reasons of a task that has not got past the source check (so has built nothing on it). */
const WAITING_ON_SOURCE: ReadonlySet<string> = new Set([TaskReason.SourceNotFound, TaskReason.SourceNotReady]);

/** True when the task reached its end (a record from then on). */
export function taskFinished(t: VMImportTask): boolean {
  const p = t.status?.phase;
  return (p === 'Succeeded' || p === 'Failed') && !!t.status?.completedAt;
}

/**
 * The tasks (names, sorted) that hold source `sourceName`: every task naming it that has not finished,
 * except one still waiting for the source with no Plan of its own (it built nothing on the source, and
 * a deleting source never becomes Ready for it again). `plans`: the namespace's Plans, read live.
 */
export function tasksHoldingSource(sourceName: string, tasks: VMImportTask[], plans: KubeObject[]): string[] {
  const withPlans = new Set(plans.map((p) => p.metadata?.labels?.[LABEL_TASK_UID]).filter((u): u is string => !!u));
  const out: string[] = [];
  for (const t of tasks) {
    if (t.spec?.sourceRef?.name !== sourceName || taskFinished(t)) continue;
    const ready = (t.status?.conditions ?? []).find((c) => c.type === 'Ready');
    const waiting = !!ready && ready.status !== 'True' && WAITING_ON_SOURCE.has(ready.reason);
    if (waiting && !withPlans.has(t.metadata.uid ?? '')) continue;
    out.push(t.metadata.name ?? '');
  }
  return out.sort();
}

/** Maps a task event to its source, when the event can end a hold (finished, deleted, waiting on the source). */
export function holdMayEnd(t: VMImportTask): boolean {
  if (taskFinished(t) || t.metadata.deletionTimestamp) return true;
  const ready = (t.status?.conditions ?? []).find((c) => c.type === 'Ready');
  return !!ready && WAITING_ON_SOURCE.has(ready.reason);
}
