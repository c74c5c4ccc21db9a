// Bounded memory (short soak): rounds of imports created and deleted leave the controller's in-memory maps
// and informer caches where they were, and its heap about where it was; imports that end and stay (the
// tenant keeps the VMs) leave the caches too. The long figure (thousands of tasks) is bench/soak.ts, on the
// same fixtures.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import type { RunningController } from '../../src/app.ts';
import type { KubeClient } from '../../src/runtime/kube.ts';
import { freshNamespace } from './env/index.ts';
import { controllerSizes, deleteRound, grownSince, heapAfterGC, importRound, settledSizes } from './chaos/soak.ts';
import { until } from './chaos/fixtures.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { LABEL_TASK } from '../../src/api/labels.ts';
import { startInProcessWorld, type InProcessWorld } from './chaos/inprocess.ts';

const TASKS = 10;
const world = vcenter({
  url: 'https://vcenter-soak.example.com/sdk',
  hosts: [{ id: 'host-1', address: '192.0.2.61' }],
  vms: Array.from({ length: TASKS }, (_, i) => ({ id: `vm-${i + 1}`, name: `soak${i + 1}`, disks: [{ capacityGiB: 1 }] })),
});
const CLASS = 'soak';

let w: InProcessWorld;
let ctl: RunningController;
let c: KubeClient;

before(async () => {
  // Caches swept every half second: the test waits on the sweep, not on its one-minute default.
  w = await startInProcessWorld({ world, storageClass: CLASS, logLevel: 'warn', cacheSweepMs: 500 });
  ({ ctl, c } = w);
});

after(async () => {
  await w?.stop();
});

const round = async (): Promise<void> => importRound(c, { namespace: await freshNamespace('soak'), world, storageClass: CLASS, vmIds: world.vms.map((v) => v.id) });

test('rounds of imports created and deleted leave the in-memory maps and informer caches at their baseline, and the heap near it', { timeout: 900_000 }, async () => {
  // A warm-up round first: what is allocated once (caches of cluster-wide kinds, code paths) is baseline.
  await round();
  const baseline = controllerSizes(ctl);
  const heap0 = heapAfterGC();
  await round();
  await round();
  const after = await settledSizes(ctl, baseline);
  assert.deepEqual(grownSince(baseline, after), {}, `nothing grew (baseline ${JSON.stringify(baseline)})`);
  assert.ok(Object.keys(baseline).some((k) => k.startsWith('cache.PersistentVolumeClaim{')), `claims are cached by selector, not unfiltered: ${Object.keys(baseline).join(', ')}`);
  assert.ok(!('cache.PersistentVolumeClaim' in baseline), 'no unfiltered claim cache');
  const heap1 = heapAfterGC();
  // The test process also holds the simulator; 2 × TASKS imports leaking even a few kilobytes each would
  // not show against its noise, but a leak of the caches' or maps' size class (an object per object) would.
  assert.ok(heap1 <= heap0 * 1.3 + 16 * 2 ** 20, `heap after GC: ${Math.round(heap0 / 2 ** 20)} MiB → ${Math.round(heap1 / 2 ** 20)} MiB`);
});

test('the outputs and Forklift objects of finished imports leave the controller\'s caches while the tasks and the imported VMs stay', { timeout: 600_000 }, async () => {
  // The caches of the handoff's outputs (selected by the task label) and of the tasks' Forklift objects.
  const taskCaches = (): Record<string, number> =>
    Object.fromEntries(Object.entries(controllerSizes(ctl)).filter(([k]) => k.includes(`{${LABEL_TASK}}`) || /^cache\.(Plan|Migration|NetworkMap|StorageMap)\{/.test(k)));
  const baseline = taskCaches();
  assert.equal(Object.keys(baseline).length, 9, `the outputs and Forklift objects are cached: ${Object.keys(baseline).join(', ')}`);
  const ns = await freshNamespace('kept');
  const vmIds = world.vms.slice(0, 3).map((v) => v.id);
  await importRound(c, { namespace: ns, world, storageClass: CLASS, vmIds, keep: true });
  // The tasks stay, Succeeded; the tenant's VMs stay. Neither is a reason to hold the outputs in memory.
  const settled = await until('the caches of task objects back at their baseline', () => {
    const now = taskCaches();
    return Object.keys(grownSince(baseline, now)).length === 0 ? now : undefined;
  }, 60_000).catch(() => taskCaches());
  assert.deepEqual(grownSince(baseline, settled), {}, `caches of task objects at their baseline ${JSON.stringify(baseline)}`);
  assert.equal((await c.list(GVRs.VMImportTask, ns)).items.length, vmIds.length, 'the tasks are kept');
  assert.ok((controllerSizes(ctl)['cache.VMImportTask'] ?? 0) >= vmIds.length, 'the kept tasks themselves stay cached');
  for (const gvr of [GVRs.VMInstance, GVRs.VMDisk, GVRs.PersistentVolumeClaim, GVRs.DataVolume]) {
    const items = (await c.list(gvr, ns, { labelSelector: LABEL_TASK })).items;
    assert.equal(items.length, vmIds.length, `${gvr.kind}s of the imports are on the server, still labelled`);
  }
  await deleteRound(c, ns);
});
