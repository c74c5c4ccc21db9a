// Every benchmark in its smallest form, run as `npm run bench -- --quick --parallel 3` runs them
// (bench/run.ts, one process per benchmark, each on its own private control plane: audit log on, PV
// binder at 1 s, with the simulator; three at a time, the webhook's alone after them), so none can rot
// and none can hang. Timings are printed by the benchmarks, never
// asserted here; what is asserted is what must hold at any size: every benchmark process ends by itself
// and leaves no control plane behind, imports succeed, no reconcile errors, an idle controller makes no
// requests, the counts add up. Figures are read from the results files the run writes (into a
// temporary folder, so a smoke run never touches bench/results).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './env/index.ts';
import { CONTROLPLANE_RECORD_ENV } from './env/controlplane.ts';
import { alive } from './fixtures.ts';
import type { IdleFigures, StartupFigures } from '../../bench/startup.ts';
import type { RequestsFigures } from '../../bench/requests.ts';
import type { LatencyFigures } from '../../bench/latency.ts';
import type { ScaleFigures } from '../../bench/scale.ts';

// The whole quick run takes ~3 min on a quiet 2-core machine and over 15 min on one loaded by other
// suites (load average 25+: each private control plane then takes ~45 s to start). A benchmark that does
// not end by itself never ends: this deadline turns that into a failure instead of a hung suite.
const RUN_DEADLINE_MS = 25 * 60_000;

const work = mkdtempSync(join(tmpdir(), 'mc-bench-smoke-'));
const resultsDir = join(work, 'results');
const recordFile = join(work, 'controlplanes.jsonl');
let run: { code: number | null; signal: string | null; timedOut: boolean; output: string };

before(async () => {
  const args = [
    // Three at a time, not all seven: seven private planes booting at once beside the suite's four (and
    // the image build) starved the other files' API servers — GETs of 1–4 s, and a crash-suite kill point
    // not reached in 180 s.
    join(REPO_ROOT, 'bench/run.ts'), '--quick', '--parallel', '3',
    '--pv-sync-period', '1s', '--repeats', '1', '--objects', '10', '--namespaces', '2', '--idle-seconds', '1',
    '--poll-interval-ms', '1000', '--sizes', '2',
    // Two tasks end in ~3 s on a quiet machine; beside the suite's planes and the other benchmarks' (load
    // average 30 on 2 cores) a CI run saw them still running after the scale benchmark's own 72 s. What
    // the smoke run must catch is a task that never ends, not a slow machine: 5 min.
    '--timeout-minutes', '5',
    // The soak in its smallest form that still has a warm-up round and two measured rounds (6 imports
    // instead of --quick's 30): what it must show here is that it ends and reports, not its figures.
    '--tasks', '4', '--wave', '2',
  ];
  // Its own process group, so a benchmark that hangs can be ended with everything it started.
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, MC_TESTENV: '', BENCH_RESULTS_DIR: resultsDir, [CONTROLPLANE_RECORD_ENV]: recordFile },
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    process.kill(-child.pid!, 'SIGKILL');
  }, RUN_DEADLINE_MS);
  // The e2e runner ends a file by signalling the file's process group (its deadline, an interrupt): the
  // benchmark's own group must go with it, or its control planes outlive the run.
  const endChild = (): void => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* already gone */
    }
    process.exit(143);
  };
  process.once('SIGTERM', endChild);
  process.once('SIGINT', endChild);
  run = await new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, timedOut, output })));
  process.off('SIGTERM', endChild);
  process.off('SIGINT', endChild);
  clearTimeout(timer);
  // The hook's own limit: past the run's deadline (the runner's per-test default of 10 min would cut a
  // slow but healthy run short on a loaded machine, before the deadline could say which benchmark hung).
}, { timeout: RUN_DEADLINE_MS + 60_000 });

after(() => {
  rmSync(work, { recursive: true, force: true });
});

function figures<T>(name: string): T {
  const path = join(resultsDir, `${name}.quick.json`);
  assert.ok(existsSync(path), `bench wrote ${name}.quick.json:\n${run.output.slice(-3000)}`);
  return (JSON.parse(readFileSync(path, 'utf8')) as { figures: T }).figures;
}

