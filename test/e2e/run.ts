// `npm run test:e2e`: the e2e files on three control planes side by side (shards), each file in its own
// `node --test` process connected to its shard's plane through MC_TESTENV, and beside them a fourth lane
// that starts without a plane: it runs the files that start every plane they use (test/e2e/env/shards.ts
// OWN_PLANE_FILES), and once none of those is left, starts a plane and takes files that need one. Each
// lane takes the longest file left that it may run as soon as it is free (test/e2e/durations.json holds
// the measured durations), one file at a time per lane — a file never shares its plane with another file
// running. Each file's output is printed whole when it ends, so lanes never interleave lines. Planes are
// stopped on success, failure and interrupt, and the run fails if any component process outlived it.
//
//   node test/e2e/run.ts                        # every file: 3 shards and the fourth lane
//   node test/e2e/run.ts a.test.ts b.test.ts    # these files: 1 shard, and the fourth lane when one of
//                                               # them starts its own planes
//   node test/e2e/run.ts --shards 1             # every file on one plane and the fourth lane
//   node test/e2e/run.ts --write-durations      # also record this run's per-file durations
// MC_E2E_SHARDS sets the default number of shards. A file that does not end within its deadline fails the
// run with its output so far (see FILE_DEADLINE).
// Besides wall time, each file's CPU seconds are measured (its process and every process it started, from
// /proc: test/e2e/env/cpu.ts), with the CPU its plane's components spent while it ran; the run ends with
// each plane's component CPU and the top consumers. CPU, unlike wall time, barely moves with the
// machine's other load.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { KubeClient } from '../../src/runtime/kube.ts';
import { ControlPlane } from './env/controlplane.ts';
import { REPO_ROOT, deleteOwnedNamespaces, installOurCRDs, kubeConfigFor } from './env/index.ts';
import { newOwner } from '../sim/scope.ts';
import { alive, installStandInCRDs } from './fixtures.ts';
import { FileQueue, startsOwnPlanes } from './env/shards.ts';
import { groupCpu, procCpu } from './env/cpu.ts';

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...findTests(p));
    else if (e.name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

const DURATIONS_FILE = join(REPO_ROOT, 'test/e2e/durations.json');
// A plane's start deadline (the harness's default is 60 s): kube-apiserver's bootstrap alone has taken
// over 60 s on this 2-core machine at load average 25.
const PLANE_START_TIMEOUT_MS = 180_000;
// One test may take this long (node's --test-timeout is per test, not per file).
const TEST_TIMEOUT_MS = 10 * 60_000;
// A whole file gets 4× its recorded duration, at least 5 min and at most 25 min (10 min when never
// measured). Past it the file's process group is ended and the file fails with what it printed so far: a
// file that never ends (a test's child holding its output pipe, a wait without deadline) must fail the run,
// not hang it until CI's own limit kills everything without a word.
const FILE_DEADLINE = { factor: 4, minMs: 5 * 60_000, maxMs: 25 * 60_000, unknownMs: 10 * 60_000 };
// While files run, a line every 2 min says which file each plane is on and for how long.
const HEARTBEAT_MS = 2 * 60_000;
// After a file's process exits, its output pipes get this long to close: a grandchild that inherited them
// (and outlived the file) must not keep the runner waiting.
const PIPE_DRAIN_MS = 5_000;

// V8's compile cache for every process the run starts (each file, and the controllers, benchmarks and
// tools it starts in turn): each of them loads the TypeScript sources and @kubernetes/client-node afresh,
// ~1.5 CPU s per process without the cache and ~1 s with it. Keyed by each source's content, so an
// edited file is never served stale.
process.env.NODE_COMPILE_CACHE ??= join(REPO_ROOT, 'node_modules/.cache/node-compile-cache');

const argv = process.argv.slice(2);
const flagValue = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const writeDurations = argv.includes('--write-durations');
const filter = argv.filter((a, i) => !a.startsWith('--') && argv[i - 1] !== '--shards').map((f) => join(process.cwd(), f));
const found = findTests(join(REPO_ROOT, 'test/e2e'));
const files = filter.length ? filter : found;
// Four files side by side by default: most of a file's time is spent waiting (on the simulated engine's
// timings and kube-controller-manager's periodic passes), not computing, so four files side by side on two
// cores finish in about half the time two did. Three of them on shared planes, and a fourth lane that
// starts without one for the files that start their own (OWN_PLANE_FILES): a plane costs ~9 CPU s to start
// and stop, ~0.05 CPU s a second while it sits idle, and ~400 MiB of memory.
const DEFAULT_SHARDS = 3;
const shardCount = Math.max(1, Math.min(files.length, Number(flagValue('shards') ?? process.env.MC_E2E_SHARDS ?? (filter.length ? 1 : DEFAULT_SHARDS))));
// The fourth lane whenever the run has a file that starts its own planes.
const lanesWithoutPlane = files.some(startsOwnPlanes) ? 1 : 0;
/** The descriptor a file in a lane without a plane gets: env/index.ts testEnv() refuses it. */
const NO_PLANE = 'none';

/** Seconds per file (repository-relative path) from the last recorded full run. */
function knownDurations(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(DURATIONS_FILE, 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

interface FileResult {
  file: string;
  shard: number;
  code: number;
  seconds: number;
  /** CPU seconds of the file's process and every process it started (undefined off Linux). */
  cpu?: number;
  /** CPU seconds the plane's components spent while the file ran (the load its requests put on them). */
  planeCpu?: number;
  /** For a failed file, the reporter's failure details (or the output's tail), repeated at the run's end. */
  digest?: string;
}

// A failed file's details are repeated at the end of the run, where a CI log cut to its head and tail still
// shows them; this many lines of each (a failing assertion with its diff and stack fits in it).
const DIGEST_LINES = 60;

/** The part of a file's output that says why it failed: node's "failing tests" section, else the tail. */
function failureDigest(output: string): string {
  const lines = output.split('\n');
  const at = lines.findLastIndex((l) => l.includes('failing tests:'));
  const part = at >= 0 ? lines.slice(at + 1) : lines.slice(-DIGEST_LINES);
  const kept = part.slice(0, DIGEST_LINES);
  return kept.join('\n') + (part.length > kept.length ? `\n… (${part.length - kept.length} more lines above, in the file's output)` : '');
}

// Each file's process reports its CPU here when it exits (test/e2e/env/cpu-report.ts).
const cpuDir = mkdtempSync(join(tmpdir(), 'mc-e2e-cpu-'));
const CPU_REPORT = join(REPO_ROOT, 'test/e2e/env/cpu-report.ts');
let cpuReports = 0;

const running = new Set<ChildProcess>();
let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    interrupted = true;
    for (const c of running) endGroup(c.pid, sig);
  });
}

