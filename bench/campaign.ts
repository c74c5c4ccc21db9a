// A migration campaign at the model level: 200 VMs of 1–4 disks and mixed sizes on 6 ESXi hosts of
// different bandwidths, imported by 3 tenants that start at different times, run as a discrete-event
// simulation over the controller's pure admission core (src/controllers/budget/) and the simulated ESXi
// hosts (test/sim/esxi.ts). Two runs side by side:
//   baseline: the budget off — today's behaviour: every VM's Migration at once, Forklift's vSphere
//             scheduler the only brake (MAX_VM_INFLIGHT disks per host, counted per source Provider:
//             kubev2v/forklift v2.11.5 pkg/controller/plan/scheduler/vsphere/scheduler.go);
//   budget:   the platform budget (transfer.maxDisksPerHost), Forklift's limit still beneath it.
// Figures: makespan against the lower bound (the largest bytes-on-a-host ÷ that host's bandwidth), peak
// transfers per host against the NFC ceiling, transfers the ceiling refused, how long the smallest
// tenant's first VM waited (and in slot-times), each task's ETA error at 25, 50 and 75% of the campaign;
// each figure beside the baseline's, as a ratio. Written to bench/results/campaign.json.
//
//   node bench/campaign.ts [--budget 10] [--tenant-cap N] [--seed 7] [--quick]
//
// This is the model: it runs the decision the controller makes, not the controller. The run through the
// real controller, the simulator's Forklift and an API server comes with the task reconciler's wiring.
import { FORKLIFT_MAX_VM_INFLIGHT, DEFAULT_MAX_DISKS_PER_HOST, vmKey, type BudgetConfig, type CampaignVM } from '../src/controllers/budget/budget.ts';
import { CampaignBudget } from '../src/controllers/budget/campaign.ts';
import { taskProgress, type VMProgress } from '../src/controllers/budget/eta.ts';
import { EsxiHosts, NFC_CONNECTION_CEILING, type EsxiHostSpec } from '../test/sim/esxi.ts';
import { isMain, log, parseFlags, round, writeResult } from './lib.ts';

const GB = 1e9;
const MB = 1e6;
const VCENTER = 'campaign-vcenter-instance-uuid';

export interface ScenarioTask {
  namespace: string;
  name: string;
  /** The VMImportSource (one Forklift Provider each). */
  source: string;
  arrivesAt: number;
  vms: Array<{ id: string; host: string; disks: number[] }>;
}

export interface Scenario {
  hosts: EsxiHostSpec[];
  tasks: ScenarioTask[];
}

/** A deterministic generator (mulberry32): the same seed, the same campaign. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The issue's campaign: 200 VMs, 1–4 disks each, sizes from 10 GB system disks to 500 GB data disks; six
 * hosts from 300 to 900 MB/s of NFC bandwidth (each stream at most 150 MB/s), VMs placed in proportion
 * to the hosts' bandwidth; the big tenant imports with two teams (two sources, so two Forklift Providers),
 * the mid tenant starts 15 minutes later, the small one 40 minutes later.
 */
