import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { VMStatus } from '../../api/types.ts';
import { StatusBoard, boundedPool } from './board.ts';

const vm = (id: string, phase: VMStatus['phase'] = 'Transferring'): VMStatus => ({ id, name: id, phase });

/** A write that waits until released, recording what each write carried. */
function gatedWriter(): { writes: VMStatus[][]; release: () => void; write: (vms: VMStatus[]) => Promise<void> } {
  const writes: VMStatus[][] = [];
  const gates: Array<() => void> = [];
  return {
    writes,
    release: () => gates.shift()?.(),
    write: (vms) => {
      writes.push(vms);
      return new Promise<void>((r) => gates.push(r));
    },
  };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('StatusBoard', () => {
  it('writes one status at a time, and every request made during a write is answered by one next write', async () => {
    const w = gatedWriter();
    const b = new StatusBoard([vm('a'), vm('b'), vm('c')], w.write);
    const first = b.flush();
    await tick();
    b.set(1, vm('b', 'Creating'));
    const second = b.flush();
    b.set(2, vm('c', 'Creating'));
    const third = b.flush();
    await tick();
    assert.equal(w.writes.length, 1, 'no second write while the first is in flight');
    w.release();
    await first;
    await tick();
    assert.equal(w.writes.length, 2);
    assert.deepEqual(w.writes[1]!.map((v) => v.phase), ['Transferring', 'Creating', 'Creating'], 'the next write carries every change made meanwhile');
    w.release();
    await Promise.all([second, third]);
    assert.equal(w.writes.length, 2, 'two requests during one write cost one more write');
  });

  it('resolves a record only once a write that started after it succeeded', async () => {
    const w = gatedWriter();
    const b = new StatusBoard([vm('a')], w.write);
    void b.flush();
    await tick();
    b.set(0, vm('a', 'Creating'));
    let recorded = false;
    const r = b.flush().then(() => (recorded = true));
    w.release();
    await tick();
    assert.equal(recorded, false, 'the write in flight began before the change: it does not count');
    w.release();
    await r;
    assert.equal(w.writes.at(-1)![0]!.phase, 'Creating');
  });

  it('fails the callers of a failed write and tries again on the next request', async () => {
    let n = 0;
    const b = new StatusBoard([vm('a')], async () => {
      if (n++ === 0) throw new Error('conflict');
    });
    await assert.rejects(b.flush(), /conflict/);
    await b.flush();
    assert.equal(n, 2);
  });
});

describe('boundedPool', () => {
  it('never runs more than n at once, starts items in order, and hands back the ones it did not start', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 10 }), fc.integer({ min: 0, max: 40 }), async (count, n, stopAfter) => {
        const items = Array.from({ length: count }, (_, i) => i);
        let running = 0;
        let peak = 0;
        const started: number[] = [];
        const left = await boundedPool(
          items,
          n,
          async (x) => {
            started.push(x);
            running++;
            peak = Math.max(peak, running);
            await tick();
            running--;
          },
          () => started.length < stopAfter,
        );
        assert.ok(peak <= n);
        assert.deepEqual(started, items.slice(0, started.length), 'started in order');
        assert.deepEqual([...started, ...left], items, 'each item started or handed back, once');
        assert.equal(started.length, Math.min(count, stopAfter));
      }),
    );
  });

  it('waits for every started item before throwing the first error', async () => {
    let finished = 0;
    await assert.rejects(
      boundedPool([1, 2, 3], 3, async (x) => {
        await tick();
        if (x === 1) throw new Error('first');
        await tick();
        finished++;
      }),
      /first/,
    );
    assert.equal(finished, 2, 'the siblings in flight ran to their end');
  });
});
