// Shared harness of the benchmarks: a private control plane (audit log on), the simulated engine, the
// controller as a child process measured through /proc, audit-log counting, results files.
// Benchmarks print figures and write bench/results/<name>.json; nothing here asserts a timing.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, createWriteStream, existsSync, mkdirSync, openSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ControlPlane, SERVICE_CIDR, freePort, loadYamlObjects } from '../test/e2e/env/index.ts';
import { kubeConfigFor } from '../test/e2e/env/index.ts';
import { createStorageClass, startSim, vcenter, type Sim, type WorldFixture } from '../test/sim/index.ts';
import type { SimTimings } from '../test/sim/context.ts';
import { GVRs, type GVR } from '../src/runtime/gvr.ts';
import { Informer } from '../src/runtime/informer.ts';
import { isAlreadyExists, KubeClient, type KubeObject } from '../src/runtime/kube.ts';
import type { VMImportTask } from '../src/api/types.ts';
import { DEFAULT_CONTROLLER_NAMESPACE } from '../src/config.ts';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// BENCH_RESULTS_DIR redirects the results (the smoke test writes into a temporary folder).
export const RESULTS_DIR = process.env.BENCH_RESULTS_DIR ?? join(REPO_ROOT, 'bench/results');
/** The audit-log user of the controller under test (ControlPlane's separate cluster-admin identity). */
export const CONTROLLER_USER = 'migration-controller';
export const VC_URL = 'https://vcenter-bench.example.com/sdk';
export const STORAGE_CLASS = 'bench-fast';
export const VDDK_IMAGE = 'registry.example.com/vddk:8.0.3';

// ---------------------------------------------------------------- small helpers

export function median(xs: number[]): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function mib(bytes: number): number {
  return round(bytes / 2 ** 20, 1);
}

export function log(msg: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

/** Polls `fn` until it returns a value, with a deadline (benchmarks wait on conditions, never on sleeps). */
export async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs: number, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr = '';
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      lastErr = (e as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}${lastErr ? ` (${lastErr})` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Runs `fn` over `items` with at most `n` in flight. */
export async function pool<T>(items: T[], n: number, fn: (x: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}

export function machine(): Record<string, unknown> {
  // The load average when the figures were written: on a shared machine it says how much to trust them.
  return { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memGiB: round(os.totalmem() / 2 ** 30, 1), node: process.version, platform: `${os.platform()} ${os.release()}`, loadAverage: os.loadavg().map((x) => round(x, 1)) };
}

/**
 * Writes bench/results/<name>.json (figures + parameters + machine) and returns its path. A `--quick`
 * run writes <name>.quick.json instead, so a smoke run never replaces measured figures.
 */
export function writeResult(name: string, params: Record<string, unknown>, figures: Record<string, unknown>): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const path = join(RESULTS_DIR, `${name}${params.quick === true ? '.quick' : ''}.json`);
  // What the controller ran with beyond the benchmark's flags, so a figure measured under an allocator
  // knob or another ref is never read as the default's.
  const controller = { ...(process.env.BENCH_CONTROLLER_REF ? { ref: process.env.BENCH_CONTROLLER_REF } : {}), ...(process.env.BENCH_CONTROLLER_NODE_ARGS ? { nodeArgs: process.env.BENCH_CONTROLLER_NODE_ARGS } : {}), ...(process.env.BENCH_CONTROLLER_ENV ? { env: process.env.BENCH_CONTROLLER_ENV } : {}) };
  writeFileSync(path, JSON.stringify({ name, date: new Date().toISOString(), machine: machine(), params, ...(Object.keys(controller).length ? { controller } : {}), figures }, null, 2) + '\n');
  return path;
}

/** Parses `--name value`, `--name=value` and bare `--flag` from argv. */
export function parseFlags(argv: string[]): Map<string, string> {
  const m = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) continue;
    const eq = a.indexOf('=');
    if (eq > 0) m.set(a.slice(2, eq), a.slice(eq + 1));
    else if (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('--')) m.set(a.slice(2), argv[++i]!);
    else m.set(a.slice(2), 'true');
  }
  return m;
}