export function scenario(seed: number, scale = 1): Scenario {
  const r = rng(seed);
  const bandwidths = [300, 400, 500, 600, 700, 900];
  const hosts: EsxiHostSpec[] = bandwidths.map((b, i) => ({ id: `host-${i + 1}`, bandwidthBytesPerSecond: b * MB, perStreamBytesPerSecond: 150 * MB, connectionCeiling: NFC_CONNECTION_CEILING }));
  const total = bandwidths.reduce((a, b) => a + b, 0);
  const pickHost = (): string => {
    let x = r() * total;
    for (let i = 0; i < bandwidths.length; i++) if ((x -= bandwidths[i]!) < 0) return hosts[i]!.id;
    return hosts.at(-1)!.id;
  };
  const size = (first: boolean): number => {
    // System disks 10–80 GB; data disks mostly 50–200 GB, one in six 200–500 GB.
    if (first) return Math.round((10 + r() * 70) * GB);
    return Math.round((r() < 1 / 6 ? 200 + r() * 300 : 50 + r() * 150) * GB);
  };
  const n = (x: number): number => Math.max(1, Math.round(x * scale));
  const shape: Array<[string, string, string, number, number]> = [
    ['tenant-big', 'wave-a', 'vcenter-team-a', n(70), 0],
    ['tenant-big', 'wave-b', 'vcenter-team-b', n(70), 0],
    ['tenant-mid', 'erp', 'vcenter', n(50), 15 * 60_000],
    ['tenant-small', 'one-app', 'vcenter', n(10), 40 * 60_000],
  ];
  const tasks = shape.map(([namespace, name, source, count, arrivesAt]) => ({
    namespace,
    name,
    source: `${namespace}/${source}`,
    arrivesAt,
    vms: Array.from({ length: count }, (_, i) => {
      const disks = 1 + Math.floor(r() * 4);
      return { id: `${name}-vm-${i}`, host: pickHost(), disks: Array.from({ length: disks }, (_, d) => size(d === 0)) };
    }),
  }));
  return { hosts, tasks };
}

interface VMRun {
  task: ScenarioTask;
  index: number;
  id: string;
  host: string;
  disks: number[];
  state: 'absent' | 'waiting' | 'admitted' | 'transferring' | 'done' | 'failed';
  admittedAt?: number;
  startedAt?: number;
  endedAt?: number;
  diskDone: boolean[];
  diskStart: number[];
}

export interface RunResult {
  makespanSeconds: number;
  lowerBoundSeconds: number;
  makespanOverLowerBound: number;
  peakPerHost: Record<string, number>;
  ceiling: number;
  maxPeakOverCeiling: number;
  transfersFailed: number;
  bytesNotImported: number;
  smallTenantFirstVMWaitSeconds: number;
  slotTimeSeconds: number;
  smallTenantFirstVMWaitSlotTimes: number;
  /** VMs that failed at least once (with retries: were imported again). */
  vmsFailed: number;
  /** Mean over running tasks of |ETA − actual| ÷ actual, at 25, 50 and 75% of the makespan. */
  etaError: Record<'p25' | 'p50' | 'p75', number | null>;
  etaErrorPerTask: Record<'p25' | 'p50' | 'p75', Record<string, number | null>>;
}

/**
 * Forklift's vSphere scheduler, beneath whatever the platform does: per source Provider and host, the
 * untransferred disks of its running VMs at most MAX_VM_INFLIGHT (an idle host takes a wider VM).
 */
function forkliftMayStart(v: VMRun, all: readonly VMRun[]): boolean {
  let inflight = 0;
  for (const o of all) {
    if (o.state !== 'transferring' || o.task.source !== v.task.source || o.host !== v.host) continue;
    inflight += o.diskDone.filter((d) => !d).length;
  }
  const cost = v.disks.length;
  return cost + inflight <= FORKLIFT_MAX_VM_INFLIGHT || (inflight === 0 && cost > FORKLIFT_MAX_VM_INFLIGHT);
}

/**
 * `retryAfterMs`: a VM that failed is imported again that long after (its tenant re-creating the task for
 * it); absent → it stays failed and its bytes are not imported.
 */
