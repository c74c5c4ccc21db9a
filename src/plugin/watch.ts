// `kubectl vmimport watch`: follows tasks through a watch of the namespace's VMImportTasks (re-listed when
// the stream ends), drawing them with the demo's renderer (render.ts): redrawn in place on a terminal,
// plain blocks otherwise. Resolves the exit code: 0 when every VM of every task succeeded, 1 otherwise.
import type { VMImportTask } from '../api/types.ts';
import { GVRs } from '../runtime/gvr.ts';
import { ApiError, isGone, isNotFound, isNotServed, type KubeClient } from '../runtime/kube.ts';
import { PluginError } from './errors.ts';
import { formatDuration, phaseKey, redraw, renderTask, shouldPrintPlain } from './render.ts';
import { allSucceeded, finished } from './task.ts';

/** Plain output: a block at most this often while only bytes move (a phase change prints at once). */
export const PLAIN_EVERY_MS = 3000;
/** A terminal's block is redrawn this often, so elapsed time and ETA tick between status writes. */
const TTY_EVERY_MS = 1000;
/**
 * A watch asks the API server to end it after this long, then the tasks are re-listed: a stream a proxy
 * or load balancer cut silently cannot leave the command waiting forever on events that never come.
 */
const WATCH_WINDOW_S = 60;
/** Watch streams that may break in a row (each followed by a fresh list) before watch gives up with the error. */
const MAX_BROKEN_STREAMS = 5;
/** The pause before listing again after a broken stream: not a tight loop against an API server that is down. */
const BROKEN_STREAM_PAUSE_MS = 1000;

/** Seconds a task has run: from its start (or creation) to its end (or now). */
export function elapsedSeconds(task: Pick<VMImportTask, 'metadata' | 'status'>, now: number): number {
  const from = Date.parse(task.status?.startedAt ?? task.metadata.creationTimestamp ?? '');
  const to = task.status?.completedAt ? Date.parse(task.status.completedAt) : now;
  return Number.isFinite(from) ? Math.max(0, (to - from) / 1000) : 0;
}

/** The block of lines for the watched tasks, in the order they were named. Pure. */
export function frame(names: readonly string[], tasks: ReadonlyMap<string, VMImportTask>, now: number): string[] {
  return names.flatMap((n) => {
    const t = tasks.get(n);
    return t ? renderTask(t, elapsedSeconds(t, now)) : [`${n}: not found`];
  });
}

/** The closing line of a task: its outcome, and which VMs failed with which reason. Pure. */
export function outcomeLine(task: VMImportTask): string {
  const vms = task.status?.vms ?? [];
  const failed = vms.filter((v) => v.phase === 'Failed');
  const n = task.spec.vms.length;
  if (allSucceeded(task)) return `${task.metadata.name}: all ${n} VM${n === 1 ? '' : 's'} imported`;
  return `${task.metadata.name}: ${failed.length} of ${n} VM${n === 1 ? '' : 's'} failed: ${failed.map((v) => `${v.name} (${v.reason ?? 'Failed'})`).join(', ')}; retry them with kubectl vmimport retry ${task.metadata.name}`;
}

export interface WatchOptions {
  client: KubeClient;
  namespace: string;
  names: string[];
  write: (s: string) => void;
  tty: boolean;
  timeoutMs?: number;
  now?: () => number;
}

