// Scale: N tasks of 2 VMs each, across 20 namespaces, all created at once (N = 50, 200 by default; 800 with
// --sizes 50,200,800). Per size, on a fresh control plane: wall time from the first create to every task
// Ready, the controller's CPU seconds over that time and peak RSS (/proc of the child process), the
// maximum work-queue depth (migration_controller_workqueue_depth sampled from /metrics) and reconcile
// errors by reason (expected 0), the peak heap and cached object counts (from its /metrics), CPU per task.
// Prints how each grows from the smallest size to the largest; writes bench/results/scale.json. The
// 2,000-task point (--sizes 200,2000) runs the simulator at a slower tick (simTickFor, reported).
//
//   node bench/scale.ts [--sizes 50,200] [--namespaces 20] [--pv-sync-period 15s] [--timeout-minutes 30] [--name scale] [--quick]
//                       [--heap-snapshot DIR] [--memory-limit MiB]
// (--name: the results file, so a long size can be run on its own without replacing the others;
// --heap-snapshot: a heap snapshot of the controller once every task of a size has ended, for
// `node bench/heapdiff.ts FILE`; --memory-limit: the controller runs in a memory cgroup of that size, as
// in its pod, where Node sizes its heap from the limit — the chart's is 512.) Each size also records what
// its resident memory was made of at its peak.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { memoryCgroup } from './cgroup.ts';
import { GVRs } from '../src/runtime/gvr.ts';
import type { Informer } from '../src/runtime/informer.ts';
import type { VMImportTask } from '../src/api/types.ts';
import { diffCounts, isMain, log, metricBy, procStats, metricSum, mib, namespaceNames, numList, outcome, parseFlags, pool, revOf, round, spawnController, startEnv, taskObject, until, watchKind, writeResult, type BenchEnv } from './lib.ts';

export interface ScaleOptions {
  tasks: number;
  namespaces: number;
  vmsPerTask?: number;
  /** Give up waiting after this long and report what was reached (default 60 s + 6 s per task). */
  timeoutMs?: number;
  /** The simulated engine's tick the environment was started with (reported). */
  simTickMs?: number;
  /** Write a heap snapshot of the controller here once every task has ended. */
  heapSnapshotDir?: string;
  /** Run the controller under this memory limit, MiB, as its pod does (bench/cgroup.ts). */
  memoryLimitMiB?: number;
  /** Wait for the caches' sweep after the last task ended before the after-end figures (default true). */
  settle?: boolean;
}

export interface ScaleFigures {
  tasks: number;
  vms: number;
  namespaces: number;
  createSeconds: number;
  /** To every task ended; when `completed` is false, the time waited before giving up. */
  wallSecondsToAllReady: number;
  completed: boolean;
  endedTasks: number;
  /**
   * When `completed` is false: each task that had not ended, as the API server held it when the benchmark
   * gave up (phase, Ready condition, each VM's phase and reason), so a stuck task can be told from a slow one.
   */
  unended?: Array<{ task: string; phase?: string; ready?: string; vms: string[] }>;
  failedTasks: number;
  cpuSeconds: number;
  /** Controller CPU milliseconds per task: flat when the cost grows linearly with the task count. */
  cpuMsPerTask: number;
  peakRssMiB: number;
  /** Peak V8 heap in use (migration_controller_nodejs_heap_size_used_bytes, sampled every 250 ms). */
  peakHeapUsedMiB: number;
  /** What the resident memory was made of when it peaked (undefined when no sample caught it). */
  memoryAtPeakRss?: MemoryBreakdown;
  /** Where the heap snapshot taken once every task had ended was written (--heap-snapshot DIR). */
  heapSnapshot?: string;
  /** Once every task had ended and the caches' next sweep had run (or 90 s): what they hold, the heap, RSS. */
  afterEnd?: { cacheObjects: Record<string, number>; heapUsedMiB: number; rssMiB: number };
  /**
   * Under --memory-limit: the limit, the heap limit Node chose from it, the cgroup's peak charge, OOM kills
   * in the group and whether the controller had exited by the end (killed or crashed).
   */
  memoryLimit?: { limitMiB: number; heapLimitMiB: number; cgroupPeakMiB: number; oomKills: number; controllerExited: boolean };
  /** Peak of the objects held by all informer caches (migration_controller_cache_objects), and by cache then. */
  peakCacheObjects: number;
  cacheObjectsAtPeak: Record<string, number>;
  /** The simulated engine's progress tick at this size. */
  simTickMs: number;
  /** The machine's 1-minute load average when the size started and ended (it is shared). */
  loadAverage1m: { before: number; after: number };
  maxQueueDepth: number;
  reconciles: number;
  reconcileErrors: number;
  reconcileErrorsByReason: Record<string, number>;
  apiRequests: number;
  /** Why keys were queued (migration_controller_wakeups_total by controller and cause), largest first. */
  wakeupsByCause: Record<string, number>;
  /**
   * Timed looks that came due (requeue:* and retry wake-ups): with a timer per key, as before the timer
   * wheel, each was one wake-up of the process.
   */
  timedLooks: number;
  /** Wake-ups of the work queues' shared timer wheel (migration_controller_timer_wakeups_total; absent before it existed). */
  timerWakeups?: number;
  /** The controller's API requests by verb and resource, largest first. */
  apiRequestsByVerbResource: Record<string, number>;
  /** CPU seconds of the rest of the machine's work over the same time, for context: the simulated engine
   * (this process), kube-apiserver, etcd and kube-controller-manager. */
  otherCpuSeconds: Record<string, number>;
}

