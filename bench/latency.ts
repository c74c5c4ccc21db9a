// Handoff latency: from the moment the engine marks a VM's migration Succeeded (the first of the Plan's
// and the Migration's status to say so, seen by an admin watch) to the task's Ready=True (seen by the same
// kind of watch), for a 1-disk and a 4-disk VM, with kube-controller-manager at its DEFAULT PV binder sync
// period (15 s). The anchor then runs in the same environment: f63458f in its poll-only mode
// (POLL_ANCHOR_REF in bench/lib.ts; no wake-ups from Forklift objects or claims, every requeue 20 s). Prints both and their ratio; writes
// bench/results/latency.json.
//
// With --baseline <git ref>, that ref's watching controller is measured too, in the same environment,
// and the ratios baseline / current are written beside the figures.
//
// Each watching 1-disk run also records, from the audit log, every request the controller made between
// Succeeded and Ready (when it arrived, how long the API server took, what it was): where the time goes.
// --one-disk-only leaves the 4-disk VM out, so that the 1-disk figure and its timeline are its own.
//
//   node bench/latency.ts [--repeats 3] [--poll-interval-ms 20000] [--pv-sync-period 15s] [--quick] [--baseline main] [--one-disk-only]
import { LABEL_TASK } from '../src/api/labels.ts';
import { GVRs } from '../src/runtime/gvr.ts';
import type { Informer } from '../src/runtime/informer.ts';
import type { KubeObject } from '../src/runtime/kube.ts';
import { isMain, log, median, type TimelineEntry, namespaceNames, outcome, parseFlags, round, spawnController, startEnv, taskObject, until, watchKind, writeResult, type BenchEnv } from './lib.ts';

export interface LatencyOptions {
  repeats: number;
  pollIntervalMs: number;
  /** Also measure this git ref's watching controller. */
  baseline?: string;
  /** Leave the 4-disk VM out. */
  oneDiskOnly?: boolean;
}

/** One request of the controller between Succeeded and Ready, `offsetMs` after Succeeded was seen. */
export type TimelineStep = Omit<TimelineEntry, 'atMs'> & { offsetMs: number };

export interface ModeFigures {
  mode: 'watch' | 'poll-only' | 'baseline';
  /** ms per run, by disk count */
  oneDisk: number[];
  fourDisk: number[];
  oneDiskMedianMs: number;
  fourDiskMedianMs: number;
  /** The watching controller's requests between Succeeded and Ready in its last 1-disk run. */
  oneDiskTimeline?: TimelineStep[];
}

export interface LatencyFigures {
  pollIntervalMs: number;
  watch: ModeFigures;
  pollOnly: ModeFigures;
  /** poll-only median / watch median */
  ratioOneDisk: number;
  ratioFourDisk: number;
  /** With --baseline: that ref's watching controller, and its medians over the current one's. */
  baseline?: { ref: string; watch: ModeFigures; ratioOneDisk: number; ratioFourDisk: number };
}

type Cond = { type: string; status: string };
type VmStatus = { conditions?: Cond[] };

function allSucceeded(vms: VmStatus[] | undefined): boolean {
  return !!vms?.length && vms.every((v) => v.conditions?.some((c) => c.type === 'Succeeded' && c.status === 'True'));
}

/** Records, per task key, when the engine first reported its VMs Succeeded and when the task became Ready. */
class Clock {
  readonly succeeded = new Map<string, number>();
  readonly ready = new Map<string, number>();
  private infs: Informer[] = [];

  async start(env: BenchEnv): Promise<void> {
    const onForklift = (o: KubeObject, at: number, vms: VmStatus[] | undefined): void => {
      const task = o.metadata?.labels?.[LABEL_TASK];
      if (!task) return;
      const k = `${o.metadata?.namespace}/${task}`;
      if (!this.succeeded.has(k) && allSucceeded(vms)) this.succeeded.set(k, at);
    };
    this.infs.push(await watchKind(env.admin, GVRs.Migration, (o, at) => onForklift(o, at, (o as { status?: { vms?: VmStatus[] } }).status?.vms)));
    this.infs.push(await watchKind(env.admin, GVRs.Plan, (o, at) => onForklift(o, at, (o as { status?: { migration?: { vms?: VmStatus[] } } }).status?.migration?.vms)));
    this.infs.push(
      await watchKind(env.admin, GVRs.VMImportTask, (o, at) => {
        const k = `${o.metadata?.namespace}/${o.metadata?.name}`;
        if (!this.ready.has(k) && outcome(o) === 'ready') this.ready.set(k, at);
      }),
    );
  }

