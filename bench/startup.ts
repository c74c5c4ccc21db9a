// Start-up and idle cost with many existing objects.
//  - idle: the steady-state request rate (and CPU) of a controller holding N finished tasks, once it has
//    settled; reads should come from informer caches, so the rate should be ~0.
//  - startup: process start (spawn) to the first 200 from /readyz with N tasks and N sources present.
// Prints the figures and writes bench/results/idle.json and bench/results/startup.json.
//
//   node bench/startup.ts [--objects 1000] [--namespaces 20] [--repeats 5] [--idle-seconds 60] [--quick]
import { createFinishedTasks, createSources, isMain, log, median, mib, namespaceNames, parseFlags, round, spawnController, startEnv, writeResult, type BenchEnv } from './lib.ts';

export interface IdleOptions {
  tasks: number;
  namespaces: number;
  /** Measurement window once the controller has settled. */
  idleSeconds: number;
  /** No controller request for this long = settled. */
  quietMs?: number;
}

export interface IdleFigures {
  tasks: number;
  windowSeconds: number;
  requestsToSettle: number;
  settleSeconds: number;
  requestsInWindow: number;
  requestsPerSecond: number;
  byVerbResource: Record<string, number>;
  cpuPercentInWindow: number;
  rssMiB: number;
}

export async function benchIdle(env: BenchEnv, o: IdleOptions): Promise<IdleFigures> {
  const nss = namespaceNames('idle', o.namespaces);
  log(`idle: creating ${o.tasks} finished tasks in ${nss.length} namespaces (controller stopped)`);
  await createFinishedTasks(env.admin, nss, o.tasks);
  const m0 = env.audit.mark();
  const ctl = await spawnController(env, { vddk: false });
  try {
    await ctl.waitReady();
    const settledAt = await env.audit.waitQuiet(m0, o.quietMs ?? 3000, 300_000);
    const settle = env.audit.count(m0, undefined, settledAt);
    const settleSeconds = (Date.now() - ctl.spawnedAt - (o.quietMs ?? 3000)) / 1000;
    log(`idle: settled after ${settle.total} requests; measuring ${o.idleSeconds} s of idleness`);
    const m1 = env.audit.mark();
    const s0 = ctl.stats();
    const t0 = Date.now();
    // A measurement window, not synchronisation: the figure is what happens inside it.
    await new Promise((r) => setTimeout(r, o.idleSeconds * 1000));
    const s1 = ctl.stats();
    const secs = (Date.now() - t0) / 1000;
    const win = env.audit.count(m1);
    return {
      tasks: o.tasks,
      windowSeconds: round(secs, 1),
      requestsToSettle: settle.total,
      settleSeconds: round(settleSeconds, 1),
      requestsInWindow: win.total,
      requestsPerSecond: round(win.total / secs, 3),
      byVerbResource: win.byVerbResource,
      cpuPercentInWindow: round((100 * (s1.cpuSeconds - s0.cpuSeconds)) / secs, 2),
      rssMiB: mib(s1.rssBytes),
    };
  } finally {
    await ctl.stop();
  }
}

export interface StartupOptions {
  /** Tasks and sources present (each). */
  objects: number;
  namespaces: number;
  repeats: number;
  /** false: the tasks are already there (the idle benchmark's, in the same environment). */
  createTasks?: boolean;
}

export interface StartupFigures {
  tasks: number;
  sources: number;
  readyMs: number[];
  readyMsMedian: number;
  cpuSecondsToReadyMedian: number;
  rssAtReadyMiBMedian: number;
}

export async function benchStartup(env: BenchEnv, o: StartupOptions): Promise<StartupFigures> {
  const nss = namespaceNames('start', o.namespaces);
  log(`startup: creating ${o.createTasks === false ? '' : `${o.objects} finished tasks and `}${o.objects} sources in ${nss.length} namespaces`);
  if (o.createTasks !== false) await createFinishedTasks(env.admin, nss, o.objects, 'st');
  await createSources(env.admin, nss, o.objects);
  const readyMs: number[] = [];
  const cpu: number[] = [];
  const rss: number[] = [];
  for (let i = 0; i < o.repeats; i++) {
    // No VDDK image: sources stop at their first gate, so work after /readyz stays small between runs.
    const ctl = await spawnController(env, { vddk: false });
    try {
      const ms = await ctl.waitReady();
      const s = ctl.stats();
      readyMs.push(ms);
      cpu.push(s.cpuSeconds);
      rss.push(s.rssBytes);
      log(`startup: run ${i + 1}/${o.repeats}: /readyz after ${ms} ms (${s.cpuSeconds.toFixed(2)} CPU s, RSS ${mib(s.rssBytes)} MiB)`);
    } finally {
      await ctl.stop();
    }
  }
  return {
    tasks: o.objects,
    sources: o.objects,
    readyMs,
    readyMsMedian: median(readyMs),
    cpuSecondsToReadyMedian: round(median(cpu), 2),
    rssAtReadyMiBMedian: mib(median(rss)),
  };
}

export function printIdle(f: IdleFigures): void {
  console.log(`\n== idle: a settled controller holding ${f.tasks} finished tasks`);
  console.log(`  to settle after start: ${f.requestsToSettle} requests in ~${f.settleSeconds} s`);
  console.log(`  in a ${f.windowSeconds} s window: ${f.requestsInWindow} requests = ${f.requestsPerSecond} req/s, CPU ${f.cpuPercentInWindow}%, RSS ${f.rssMiB} MiB`);
  if (f.requestsInWindow) console.log(`  by verb/resource: ${JSON.stringify(f.byVerbResource)}`);
}

export function printStartup(f: StartupFigures): void {
  console.log(`\n== startup: process start to /readyz with ${f.tasks} tasks and ${f.sources} sources`);
  console.log(`  median ${f.readyMsMedian} ms (runs: ${f.readyMs.join(', ')} ms); CPU to ready ${f.cpuSecondsToReadyMedian} s; RSS at ready ${f.rssAtReadyMiBMedian} MiB`);
}

if (isMain(import.meta)) {
  const flags = parseFlags(process.argv.slice(2));
  const quick = flags.has('quick');
  const objects = Number(flags.get('objects') ?? (quick ? 100 : 1000));
  const namespaces = Number(flags.get('namespaces') ?? 20);
  const repeats = Number(flags.get('repeats') ?? (quick ? 1 : 5));
  const idleSeconds = Number(flags.get('idle-seconds') ?? (quick ? 5 : 60));
  const env = await startEnv({ pvSyncPeriod: flags.get('pv-sync-period') });
  try {
    const idle = await benchIdle(env, { tasks: objects, namespaces, idleSeconds });
    printIdle(idle);
    console.log(`  → ${writeResult('idle', { tasks: objects, namespaces, idleSeconds, quick }, { ...idle })}`);
    // The idle benchmark's finished tasks are the start-up fixture's tasks.
    const st = await benchStartup(env, { objects, namespaces, repeats, createTasks: false });
    printStartup(st);
    console.log(`  → ${writeResult('startup', { objects, namespaces, repeats, quick }, { ...st })}`);
  } finally {
    await env.stop();
  }
}
