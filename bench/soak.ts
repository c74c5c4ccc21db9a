// The soak figure: thousands of tasks created, imported and deleted, and what the controller holds
// afterwards against its baseline — every in-memory map, every informer cache, and the heap after a full GC.
// Rounds of `--wave` one-VM imports (a namespace, a source, the tasks run to Succeeded, the namespace
// deleted) until `--tasks` tasks have come and gone; the first round is a warm-up and sets the baseline.
// The controller runs in this process (its maps are read directly), next to the simulator, whose own heap
// is part of the figure: read the heap as "bounded or not", not as the controller's footprint (the
// start-up/idle benchmark gives that, from /proc).
//
// A round's namespace is deleted while the next round imports (one deletion in flight at a time); at
// every figure the deletions are waited for first, so a figure never counts a round still going away.
// kube-controller-manager runs at 200 QPS here (its default 20 makes deleting a namespace of 250
// imports take 2.5 min, which would be most of a round).
//
//   node bench/soak.ts                       # 5,000 tasks in rounds of 100
//   node bench/soak.ts --tasks 1000 --wave 50
//   node bench/soak.ts --heap-snapshots DIR   # heap snapshots after the baseline and at the end
//                                             # (compare them with bench/heapdiff.ts)
//   npm run bench -- --only soak --quick      # 20 tasks (writes soak.quick.json)
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { createStorageClass, startSim, vcenter } from '../test/sim/index.ts';
import { DEFAULT_CONTROLLER_NAMESPACE, parseConfig } from '../src/config.ts';
import { runController } from '../src/app.ts';
import { createLogger } from '../src/telemetry/logger.ts';
import { ensureNamespace } from '../test/e2e/chaos/fixtures.ts';
import { controllerSizes, deleteRound, grownSince, heapAfterGC, importRound, settledSizes } from '../test/e2e/chaos/soak.ts';
import { VDDK_IMAGE, log, mib, parseFlags, round, startEnv, writeResult } from './lib.ts';

const flags = parseFlags(process.argv.slice(2));
const quick = flags.has('quick');
const TASKS = Number(flags.get('tasks') ?? (quick ? 20 : 5000));
const WAVE = Math.min(TASKS, Number(flags.get('wave') ?? (quick ? 10 : 100)));
const CLASS = 'soak';
/** A time budget (`--minutes`): no round starts after it, and the figures say how many tasks were done. */
const BUDGET_MS = flags.has('minutes') ? Number(flags.get('minutes')) * 60_000 : Infinity;
/** A figure every this many rounds (the series shows growth, if any, before the end). */
const SAMPLE_EVERY = Math.max(1, Math.round(TASKS / WAVE / 10));
const SNAPSHOTS = flags.get('heap-snapshots');
/** kube-controller-manager's client rate (see the header). */
const KCM_QPS = Number(flags.get('kcm-qps') ?? 200);

const world = vcenter({
  url: 'https://vcenter-soak.example.com/sdk',
  hosts: [{ id: 'host-1', address: '192.0.2.62' }],
  vms: Array.from({ length: WAVE }, (_, i) => ({ id: `vm-${i + 1}`, name: `soak${i + 1}`, disks: [{ capacityGiB: 1 }] })),
});

