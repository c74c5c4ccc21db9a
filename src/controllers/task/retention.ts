// Which of a task's objects the controller's caches hold. The handoff's outputs (target claims, their
// DataVolumes, the volumes it marks, VMDisks, VMInstances) carry their task's labels for good — they
// are how a tenant traces a VM to its import — so a label selector matches the outputs of every import
// ever made, and a controller that runs for months would hold every VM it ever imported. A kept task's
// Forklift objects (Plans with their per-VM pipelines, Migrations, maps) stay until the task is deleted.
// Only a running task reads any of them from a cache: a finished task is a record (its reconcile returns
// before any read), deletion lists live, and a deleted task is gone. Pure.
import { LABEL_TASK, LABEL_TASK_UID } from '../../api/labels.ts';
import type { VMImportTask } from '../../api/types.ts';
import type { KubeObject } from '../../runtime/kube.ts';
import type { Cache } from '../../runtime/reconciler.ts';
import { isTerminalPhase } from './status.ts';

/**
 * An object whose task this cache has not seen is held this long after its creation. Its task may be
 * deleted (its outputs are never needed again) or newer than the task cache's last event: another
 * replica, leader a moment ago, ran its handoff while this replica's task watch lagged. A task reaches its
 * handoff only after a whole transfer, and a lagging watch is resumed within its liveness bound (at most
 * 10.5 min); without this grace a just-created output would read as absent — the handoff takes a missing
 * VMDisk it created for one deleted by someone (OutputDeleted).
 */
export const UNKNOWN_TASK_GRACE_MS = 15 * 60_000;

/** A task that has ended: nothing reads its outputs again (the reconciler returns before any read). */
export function taskFinished(t: Pick<VMImportTask, 'status'>): boolean {
  return isTerminalPhase(t.status?.phase) && !!t.status?.completedAt;
}

/** The namespace of the task an object belongs to: its own, or for a volume the claim it is bound to. */
function taskNamespace(o: KubeObject): string | undefined {
  return o.metadata?.namespace || (o as { spec?: { claimRef?: { namespace?: string } } }).spec?.claimRef?.namespace || undefined;
}

/**
 * True while the object's task runs, or while this cannot be known (the task cache not synced, labels
 * or namespace missing, an object younger than the grace of a task the cache has not seen).
 */
export function keepTaskObject(o: KubeObject, tasks: Cache | undefined, now: number): boolean {
  if (!tasks) return true;
  const uid = o.metadata?.labels?.[LABEL_TASK_UID];
  const name = o.metadata?.labels?.[LABEL_TASK];
  const ns = taskNamespace(o);
  if (!uid || !name || !ns) return true;
  const t = tasks.get(ns, name) as (KubeObject & Pick<VMImportTask, 'status'>) | undefined;
  if (t && t.metadata?.uid === uid) return !taskFinished(t);
  // No task of this UID: deleted (a UID never returns), or one this cache has not seen yet.
  const created = Date.parse(o.metadata?.creationTimestamp ?? '');
  return !Number.isFinite(created) || now - created < UNKNOWN_TASK_GRACE_MS;
}
