// `npm run chaos`: the long chaos run. A 20-VM import (multi-disk VMs included) by two controller replicas
// with leader election (node src/main.ts, as shipped), once without faults and once through the fault
// proxy (5% answers 500 / 429 with Retry-After / 409, resets mid-response, 2 s latency spikes, every watch
// cut after 20 s) while the run also restarts kube-apiserver, compacts etcd so that watches get 410 Gone,
// SIGKILLs the leader at random points (and restarts it, as its Deployment would), and makes the simulated
// Forklift flap a Plan condition. Both imports run in this one process on one private control plane, so the
// request counts compare like with like.
//
// Checked: every VM Succeeded, exactly one of each output, every disk on the very volume its transfer
// filled, no Released or orphaned volume, requests of the faulty run ≤ 2× the fault-free run. Printed: a
// table (faults injected by kind, imports completed, outputs duplicated, bytes re-copied, time-to-recover
// percentiles); written: bench/results/chaos.json. Exit status 1 when a check fails. Nothing asserts a timing.
//
//   npm run chaos                       # 20 VMs, ~10 min on a quiet 2-core machine
//   npm run chaos -- --vms 8 --quick    # smaller (writes chaos.quick.json)
// Flags: --vms <n>, --mb-per-second <n> (simulated transfer speed), --seed <n> (fault schedule).
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { DEFAULT_CONTROLLER_NAMESPACE } from '../src/config.ts';
import { GVRs } from '../src/runtime/gvr.ts';
import type { KubeObject } from '../src/runtime/kube.ts';
import type { VMImportTask } from '../src/api/types.ts';
import { writeKubeconfig } from '../test/e2e/env/index.ts';
import { createStorageClass, startSim, type Sim } from '../test/sim/index.ts';
import { DEFAULT_RATES, NO_FAULTS, startFaultProxy, type FaultProxy } from '../test/e2e/chaos/faultproxy.ts';
import { VolumeLedger, createConnectedSource, createTask, ensureNamespace, importWorld, mixedVMs, verifyImport, waitTasksEnded, type ImportReport, type TaskRef } from '../test/e2e/chaos/fixtures.ts';
import { log, parseFlags, round, spawnController, startEnv, until, writeResult, type BenchEnv, type ControllerProc } from './lib.ts';

const flags = parseFlags(process.argv.slice(2));
const quick = flags.has('quick');
const VMS = Number(flags.get('vms') ?? (quick ? 8 : 20));
// Slow enough that a 3 GiB disk takes over a minute and a half: the faults land during transfers and handoffs.
const MB_PER_SECOND = Number(flags.get('mb-per-second') ?? 32);
const SEED = Number(flags.get('seed') ?? 16);
const CLASS = 'chaos-replicated';
const LEASE = { namespace: DEFAULT_CONTROLLER_NAMESPACE, name: 'migration-controller-chaos' };
const VMS_PER_TASK = 5;
/** The faulty import must end within this; a stuck task fails the run instead of hanging it. */
const IMPORT_DEADLINE_MS = 30 * 60_000;
/**
 * How long a leader kill waits for a replica to lead. A new leader needs a full lease duration (15 s) after
 * the last renewal it saw, plus its start-up, plus any API server downtime; 60 s covers that with room on a
 * loaded machine, and a kill that still finds no leader is recorded as skipped rather than claimed.
 */
const LEADER_WAIT_MS = 60_000;

// A small deterministic generator (mulberry32): the same seed gives the same fault schedule and proxy draws.
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
const rnd = rng(SEED);

function percentile(xs: number[], p: number): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

// Both imports: the same shapes, distinct VMs (a VM is imported once).
const shapes = mixedVMs('chaos', VMS, 1, 3);
const world = importWorld('https://vcenter-chaos.example.com/sdk', '192.0.2.90', [...shapes, ...mixedVMs('calm', VMS, 1001, 3)]);
const calmVMs = world.vms.slice(VMS).map((v) => v.id);
const chaosVMs = world.vms.slice(0, VMS).map((v) => v.id);