/**
 * The controller's resident memory split into what V8 holds and what it does not, from one sample: /proc's
 * RssAnon (heap pages, malloc'd native memory, thread stacks) and RssFile (the node binary and shared
 * libraries, mapped), and from /metrics the V8 heap committed and in use, per space, and the external
 * (Buffer, TLS) memory V8 is told of. `anonOutsideHeapMiB` is RssAnon less the committed heap: the native
 * side — OpenSSL, the HTTP parser, libuv, malloc's own slack — which a heap snapshot cannot see.
 */
export interface MemoryBreakdown {
  rssMiB: number;
  rssAnonMiB: number;
  rssFileMiB: number;
  heapTotalMiB: number;
  heapUsedMiB: number;
  externalMiB: number;
  anonOutsideHeapMiB: number;
  /** Of the memory outside the heap: what V8 itself allocated with malloc (v8.getHeapStatistics().malloced_memory). */
  v8MallocedMiB: number;
  /**
   * What is left of `anonOutsideHeapMiB` once V8's malloc'd memory and the external (Buffer) memory are
   * taken out: OpenSSL, the HTTP parser, libuv, thread stacks and malloc's slack (freed memory it keeps).
   */
  nativeRestMiB: number;
  heapSpacesMiB: Record<string, { used: number; committed: number }>;
}

function procMemory(pid: number): { rss: number; anon: number; file: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') };
  } catch {
    return undefined;
  }
}

export function memoryBreakdown(proc: { rss: number; anon: number; file: number }, metrics: string): MemoryBreakdown {
  const total = metricSum(metrics, 'migration_controller_nodejs_heap_size_total_bytes');
  const used = metricBy(metrics, 'migration_controller_nodejs_heap_space_size_used_bytes', ['space']);
  const committed = metricBy(metrics, 'migration_controller_nodejs_heap_space_size_total_bytes', ['space']);
  return {
    rssMiB: mib(proc.rss),
    rssAnonMiB: mib(proc.anon),
    rssFileMiB: mib(proc.file),
    heapTotalMiB: mib(total),
    heapUsedMiB: mib(metricSum(metrics, 'migration_controller_nodejs_heap_size_used_bytes')),
    externalMiB: mib(metricSum(metrics, 'migration_controller_nodejs_external_memory_bytes')),
    anonOutsideHeapMiB: mib(proc.anon - total),
    v8MallocedMiB: mib(metricBy(metrics, 'migration_controller_nodejs_malloced_memory_bytes', ['kind']).current ?? 0),
    nativeRestMiB: mib(
      proc.anon - total - metricSum(metrics, 'migration_controller_nodejs_external_memory_bytes') - (metricBy(metrics, 'migration_controller_nodejs_malloced_memory_bytes', ['kind']).current ?? 0),
    ),
    heapSpacesMiB: Object.fromEntries(Object.keys(committed).map((k) => [k, { used: mib(used[k] ?? 0), committed: mib(committed[k]!) }])),
  };
}