function fileDeadlineMs(file: string): number {
  // MC_E2E_FILE_DEADLINE_MS overrides the deadline of every file (to see the runner end a stuck file).
  const forced = Number(process.env.MC_E2E_FILE_DEADLINE_MS);
  if (forced > 0) return forced;
  const known = knownDurations()[relative(REPO_ROOT, file)];
  if (known === undefined) return FILE_DEADLINE.unknownMs;
  return Math.min(FILE_DEADLINE.maxMs, Math.max(FILE_DEADLINE.minMs, known * 1000 * FILE_DEADLINE.factor));
}

/** Ends the file's process group (the file and every process it started that did not leave the group). */
function endGroup(pid: number | undefined, sig: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, sig);
  } catch {
    /* the group is already gone */
  }
}

const current = new Map<number, { file: string; since: number }>();

function runFile(file: string, shard: number, descriptor: string, cp: ControlPlane | undefined, owner: string): Promise<FileResult> {
  const t0 = Date.now();
  const plane0 = cp ? planeCpuTotal(cp) : 0;
  const deadlineMs = fileDeadlineMs(file);
  const report = join(cpuDir, `${++cpuReports}.json`);
  return new Promise((resolve) => {
    // Its own process group (detached), so that the file and whatever it started can be ended together.
    // --test-isolation=none runs the file's tests in this very process, and --test-force-exit ends it when
    // its tests have, even if a handle is left open (a leaked grandchild is then ended with the group).
    const child = spawn(
      process.execPath,
      ['--import', CPU_REPORT, '--test', '--test-reporter=spec', `--test-timeout=${TEST_TIMEOUT_MS}`, '--test-isolation=none', '--test-force-exit', file],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MC_TESTENV: descriptor, MC_E2E_CPU_REPORT: report, MC_E2E_OWNER: owner }, detached: true },
    );
    running.add(child);
    current.set(shard, { file, since: t0 });
    const out: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => out.push(c));
    let timedOut = false;
    const deadline = setTimeout(() => {
      timedOut = true;
      endGroup(child.pid, 'SIGTERM');
      setTimeout(() => endGroup(child.pid, 'SIGKILL'), 10_000).unref();
    }, deadlineMs);
    let done = false;
    const finish = (c: number | null, sig: NodeJS.Signals | null): void => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      running.delete(child);
      current.delete(shard);
      // What the file left running in its group is counted (its CPU so far) before it goes with it.
      const leftovers = child.pid ? [...groupCpu(child.pid).values()].reduce((a, c) => a + c.self + c.reaped, 0) : 0;
      endGroup(child.pid, 'SIGKILL');
      child.stdout.destroy();
      child.stderr.destroy();
      const seconds = Math.round((Date.now() - t0) / 100) / 10;
      const r: FileResult = { file, shard, code: timedOut ? 124 : (c ?? (sig ? 1 : 0)), seconds, cpu: fileCpu(report, leftovers), planeCpu: cp ? planeCpuTotal(cp) - plane0 : undefined };
      const verdict = timedOut ? `FAILED (no end within its deadline of ${Math.round(deadlineMs / 1000)} s; its process group was ended)` : r.code === 0 ? 'passed' : `FAILED (exit ${r.code})`;
      const text = Buffer.concat(out).toString('utf8');
      if (r.code !== 0) r.digest = failureDigest(text);
      process.stdout.write(`\n── [${laneName(shard)}] ${relative(REPO_ROOT, file)}: ${verdict} in ${r.seconds} s${r.cpu === undefined ? '' : ` (${r.cpu.toFixed(1)} CPU s${r.planeCpu === undefined ? '' : `, its plane ${r.planeCpu.toFixed(1)} CPU s`})`}\n${text}`);
      resolve(r);
    };
    child.on('close', finish);
    child.on('exit', (c, sig) => setTimeout(() => finish(c, sig), PIPE_DRAIN_MS).unref());
  });
}