/** Each benchmark's verdict line and the first error line it printed, then the run's last lines. */
function summary(): string {
  const lines = run.output.split('\n');
  const verdicts = lines.filter((l) => /^#### \S+: (done|FAILED)/.test(l));
  const errors = lines.filter((l) => /^(Error|\S*Error\b|.*control plane failed to start)/.test(l)).map((l) => l.slice(0, 400));
  return [...verdicts, ...errors.slice(0, 10), '…', run.output.slice(-2000)].join('\n');
}

test('every benchmark process of `npm run bench` ends by itself and leaves no control plane behind', () => {
  assert.equal(run.timedOut, false, `bench/run.ts --quick did not end within ${RUN_DEADLINE_MS / 60_000} min:\n${summary()}`);
  assert.equal(run.code, 0, summary());
  const started = readFileSync(recordFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { dir: string; component: string; pid: number });
  const planes = new Set(started.map((s) => s.dir));
  // startup, requests, latency, scale (one size), webhook: one private control plane each.
  assert.ok(planes.size >= 5, `one control plane per benchmark, saw ${planes.size}`);
  for (const s of started) assert.equal(alive(s.pid), false, `${s.component} (pid ${s.pid}) of ${s.dir} outlived its benchmark`);
  for (const d of planes) assert.equal(existsSync(d), false, `the control plane's folder ${d} was left behind`);
});

test('an idle controller holding finished tasks makes no API requests once settled, and starts up to /readyz', () => {
  const idle = figures<IdleFigures>('idle');
  assert.ok(idle.requestsToSettle > 0, 'the start-up lists and watches are seen in the audit log');
  assert.equal(idle.requestsInWindow, 0, JSON.stringify(idle.byVerbResource));
  const st = figures<StartupFigures>('startup');
  assert.equal(st.readyMs.length, 1);
  assert.ok(st.readyMsMedian > 0 && st.rssAtReadyMiBMedian > 0);
});

test('the requests of connecting a source and importing a 1-disk and a 4-disk VM are counted, reads and writes apart', () => {
  const f = figures<RequestsFigures>('requests');
  assert.ok(f.sourceConnect.writes > 0);
  assert.deepEqual(f.imports.map((i) => i.disks), [1, 4]);
  for (const i of f.imports) {
    const r = i.runs[0]!;
    assert.equal(r.reads + r.writes, r.total);
    assert.equal(Object.values(r.byVerbResource).reduce((a, b) => a + b, 0), r.total);
    assert.ok((r.byVerbResource['create vminstances'] ?? 0) >= 1, `an import creates its VMInstance: ${JSON.stringify(r.byVerbResource)}`);
  }
});

test('handoff latency is measured for the watching controller and the poll-only baseline side by side', () => {
  const f = figures<LatencyFigures>('latency');
  for (const m of [f.watch, f.pollOnly]) {
    assert.equal(m.oneDisk.length, 1);
    assert.equal(m.fourDisk.length, 1);
    assert.ok(m.oneDiskMedianMs >= 0 && m.fourDiskMedianMs >= 0, JSON.stringify(m));
  }
  assert.ok(Number.isFinite(f.ratioOneDisk) && Number.isFinite(f.ratioFourDisk));
});

test('tasks started at once all become Ready without a reconcile error, with CPU, RSS and queue depth recorded', () => {
  const { rows } = figures<{ rows: ScaleFigures[] }>('scale');
  assert.equal(rows.length, 1);
  const f = rows[0]!;
  assert.equal(f.completed, true, `${f.endedTasks}/${f.tasks} tasks ended within ${f.wallSecondsToAllReady} s; the others: ${JSON.stringify(f.unended)}`);
  assert.equal(f.failedTasks, 0);
  assert.equal(f.reconcileErrors, 0, JSON.stringify(f.reconcileErrorsByReason));
  assert.ok(f.cpuSeconds > 0 && f.peakRssMiB > 0);
  assert.ok(f.maxQueueDepth >= 0 && f.reconciles > 0);
});

test('the admission webhook answers every review of its benchmark', () => {
  const f = JSON.parse(readFileSync(join(resultsDir, 'webhook.quick.json'), 'utf8')) as { results: Array<{ current: { sent: number; ok: number; errorReasons: Record<string, number>; inventoryCallsPerReview: number } }> };
  assert.ok(f.results.length >= 1);
  for (const { current: r } of f.results) {
    assert.ok(r.sent > 0);
    assert.equal(r.ok, r.sent, JSON.stringify(r.errorReasons));
    assert.ok(r.inventoryCallsPerReview >= 0);
  }
});

test('the soak creates, imports and deletes its tasks in rounds after a warm-up round, and reports the heap', () => {
  const f = figures<{ heapAfterGCMiB: { baseline: number; after: number } }>('soak');
  assert.ok(f.heapAfterGCMiB.baseline > 0 && f.heapAfterGCMiB.after > 0, JSON.stringify(f.heapAfterGCMiB));
  const params = (JSON.parse(readFileSync(join(resultsDir, 'soak.quick.json'), 'utf8')) as { params?: { tasks?: number; rounds?: number } }).params;
  assert.equal(params?.tasks, 4, JSON.stringify(params));
});

test('a cache list by namespace and labels is measured for the indexed store and the previous one side by side', () => {
  const f = figures<{ rows: Array<{ tasks: number; current: { usPerList: number }; baseline: { usPerList: number }; ratio: number }> }>('cache-index');
  assert.deepEqual(f.rows.map((r) => r.tasks), [50, 200]);
  for (const r of f.rows) assert.ok(r.current.usPerList > 0 && r.baseline.usPerList > 0 && Number.isFinite(r.ratio), JSON.stringify(r));
});
