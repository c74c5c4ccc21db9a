import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FileQueue } from '../e2e/env/shards.ts';

test('a file never measured weighs as much as the median measured file', () => {
  const q = new FileQueue(['new', 'x', 'y', 'z'], { x: 10, y: 20, z: 30 });
  // z (30), then y and new (both 20: by name), then x.
  assert.deepEqual([q.next(1, true), q.next(1, true), q.next(1, true), q.next(1, true)], ['z', 'new', 'y', 'x']);
});

test('only lane 0 takes the Forklift-reinstalling files, and before any other', () => {
  const q = new FileQueue(['a.test.ts', 'source-forklift-late.test.ts', 'sim-late-forklift.test.ts'], { 'a.test.ts': 100 });
  assert.equal(q.next(1, true), 'a.test.ts');
  assert.equal(q.next(1, true), undefined);
  assert.deepEqual([q.next(0, true), q.next(0, true)], ['source-forklift-late.test.ts', 'sim-late-forklift.test.ts']);
});

test('lanes take files as they free up: the reinstallers first on lane 0, then the longest a lane may run; a lane without a plane takes only files that start their own', () => {
  const own = (f: string): boolean => f.startsWith('own');
  const q = new FileQueue(['own-a', 'own-b', 'x', 'y', 'sim-late-forklift.test.ts'], { 'own-a': 100, 'own-b': 20, x: 60, y: 50, 'sim-late-forklift.test.ts': 5 }, undefined, own);
  assert.equal(q.next(1, true), 'x', 'a plane lane takes the longest file that needs a plane');
  assert.equal(q.next(0, true), 'sim-late-forklift.test.ts', 'lane 0 takes the reinstallers first');
  assert.equal(q.next(2, false), 'own-a', 'a lane without a plane takes the longest file that starts its own');
  assert.equal(q.next(2, false), 'own-b');
  assert.equal(q.next(2, false), undefined, 'and nothing else');
  assert.equal(q.needsPlane, true);
  assert.equal(q.next(2, true), 'y', 'once it has a plane it takes the rest');
  assert.equal(q.needsPlane, false);
  assert.equal(q.size, 0);
});

test('a queue hands out every file exactly once, whichever lanes ask, and only files that start their own planes to a lane without one', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.integer({ min: 1, max: 300 }), fc.boolean()), { minLength: 1, maxLength: 40 }), fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.boolean()), { minLength: 1, maxLength: 120 }), (specs, asks) => {
      const files = specs.map(([, own], i) => `${own ? 'own' : 'f'}${i}.test.ts`);
      const q = new FileQueue(files, Object.fromEntries(files.map((f, i) => [f, specs[i]![0]])), undefined, (f) => f.startsWith('own'));
      const got: string[] = [];
      for (const [lane, hasPlane] of [...asks, ...files.map(() => [1, true] as [number, boolean])]) {
        const f = q.next(lane, hasPlane);
        if (f && !hasPlane) assert.ok(f.startsWith('own'), `${f} needs a plane`);
        if (f) got.push(f);
      }
      assert.deepEqual(got.sort(), [...files].sort());
    }),
  );
});