export function numList(v: string | undefined, dflt: number[]): number[] {
  if (!v) return dflt;
  return v.split(',').map(Number).filter((n) => Number.isFinite(n) && n > 0);
}

/**
 * The src/ of git ref `ref`, extracted once with `git archive` under .testenv/ (inside the repository,
 * so its imports resolve to the same node_modules); returns the folder holding that src/. Benchmarks
 * measure the code of an earlier commit side by side with the working tree this way.
 */
export function sourceOfRef(ref: string): string {
  const rev = execFileSync('git', ['-C', REPO_ROOT, 'rev-parse', '--short', ref], { encoding: 'utf8' }).trim();
  const dir = join(REPO_ROOT, '.testenv', `baseline-${rev}`);
  if (!existsSync(join(dir, 'src'))) {
    mkdirSync(dir, { recursive: true });
    execFileSync('bash', ['-c', `git -C "${REPO_ROOT}" archive ${rev} src | tar -x -C "${dir}"`]);
  }
  return dir;
}

/** The short commit id of `ref`. */
export function revOf(ref: string): string {
  return execFileSync('git', ['-C', REPO_ROOT, 'rev-parse', '--short', ref], { encoding: 'utf8' }).trim();
}

// ---------------------------------------------------------------- /proc accounting

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on every mainstream Linux). */
const CLK_TCK = 100;

export interface ProcStats {
  /** user + system CPU seconds since the process started. */
  cpuSeconds: number;
  rssBytes: number;
  /** VmHWM: the peak resident set size the kernel recorded for the process. */
  peakRssBytes: number;
}

export function procStats(pid: number): ProcStats {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may contain spaces) start at field 3; utime/stime are 14/15.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuSeconds = (Number(f[11]) + Number(f[12])) / CLK_TCK;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { cpuSeconds, rssBytes: kb('VmRSS'), peakRssBytes: kb('VmHWM') };
}

// ---------------------------------------------------------------- audit log

export interface TimelineEntry {
  atMs: number;
  serverMs: number;
  verb: string;
  resource: string;
  object: string;
  code: number;
}

export interface RequestCount {
  total: number;
  reads: number;
  writes: number;
  /** "verb resource[/subresource]" → count */
  byVerbResource: Record<string, number>;
}

const READ_VERBS = new Set(['get', 'list', 'watch']);

/**
 * Counts one user's requests in the API server's audit log (Metadata level, JSON lines). One request is
 * one auditID: a short request's `ResponseComplete` event, or a watch's `ResponseStarted` (a watch only
 * completes when it closes, possibly long after the window). Reads = get/list/watch; everything else writes.
 */
export class AuditLog {
  readonly path: string;
  constructor(path: string) {
    this.path = path;
  }

  /** The current end of the log: count from here. */
  mark(): number {
    try {
      return statSync(this.path).size;
    } catch {
      return 0;
    }
  }

  private readFrom(offset: number): string {
    const size = this.mark();
    if (size <= offset) return '';
    const fd = openSync(this.path, 'r');
    try {
      const buf = Buffer.alloc(size - offset);
      readSync(fd, buf, 0, buf.length, offset);
      const text = buf.toString('utf8');
      // Only whole lines: the API server may be mid-write.
      return text.slice(0, text.lastIndexOf('\n') + 1);
    } finally {
      closeSync(fd);
    }
  }

