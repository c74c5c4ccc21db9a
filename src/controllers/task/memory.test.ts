import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskMemory } from './memory.ts';
import type { VMStatus } from '../../api/types.ts';

const key = { namespace: 't', name: 'import' };
const creating = (handoff: string): VMStatus[] => [{ id: 'vm-1', name: 'web', phase: 'Creating', disks: [{ index: 0, vmDisk: 'web-disk-0', handoff }] }];

test('deferred handoff evidence is used only while the task is at the version it was derived from, and goes with a status write or the task', () => {
  const mem = new TaskMemory();
  mem.defer(key, '100', creating('create-claim'));
  assert.deepEqual(mem.deferredVMs(key, '100'), creating('create-claim'), 'the next pass starts from the deferred evidence');
  mem.defer(key, '100', creating('rebind-volume'));
  assert.deepEqual(mem.deferredVMs(key, '100'), creating('rebind-volume'), 'a later deferred step replaces it');
  // Someone else wrote the task (the manager's Degraded, a label): the evidence was derived from an older
  // view, so the pass starts from the status instead, as after a crash.
  assert.equal(mem.deferredVMs(key, '101'), undefined);
  assert.equal(mem.deferredVMs(key, '100'), undefined, 'and the stale entry is gone');
  assert.equal(mem.sizes().deferredStatus, 0);
  mem.defer(key, '102', creating('request-bind'));
  mem.recorded(key);
  assert.equal(mem.deferredVMs(key, '102'), undefined, 'a status write carries everything deferred');
  mem.defer(key, '103', creating('request-bind'));
  mem.dropTask(key);
  assert.equal(mem.sizes().deferredStatus, 0, 'nothing is kept for a task that is gone or finished');
  mem.defer(key, undefined, creating('request-bind'));
  assert.equal(mem.sizes().deferredStatus, 0, 'evidence without the version it came from is never kept');
});

test("the deferral's clock starts at the first deferred pass since the task's last write, and restarts on another version", () => {
  const mem = new TaskMemory();
  assert.equal(mem.deferredFor(key, '100', 5_000), 0, 'nothing deferred');
  mem.defer(key, '100', creating('create-claim'), 1_000);
  mem.defer(key, '100', creating('rebind-volume'), 1_400);
  assert.equal(mem.deferredFor(key, '100', 2_100), 1_100, 'counted from the first deferred pass, not the last');
  assert.equal(mem.deferredFor(key, '101', 2_100), 0, 'another version: the deferred evidence does not apply');
  mem.defer(key, '101', creating('request-bind'), 3_000);
  assert.equal(mem.deferredFor(key, '101', 3_500), 500);
  mem.recorded(key);
  assert.equal(mem.deferredFor(key, '101', 9_000), 0);
});
