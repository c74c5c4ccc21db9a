import { test } from 'node:test';
import assert from 'node:assert/strict';
import { advanceProgress, dataVolumeProgress, isStalled, restoreSample, stallMessage } from './progress.ts';

const GiB = 2 ** 30;

test('rate and ETA come from successive observations', () => {
  const a = advanceProgress(undefined, { bytesDone: 0, bytesTotal: 10 * GiB }, 0);
  assert.equal(a.bytesPerSecond, undefined);
  assert.equal(a.etaSeconds, undefined);
  const b = advanceProgress(a.sample, { bytesDone: GiB, bytesTotal: 10 * GiB }, 10_000);
  assert.equal(b.bytesPerSecond, Math.round(GiB / 10));
  assert.equal(b.etaSeconds, 90);
  assert.equal(b.percent, 10);
  // the same observation again keeps the rate and does not reset the sample time
  const c = advanceProgress(b.sample, { bytesDone: GiB, bytesTotal: 10 * GiB }, 15_000);
  assert.equal(c.bytesPerSecond, b.bytesPerSecond);
  assert.equal(c.idleMs, 5_000);
  const d = advanceProgress(c.sample, { bytesDone: 3 * GiB, bytesTotal: 10 * GiB }, 20_000);
  // 2 GiB in 10 s since the last change = 0.2 GiB/s, smoothed with the previous 0.1 GiB/s
  assert.equal(d.bytesPerSecond, Math.round(0.3 * (2 * GiB / 10) + 0.7 * (GiB / 10)));
  assert.equal(d.idleMs, 0);
});

test('at CDI\'s 99.92% plateau the transfer reads as converting, not stalled', () => {
  const total = 100 * GiB;
  const v = advanceProgress({ at: 0, bytesDone: total * 0.9992, bytesTotal: total, lastChangeAt: 0, bytesPerSecond: 1 }, { bytesDone: total * 0.9992, bytesTotal: total }, 3_600_000);
  assert.equal(v.converting, true);
  assert.equal(v.etaSeconds, undefined);
  assert.equal(isStalled({ idleMs: v.idleMs, stallAfterMs: 60_000, converting: v.converting }), false);
});

test('no progress for the configured time is a stall; the message carries claim events and the host diagnosis', () => {
  assert.equal(isStalled({ idleMs: 59_000, stallAfterMs: 60_000, converting: false }), false);
  assert.equal(isStalled({ idleMs: 60_000, stallAfterMs: 60_000, converting: false }), true);
  const m = stallMessage({
    idleMs: 600_000,
    percent: 0,
    events: [{ reason: 'Error', message: 'Unable to connect to vddk data source', involvedObject: { name: 'plan-vm-1-abcde' }, lastTimestamp: '2026-01-01T00:00:00Z' }],
    hostDiagnosis: 'ESXi host host-10 at 10.96.0.15 is inside the Service CIDR 10.96.0.0/12.',
  });
  assert.match(m, /no progress for 10 min \(at 0%\)/);
  assert.match(m, /plan-vm-1-abcde: Error Unable to connect to vddk data source/);
  assert.match(m, /host-10 at 10\.96\.0\.15/);
});

test('claim events that could not be read are said so in the stall message, never reported as no events', () => {
  const m = stallMessage({ idleMs: 120_000, percent: 0, events: [], eventsError: 'the controller may not list events in namespace t (HTTP 403)' });
  assert.match(m, /could not be read: the controller may not list events in namespace t \(HTTP 403\)/);
  assert.doesNotMatch(m, /No events on the transfer claims/);
});

