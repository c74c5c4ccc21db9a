// A create answered 409 Conflict (not AlreadyExists) created nothing. The handoff must not record the step
// as taken: a VMDisk create answered Conflict and checkpointed as create-vmdisk made the next pass read the
// missing VMDisk as deleted by someone, and the VM failed OutputDeleted with its data left on Retain. The
// aggregated API behind VMDisk (and any API server under load) can answer a create so; here the fault proxy
// between the controller and the real API server answers each of the handoff's creates that way once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient } from '../../src/runtime/kube.ts';
import { freshNamespace } from './env/index.ts';
import { NO_FAULTS, type FaultProxy } from './chaos/faultproxy.ts';
import { VolumeLedger, createConnectedSource, createTask, importWorld, verifyImport, waitTasksEnded, type TaskRef } from './chaos/fixtures.ts';
import { startInProcessWorld, type InProcessWorld } from './chaos/inprocess.ts';

const world = importWorld('https://vcenter-conflict.example.com/sdk', '192.0.2.73', [
  { id: 'vm-1', name: 'conflict01', disksGiB: [1, 1] },
]);

let w: InProcessWorld;
let proxy: FaultProxy;
let c: KubeClient;

before(async () => {
  // Only forwarding, except for the targeted answers the test sets.
  w = await startInProcessWorld({ world, storageClass: 'conflict', mbPerSecond: 8192, faults: NO_FAULTS });
  c = w.c;
  proxy = w.proxy!;
});

after(async () => {
  await w?.stop();
});

test('a handoff create answered 409 Conflict is not taken for done: the VM ends Succeeded with each VMDisk, claim and DataVolume created once', { timeout: 240_000 }, async () => {
  const ns = await freshNamespace('conflict');
  await createConnectedSource(c, ns, 'vc', world);
  // The first create of each output kind in this namespace is answered Conflict (claims: the handoff's own
  // target claims; the simulated Forklift writes through its own connection, not through the proxy).
  for (const plural of ['persistentvolumeclaims', 'datavolumes', 'vmdisks']) {
    proxy.failNext({ method: 'POST', path: new RegExp(`/namespaces/${ns}/${plural}$`), code: 409 });
  }
  const ledger = new VolumeLedger(c);
  ledger.start(100);
  const task: TaskRef = { namespace: ns, name: 't', vmIds: ['vm-1'] };
  await createTask(c, task, 'vc', 'conflict');
  try {
    await waitTasksEnded(c, [task], 180_000);
  } finally {
    await ledger.stop();
  }
  const report = await verifyImport(c, world, [task], ledger);
  assert.deepEqual(report.problems, [], 'the import is whole');
  assert.equal(report.vmsSucceeded, 1, 'the VM Succeeded');
  assert.equal(proxy.counts['targeted:409'], 3, `each kind's first create was answered Conflict (${JSON.stringify(proxy.counts)})`);
});