  latency(k: string): number {
    const s = this.succeeded.get(k);
    const r = this.ready.get(k);
    if (s === undefined || r === undefined) throw new Error(`bench: no ${s === undefined ? 'Succeeded' : 'Ready'} time for ${k}`);
    return r - s;
  }

  async stop(): Promise<void> {
    await Promise.all(this.infs.map((i) => i.stop()));
  }
}

async function runMode(env: BenchEnv, clock: Clock, mode: ModeFigures['mode'], o: LatencyOptions, ns: string): Promise<ModeFigures> {
  const ctl = await spawnController(env, mode === 'poll-only' ? { pollOnly: true, pollIntervalMs: o.pollIntervalMs } : mode === 'baseline' ? { ref: o.baseline } : {});
  const f: ModeFigures = { mode, oneDisk: [], fourDisk: [], oneDiskMedianMs: NaN, fourDiskMedianMs: NaN };
  try {
    await ctl.waitReady();
    for (let i = 0; i < o.repeats; i++) {
      // The two shapes run side by side: each figure is its own Succeeded→Ready interval.
      const names = { 1: `${mode}-d1-${i}`, 4: `${mode}-d4-${i}` } as const;
      const shapes = o.oneDiskOnly ? ([1] as const) : ([1, 4] as const);
      const mark = env.audit.mark();
      for (const d of shapes) await env.admin.create(GVRs.VMImportTask, taskObject(ns, names[d], [env.takeVM(d)]));
      for (const d of shapes) {
        const out = await until(`task ${ns}/${names[d]} to end`, async () => outcome(await env.admin.get(GVRs.VMImportTask, ns, names[d])), 600_000, 200);
        if (out !== 'ready') throw new Error(`bench: import ${ns}/${names[d]} failed; see ${ctl.logPath}`);
        await until(`the watch to see ${names[d]} Ready`, () => clock.ready.has(`${ns}/${names[d]}`), 10_000);
        const ms = clock.latency(`${ns}/${names[d]}`);
        (d === 1 ? f.oneDisk : f.fourDisk).push(ms);
        log(`latency: ${mode} ${d}-disk run ${i + 1}/${o.repeats}: Succeeded→Ready ${ms} ms`);
        if (d === 1 && mode === 'watch') {
          const k = `${ns}/${names[d]}`;
          const s0 = clock.succeeded.get(k)!;
          // The audit log is written a moment after the request: wait until the interval's end is in it.
          await until('the audit log to reach Ready', () => env.audit.timeline(mark, clock.ready.get(k)!, Infinity).length > 0 || undefined, 5_000).catch(() => undefined);
          f.oneDiskTimeline = env.audit.timeline(mark, s0 - 50, clock.ready.get(k)!).map(({ atMs, ...e }) => ({ offsetMs: atMs - s0, ...e }));
        }
      }
    }
  } finally {
    await ctl.stop();
  }
  f.oneDiskMedianMs = median(f.oneDisk);
  f.fourDiskMedianMs = o.oneDiskOnly ? NaN : median(f.fourDisk);
  return f;
}

