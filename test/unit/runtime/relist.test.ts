// The informer's list and watch policy (client-go's reflector): pure decisions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { afterWatchError, relistResourceVersion } from '../../../src/runtime/informer.ts';
import { ApiError, ConnectionError, DeadlineError, classifyFailure, errorOfAnswer, isExpired, isTooLargeResourceVersion } from '../../../src/runtime/kube.ts';

/** The Status kube-apiserver answers a list or watch at a resourceVersion it does not have yet (k8s.io/apiserver storage/errors.go). */
const TOO_LARGE = JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'Timeout: Too large resource version: 900099999, current: 75601849', reason: 'Timeout', details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 }, code: 504 });

test('the first list is served from the watch cache, a relist is not older than the last version, and an unavailable version falls back to a consistent read', () => {
  assert.equal(relistResourceVersion({ lastSyncResourceVersion: undefined, unavailable: false }), '0');
  assert.equal(relistResourceVersion({ lastSyncResourceVersion: '1234', unavailable: false }), '1234');
  assert.equal(relistResourceVersion({ lastSyncResourceVersion: '1234', unavailable: true }), '');
  assert.equal(relistResourceVersion({ lastSyncResourceVersion: undefined, unavailable: true }), '');
});

test('"too large resource version" is recognised by its cause and, from API servers before 1.18.5, by its message alone', () => {
  assert.ok(isTooLargeResourceVersion(errorOfAnswer(504, TOO_LARGE)));
  assert.ok(isTooLargeResourceVersion(new ApiError(504, 'Timeout', 'Timeout: Too large resource version: 9, current: 5')));
  assert.ok(!isTooLargeResourceVersion(new ApiError(504, 'Timeout', 'Timeout: request did not complete within 60s')));
  assert.ok(!isTooLargeResourceVersion(new ApiError(410, 'Expired', 'too old resource version')));
  assert.ok(isExpired(new ApiError(410, 'Gone', 'too old resource version: 1 (5)')));
  assert.ok(isExpired(new ApiError(500, 'Expired', 'continue token expired')));
});

test('a watch is retried from the same version only after a broken connection or a 429; an expired one relists at once; every other error relists', () => {
  assert.equal(afterWatchError(new ConnectionError('connect ECONNREFUSED 127.0.0.1:6443')), 'rewatch');
  assert.equal(afterWatchError(new ApiError(429, 'TooManyRequests', 'slow down')), 'rewatch');
  assert.equal(afterWatchError(new ApiError(410, 'Gone', 'too old resource version')), 'relist-now');
  assert.equal(afterWatchError(errorOfAnswer(504, TOO_LARGE)), 'relist');
  assert.equal(afterWatchError(new ApiError(500, 'InternalError', 'etcd leader changed')), 'relist');
  assert.equal(afterWatchError(new ApiError(403, 'Forbidden', 'no')), 'relist');
  assert.equal(afterWatchError(new DeadlineError('cancelled')), 'relist');
});

test('a request is retried only when the same request can succeed: never at a too large resourceVersion, never past its deadline', () => {
  assert.equal(classifyFailure('GET', errorOfAnswer(504, TOO_LARGE), 0).kind, 'terminal');
  assert.equal(classifyFailure('GET', new ApiError(504, 'Timeout', 'slow'), 0).kind, 'retry');
  assert.equal(classifyFailure('GET', new DeadlineError('request timed out after 1 ms'), 0).kind, 'terminal');
  assert.equal(classifyFailure('GET', new ConnectionError('socket hang up'), 0).kind, 'retry');
  assert.equal(classifyFailure('PATCH', new ConnectionError('socket hang up'), 0).kind, 'terminal', 'a write cut off may have been applied');
  const ra = classifyFailure('POST', errorOfAnswer(429, '{"kind":"Status","code":429,"reason":"TooManyRequests"}', '2'), 0);
  assert.deepEqual(ra.kind, 'retry');
  assert.ok(ra.kind === 'retry' && ra.afterMs >= 2_000, 'Retry-After is honoured');
  assert.equal(classifyFailure('GET', errorOfAnswer(429, '', '60'), 0).kind, 'terminal', 'a long Retry-After is left to the caller');
  assert.equal(classifyFailure('GET', new ApiError(503, 'ServiceUnavailable', 'x'), 3).kind, 'terminal', 'after MAX_RETRIES');
});
