// Conditions following the Kubernetes API conventions, and a status writer that only writes when
// something changed, through the status subresource, by merge patch (never a full-object update of a
// spec we do not own).
import type { Condition } from '../api/types.ts';
import type { GVR } from './gvr.ts';
import type { KubeClient, KubeObject } from './kube.ts';

export type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'> & { lastTransitionTime?: string; observedGeneration?: number };

/**
 * Returns a new list with `c` set. `lastTransitionTime` moves only when the status flips (a reason or
 * message change alone keeps it); `observedGeneration` is always the given generation. Pure.
 */
export function setCondition(conditions: readonly Condition[] | undefined, c: ConditionInput, now: Date, generation?: number): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((x) => x.type === c.type);
  const prev = i >= 0 ? list[i] : undefined;
  const next: Condition = {
    type: c.type,
    status: c.status,
    reason: c.reason,
    message: c.message,
    lastTransitionTime: prev && prev.status === c.status ? prev.lastTransitionTime : (c.lastTransitionTime ?? now.toISOString().replace(/\.\d{3}Z$/, 'Z')),
    ...(generation !== undefined ? { observedGeneration: generation } : c.observedGeneration !== undefined ? { observedGeneration: c.observedGeneration } : {}),
  };
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

export function getCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Same conditions (order-insensitive, every field). Pure. */
export function conditionsEqual(a: readonly Condition[] | undefined, b: readonly Condition[] | undefined): boolean {
  const x = a ?? [];
  const y = b ?? [];
  if (x.length !== y.length) return false;
  return x.every((c) => {
    const d = y.find((e) => e.type === c.type);
    return !!d && c.status === d.status && c.reason === d.reason && c.message === d.message && c.lastTransitionTime === d.lastTransitionTime && c.observedGeneration === d.observedGeneration;
  });
}

/** Structural equality of JSON values (object key order ignored). Pure. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => jsonEqual(v, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => jsonEqual(ao[k], bo[k]));
}

/** The merge patch turning status `from` into `to` (removed top-level fields become null). Pure. */
export function statusMergePatch(from: Record<string, unknown> | undefined, to: Record<string, unknown>): Record<string, unknown> | undefined {
  const patch: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(to)) if (v !== undefined && !jsonEqual(from?.[k], v)) patch[k] = v;
  for (const k of Object.keys(from ?? {})) if (to[k] === undefined && from?.[k] !== undefined) patch[k] = null;
  return Object.keys(patch).length ? patch : undefined;
}

/**
 * Writes `status` onto `obj` through the status subresource when it differs from what `obj` carries.
 * Returns the object the API server answered with, or undefined when nothing needed writing.
 */
export async function patchStatus(client: KubeClient, gvr: GVR, obj: KubeObject, status: object, o: { precondition?: boolean } = {}): Promise<KubeObject | undefined> {
  const patch = statusMergePatch(obj.status as Record<string, unknown> | undefined, status as Record<string, unknown>);
  if (!patch) return undefined;
  // With `precondition`, the write holds only on the version it was computed from: a merge patch replaces
  // whole lists, so a status derived from a stale read would otherwise put back a condition someone else
  // (the manager's Degraded) changed since. A conflict is retried on a fresh read.
  const body = o.precondition && obj.metadata?.resourceVersion ? { metadata: { resourceVersion: obj.metadata.resourceVersion }, status: patch } : { status: patch };
  return await client.patch<KubeObject>(gvr, obj.metadata?.namespace, obj.metadata!.name!, body, 'merge', { subresource: 'status' });
}