/** Needs 2×repeats 1-disk and 2×repeats 4-disk VMs. */
export async function benchLatency(env: BenchEnv, o: LatencyOptions): Promise<LatencyFigures> {
  const [ns] = namespaceNames(`lat-${Date.now().toString(36)}`, 1) as [string];
  const clock = new Clock();
  await clock.start(env);
  try {
    // The source is connected by a normal controller first; both modes then import against it.
    const warm = await spawnController(env);
    await warm.waitReady();
    await env.namespaceWithSource(ns);
    await warm.stop();
    const base = o.baseline ? await runMode(env, clock, 'baseline', o, ns) : undefined;
    const watch = await runMode(env, clock, 'watch', o, ns);
    const pollOnly = await runMode(env, clock, 'poll-only', o, ns);
    return {
      ...(base && o.baseline ? { baseline: { ref: o.baseline, watch: base, ratioOneDisk: round(base.oneDiskMedianMs / watch.oneDiskMedianMs, 2), ratioFourDisk: round(base.fourDiskMedianMs / watch.fourDiskMedianMs, 2) } } : {}),
      pollIntervalMs: o.pollIntervalMs,
      watch,
      pollOnly,
      ratioOneDisk: round(pollOnly.oneDiskMedianMs / watch.oneDiskMedianMs, 1),
      ratioFourDisk: round(pollOnly.fourDiskMedianMs / watch.fourDiskMedianMs, 1),
    };
  } finally {
    await clock.stop();
  }
}

export function printLatency(f: LatencyFigures, pvSyncPeriod: string): void {
  console.log(`\n== handoff latency: engine Succeeded → task Ready=True (PV binder sync ${pvSyncPeriod}; medians)`);
  console.log(`  1-disk VM: watch ${f.watch.oneDiskMedianMs} ms, poll-only (${f.pollIntervalMs / 1000} s) ${f.pollOnly.oneDiskMedianMs} ms → ${f.ratioOneDisk}× `);
  console.log(`  4-disk VM: watch ${f.watch.fourDiskMedianMs} ms, poll-only (${f.pollIntervalMs / 1000} s) ${f.pollOnly.fourDiskMedianMs} ms → ${f.ratioFourDisk}×`);
  if (f.baseline) console.log(`  baseline ${f.baseline.ref} (watching): 1-disk ${f.baseline.watch.oneDiskMedianMs} ms, 4-disk ${f.baseline.watch.fourDiskMedianMs} ms → baseline / current ${f.baseline.ratioOneDisk}×, ${f.baseline.ratioFourDisk}× (runs 1-disk [${f.baseline.watch.oneDisk.join(', ')}], 4-disk [${f.baseline.watch.fourDisk.join(', ')}])`);
  if (f.watch.oneDiskTimeline) {
    console.log(`  the watching controller's requests between Succeeded and Ready (last 1-disk run; ms after Succeeded, API server ms):`);
    for (const e of f.watch.oneDiskTimeline) console.log(`    ${String(e.offsetMs).padStart(6)}  ${String(e.serverMs).padStart(4)}  ${e.code} ${e.verb.padEnd(7)} ${e.resource.padEnd(28)} ${e.object}`);
  }
  console.log(`  runs: watch 1-disk [${f.watch.oneDisk.join(', ')}], 4-disk [${f.watch.fourDisk.join(', ')}]; poll-only 1-disk [${f.pollOnly.oneDisk.join(', ')}], 4-disk [${f.pollOnly.fourDisk.join(', ')}]`);
}

if (isMain(import.meta)) {
  const flags = parseFlags(process.argv.slice(2));
  const quick = flags.has('quick');
  const repeats = Number(flags.get('repeats') ?? (quick ? 1 : 3));
  const pollIntervalMs = Number(flags.get('poll-interval-ms') ?? 20_000);
  const pvSyncPeriod = flags.get('pv-sync-period') ?? '15s';
  const baseline = flags.get('baseline');
  const oneDiskOnly = flags.has('one-disk-only');
  const modes = baseline ? 3 : 2;
  const env = await startEnv({ pvSyncPeriod, oneDiskVMs: modes * repeats, fourDiskVMs: modes * repeats });
  try {
    const f = await benchLatency(env, { repeats, pollIntervalMs, baseline, oneDiskOnly });
    printLatency(f, pvSyncPeriod);
    console.log(`  → ${writeResult(oneDiskOnly ? 'latency-one-disk' : 'latency', { repeats, pollIntervalMs, pvSyncPeriod, quick, baseline, oneDiskOnly }, { ...f })}`);
  } finally {
    await env.stop();
  }
}
