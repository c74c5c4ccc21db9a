import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CredentialsRejection, VMImportSource } from '../../api/types.ts';
import { CREDENTIALS_RETRY_BASE_MS, CREDENTIALS_RETRY_MAX_MS, credentialsBackoffMs, heldBack, recordRejection, retryNote, withRetryNote } from './credentials.ts';

const src = (generation: number, credentialsRejected?: CredentialsRejection): VMImportSource => ({
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportSource',
  metadata: { name: 's', namespace: 'n', generation },
  spec: { type: 'vsphere', url: 'https://vc/sdk', credentials: { username: 'u@vsphere.local', password: 'p', insecureSkipVerify: true } },
  ...(credentialsRejected ? { status: { credentialsRejected } } : {}),
});
const now = new Date('2026-01-01T00:00:00Z');

test('a first refusal holds the same credentials back for the base wait, and each further refusal of that spec doubles it up to the cap', () => {
  const r1 = recordRejection(src(3), now);
  assert.deepEqual(r1, { generation: 3, attempts: 1, retryAfter: new Date(now.getTime() + CREDENTIALS_RETRY_BASE_MS).toISOString() });
  const r2 = recordRejection(src(3, r1), now);
  assert.equal(r2.attempts, 2);
  assert.equal(Date.parse(r2.retryAfter) - now.getTime(), 2 * CREDENTIALS_RETRY_BASE_MS);
  assert.equal(credentialsBackoffMs(50), CREDENTIALS_RETRY_MAX_MS);
});

test('refused credentials are held back until retryAfter, and not at all once the spec changed', () => {
  const r = recordRejection(src(3), now);
  assert.deepEqual(heldBack(src(3, r), new Date(now.getTime() + 60_000)), r);
  assert.equal(heldBack(src(4, r), new Date(now.getTime() + 60_000)), undefined, 'a new generation is a new attempt');
  assert.equal(heldBack(src(3, r), new Date(Date.parse(r.retryAfter))), undefined, 'the wait is over');
  assert.equal(heldBack(src(3), now), undefined);
});

test('a refusal after a spec change starts the count again', () => {
  const r = recordRejection(src(3, { generation: 2, attempts: 5, retryAfter: now.toISOString() }), now);
  assert.equal(r.attempts, 1);
});

test('the status note names both ways out: correct the spec, or the time of the next attempt', () => {
  const r = recordRejection(src(1), now);
  assert.match(retryNote(r), /spec changes/);
  assert.ok(retryNote(r).includes(r.retryAfter));
});

test('a refusal without a full stop and the note on the next attempt read as two sentences', () => {
  const r = { generation: 1, attempts: 1, retryAfter: '2026-01-01T00:15:00.000Z' };
  assert.match(withRetryNote('Invalid credentials', r), /^Invalid credentials\. These credentials are not presented again/);
  assert.match(withRetryNote('login refused.', r), /^login refused\. These/);
  assert.doesNotMatch(withRetryNote('Invalid credentials ', r), /credentials {2}|\.\./);
});