  count(from: number, user = CONTROLLER_USER, to?: number): RequestCount {
    let text = this.readFrom(from);
    if (to !== undefined) text = text.slice(0, Math.max(0, to - from));
    const seen = new Set<string>();
    const out: RequestCount = { total: 0, reads: 0, writes: 0, byVerbResource: {} };
    for (const line of text.split('\n')) {
      if (!line || !line.includes(`"${user}"`)) continue;
      let ev: { auditID?: string; stage?: string; verb?: string; user?: { username?: string }; objectRef?: { resource?: string; subresource?: string }; requestURI?: string };
      try {
        ev = JSON.parse(line);
      } catch {
        continue;
      }
      if (ev.user?.username !== user) continue;
      const counts = ev.stage === 'ResponseComplete' || (ev.stage === 'ResponseStarted' && ev.verb === 'watch');
      if (!counts || !ev.auditID || seen.has(ev.auditID)) continue;
      seen.add(ev.auditID);
      const verb = ev.verb ?? '?';
      const res = ev.objectRef?.resource ? ev.objectRef.resource + (ev.objectRef.subresource ? `/${ev.objectRef.subresource}` : '') : (ev.requestURI ?? '?').split('?')[0]!;
      const k = `${verb} ${res}`;
      out.byVerbResource[k] = (out.byVerbResource[k] ?? 0) + 1;
      out.total++;
      if (READ_VERBS.has(verb)) out.reads++;
      else out.writes++;
    }
    out.byVerbResource = Object.fromEntries(Object.entries(out.byVerbResource).sort((a, b) => b[1] - a[1]));
    return out;
  }

