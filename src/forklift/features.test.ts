import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../runtime/kube.ts';
import { REQUIRED_PLAN_FIELDS, forkliftTooOldMessage, missingPlanFields } from './features.ts';

const crd = (specProps: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}): KubeObject => ({
  metadata: { name: 'plans.forklift.konveyor.io' },
  spec: { versions: [{ name: 'v1beta1', served: true, schema: { openAPIV3Schema: { properties: { spec: { type: 'object', ...(specProps ? { properties: specProps } : {}), ...extra } } } } }] },
});
const all = Object.fromEntries(REQUIRED_PLAN_FIELDS.map((f) => [f, { type: 'boolean' }]));

test('a Plan CRD declaring every field the controller relies on is not too old', () => {
  assert.deepEqual(missingPlanFields(crd({ ...all, vms: { type: 'array' } })), []);
});

test('a Forklift 2.9-style Plan CRD lacks targetPowerState and deleteVmOnFailMigration, named in order', () => {
  assert.deepEqual(missingPlanFields(crd({ skipGuestConversion: { type: 'boolean' }, useCompatibilityMode: { type: 'boolean' } })), ['targetPowerState', 'deleteVmOnFailMigration']);
  const msg = forkliftTooOldMessage(['targetPowerState', 'deleteVmOnFailMigration']);
  assert.match(msg, /targetPowerState, deleteVmOnFailMigration/);
  assert.match(msg, /Forklift 2\.10 or later/);
});

test('no CRD or no served v1beta1 is "unknown", and a spec that keeps unknown fields prunes nothing', () => {
  assert.equal(missingPlanFields(undefined), undefined);
  assert.equal(missingPlanFields({ metadata: {}, spec: { versions: [{ name: 'v1beta1', served: false }] } }), undefined);
  assert.deepEqual(missingPlanFields(crd(undefined, { 'x-kubernetes-preserve-unknown-fields': true })), []);
});
