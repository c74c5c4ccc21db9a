import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TTLCache, normaliseHosts, normaliseVM, withTimeout } from './facts.ts';

test('a burst of lookups costs one load; a fresh entry is served from the cache', async () => {
  let now = 0;
  const c = new TTLCache({ now: () => now });
  let loads = 0;
  const load = async () => ++loads;
  const all = await Promise.all(Array.from({ length: 10 }, () => c.get('k', 100, load)));
  assert.equal(loads, 1);
  assert.ok(all.every((r) => r.value === 1 && !r.cached));
  now = 50;
  assert.deepEqual(await c.get('k', 100, load), { value: 1, cached: true });
});

test('a stale entry is served at once and refreshed in the background; past staleness it is reloaded', async () => {
  let now = 0;
  const c = new TTLCache({ now: () => now });
  let loads = 0;
  const load = async () => ++loads;
  await c.get('k', 100, load, { staleMs: 600 });
  now = 200;
  assert.deepEqual(await c.get('k', 100, load, { staleMs: 600 }), { value: 1, cached: true });
  await new Promise((r) => setImmediate(r));
  assert.equal(loads, 2, 'refreshed behind the answer');
  assert.deepEqual(await c.get('k', 100, load, { staleMs: 600 }), { value: 2, cached: true });
  now = 2000;
  assert.deepEqual(await c.get('k', 100, load, { staleMs: 600 }), { value: 3, cached: false });
  assert.deepEqual(await c.get('k', 100, load, { fresh: true }), { value: 4, cached: false });
});

test('failed loads are not cached and reads are bounded', async () => {
  const c = new TTLCache();
  await assert.rejects(c.get('k', 1000, async () => Promise.reject(new Error('boom'))));
  assert.deepEqual(await c.get('k', 1000, async () => 'ok'), { value: 'ok', cached: false });
  await assert.rejects(withTimeout(new Promise(() => undefined), 20, 'reading X'), /reading X timed out after 20 ms/);
});

test('inventory answers are reduced to the fields used, whatever their shape', () => {
  assert.deepEqual(normaliseVM({ name: 'web', host: 'host-1', disks: [{ capacity: 5, key: 1 }, { capacity: 'x' }, 7], extra: true }), { name: 'web', host: 'host-1', disks: [{ capacity: 5 }, { capacity: 0 }, { capacity: 0 }], assessed: [] });
  assert.equal(normaliseVM('junk'), null);
  assert.deepEqual(normaliseVM({ id: 'vm-1', disks: 'x' }), { name: 'vm-1', host: undefined, disks: [], assessed: [] });
  // The record's facts and Forklift's concerns come back assessed.
  assert.deepEqual(normaliseVM({ name: 'db', disks: [{ capacity: 5, rdm: true }] })?.assessed?.map((c) => c.id), ['vmware.disk.rdm.detected']);
  assert.deepEqual(normaliseHosts([{ id: 'host-1', name: '10.0.0.1' }, { id: 2 }, null]), [{ id: 'host-1', name: '10.0.0.1' }]);
  assert.deepEqual(normaliseHosts({}), []);
});

test('the cache holds at most its size cap: the oldest entry is evicted first', async () => {
  const c = new TTLCache({ maxEntries: 3 });
  for (const k of ['a', 'b', 'c', 'd']) await c.get(k, 60_000, async () => k);
  assert.equal(c.size, 3);
  let loads = 0;
  const load = async () => `again-${++loads}`;
  assert.deepEqual(await c.get('a', 60_000, load), { value: 'again-1', cached: false }, 'the oldest was evicted');
  assert.deepEqual(await c.get('d', 60_000, load), { value: 'd', cached: true });
  assert.equal(c.size, 3);
});

test('no entry outlives the cache\'s maximum age, even one that is never asked for again', async () => {
  let now = 0;
  const c = new TTLCache({ now: () => now, maxAgeMs: 1_000 });
  await c.get('asked-once', 100, async () => 1);
  now = 500;
  await c.get('newer', 100, async () => 2);
  now = 1_200;
  // Any lookup sweeps what is past the maximum age.
  await c.get('other', 100, async () => 3);
  assert.equal(c.size, 2, 'the entry past its maximum age is gone');
  // A caller that accepts stale answers still gets no value older than the maximum age.
  assert.deepEqual(await c.get('asked-once', 100, async () => 4, { staleMs: 10_000 }), { value: 4, cached: false });
  assert.deepEqual(await c.get('newer', 100, async () => 5, { staleMs: 10_000 }), { value: 2, cached: true });
});
