// The short chaos run: the controller talks to the real API server only through a fault-injecting proxy
// (5% error answers — 500, 429 with Retry-After, 409 on writes —, resets mid-response, 2 s latency spikes,
// every watch cut after a few seconds) while it imports several VMs, one of them multi-disk. Every VM ends
// Succeeded, with exactly one of each output, every disk on the very volume its transfer filled.
// The long run (`npm run chaos`, bench/chaos.ts) adds API server restarts, etcd compaction, leader kills
// and Plan condition flaps, with the same fixtures and the same verdict.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient } from '../../src/runtime/kube.ts';
import { freshNamespace } from './env/index.ts';
import type { FaultProxy } from './chaos/faultproxy.ts';
import { VolumeLedger, createConnectedSource, createTask, importWorld, mixedVMs, verifyImport, waitTasksEnded, type TaskRef } from './chaos/fixtures.ts';
import { startInProcessWorld, type InProcessWorld } from './chaos/inprocess.ts';

const world = importWorld('https://vcenter-chaos.example.com/sdk', '192.0.2.71', mixedVMs('chaos', 4, 1, 2));

let w: InProcessWorld;
let proxy: FaultProxy;
let c: KubeClient;

before(async () => {
  // The simulator moves slowly enough that the run spans several watch cuts.
  w = await startInProcessWorld({ world, storageClass: 'chaos', mbPerSecond: 1024, faults: { error: 0.05, reset: 0.02, latency: 0.02, latencyMs: 2_000, watchCutMs: 3_000 } });
  c = w.c;
  proxy = w.proxy!;
});

after(async () => {
  await w?.stop();
});

test('under injected API faults and watch cuts, every VM of a multi-disk import ends Succeeded with exactly one of each output on its own volume', { timeout: 600_000 }, async () => {
  const ns = await freshNamespace('chaos');
  await createConnectedSource(c, ns, 'vc', world);
  // Volumes as filled by their transfers: the handoff must end on these very objects.
  const ledger = new VolumeLedger(c);
  ledger.start(100);
  const task: TaskRef = { namespace: ns, name: 't', vmIds: world.vms.map((v) => v.id) };
  await createTask(c, task, 'vc', 'chaos');
  try {
    await waitTasksEnded(c, [task], 480_000);
  } finally {
    await ledger.stop();
  }
  const report = await verifyImport(c, world, [task], ledger);
  assert.deepEqual(report.problems, [], 'the import is whole');
  assert.equal(report.vmsSucceeded, world.vms.length, 'every VM Succeeded');
  assert.ok(world.vms.some((v) => v.disks.length > 1), 'multi-disk VMs are part of the import');
  assert.equal(report.bytesRecopied, 0, 'no disk was copied twice');
  // The faults were really injected.
  for (const k of ['500', '429', 'watchCut']) assert.ok((proxy.counts[k] ?? 0) > 0, `faults of kind ${k} were injected (${JSON.stringify(proxy.counts)})`);
  console.log(`chaos-short: ${proxy.requests} requests through the proxy; injected ${JSON.stringify(proxy.counts)}`);
});
