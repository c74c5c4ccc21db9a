import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../../src/runtime/kube.ts';
import { FAULT_REPORT_AFTER_FAILURES, FaultTracker, classify, degradedCondition } from '../../../src/runtime/faults.ts';
import { InventoryError } from '../../../src/forklift/inventory.ts';

test('a failure is named by what fails: the API server, its reachability, a quota, or Forklift\'s inventory', () => {
  assert.equal(classify(new ApiError(503, 'ServiceUnavailable', 'etcd is down')).reason, 'APIError');
  assert.match(classify(new ApiError(503, 'ServiceUnavailable', 'etcd is down')).message, /answers 503 ServiceUnavailable: etcd is down/);
  assert.equal(classify(new ApiError(0, 'ConnectionError', 'connect ECONNREFUSED')).reason, 'APIUnreachable');
  assert.equal(classify(new ApiError(403, 'Forbidden', 'persistentvolumeclaims "vm-disk-a" is forbidden: exceeded quota: q, requested: requests.storage=10Gi')).reason, 'QuotaExceeded');
  assert.equal(classify(new ApiError(403, 'Forbidden', 'cannot create resource')).reason, 'APIError');
  assert.equal(classify(new InventoryError('Unreachable', 0, 'connect ECONNREFUSED 10.0.0.1:443')).reason, 'InventoryUnavailable');
});

test('a write refused because an admission webhook cannot be called names the webhook, as a platform fault', () => {
  const down = classify(new ApiError(500, 'InternalError', 'Internal error occurred: failed calling webhook "lineage.cozystack.io": Post "https://lineage-controller-webhook.cozy-system.svc:443/mutate-lineage?timeout=10s": EOF'));
  assert.equal(down.reason, 'AdmissionWebhookUnavailable');
  assert.match(down.message, /^the admission webhook "lineage\.cozystack\.io" cannot be called, and the API server refuses every write it intercepts until it answers/);
  // A webhook that answered and denied is the webhook's verdict, not its absence.
  assert.equal(classify(new ApiError(400, 'BadRequest', 'admission webhook "plans.forklift.konveyor" denied the request: no')).reason, 'APIError');
  // A 5xx without a webhook's name stays the API server's error.
  assert.equal(classify(new ApiError(500, 'InternalError', 'etcdserver: request timed out')).reason, 'APIError');
});

test('a fault is reported once it persists, again only when what fails changes, and cleared only when it was reported', () => {
  const t = new FaultTracker();
  const e = new ApiError(500, 'InternalError', 'boom');
  const t0 = new Date('2026-01-01T10:00:00Z');
  for (let i = 1; i < FAULT_REPORT_AFTER_FAILURES; i++) assert.equal(t.failed('ns/a', e, t0), undefined, 'a blip is not a fault');
  const f = t.failed('ns/a', e, new Date('2026-01-01T10:00:01Z'));
  assert.ok(f);
  assert.equal(f.since.toISOString(), t0.toISOString(), 'since the first of the consecutive failures');
  assert.equal(f.attempts, FAULT_REPORT_AFTER_FAILURES);
  t.markReported('ns/a', true);
  assert.equal(t.failed('ns/a', e, new Date()), undefined, 'not rewritten on every retry');
  assert.equal(t.failed('ns/a', new ApiError(403, 'Forbidden', 'exceeded quota: q'), new Date())?.reason, 'QuotaExceeded', 'rewritten when the cause changes');
  assert.ok(t.succeeded('ns/a'), 'a reported fault is cleared');
  assert.equal(t.size(), 0);
  t.failed('ns/b', e, t0);
  assert.equal(t.succeeded('ns/b'), undefined, 'an unreported blip leaves nothing to clear');
  assert.equal(t.size(), 0, 'and nothing behind');
});

test('the Degraded condition says since when, and its transition time moves only when it flips', () => {
  const since = new Date('2026-01-01T10:00:00Z');
  const f = { since, attempts: 4, reason: 'APIError', message: 'the Kubernetes API server answers 500 InternalError: boom', reported: false };
  const on = degradedCondition([{ type: 'Ready', status: 'False', reason: 'Transferring', message: '', lastTransitionTime: '2026-01-01T09:00:00Z' }], f, false, new Date('2026-01-01T10:00:05Z'));
  const d = on.find((c) => c.type === 'Degraded')!;
  assert.equal(d.status, 'True');
  assert.equal(d.reason, 'APIError');
  assert.match(d.message, /failing since 2026-01-01T10:00:00Z \(4 attempts, retrying with backoff\): .*500 InternalError/);
  assert.equal(d.lastTransitionTime, '2026-01-01T10:00:00Z');
  assert.equal(on.find((c) => c.type === 'Ready')?.reason, 'Transferring', 'other conditions untouched');
  const again = degradedCondition(on, { ...f, attempts: 9, reason: 'QuotaExceeded' }, false, new Date('2026-01-01T10:01:00Z'));
  assert.equal(again.find((c) => c.type === 'Degraded')?.lastTransitionTime, '2026-01-01T10:00:00Z', 'no flip, no new transition time');
  const off = degradedCondition(again, f, true, new Date('2026-01-01T10:02:00Z'));
  const cleared = off.find((c) => c.type === 'Degraded')!;
  assert.equal(cleared.status, 'False');
  assert.equal(cleared.reason, 'Recovered');
  assert.equal(cleared.lastTransitionTime, '2026-01-01T10:02:00Z');
});

test('conflicts are optimistic concurrency at work, never counted as a fault', () => {
  const t = new FaultTracker();
  for (let i = 0; i < 10; i++) assert.equal(t.failed('ns/a', new ApiError(409, 'Conflict', 'the object has been modified'), new Date()), undefined);
  assert.equal(t.size(), 0);
});
