// A VM whose transfer claims are still Pending after Forklift reported the copy done fails,
// saying nothing was copied (src/forklift/failures.ts claimsPendingAfterCopy; decide.ts, wiring I).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { VMStatus } from '../../api/types.ts';
import type { VMMigration } from '../../forklift/migration.ts';
import { nextVMAction, type VMObservation } from './decide.ts';

const T0 = new Date('2026-01-01T00:00:00Z');
const status: VMStatus = { id: 'vm-1', name: 'web01', phase: 'Creating', plan: 'p', timestamps: { started: '2026-01-01T00:00:00Z', transferred: '2026-01-01T00:01:00Z' } } as VMStatus;
const run: VMMigration = { id: 'vm-1', phase: 'Completed', pipeline: [{ name: 'DiskTransfer', phase: 'Completed' }], errors: [], succeeded: true, failed: false, canceled: false, pending: false, transfer: { totalBytes: 1, doneBytes: 1, phase: 'Completed' } } as VMMigration;
const observe = (pendingClaims: string[], handoffStarted = false): VMObservation => ({
  status,
  migrationName: 'm',
  now: T0,
  stallAfterMs: 1e12,
  plan: { verdict: { ready: true, blockers: [], executing: false, succeeded: true, failed: false, canceled: false } },
  migration: { conditions: [] },
  run,
  outputs: { handoffStarted, succeededWithoutOutput: false, pendingClaims },
});

test('a transfer claim still Pending once Forklift reported the copy done fails the VM: nothing was copied', () => {
  const a = nextVMAction(observe(['p-vm-1-abc']));
  assert.equal(a.type, 'fail');
  assert.equal(a.status.phase, 'Failed');
  assert.equal(a.status.reason, 'StorageClassWaitForFirstConsumer');
  assert.match(a.status.message ?? '', /p-vm-1-abc is still Pending: nothing was copied/);
});

test('bound claims, or a handoff already under way, go to the handoff', () => {
  assert.equal(nextVMAction(observe([])).type, 'handoff');
  assert.equal(nextVMAction(observe(['p-vm-1-abc'], true)).type, 'handoff');
});
