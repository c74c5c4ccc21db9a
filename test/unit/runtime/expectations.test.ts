// Reads from informer caches that are never behind this process's own writes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Expectations } from '../../../src/runtime/expectations.ts';
import { GVRs } from '../../../src/runtime/gvr.ts';
import type { KubeObject } from '../../../src/runtime/kube.ts';
import type { Cache, ReconcileContext } from '../../../src/runtime/reconciler.ts';

const gvr = GVRs.PersistentVolumeClaim;

function obj(rv: string, uid = 'u1', extra: Partial<NonNullable<KubeObject['metadata']>> = {}): KubeObject {
  return { metadata: { name: 'c', namespace: 'n', uid, resourceVersion: rv, ...extra } };
}

/** A cache and an API server, each holding at most one object; counts live reads. */
function world(o: { selector?: string } = {}) {
  const w = { cached: undefined as KubeObject | undefined, server: undefined as KubeObject | undefined, liveReads: 0 };
  const cache: Cache = {
    get: () => w.cached,
    list: () => (w.cached ? [w.cached] : []),
    hasSynced: () => true,
    labelSelector: o.selector,
  };
  const ctx = {
    cache: () => cache,
    client: {
      get: async () => {
        w.liveReads++;
        return w.server;
      },
    },
  } as unknown as ReconcileContext;
  return { w, ctx };
}

test('without a write of ours the cache answers, and nothing is read from the server', async () => {
  const { w, ctx } = world();
  const ex = new Expectations();
  w.cached = obj('5');
  w.server = obj('6');
  assert.equal((await ex.get(ctx, gvr, 'n', 'c'))?.metadata?.resourceVersion, '5');
  w.cached = undefined;
  assert.equal(await ex.get(ctx, gvr, 'n', 'c'), undefined);
  assert.equal(w.liveReads, 0);
});

test('after our write the server answers until the cache shows that very resourceVersion', async () => {
  const { w, ctx } = world();
  const ex = new Expectations();
  w.cached = obj('5');
  w.server = obj('7');
  ex.wrote(gvr, obj('7'));
  assert.equal((await ex.get(ctx, gvr, 'n', 'c'))?.metadata?.resourceVersion, '7');
  assert.equal(w.liveReads, 1);
  w.cached = obj('7');
  assert.equal((await ex.get(ctx, gvr, 'n', 'c'))?.metadata?.resourceVersion, '7');
  assert.equal((await ex.get(ctx, gvr, 'n', 'c'))?.metadata?.resourceVersion, '7');
  assert.equal(w.liveReads, 1, 'the expectation closed once the cache caught up');
  assert.equal(ex.size(), 0);
});

test('a later write by someone else closes our expectation once a live read matches the cache', async () => {
  const { w, ctx } = world();
  const ex = new Expectations();
  ex.wrote(gvr, obj('7'));
  w.cached = obj('9');
  w.server = obj('9');
  assert.equal((await ex.get(ctx, gvr, 'n', 'c'))?.metadata?.resourceVersion, '9');
  assert.equal(ex.size(), 0);
  await ex.get(ctx, gvr, 'n', 'c');
  assert.equal(w.liveReads, 1);
});

test('after our delete a cache that still shows the object live and unchanged is not believed', async () => {
  const { w, ctx } = world();
  const ex = new Expectations();
  w.cached = obj('5', 'u1');
  w.server = obj('6', 'u1', { deletionTimestamp: '2026-11-29T10:00:00Z' });
  ex.deleted(gvr, 'n', 'c', 'u1');
  assert.ok((await ex.get(ctx, gvr, 'n', 'c'))?.metadata?.deletionTimestamp);
  assert.equal(w.liveReads, 1);
  // Satisfied by a terminating object, by absence, or by a new object under the same name.
  for (const c of [obj('6', 'u1', { deletionTimestamp: 'x' }), undefined, obj('8', 'u2')]) {
    const e2 = new Expectations();
    e2.deleted(gvr, 'n', 'c', 'u1');
    w.cached = c;
    w.liveReads = 0;
    await e2.get(ctx, gvr, 'n', 'c');
    assert.equal(w.liveReads, 0);
  }
});

test('a create that met AlreadyExists reads the server until the cache holds the object', async () => {
  const { w, ctx } = world();
  const ex = new Expectations();
  w.server = obj('3');
  ex.exists(gvr, 'n', 'c');
  assert.equal((await ex.get(ctx, gvr, 'n', 'c'))?.metadata?.resourceVersion, '3');
  assert.equal((await ex.get(ctx, gvr, 'n', 'c'))?.metadata?.resourceVersion, '3');
  assert.equal(w.liveReads, 2);
  w.cached = obj('3');
  await ex.get(ctx, gvr, 'n', 'c');
  assert.equal(w.liveReads, 2);
});

test('a conflict marks the object stale: the next read goes to the server', async () => {
  const { w, ctx } = world();
  const ex = new Expectations();
  w.cached = obj('5');
  w.server = obj('6');
  ex.stale(gvr, 'n', 'c');
  assert.equal((await ex.get(ctx, gvr, 'n', 'c'))?.metadata?.resourceVersion, '6');
  assert.equal(w.liveReads, 1);
});

