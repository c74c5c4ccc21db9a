// drain / taskProgress / HostRates: a whole task's bytes, rate and ETA, queued VMs played forward on
// their hosts at the rates measured in this campaign.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { HostRates, drain, ratesWithFallback, taskProgress } from './eta.ts';

const GB = 1e9;
const MB = 1e6;

test('one disk alone moves at the host’s rate; two share it until the smaller is copied', () => {
  const f = drain({ bytesPerSecond: 100 * MB, transferring: [{ key: 'a', disksLeft: [100 * GB] }, { key: 'b', disksLeft: [50 * GB] }], queued: [] })!;
  // Both at 50 MB/s: b copied at 1000 s; a then alone at 100 MB/s for its last 50 GB: 1500 s.
  assert.equal(f.get('b'), 1000);
  assert.equal(f.get('a'), 1500);
});

test('a VM is copied when its largest disk is, not when its summed bytes would be at its summed rate', () => {
  const f = drain({ bytesPerSecond: 300 * MB, perStreamBytesPerSecond: 100 * MB, transferring: [{ key: 'vm', disksLeft: [10 * GB, 20 * GB, 450 * GB] }], queued: [] })!;
  assert.equal(Math.round(f.get('vm')!), 4500);
});

test('a queued VM opens when its host’s slots free up, in the queue’s order, and then shares the host', () => {
  const f = drain({
    bytesPerSecond: 100 * MB,
    slots: 2,
    transferring: [{ key: 'x', disksLeft: [10 * GB] }, { key: 'y', disksLeft: [30 * GB] }],
    queued: [{ key: 'q1', disksLeft: [10 * GB] }, { key: 'q2', disksLeft: [10 * GB] }],
  })!;
  // x done at 200 s (50 MB/s); q1 opens, shares with y: q1 done at 400 s; q2 opens: y (10 GB left) and q2 done at 600 s.
  assert.deepEqual([...f.entries()].sort(), [['q1', 400], ['q2', 600], ['x', 200], ['y', 600]]);
});

test('a queued VM wider than its host’s budget opens only once the host is idle', () => {
  const f = drain({ bytesPerSecond: 100 * MB, slots: 2, transferring: [{ key: 'x', disksLeft: [10 * GB] }], queued: [{ key: 'wide', disksLeft: [10 * GB, 10 * GB, 10 * GB] }] })!;
  assert.equal(f.get('x'), 100);
  assert.equal(f.get('wide'), 400);
});

test('a host without a measured rate gives no ETA for what it still has to move', () => {
  assert.equal(drain({ transferring: [{ key: 'a', disksLeft: [GB] }], queued: [] }), undefined);
  assert.deepEqual([...drain({ transferring: [{ key: 'a', disksLeft: [0] }], queued: [] })!], [['a', 0]]);
});

test('the task’s bytes are the sum over its VMs, its rate its transfers’ rate, its ETA its last VM’s', () => {
  const finish = new Map([['t/a', 300], ['t/b', 900]]);
  const p = taskProgress(
    [
      { key: 't/a', bytesTotal: 10 * GB, bytesDone: 4 * GB, state: 'transferring', bytesPerSecond: 50 * MB },
      { key: 't/done', bytesTotal: 6 * GB, bytesDone: 6 * GB, state: 'done' },
      { key: 't/b', bytesTotal: 2 * GB, bytesDone: 0, state: 'queued' },
    ],
    (k) => finish.get(k),
  );
  assert.deepEqual(p, { bytesDone: 10 * GB, bytesTotal: 18 * GB, bytesPerSecond: 50 * MB, etaSeconds: 900 });
});

test('a task with a VM whose host has no rate yet has no ETA; a task with every byte copied has an ETA of zero', () => {
  assert.equal(taskProgress([{ key: 'a', bytesTotal: GB, bytesDone: 0, state: 'queued' }], () => undefined).etaSeconds, undefined);
  assert.equal(taskProgress([{ key: 'a', bytesTotal: GB, bytesDone: GB, state: 'done' }], () => undefined).etaSeconds, 0);
});

test('a host not measured yet borrows the mean of the measured hosts’ rates', () => {
  const r = ratesWithFallback(['a', 'b', 'c'], (h) => ({ a: 100, b: 300 })[h as 'a' | 'b']);
  assert.deepEqual([...r], [['a', 100], ['b', 300], ['c', 200]]);
  assert.deepEqual([...ratesWithFallback(['a'], () => undefined)], [['a', undefined]]);
});

test('property: the play never finishes a host’s work faster than its rate allows, and finishes every VM', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 1000 }),
      fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined }),
      fc.array(fc.array(fc.integer({ min: 0, max: 500 }), { minLength: 1, maxLength: 4 }), { maxLength: 8 }),
      fc.array(fc.array(fc.integer({ min: 0, max: 500 }), { minLength: 1, maxLength: 4 }), { maxLength: 12 }),
      (rate, slots, open, queued) => {
        const h = { bytesPerSecond: rate * MB, ...(slots ? { slots } : {}), transferring: open.map((d, i) => ({ key: `o${i}`, disksLeft: d.map((x) => x * GB) })), queued: queued.map((d, i) => ({ key: `q${i}`, disksLeft: d.map((x) => x * GB) })) };
        const f = drain(h)!;
        assert.equal(f.size, open.length + queued.length);
        const total = [...open, ...queued].flat().reduce((a, b) => a + b * GB, 0);
        const last = Math.max(0, ...f.values());
        assert.ok(last >= (total / (rate * MB)) * (1 - 1e-9));
        assert.ok([...f.values()].every((x) => x >= 0 && Number.isFinite(x)));
      },
    ),
  );
});

test('a host’s rate follows its samples, each weighed by the time since the last', () => {
  const r = new HostRates({ halfLifeMs: 60_000 });
  r.observe('h', 100, 0);
  assert.equal(r.rate('h'), 100);
  // A burst of samples at the same instant does not move the mean.
  r.observe('h', 1000, 0);
  assert.equal(r.rate('h'), 100);
  // One half-life later the new rate counts half.
  r.observe('h', 300, 60_000);
  assert.equal(r.rate('h'), 200);
  r.observe('h', 0, 120_000);
  assert.equal(r.rate('h'), 200, 'a host with nothing moving keeps its last measured rate');
  r.retain(new Set());
  assert.equal(r.rate('h'), undefined);
});

test('property: the smoothed rate stays within the range of the rates observed', () => {
  fc.assert(
    fc.property(fc.array(fc.record({ rate: fc.integer({ min: 1, max: 1e10 }), dt: fc.nat(600_000) }), { minLength: 1, maxLength: 50 }), (samples) => {
      const r = new HostRates();
      let t = 0;
      for (const s of samples) r.observe('h', s.rate, (t += s.dt));
      const lo = Math.min(...samples.map((s) => s.rate));
      const hi = Math.max(...samples.map((s) => s.rate));
      const v = r.rate('h')!;
      assert.ok(v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9));
    }),
  );
});

test('one stream’s bound is learnt when a host’s last streams move clearly less than its best, not when the host is merely slowed', () => {
  const r = new HostRates();
  r.observe('h', 500, 0, 10);
  // The same ten streams moving less: the host slowed by another workload.
  r.observe('h', 200, 1000, 10);
  assert.equal(r.streamBound(), undefined);
  // Two streams moving 300 together: each at its own 150.
  r.observe('h', 300, 2000, 2);
  assert.equal(r.streamBound(), 150);
});
