import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKOFF_BASE_MS, BACKOFF_MAX_MS, BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, WorkQueue, defaultControllerRateLimiter } from '../../../src/runtime/workqueue.ts';

const noLimit = () => new ItemExponentialFailureRateLimiter(1, 10);

test('a key added many times while waiting is handed out once', async () => {
  const q = new WorkQueue('t', { rateLimiter: noLimit() });
  q.add('a');
  q.add('a');
  q.add('b');
  q.add('a');
  assert.equal(q.len(), 2);
  assert.equal(await q.get(), 'a');
  assert.equal(await q.get(), 'b');
  assert.equal(q.len(), 0);
});

test('a key being processed is never handed to a second worker, and is re-queued once if it changed meanwhile', async () => {
  const q = new WorkQueue('t', { rateLimiter: noLimit() });
  q.add('a');
  const k = await q.get();
  assert.equal(k, 'a');
  q.add('a'); // changed while processing
  q.add('a');
  assert.equal(q.len(), 0, 'not queued while a worker holds it');
  let second: string | undefined;
  const waiting = q.get().then((x) => (second = x));
  await new Promise((r) => setImmediate(r));
  assert.equal(second, undefined, 'a second worker does not get the key being processed');
  q.done('a');
  await waiting;
  assert.equal(second, 'a', 'handed out again after done()');
  q.done('a');
  assert.equal(q.len(), 0, 'only once');
});

test('N workers never process the same key concurrently', async () => {
  const q = new WorkQueue('t', { rateLimiter: noLimit() });
  const active = new Set<string>();
  let overlaps = 0;
  let processed = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const k = await q.get();
      if (k === undefined) return;
      if (active.has(k)) overlaps++;
      active.add(k);
      await new Promise((r) => setTimeout(r, Math.random() * 3));
      active.delete(k);
      processed++;
      q.done(k);
    }
  };
  const workers = Array.from({ length: 8 }, worker);
  for (let i = 0; i < 400; i++) {
    q.add(`k${i % 5}`);
    if (i % 7 === 0) await new Promise((r) => setTimeout(r, 1));
  }
  await new Promise((r) => setTimeout(r, 100));
  q.shutdown();
  await Promise.all(workers);
  assert.equal(overlaps, 0);
  assert.ok(processed >= 5 && processed < 400, `deduplicated: ${processed}`);
});

test('per-key backoff doubles from 5 ms and is capped at 60 s (an object recovers within a minute of its cause); forget resets it', () => {
  const l = new ItemExponentialFailureRateLimiter(BACKOFF_BASE_MS, BACKOFF_MAX_MS);
  assert.deepEqual([l.when('a'), l.when('a'), l.when('a'), l.when('a')], [5, 10, 20, 40]);
  assert.equal(l.when('b'), 5, 'keys back off independently');
  for (let i = 0; i < 100; i++) l.when('a');
  assert.equal(l.when('a'), 60_000);
  assert.equal(l.numRequeues('a'), 105);
  l.forget('a');
  assert.equal(l.numRequeues('a'), 0);
  assert.equal(l.when('a'), 5);
});

test('the overall token bucket allows a burst of 100 then 10 per second', () => {
  let now = 0;
  const b = new BucketRateLimiter(10, 100, () => now);
  for (let i = 0; i < 100; i++) assert.equal(b.when(`k${i}`), 0);
  assert.equal(Math.round(b.when('x')), 100, 'the 101st waits one token (100 ms)');
  assert.equal(Math.round(b.when('y')), 200);
  now += 1000;
  assert.equal(Math.round(b.when('z')), 0, 'after a second, ten tokens refilled (8 owed + this one)');
});

test('the default limiter is the max of the per-key backoff and the bucket', () => {
  const l = defaultControllerRateLimiter();
  assert.equal(l.when('a'), 5);
  assert.equal(l.when('a'), 10);
  assert.ok(l instanceof MaxOfRateLimiter);
});

test('addRateLimited delays the key by its backoff; addAfter keeps the earliest deadline', async () => {
  const q = new WorkQueue('t', { rateLimiter: new ItemExponentialFailureRateLimiter(40, 1000) });
  const t0 = performance.now();
  q.addRateLimited('a');
  assert.equal(q.len(), 0);
  assert.equal(await q.get(), 'a');
  assert.ok(performance.now() - t0 >= 35, 'waited for the backoff');
  q.done('a');
  assert.equal(q.numRequeues('a'), 1);
  q.forget('a');
  assert.equal(q.numRequeues('a'), 0);
  const t1 = performance.now();
  q.addAfter('b', 5000);
  q.addAfter('b', 20);
  assert.equal(await q.get(), 'b');
  assert.ok(performance.now() - t1 < 1000, 'the earlier deadline won');
  q.shutdown();
});

test('with supersedeTimedAdds, taking a key drops its pending timed add: the reconcile about to run schedules the next look', async () => {
  const q = new WorkQueue('t', { rateLimiter: noLimit(), supersedeTimedAdds: true });
  q.addAfter('a', 60);
  q.add('a');
  assert.equal(await q.get(), 'a');
  assert.equal(q.hasTimedAdd('a'), false);
  q.done('a');
  // The dropped timer never re-adds the key.
  await new Promise((r) => setTimeout(r, 120));
  assert.equal(q.len(), 0);
  // A timed add scheduled while the key is processed (its own result) is kept.
  q.add('a');
  assert.equal(await q.get(), 'a');
  q.addAfter('a', 20);
  q.done('a');
  assert.equal(q.hasTimedAdd('a'), true);
  assert.equal(await q.get(), 'a');
  q.done('a');
  q.shutdown();
});

test('without supersedeTimedAdds (client-go semantics) a pending timed add still fires after the key was processed', async () => {
  const q = new WorkQueue('t', { rateLimiter: noLimit() });
  q.addAfter('a', 30);
  q.add('a');
  assert.equal(await q.get(), 'a');
  q.done('a');
  assert.equal(q.hasTimedAdd('a'), true);
  assert.equal(await q.get(), 'a');
  q.done('a');
  q.shutdown();
});

test('shutdown wakes waiting workers with undefined and drops timed adds', async () => {
  const q = new WorkQueue('t');
  const w = q.get();
  q.addAfter('x', 10_000);
  q.shutdown();
  assert.equal(await w, undefined);
  q.add('y');
  assert.equal(await q.get(), undefined);
});

test('the depth gauge reads 0 from the start and returns to 0 once workers drain the queue', async () => {
  const depths: number[] = [];
  const q = new WorkQueue('gauge', { metrics: { depth: (n) => depths.push(n), add() {}, retry() {}, latency() {}, workDuration() {} } });
  assert.deepEqual(depths, [0]);
  q.add('a');
  q.add('b');
  assert.equal(depths.at(-1), 2);
  for (const k of [await q.get(), await q.get()]) q.done(k!);
  assert.equal(depths.at(-1), 0);
  q.shutdown();
});