/** Two namespaces, tasks of five VMs each, alternating between them. */
function tasksFor(phase: string, vmIds: string[]): TaskRef[] {
  const out: TaskRef[] = [];
  for (let i = 0; i * VMS_PER_TASK < vmIds.length; i++) out.push({ namespace: `${phase}-${i % 2 ? 'b' : 'a'}`, name: `import-${i + 1}`, vmIds: vmIds.slice(i * VMS_PER_TASK, (i + 1) * VMS_PER_TASK) });
  return out;
}

interface Fault {
  kind: 'apiserverRestart' | 'etcdCompaction' | 'leaderKill' | 'planFlap';
  at: number;
  endedAt: number;
  /** ms from the fault's end to the controller's next task status write. */
  recoverMs?: number;
  /** Not injected (no replica led within the deadline): listed apart, never counted as injected. */
  skipped?: boolean;
  detail?: string;
}

class Replicas {
  private readonly env: BenchEnv;
  private readonly kubeconfigPath: string;
  procs: ControllerProc[] = [];
  /** Replicas that exited on their own (a leader that could not renew in time fences itself and exits). */
  selfExits = 0;
  private supervising = false;
  private loop: Promise<void> | undefined;

  constructor(env: BenchEnv, kubeconfigPath: string) {
    this.env = env;
    this.kubeconfigPath = kubeconfigPath;
  }

  private spawn(): Promise<ControllerProc> {
    return spawnController(this.env, { kubeconfigPath: this.kubeconfigPath, leaderElection: LEASE, logLevel: 'warn' });
  }