// The machine's load beside the figures (1, 5, 15 min averages): a shared machine makes them noisy.
const loadAtStart = loadavg().map((x) => round(x, 1));
const env = await startEnv({ sim: false, pvSyncPeriod: flags.get('pv-sync-period') ?? '1s', auditLog: false, kcmQPS: KCM_QPS });
await createStorageClass(env.cp.info.admin.kubeconfigPath, { name: CLASS, reclaimPolicy: 'Delete' });
const sim = await startSim({ kubeconfigPath: env.cp.info.admin.kubeconfigPath, worlds: [world] });
await ensureNamespace(env.admin, DEFAULT_CONTROLLER_NAMESPACE);
const ctl = await runController(
  {
    ...parseConfig(['--kubeconfig', env.cp.info.controller.kubeconfigPath, '--leader-elect=false', '--health-port', '0', '--metrics-port', '0'], {}),
    vddkImage: VDDK_IMAGE,
    inventoryURL: sim.inventory.url,
  },
  { logger: createLogger({ level: process.env.MC_LOG_LEVEL ?? 'error' }) },
);
let exitCode = 0;
/** The simulator's sizes once its informers have seen the deletions (at or below `baseline` when given). */
async function settledSim(baseline?: Record<string, number>): Promise<Record<string, number>> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const now = Object.fromEntries(Object.entries(sim.memory()).filter(([k]) => k !== 'timers'));
    if (!baseline || Object.keys(grownSince(baseline, now)).length === 0 || Date.now() > deadline) return now;
    await new Promise((r) => setTimeout(r, 200));
  }
}
try {
  const vmIds = world.vms.map((v) => v.id);
  let n = 0;
  let deleting: Promise<void> = Promise.resolve();
  const oneRound = async (): Promise<Record<string, number>> => {
    let peak: Record<string, number> = {};
    const namespace = `soak-${String(n).padStart(4, '0')}`;
    await importRound(env.admin, { namespace, world, storageClass: CLASS, vmIds, timeoutMs: 600_000, keep: true, atPeak: () => (peak = { ...controllerSizes(ctl), ...simSizes() }) });
    n++;
    await deleting;
    deleting = deleteRound(env.admin, namespace, 600_000);
    return peak;
  };
  const simSizes = (): Record<string, number> => Object.fromEntries(Object.entries(sim.memory()).map(([k, v]) => [`sim.${k}`, v]));
  const snapshot = (label: string): string | undefined => {
    if (!SNAPSHOTS) return undefined;
    mkdirSync(SNAPSHOTS, { recursive: true });
    const path = writeHeapSnapshot(join(SNAPSHOTS, `soak-${label}.heapsnapshot`));
    log(`soak: heap snapshot ${path}`);
    return path;
  };
  const t0 = Date.now();
  await oneRound();
  await deleting;
  const baseline = controllerSizes(ctl);
  const simBaseline = await settledSim();
  const heap0 = heapAfterGC();
  snapshot('baseline');
  log(`soak: baseline after a warm-up round of ${WAVE}: heap ${mib(heap0)} MiB, ${JSON.stringify(baseline)}, simulator ${JSON.stringify(simBaseline)}`);
  const series: Array<{ tasks: number; heapMiB: number; peakCacheObjects: number; seconds: number }> = [];
  let peakOfRun: Record<string, number> = {};
  const rounds = Math.max(1, Math.round(TASKS / WAVE));
  let done = 0;
  for (let r = 0; r < rounds; r++) {
    if (Date.now() - t0 > BUDGET_MS) {
      log(`soak: time budget of ${flags.get('minutes')} min spent after ${done} tasks; stopping`);
      break;
    }
    const peak = await oneRound();
    done += WAVE;
    for (const [k, v] of Object.entries(peak)) peakOfRun[k] = Math.max(peakOfRun[k] ?? 0, v);
    if ((r + 1) % SAMPLE_EVERY === 0 || r === rounds - 1 || Date.now() - t0 > BUDGET_MS) {
      await deleting;
      const heap = heapAfterGC();
      const cacheObjects = Object.entries(peak).filter(([k]) => k.startsWith('cache.')).reduce((a, [, v]) => a + v, 0);
      series.push({ tasks: (r + 1) * WAVE, heapMiB: mib(heap), peakCacheObjects: cacheObjects, seconds: round((Date.now() - t0) / 1000, 0) });
      log(`soak: ${done}/${rounds * WAVE} tasks created and deleted; heap after GC ${mib(heap)} MiB; caches at the round's peak ${cacheObjects} objects`);
    }
  }
  await deleting;
  const after = await settledSizes(ctl, baseline);
  const simAfter = await settledSim(simBaseline);
  const heap1 = heapAfterGC();
  snapshot('after');
  const grown = grownSince(baseline, after);
  const simGrown = grownSince(simBaseline, simAfter);
  peakOfRun = Object.fromEntries(Object.entries(peakOfRun).filter(([, v]) => v > 0));
  console.log(`\nsoak: ${done} tasks created, imported and deleted in rounds of ${WAVE} (after a warm-up round), ${round((Date.now() - t0) / 60_000, 1)} min`);
  console.log(`  heap after GC      baseline ${mib(heap0)} MiB → after ${mib(heap1)} MiB (${heap1 >= heap0 ? '+' : ''}${mib(heap1 - heap0)} MiB)`);
  console.log(`  maps and caches    ${Object.keys(grown).length ? `GREW: ${JSON.stringify(grown)}` : 'every one back at or below its baseline'}`);
  console.log(`  simulator's state ${Object.keys(simGrown).length ? `GREW: ${JSON.stringify(simGrown)}` : 'every map and cache back at or below its baseline'}`);
  console.log('  size                                   baseline  round peak  after');
  for (const k of [...new Set([...Object.keys(baseline), ...Object.keys(after), ...Object.keys(peakOfRun)])].sort()) console.log(`  ${k.padEnd(38)} ${String(baseline[k] ?? 0).padStart(8)}  ${String(peakOfRun[k] ?? 0).padStart(10)}  ${String(after[k] ?? 0).padStart(5)}`);
  const path = writeResult('soak', { quick, tasks: done, tasksPlanned: rounds * WAVE, wave: WAVE, rounds: done / WAVE, warmupTasks: WAVE, pvSyncPeriod: flags.get('pv-sync-period') ?? '1s' }, {
    heapAfterGCMiB: { baseline: mib(heap0), after: mib(heap1), delta: mib(heap1 - heap0) },
    sizes: { baseline, peakDuringARound: peakOfRun, after },
    grown,
    simulator: { baseline: simBaseline, after: simAfter, grown: simGrown },
    kcmQPS: KCM_QPS,
    series,
    minutes: round((Date.now() - t0) / 60_000, 1),
    loadAverage: { atStart: loadAtStart, atEnd: loadavg().map((x) => round(x, 1)) },
  });
  console.log(`\nwritten ${path}`);
  if (Object.keys(grown).length) exitCode = 1;
} catch (e) {
  console.error(`soak failed: ${(e as Error).stack ?? e}`);
  exitCode = 1;
} finally {
  await ctl.stop();
  await sim.stop();
  await env.stop();
}
process.exit(exitCode);
