import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { VMStatus } from '../../api/types.ts';
import { aggregatePhase, aggregateProgress, backfillFinished, deriveTaskStatus, formatETA, taskTransfer } from './status.ts';

const now = new Date('2026-01-01T01:00:00Z');
const vm = (id: string, phase: VMStatus['phase'], extra: Partial<VMStatus> = {}): VMStatus => ({ id, name: id, phase, ...extra });

test('the task phase is the least advanced running VM; terminal only when every VM is', () => {
  assert.equal(aggregatePhase([]), 'Pending');
  assert.equal(aggregatePhase([vm('a', 'Transferring'), vm('b', 'Creating')]), 'Transferring');
  assert.equal(aggregatePhase([vm('a', 'Failed'), vm('b', 'Creating')]), 'Creating');
  assert.equal(aggregatePhase([vm('a', 'Succeeded'), vm('b', 'Succeeded')]), 'Succeeded');
  assert.equal(aggregatePhase([vm('a', 'Succeeded'), vm('b', 'Failed')]), 'Failed');
});

test('Ready is True only when every VM succeeded, and records downtime', () => {
  const s = deriveTaskStatus({
    prev: undefined,
    vms: [vm('a', 'Succeeded', { plan: 'p-a', timestamps: { sourcePoweredOff: '2026-01-01T00:00:00Z', transferred: '2026-01-01T00:10:00Z', completed: '2026-01-01T00:12:30Z' }, bytesTotal: 10, bytesDone: 10 })],
    generation: 1,
    now,
  });
  assert.equal(s.phase, 'Succeeded');
  const ready = s.conditions!.find((c) => c.type === 'Ready')!;
  assert.equal(ready.status, 'True');
  assert.equal(ready.observedGeneration, 1);
  assert.equal(s.vms![0]!.downtimeSeconds, 750);
  assert.equal(s.completedAt, '2026-01-01T01:00:00Z');
  assert.equal(s.conditions!.find((c) => c.type === 'Transferred')!.status, 'True');
});

test('a partial failure ends Failed with Ready=False PartiallyFailed naming the failed VM', () => {
  const s = deriveTaskStatus({
    prev: undefined,
    vms: [vm('a', 'Succeeded', { plan: 'p-a' }), vm('b', 'Failed', { plan: 'p-b', reason: 'HostUnreachable', message: 'add spec.hosts', timestamps: { started: 'x' } })],
    generation: 2,
    now,
  });
  const ready = s.conditions!.find((c) => c.type === 'Ready')!;
  assert.equal(s.phase, 'Failed');
  assert.equal(ready.status, 'False');
  assert.equal(ready.reason, 'PartiallyFailed');
  assert.match(ready.message, /b \(b\): HostUnreachable: add spec.hosts/);
  // a failure after preflight is not a preflight failure
  assert.equal(s.conditions!.find((c) => c.type === 'Validated')!.status, 'True');
});

test('a preflight failure of every VM sets Validated=False with that reason', () => {
  const s = deriveTaskStatus({ prev: undefined, vms: [vm('a', 'Failed', { reason: 'OutputExists', message: 'taken' })], generation: 1, now });
  assert.equal(s.conditions!.find((c) => c.type === 'Validated')!.reason, 'OutputExists');
  assert.equal(s.conditions!.find((c) => c.type === 'Ready')!.reason, 'OutputExists');
});

test('while waiting on the source the task is Pending with that reason; lastTransitionTime holds until a flip', () => {
  const a = deriveTaskStatus({ prev: undefined, vms: [], generation: 1, now, waiting: { reason: 'SourceNotReady', message: 'source "vc" is not Ready: ConnectionFailed' } });
  assert.equal(a.phase, 'Pending');
  assert.equal(a.conditions!.find((c) => c.type === 'Ready')!.reason, 'SourceNotReady');
  const later = new Date('2026-01-01T02:00:00Z');
  const b = deriveTaskStatus({ prev: a, vms: [vm('a', 'Transferring', { reason: 'Transferring' })], generation: 1, now: later });
  const ra = a.conditions!.find((c) => c.type === 'Ready')!;
  const rb = b.conditions!.find((c) => c.type === 'Ready')!;
  assert.equal(rb.reason, 'Transferring');
  assert.equal(rb.lastTransitionTime, ra.lastTransitionTime);
});

