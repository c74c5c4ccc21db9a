import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crdServes, servedAs } from '../../../src/runtime/discovery.ts';
import { GVRs } from '../../../src/runtime/gvr.ts';
import { Store, matchesLabels } from '../../../src/runtime/informer.ts';

const crd = (over: Record<string, unknown> = {}, established = 'True') => ({
  metadata: { name: 'providers.forklift.konveyor.io' },
  spec: { group: 'forklift.konveyor.io', names: { plural: 'providers' }, versions: [{ name: 'v1beta1', served: true }] },
  status: { conditions: [{ type: 'Established', status: established }] },
  ...over,
});

test('an optional kind counts as installed only when its CRD is Established and serves the version', () => {
  assert.ok(crdServes(crd(), GVRs.Provider));
  assert.ok(!crdServes(crd({}, 'False'), GVRs.Provider), 'not yet Established');
  assert.ok(!crdServes(crd(), GVRs.Host), 'another kind');
  assert.ok(!crdServes(crd({ spec: { group: 'forklift.konveyor.io', names: { plural: 'providers' }, versions: [{ name: 'v1alpha1', served: true }] } }), GVRs.Provider), 'another version');
  assert.ok(!crdServes(crd({ metadata: { name: 'x', deletionTimestamp: '2026-01-01T00:00:00Z' } }), GVRs.Provider), 'being deleted');
});

test('the informer store answers get and list by namespace and labels', () => {
  const s = new Store();
  s.items.set('a/x', { metadata: { name: 'x', namespace: 'a', labels: { l: '1' } } });
  s.items.set('b/y', { metadata: { name: 'y', namespace: 'b', labels: { l: '2' } } });
  assert.equal(s.get('a', 'x')?.metadata?.name, 'x');
  assert.equal(s.get('b', 'x'), undefined);
  assert.equal(s.list().length, 2);
  assert.equal(s.list('a').length, 1);
  assert.deepEqual(s.list(undefined, { l: '2' }).map((o) => o.metadata?.name), ['y']);
  assert.ok(matchesLabels({ metadata: {} }, undefined));
  assert.ok(!matchesLabels({ metadata: {} }, { l: '1' }));
  assert.equal(s.hasSynced(), false);
});

test('an aggregated kind is watched only where its API lists it with list and watch; listed without them it is polled', () => {
  const doc = (verbs: string[]) => ({ resources: [{ name: 'vmdisks', verbs }, { name: 'vmdisks/status', verbs: ['get'] }] });
  // What Cozystack's aggregated API lists (cozystack/cozystack@v1.6.2:pkg/registry/apps/application/rest.go implements rest.Watcher).
  assert.equal(servedAs(doc(['create', 'delete', 'get', 'list', 'patch', 'update', 'watch']), GVRs.VMDisk), 'watch');
  assert.equal(servedAs(doc(['create', 'delete', 'get', 'list', 'patch', 'update']), GVRs.VMDisk), 'poll');
  assert.equal(servedAs(doc(['get', 'watch']), GVRs.VMDisk), 'poll', 'a watch without list cannot fill a cache');
  assert.equal(servedAs(doc(['get', 'list', 'watch']), GVRs.VMInstance), 'absent');
  assert.equal(servedAs(undefined, GVRs.VMDisk), 'absent', 'the group is not served');
});

test("discovery keeps of a CRD only what says whether it serves a kind and its spec's field names, none of its schema", async () => {
  const { slimCRD, crdName, apiServiceName, apiServiceAvailable } = await import('../../../src/runtime/discovery.ts');
  const schema = { openAPIV3Schema: { type: 'object', properties: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`f${i}`, { type: 'string', description: 'x'.repeat(500) }])) } };
  const full = crd({ spec: { group: 'forklift.konveyor.io', names: { plural: 'providers', kind: 'Provider' }, versions: [{ name: 'v1beta1', served: true, storage: true, schema }] } });
  const slim = slimCRD(full);
  assert.ok(crdServes(slim as never, GVRs.Provider), 'still tells the kind is served');
  assert.ok(JSON.stringify(slim).length < 500, `slim: ${JSON.stringify(slim).length} bytes`);
  assert.ok(JSON.stringify(full).length > 100_000);
  assert.equal(crdName(GVRs.Provider), 'providers.forklift.konveyor.io');
  assert.equal(apiServiceName(GVRs.VMDisk), 'v1alpha1.apps.cozystack.io');
  assert.ok(apiServiceAvailable({ metadata: { name: 'v1alpha1.apps.cozystack.io' }, status: { conditions: [{ type: 'Available', status: 'True' }] } }));
  assert.ok(!apiServiceAvailable({ metadata: { name: 'v1alpha1.apps.cozystack.io' }, status: { conditions: [{ type: 'Available', status: 'False' }] } }));
});

test("feature detection reads the same from discovery's copy of Forklift's Plan CRD as from the whole CRD, which it does not keep", async () => {
  const { slimCRD } = await import('../../../src/runtime/discovery.ts');
  const { missingPlanFields } = await import('../../../src/forklift/features.ts');
  const { standInCRDs } = await import('../../sim/index.ts');
  type PlanCRD = { spec: { versions: Array<{ name: string; served?: boolean; schema: { openAPIV3Schema: { properties: { spec: Record<string, unknown> & { properties: Record<string, unknown> } } } } }> } };
  const current = standInCRDs('forklift').find((c) => c.metadata.name === 'plans.forklift.konveyor.io') as unknown as PlanCRD & Record<string, unknown>;
  const specOf = (c: PlanCRD) => c.spec.versions[0]!.schema.openAPIV3Schema.properties.spec;
  // A 2.9-era Forklift: no targetPowerState, no deleteVmOnFailMigration.
  const older = structuredClone(current);
  delete specOf(older).properties.targetPowerState;
  delete specOf(older).properties.deleteVmOnFailMigration;
  // A spec that keeps unknown fields: nothing is pruned, nothing is missing.
  const open = structuredClone(older);
  specOf(open)['x-kubernetes-preserve-unknown-fields'] = true;
  // v1beta1 no longer served: no answer.
  const unserved = structuredClone(current);
  unserved.spec.versions[0]!.served = false;
  const cases = { current, older, open, unserved };
  for (const [name, full] of Object.entries(cases)) {
    assert.deepEqual(missingPlanFields(slimCRD(full as never)), missingPlanFields(full as never), name);
  }
  assert.deepEqual(missingPlanFields(slimCRD(older as never)), ['targetPowerState', 'deleteVmOnFailMigration']);
  assert.deepEqual(missingPlanFields(slimCRD(current as never)), []);
  assert.equal(missingPlanFields(slimCRD(unserved as never)), undefined);
  const slim = JSON.stringify(slimCRD(current as never));
  assert.ok(slim.length * 5 < JSON.stringify(current).length, `the copy is a fraction of the CRD: ${slim.length} of ${JSON.stringify(current).length} bytes`);
  const kept = specOf(slimCRD(current as never) as unknown as PlanCRD).properties;
  assert.deepEqual(Object.keys(kept), Object.keys(specOf(current).properties), 'every spec field is named');
  assert.ok(Object.values(kept).every((v) => JSON.stringify(v) === '{}'), 'no schema beyond the field names');
});
