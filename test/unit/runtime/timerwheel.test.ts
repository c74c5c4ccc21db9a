// The timer wheel the work queues share: one native timer for every pending deadline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TimerWheel, slotWidth } from '../../../src/runtime/timerwheel.ts';
import { WorkQueue } from '../../../src/runtime/workqueue.ts';

/** A manual clock and native timer: `advance` runs every timer that comes due, in order. */
function manual() {
  const c = { now: 0, timers: new Map<number, { at: number; fn: () => void }>(), nextId: 0, armed: 0 };
  const opts = {
    now: () => c.now,
    setTimer: (fn: () => void, ms: number) => {
      c.armed++;
      const id = ++c.nextId;
      c.timers.set(id, { at: c.now + ms, fn });
      return id;
    },
    clearTimer: (h: unknown) => void c.timers.delete(h as number),
  };
  const advance = (ms: number): void => {
    const end = c.now + ms;
    for (;;) {
      const due = [...c.timers.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      c.timers.delete(due[0]);
      c.now = Math.max(c.now, due[1].at);
      due[1].fn();
    }
    c.now = end;
  };
  return { c, opts, advance };
}

test('a slot is at most 5% of its delay wide, so a deadline is late by at most that', () => {
  for (const d of [1, 19, 20, 150, 199, 200, 1_999, 2_000, 5_000, 19_999, 20_000, 30_000, 60_000]) {
    const w = slotWidth(d);
    assert.ok(w <= Math.max(1, d * 0.05), `delay ${d}: width ${w}`);
  }
  assert.equal(slotWidth(5_000), 100);
  assert.equal(slotWidth(60_000), 1_000);
});

test('a thousand safety nets set over 50 ms fire on one wake-up of one native timer, none before its deadline', () => {
  const { c, opts, advance } = manual();
  let wakes = 0;
  const wheel = new TimerWheel({ ...opts, onWake: () => wakes++ });
  const deadline = new Map<string, number>();
  const firedAt = new Map<string, number>();
  // A busy controller's passes set their 5 s safety nets a few microseconds apart.
  c.now = 1_000;
  for (let i = 0; i < 1_000; i++) {
    c.now = 1_010 + i * 0.05;
    deadline.set(`k${i}`, c.now + 5_000);
    wheel.set(`k${i}`, 5_000, () => firedAt.set(`k${i}`, c.now));
  }
  assert.equal(c.armed, 1, 'one native timer for all of them');
  advance(6_000);
  assert.equal(firedAt.size, 1_000);
  assert.equal(wakes, 1, 'every deadline fell into one 100 ms slot');
  for (const [k, at] of firedAt) {
    assert.ok(at >= deadline.get(k)!, `${k} early`);
    assert.ok(at - deadline.get(k)! <= 100, `${k} late by more than its slot`);
  }
  assert.equal(wheel.size(), 0);
});

test('deadlines in different slots fire in order, one wake-up per slot; a replaced or cancelled entry never fires', () => {
  const { opts, advance } = manual();
  let wakes = 0;
  const wheel = new TimerWheel({ ...opts, onWake: (n) => (wakes += n > 0 ? 1 : 0) });
  const fired: string[] = [];
  wheel.set('late', 120, () => fired.push('late'));
  wheel.set('early', 30, () => fired.push('early'));
  wheel.set('gone', 60, () => fired.push('gone'));
  wheel.set('moved', 10, () => fired.push('moved-old'));
  wheel.set('moved', 90, () => fired.push('moved'));
  wheel.cancel('gone');
  assert.equal(wheel.has('gone'), false);
  assert.equal(wheel.size(), 3);
  advance(29);
  assert.deepEqual(fired, []);
  advance(1_000);
  assert.deepEqual(fired, ['early', 'moved', 'late']);
  assert.equal(wakes, 3);
});

test('the work queues share the wheel: a timed add still queues its key, and a reconcile taking the key drops its pending add', async () => {
  const { opts, advance } = manual();
  const wheel = new TimerWheel(opts);
  const a = new WorkQueue('a', { wheel, supersedeTimedAdds: true });
  const b = new WorkQueue('b', { wheel, supersedeTimedAdds: true });
  a.addAfter('x', 50);
  b.addAfter('x', 50);
  assert.equal(wheel.size(), 2, 'one entry per queue, though the keys are equal');
  assert.equal(a.len(), 0);
  advance(50);
  assert.equal(await a.get(), 'x');
  a.done('x');
  assert.equal(await b.get(), 'x');
  b.done('x');
  // Superseded: the key is taken before its timed add comes due.
  a.addAfter('y', 200);
  a.add('y');
  assert.equal(await a.get(), 'y');
  a.done('y');
  assert.equal(a.hasTimedAdd('y'), false);
  assert.equal(wheel.size(), 0);
  advance(500);
  assert.equal(a.len(), 0, 'the dropped add never queued the key again');
  a.shutdown();
  b.shutdown();
});