  /**
   * The requests `user` made from the mark `from` whose arrival lies in [fromMs, toMs] (epoch ms), in order:
   * arrival time, how long the API server took, verb, resource and object. A timeline of what a controller
   * did in an interval (the handoff latency's breakdown).
   */
  timeline(from: number, fromMs: number, toMs: number, user = CONTROLLER_USER): TimelineEntry[] {
    const out: TimelineEntry[] = [];
    for (const line of this.readFrom(from).split('\n')) {
      if (!line || !line.includes(`"${user}"`)) continue;
      let ev: { stage?: string; verb?: string; user?: { username?: string }; objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string }; requestReceivedTimestamp?: string; stageTimestamp?: string; responseStatus?: { code?: number } };
      try {
        ev = JSON.parse(line);
      } catch {
        continue;
      }
      if (ev.user?.username !== user || ev.stage !== 'ResponseComplete' || ev.verb === 'watch') continue;
      const at = Date.parse(ev.requestReceivedTimestamp ?? '');
      if (!(at >= fromMs && at <= toMs)) continue;
      const r = ev.objectRef ?? {};
      out.push({
        atMs: at,
        serverMs: Date.parse(ev.stageTimestamp ?? '') - at,
        verb: ev.verb ?? '?',
        resource: (r.resource ?? '?') + (r.subresource ? `/${r.subresource}` : ''),
        object: r.name ? `${r.namespace ? `${r.namespace}/` : ''}${r.name}` : '',
        code: ev.responseStatus?.code ?? 0,
      });
    }
    return out.sort((a, b) => a.atMs - b.atMs);
  }

  /** Resolves once `user` has made no request for `quietMs` (the controller settled); returns the end mark. */
  async waitQuiet(from: number, quietMs: number, timeoutMs: number, user = CONTROLLER_USER): Promise<number> {
    let lastTotal = -1;
    let since = Date.now();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const end = this.mark();
      const n = this.count(from, user).total;
      if (n !== lastTotal) {
        lastTotal = n;
        since = Date.now();
      } else if (Date.now() - since >= quietMs) return end;
      if (Date.now() > deadline) return end;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

// ---------------------------------------------------------------- the environment

export interface EnvOptions {
  /** kube-controller-manager PV binder sync period; default its own default, 15s. */
  pvSyncPeriod?: string;
  /** VMs in the simulated vCenter: 1-disk and 4-disk (each VM is imported at most once). */
  oneDiskVMs?: number;
  fourDiskVMs?: number;
  /** Start the simulated engine (default true). */
  sim?: boolean;
  /** API server audit log (default true; the scale benchmark turns it off: it costs the API server CPU). */
  auditLog?: boolean;
  /** Simulator timings beyond its defaults (the scale benchmark slows its progress tick). */
  simTimings?: Partial<SimTimings>;
  /** Simulated disk speed in MiB/s (the simulator's default otherwise). */
  mbPerSecond?: number;
  /** Changed block tracking on every VM (what a warm import needs; vSphere's default is off). */
  changeTracking?: boolean;
  /** kube-controller-manager's client rate (ControlPlaneOptions.kcmQPS); its default (20) otherwise. */
  kcmQPS?: number;
}

export interface BenchEnv {
  cp: ControlPlane;
  sim?: Sim;
  world: WorldFixture;
  admin: KubeClient;
  audit: AuditLog;
  /** Takes a fresh VM id of the given disk count. */
  takeVM(disks: 1 | 4): string;
  /** Creates namespace `ns` with a Ready source `vc` (waits for Connected). */
  namespaceWithSource(ns: string, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

async function applyCRDs(c: KubeClient, dir: string): Promise<void> {
  for (const o of loadYamlObjects(dir) as KubeObject[]) {
    try {
      await c.create(GVRs.CustomResourceDefinition, o);
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  }
  for (const o of loadYamlObjects(dir) as KubeObject[]) {
    await until(`CRD ${o.metadata?.name} Established`, async () => {
      const got = (await c.get(GVRs.CustomResourceDefinition, undefined, o.metadata!.name!)) as (KubeObject & { status?: { conditions?: Array<{ type: string; status: string }> } }) | undefined;
      return got?.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
    }, 30_000);
  }
}

/** vSphere managed-object ids (the CRD wants `vm-<n>`): 1-disk VMs from vm-1, 4-disk VMs from vm-500001. */
function vmId(disks: 1 | 4, i: number): string {
  return `vm-${(disks === 1 ? 1 : 500_001) + i}`;
}

export async function startEnv(o: EnvOptions = {}): Promise<BenchEnv> {
  const t0 = Date.now();
  const cp = await ControlPlane.start({ auditLog: o.auditLog !== false, pvSyncPeriod: o.pvSyncPeriod ?? '15s', quiet: true, ...(o.kcmQPS ? { kcmQPS: o.kcmQPS } : {}) });
  const admin = new KubeClient(kubeConfigFor(cp.info.admin.kubeconfigPath), { fieldManager: 'bench' });
  await applyCRDs(admin, join(REPO_ROOT, 'crds'));
  const n1 = o.oneDiskVMs ?? 0;
  const n4 = o.fourDiskVMs ?? 0;
  const GiB1 = [{ capacityGiB: 1 }];
  const world = vcenter({
    url: VC_URL,
    hosts: [{ id: 'host-1', address: '192.0.2.10' }],
    vms: [
      ...Array.from({ length: n1 }, (_, i) => ({ id: vmId(1, i), name: `one-${i}`, disks: GiB1, changeTrackingEnabled: o.changeTracking })),
      ...Array.from({ length: n4 }, (_, i) => ({ id: vmId(4, i), name: `four-${i}`, disks: [...GiB1, ...GiB1, ...GiB1, ...GiB1], changeTrackingEnabled: o.changeTracking })),
    ],
  });
  let sim: Sim | undefined;
  if (o.sim !== false) {
    await createStorageClass(cp.info.admin.kubeconfigPath, { name: STORAGE_CLASS, reclaimPolicy: 'Delete' });
    sim = await startSim({ kubeconfigPath: cp.info.admin.kubeconfigPath, worlds: [world], ...(o.simTimings ? { timings: o.simTimings } : {}), ...(o.mbPerSecond ? { mbPerSecond: o.mbPerSecond } : {}) });
  }
  const next = { 1: 0, 4: 0 };
  const env: BenchEnv = {
    cp,
    sim,
    world,
    admin,
    audit: new AuditLog(cp.info.auditLogPath ?? '/dev/null'),
    takeVM(disks) {
      const limit = disks === 1 ? n1 : n4;
      if (next[disks] >= limit) throw new Error(`bench: the simulated vCenter has only ${limit} ${disks}-disk VMs`);
      return vmId(disks, next[disks]++);
    },
    async namespaceWithSource(ns, timeoutMs = 120_000) {
      await createNamespace(admin, ns);
      await admin.create(GVRs.VMImportSource, {
        apiVersion: 'forklift.cozystack.io/v1alpha1',
        kind: 'VMImportSource',
        metadata: { name: 'vc', namespace: ns },
        spec: { type: 'vsphere', url: VC_URL, credentials: { username: world.user, password: world.password, caCert: world.caPEM } },
      } as KubeObject);
      await until(`source ${ns}/vc Connected`, async () => {
        const s = (await admin.get(GVRs.VMImportSource, ns, 'vc')) as (KubeObject & { status?: { conditions?: Array<{ type: string; reason: string; status: string }> } }) | undefined;
        return s?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      }, timeoutMs, 200);
    },
    async stop() {
      await sim?.stop();
      admin.close();
      await cp.stop();
    },
  };
  log(`control plane + ${sim ? 'simulator' : 'no simulator'} ready in ${Date.now() - t0} ms (PV binder sync ${o.pvSyncPeriod ?? '15s'}, ${n1} 1-disk + ${n4} 4-disk VMs)`);
  return env;
}

export async function createNamespace(c: KubeClient, ns: string): Promise<void> {
  try {
    await c.create(GVRs.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { bench: 'true' } } } as KubeObject);
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
  }
}

export function taskObject(ns: string, name: string, vmIds: string[]): KubeObject {
  return {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name, namespace: ns },
    spec: { sourceRef: { name: 'vc' }, storageClass: STORAGE_CLASS, vms: vmIds.map((id) => ({ id })) },
  } as KubeObject;
}

export function readyOf(t: KubeObject | undefined): { status: string; reason: string } | undefined {
  return (t as unknown as VMImportTask | undefined)?.status?.conditions?.find((c) => c.type === 'Ready');
}

/** Ready=True, or a terminal failure (a benchmark must not wait forever on a failed import). */
export function outcome(t: KubeObject | undefined): 'ready' | 'failed' | undefined {
  const task = t as unknown as VMImportTask | undefined;
  const r = readyOf(t);
  if (r?.status === 'True') return 'ready';
  if (task?.status?.phase === 'Failed' && task.status.completedAt) return 'failed';
  return undefined;
}

/** An admin informer over a kind with an event callback that gets the wall time of each event. */
export async function watchKind(c: KubeClient, gvr: GVR, on: (obj: KubeObject, at: number) => void, namespace?: string): Promise<Informer> {
  const inf = new Informer(c, gvr, { namespace });
  inf.addHandlers({ add: (o) => on(o, Date.now()), update: (_old, o) => on(o, Date.now()) });
  inf.start();
  await inf.waitForSync();
  return inf;
}

// ---------------------------------------------------------------- the controller as a child process

/**
 * The poll-only anchor (a controller woken by nothing but its own timers, as the Go controller it stands
 * for): the product no longer carries that mode, so the anchor runs the last commit that had it.
 */
export const POLL_ANCHOR_REF = 'f63458f';

export interface ControllerOptions {
  /** Run the poll-only anchor (POLL_ANCHOR_REF, unless `ref` names another commit that has the mode). */
  pollOnly?: boolean;
  pollIntervalMs?: number;
  /** More flags for the controller (a knob of the current code; a baseline may not know it). */
  extraArgs?: string[];
  workers?: number;
  /** Without a VDDK image sources stop at VDDKNotConfigured (cheap; start-up/idle benchmarks). */
  vddk?: boolean;
  logLevel?: string;
  /** Another kubeconfig than the controller identity's (the chaos run's: the same identity through a proxy). */
  kubeconfigPath?: string;
  /** Leader election on this Lease (replicas of one deployment); default off. */
  leaderElection?: { namespace: string; name: string };
  /** Run this git ref's controller (side-by-side figures); default BENCH_CONTROLLER_REF, else the working tree. */
  ref?: string;
  /** Node options for the controller's process (before BENCH_CONTROLLER_NODE_ARGS). */
  nodeArgs?: string[];
  /** Start the controller inside this cgroup (its `cgroup.procs` file; bench/cgroup.ts), as in its pod. */
  cgroupProcs?: string;
}

export interface ControllerProc {
  pid: number;
  /** Date.now() just before spawn. */
  spawnedAt: number;
  healthURL: string;
  metricsURL: string;
  logPath: string;
  /** ms from spawn to the first 200 from /readyz. */
  waitReady(timeoutMs?: number): Promise<number>;
  stats(): ProcStats;
  metrics(): Promise<string>;
  /** SIGTERM, wait for exit; returns the last /proc figures taken just before. */
  stop(): Promise<ProcStats>;
  /** Sends a signal (SIGKILL: a replica dying at a random point) and resolves once the process has exited. */
  kill(signal: NodeJS.Signals): Promise<void>;
  readonly exited: boolean;
}

let ctlSeq = 0;

export async function spawnController(env: BenchEnv, o: ControllerOptions = {}): Promise<ControllerProc> {
  // The controller's own namespace (projected Secrets, the credentials key ring) exists wherever it runs,
  // as the chart's release namespace does; without it no source can connect.
  await createNamespace(env.admin, DEFAULT_CONTROLLER_NAMESPACE);
  const [hp, mp] = [await freePort(), await freePort()];
  const ref = o.ref ?? (o.pollOnly ? POLL_ANCHOR_REF : process.env.BENCH_CONTROLLER_REF);
  const args = [
    // Profiling the controller under a benchmark: BENCH_CONTROLLER_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof'
    // (Node writes the profile when the controller exits on the benchmark's SIGTERM).
    ...(o.nodeArgs ?? []),
    ...(process.env.BENCH_CONTROLLER_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
    // The controller of another git ref (side-by-side figures): BENCH_CONTROLLER_REF=main.
    ref ? join(sourceOfRef(ref), 'src/main.ts') : join(REPO_ROOT, 'src/main.ts'),
    '--kubeconfig', o.kubeconfigPath ?? env.cp.info.controller.kubeconfigPath,
    ...(o.leaderElection ? ['--leader-elect', '--lease-namespace', o.leaderElection.namespace, '--lease-name', o.leaderElection.name] : ['--leader-elect=false']),
    '--health-port', String(hp),
    '--metrics-port', String(mp),
    '--webhook-port', String(await freePort()),
    '--service-cidr', SERVICE_CIDR,
    // The controller's log at another level than warn (to see a run's passes): BENCH_CONTROLLER_LOG_LEVEL=info.
    '--log-level', o.logLevel ?? process.env.BENCH_CONTROLLER_LOG_LEVEL ?? 'warn',
    '--workers', String(o.workers ?? 4),
  ];
  if (o.vddk !== false) args.push('--vddk-image', VDDK_IMAGE);
  if (env.sim) args.push('--inventory-url', env.sim.inventory.url);
  if (o.pollOnly) args.push('--poll-only', '--poll-interval-ms', String(o.pollIntervalMs ?? 20_000));
  args.push(...(o.extraArgs ?? []));
  const logPath = join(env.cp.info.logsDir, `controller-${++ctlSeq}.log`);
  const out = createWriteStream(logPath);
  const spawnedAt = Date.now();
  // The controller's own environment on top of the benchmark's: BENCH_CONTROLLER_ENV='MALLOC_ARENA_MAX=2'
  // (space-separated NAME=value pairs; for the allocator's knobs or a preloaded profiler, which must not
  // reach the control plane's processes or the simulator).
  const extraEnv = Object.fromEntries((process.env.BENCH_CONTROLLER_ENV ?? '').split(' ').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  const spawnOpts = { stdio: ['ignore', 'pipe', 'pipe'] as ('ignore' | 'pipe')[], env: { ...process.env, KUBECONFIG: '', ...extraEnv } };
  // In a cgroup: a shell joins it and then becomes the controller (exec keeps its pid), so the process is
  // in the group from its first allocation.
  const child: ChildProcess = o.cgroupProcs
    ? spawn('/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', o.cgroupProcs, process.execPath, ...args], spawnOpts)
    : spawn(process.execPath, args, spawnOpts);
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  const pid = child.pid!;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  process.once('exit', () => child.kill('SIGKILL'));
  const healthURL = `http://127.0.0.1:${hp}`;
  const metricsURL = `http://127.0.0.1:${mp}/metrics`;
  let last: ProcStats = { cpuSeconds: 0, rssBytes: 0, peakRssBytes: 0 };
  const stats = (): ProcStats => {
    try {
      last = procStats(pid);
    } catch {
      /* exited: keep the last figures */
    }
    return last;
  };
  return {
    pid,
    spawnedAt,
    healthURL,
    metricsURL,
    logPath,
    async waitReady(timeoutMs = 120_000) {
      await until('controller /readyz', async () => {
        if (child.exitCode !== null) throw new Error(`controller exited with ${child.exitCode}; log ${logPath}`);
        const r = await fetch(`${healthURL}/readyz`).catch(() => undefined);
        return r?.status === 200;
      }, timeoutMs, 10);
      return Date.now() - spawnedAt;
    },
    stats,
    async metrics() {
      return await (await fetch(metricsURL)).text();
    },
    async stop() {
      const s = stats();
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(t);
      }
      return s;
    },
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
    get exited() {
      return child.exitCode !== null || child.signalCode !== null;
    },
  };
}

/** Sum of a Prometheus counter/gauge over all label sets (optionally filtered by a label substring). */
export function metricSum(text: string, name: string, labelFilter?: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== '{' && rest[0] !== ' ') continue;
    if (labelFilter && !line.includes(labelFilter)) continue;
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) sum += v;
  }
  return sum;
}