export function run(sc: Scenario, cfg: BudgetConfig, o: { sampleMs?: number; retryAfterMs?: number } = {}): RunResult {
  const sampleMs = o.sampleMs ?? 30_000;
  const retries: Array<{ at: number; v: VMRun }> = [];
  const everFailed = new Set<VMRun>();
  const esxi = new EsxiHosts(sc.hosts, 0);
  const vms: VMRun[] = sc.tasks.flatMap((task) => task.vms.map((v, index) => ({ task, index, id: v.id, host: v.host, disks: v.disks, state: 'absent' as const, diskDone: v.disks.map(() => false), diskStart: v.disks.map(() => 0) })));
  const byKey = new Map(vms.map((v) => [vmKey({ namespace: v.task.namespace, task: v.task.name, id: v.id }), v]));
  // The controller's budget object, as the task reconciler holds it.
  const budget = new CampaignBudget(cfg);
  const diskDurations = new Map<string, number[]>();
  const samples: Array<{ t: number; eta: Map<string, { platform?: number; naive?: number }> }> = [];
  let transfersFailed = 0;
  const taskKey = (t: ScenarioTask): string => `${t.namespace}/${t.name}`;
  const bytesLeft = (v: VMRun, now: number): number => v.disks.reduce((a, b, d) => a + (v.diskDone[d] ? 0 : v.state === 'transferring' ? b - esxi.bytesDone(`${v.id}/${d}`, now) : b), 0);

  const campaign = (now: number): CampaignVM[] =>
    vms
      .filter((v) => v.state !== 'absent')
      .map((v) => {
        const moving = v.state === 'transferring';
        return {
          namespace: v.task.namespace,
          task: v.task.name,
          taskCreated: v.task.arrivesAt,
          index: v.index,
          id: v.id,
          vcenter: VCENTER,
          host: v.host,
          disks: v.disks.length,
          disksRemaining: moving ? v.diskDone.filter((d) => !d).length : v.disks.length,
          admitted: v.state === 'admitted' || moving,
          migration: v.state === 'admitted' || moving,
          finished: v.state === 'done' || v.state === 'failed',
          ready: true,
          // What a pass reads: each disk's bytes left (the DiskTransfer step's tasks; the inventory's
          // capacities before the copy) and the VM's rate (its status).
          disksLeft: v.disks.map((b, d) => (v.diskDone[d] ? 0 : moving ? b - esxi.bytesDone(`${v.id}/${d}`, now) : b)),
          ...(moving ? { bytesPerSecond: v.disks.reduce((x, _, d) => x + esxi.rate(`${v.id}/${d}`, now), 0) } : {}),
        };
      });

  const startVM = (v: VMRun, now: number): void => {
    const opened: number[] = [];
    for (let d = 0; d < v.disks.length; d++) {
      const r = esxi.start(v.host, `${v.id}/${d}`, v.disks[d]!, now, `[datastore1] ${v.id}/${v.id}_${d}.vmdk`);
      if (!r.ok) {
        // CDI's importer fails; Forklift fails the VM (its other disks' transfers are canceled).
        transfersFailed++;
        for (const x of opened) esxi.finish(`${v.id}/${x}`, now);
        everFailed.add(v);
        if (o.retryAfterMs !== undefined) {
          v.state = 'absent';
          retries.push({ at: now + o.retryAfterMs, v });
        } else {
          v.state = 'failed';
          v.endedAt = now;
        }
        return;
      }
      opened.push(d);
      v.diskStart[d] = now;
    }
    v.state = 'transferring';
    v.startedAt = now;
  };

  const pass = (now: number): void => {
    for (const r of retries.filter((x) => x.at <= now)) {
      r.v.state = 'waiting';
      retries.splice(retries.indexOf(r), 1);
    }
    for (const v of vms) if (v.state === 'absent' && v.task.arrivesAt <= now && !retries.some((r) => r.v === v)) v.state = 'waiting';
    // The controller: admission to a slot (the budget off: every ready VM at once), then the Migration.
    const a = budget.decide(VCENTER, campaign(now), now).admission;
    for (const k of a.admit) {
      const v = byKey.get(k)!;
      v.state = 'admitted';
      v.admittedAt = now;
    }
    // Forklift: a Migration's VM starts once its Provider's per-host limit allows.
    for (const v of vms) if (v.state === 'admitted' && forkliftMayStart(v, vms)) startVM(v, now);
  };

  const sample = (now: number): void => {
    // A pass of the controller: the hosts' rates sampled, the hosts played forward.
    const { finishes } = budget.decide(VCENTER, campaign(now), now);
    const keyOf = (v: VMRun): string => vmKey({ namespace: v.task.namespace, task: v.task.name, id: v.id });
    const eta = new Map<string, { platform?: number; naive?: number }>();
    for (const task of sc.tasks) {
      if (task.arrivesAt > now) continue;
      const mine = vms.filter((v) => v.task === task);
      if (mine.every((v) => v.state === 'done' || v.state === 'failed')) continue;
      const progress: VMProgress[] = mine.map((v) => {
        const total = v.disks.reduce((x, y) => x + y, 0);
        const key = keyOf(v);
        if (v.state === 'done' || v.state === 'failed') return { key, bytesTotal: v.state === 'done' ? total : 0, bytesDone: v.state === 'done' ? total : 0, state: 'done' };
        const left = bytesLeft(v, now);
        if (v.state === 'transferring') return { key, bytesTotal: total, bytesDone: total - left, state: 'transferring', bytesPerSecond: v.disks.reduce((x, _, d) => x + esxi.rate(`${v.id}/${d}`, now), 0) };
        return { key, bytesTotal: total, bytesDone: 0, state: 'queued' };
      });
      const p = taskProgress(progress, (k) => finishes.get(k));
      const left = p.bytesTotal - p.bytesDone;
      eta.set(taskKey(task), { ...(p.etaSeconds !== undefined ? { platform: p.etaSeconds } : {}), ...(p.bytesPerSecond > 0 ? { naive: left / p.bytesPerSecond } : {}) });
    }
    samples.push({ t: now, eta });
  };

  let now = 0;
  let nextSample = 0;
  const arrivals = [...new Set(sc.tasks.map((t) => t.arrivesAt))].sort((x, y) => x - y);
  pass(now);
  for (let guard = 0; guard < 10_000_000; guard++) {
    if (now >= nextSample) {
      sample(now);
      nextSample = now + sampleMs;
    }
    const c = esxi.nextCompletion();
    const arrival = [...arrivals, ...retries.map((r) => r.at)].filter((t) => t > now).reduce((a, b) => Math.min(a, b), Infinity);
    const live = vms.some((v) => v.state !== 'done' && v.state !== 'failed');
    if (!live) break;
    const t = Math.min(c?.at ?? Infinity, arrival, nextSample);
    if (!Number.isFinite(t)) throw new Error('the campaign cannot progress: VMs wait and nothing transfers');
    now = t;
    esxi.advance(now);
    let changed = arrival <= now;
    // Every transfer copied by now ends; a VM whose every disk is copied releases its slots.
    for (let n = esxi.nextCompletion(); n && n.at <= now; n = esxi.nextCompletion()) {
      const [id, d] = [n.id.slice(0, n.id.lastIndexOf('/')), Number(n.id.slice(n.id.lastIndexOf('/') + 1))];
      esxi.finish(n.id, now);
      const v = vms.find((x) => x.id === id)!;
      v.diskDone[d] = true;
      (diskDurations.get(v.host) ?? diskDurations.set(v.host, []).get(v.host)!).push(now - v.diskStart[d]!);
      if (v.diskDone.every(Boolean)) {
        v.state = 'done';
        v.endedAt = now;
      }
      changed = true;
    }
    if (changed) pass(now);
  }

  const end = Math.max(...vms.map((v) => v.endedAt ?? 0));
  const start = Math.min(...sc.tasks.map((t) => t.arrivesAt));
  const bytesOn = new Map<string, number>();
  for (const v of vms) bytesOn.set(v.host, (bytesOn.get(v.host) ?? 0) + v.disks.reduce((a, b) => a + b, 0));
  const lowerBound = Math.max(...sc.hosts.map((h) => (bytesOn.get(h.id) ?? 0) / h.bandwidthBytesPerSecond));
  const stats = esxi.stats();
  const small = sc.tasks.reduce((a, b) => (b.vms.length < a.vms.length ? b : a));
  const smallVMs = vms.filter((v) => v.task === small);
  // The first VM of its spec.vms: the one a tenant watches first.
  const firstStart = smallVMs[0]!.startedAt ?? smallVMs[0]!.endedAt ?? end;
  const firstHost = smallVMs[0]!.host;
  const durations = diskDurations.get(firstHost) ?? [];
  const slotTime = durations.length ? durations.reduce((a, b) => a + b, 0) / durations.length / 1000 : NaN;
  const taskEnd = new Map(sc.tasks.map((t) => [taskKey(t), Math.max(...vms.filter((v) => v.task === t).map((v) => v.endedAt ?? end))]));
  const etaAt = (fraction: number): { mean: number | null; perTask: Record<string, number | null> } => {
    const at = start + fraction * (end - start);
    const s = samples.reduce((a, b) => (Math.abs(b.t - at) < Math.abs(a.t - at) ? b : a));
    const perTask: Record<string, number | null> = {};
    const errs: number[] = [];
    for (const [k, e] of s.eta) {
      const actual = (taskEnd.get(k)! - s.t) / 1000;
      const est = cfg.enabled ? e.platform : e.naive;
      if (actual <= 0) continue;
      const err = est === undefined ? null : Math.abs(est - actual) / actual;
      perTask[k] = err === null ? null : round(err, 3);
      if (err !== null) errs.push(err);
    }
    return { mean: errs.length ? round(errs.reduce((a, b) => a + b, 0) / errs.length, 3) : null, perTask };
  };
  const e25 = etaAt(0.25);
  const e50 = etaAt(0.5);
  const e75 = etaAt(0.75);
  const smallWait = (firstStart - small.arrivesAt) / 1000;
  return {
    makespanSeconds: round((end - start) / 1000, 0),
    lowerBoundSeconds: round(lowerBound, 0),
    makespanOverLowerBound: round((end - start) / 1000 / lowerBound, 3),
    peakPerHost: Object.fromEntries(stats.map((s) => [s.id, s.peak])),
    ceiling: NFC_CONNECTION_CEILING,
    maxPeakOverCeiling: round(Math.max(...stats.map((s) => s.peak)) / NFC_CONNECTION_CEILING, 3),
    transfersFailed,
    vmsFailed: everFailed.size,
    bytesNotImported: vms.filter((v) => v.state === 'failed').reduce((a, v) => a + v.disks.reduce((x, y) => x + y, 0), 0),
    smallTenantFirstVMWaitSeconds: round(smallWait, 0),
    slotTimeSeconds: round(slotTime, 0),
    smallTenantFirstVMWaitSlotTimes: round(smallWait / slotTime, 3),
    etaError: { p25: e25.mean, p50: e50.mean, p75: e75.mean },
    etaErrorPerTask: { p25: e25.perTask, p50: e50.perTask, p75: e75.perTask },
  };
}