/**
 * The file's CPU: what its process reported at exit (itself and every process it reaped) plus what was
 * still running in its group when it ended. A grandchild that left the group or was reparented and ended
 * on its own before the file did is not seen (none of the suite's do).
 */
function fileCpu(report: string, leftovers: number): number | undefined {
  try {
    const r = JSON.parse(readFileSync(report, 'utf8')) as { self: number; reaped: number };
    return r.self + r.reaped + leftovers;
  } catch {
    // Ended by a signal (its deadline): only what was still running is known.
    return leftovers || undefined;
  }
}

// Planes start one after another, each shard beginning its files as soon as its own plane is up: four
// kube-apiserver bootstraps at once (each a burst of CPU) on two cores, beside lint and the unit tests,
// took over 180 s each at load average 40 and one missed its deadline. A start that fails is tried once
// more before its shard gives up.
let startQueue: Promise<unknown> = Promise.resolve();
function startPlane(shard: number): Promise<ControlPlane> {
  const attempt = (): Promise<ControlPlane> => ControlPlane.start({ startTimeoutMs: PLANE_START_TIMEOUT_MS });
  const started = startQueue.then(async () => {
    try {
      return await attempt();
    } catch (e) {
      console.error(`[testenv] plane ${shard + 1}: ${(e as Error).message.split('\n')[0]}; starting it again`);
      return await attempt();
    }
  });
  startQueue = started.catch(() => undefined);
  return started;
}

interface ShardResult {
  results: FileResult[];
  survivors: string[];
  logsDir?: string;
  /** CPU seconds of each of the plane's components (read just before they were stopped). */
  planeCpu?: Record<string, number>;
}

/** CPU seconds of the plane's components (a component restarted by a test counts from its restart). */
function planeCpu(cp: ControlPlane): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(cp.info.pids)) {
    const c = procCpu(pid);
    if (c) out[name] = Math.round((c.self + c.reaped) * 10) / 10;
  }
  return out;
}

function planeCpuTotal(cp: ControlPlane): number {
  return Object.values(planeCpu(cp)).reduce((a, v) => a + v, 0);
}

