import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_OVERTAKEN_MS, TokenBucket, currentRequestPriority, withRequestPriority } from '../../../src/runtime/ratelimit.ts';

/** A bucket on mocked timers and clock: the test moves time, so a loaded machine's scheduling cannot refill it. */
function mockedBucket(t: TestContext, qps: number, burst: number): { b: TokenBucket; tick: (ms: number) => void } {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  const b = new TokenBucket(qps, burst, () => Date.now());
  return { b, tick: (ms) => t.mock.timers.tick(ms) };
}

/** Records, in order, which requests got their token. */
function turns(): { order: string[]; take: (b: TokenBucket, name: string, priority?: number, signal?: AbortSignal) => Promise<number> } {
  const order: string[] = [];
  return {
    order,
    take: (b, name, priority = 0, signal) =>
      b.wait(signal, priority).then((ms) => {
        order.push(name);
        return ms;
      }),
  };
}

/** Lets the promise callbacks of resolved turns run. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

test('a full bucket lets a burst through at once, then spaces requests at the configured rate, in arrival order', async (t) => {
  const { b, tick } = mockedBucket(t, 10, 3);
  const q = turns();
  const waits = ['a', 'b', 'c', 'd', 'e', 'f'].map((n) => q.take(b, n));
  await settle();
  assert.deepEqual(q.order, ['a', 'b', 'c'], 'the burst goes at once');
  tick(100);
  await settle();
  assert.deepEqual(q.order, ['a', 'b', 'c', 'd']);
  tick(100);
  await settle();
  tick(100);
  await settle();
  assert.deepEqual(q.order, ['a', 'b', 'c', 'd', 'e', 'f'], 'one more every 100 ms at 10/s');
  assert.deepEqual(await Promise.all(waits), [0, 0, 0, 100, 200, 300]);
  assert.equal(b.stats.throttled, 3);
  assert.equal(b.stats.waitedMs, 600);
});

test('the bucket refills at qps up to the burst, never above it', async (t) => {
  const { b, tick } = mockedBucket(t, 2, 2);
  await b.wait();
  await b.wait();
  tick(60_000);
  assert.equal(await b.wait(), 0);
  assert.equal(await b.wait(), 0);
  const q = turns();
  void q.take(b, 'third');
  tick(499);
  await settle();
  assert.deepEqual(q.order, [], 'a minute idle still only holds the burst');
  tick(1);
  await settle();
  assert.deepEqual(q.order, ['third']);
});

test('a more urgent request takes the next turn ahead of those already waiting, which keep their order', async (t) => {
  const { b, tick } = mockedBucket(t, 10, 1);
  const q = turns();
  void q.take(b, 'first');
  void q.take(b, 'early-1');
  void q.take(b, 'early-2');
  tick(50);
  void q.take(b, 'urgent', 5);
  void q.take(b, 'less-urgent', 2);
  for (let i = 0; i < 5; i++) {
    tick(100);
    await settle();
  }
  assert.deepEqual(q.order, ['first', 'urgent', 'less-urgent', 'early-1', 'early-2']);
});

test('a request that yielded its turn for a second goes next, whatever more urgent requests arrive', async (t) => {
  const { b, tick } = mockedBucket(t, 10, 1);
  const q = turns();
  void q.take(b, 'first');
  void q.take(b, 'patient');
  // An urgent request arrives every 100 ms, for two seconds: without the bound it would take every turn.
  for (let ms = 0; ms < 2_000; ms += 100) {
    void q.take(b, `urgent@${ms}`, 10);
    tick(100);
    await settle();
  }
  const at = q.order.indexOf('patient');
  assert.ok(at > 0, `the patient request got a turn (${q.order.join(', ')})`);
  // Its turn came within the bound (plus the turn in progress when it expired) at 10 turns a second.
  assert.ok(at <= (MAX_OVERTAKEN_MS / 100) + 2, `after ${at} turns`);
});

test('a cancelled wait leaves the queue with its reason, and the next request takes its turn', async (t) => {
  const { b, tick } = mockedBucket(t, 20, 1);
  const q = turns();
  void q.take(b, 'first');
  const ac = new AbortController();
  const cancelled = q.take(b, 'cancelled', 0, ac.signal);
  void q.take(b, 'next');
  ac.abort(new Error('stop'));
  await assert.rejects(cancelled, /stop/);
  tick(50);
  await settle();
  assert.deepEqual(q.order, ['first', 'next'], 'one turn at 20/s, and it went to the next in line');
  assert.equal(b.waiting, 0);
  await assert.rejects(b.wait(AbortSignal.abort(new Error('already'))), /already/);
});

test('the work priority carries across awaits inside withRequestPriority, and is 0 outside it', async () => {
  assert.equal(currentRequestPriority(), 0);
  const seen = await withRequestPriority(7, async () => {
    await new Promise((r) => setImmediate(r));
    const inner = await withRequestPriority(9, async () => currentRequestPriority());
    return [currentRequestPriority(), inner];
  });
  assert.deepEqual(seen, [7, 9]);
  assert.equal(currentRequestPriority(), 0);
});

test('a limit without a positive rate or a burst of at least one is refused', () => {
  assert.throws(() => new TokenBucket(0, 1));
  assert.throws(() => new TokenBucket(1, 0));
});
