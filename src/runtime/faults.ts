// Faults reach status: a reconcile that keeps failing for a reason the tenant cannot see (the API server
// answering 5xx/429/403, Forklift's inventory unreachable, a quota refusing a write) sets a `Degraded`
// condition on the object itself, naming what fails and since when, and clears it on the first success.
// Without it a tenant watches an object that silently stops moving while the controller backs off.
import { CONDITION_DEGRADED, DegradedReason } from '../api/conditions.ts';
import type { Condition } from '../api/types.ts';
import type { GVR } from './gvr.ts';
import { ApiError, isAlreadyExists, isConflict, isNotFound, type KubeClient, type KubeObject } from './kube.ts';
import { getCondition, setCondition } from './status.ts';

/**
 * Consecutive failures before the condition is written. One failure is often a conflict or a blip that
 * the first retry (5 ms later) clears; three in a row (~35 ms with the default backoff) is a fault that
 * persists, and is reported at once — within one backoff step of becoming one.
 */
export const FAULT_REPORT_AFTER_FAILURES = 3;

export interface Fault {
  /** When the first of the consecutive failures happened. */
  since: Date;
  attempts: number;
  reason: string;
  /** What fails, in words a tenant can act on or forward to the operator. */
  message: string;
  /** The condition was written (and must be cleared). */
  reported: boolean;
}

// The API server's words for a webhook it could not call (k8s.io/apiserver pkg/admission/plugin/webhook
// errors, ErrCallingWebhook: `failed calling webhook "<name>": …`). A webhook name is a DNS subdomain:
// at most 253 characters, so the match is bounded as well as linear.
const WEBHOOK_CALL_FAILED = /failed calling webhook "([a-z0-9.-]{1,253})"/;

/** The condition's reason and a sentence for an error. Pure. */
export function classify(e: unknown): { reason: string; message: string } {
  const msg = (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ').slice(0, 500);
  if (e instanceof ApiError) {
    if (e.code === 403 && /exceeded quota|quota/i.test(e.message)) return { reason: DegradedReason.QuotaExceeded, message: `a ResourceQuota refuses a write this controller needs: ${msg}` };
    // A webhook that intercepts the write and cannot be called (down, unreachable, timing out) under
    // failurePolicy Fail: the API server refuses with a 500 naming it (Cozystack's lineage webhook on every
    // claim, Secret and Service of a tenant namespace; Forklift's on its kinds). Nothing here can fix it.
    const hook = e.code >= 500 ? WEBHOOK_CALL_FAILED.exec(msg)?.[1] : undefined;
    if (hook) return { reason: DegradedReason.AdmissionWebhookUnavailable, message: `the admission webhook "${hook}" cannot be called, and the API server refuses every write it intercepts until it answers (a platform component; tell the operator): ${msg}` };
    if (e.code === 0) return { reason: DegradedReason.APIUnreachable, message: `the Kubernetes API server is unreachable: ${msg}` };
    return { reason: DegradedReason.APIError, message: `the Kubernetes API server answers ${e.code} ${e.reason}: ${msg}` };
  }
  if (e instanceof Error && e.name === 'InventoryError') return { reason: DegradedReason.InventoryUnavailable, message: `Forklift's inventory service cannot be read: ${msg}` };
  return { reason: DegradedReason.Error, message: msg };
}

/** Consecutive failures per object key; entries go when the object reconciles cleanly or is gone. */
export class FaultTracker {
  private readonly faults = new Map<string, Fault>();

  /** Records a failure; returns the fault when its condition should be written now. */
  failed(key: string, e: unknown, now: Date): Fault | undefined {
    // A conflict is optimistic concurrency doing its job (someone wrote first; the retry reads again),
    // never a fault to show: counted, it made a busy handoff flap Degraded.
    if (isConflict(e) || isAlreadyExists(e)) return undefined;
    const c = classify(e);
    const prev = this.faults.get(key);
    const f: Fault = prev ? { ...prev, attempts: prev.attempts + 1 } : { since: now, attempts: 1, reason: c.reason, message: c.message, reported: false };
    const changed = !!prev && (prev.reason !== c.reason || prev.message !== c.message);
    f.reason = c.reason;
    f.message = c.message;
    this.faults.set(key, f);
    // Written once when it becomes a fault, again only when what fails changes (not on every retry).
    return f.attempts >= FAULT_REPORT_AFTER_FAILURES && (!f.reported || changed) ? f : undefined;
  }

  /** A clean reconcile: returns the fault whose condition must be cleared, if one was written. */
  succeeded(key: string): Fault | undefined {
    const f = this.faults.get(key);
    this.faults.delete(key);
    return f?.reported ? f : undefined;
  }

  markReported(key: string, reported: boolean): void {
    const f = this.faults.get(key);
    if (f) f.reported = reported;
  }

  forget(key: string): void {
    this.faults.delete(key);
  }

  get(key: string): Fault | undefined {
    return this.faults.get(key);
  }

  size(): number {
    return this.faults.size;
  }
}

function iso(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The Degraded condition for a fault (True) or its recovery (False). Pure. */
export function degradedCondition(conditions: readonly Condition[] | undefined, f: Fault, recovered: boolean, now: Date): Condition[] {
  if (recovered) {
    return setCondition(conditions, { type: CONDITION_DEGRADED, status: 'False', reason: DegradedReason.Recovered, message: `recovered at ${iso(now)} after failing since ${iso(f.since)} (${f.reason})` }, now);
  }
  return setCondition(
    conditions,
    { type: CONDITION_DEGRADED, status: 'True', reason: f.reason, message: `failing since ${iso(f.since)} (${f.attempts} attempts, retrying with backoff): ${f.message}`, lastTransitionTime: iso(f.since) },
    now,
  );
}

/**
 * Writes the condition onto the object's status (read live, written with its resourceVersion). Returns
 * true when the status now says it (or the object is gone: nothing left to say it on), false when the
 * write failed — the API server may well be the fault; the next failure or success tries again.
 */
export async function writeDegraded(client: KubeClient, gvr: GVR, namespace: string, name: string, f: Fault, recovered: boolean, now: Date): Promise<boolean> {
  try {
    const obj = await client.get<KubeObject & { status?: { conditions?: Condition[] } }>(gvr, namespace || undefined, name);
    if (!obj) return true;
    const cur = getCondition(obj.status?.conditions, CONDITION_DEGRADED);
    // Nothing to clear: a reconciler's own status write already dropped it, or it was never there.
    if (recovered && cur?.status !== 'True') return true;
    const conditions = degradedCondition(obj.status?.conditions, f, recovered, now);
    await client.patch(gvr, namespace || undefined, name, { metadata: { resourceVersion: obj.metadata?.resourceVersion }, status: { conditions } }, 'merge', { subresource: 'status' });
    return true;
  } catch (e) {
    return isNotFound(e);
  }
}