test('an expectation lapses after its time to live, so a missed event cannot pin an object to live reads', async () => {
  const { w, ctx } = world();
  let now = 0;
  const ex = new Expectations({ ttlMs: 1000, now: () => now });
  w.cached = obj('5');
  w.server = obj('7');
  ex.wrote(gvr, obj('7'));
  await ex.get(ctx, gvr, 'n', 'c');
  now = 1001;
  assert.equal((await ex.get(ctx, gvr, 'n', 'c'))?.metadata?.resourceVersion, '5');
  assert.equal(w.liveReads, 1);
});

test('absence from a label-filtered cache is asked of the server unless the caller trusts it', async () => {
  const { w, ctx } = world({ selector: 'a=b' });
  const ex = new Expectations();
  w.server = obj('1');
  assert.equal((await ex.get(ctx, gvr, 'n', 'c'))?.metadata?.resourceVersion, '1');
  assert.equal(w.liveReads, 1);
  assert.equal(await ex.get(ctx, gvr, 'n', 'c', { trustAbsence: true }), undefined);
  assert.equal(w.liveReads, 1);
});

test('a live read is forced on request, whatever the cache holds', async () => {
  const { w, ctx } = world();
  const ex = new Expectations();
  w.cached = obj('5');
  w.server = obj('6');
  const counters = { cache: 0, live: 0 };
  assert.equal((await ex.get(ctx, gvr, 'n', 'c', { live: true, counters }))?.metadata?.resourceVersion, '6');
  assert.deepEqual(counters, { cache: 0, live: 1 });
});

test('expectations of objects never read again are swept once they lapse: the map stays bounded by one TTL of writes', () => {
  let now = 0;
  const ex = new Expectations({ ttlMs: 1_000, now: () => now });
  const gvr = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true };
  for (let i = 0; i < 100; i++) ex.wrote(gvr, { metadata: { name: `a-${i}`, namespace: 'ns', resourceVersion: '1' } });
  assert.equal(ex.size(), 100);
  now = 1_500;
  ex.wrote(gvr, { metadata: { name: 'b', namespace: 'ns', resourceVersion: '2' } });
  assert.equal(ex.size(), 1, 'the lapsed entries went with the next write');
  ex.forget(gvr, 'ns', 'b');
  assert.equal(ex.size(), 0);
});

test('a write made on a known version answers for itself while the cache still shows that version, and a cache past it is read past', async () => {
  const { w, ctx } = world();
  const ex = new Expectations();
  w.cached = obj('5');
  w.server = obj('9');
  // Our write carried resourceVersion 5 as its precondition and returned version 7.
  ex.wrote(gvr, obj('7', 'u1', { labels: { written: 'yes' } }), { over: '5' });
  const got = await ex.get(ctx, gvr, 'n', 'c');
  assert.equal(got?.metadata?.resourceVersion, '7', 'the cache has not seen our write: the write answers');
  assert.equal(got?.metadata?.labels?.written, 'yes');
  assert.equal(w.liveReads, 0);
  // The cache moved, but not to our version (a write we did not make, or a re-list): the server answers.
  w.cached = obj('6');
  assert.equal((await ex.get(ctx, gvr, 'n', 'c'))?.metadata?.resourceVersion, '9');
  assert.equal(w.liveReads, 1);
  // A write without the version it was made on is never answered for itself.
  const other = world();
  other.w.cached = obj('5');
  other.w.server = obj('7');
  const ex2 = new Expectations();
  ex2.wrote(gvr, obj('7'));
  assert.equal((await ex2.get(other.ctx, gvr, 'n', 'c'))?.metadata?.resourceVersion, '7');
  assert.equal(other.w.liveReads, 1);
});

test('a create answers for itself while the cache lacks the object, and the cache is believed once it holds any version', async () => {
  const { w, ctx } = world({ selector: 'task=t' });
  const ex = new Expectations();
  w.server = obj('7', 'u1', { labels: { created: 'yes' } });
  ex.wrote(gvr, obj('7', 'u1', { labels: { created: 'yes' } }), { over: null });
  const got = await ex.get(ctx, gvr, 'n', 'c');
  assert.equal(got?.metadata?.labels?.created, 'yes', 'the cache has not seen our create: the created object answers');
  assert.equal(w.liveReads, 0, 'no read behind our own create');
  // The cache now holds another version than ours (someone wrote after our create, and a re-list skipped
  // ours): it is read past, live.
  w.cached = obj('8');
  w.server = obj('9');
  assert.equal((await ex.get(ctx, gvr, 'n', 'c'))?.metadata?.resourceVersion, '9');
  assert.equal(w.liveReads, 1);
  // The cache holds our version: the expectation closes and the cache answers from then on.
  w.cached = obj('7');
  assert.equal((await ex.get(ctx, gvr, 'n', 'c'))?.metadata?.resourceVersion, '7');
  assert.equal(ex.size(), 0);
  assert.equal(w.liveReads, 1);
});