/**
 * Asks the controller (started with --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=DIR) for a heap
 * snapshot and waits until V8 has finished writing it: the file exists and its size holds for 2 s.
 */
async function takeHeapSnapshot(pid: number, dir: string, exited: () => boolean): Promise<string> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  let file: string | undefined;
  let size = -1;
  let stableSince = 0;
  await until('the heap snapshot to be written', () => {
    if (exited()) throw new Error('the controller exited while writing its heap snapshot');
    file ??= readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (!file) return false;
    const s = statSync(join(dir, file)).size;
    if (s !== size) {
      size = s;
      stableSince = Date.now();
      return false;
    }
    return s > 0 && Date.now() - stableSince >= 2_000;
  }, 300_000, 250);
  return join(dir, file!);
}

function otherCpu(env: BenchEnv): Record<string, number> {
  const out: Record<string, number> = { 'simulator (bench process)': process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6 };
  for (const [name, pid] of Object.entries(env.cp.info.pids)) {
    try {
      out[name] = procStats(pid).cpuSeconds;
    } catch {
      /* not running */
    }
  }
  return out;
}

function errorsByReason(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^migration_controller_reconcile_errors_total\{([^}]*)\} (\S+)/.exec(line);
    if (!m) continue;
    const reason = /reason="([^"]*)"/.exec(m[1]!)?.[1] ?? '?';
    const ctl = /controller="([^"]*)"/.exec(m[1]!)?.[1] ?? '?';
    out[`${ctl}/${reason}`] = (out[`${ctl}/${reason}`] ?? 0) + Number(m[2]);
  }
  return out;
}

function diff(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(b)) if (v - (a[k] ?? 0) > 0) out[k] = v - (a[k] ?? 0);
  return out;
}

/** The tasks of these namespaces that had not ended, read live: where each one stood. */
async function unendedTasks(env: BenchEnv, nss: string[], done: Map<string, unknown>): Promise<NonNullable<ScaleFigures['unended']>> {
  const out: NonNullable<ScaleFigures['unended']> = [];
  for (const ns of nss) {
    for (const item of (await env.admin.listAll(GVRs.VMImportTask, ns)).items) {
      const t = item as unknown as VMImportTask;
      const key = `${ns}/${t.metadata.name}`;
      if (done.has(key)) continue;
      const ready = t.status?.conditions?.find((c) => c.type === 'Ready');
      out.push({
        task: key,
        phase: t.status?.phase,
        ready: ready ? `${ready.status} ${ready.reason ?? ''}: ${ready.message ?? ''}` : undefined,
        vms: (t.status?.vms ?? []).map((v) => `${v.name} ${v.phase}${v.reason ? ` ${v.reason}` : ''}${v.message ? `: ${v.message}` : ''}${v.disks?.length ? ` disks ${JSON.stringify(v.disks)}` : ''}`),
      });
    }
  }
  return out;
}

