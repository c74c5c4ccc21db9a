import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { VMImportTask } from '../api/types.ts';
import { readVMMigration, renderMigration } from './migration.ts';
import { renderPlan } from './plan.ts';
import { cutoverPatch, importMode, precopySummary, taskCutover, warmSourcePoweredOff, warmStage } from './warm.ts';

const base: VMImportTask = {
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportTask',
  metadata: { name: 'web', namespace: 'tenant-a', uid: 'uid-1' },
  spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1' }] },
};
const warm = (cutover?: string): VMImportTask => ({ ...base, spec: { ...base.spec, mode: 'warm', ...(cutover ? { cutover } : {}) } });
const p = (n: string) => ({ name: n, namespace: 'tenant-a' });
const planOf = (t: VMImportTask) => renderPlan({ task: t, vmId: 'vm-1', providers: { source: p('src'), destination: p('dst') }, networkMap: p('nm'), storageMap: p('sm') });

test('a warm task renders a warm Plan (type and the pre-2.8 boolean agree); a task without a mode stays cold', () => {
  const w = planOf(warm()).spec as Record<string, unknown>;
  assert.equal(w.type, 'warm');
  assert.equal(w.warm, true);
  const c = planOf(base).spec as Record<string, unknown>;
  assert.equal(c.type, 'cold');
  assert.equal(c.warm, false);
  assert.equal(importMode(base), 'cold');
});

test('the Migration carries the task’s cutover, in seconds, only for a warm task', () => {
  const plan = { metadata: { name: 'plan-x', namespace: 'tenant-a', uid: 'plan-uid' } };
  assert.equal((renderMigration(warm('2030-01-02T03:04:05.678Z'), 'vm-1', plan).spec as { cutover?: string }).cutover, '2030-01-02T03:04:05Z');
  assert.equal((renderMigration(warm(), 'vm-1', plan).spec as { cutover?: string }).cutover, undefined);
  assert.equal((renderMigration({ ...base, spec: { ...base.spec, cutover: '2030-01-02T03:04:05Z' } }, 'vm-1', plan).spec as { cutover?: string }).cutover, undefined);
  assert.equal(taskCutover(warm('not a time')), undefined);
});

test('the warm itinerary’s phases map to precopy, cutover and after, and the source is off from WaitForPowerOff on', () => {
  for (const ph of ['Started', 'CreateInitialSnapshot', 'CopyDisks', 'CopyingPaused', 'CreateSnapshot', 'AddCheckpoint']) {
    assert.equal(warmStage({ phase: ph }), 'precopy', ph);
    assert.equal(warmSourcePoweredOff({ phase: ph }), false, ph);
  }
  for (const ph of ['StorePowerState', 'PowerOffSource']) {
    assert.equal(warmStage({ phase: ph }), 'cutover', ph);
    assert.equal(warmSourcePoweredOff({ phase: ph }), false, ph);
  }
  for (const ph of ['WaitForPowerOff', 'CreateFinalSnapshot', 'Finalize', 'WaitForFinalSnapshotRemoval']) {
    assert.equal(warmStage({ phase: ph }), 'cutover', ph);
    assert.equal(warmSourcePoweredOff({ phase: ph }), true, ph);
  }
  for (const ph of ['CreateVM', 'Completed']) assert.equal(warmSourcePoweredOff({ phase: ph }), true, ph);
});

test('Forklift’s warm record is read from the VM status: finished precopies, the last one’s duration, the next one’s time', () => {
  const mig = {
    metadata: { name: 'm' },
    status: {
      vms: [
        {
          id: 'vm-1',
          phase: 'CopyingPaused',
          pipeline: [],
          warm: {
            successes: 2,
            failures: 1,
            consecutiveFailures: 0,
            nextPrecopyAt: '2030-01-01T01:00:00Z',
            precopies: [
              { start: '2030-01-01T00:00:00Z', end: '2030-01-01T00:10:00Z', snapshot: 'snapshot-1' },
              { start: '2030-01-01T00:30:00Z', end: '2030-01-01T00:31:30Z', snapshot: 'snapshot-2' },
              { start: '2030-01-01T00:59:00Z', snapshot: 'snapshot-3' },
            ],
          },
        },
      ],
    },
  };
  const run = readVMMigration(mig, 'vm-1')!;
  assert.equal(run.warm?.successes, 2);
  assert.deepEqual(precopySummary(run), { precopies: 2, lastPrecopySeconds: 90, nextPrecopyAt: '2030-01-01T01:00:00Z' });
  assert.deepEqual(precopySummary({}), { precopies: 0, lastPrecopySeconds: undefined, nextPrecopyAt: undefined });
});

test('the Migration’s cutover is set, or moved earlier, never later', () => {
  assert.equal(cutoverPatch(undefined, undefined), undefined);
  assert.equal(cutoverPatch('2030-01-01T00:00:00Z', undefined), '2030-01-01T00:00:00Z');
  assert.equal(cutoverPatch('2029-12-31T00:00:00Z', '2030-01-01T00:00:00Z'), '2029-12-31T00:00:00Z');
  assert.equal(cutoverPatch('2030-01-02T00:00:00Z', '2030-01-01T00:00:00Z'), undefined);
  assert.equal(cutoverPatch('2030-01-01T00:00:00Z', '2030-01-01T00:00:00Z'), undefined);
});
