// Status latency of a large task: one VMImportTask of 200 1-disk VMs (--vms), and for every VM how long
// after the world changed its task's status showed it:
//   - started:     the VM's Migration appears (an admin watch)      → the VM reads Transferring;
//   - transferred: the engine reports the VM Succeeded (Plan or Migration, whichever says so first)
//                  → the VM reads Creating or Succeeded;
//   - imported:    the VM's VMInstance reports its release Ready     → the VM reads Succeeded.
// Each is seen by an admin watch on both sides, so both ends carry the same watch delay. Prints p50, p95
// and max per transition; with --baseline <git ref>, that ref's controller runs the same import on a
// fresh control plane and the figures are written side by side, with ratios baseline / current. Also
// counts the controller's status writes of the task and its requests in all (the audit log).
//
// --kube-api-qps raises both controllers' client rate limit (and burst, twice it): the handoff of 200 VMs
// is paced by it (about 8 requests a step, 14 steps a VM), which the latency figures do not measure.
//
// --minutes bounds each run: a controller that has not finished by then is reported as far as it got,
// and each world change its status has not shown yet counts as "not shown" with the time it has waited
// (a lower bound of its latency). --only-baseline runs the baseline alone.
//
//   node bench/status-latency.ts [--vms 200] [--baseline <ref>] [--only-baseline] [--minutes <n>] [--mb-per-second 512] [--kube-api-qps <n>] [--quick]
// writes bench/results/status-latency.json.
import { copyFileSync, writeFileSync } from 'node:fs';
import { COZY_USER_LABEL_PREFIX, LABEL_TASK, LABEL_VM_ID } from '../src/api/labels.ts';
import type { VMImportTask } from '../src/api/types.ts';
import { GVRs } from '../src/runtime/gvr.ts';
import type { Informer } from '../src/runtime/informer.ts';
import type { KubeObject } from '../src/runtime/kube.ts';
import { isMain, log, outcome, parseFlags, revOf, round, spawnController, startEnv, taskObject, until, watchKind, writeResult, type BenchEnv } from './lib.ts';

type Transition = 'started' | 'transferred' | 'imported';
const TRANSITIONS: Transition[] = ['started', 'transferred', 'imported'];

export interface Percentiles {
  count: number;
  /** World changes the status had not shown when the run ended, and the longest of their waits so far. */
  notShown?: number;
  notShownLongestMs?: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
}

export interface RunFigures {
  ref: string;
  vms: number;
  outcome: string;
  /** First create to the task's Ready (or end). */
  wallSeconds: number;
  latency: Record<Transition, Percentiles>;
  /** The controller's writes of the task's status, and its requests in all, over the import. */
  statusWrites: number;
  requests: number;
}

