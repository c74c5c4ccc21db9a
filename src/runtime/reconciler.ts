// The contract between the manager (src/runtime/manager.ts) and a reconciler (src/controllers/*).
// A reconciler is a checkpoint machine: read the object from the cache, observe the world afresh (caches
// that are never behind our own writes, see expectations.ts), take the one idempotent step that closes
// the gap, record evidence and phase in the same status write, return when to look again.
import type { Logger } from 'pino';
import type { GVR } from './gvr.ts';
import type { KubeClient, KubeObject } from './kube.ts';

export interface ObjectKey {
  namespace: string;
  name: string;
}

export function keyString(k: ObjectKey): string {
  return k.namespace ? `${k.namespace}/${k.name}` : k.name;
}

export function parseKey(s: string): ObjectKey {
  const i = s.indexOf('/');
  return i < 0 ? { namespace: '', name: s } : { namespace: s.slice(0, i), name: s.slice(i + 1) };
}

/** Read-only view of an informer's local store. */
export interface Cache<T extends KubeObject = KubeObject> {
  get(namespace: string | undefined, name: string): T | undefined;
  list(namespace?: string, labelSelector?: Record<string, string>): T[];
  hasSynced(): boolean;
  /**
   * The server-side selector the cache was filled with, when there is one: then an object missing from
   * the cache may still exist (it lacks the labels), and only the API server can say.
   */
  readonly labelSelector?: string;
}

export interface Watch {
  gvr: GVR;
  /**
   * Maps a changed object to the primary keys to enqueue (owner reference, labels…), resolving through
   * the caches' indexes (`cache` reads another kind's cache; undefined until it has synced), never through
   * memory a reconcile filled: after a restart, the first event already maps.
   */
  map: (obj: KubeObject, cache: (gvr: GVR) => Cache | undefined) => ObjectKey[];
  /** Restrict the watch to objects carrying these labels (server-side selector). */
  labelSelector?: string;
  /**
   * Which of the selected objects the cache holds; the others are dropped on arrival and by the manager's
   * periodic sweep (their changes still wake the reconciler). For objects needed only while something
   * else lasts — a task's outputs while the task runs — that a label selector cannot tell apart. Must
   * answer true whenever unsure: a dropped object reads as absent. `cache` reads another kind's cache
   * (undefined until it has synced).
   */
  keep?: (obj: KubeObject, cache: (gvr: GVR) => Cache | undefined) => boolean;
}

export interface Result {
  /** Look again after this long even if nothing changes (a safety net, not the main signal). */
  requeueAfterMs?: number;
}

export interface EventRecorder {
  /** Records a core/v1 Event on `obj`. Never pass secret material in `message`. */
  event(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void;
}

export interface ReconcileContext {
  client: KubeClient;
  /** The informer cache of a watched kind, undefined while the kind is not installed or not synced. */
  cache<T extends KubeObject = KubeObject>(gvr: GVR): Cache<T> | undefined;
  /** True when the kind's CRD/API is currently served. */
  installed(gvr: GVR): boolean;
  /**
   * The CRD serving an installed kind as discovery caches it (names, served versions, each version's spec
   * field names: runtime/discovery.ts slimCRD); undefined when no CRD serves it.
   */
  definition(gvr: GVR): KubeObject | undefined;
  log: Logger;
  events: EventRecorder;
  now(): Date;
}

export interface Reconciler {
  /** Controller name (logs, metrics, field manager suffix). */
  name: string;
  primary: GVR;
  watches: Watch[];
  reconcile(key: ObjectKey, ctx: ReconcileContext): Promise<Result>;
  /**
   * When reconciles of an object keep failing (see faults.ts), the manager writes a `Degraded` condition
   * into the primary object's status.conditions, and clears it on the next success. The primary kind must
   * have a status subresource with a conditions list.
   */
  faultConditions?: boolean;
  /** Sizes of the reconciler's in-memory maps (the soak test and benchmark check they stay bounded). */
  memory?: () => Record<string, number>;
}

/**
 * An error the user must fix by changing the spec: retrying cannot help. The reconciler records it in
 * status (reason + message) and stops requeueing. Everything else is retried with per-key backoff.
 */
export class TerminalError extends Error {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super(message);
    this.name = 'TerminalError';
    this.reason = reason;
  }
}
