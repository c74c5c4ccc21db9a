import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../runtime/kube.ts';
import { FORKLIFT_SECRET_WEBHOOK_TIMEOUT_MS, PROVIDER_SECRET_WRITE_DEADLINE_MS, WEBHOOK_TIMEOUT_RETRY_MAX_MS, WebhookTimeoutBackoff, isWebhookTimeout, webhookTimeoutBackoffMs, webhookTimeoutMessage } from './webhook-timeout.ts';

// The API server's words when Forklift's Secret webhook does not answer within its timeoutSeconds.
const TIMEOUT = 'Internal error occurred: failed calling webhook "secrets.forklift.konveyor": failed to call webhook: Post "https://forklift-api.konveyor-forklift.svc:443/secret-validate?timeout=30s": context deadline exceeded';

test('a Secret write failed by the webhook\'s timeout is told apart from a denial and from other errors', () => {
  assert.equal(isWebhookTimeout(new ApiError(500, 'InternalError', TIMEOUT)), true);
  assert.equal(isWebhookTimeout(new ApiError(403, 'Forbidden', 'admission webhook "secrets.forklift.konveyor" denied the request: Invalid credentials')), false);
  assert.equal(isWebhookTimeout(new ApiError(500, 'InternalError', 'etcdserver: request timed out')), false, 'not a webhook');
  assert.equal(isWebhookTimeout(new Error(TIMEOUT)), false);
});

test('after a timeout the write waits, the wait doubling up to 30 min, and the source says vCenter is not reachable from the cluster', () => {
  const b = new WebhookTimeoutBackoff();
  const t0 = new Date('2026-01-01T00:00:00Z');
  const first = b.record('u', 1, t0, (at) => webhookTimeoutMessage('vc.example.com', at, TIMEOUT));
  assert.equal(first.retryAfterMs, 60_000);
  assert.match(first.message, /^vCenter is not reachable from the cluster/);
  assert.match(first.message, /vc\.example\.com:443/);
  assert.match(first.message, /Next attempt at 2026-01-01T00:01:00\.000Z/);
  assert.deepEqual(b.held('u', 1, new Date(t0.getTime() + 30_000)), { message: first.message, retryAfterMs: 30_000 });
  assert.equal(b.held('u', 1, new Date(t0.getTime() + 60_000)), undefined, 'due again');
  assert.equal(b.record('u', 1, t0, () => '').retryAfterMs, 120_000);
  assert.equal(webhookTimeoutBackoffMs(20), WEBHOOK_TIMEOUT_RETRY_MAX_MS);
  assert.equal(b.held('u', 2, t0), undefined, 'a changed spec (the tenant fixed the URL) is tried at once');
  assert.equal(b.record('u', 2, t0, () => '').retryAfterMs, 60_000, 'and starts its own backoff');
  b.clear('u');
  assert.equal(b.held('u', 1, t0), undefined);
  assert.equal(b.size, 0);
});

test('a write of the credentials Secret outlasts Forklift\'s Secret webhook, so the API server\'s verdict arrives before our client gives up', () => {
  // Upstream's relationship (kubev2v/forklift v2.11.5 and v2.12.5): the webhook's timeoutSeconds is 30, its
  // login's ConnectionTimeout 30 s; the API server's default --request-timeout is 60 s.
  assert.equal(FORKLIFT_SECRET_WEBHOOK_TIMEOUT_MS, 30_000);
  assert.ok(PROVIDER_SECRET_WRITE_DEADLINE_MS >= FORKLIFT_SECRET_WEBHOOK_TIMEOUT_MS + 5_000, 'room for the API server to answer after the webhook call ended');
  assert.ok(PROVIDER_SECRET_WRITE_DEADLINE_MS < 60_000, 'under the API server\'s own request timeout');
});
