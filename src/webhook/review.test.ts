import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildResponse, isWellFormedResponse, parseReview, verdict } from './review.ts';

test('a well-formed review parses; garbage yields a message and whatever uid could be echoed', () => {
  const ok = parseReview({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u1', kind: { group: 'g', version: 'v', kind: 'K' }, operation: 'CREATE', object: {} } });
  assert.equal(ok.ok, true);
  const bad = parseReview({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u2', operation: 'EXPLODE' } });
  assert.equal(bad.ok, false);
  assert.ok(!bad.ok && bad.uid === 'u2' && bad.error.startsWith('malformed AdmissionReview:'));
  for (const g of [null, 1, 'x', [], {}, { request: 5 }]) assert.equal(parseReview(g).ok, false);
});

test('responses echo the uid, deny with a message and carry warnings', () => {
  const d = buildResponse('admission.k8s.io/v1', 'u', verdict(['spec.x: bad'], ['w']));
  assert.deepEqual(d, { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: 'u', allowed: false, status: { code: 403, reason: 'Forbidden', message: 'spec.x: bad' }, warnings: ['w'] } });
  assert.equal(isWellFormedResponse(d), true);
  assert.equal(isWellFormedResponse({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: 'u', allowed: false } }), false, 'a denial without a message is not well-formed');
});