  async start(n = 2): Promise<void> {
    for (let i = 0; i < n; i++) this.procs.push(await this.spawn());
    this.supervising = true;
    // Plays the Deployment's kubelet: a replica that exits is started again.
    this.loop = (async () => {
      while (this.supervising) {
        for (let i = 0; i < this.procs.length; i++) {
          if (this.procs[i]!.exited && this.supervising) {
            const gone = this.procs[i]!;
            // The API server may be down (a restart under way): try again on the next tick.
            const next = await this.spawn().catch((e: Error) => {
              log(`replica ${gone.pid} exited; its replacement could not start yet (${e.message})`);
              return undefined;
            });
            if (!next) continue;
            this.selfExits++;
            log(`replica ${gone.pid} exited on its own; started ${next.pid} (log ${gone.logPath})`);
            this.procs[i] = next;
          }
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
  }

  async holder(): Promise<ControllerProc | undefined> {
    const l = (await this.env.admin.get(GVRs.Lease, LEASE.namespace, LEASE.name)) as (KubeObject & { spec?: { holderIdentity?: string } }) | undefined;
    const h = l?.spec?.holderIdentity ?? '';
    return this.procs.find((p) => !p.exited && h.includes(`_${p.pid}_`));
  }

  /**
   * SIGKILLs the current leader and starts a replacement at once; returns the killed pid, or undefined when
   * no replica came to lead within `deadlineMs` (the fault is then recorded as skipped, never as injected).
   * Waiting is needed: right after an API server restart or a kill, nobody leads until a replica has seen
   * the old record unchanged for a full lease duration (15 s) — or longer, while the API server is down.
   */
  async killLeader(deadlineMs: number): Promise<number | undefined> {
    const leader = await until('a replica holding the lease', () => this.holder().catch(() => undefined), deadlineMs, 200).catch(() => undefined);
    if (!leader) return undefined;
    // Replaced before the kill, so the supervisor does not count it as exiting on its own. The replacement
    // reads the API server to start: retried while it is unreachable, within the same deadline.
    const next = await until('a replacement replica started', () => this.spawn().catch(() => undefined), deadlineMs, 500).catch(() => undefined);
    if (!next) return undefined;
    const i = this.procs.indexOf(leader);
    if (i < 0) {
      // The leader exited and the supervisor has already replaced it: nothing to kill, no replica to add.
      await next.stop();
      return undefined;
    }
    if (leader.exited) {
      // The leader fenced itself and exited meanwhile: the replacement takes its place, nothing is killed.
      this.procs[i] = next;
      this.selfExits++;
      return undefined;
    }
    this.procs[i] = next;
    await leader.kill('SIGKILL');
    return leader.pid;
  }

  async stop(): Promise<void> {
    this.supervising = false;
    await this.loop;
    await Promise.all(this.procs.map((p) => p.stop()));
    this.procs = [];
  }
}

/** Compacts etcd at its current revision (etcd v3 JSON gateway), so older resourceVersions are Gone. */
async function compactEtcd(etcdURL: string): Promise<string> {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  const r = (await (await fetch(`${etcdURL}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: b64('/registry/'), range_end: b64('/registry0'), count_only: true }) })).json()) as { header?: { revision?: string } };
  const rev = r.header?.revision;
  if (!rev) throw new Error(`etcd gave no revision: ${JSON.stringify(r)}`);
  const c = await fetch(`${etcdURL}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision: rev, physical: true }) });
  if (!c.ok) throw new Error(`etcd compaction at ${rev}: HTTP ${c.status} ${await c.text()}`);
  return rev;
}

/** When the controller last changed any task's status (polled straight from the API server, not through the proxy). */
class ProgressWatch {
  private readonly env: BenchEnv;
  private readonly tasks: TaskRef[];
  private seen = new Map<string, string>();
  readonly changes: number[] = [];
  private running = false;
  private loop: Promise<void> | undefined;

  constructor(env: BenchEnv, tasks: TaskRef[]) {
    this.env = env;
    this.tasks = tasks;
  }

  start(): void {
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        try {
          for (const t of this.tasks) {
            const x = (await this.env.admin.get(GVRs.VMImportTask, t.namespace, t.name)) as unknown as VMImportTask | undefined;
            const s = JSON.stringify(x?.status ?? null);
            const k = `${t.namespace}/${t.name}`;
            if (this.seen.has(k) && this.seen.get(k) !== s) this.changes.push(Date.now());
            this.seen.set(k, s);
          }
        } catch {
          /* the API server restarting: look again */
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** The first status change after `t`. */
  nextAfter(t: number): number | undefined {
    return this.changes.find((x) => x > t);
  }
}

interface PhaseResult {
  startedAt: number;
  requests: number;
  seconds: number;
  report: ImportReport;
  tasksSucceeded: number;
  tasks: number;
  faults: Fault[];
  proxyCounts: Record<string, number>;
  /** What the proxy saw of the API server (requests it could not forward, responses broken off). */
  proxyObserved: Record<string, number>;
  selfExits: number;
  planFlapsSeen: number;
}

async function runPhase(env: BenchEnv, proxy: FaultProxy, kubeconfig: string, name: 'calm' | 'chaos', vmIds: string[]): Promise<PhaseResult> {
  const tasks = tasksFor(name, vmIds);
  const faults: Fault[] = [];
  proxy.setRates(NO_FAULTS);
  const countsBefore = { ...proxy.counts };
  const observedBefore = { ...proxy.observed };
  const req0 = proxy.requests;
  const t0 = Date.now();
  const replicas = new Replicas(env, kubeconfig);
  await replicas.start(2);
  if (name === 'chaos') proxy.setRates(DEFAULT_RATES);
  const ledger = new VolumeLedger(env.admin);
  ledger.start(200);
  const progress = new ProgressWatch(env, tasks);
  let planFlapsSeen = 0;
  let done = false;
  try {
    for (const ns of new Set(tasks.map((t) => t.namespace))) {
      await ensureNamespace(env.admin, ns, { bench: 'true' });
      await createConnectedSource(env.admin, ns, 'vc', world, 300_000);
    }
    progress.start();
    for (const t of tasks) await createTask(env.admin, t, 'vc', CLASS);
    log(`${name}: ${tasks.length} tasks, ${vmIds.length} VMs, ${tasks.reduce((a, t) => a + world.vms.filter((v) => t.vmIds.includes(v.id)).reduce((b, v) => b + v.disks.length, 0), 0)} disks`);
    const chaos = async (): Promise<void> => {
      if (name !== 'chaos') return;
      const schedule: Fault['kind'][] = ['apiserverRestart', 'apiserverRestart', 'apiserverRestart', 'etcdCompaction', 'etcdCompaction', 'leaderKill', 'leaderKill', 'leaderKill', 'planFlap', 'planFlap', 'planFlap'];
      for (let i = schedule.length - 1; i > 0; i--) {
        const j = Math.floor(rnd() * (i + 1));
        [schedule[i], schedule[j]] = [schedule[j]!, schedule[i]!];
      }
      for (const kind of schedule) {
        // A random point: 3–10 s after the previous fault ended.
        const waitUntil = Date.now() + 3_000 + rnd() * 7_000;
        while (!done && Date.now() < waitUntil) await new Promise((r) => setTimeout(r, 100));
        if (done) return;
        const f: Fault = { kind, at: Date.now(), endedAt: 0 };
        try {
        if (kind === 'apiserverRestart') {
          // Compacted first: watches resumed on the restarted server from older revisions get 410 Gone.
          f.detail = `compacted at ${await compactEtcd(env.cp.info.etcdURL!)}`;
          await env.cp.restartApiServer();
        } else if (kind === 'etcdCompaction') {
          f.detail = `at revision ${await compactEtcd(env.cp.info.etcdURL!)}`;
        } else if (kind === 'leaderKill') {
          const pid = await replicas.killLeader(LEADER_WAIT_MS);
          f.detail = pid ? `pid ${pid}` : `no replica led within ${LEADER_WAIT_MS / 1000} s`;
          if (!pid) f.skipped = true;
        } else {
          // Forklift re-tests the Provider (vCenter down for 3 s): the Plan shows SourceProviderNotReady
          // (Critical, its run held) and then Ready again.
          let flapping = true;
          const seen = (async () => {
            while (flapping) {
              const plans = await env.admin.list(GVRs.Plan).catch(() => ({ items: [] as KubeObject[] }));
              if (plans.items.some((p) => p.metadata?.namespace !== undefined && ((p.status as { conditions?: Array<{ type: string }> } | undefined)?.conditions ?? []).some((c) => c.type === 'SourceProviderNotReady'))) return true;
              await new Promise((r) => setTimeout(r, 100));
            }
            return false;
          })();
          await env.sim!.flapConnection(world.url, 3_000);
          flapping = false;
          if (await seen) planFlapsSeen++;
        }
        } catch (e) {
          // Still a fault (the API server may come back later than its start-up deadline); the run goes on.
          f.detail = `${f.detail ?? ''} (${(e as Error).message})`.trim();
        }
        f.endedAt = Date.now();
        faults.push(f);
        log(`${name}: ${f.skipped ? 'skipped' : 'injected'} ${kind} (${f.detail ?? ''}) in ${f.endedAt - f.at} ms`);
      }
    };
    const [ended] = await Promise.all([
      waitTasksEnded(env.admin, tasks, IMPORT_DEADLINE_MS).finally(() => {
        done = true;
      }),
      chaos(),
    ]);
    const seconds = round((Date.now() - t0) / 1000, 1);
    const requests = proxy.requests - req0;
    proxy.setRates(NO_FAULTS);
    await progress.stop();
    for (const f of faults) {
      if (f.skipped) continue;
      const next = progress.nextAfter(f.endedAt);
      if (next !== undefined) f.recoverMs = next - f.endedAt;
    }
    await ledger.stop();
    const report = await verifyImport(env.admin, world, tasks, ledger);
    const proxyObserved = Object.fromEntries(Object.entries(proxy.observed).map(([k, v]) => [k, v - (observedBefore[k] ?? 0)]).filter(([, v]) => (v as number) > 0));
    const proxyCounts = Object.fromEntries(Object.entries(proxy.counts).map(([k, v]) => [k, v - (countsBefore[k] ?? 0)]).filter(([, v]) => (v as number) > 0));
    return { startedAt: t0, requests, seconds, report, tasks: tasks.length, tasksSucceeded: ended.filter((t) => t.status?.phase === 'Succeeded').length, faults, proxyCounts, proxyObserved, selfExits: replicas.selfExits, planFlapsSeen };
  } finally {
    done = true;
    proxy.setRates(NO_FAULTS);
    await progress.stop();
    await replicas.stop();
  }
}

function table(rows: Array<[string, string | number]>): string {
  const w = Math.max(...rows.map((r) => r[0].length));
  return rows.map(([k, v]) => `  ${k.padEnd(w)}  ${v}`).join('\n');
}

// The machine's load beside the figures (1, 5, 15 min averages): a shared machine makes them noisy.
const loadAtStart = loadavg().map((x) => round(x, 1));
const env = await startEnv({ sim: false, pvSyncPeriod: '1s', auditLog: false });
let proxy: FaultProxy | undefined;
let sim: Sim | undefined;
let exitCode = 0;
try {
  await createStorageClass(env.cp.info.admin.kubeconfigPath, { name: CLASS, reclaimPolicy: 'Delete' });
  env.sim = sim = await startSim({ kubeconfigPath: env.cp.info.admin.kubeconfigPath, worlds: [world], mbPerSecond: MB_PER_SECOND });
  proxy = await startFaultProxy(env.cp.info.server, env.cp.info.caPEM, NO_FAULTS, rnd);
  // The controller's identity, through the proxy.
  const kubeconfig = join(env.cp.info.dir, 'controller-via-proxy.kubeconfig');
  writeKubeconfig(kubeconfig, proxy.url, proxy.caPEM, env.cp.info.controller.name, env.cp.info.controller.token);

  const calm = await runPhase(env, proxy, kubeconfig, 'calm', calmVMs);
  log(`calm: ${calm.requests} requests in ${calm.seconds} s; ${calm.report.problems.length} problems`);
  const chaos = await runPhase(env, proxy, kubeconfig, 'chaos', chaosVMs);
  log(`chaos: ${chaos.requests} requests in ${chaos.seconds} s; ${chaos.report.problems.length} problems`);

  const injected: Record<string, number> = { ...chaos.proxyCounts };
  const done = chaos.faults.filter((f) => !f.skipped);
  const skipped: Record<string, number> = {};
  for (const f of done) injected[f.kind] = (injected[f.kind] ?? 0) + 1;
  for (const f of chaos.faults.filter((x) => x.skipped)) skipped[f.kind] = (skipped[f.kind] ?? 0) + 1;
  const ttr = done.filter((f) => f.recoverMs !== undefined).map((f) => f.recoverMs!);
  const ttrByKind = Object.fromEntries(
    [...new Set(done.map((f) => f.kind))].map((k) => {
      const xs = done.filter((f) => f.kind === k && f.recoverMs !== undefined).map((f) => f.recoverMs!);
      return [k, { n: xs.length, p50: percentile(xs, 50), p90: percentile(xs, 90), max: percentile(xs, 100) }];
    }),
  );
  const ratio = round(chaos.requests / Math.max(1, calm.requests), 2);
  const checks: Record<string, boolean> = {
    everyVMSucceeded: chaos.report.vmsSucceeded === chaos.report.vms && calm.report.vmsSucceeded === calm.report.vms,
    noDuplicates: chaos.report.duplicates === 0 && calm.report.duplicates === 0,
    noLostDisks: chaos.report.lostDisks === 0 && calm.report.lostDisks === 0,
    noReleasedOrOrphaned: chaos.report.released + chaos.report.orphaned + calm.report.released + calm.report.orphaned === 0,
    noOtherProblem: chaos.report.problems.length === 0 && calm.report.problems.length === 0,
    requestsWithin2x: ratio <= 2,
    everyFaultKindInjected: ['apiserverRestart', 'etcdCompaction', 'leaderKill', 'planFlap', '500', '429', '409', 'reset', 'latency', 'watchCut'].every((k) => (injected[k] ?? 0) > 0),
  };
  const ms = (x: number | null): string => (x === null ? '-' : `${round(x / 1000, 1)} s`);
  console.log(`\nchaos run: ${VMS} VMs (${chaos.report.disks} disks) by 2 replicas with leader election, seed ${SEED}\n`);
  console.log('faults injected');
  console.log(table(Object.entries(injected).sort((a, b) => a[0].localeCompare(b[0]))));
  if (Object.keys(skipped).length) {
    console.log('faults skipped (not injected: no replica led within the wait)');
    console.log(table(Object.entries(skipped).sort((a, b) => a[0].localeCompare(b[0]))));
  }
  console.log('\noutcome                        fault-free   chaos');
  console.log(table([
    ['imports completed (tasks)', `${calm.tasksSucceeded}/${calm.tasks}          ${chaos.tasksSucceeded}/${chaos.tasks}`],
    ['VMs Succeeded', `${calm.report.vmsSucceeded}/${calm.report.vms}        ${chaos.report.vmsSucceeded}/${chaos.report.vms}`],
    ['outputs duplicated', `${calm.report.duplicates}            ${chaos.report.duplicates}`],
    ['disks lost (not on their volume)', `${calm.report.lostDisks}            ${chaos.report.lostDisks}`],
    ['volumes Released / orphaned', `${calm.report.released}/${calm.report.orphaned}          ${chaos.report.released}/${chaos.report.orphaned}`],
    ['bytes re-copied', `${calm.report.bytesRecopied}            ${chaos.report.bytesRecopied}`],
    ['requests', `${calm.requests}         ${chaos.requests} (${ratio}×)`],
    ['wall time', `${calm.seconds} s      ${chaos.seconds} s`],
    ['replicas that fenced themselves', `${calm.selfExits}            ${chaos.selfExits}`],
  ]));
  console.log('\ntime to recover (fault end → next task status write)');
  console.log(table([
    ['all faults', `p50 ${ms(percentile(ttr, 50))}  p90 ${ms(percentile(ttr, 90))}  max ${ms(percentile(ttr, 100))}  (n=${ttr.length})`],
    ...Object.entries(ttrByKind).map(([k, v]) => [k, `p50 ${ms(v.p50)}  p90 ${ms(v.p90)}  max ${ms(v.max)}  (n=${v.n})`] as [string, string]),
  ]));
  console.log('\nchecks');
  console.log(table(Object.entries(checks).map(([k, v]) => [k, v ? 'ok' : 'FAILED'])));
  for (const p of [...calm.report.problems.map((x) => `calm: ${x}`), ...chaos.report.problems.map((x) => `chaos: ${x}`)]) console.log(`  problem: ${p}`);
  const path = writeResult('chaos', { quick, vms: VMS, disks: chaos.report.disks, vmsPerTask: VMS_PER_TASK, replicas: 2, mbPerSecond: MB_PER_SECOND, seed: SEED, rates: DEFAULT_RATES }, {
    faultsInjected: injected,
    planFlapsSeenOnPlans: chaos.planFlapsSeen,
    faultsSkipped: skipped,
    seenByTheProxy: chaos.proxyObserved,
    faults: chaos.faults.map((f) => ({ kind: f.kind, ...(f.skipped ? { skipped: true } : {}), atSecond: round((f.at - chaos.startedAt) / 1000, 1), durationMs: f.endedAt - f.at, recoverMs: f.recoverMs ?? null, detail: f.detail })),
    timeToRecoverMs: { p50: percentile(ttr, 50), p90: percentile(ttr, 90), max: percentile(ttr, 100), byKind: ttrByKind },
    faultFree: { ...calm.report, tasks: calm.tasks, tasksSucceeded: calm.tasksSucceeded, requests: calm.requests, seconds: calm.seconds, selfExits: calm.selfExits },
    chaos: { ...chaos.report, tasks: chaos.tasks, tasksSucceeded: chaos.tasksSucceeded, requests: chaos.requests, seconds: chaos.seconds, selfExits: chaos.selfExits },
    requestRatio: ratio,
    loadAverage: { atStart: loadAtStart, atEnd: loadavg().map((x) => round(x, 1)) },
    checks,
  });
  console.log(`\nwritten ${path}`);
  if (!Object.values(checks).every(Boolean)) exitCode = 1;
} catch (e) {
  console.error(`chaos run failed: ${(e as Error).stack ?? e}`);
  exitCode = 1;
} finally {
  await proxy?.close();
  await sim?.stop();
  await env.stop();
}
process.exit(exitCode);
