// Bounded memory (short soak): rounds of imports created and deleted leave the controller's in-memory maps
// and informer caches where they were, and its heap about where it was. The long figure (thousands of
// tasks) is bench/soak.ts, on the same fixtures.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import type { RunningController } from '../../src/app.ts';
import type { KubeClient } from '../../src/runtime/kube.ts';
import { freshNamespace } from './env/index.ts';
import { controllerSizes, grownSince, heapAfterGC, importRound, settledSizes } from './chaos/soak.ts';
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
  w = await startInProcessWorld({ world, storageClass: CLASS, logLevel: 'warn' });
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