/** "plane N" for a shard, "lane N" for a lane that starts without a plane. */
function laneName(shard: number): string {
  return shard < shardCount ? `plane ${shard + 1}` : `lane ${shard + 1}`;
}

/** The shared plane of a lane and what its files need of it. */
interface LanePlane {
  cp: ControlPlane;
  descriptor: string;
  admin: KubeClient;
}

/** Starts a lane's plane with every CRD a file uses; undefined (and reported) when it cannot start. */
async function lanePlane(shard: number): Promise<LanePlane | undefined> {
  let cp: ControlPlane;
  try {
    cp = await startPlane(shard);
  } catch (e) {
    // The lane's files are left to the others; what no lane runs is reported as not run and fails the run.
    console.error(`[testenv] ${laneName(shard)}: its plane did not start: ${(e as Error).message}`);
    return undefined;
  }
  const descriptor = join(cp.info.dir, 'testenv.json');
  writeFileSync(descriptor, JSON.stringify(cp.info, null, 2));
  // Every CRD a file uses, installed once before the first file: kube-controller-manager's garbage
  // collector learns of a new kind only at its discovery resync (~30 s), so a kind installed by a file
  // made that file's first Orphan/Background deletion of it wait up to 30 s. Files still install what
  // they need (idempotent), so each also runs on its own.
  const kc = kubeConfigFor(cp.info.admin.kubeconfigPath);
  const admin = new KubeClient(kc);
  try {
    await installOurCRDs(kc);
    await installStandInCRDs(admin);
  } catch (e) {
    console.error(`[testenv] ${laneName(shard)}: ${(e as Error).message}`);
    admin.close();
    await cp.stop({ keepDir: true });
    return undefined;
  }
  return { cp, descriptor, admin };
}

/**
 * Runs one lane: files from the queue one after another until none is left that it may run. A shard
 * starts its plane first; the lane without a plane runs files that start their own, and once none of
 * those is left but files needing a plane are, it starts a plane and takes them too.
 */
async function runShard(shard: number): Promise<ShardResult> {
  const results: FileResult[] = [];
  let plane: LanePlane | undefined;
  let failed = false;
  let planeFailed = false;
  try {
    if (shard < shardCount && queue.size) {
      plane = await lanePlane(shard);
      if (!plane) return { results, survivors: [] };
    }
    while (!interrupted) {
      let f = queue.next(shard, !!plane);
      if (!f && !plane && queue.needsPlane) {
        plane = await lanePlane(shard);
        if (!plane) break;
        f = queue.next(shard, true);
      }
      if (!f) break;
      const owner = newOwner();
      const r = await runFile(f, shard, plane?.descriptor ?? NO_PLANE, plane?.cp, owner);
      results.push(r);
      if (r.code !== 0) failed = true;
      // What the file left in its namespaces goes with it (a file's own fixtures delete them while its
      // controller runs; this is for the files that do not, or that ended early): the next file's
      // controller would otherwise reconcile every earlier file's sources and tasks.
      if (plane) await deleteOwnedNamespaces(plane.admin, { owner, release: true }).catch((e: unknown) => console.error(`[testenv] ${laneName(shard)}: deleting ${relative(REPO_ROOT, f!)}'s namespaces: ${(e as Error).message}`));
    }
  } catch (e) {
    planeFailed = true;
    console.error(`[testenv] ${laneName(shard)}: ${(e as Error).message}`);
  }
  if (!plane) return { results, survivors: [] };
  plane.admin.close();
  const cpu = planeCpu(plane.cp);
  const keep = failed || planeFailed || interrupted;
  await plane.cp.stop({ keepDir: keep });
  const survivors = Object.entries(plane.cp.info.pids).filter(([, pid]) => alive(pid)).map(([n, p]) => `${n}(${p})`);
  return { results, survivors, logsDir: keep ? plane.cp.info.logsDir : undefined, planeCpu: cpu };
}