test('aggregate progress weighs VMs by bytes', () => {
  assert.equal(aggregateProgress([vm('a', 'Transferring', { bytesTotal: 300, bytesDone: 150 }), vm('b', 'Succeeded', { bytesTotal: 100, bytesDone: 0 })]), 62.5);
});

test('progress counts what was imported: a failed VM counts as nothing imported, by bytes or, where a size is unknown, VM by VM', () => {
  assert.equal(aggregateProgress([vm('a', 'Succeeded', { bytesTotal: 100, bytesDone: 100 }), vm('b', 'Failed', { bytesTotal: 300, bytesDone: 300 })]), 25);
  assert.equal(aggregateProgress([vm('a', 'Succeeded', { bytesTotal: 100 }), vm('b', 'Failed')]), 50, 'a VM failed at preflight never told its size');
  assert.equal(aggregateProgress([vm('a', 'Failed'), vm('b', 'Failed')]), 0);
  assert.equal(aggregateProgress([vm('a', 'Succeeded'), vm('b', 'Succeeded')]), 100);
  assert.equal(aggregateProgress([]), 0);
});

test('a Stalled or Failed VM shows no ETA and no rate; a moving one keeps them', () => {
  const s = deriveTaskStatus({
    prev: undefined,
    vms: [
      vm('a', 'Transferring', { reason: 'Stalled', etaSeconds: 120, bytesPerSecond: 10 }),
      vm('b', 'Failed', { reason: 'Failed', etaSeconds: 30, bytesPerSecond: 5 }),
      vm('c', 'Transferring', { reason: 'Transferring', etaSeconds: 60, bytesPerSecond: 7 }),
    ],
    generation: 1,
    now,
  });
  assert.deepEqual(s.vms!.map((v) => [v.id, v.etaSeconds, v.bytesPerSecond]), [['a', undefined, undefined], ['b', undefined, undefined], ['c', 60, 7]]);
});

test('Finished turns True on any terminal outcome with the outcome as its reason, and stays False with InProgress while a VM runs', () => {
  const finished = (s: ReturnType<typeof deriveTaskStatus>) => s.conditions!.find((c) => c.type === 'Finished')!;
  const running = deriveTaskStatus({ prev: undefined, vms: [vm('a', 'Succeeded', { plan: 'p' }), vm('b', 'Transferring', { plan: 'q' })], generation: 1, now });
  assert.deepEqual([finished(running).status, finished(running).reason], ['False', 'InProgress']);
  const waiting = deriveTaskStatus({ prev: undefined, vms: [], generation: 1, now, waiting: { reason: 'SourceNotReady', message: 'not yet' } });
  assert.deepEqual([finished(waiting).status, finished(waiting).reason], ['False', 'InProgress']);

  const ok = deriveTaskStatus({ prev: running, vms: [vm('a', 'Succeeded', { plan: 'p' }), vm('b', 'Succeeded', { plan: 'q' })], generation: 1, now: new Date('2026-01-01T02:00:00Z') });
  assert.deepEqual([finished(ok).status, finished(ok).reason], ['True', 'Succeeded']);
  assert.equal(finished(ok).lastTransitionTime, '2026-01-01T02:00:00Z');

  const failed = deriveTaskStatus({ prev: running, vms: [vm('a', 'Failed', { reason: 'StorageClassWaitForFirstConsumer', message: 'class local binds WaitForFirstConsumer' })], generation: 1, now });
  assert.deepEqual([finished(failed).status, finished(failed).reason], ['True', 'StorageClassWaitForFirstConsumer']);
  assert.match(finished(failed).message, /class local binds WaitForFirstConsumer/);
  assert.equal(failed.conditions!.find((c) => c.type === 'Ready')!.status, 'False');

  const partial = deriveTaskStatus({ prev: undefined, vms: [vm('a', 'Succeeded', { plan: 'p' }), vm('b', 'Failed', { plan: 'q', reason: 'TransferFailed' })], generation: 1, now });
  assert.deepEqual([finished(partial).status, finished(partial).reason], ['True', 'PartiallyFailed']);
});

