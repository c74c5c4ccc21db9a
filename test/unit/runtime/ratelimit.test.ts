import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TokenBucket } from '../../../src/runtime/ratelimit.ts';

test('a full bucket lets a burst through at once, then spaces requests at the configured rate', () => {
  let now = 0;
  const b = new TokenBucket(10, 3, () => now);
  assert.deepEqual([b.reserve(), b.reserve(), b.reserve()], [0, 0, 0], 'the burst goes at once');
  // The 4th, 5th and 6th wait their turns: 100, 200, 300 ms at 10/s (first come, first served).
  assert.deepEqual([b.reserve(), b.reserve(), b.reserve()].map(Math.round), [100, 200, 300]);
  now = 1_000;
  // A second later the queue (3 tokens owed) is paid back and 7 tokens would have accrued, capped at the burst.
  assert.equal(b.reserve(), 0);
});

test('the bucket refills at qps up to the burst, never above it', () => {
  let now = 0;
  const b = new TokenBucket(2, 2, () => now);
  b.reserve();
  b.reserve();
  now = 60_000;
  assert.equal(b.reserve(), 0);
  assert.equal(b.reserve(), 0);
  assert.equal(Math.round(b.reserve()), 500, 'a minute idle still only holds the burst');
});

test('a request waits for its token and the wait is counted; a cancelled wait gives its token back', async () => {
  // The bucket's clock is the test's: a loaded machine's scheduling delays must not refill it between steps.
  let now = 0;
  const b = new TokenBucket(20, 1, () => now);
  assert.equal(await b.wait(), 0);
  const t0 = performance.now();
  const waited = await b.wait();
  assert.equal(waited, 50, 'one turn at 20/s');
  assert.ok(performance.now() - t0 >= waited - 5, `resolved after ${performance.now() - t0} ms, not before its turn`);
  assert.equal(b.stats.throttled, 1);
  now = 50; // the second request's turn has come
  const ac = new AbortController();
  const p = b.wait(ac.signal);
  ac.abort(new Error('stop'));
  await assert.rejects(p, /stop/);
  // The token went back: the next request waits one turn, not two.
  assert.equal(b.reserve(), 50);
});

test('a limit without a positive rate or a burst of at least one is refused', () => {
  assert.throws(() => new TokenBucket(0, 1));
  assert.throws(() => new TokenBucket(1, 0));
});
