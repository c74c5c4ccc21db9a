// The soak figure: thousands of tasks created, imported and deleted, and what the controller holds
// afterwards against its baseline — every in-memory map, every informer cache, and the heap after a full GC.
// Rounds of `--wave` one-VM imports (a namespace, a source, the tasks run to Succeeded, the namespace
// deleted) until `--tasks` tasks have come and gone; the first round is a warm-up and sets the baseline.
// The controller runs in this process (its maps are read directly), next to the simulator, whose own heap
// is part of the figure: read the heap as "bounded or not", not as the controller's footprint (the
// start-up/idle benchmark gives that, from /proc).
//
//   node bench/soak.ts                       # 5,000 tasks in rounds of 100
//   node bench/soak.ts --tasks 1000 --wave 50
//   npm run bench -- --only soak --quick      # 20 tasks (writes soak.quick.json)
import { loadavg } from 'node:os';
import { createStorageClass, startSim, vcenter } from '../test/sim/index.ts';
import { DEFAULT_CONTROLLER_NAMESPACE, parseConfig } from '../src/config.ts';
import { runController } from '../src/app.ts';
import { createLogger } from '../src/telemetry/logger.ts';
import { ensureNamespace } from '../test/e2e/chaos/fixtures.ts';
import { controllerSizes, grownSince, heapAfterGC, importRound, settledSizes } from '../test/e2e/chaos/soak.ts';
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

const world = vcenter({
  url: 'https://vcenter-soak.example.com/sdk',
  hosts: [{ id: 'host-1', address: '192.0.2.62' }],
  vms: Array.from({ length: WAVE }, (_, i) => ({ id: `vm-${i + 1}`, name: `soak${i + 1}`, disks: [{ capacityGiB: 1 }] })),
});

// The machine's load beside the figures (1, 5, 15 min averages): a shared machine makes them noisy.
const loadAtStart = loadavg().map((x) => round(x, 1));
const env = await startEnv({ sim: false, pvSyncPeriod: flags.get('pv-sync-period') ?? '1s', auditLog: false });
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
try {
  const vmIds = world.vms.map((v) => v.id);
  let n = 0;
  const oneRound = async (): Promise<Record<string, number>> => {
    let peak: Record<string, number> = {};
    await importRound(env.admin, { namespace: `soak-${String(n).padStart(4, '0')}`, world, storageClass: CLASS, vmIds, timeoutMs: 600_000, atPeak: () => (peak = controllerSizes(ctl)) });
    n++;
    return peak;
  };
  const t0 = Date.now();
  await oneRound();
  const baseline = controllerSizes(ctl);
  const heap0 = heapAfterGC();
  log(`soak: baseline after a warm-up round of ${WAVE}: heap ${mib(heap0)} MiB, ${JSON.stringify(baseline)}`);
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
      const heap = heapAfterGC();
      const cacheObjects = Object.entries(peak).filter(([k]) => k.startsWith('cache.')).reduce((a, [, v]) => a + v, 0);
      series.push({ tasks: (r + 1) * WAVE, heapMiB: mib(heap), peakCacheObjects: cacheObjects, seconds: round((Date.now() - t0) / 1000, 0) });
      log(`soak: ${done}/${rounds * WAVE} tasks created and deleted; heap after GC ${mib(heap)} MiB; caches at the round's peak ${cacheObjects} objects`);
    }
  }
  const after = await settledSizes(ctl, baseline);
  const heap1 = heapAfterGC();
  const grown = grownSince(baseline, after);
  peakOfRun = Object.fromEntries(Object.entries(peakOfRun).filter(([, v]) => v > 0));
  console.log(`\nsoak: ${done} tasks created, imported and deleted in rounds of ${WAVE} (after a warm-up round), ${round((Date.now() - t0) / 60_000, 1)} min`);
  console.log(`  heap after GC      baseline ${mib(heap0)} MiB → after ${mib(heap1)} MiB (${heap1 >= heap0 ? '+' : ''}${mib(heap1 - heap0)} MiB)`);
  console.log(`  maps and caches    ${Object.keys(grown).length ? `GREW: ${JSON.stringify(grown)}` : 'every one back at or below its baseline'}`);
  console.log('  size                                   baseline  round peak  after');
  for (const k of [...new Set([...Object.keys(baseline), ...Object.keys(after), ...Object.keys(peakOfRun)])].sort()) console.log(`  ${k.padEnd(38)} ${String(baseline[k] ?? 0).padStart(8)}  ${String(peakOfRun[k] ?? 0).padStart(10)}  ${String(after[k] ?? 0).padStart(5)}`);
  const path = writeResult('soak', { quick, tasks: done, tasksPlanned: rounds * WAVE, wave: WAVE, rounds: done / WAVE, warmupTasks: WAVE, pvSyncPeriod: flags.get('pv-sync-period') ?? '1s' }, {
    heapAfterGCMiB: { baseline: mib(heap0), after: mib(heap1), delta: mib(heap1 - heap0) },
    sizes: { baseline, peakDuringARound: peakOfRun, after },
    grown,
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
