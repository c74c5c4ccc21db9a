import { test } from 'node:test';
import assert from 'node:assert/strict';
import { conditionsEqual, setCondition, statusMergePatch } from '../../../src/runtime/status.ts';

const t0 = new Date('2026-01-01T00:00:00Z');
const t1 = new Date('2026-01-01T00:05:00Z');

test('lastTransitionTime is set when a condition first appears', () => {
  const c = setCondition([], { type: 'Ready', status: 'False', reason: 'Connecting', message: 'm' }, t0, 3);
  assert.deepEqual(c, [{ type: 'Ready', status: 'False', reason: 'Connecting', message: 'm', lastTransitionTime: '2026-01-01T00:00:00Z', observedGeneration: 3 }]);
});

test('a reason or message change without a status flip keeps lastTransitionTime but updates observedGeneration', () => {
  const a = setCondition([], { type: 'Ready', status: 'False', reason: 'Connecting', message: 'm' }, t0, 1);
  const b = setCondition(a, { type: 'Ready', status: 'False', reason: 'AuthenticationFailed', message: 'n' }, t1, 2);
  assert.equal(b[0]!.lastTransitionTime, '2026-01-01T00:00:00Z');
  assert.equal(b[0]!.reason, 'AuthenticationFailed');
  assert.equal(b[0]!.observedGeneration, 2);
});

test('a status flip moves lastTransitionTime; other conditions are kept', () => {
  const a = [...setCondition([], { type: 'Ready', status: 'False', reason: 'X', message: '' }, t0, 1), { type: 'Other', status: 'True' as const, reason: 'Y', message: '', lastTransitionTime: 'z' }];
  const b = setCondition(a, { type: 'Ready', status: 'True', reason: 'Connected', message: '' }, t1, 1);
  assert.equal(b[0]!.lastTransitionTime, '2026-01-01T00:05:00Z');
  assert.equal(b[1]!.type, 'Other');
  assert.equal(a[0]!.status, 'False', 'input not mutated');
});

test('conditionsEqual ignores order and notices any field change', () => {
  const a = setCondition(setCondition([], { type: 'A', status: 'True', reason: 'r', message: '' }, t0, 1), { type: 'B', status: 'False', reason: 'r', message: '' }, t0, 1);
  assert.ok(conditionsEqual(a, [...a].reverse()));
  assert.ok(!conditionsEqual(a, setCondition(a, { type: 'A', status: 'True', reason: 'r', message: 'x' }, t0, 1)));
  assert.ok(!conditionsEqual(a, setCondition(a, { type: 'A', status: 'True', reason: 'r', message: '' }, t0, 2)));
});

test('the status patch is empty when nothing changed and nulls removed fields', () => {
  const s = { observedGeneration: 1, conditions: [{ type: 'Ready', status: 'True' }], vmCount: 3 };
  assert.equal(statusMergePatch(s, structuredClone(s)), undefined);
  assert.deepEqual(statusMergePatch(s, { observedGeneration: 2, conditions: s.conditions }), { observedGeneration: 2, vmCount: null });
  assert.deepEqual(statusMergePatch(undefined, { observedGeneration: 1 }), { observedGeneration: 1 });
});
