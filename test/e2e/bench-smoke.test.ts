// Every benchmark in its smallest form, so none can rot: they run end to end against a private control
// plane (audit log on, PV binder at 1 s) with the simulator, and produce well-formed figures. Timings are
// printed by `npm run bench`, never asserted here; what is asserted is what must hold at any size
// (imports succeed, no reconcile errors, an idle controller makes no requests, the counts add up).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEnv, type BenchEnv } from '../../bench/lib.ts';
import { benchIdle, benchStartup } from '../../bench/startup.ts';
import { benchRequests } from '../../bench/requests.ts';
import { benchLatency } from '../../bench/latency.ts';
import { benchScale } from '../../bench/scale.ts';

let env: BenchEnv;

before(async () => {
  // requests 1+1, latency 2+2 (watch and poll-only), scale 2 tasks × 2 VMs.
  env = await startEnv({ pvSyncPeriod: '1s', oneDiskVMs: 1 + 2 + 4, fourDiskVMs: 1 + 2 });
});

after(async () => {
  await env?.stop();
});

test('an idle controller holding finished tasks makes no API requests once settled, and starts up to /readyz', async () => {
  const idle = await benchIdle(env, { tasks: 10, namespaces: 2, idleSeconds: 1, quietMs: 1000 });
  assert.ok(idle.requestsToSettle > 0, 'the start-up lists and watches are seen in the audit log');
  assert.equal(idle.requestsInWindow, 0, JSON.stringify(idle.byVerbResource));
  const st = await benchStartup(env, { objects: 10, namespaces: 2, repeats: 1, createTasks: false });
  assert.equal(st.readyMs.length, 1);
  assert.ok(st.readyMsMedian > 0 && st.rssAtReadyMiBMedian > 0);
});

test('the requests of connecting a source and importing a 1-disk and a 4-disk VM are counted, reads and writes apart', async () => {
  const f = await benchRequests(env, { repeats: 1, quietMs: 1000 });
  assert.ok(f.sourceConnect.writes > 0);
  assert.deepEqual(f.imports.map((i) => i.disks), [1, 4]);
  for (const i of f.imports) {
    const run = i.runs[0]!;
    assert.equal(run.reads + run.writes, run.total);
    assert.equal(Object.values(run.byVerbResource).reduce((a, b) => a + b, 0), run.total);
    assert.ok((run.byVerbResource['create vminstances'] ?? 0) >= 1, `an import creates its VMInstance: ${JSON.stringify(run.byVerbResource)}`);
  }
});

test('handoff latency is measured for the watching controller and the poll-only baseline side by side', async () => {
  const f = await benchLatency(env, { repeats: 1, pollIntervalMs: 1000 });
  for (const m of [f.watch, f.pollOnly]) {
    assert.equal(m.oneDisk.length, 1);
    assert.equal(m.fourDisk.length, 1);
    assert.ok(m.oneDiskMedianMs >= 0 && m.fourDiskMedianMs >= 0, JSON.stringify(m));
  }
  assert.ok(Number.isFinite(f.ratioOneDisk) && Number.isFinite(f.ratioFourDisk));
});

test('tasks started at once all become Ready without a reconcile error, with CPU, RSS and queue depth recorded', async () => {
  const f = await benchScale(env, { tasks: 2, namespaces: 2 });
  assert.equal(f.completed, true);
  assert.equal(f.failedTasks, 0);
  assert.equal(f.reconcileErrors, 0, JSON.stringify(f.reconcileErrorsByReason));
  assert.ok(f.cpuSeconds > 0 && f.peakRssMiB > 0);
  assert.ok(f.maxQueueDepth >= 0 && f.reconciles > 0);
});
