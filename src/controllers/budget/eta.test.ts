// taskProgress / HostRates: a whole task's bytes, rate and ETA, queued VMs estimated from the rates of
// their hosts in this campaign.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { HostRates, taskProgress, type HostLoad, type VMProgress } from './eta.ts';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

test('the task’s bytes are the sum over its VMs, and its rate the sum of its transfers’ rates', () => {
  const p = taskProgress(
    [
      { host: 'h1', bytesTotal: 10 * GiB, bytesDone: 4 * GiB, state: 'transferring', bytesPerSecond: 50 * MiB },
      { host: 'h1', bytesTotal: 6 * GiB, bytesDone: 6 * GiB, state: 'done' },
      { host: 'h2', bytesTotal: 2 * GiB, bytesDone: 0, state: 'queued', bytesAhead: 0 },
    ],
    new Map([['h1', { inFlightBytes: 6 * GiB, bytesPerSecond: 100 * MiB }]]),
  );
  assert.equal(p.bytesTotal, 18 * GiB);
  assert.equal(p.bytesDone, 10 * GiB);
  assert.equal(p.bytesPerSecond, 50 * MiB);
  // h2 is not measured yet: it borrows h1's rate; its ETA (2 GiB at 100 MiB/s, 21 s) is below the transfer's (6 GiB at 50 MiB/s).
  assert.equal(p.etaSeconds, Math.ceil((6 * GiB) / (50 * MiB)));
});

test('a queued VM is done once its host has drained what transfers now, what goes before it, and itself', () => {
  const hosts = new Map<string, HostLoad>([['h1', { inFlightBytes: 30 * GiB, bytesPerSecond: 300 * MiB }]]);
  const p = taskProgress([{ host: 'h1', bytesTotal: 15 * GiB, bytesDone: 0, state: 'queued', bytesAhead: 45 * GiB }], hosts);
  assert.equal(p.etaSeconds, Math.ceil((90 * GiB) / (300 * MiB)));
  assert.equal(p.bytesPerSecond, 0);
});

test('with no rate measured anywhere the ETA is unknown, not invented', () => {
  const p = taskProgress([{ host: 'h1', bytesTotal: GiB, bytesDone: 0, state: 'queued' }], new Map());
  assert.equal(p.etaSeconds, undefined);
});

test('a task whose every byte is copied has an ETA of zero', () => {
  assert.equal(taskProgress([{ host: 'h', bytesTotal: GiB, bytesDone: GiB, state: 'done' }], new Map()).etaSeconds, 0);
});

test('property: more bytes ahead in the queue never brings the ETA closer', () => {
  fc.assert(
    fc.property(fc.nat(1e12), fc.nat(1e12), fc.integer({ min: 1, max: 1e12 }), fc.integer({ min: 1, max: 1e9 }), fc.nat(1e12), (a, b, size, rate, inFlight) => {
      const hosts = new Map([['h', { inFlightBytes: inFlight, bytesPerSecond: rate }]]);
      const eta = (ahead: number): number => taskProgress([{ host: 'h', bytesTotal: size, bytesDone: 0, state: 'queued', bytesAhead: ahead }], hosts).etaSeconds!;
      assert.ok(eta(Math.min(a, b)) <= eta(Math.max(a, b)));
    }),
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

test('VMs of a task spread over hosts: the ETA is its slowest host’s', () => {
  const vms: VMProgress[] = [
    { host: 'fast', bytesTotal: 100 * GiB, bytesDone: 0, state: 'queued', bytesAhead: 0 },
    { host: 'slow', bytesTotal: 100 * GiB, bytesDone: 0, state: 'queued', bytesAhead: 0 },
  ];
  const p = taskProgress(vms, new Map([['fast', { inFlightBytes: 0, bytesPerSecond: 1000 * MiB }], ['slow', { inFlightBytes: 0, bytesPerSecond: 100 * MiB }]]));
  assert.equal(p.etaSeconds, 1024);
});