/** budget ÷ baseline, for a figure both runs have (null when the baseline's is 0 or absent). */
function ratio(a: number | null, b: number | null): number | null {
  if (a === null || b === null || b === 0) return null;
  return round(a / b, 3);
}

if (isMain(import.meta)) {
  const flags = parseFlags(process.argv.slice(2));
  const quick = flags.has('quick');
  const seed = Number(flags.get('seed') ?? 7);
  const budget = Number(flags.get('budget') ?? DEFAULT_MAX_DISKS_PER_HOST);
  const tenantCap = flags.has('tenant-cap') ? Number(flags.get('tenant-cap')) : undefined;
  // --quick: a quarter of the VMs (the same shape), for the smoke run.
  const sc = scenario(seed, quick ? 0.25 : 1);
  const cfg: BudgetConfig = { enabled: true, maxDisksPerHost: budget, ...(tenantCap ? { maxDisksPerTenant: tenantCap } : {}) };
  const t0 = Date.now();
  // Today's behaviour, its failed VMs imported again 10 minutes after they failed (the tenant re-creates
  // the task for them): every byte imported, as in the budget's run, so the makespans compare; and the
  // same without the retries, where the failed VMs' bytes are simply missing.
  const baseline = run(sc, { ...cfg, enabled: false }, { retryAfterMs: 10 * 60_000 });
  const noRetry = run(sc, { ...cfg, enabled: false });
  const platform = run(sc, cfg, { retryAfterMs: 10 * 60_000 });
  const side = (k: keyof RunResult): unknown => ({ baseline: baseline[k], budget: platform[k], ratio: typeof platform[k] === 'number' ? ratio(platform[k] as number, baseline[k] as number) : undefined });
  const figures = {
    makespanSeconds: side('makespanSeconds'),
    lowerBoundSeconds: platform.lowerBoundSeconds,
    makespanOverLowerBound: side('makespanOverLowerBound'),
    peakPerHost: { baseline: baseline.peakPerHost, budget: platform.peakPerHost, ceiling: platform.ceiling },
    maxPeakOverCeiling: side('maxPeakOverCeiling'),
    transfersFailed: side('transfersFailed'),
    vmsFailed: side('vmsFailed'),
    bytesNotImported: side('bytesNotImported'),
    smallTenantFirstVMWaitSeconds: side('smallTenantFirstVMWaitSeconds'),
    smallTenantFirstVMWaitSlotTimes: side('smallTenantFirstVMWaitSlotTimes'),
    slotTimeSeconds: side('slotTimeSeconds'),
    etaError: Object.fromEntries((['p25', 'p50', 'p75'] as const).map((p) => [p, { baseline: baseline.etaError[p], budget: platform.etaError[p], ratio: ratio(platform.etaError[p], baseline.etaError[p]) }])),
    etaErrorPerTask: { baseline: baseline.etaErrorPerTask, budget: platform.etaErrorPerTask },
    baselineWithoutRetries: { makespanSeconds: noRetry.makespanSeconds, makespanOverLowerBound: noRetry.makespanOverLowerBound, transfersFailed: noRetry.transfersFailed, vmsFailed: noRetry.vmsFailed, bytesNotImported: noRetry.bytesNotImported },
    targets: {
      makespanWithin110PercentOfLowerBound: platform.makespanOverLowerBound <= 1.1,
      noTransferOverTheCeiling: platform.maxPeakOverCeiling <= 1 && platform.transfersFailed === 0,
      smallTenantWithinOneSlotTime: platform.smallTenantFirstVMWaitSlotTimes <= 1,
      etaWithin15PercentFromHalfway: (platform.etaError.p50 ?? Infinity) <= 0.15 && (platform.etaError.p75 ?? Infinity) <= 0.15,
    },
    simulationWallMs: Date.now() - t0,
  };
  const vmsTotal = sc.tasks.reduce((a, t) => a + t.vms.length, 0);
  const path = writeResult('campaign', { quick, seed, vms: vmsTotal, disks: sc.tasks.reduce((a, t) => a + t.vms.reduce((x, v) => x + v.disks.length, 0), 0), hosts: sc.hosts.map((h) => ({ id: h.id, mbPerSecond: h.bandwidthBytesPerSecond / MB, perStreamMbPerSecond: (h.perStreamBytesPerSecond ?? 0) / MB })), tenants: sc.tasks.map((t) => ({ task: `${t.namespace}/${t.name}`, source: t.source, vms: t.vms.length, arrivesAtMinutes: t.arrivesAt / 60_000 })), budget: cfg, forkliftMaxVmInflight: FORKLIFT_MAX_VM_INFLIGHT, model: 'discrete-event simulation over src/controllers/budget and test/sim/esxi.ts' }, figures);
  log(`campaign: ${vmsTotal} VMs; makespan ${platform.makespanSeconds}s (${platform.makespanOverLowerBound}× the lower bound ${platform.lowerBoundSeconds}s) vs baseline ${baseline.makespanSeconds}s`);
  log(`  peak per host: budget ${JSON.stringify(platform.peakPerHost)}, baseline ${JSON.stringify(baseline.peakPerHost)} (ceiling ${platform.ceiling})`);
  log(`  transfers failed by the ceiling: budget ${platform.transfersFailed}, baseline ${baseline.transfersFailed} (${baseline.vmsFailed} VMs failed)`);
  log(`  small tenant's first VM waited ${platform.smallTenantFirstVMWaitSeconds}s (${platform.smallTenantFirstVMWaitSlotTimes} slot-times), baseline ${baseline.smallTenantFirstVMWaitSeconds}s`);
  log(`  ETA error 25/50/75%: budget ${JSON.stringify(platform.etaError)}, baseline ${JSON.stringify(baseline.etaError)}`);
  log(`  targets: ${JSON.stringify(figures.targets)}`);
  log(`  → ${path}`);
}