/**
 * A counter's values grouped by some of its labels ("verb resource" → sum), from Prometheus text.
 * Pairs with `diffCounts` to get what happened between two scrapes.
 */
export function metricBy(text: string, name: string, labels: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const body = line.slice(name.length + 1, line.lastIndexOf('}'));
    const vals = Object.fromEntries([...body.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    const k = labels.map((l) => vals[l] ?? '?').join(' ');
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) out[k] = (out[k] ?? 0) + v;
  }
  return out;
}

/** `b - a` per key, keeping only keys that grew, largest first. */
export function diffCounts(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(b)
      .map(([k, v]) => [k, v - (a[k] ?? 0)] as const)
      .filter(([, v]) => v > 0)
      .sort((x, y) => y[1] - x[1]),
  );
}

export function isMain(meta: ImportMeta): boolean {
  return (meta as ImportMeta & { main?: boolean }).main === true;
}

// ---------------------------------------------------------------- fixtures

export function namespaceNames(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(2, '0')}`);
}

/**
 * Finished tasks, cheaply: created with the controller stopped, their status written straight to
 * Succeeded through the status subresource (a terminal task is a record the controller never touches).
 */
export async function createFinishedTasks(c: KubeClient, namespaces: string[], n: number, prefix = 'done'): Promise<void> {
  for (const ns of namespaces) await createNamespace(c, ns);
  const at = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  await pool(Array.from({ length: n }, (_, i) => i), 16, async (i) => {
    const ns = namespaces[i % namespaces.length]!;
    const name = `${prefix}-${i}`;
    try {
      await c.create(GVRs.VMImportTask, taskObject(ns, name, [`vm-${i}`]));
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
    await c.patch(GVRs.VMImportTask, ns, name, {
      status: {
        phase: 'Succeeded',
        observedGeneration: 1,
        startedAt: at,
        completedAt: at,
        progress: 100,
        conditions: [{ type: 'Ready', status: 'True', reason: 'Succeeded', message: 'All VMs imported.', lastTransitionTime: at, observedGeneration: 1 }],
        vms: [{ id: `vm-${i}`, name: `vm-${i}`, phase: 'Succeeded', progress: 100 }],
      },
    }, 'merge', { subresource: 'status' });
  });
}

/** Sources that stop at their first gate when the controller runs without a VDDK image (start-up fixture). */
export async function createSources(c: KubeClient, namespaces: string[], n: number, prefix = 'src'): Promise<void> {
  for (const ns of namespaces) await createNamespace(c, ns);
  await pool(Array.from({ length: n }, (_, i) => i), 16, async (i) => {
    try {
      await c.create(GVRs.VMImportSource, {
        apiVersion: 'forklift.cozystack.io/v1alpha1',
        kind: 'VMImportSource',
        metadata: { name: `${prefix}-${i}`, namespace: namespaces[i % namespaces.length]! },
        spec: { type: 'vsphere', url: VC_URL, credentials: { username: 'u@vsphere.local', password: 'p', insecureSkipVerify: true } },
      } as KubeObject);
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  });
}