test('a task that ended before Finished existed gets Finished=True from its Ready condition, dated when it completed; nothing else is added twice', () => {
  const old = {
    phase: 'Failed' as const,
    completedAt: '2025-12-24T10:00:00Z',
    conditions: [{ type: 'Ready', status: 'False' as const, reason: 'HostUnreachable', message: 'host-2 unreachable', lastTransitionTime: '2025-12-24T10:00:00Z', observedGeneration: 1 }],
  };
  const s = backfillFinished(old, 1, now)!;
  const f = s.conditions!.find((c) => c.type === 'Finished')!;
  assert.deepEqual([f.status, f.reason, f.message, f.lastTransitionTime], ['True', 'HostUnreachable', 'host-2 unreachable', '2025-12-24T10:00:00Z']);
  assert.deepEqual(s.conditions!.find((c) => c.type === 'Ready'), old.conditions[0]);
  assert.equal(backfillFinished(s, 1, now), undefined, 'already there');
  assert.equal(backfillFinished({ phase: 'Transferring', conditions: [] }, 1, now), undefined, 'still running');
  assert.equal(backfillFinished(undefined, 1, now), undefined);
});

test('a warm VM precopying or cutting over is the task’s Transferring, behind a VM still validating and ahead of one creating', () => {
  assert.equal(aggregatePhase([vm('a', 'Precopying'), vm('b', 'Creating')]), 'Transferring');
  assert.equal(aggregatePhase([vm('a', 'CuttingOver'), vm('b', 'Succeeded')]), 'Transferring');
  assert.equal(aggregatePhase([vm('a', 'CuttingOver'), vm('b', 'Validating')]), 'Validating');
});

test('a task whose least advanced VM waits for a transfer slot is Queued, behind one validating and ahead of one transferring', () => {
  assert.equal(aggregatePhase([vm('a', 'Queued'), vm('b', 'Transferring')]), 'Queued');
  assert.equal(aggregatePhase([vm('a', 'Queued'), vm('b', 'Validating')]), 'Validating');
  const st = deriveTaskStatus({ prev: undefined, vms: [{ ...vm('a', 'Queued'), reason: 'Queued', message: 'Waiting for 1 disk of transfer slots on ESXi host esx1' }], generation: 1, now: new Date('2026-01-01T00:00:00Z') });
  assert.equal(st.conditions?.find((c) => c.type === 'Ready')?.reason, 'Queued');
  assert.match(st.message ?? '', /Waiting for 1 disk of transfer slots on ESXi host esx1/);
});

test('the task’s transfer sums bytes over its VMs, queued ones by their disks’ capacities, leaves failed ones out, and carries the ETA in seconds and in words', () => {
  const G = 1024 ** 3;
  const vms: VMStatus[] = [
    { id: 'a', name: 'a', phase: 'Transferring', bytesTotal: 10 * G, bytesDone: 4 * G, bytesPerSecond: 100e6 },
    { id: 'b', name: 'b', phase: 'Queued', transferSlot: { vcenter: 'vc', host: 'host-1', disks: 2, diskBytes: [3 * G, 7 * G] } },
    { id: 'c', name: 'c', phase: 'Succeeded', bytesTotal: 5 * G, bytesDone: 5 * G },
    { id: 'd', name: 'd', phase: 'Failed', bytesTotal: 50 * G, bytesDone: 1 * G },
  ];
  assert.deepEqual(taskTransfer(vms, 4000), { bytesDone: 9 * G, bytesTotal: 25 * G, bytesPerSecond: 100e6, etaSeconds: 4000, eta: '1h7m' });
  assert.equal(taskTransfer(vms, undefined)?.etaSeconds, undefined, 'no rate measured: no ETA invented');
  const st = deriveTaskStatus({ prev: undefined, vms, generation: 1, now: new Date('2026-01-01T00:00:00Z'), etaSeconds: 90 });
  assert.equal(st.transfer?.eta, '2m');
  assert.equal(taskTransfer([{ id: 'c', name: 'c', phase: 'Creating', bytesTotal: G, bytesDone: G, timestamps: { transferred: '2026-01-01T00:00:00Z' } }], undefined)?.etaSeconds, 0);
  assert.deepEqual([formatETA(45), formatETA(720), formatETA(3600), formatETA(50 * 3600)], ['45s', '12m', '1h', '2d2h']);
});
