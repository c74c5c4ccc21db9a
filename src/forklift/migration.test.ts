import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MB, currentStep, readVMMigration, sourcePoweredOff, transferDone } from './migration.ts';

const plan = {
  status: {
    migration: {
      vms: [
        {
          id: 'vm-1',
          phase: 'CopyDisks',
          started: '2026-01-01T00:00:00Z',
          pipeline: [
            { name: 'Initialize', phase: 'Completed', started: '2026-01-01T00:00:00Z', completed: '2026-01-01T00:00:10Z' },
            { name: 'DiskTransfer', phase: 'Running', started: '2026-01-01T00:00:10Z', progress: { total: 2048, completed: 512 }, annotations: { unit: 'MB' } },
            { name: 'VirtualMachineCreation', phase: 'Pending' },
          ],
        },
        {
          id: 'vm-2',
          phase: 'Completed',
          error: { phase: 'CopyDisks', reasons: ["Unable to connect to vddk data source: nbd_connect_uri: the server has no export named ''"] },
          conditions: [{ type: 'Failed', status: 'True' }],
          pipeline: [{ name: 'DiskTransfer', phase: 'Completed', progress: { total: 10, completed: 0 }, tasks: [{ name: 'd', error: { reasons: ['disk error'] } }] }],
        },
      ],
    },
  },
};

test('a VM\'s run is read from the Plan: phase, step, bytes from the DiskTransfer step in MiB', () => {
  const m = readVMMigration(plan, 'vm-1')!;
  assert.equal(m.phase, 'CopyDisks');
  assert.equal(currentStep(m), 'DiskTransfer');
  assert.deepEqual(m.transfer, { totalBytes: 2048 * MB, doneBytes: 512 * MB, phase: 'Running', started: '2026-01-01T00:00:10Z', completed: undefined });
  assert.equal(sourcePoweredOff(m), true);
  assert.equal(transferDone(m), false);
  assert.equal(m.failed, false);
});

test('error reasons of the VM and of its steps\' tasks are collected in order', () => {
  const m = readVMMigration(plan, 'vm-2')!;
  assert.equal(m.failed, true);
  assert.deepEqual(m.errors, ["Unable to connect to vddk data source: nbd_connect_uri: the server has no export named ''", 'disk error']);
});

test('a VM the Plan does not list yet reads as undefined; a Migration\'s status.vms is read too', () => {
  assert.equal(readVMMigration(plan, 'vm-3'), undefined);
  assert.equal(readVMMigration({ status: { vms: [{ id: 'vm-3', phase: 'Started' }] } }, 'vm-3')?.phase, 'Started');
  assert.equal(sourcePoweredOff(readVMMigration({ status: { vms: [{ id: 'vm-3', phase: 'PowerOffSource' }] } }, 'vm-3')!), false);
});