export async function watchTasks(o: WatchOptions): Promise<number> {
  const now = o.now ?? Date.now;
  const tasks = new Map<string, VMImportTask>();
  const wanted = new Set(o.names);
  const deadline = o.timeoutMs !== undefined ? now() + o.timeoutMs : undefined;
  let drawn = 0;
  let plain: { key: string; text: string; at: number } | undefined;
  let brokenStreams = 0;
  const done = (): boolean => o.names.every((n) => tasks.has(n) && finished(tasks.get(n)!));

  const draw = (force = false): void => {
    const lines = frame(o.names, tasks, now());
    if (o.tty) {
      o.write(redraw(drawn, lines));
      drawn = lines.length;
      return;
    }
    const key = o.names.map((n) => `${n}:${phaseKey(tasks.get(n) ?? {})}`).join(';');
    const text = lines.join('\n');
    if (force ? plain?.text !== text : shouldPrintPlain(plain, key, text, now(), PLAIN_EVERY_MS)) {
      const first = o.names.map((n) => tasks.get(n)).find((t) => t);
      o.write(`[${formatDuration(first ? elapsedSeconds(first, now()) : 0)}]\n${text}\n`);
      plain = { key, text, at: now() };
    }
  };

  // The ticker starts with the first list: before it, there is nothing to draw, and a frame drawn then
  // read "not found" for a task that existed (its plugin still starting on a loaded machine).
  let ticker: NodeJS.Timeout | undefined;
  try {
    for (;;) {
      const list = await o.client.list(GVRs.VMImportTask, o.namespace);
      brokenStreams = 0;
      for (const t of list.items) {
        const name = t.metadata?.name;
        if (name && wanted.has(name)) tasks.set(name, t as unknown as VMImportTask);
      }
      const missing = o.names.filter((n) => !tasks.has(n));
      if (missing.length) {
        throw new PluginError(`vmimporttasks.forklift.cozystack.io ${missing.map((m) => `"${m}"`).join(', ')} not found in namespace ${o.namespace}`, `list the tasks with kubectl get vmimporttasks -n ${o.namespace}`);
      }
      draw();
      ticker ??= setInterval(() => draw(), o.tty ? TTY_EVERY_MS : 500);
      if (done()) break;
      const ac = new AbortController();
      let timer: NodeJS.Timeout | undefined;
      if (deadline !== undefined) timer = setTimeout(() => ac.abort(), Math.max(0, deadline - now()));
      let deleted: string | undefined;
      try {
        await o.client.watch(
          GVRs.VMImportTask,
          o.namespace,
          { resourceVersion: list.metadata.resourceVersion, timeoutSeconds: WATCH_WINDOW_S },
          (type, obj) => {
            const name = obj.metadata?.name;
            if (!name || !wanted.has(name)) return;
            if (type === 'DELETED') {
              deleted = name;
              ac.abort();
              return;
            }
            if (type !== 'ADDED' && type !== 'MODIFIED') return;
            tasks.set(name, obj as unknown as VMImportTask);
            draw();
            if (done()) ac.abort();
          },
          ac.signal,
        );
      } catch (e) {
        // 410 Gone: the list's version is too old to watch from; list again. A broken stream (a proxy
        // restarting, a network blip) is listed again too, after a pause, a few times in a row at most; so
        // is a watch answered a bare 404 (isNotServed: an API server just restarted serves custom resources
        // only once its CRD informer has synced), which says nothing about the tasks.
        const broken = e instanceof ApiError && (e.code === 0 || e.code >= 500 || isNotServed(e));
        if (!isGone(e) && !isNotFound(e) && !(broken && ++brokenStreams <= MAX_BROKEN_STREAMS)) throw e;
        if (broken) await new Promise((r) => setTimeout(r, BROKEN_STREAM_PAUSE_MS));
      } finally {
        clearTimeout(timer);
      }
      if (deleted) throw new PluginError(`vmimporttask ${deleted} was deleted while it was watched`);
      if (done()) break;
      if (deadline !== undefined && now() >= deadline) {
        draw(true);
        o.write(`timed out after ${formatDuration(o.timeoutMs! / 1000)}: ${o.names.filter((n) => !finished(tasks.get(n)!)).join(', ')} still running\n`);
        return 1;
      }
    }
  } finally {
    clearInterval(ticker);
  }
  draw(true);
  for (const n of o.names) o.write(`${outcomeLine(tasks.get(n)!)}\n`);
  return o.names.every((n) => allSucceeded(tasks.get(n)!)) ? 0 : 1;
}
