// slotCost: what a VM holding a slot still costs its host, from its Migration's status (Forklift's cost()).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { slotCost } from './cost.ts';

const MiB = 1024 * 1024;

test('a VM whose Migration reports nothing yet costs all its disks', () => {
  assert.deepEqual(slotCost(undefined, 3), { disksRemaining: 3 });
  assert.deepEqual(slotCost({ phase: 'Started', pipeline: [{ name: 'Initialize' }] }, 3), { disksRemaining: 3 });
});

test('each disk whose transfer task completed frees its slot, and the others’ bytes left are read in MiB', () => {
  const c = slotCost(
    {
      phase: 'CopyDisks',
      pipeline: [
        { name: 'Initialize', tasks: [] },
        { name: 'DiskTransfer', tasks: [{ phase: 'Completed', progress: { total: 100, completed: 100 } }, { phase: 'Running', progress: { total: 2048, completed: 1024 } }, { phase: 'Pending', progress: { total: 10, completed: 0 } }] },
      ],
    },
    3,
  );
  assert.deepEqual(c, { disksRemaining: 2, disksLeft: [0, 1024 * MiB, 10 * MiB] });
});

test('once the disks are copied (Forklift builds the VM) the VM costs nothing, as Forklift’s scheduler counts it', () => {
  for (const phase of ['CreateVM', 'PostHook', 'Completed', 'ConvertGuest', 'CreateGuestConversionPod', 'CopyingPaused']) assert.equal(slotCost({ phase }, 4).disksRemaining, 0, phase);
});

test('a virt-v2v transfer costs its disks, and a completed allocation opens nothing on the host', () => {
  const c = slotCost({ phase: 'CopyDisksVirtV2V', pipeline: [{ name: 'DiskAllocation', tasks: [{ phase: 'Completed' }, { phase: 'Completed' }] }, { name: 'DiskTransferV2v', tasks: [{ phase: 'Running', progress: { total: 8, completed: 2 } }, { phase: 'Pending', progress: { total: 8, completed: 0 } }] }] }, 2);
  assert.equal(c.disksRemaining, 2);
});