test('after a restart the stall clock counts from the progress time status recorded, and the rate carries on', () => {
  const recorded = { bytesDone: 300, bytesTotal: 1000, bytesPerSecond: 10, lastProgressTime: '2026-11-29T10:00:00Z' };
  const s = restoreSample(recorded)!;
  const t0 = Date.parse('2026-11-29T10:00:00Z');
  assert.deepEqual(s, { at: t0, bytesDone: 300, bytesTotal: 1000, bytesPerSecond: 10, lastChangeAt: t0 });
  // No movement since: idle is measured from the recorded time, not from the restart.
  const still = advanceProgress(s, { bytesDone: 300, bytesTotal: 1000 }, t0 + 9 * 60_000);
  assert.equal(still.idleMs, 9 * 60_000);
  assert.equal(still.bytesPerSecond, 10);
  assert.ok(isStalled({ idleMs: still.idleMs, stallAfterMs: 5 * 60_000, converting: false }));
  // Movement: the rate is computed over the interval since the recorded sample.
  const moved = advanceProgress(s, { bytesDone: 400, bytesTotal: 1000 }, t0 + 10_000);
  assert.equal(moved.idleMs, 0);
  assert.equal(moved.bytesPerSecond, 10);
});

test('status without a running transfer restores nothing: the first observation starts a fresh sample', () => {
  assert.equal(restoreSample({}), undefined);
  assert.equal(restoreSample({ bytesDone: 5, bytesTotal: 10 }), undefined);
  assert.equal(restoreSample({ bytesDone: 5, bytesTotal: 10, lastProgressTime: 'not a time' }), undefined);
  assert.equal(restoreSample({ bytesDone: 0, bytesTotal: 0, lastProgressTime: '2026-11-29T10:00:00Z' }), undefined);
});

const dv = (size: string | undefined, progress: string | undefined, phase = 'ImportInProgress') => ({
  spec: size ? { storage: { resources: { requests: { storage: size } } } } : {},
  status: { phase, ...(progress !== undefined ? { progress } : {}) },
});

test('without a DiskTransfer step, the DataVolumes\' own progress gives the bytes moved, each weighted by its size', () => {
  const p = dataVolumeProgress([dv('10Gi', '50.00%'), dv('30Gi', '10.0%')]);
  assert.deepEqual(p, { bytesTotal: 40 * GiB, bytesDone: 5 * GiB + 3 * GiB });
  // N/A (not started), a Succeeded volume counted in full whatever its text says, the pvc form of the size.
  const q = dataVolumeProgress([dv('10Gi', 'N/A', 'ImportScheduled'), dv('2Gi', '', 'Succeeded'), { spec: { pvc: { resources: { requests: { storage: '4Gi' } } } }, status: { progress: '25%' } }]);
  assert.deepEqual(q, { bytesTotal: 16 * GiB, bytesDone: 2 * GiB + GiB });
  // No DataVolume that states a size: nothing to read.
  assert.equal(dataVolumeProgress([]), undefined);
  assert.equal(dataVolumeProgress([dv(undefined, '40%')]), undefined);
});

test('bytes moving on the DataVolumes keep the stall clock at zero while the pipeline step shows nothing', () => {
  const stallAfterMs = 60_000;
  // The step (named otherwise, or silent) reads 0 for ten minutes; the DataVolume moves every minute.
  let step = advanceProgress(undefined, { bytesDone: 0, bytesTotal: 0 }, 0);
  let dvs = advanceProgress(undefined, dataVolumeProgress([dv('100Gi', '0.00%')])!, 0);
  for (let min = 1; min <= 10; min++) {
    const now = min * 60_000;
    step = advanceProgress(step.sample, { bytesDone: 0, bytesTotal: 0 }, now);
    dvs = advanceProgress(dvs.sample, dataVolumeProgress([dv('100Gi', `${min * 5}.00%`)])!, now);
    assert.equal(isStalled({ idleMs: Math.min(step.idleMs, dvs.idleMs), stallAfterMs, converting: dvs.converting }), false, `minute ${min}`);
  }
  assert.equal(dvs.percent, 50);
  // Once neither moves for the stall period, it is a stall.
  const later = advanceProgress(dvs.sample, dataVolumeProgress([dv('100Gi', '50.00%')])!, 11 * 60_000 + stallAfterMs);
  assert.equal(isStalled({ idleMs: later.idleMs, stallAfterMs, converting: later.converting }), true);
});
