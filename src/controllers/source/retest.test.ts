import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ANNOTATION_RETEST } from '../../forklift/provider.ts';
import type { KubeObject } from '../../runtime/kube.ts';
import { RETEST_AFTER_MS, retestDue } from './retest.ts';

const now = new Date('2026-06-01T12:00:00Z');
const ago = (ms: number): string => new Date(now.getTime() - ms).toISOString();
const provider = (...types: string[]): KubeObject => ({ metadata: { name: 'p' }, status: { conditions: types.map((type) => ({ type, status: 'True' })) } }) as KubeObject;
const secret = (o: { created?: string; retest?: string } = {}): KubeObject => ({ metadata: { name: 's', creationTimestamp: o.created ?? ago(24 * 3600_000), ...(o.retest ? { annotations: { [ANNOTATION_RETEST]: o.retest } } : {}) } }) as KubeObject;

test('a Provider Forklift refused the credentials for gets its re-test through the Secret, not through an annotation it filters', () => {
  assert.equal(retestDue(provider('ConnectionAuthFailed'), secret(), now), now.toISOString());
  assert.equal(retestDue(provider('ConnectionAuthFailed'), secret({ retest: ago(RETEST_AFTER_MS + 1000) }), now), now.toISOString());
});

test('no re-test sooner than the lockout-safe wait after the last one, or after the Secret was written', () => {
  assert.equal(retestDue(provider('ConnectionAuthFailed'), secret({ retest: ago(RETEST_AFTER_MS - 1000) }), now), undefined);
  assert.equal(retestDue(provider('ConnectionAuthFailed'), secret({ created: ago(60_000) }), now), undefined);
});

test('a Provider that is not refused, or a Secret not written yet, asks for nothing', () => {
  assert.equal(retestDue(provider('Ready', 'ConnectionTestSucceeded'), secret(), now), undefined);
  assert.equal(retestDue(undefined, secret(), now), undefined);
  assert.equal(retestDue(provider('ConnectionAuthFailed'), undefined, now), undefined);
});
