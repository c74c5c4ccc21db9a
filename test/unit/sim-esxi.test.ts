// The simulated ESXi hosts (test/sim/esxi.ts): shared NFC bandwidth, the connection ceiling and VDDK's
// error past it, several hosts with their own bandwidths, and the peak of transfers per host.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EsxiHosts, NFC_CONNECTION_CEILING } from '../sim/esxi.ts';

const MB = 1e6;

test('one transfer alone moves at the host’s whole bandwidth, two share it equally', () => {
  const h = new EsxiHosts([{ id: 'host-1', bandwidthBytesPerSecond: 100 * MB }]);
  assert.deepEqual(h.start('host-1', 'a', 1000 * MB, 0), { ok: true });
  assert.equal(h.rate('a', 0), 100 * MB);
  assert.equal(h.bytesDone('a', 2000), 200 * MB);
  h.start('host-1', 'b', 1000 * MB, 2000);
  assert.equal(h.rate('a', 2000), 50 * MB);
  assert.equal(h.rate('b', 2000), 50 * MB);
  assert.equal(h.hostRate('host-1', 2000), 100 * MB);
  assert.equal(h.bytesDone('a', 4000), 300 * MB);
  assert.equal(h.bytesDone('b', 4000), 100 * MB);
});

test('a finished transfer gives its share back to the others', () => {
  const h = new EsxiHosts([{ id: 'h', bandwidthBytesPerSecond: 100 * MB }]);
  h.start('h', 'small', 100 * MB, 0);
  h.start('h', 'big', 1000 * MB, 0);
  const next = h.nextCompletion()!;
  assert.deepEqual(next, { at: 2000, id: 'small' });
  assert.equal(h.complete('small', 2000), true);
  assert.equal(h.rate('big', 2000), 100 * MB, 'a copied stream moves nothing and takes no share');
  assert.equal(h.finish('small', 2000), 100 * MB);
  assert.equal(h.open('h'), 1);
  assert.deepEqual(h.nextCompletion(), { at: 2000 + 9000, id: 'big' });
});

test('past the host’s NFC connection ceiling a new transfer fails with the VDDK’s error', () => {
  const h = new EsxiHosts([{ id: 'h', bandwidthBytesPerSecond: 100 * MB }]);
  for (let i = 0; i < NFC_CONNECTION_CEILING; i++) assert.equal(h.start('h', `d${i}`, MB, 0).ok, true);
  const r = h.start('h', 'one-too-many', MB, 0, '[datastore1] web01/web01.vmdk');
  assert.equal(r.ok, false);
  assert.equal(
    !r.ok && r.error,
    'Unable to connect to vddk data source: nbdkit: vddk[1]: error: VixDiskLib_Open: [datastore1] web01/web01.vmdk: Memory allocation failed. Out of memory. (DiskLib error 802: NBD_ERR_INSUFFICIENT_RESOURCES)',
  );
  assert.equal(h.open('h'), NFC_CONNECTION_CEILING);
  // A connection released makes room again.
  h.finish('d0', 1);
  assert.equal(h.start('h', 'now-fits', MB, 1).ok, true);
  const s = h.stats()[0]!;
  assert.equal(s.peak, NFC_CONNECTION_CEILING);
  assert.equal(s.failed, 1);
  assert.equal(s.ceiling, 48);
});

test('hosts of different bandwidths serve their own transfers, each with its own ceiling and peak', () => {
  const h = new EsxiHosts([
    { id: 'fast', bandwidthBytesPerSecond: 400 * MB },
    { id: 'slow', bandwidthBytesPerSecond: 100 * MB, connectionCeiling: 2 },
  ]);
  h.start('fast', 'f1', 400 * MB, 0);
  h.start('slow', 's1', 400 * MB, 0);
  h.start('slow', 's2', 400 * MB, 0);
  assert.equal(h.start('slow', 's3', 400 * MB, 0).ok, false);
  assert.equal(h.start('fast', 'f2', 400 * MB, 0).ok, true);
  assert.equal(h.rate('f1', 0), 200 * MB);
  assert.equal(h.rate('s1', 0), 50 * MB);
  assert.deepEqual(
    h.stats().map((s) => [s.id, s.peak, s.failed]),
    [['fast', 2, 0], ['slow', 2, 1]],
  );
});

test('a per-stream bound caps one transfer below the host’s bandwidth until enough streams share it', () => {
  const h = new EsxiHosts([{ id: 'h', bandwidthBytesPerSecond: 300 * MB, perStreamBytesPerSecond: 100 * MB }]);
  h.start('h', 'a', 10_000 * MB, 0);
  assert.equal(h.hostRate('h', 0), 100 * MB);
  h.start('h', 'b', 10_000 * MB, 0);
  h.start('h', 'c', 10_000 * MB, 0);
  h.start('h', 'd', 10_000 * MB, 0);
  assert.equal(h.hostRate('h', 0), 300 * MB);
  assert.equal(h.rate('a', 0), 75 * MB);
});

