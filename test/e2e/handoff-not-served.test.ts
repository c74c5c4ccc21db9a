// A bare 404 is not a deleted object. A kube-apiserver that has just restarted answers custom-resource
// paths "404 page not found" (plain text, no Status) until its CRD informer has synced, and an aggregated
// API whose APIService is not registered yet answers the same; an object that is really gone is answered
// with a Status whose reason is NotFound. Here the fault proxy between the controller and the real API
// server answers the controller's reads of the handoff's own DataVolume and VMDisk so, from the moment the
// handoff has created the DataVolume, for a bounded number of requests. Taking those answers as "gone"
// fails the VM OutputDeleted; the VM must instead end Succeeded, its volume the one its transfer filled.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { freshNamespace } from './env/index.ts';
import { BARE_404, NO_FAULTS, type FaultProxy } from './chaos/faultproxy.ts';
import { VolumeLedger, createConnectedSource, createTask, importWorld, verifyImport, waitTasksEnded, type TaskRef } from './chaos/fixtures.ts';
import { startInProcessWorld, type InProcessWorld } from './chaos/inprocess.ts';

const world = importWorld('https://vcenter-not-served.example.com/sdk', '192.0.2.74', [{ id: 'vm-1', name: 'notserved01', disksGiB: [1] }]);
/** Reads answered a bare 404: more than one read's retries, so that some reach the controller as errors. */
const BUDGET = 24;

let w: InProcessWorld;
let proxy: FaultProxy;
let c: KubeClient;

before(async () => {
  w = await startInProcessWorld({ world, storageClass: 'not-served', mbPerSecond: 8192, faults: NO_FAULTS });
  c = w.c;
  proxy = w.proxy!;
});

after(async () => {
  proxy?.setInterceptor(undefined);
  await w?.stop();
});

test('a read of a handoff output answered a bare 404 during the handoff is not taken for a deleted output: the VM ends Succeeded, its volume intact', { timeout: 120_000 }, async () => {
  const ns = await freshNamespace('notserved');
  await createConnectedSource(c, ns, 'vc', world);
  // The handoff's outputs only (its DataVolume vm-disk-…, its VMDisk), by name: Forklift's transfer
  // DataVolumes, lists and watches are forwarded.
  const outputRead = new RegExp(`^/apis/(cdi\\.kubevirt\\.io/v1beta1/namespaces/${ns}/datavolumes/vm-disk-[^/]+|apps\\.cozystack\\.io/v1alpha1/namespaces/${ns}/vmdisks/[^/]+)$`);
  let answered = 0;
  let armed = false;
  const arm = (): void => {
    if (armed) return;
    armed = true;
    proxy.setInterceptor((r) => {
      if (r.method !== 'GET' || r.watch || answered >= BUDGET || !outputRead.test(r.path)) return undefined;
      answered++;
      return BARE_404;
    });
  };
  // Armed by the watch event of the handoff's own DataVolume: the VM is in its handoff from then on.
  const dvs = new Informer(c, GVRs.DataVolume, { namespace: ns });
  dvs.addHandlers({ add: (o) => (o.metadata?.name?.startsWith('vm-disk-') ? arm() : undefined) });
  dvs.start();
  const ledger = new VolumeLedger(c);
  ledger.start(100);
  const task: TaskRef = { namespace: ns, name: 't', vmIds: ['vm-1'] };
  try {
    await dvs.waitForSync();
    await createTask(c, task, 'vc', 'not-served');
    await waitTasksEnded(c, [task], 90_000);
  } finally {
    proxy.setInterceptor(undefined);
    await ledger.stop();
    await dvs.stop();
  }
  assert.ok(armed, 'the handoff created its DataVolume');
  assert.ok(answered > 0, 'reads of the handoff outputs were answered a bare 404');
  const report = await verifyImport(c, world, [task], ledger);
  assert.deepEqual(report.problems, [], `the import is whole (${answered} reads answered a bare 404)`);
  assert.equal(report.vmsSucceeded, 1, 'the VM Succeeded, not Failed OutputDeleted');
  await c.delete(GVRs.Namespace, undefined, ns, { propagationPolicy: 'Background' });
});
