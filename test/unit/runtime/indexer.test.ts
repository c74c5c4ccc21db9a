import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Store, matchesLabels } from '../../../src/runtime/informer.ts';
import type { KubeObject } from '../../../src/runtime/kube.ts';

const NS = ['a', 'b', 'c'];
const KEYS = ['task', 'vm', 'plan'];
const VALS = ['1', '2', '3'];

function obj(name: string, ns: string, labels: Record<string, string>, rv: number): KubeObject {
  return { metadata: { name, namespace: ns, labels, resourceVersion: String(rv) } } as KubeObject;
}

function naive(items: Iterable<KubeObject>, ns: string | undefined, sel: Record<string, string> | undefined): string[] {
  const out: string[] = [];
  for (const o of items) if ((!ns || o.metadata?.namespace === ns) && matchesLabels(o, sel)) out.push(`${o.metadata?.namespace}/${o.metadata?.name}`);
  return out.sort();
}

const labelsArb = fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALS), { maxKeys: 3 });
const opArb = fc.oneof(
  fc.record({ op: fc.constant('set' as const), name: fc.constantFrom('x', 'y', 'z', 'w'), ns: fc.constantFrom(...NS), labels: labelsArb }),
  fc.record({ op: fc.constant('delete' as const), name: fc.constantFrom('x', 'y', 'z', 'w'), ns: fc.constantFrom(...NS) }),
  fc.record({ op: fc.constant('list' as const), ns: fc.option(fc.constantFrom(...NS), { nil: undefined }), sel: fc.option(labelsArb, { nil: undefined }) }),
  fc.record({ op: fc.constant('clear' as const) }),
);

test('a list by namespace and labels answers exactly what a scan of the whole store answers, through adds, relabels and deletes', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 60 }), (ops) => {
      const store = new Store();
      let rv = 0;
      for (const o of ops) {
        if (o.op === 'set') store.items.set(`${o.ns}/${o.name}`, obj(o.name, o.ns, o.labels, ++rv));
        else if (o.op === 'delete') store.items.delete(`${o.ns}/${o.name}`);
        else if (o.op === 'clear') store.items.clear();
        else {
          const got = store.list(o.ns, o.sel).map((x) => `${x.metadata?.namespace}/${x.metadata?.name}`).sort();
          assert.deepEqual(got, naive(store.items.values(), o.ns, o.sel));
        }
        // The indexes hold exactly the objects under their keys: nothing stale, nothing missing.
        for (const ns of NS) assert.deepEqual([...store.items.candidates(ns, undefined)!].sort(), naive(store.items.values(), ns, undefined));
        for (const k of store.items.indexedLabels()) {
          for (const v of VALS) assert.deepEqual([...store.items.candidates(undefined, { [k]: v })!].sort(), naive(store.items.values(), undefined, { [k]: v }));
        }
      }
    }),
    { numRuns: 500 },
  );
});

test('a list by labels looks only at the objects carrying the selected value, not the whole kind', () => {
  const store = new Store();
  for (let i = 0; i < 1000; i++) store.items.set(`ns-${i % 10}/o-${i}`, obj(`o-${i}`, `ns-${i % 10}`, { task: `t-${i}`, vm: 'v' }, i));
  assert.deepEqual(store.list('ns-3', { task: 't-13' }).map((o) => o.metadata?.name), ['o-13']);
  const keys = store.items.candidates('ns-3', { task: 't-13', vm: 'v' });
  assert.equal(keys?.size, 1, 'the most selective index answers');
  assert.equal(store.items.candidates('ns-3', undefined)?.size, 100);
  assert.deepEqual(store.items.indexedLabels().sort(), ['task', 'vm']);
  // Kept in step with later writes: a relabelled object moves, a deleted one goes.
  store.items.set('ns-3/o-13', obj('o-13', 'ns-3', { task: 't-other' }, 2000));
  assert.deepEqual(store.list('ns-3', { task: 't-13' }), []);
  assert.equal(store.list(undefined, { task: 't-other' }).length, 1);
  store.items.delete('ns-3/o-13');
  assert.deepEqual(store.list(undefined, { task: 't-other' }), []);
  assert.equal(store.list('ns-3').length, 99);
});