const queue = new FileQueue(files, knownDurations(), (f) => relative(REPO_ROOT, f), startsOwnPlanes);
const laneCount = shardCount + lanesWithoutPlane;
const t0 = Date.now();
const heartbeat = setInterval(() => {
  const now = Date.now();
  const lines = [...current.entries()].sort(([a], [b]) => a - b).map(([i, c]) => `${laneName(i)}: ${relative(REPO_ROOT, c.file)} for ${Math.round((now - c.since) / 1000)} s`);
  console.error(`[testenv] ${Math.round((now - t0) / 1000)} s in; running: ${lines.join('; ') || 'nothing'}`);
}, HEARTBEAT_MS);
heartbeat.unref();
console.error(`[testenv] ${files.length} files on ${shardCount} control plane(s)${lanesWithoutPlane ? ` and ${lanesWithoutPlane} lane(s) without one, which starts a plane when only files needing one are left` : ''}`);
const shards = await Promise.all(Array.from({ length: laneCount }, (_, i) => runShard(i)));
const all = shards.flatMap((s) => s.results);
const wall = Math.round((Date.now() - t0) / 1000);

let code = interrupted ? 130 : 0;
const ran = new Set(all.map((r) => r.file));
const notRun = files.filter((f) => !ran.has(f));
const failedFiles = all.filter((r) => r.code !== 0);
if (failedFiles.length || notRun.length) code = code || 1;
console.log(`\n[testenv] ${all.length - failedFiles.length}/${files.length} files passed in ${wall} s on ${shardCount} plane(s)${lanesWithoutPlane ? ` and ${lanesWithoutPlane} lane(s) without one` : ''}`);
for (const [i, s] of shards.entries()) {
  const comps = Object.entries(s.planeCpu ?? {});
  const planeTotal = comps.reduce((a, [, v]) => a + v, 0);
  const filesCpu = s.results.reduce((a, r) => a + (r.cpu ?? 0), 0);
  console.log(
    `[testenv]   ${laneName(i)}: ${s.results.reduce((a, r) => a + r.seconds, 0).toFixed(0)} s over ${s.results.length} files, ${filesCpu.toFixed(0)} CPU s in the files` +
      (comps.length ? `; the plane itself ${planeTotal.toFixed(0)} CPU s (${comps.map(([n, v]) => `${n} ${v.toFixed(0)}`).join(', ')})` : ''),
  );
}
// The top CPU consumers: where cutting pays.
const TOP = 12;
const byCpu = all.filter((r) => r.cpu !== undefined).sort((a, b) => b.cpu! - a.cpu!);
if (byCpu.length) {
  const filesTotal = byCpu.reduce((a, r) => a + r.cpu!, 0);
  const planesTotal = shards.reduce((a, s) => a + Object.values(s.planeCpu ?? {}).reduce((x, v) => x + v, 0), 0);
  const self = procCpu('self');
  console.log(`[testenv] CPU: files ${filesTotal.toFixed(0)} s, control planes ${planesTotal.toFixed(0)} s, this runner ${self ? self.self.toFixed(0) : '?'} s; top files:`);
  for (const r of byCpu.slice(0, TOP)) {
    console.log(`[testenv]   ${r.cpu!.toFixed(1).padStart(7)} CPU s (+${(r.planeCpu ?? 0).toFixed(1).padStart(5)} its plane) ${r.seconds.toFixed(1).padStart(7)} s wall  ${relative(REPO_ROOT, r.file)}`);
  }
}
rmSync(cpuDir, { recursive: true, force: true });
for (const r of failedFiles) {
  if (r.digest) console.log(`\n[testenv] why ${relative(REPO_ROOT, r.file)} failed (repeated from its output):\n${r.digest}`);
}
for (const r of failedFiles) console.log(`[testenv]   FAILED: ${relative(REPO_ROOT, r.file)} (${laneName(r.shard)})`);
for (const f of notRun) console.log(`[testenv]   not run: ${relative(REPO_ROOT, f)}`);

const survivors = shards.flatMap((s) => s.survivors);
if (survivors.length) {
  console.error(`[testenv] processes outlived the run: ${survivors.join(', ')}`);
  code = code || 1;
} else {
  console.error('[testenv] every etcd/kube-* process of this run has exited');
}
for (const s of shards) if (s.logsDir && existsSync(s.logsDir)) console.error(`[testenv] component logs: ${s.logsDir}`);

if (writeDurations && !filter.length && !interrupted) {
  const rec = Object.fromEntries(all.map((r) => [relative(REPO_ROOT, r.file), r.seconds]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))));
  writeFileSync(DURATIONS_FILE, `${JSON.stringify(rec, null, 2)}\n`);
  console.error(`[testenv] durations written to ${relative(REPO_ROOT, DURATIONS_FILE)}`);
}
process.exit(code);