function percentile(xs: number[], p: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

function summary(xs: number[]): Percentiles {
  return { count: xs.length, p50Ms: percentile(xs, 50), p95Ms: percentile(xs, 95), maxMs: xs.length ? Math.max(...xs) : NaN };
}

type EngineVM = { id?: string; conditions?: Array<{ type: string; status: string }> };
const succeeded = (v: EngineVM): boolean => !!v.conditions?.some((c) => c.type === 'Succeeded' && c.status === 'True');

/** When each side of each transition was first seen, per VM id. */
class Observer {
  readonly world = new Map<Transition, Map<string, number>>(TRANSITIONS.map((t) => [t, new Map()]));
  readonly shown = new Map<Transition, Map<string, number>>(TRANSITIONS.map((t) => [t, new Map()]));
  private infs: Informer[] = [];

  private readonly ns: string;
  private readonly task: string;

  constructor(ns: string, task: string) {
    this.ns = ns;
    this.task = task;
  }

  private first(m: Map<Transition, Map<string, number>>, t: Transition, id: string | undefined, at: number): void {
    if (id && !m.get(t)!.has(id)) m.get(t)!.set(id, at);
  }

  async start(env: BenchEnv): Promise<void> {
    // Cozystack's aggregated API hands user labels back prefixed: both spellings are read.
    const label = (o: KubeObject, k: string): string | undefined => o.metadata?.labels?.[k] ?? o.metadata?.labels?.[COZY_USER_LABEL_PREFIX + k];
    const mine = (o: KubeObject): boolean => o.metadata?.namespace === this.ns && label(o, LABEL_TASK) === this.task;
    const engine = (vms: EngineVM[] | undefined, at: number): void => {
      for (const v of vms ?? []) if (succeeded(v)) this.first(this.world, 'transferred', v.id, at);
    };
    this.infs.push(
      await watchKind(env.admin, GVRs.Migration, (o, at) => {
        if (!mine(o)) return;
        const vms = (o as { spec?: { plan?: unknown }; status?: { vms?: EngineVM[] } }).status?.vms;
        // One VM per Plan and Migration: the Migration's VM is its Plan's only VM.
        const id = label(o, LABEL_VM_ID) ?? vms?.[0]?.id;
        this.first(this.world, 'started', id, at);
        engine(vms, at);
      }, this.ns),
    );
    this.infs.push(await watchKind(env.admin, GVRs.Plan, (o, at) => mine(o) && engine((o as { status?: { migration?: { vms?: EngineVM[] } } }).status?.migration?.vms, at), this.ns));
    this.infs.push(
      await watchKind(env.admin, GVRs.VMInstance, (o, at) => {
        if (!mine(o)) return;
        const ready = ((o.status as { conditions?: Array<{ type: string; status: string }> } | undefined)?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
        if (ready) this.first(this.world, 'imported', label(o, LABEL_VM_ID), at);
      }, this.ns),
    );
    this.infs.push(
      await watchKind(env.admin, GVRs.VMImportTask, (o, at) => {
        if (o.metadata?.name !== this.task) return;
        for (const v of (o as unknown as VMImportTask).status?.vms ?? []) {
          if (v.phase === 'Transferring' || v.phase === 'Creating' || v.phase === 'Succeeded') this.first(this.shown, 'started', v.id, at);
          if (v.phase === 'Creating' || v.phase === 'Succeeded') this.first(this.shown, 'transferred', v.id, at);
          if (v.phase === 'Succeeded') this.first(this.shown, 'imported', v.id, at);
        }
      }, this.ns),
    );
  }

  /** Shown minus world, per transition; a status that showed a phase before the watch saw the world counts 0. */
  latencies(): Record<Transition, number[]> {
    const out = {} as Record<Transition, number[]>;
    for (const t of TRANSITIONS) {
      out[t] = [];
      for (const [id, w] of this.world.get(t)!) {
        const s = this.shown.get(t)!.get(id);
        if (s !== undefined) out[t].push(Math.max(0, s - w));
      }
    }
    return out;
  }

  /** The waits, at `now`, of world changes not shown yet. */
  waiting(now: number): Record<Transition, number[]> {
    const out = {} as Record<Transition, number[]>;
    for (const t of TRANSITIONS) out[t] = [...this.world.get(t)!].filter(([id]) => !this.shown.get(t)!.has(id)).map(([, w]) => now - w);
    return out;
  }

  async stop(): Promise<void> {
    await Promise.all(this.infs.map((i) => i.stop()));
  }
}

/** One import of `vms` VMs in one task, on a fresh control plane, by the controller of `ref` (or this tree). */
export async function runOnce(o: { vms: number; mbPerSecond: number; ref?: string; qps?: number; minutes?: number }): Promise<RunFigures> {
  const env = await startEnv({ oneDiskVMs: o.vms, mbPerSecond: o.mbPerSecond });
  const ns = 'status-latency';
  const task = 'campaign';
  const obs = new Observer(ns, task);
  try {
    const warm = await spawnController(env);
    await warm.waitReady();
    await env.namespaceWithSource(ns);
    await warm.stop();
    await obs.start(env);
    const extraArgs = o.qps ? ['--kube-api-qps', String(o.qps), '--kube-api-burst', String(2 * o.qps)] : [];
    const ctl = await spawnController(env, { ...(o.ref ? { ref: o.ref } : {}), extraArgs });
    try {
      await ctl.waitReady();
      const mark = env.audit.mark();
      const t0 = Date.now();
      await env.admin.create(GVRs.VMImportTask, taskObject(ns, task, Array.from({ length: o.vms }, () => env.takeVM(1))));
      const out = await until(`task ${ns}/${task} to end`, async () => outcome(await env.admin.get(GVRs.VMImportTask, ns, task)), (o.minutes ?? 60) * 60_000, 500).catch(() => `not finished in ${o.minutes ?? 60} min`);
      const wallSeconds = round((Date.now() - t0) / 1000, 1);
      const counts = env.audit.count(mark);
      // With BENCH_KEEP_LOG=<path>: beside the controller's log (<path>.times.json) when each VM's world change and its status were seen, per transition.
      if (process.env.BENCH_KEEP_LOG) writeFileSync(`${process.env.BENCH_KEEP_LOG}.times.json`, JSON.stringify({ ...Object.fromEntries(TRANSITIONS.map((t) => [t, { world: Object.fromEntries(obs.world.get(t)!), shown: Object.fromEntries(obs.shown.get(t)!) }])), requests: counts.byVerbResource }));
      const lat = obs.latencies();
      const waits = obs.waiting(Date.now());
      const figures: RunFigures = {
        ref: o.ref ?? 'working tree',
        vms: o.vms,
        outcome: out,
        wallSeconds,
        latency: Object.fromEntries(TRANSITIONS.map((t) => [t, { ...summary(lat[t]), ...(waits[t].length ? { notShown: waits[t].length, notShownLongestMs: Math.max(...waits[t]) } : {}) }])) as Record<Transition, Percentiles>,
        statusWrites: Object.entries(counts.byVerbResource).filter(([k]) => k.startsWith('patch vmimporttasks/status') || k.startsWith('update vmimporttasks/status')).reduce((a, [, n]) => a + n, 0),
        requests: counts.total,
      };
      log(`status-latency: ${figures.ref}: ${out} in ${wallSeconds} s; ${TRANSITIONS.map((t) => `${t} p50 ${figures.latency[t].p50Ms} / p95 ${figures.latency[t].p95Ms} / max ${figures.latency[t].maxMs} ms`).join('; ')}; ${figures.statusWrites} status writes, ${figures.requests} requests`);
      return figures;
    } finally {
      await ctl.stop();
      // The controller's log outlives the control plane where asked: BENCH_KEEP_LOG=<path>.
      if (process.env.BENCH_KEEP_LOG) copyFileSync(ctl.logPath, process.env.BENCH_KEEP_LOG);
    }
  } finally {
    await obs.stop();
    await env.stop();
  }
}

export function printStatusLatency(cur: RunFigures | undefined, base?: RunFigures): void {
  if (!cur) {
    if (base) console.log(`\n== status latency (baseline ${base.ref} alone): ${JSON.stringify(base.latency)}; wall ${base.wallSeconds} s, ${base.outcome}`);
    return;
  }
  console.log(`\n== status latency: one task of ${cur.vms} VMs, world change → the task's status shows it`);
  const row = (f: RunFigures, t: Transition): string =>
    `p50 ${f.latency[t].p50Ms} ms, p95 ${f.latency[t].p95Ms} ms, max ${f.latency[t].maxMs} ms (${f.latency[t].count} VMs)${f.latency[t].notShown ? `; ${f.latency[t].notShown} not shown yet, the longest waiting ${f.latency[t].notShownLongestMs} ms` : ''}`;
  for (const t of TRANSITIONS) {
    console.log(`  ${t.padEnd(11)} current: ${row(cur, t)}`);
    if (base) console.log(`  ${''.padEnd(11)} baseline ${base.ref}: ${row(base, t)} → p95 baseline / current ${round(base.latency[t].p95Ms / cur.latency[t].p95Ms, 1)}×`);
  }
  console.log(`  wall ${cur.wallSeconds} s${base ? ` (baseline ${base.wallSeconds} s)` : ''}; status writes ${cur.statusWrites}${base ? ` (baseline ${base.statusWrites})` : ''}; requests ${cur.requests}${base ? ` (baseline ${base.requests})` : ''}`);
}

if (isMain(import.meta)) {
  const flags = parseFlags(process.argv.slice(2));
  const quick = flags.has('quick');
  const vms = Number(flags.get('vms') ?? (quick ? 20 : 200));
  const mbPerSecond = Number(flags.get('mb-per-second') ?? 512);
  const baseline = flags.get('baseline');
  const qps = flags.has('kube-api-qps') ? Number(flags.get('kube-api-qps')) : undefined;
  const minutes = flags.has('minutes') ? Number(flags.get('minutes')) : undefined;
  const cur = flags.has('only-baseline') ? undefined : await runOnce({ vms, mbPerSecond, qps, minutes });
  const base = baseline ? await runOnce({ vms, mbPerSecond, ref: baseline, qps, minutes }) : undefined;
  printStatusLatency(cur, base);
  const ratios = base && cur ? Object.fromEntries(TRANSITIONS.map((t) => [t, { p95: round(base.latency[t].p95Ms / cur.latency[t].p95Ms, 2), max: round(base.latency[t].maxMs / cur.latency[t].maxMs, 2) }])) : undefined;
  console.log(`  → ${writeResult(cur ? 'status-latency' : 'status-latency-baseline', { vms, mbPerSecond, quick, minutes, kubeApiQPS: qps ?? 'default', baseline: baseline ? `${baseline} (${revOf(baseline)})` : undefined }, { ...(cur ? { current: cur } : {}), ...(base ? { baseline: base } : {}), ...(ratios ? { ratiosBaselineOverCurrent: ratios } : {}) })}`);
}