/** Needs tasks × vmsPerTask 1-disk VMs in the environment. */
export async function benchScale(env: BenchEnv, o: ScaleOptions): Promise<ScaleFigures> {
  const per = o.vmsPerTask ?? 2;
  const nss = namespaceNames(`scale${o.tasks}`, o.namespaces);
  // Writing a heap snapshot takes about as much memory again as the heap: under the pod's limit it is
  // the snapshot that gets the process killed (an 800-task run under 512 MiB was, at the snapshot).
  if (o.heapSnapshotDir && o.memoryLimitMiB) throw new Error('--heap-snapshot needs about twice the heap in memory: not under --memory-limit');
  if (o.heapSnapshotDir) mkdirSync(o.heapSnapshotDir, { recursive: true });
  const cg = o.memoryLimitMiB ? memoryCgroup(`migration-controller-bench-${process.pid}`, o.memoryLimitMiB) : undefined;
  const ctl = await spawnController(env, {
    ...(o.heapSnapshotDir ? { nodeArgs: ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${o.heapSnapshotDir}`] } : {}),
    ...(cg ? { cgroupProcs: cg.procsFile } : {}),
  });
  let sampler: NodeJS.Timeout | undefined;
  let inf: Informer | undefined;
  try {
    await ctl.waitReady();
    log(`scale ${o.tasks}: connecting ${nss.length} sources`);
    await pool(nss, 4, (ns) => env.namespaceWithSource(ns, 300_000));
    const vms = Array.from({ length: o.tasks }, () => Array.from({ length: per }, () => env.takeVM(1)));
    const done = new Map<string, 'ready' | 'failed'>();
    inf = await watchKind(env.admin, GVRs.VMImportTask, (t) => {
      const r = outcome(t);
      if (r && t.metadata?.namespace?.startsWith(`scale${o.tasks}-`)) done.set(`${t.metadata.namespace}/${t.metadata.name}`, r);
    });
    const m0 = await ctl.metrics();
    const errors0 = errorsByReason(m0);
    const reconciles0 = metricSum(m0, 'migration_controller_reconcile_total');
    const api0 = metricSum(m0, 'migration_controller_api_requests_total');
    const cpu0 = ctl.stats().cpuSeconds;
    const load0 = round(os.loadavg()[0]!, 2);
    const other0 = otherCpu(env);
    let maxDepth = 0;
    let peakHeap = 0;
    let peakCache = 0;
    let cacheAtPeak: Record<string, number> = {};
    let peakRss = 0;
    let memAtPeak: MemoryBreakdown | undefined;
    // Heap and cache counts come from the controller's /metrics (a controller without the cache gauge,
    // e.g. an older ref, reports 0 objects).
    const sample = (t: string, proc = procMemory(ctl.pid)): void => {
      if (proc && proc.rss > peakRss) {
        peakRss = proc.rss;
        memAtPeak = memoryBreakdown(proc, t);
      }
      maxDepth = Math.max(maxDepth, metricSum(t, 'migration_controller_workqueue_depth'));
      peakHeap = Math.max(peakHeap, metricSum(t, 'migration_controller_nodejs_heap_size_used_bytes'));
      const caches = metricSum(t, 'migration_controller_cache_objects');
      if (caches > peakCache) {
        peakCache = caches;
        cacheAtPeak = metricBy(t, 'migration_controller_cache_objects', ['cache']);
      }
    };
    let sampling = false;
    sampler = setInterval(() => {
      if (sampling) return;
      sampling = true;
      // /proc is read as the scrape is answered, so the two halves of a breakdown are one moment.
      void ctl
        .metrics()
        .then((t) => sample(t))
        .catch(() => undefined)
        .finally(() => (sampling = false));
    }, 250);
    log(`scale ${o.tasks}: creating ${o.tasks} tasks (${o.tasks * per} VMs) at once`);
    const t0 = Date.now();
    await pool(vms, 32, (ids, i) => env.admin.create(GVRs.VMImportTask, taskObject(nss[i % nss.length]!, `t${i}`, ids)).then(() => undefined));
    const createSeconds = (Date.now() - t0) / 1000;
    let lastLog = Date.now();
    let completed = true;
    await until(`all ${o.tasks} tasks to end`, () => {
      if (Date.now() - lastLog > 15_000) {
        lastLog = Date.now();
        log(`scale ${o.tasks}: ${done.size}/${o.tasks} ended after ${Math.round((Date.now() - t0) / 1000)} s`);
      }
      return done.size >= o.tasks;
    }, o.timeoutMs ?? 60_000 + o.tasks * 6_000, 100).catch(() => {
      // Too slow for this machine: report how far it got rather than nothing.
      completed = false;
      log(`scale ${o.tasks}: gave up after ${Math.round((Date.now() - t0) / 1000)} s with ${done.size}/${o.tasks} ended`);
    });
    const unended = completed ? undefined : await unendedTasks(env, nss, done).catch((e: Error) => [{ task: `could not list the tasks: ${e.message}`, vms: [] }]);
    for (const u of unended ?? []) log(`scale ${o.tasks}: not ended: ${JSON.stringify(u)}`);
    const wall = (Date.now() - t0) / 1000;
    clearInterval(sampler);
    sampler = undefined;
    const s = ctl.stats();
    const other1 = otherCpu(env);
    const m1 = await ctl.metrics();
    sample(m1);
    const heapSnapshot = o.heapSnapshotDir && existsSync(o.heapSnapshotDir) ? await takeHeapSnapshot(ctl.pid, o.heapSnapshotDir, () => ctl.exited).catch((e: Error) => (log(`scale ${o.tasks}: no heap snapshot: ${e.message}`), undefined)) : undefined;
    if (heapSnapshot) log(`scale ${o.tasks}: heap snapshot ${heapSnapshot}`);
    // Every task has ended: the caches drop the tasks' Forklift objects and outputs at their next sweep
    // (a minute apart). Waited for up to 90 s (a controller without the sweep never gets there).
    let after = m1;
    const taskObjects = (t: string): number => Object.entries(metricBy(t, 'migration_controller_cache_objects', ['cache'])).filter(([k]) => !/^(VMImportTask|VMImportSource|Provider|Host)\b/.test(k)).reduce((a, [, v]) => a + v, 0);
    if (o.settle !== false) await until('the caches of ended tasks swept', async () => taskObjects((after = await ctl.metrics())) === 0, 90_000, 1_000).catch(() => undefined);
    const afterEnd = { cacheObjects: metricBy(after, 'migration_controller_cache_objects', ['cache']), heapUsedMiB: mib(metricSum(after, 'migration_controller_nodejs_heap_size_used_bytes')), rssMiB: mib(ctl.stats().rssBytes) };
    log(`scale ${o.tasks}: after every task ended: ${Object.values(afterEnd.cacheObjects).reduce((a, b) => a + b, 0)} cached objects, heap ${afterEnd.heapUsedMiB} MiB, RSS ${afterEnd.rssMiB} MiB`);
    const errs = diff(errors0, errorsByReason(m1));
    const wakeups = diffCounts(metricBy(m0, 'migration_controller_wakeups_total', ['controller', 'cause']), metricBy(m1, 'migration_controller_wakeups_total', ['controller', 'cause']));
    const requests = diffCounts(metricBy(m0, 'migration_controller_api_requests_total', ['verb', 'resource']), metricBy(m1, 'migration_controller_api_requests_total', ['verb', 'resource']));
    return {
      tasks: o.tasks,
      vms: o.tasks * per,
      namespaces: nss.length,
      createSeconds: round(createSeconds, 1),
      wallSecondsToAllReady: round(wall, 1),
      completed,
      endedTasks: done.size,
      ...(unended ? { unended } : {}),
      failedTasks: [...done.values()].filter((v) => v === 'failed').length,
      cpuSeconds: round(s.cpuSeconds - cpu0, 1),
      cpuMsPerTask: round(((s.cpuSeconds - cpu0) * 1000) / o.tasks, 1),
      peakRssMiB: mib(s.peakRssBytes),
      peakHeapUsedMiB: mib(peakHeap),
      memoryAtPeakRss: memAtPeak,
      heapSnapshot,
      afterEnd,
      ...(cg ? { memoryLimit: { limitMiB: cg.limitMiB, heapLimitMiB: mib(metricSum(m1, 'migration_controller_nodejs_heap_size_limit_bytes')), cgroupPeakMiB: round(cg.peakMiB(), 1), oomKills: cg.oomKills(), controllerExited: ctl.exited } } : {}),
      peakCacheObjects: peakCache,
      cacheObjectsAtPeak: cacheAtPeak,
      simTickMs: o.simTickMs ?? SIM_TICK_MS,
      loadAverage1m: { before: load0, after: round(os.loadavg()[0]!, 2) },
      maxQueueDepth: maxDepth,
      reconciles: metricSum(m1, 'migration_controller_reconcile_total') - reconciles0,
      reconcileErrors: Object.values(errs).reduce((a, b) => a + b, 0),
      reconcileErrorsByReason: errs,
      apiRequests: metricSum(m1, 'migration_controller_api_requests_total') - api0,
      wakeupsByCause: wakeups,
      timedLooks: Object.entries(wakeups).filter(([k]) => / (requeue:|retry)/.test(k)).reduce((a, [, v]) => a + v, 0),
      timerWakeups: m1.includes('migration_controller_timer_wakeups_total') ? metricSum(m1, 'migration_controller_timer_wakeups_total') - metricSum(m0, 'migration_controller_timer_wakeups_total') : undefined,
      apiRequestsByVerbResource: requests,
      otherCpuSeconds: Object.fromEntries(Object.entries(other1).map(([k, v]) => [k, round(v - (other0[k] ?? 0), 1)])),
    };
  } finally {
    if (sampler) clearInterval(sampler);
    await inf?.stop();
    await ctl.stop();
    cg?.remove();
  }
}

export function printScale(rows: ScaleFigures[]): void {
  console.log('\n== scale: N tasks × 2 VMs created at once across namespaces');
  console.log('  tasks   VMs  wall→Ready s  CPU s  CPU ms/task  peak RSS MiB  peak heap MiB  cache objects  max queue  reconciles  API req  errors  failed');
  for (const r of rows) {
    console.log(`  ${String(r.tasks).padStart(5)} ${String(r.vms).padStart(5)} ${String(r.wallSecondsToAllReady).padStart(13)} ${String(r.cpuSeconds).padStart(6)} ${String(r.cpuMsPerTask).padStart(12)} ${String(r.peakRssMiB).padStart(13)} ${String(r.peakHeapUsedMiB).padStart(14)} ${String(r.peakCacheObjects).padStart(14)} ${String(r.maxQueueDepth).padStart(10)} ${String(r.reconciles).padStart(11)} ${String(r.apiRequests).padStart(8)} ${String(r.reconcileErrors).padStart(7)} ${String(r.failedTasks).padStart(7)}`);
    console.log(`        simulator tick ${r.simTickMs} ms; load average ${r.loadAverage1m?.before} → ${r.loadAverage1m?.after}; caches at their peak: ${Object.entries(r.cacheObjectsAtPeak ?? {}).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    console.log(`        other CPU s over the same time: ${Object.entries(r.otherCpuSeconds).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    const m = r.memoryAtPeakRss;
    if (m) console.log(`        at peak RSS ${m.rssMiB} MiB: anonymous ${m.rssAnonMiB} (V8 heap committed ${m.heapTotalMiB}, in use ${m.heapUsedMiB}; outside the heap ${m.anonOutsideHeapMiB}: external ${m.externalMiB}, V8's malloc ${m.v8MallocedMiB}, the rest ${m.nativeRestMiB}), file-backed ${m.rssFileMiB}`);
    if (!r.completed) console.log(`        INCOMPLETE: ${r.endedTasks}/${r.tasks} tasks ended when the benchmark gave up${(r.unended ?? []).map((u) => `\n          ${JSON.stringify(u)}`).join('')}`);
    console.log(`        wake-ups: ${Object.entries(r.wakeupsByCause ?? {}).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    console.log(`        timed looks that came due ${r.timedLooks}; timer wake-ups ${r.timerWakeups ?? `not counted (one per timed look: ${r.timedLooks})`}`);
    console.log(`        top requests: ${Object.entries(r.apiRequestsByVerbResource ?? {}).slice(0, 10).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    if (r.reconcileErrors) console.log(`        errors by reason: ${JSON.stringify(r.reconcileErrorsByReason)}`);
  }
  const g = growth(rows);
  if (g) console.log(`  growth ${g.from}→${g.to} tasks (${g.factor}×): wall ${g.wall}×, CPU ${g.cpu}×, CPU per task ${g.cpuPerTask}×, peak RSS ${g.rss}×, max queue ${g.queue}×, API requests ${g.api}×`);
}

export function growth(rows: ScaleFigures[]): Record<string, number> | undefined {
  if (rows.length < 2) return undefined;
  const a = rows[0]!;
  const b = rows[rows.length - 1]!;
  const r = (x: number, y: number): number => (x > 0 ? round(y / x, 2) : NaN);
  return { from: a.tasks, to: b.tasks, factor: r(a.tasks, b.tasks), wall: r(a.wallSecondsToAllReady, b.wallSecondsToAllReady), cpu: r(a.cpuSeconds, b.cpuSeconds), cpuPerTask: r(a.cpuMsPerTask, b.cpuMsPerTask), rss: r(a.peakRssMiB, b.peakRssMiB), queue: r(a.maxQueueDepth, b.maxQueueDepth), api: r(a.apiRequests, b.apiRequests) };
}

/**
 * The simulated engine's progress tick here (its default is 100 ms, which the e2e tests want). Forklift and
 * CDI report progress every few seconds; at 100 ms, 1,600 simulated transfers alone kept the API server
 * busy and the 800-task size measured the simulator, not the controller.
 */
export const SIM_TICK_MS = 1000;

/**
 * Above 800 tasks the tick slows to 2.5 s: 4,000 simulated transfers at a 1 s tick would, like 1,600 at
 * 100 ms, make the 2,000-task size measure the simulator's own status writes. Progress ticks change how
 * often a transfer reports, not how many steps an import takes, so the controller's work per task is
 * comparable across sizes (its wall time is not).
 */
export function simTickFor(tasks: number): number {
  return tasks > 800 ? 2500 : SIM_TICK_MS;
}

if (isMain(import.meta)) {
  const flags = parseFlags(process.argv.slice(2));
  const quick = flags.has('quick');
  const sizes = numList(flags.get('sizes'), quick ? [5, 20] : [50, 200]);
  const namespaces = Number(flags.get('namespaces') ?? (quick ? 5 : 20));
  const pvSyncPeriod = flags.get('pv-sync-period') ?? '15s';
  const timeoutMs = flags.has('timeout-minutes') ? Number(flags.get('timeout-minutes')) * 60_000 : undefined;
  const rows: ScaleFigures[] = [];
  for (const n of sizes) {
    // A fresh control plane per size: leftovers of a smaller run must not slow a larger one.
    // No audit log: nothing here counts requests by identity, and writing it costs the API server CPU.
    const tickMs = simTickFor(n);
    const env = await startEnv({ pvSyncPeriod, oneDiskVMs: 2 * n, auditLog: false, simTimings: { tickMs } });
    try {
      const r = await benchScale(env, { tasks: n, namespaces, timeoutMs, simTickMs: tickMs, heapSnapshotDir: flags.get('heap-snapshot'), settle: !quick, memoryLimitMiB: flags.has('memory-limit') ? Number(flags.get('memory-limit')) : undefined });
      rows.push(r);
      log(`scale ${n}: ${r.completed ? `all ended in ${r.wallSecondsToAllReady} s` : `${r.endedTasks}/${r.tasks} ended in ${r.wallSecondsToAllReady} s (gave up)`}, CPU ${r.cpuSeconds} s (${r.cpuMsPerTask} ms per task), peak RSS ${r.peakRssMiB} MiB, peak heap ${r.peakHeapUsedMiB} MiB, ${r.peakCacheObjects} cached objects at peak, max queue ${r.maxQueueDepth}, errors ${r.reconcileErrors}, failed ${r.failedTasks}`);
      // Written after every size: a long size interrupted later does not lose the ones already measured.
      writeResult(flags.get('name') ?? 'scale', { sizes, namespaces, vmsPerTask: 2, pvSyncPeriod, simTickMs: Object.fromEntries(sizes.map((n) => [n, simTickFor(n)])), quick, controller: process.env.BENCH_CONTROLLER_REF ? revOf(process.env.BENCH_CONTROLLER_REF) : 'working tree', complete: false }, { rows, growth: growth(rows) });
    } finally {
      await env.stop();
    }
  }
  printScale(rows);
  console.log(`  → ${writeResult(flags.get('name') ?? 'scale', { sizes, namespaces, vmsPerTask: 2, pvSyncPeriod, simTickMs: Object.fromEntries(sizes.map((n) => [n, simTickFor(n)])), quick, controller: process.env.BENCH_CONTROLLER_REF ? revOf(process.env.BENCH_CONTROLLER_REF) : 'working tree', complete: true }, { rows, growth: growth(rows) })}`);
}
