// Upstream's own test tables, carried as facts (inputs and expected outputs) and run against the simulator:
// a case the simulator fails is a bug in the simulator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { schedulableOnHost } from '../sim/forklift.ts';

// kubev2v/forklift@v2.11.5 (same at v2.12.5): pkg/controller/plan/scheduler/vsphere/scheduler_test.go
// TestScheduler — MaxInFlight 10; per host its in-flight disks, the pending VMs' costs, and which of them
// schedulable() returns.
const SCHEDULER_TABLE = {
  max: 10,
  hosts: [
    { host: 'hostA', inflight: 6, pending: [6, 5, 4, 7], schedulable: [4] },
    { host: 'hostB', inflight: 10, pending: [10, 0, 1], schedulable: [] },
    { host: 'hostC', inflight: 0, pending: [11, 1, 2, 3, 10], schedulable: [11, 1, 2, 3, 10] },
  ],
};

for (const h of SCHEDULER_TABLE.hosts) {
  test(`upstream TestScheduler, ${h.host} with ${h.inflight} of ${SCHEDULER_TABLE.max} disks in flight: the simulator schedules exactly [${h.schedulable.join(', ')}]`, () => {
    assert.deepEqual(h.pending.filter((cost) => schedulableOnHost(h.inflight, cost, SCHEDULER_TABLE.max)), h.schedulable);
  });
}
