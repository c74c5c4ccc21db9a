import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { planShards, reinstallsForklift } from '../e2e/env/shards.ts';

test('the Forklift-reinstalling files run first, together on the first control plane', () => {
  const files = ['a.test.ts', 'source-forklift-late.test.ts', 'b.test.ts', 'sim-late-forklift.test.ts'];
  const plan = planShards(files, 2, { 'a.test.ts': 100, 'b.test.ts': 100, 'sim-late-forklift.test.ts': 5, 'source-forklift-late.test.ts': 5 });
  assert.deepEqual(plan[0]!.slice(0, 2), ['source-forklift-late.test.ts', 'sim-late-forklift.test.ts']);
  assert.ok(plan[1]!.every((f) => !reinstallsForklift(f)));
});

test('files are dealt longest first onto the least loaded control plane', () => {
  const plan = planShards(['a', 'b', 'c', 'd', 'e'], 2, { a: 90, b: 60, c: 50, d: 40, e: 30 });
  assert.deepEqual(plan, [['a', 'd'], ['b', 'c', 'e']]);
});

test('every file is run exactly once, and no plane carries more than the rest by more than its longest file', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 4 }), (durations, n) => {
      const files = durations.map((_, i) => `f${i}.test.ts`);
      const seconds = Object.fromEntries(files.map((f, i) => [f, durations[i]!]));
      const plan = planShards(files, n, seconds);
      assert.deepEqual(plan.flat().sort(), [...files].sort());
      const loads = plan.map((s) => s.reduce((a, f) => a + seconds[f]!, 0));
      assert.ok(Math.max(...loads) - Math.min(...loads) <= Math.max(...durations), JSON.stringify({ loads, durations }));
    }),
  );
});

test('a file never measured weighs as much as the median measured file', () => {
  const plan = planShards(['new', 'x', 'y', 'z'], 2, { x: 10, y: 20, z: 30 });
  // z (30) | y (20), then new (median 20) → plane 2 (20 < 30)… x (10) → plane 1 (30 < 40).
  assert.deepEqual(plan, [['z', 'x'], ['new', 'y']]);
});

test('files that start their own control planes take the lanes without a plane first, and a file that needs the shared plane never goes there', () => {
  const own = (f: string): boolean => f.startsWith('own');
  const plan = planShards(['own-a', 'own-b', 'x', 'y', 'z'], 2, { 'own-a': 100, 'own-b': 20, x: 60, y: 50, z: 40 }, undefined, { withoutPlane: 1, ownPlanes: own });
  // own-a (100) → the lane without a plane; x (60) → plane 1; y (50) → plane 2; z (40) → plane 2 (50 < 60;
  // never the lane without a plane); own-b (20) → plane 1, the least loaded lane (60 < 90 < 100).
  assert.deepEqual(plan, [['x', 'own-b'], ['y', 'z'], ['own-a']]);
});

test('with lanes without a plane, every file is run exactly once and only files that start their own planes run there', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.integer({ min: 1, max: 300 }), fc.boolean()), { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 0, max: 2 }), (specs, n, m) => {
      const files = specs.map(([, own], i) => `${own ? 'own' : 'f'}${i}.test.ts`);
      const seconds = Object.fromEntries(files.map((f, i) => [f, specs[i]![0]]));
      const plan = planShards(files, n, seconds, undefined, { withoutPlane: m, ownPlanes: (f) => f.startsWith('own') });
      assert.equal(plan.length, n + m);
      assert.deepEqual(plan.flat().sort(), [...files].sort());
      for (const lane of plan.slice(n)) for (const f of lane) assert.ok(f.startsWith('own'), `${f} needs the shared plane`);
    }),
  );
});