test('property: a host never moves more than its bandwidth allows, and every byte of a transfer arrives once', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 1000 }),
      fc.array(fc.record({ bytes: fc.integer({ min: 1, max: 5000 }), at: fc.nat(10_000) }), { minLength: 1, maxLength: 30 }),
      (bw, xs) => {
        const h = new EsxiHosts([{ id: 'h', bandwidthBytesPerSecond: bw * MB, connectionCeiling: 1000 }]);
        const starts = xs.map((x, i) => ({ ...x, id: `t${i}` })).sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1));
        let now = 0;
        for (const s of starts) {
          now = s.at;
          h.start('h', s.id, s.bytes * MB, now);
        }
        // Run to the end by the completions alone.
        for (let n = h.nextCompletion(); n; n = h.nextCompletion()) {
          now = n.at;
          assert.equal(h.complete(n.id, now), true);
          h.finish(n.id, now);
        }
        const total = xs.reduce((a, x) => a + x.bytes * MB, 0);
        const s = h.stats()[0]!;
        assert.ok(Math.abs(s.bytesMoved - total) < 1e-3 * total);
        const first = starts[0]!.at;
        assert.ok(now - first >= (total / (bw * MB)) * 1000 * (1 - 1e-9), 'faster than the bandwidth');
        assert.equal(h.open('h'), 0);
      },
    ),
  );
});

test('a transfer copied between two looks hands its share to the others from that instant, not from the next look', () => {
  const h = new EsxiHosts([{ id: 'h', bandwidthBytesPerSecond: 100 * MB }]);
  h.start('h', 'small', 50 * MB, 0);
  h.start('h', 'big', 1000 * MB, 0);
  // small is copied at 1 s (50 MB each); big then runs alone: 50 + 100·9 MB by 10 s.
  assert.equal(Math.round(h.bytesDone('big', 10_000) / MB), 950);
});

test('a held transfer keeps its connection but moves nothing and leaves its share to the others', () => {
  const h = new EsxiHosts([{ id: 'h', bandwidthBytesPerSecond: 100 * MB, connectionCeiling: 2 }]);
  h.start('h', 'stuck', 1000 * MB, 0);
  h.start('h', 'other', 1000 * MB, 0);
  h.hold('stuck', true, 1000);
  assert.equal(h.bytesDone('stuck', 3000), 50 * MB, 'it moved its half until held, nothing since');
  assert.equal(h.rate('other', 3000), 100 * MB);
  assert.equal(h.bytesDone('other', 3000), 250 * MB);
  assert.equal(h.start('h', 'third', MB, 3000).ok, false, 'a held stream still counts against the ceiling');
  assert.deepEqual(h.nextCompletion(), { at: 3000 + 7500, id: 'other' }, 'a held stream never completes on its own');
  h.hold('stuck', false, 3000);
  assert.equal(h.rate('stuck', 3000), 50 * MB);
});

test('an unlimited host moves each stream at its per-stream bound, however many there are', () => {
  const h = new EsxiHosts([{ id: 'h', bandwidthBytesPerSecond: Infinity, perStreamBytesPerSecond: 10 * MB }]);
  for (let i = 0; i < 5; i++) h.start('h', `d${i}`, 100 * MB, 0);
  assert.equal(h.bytesDone('d4', 2000), 20 * MB);
  assert.equal(h.hostRate('h', 2000), 50 * MB);
  assert.throws(() => new EsxiHosts([{ id: 'x', bandwidthBytesPerSecond: Infinity }]), /finite perStreamBytesPerSecond/);
});

test('property: on an epoch-milliseconds clock, ticked as the simulator ticks it, every transfer completes in the time its rate allows', () => {
  // At 1.8e12 ms a double resolves about 2.4e-4 ms: a last few hundred bytes that take less than that once
  // left advance() stepping to the instant it stood at, forever (the simulator hung).
  const T = 1_764_806_400_000;
  const GiB = 2 ** 30;
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 8 * GiB }),
      fc.array(fc.double({ min: 90, max: 110, noNaN: true }), { minLength: 1, maxLength: 8 }),
      (bytes, jitter) => {
        const h = new EsxiHosts([{ id: 'h', bandwidthBytesPerSecond: Infinity, perStreamBytesPerSecond: GiB }], T);
        h.start('h', 'a', bytes, T);
        let now = T;
        let ticks = 0;
        while (!h.complete('a', now)) now += jitter[ticks++ % jitter.length]!;
        return now - T <= (bytes / GiB) * 1000 + 110;
      },
    ),
    { numRuns: 300 },
  );
});
