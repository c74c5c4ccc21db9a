// The benchmark smoke run, shared by the files that split it (bench-smoke-*.test.ts): the chosen
// benchmarks in their smallest form, run as `npm run bench -- --quick --only <names> --parallel 2` runs
// them (bench/run.ts, one process per benchmark, each on its own private control plane: audit log on, PV
// binder at 1 s, with the simulator — but the webhook's, which runs on the file's own plane when the e2e
// runner gave it one; two at a time, the webhook's alone after them), so none can rot
// and none can hang. Timings are printed by the benchmarks, never asserted here; what is asserted is what
// must hold at any size: every benchmark process ends by itself and leaves no control plane behind,
// imports succeed, no reconcile errors, an idle controller makes no requests, the counts add up. Figures
// are read from the results files the run writes (into a temporary folder, so a smoke run never touches
// bench/results). The benchmarks are split over several files so that the e2e runner spreads them over
// its planes (one file of every benchmark took 650 s, longer than the rest of the suite).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, adminKubeConfig } from './env/index.ts';
import { KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { CONTROLPLANE_RECORD_ENV } from './env/controlplane.ts';
import { alive } from './fixtures.ts';

// A quick run takes a few minutes on a quiet 2-core machine and over 10 min on one loaded by other suites
// (load average 25+: each private control plane then takes ~45 s to start). A benchmark that does not end
// by itself never ends: this deadline turns that into a failure instead of a hung suite.
const RUN_DEADLINE_MS = 25 * 60_000;

/** Benchmarks that start no control plane (pure CPU). */
const PLANELESS = new Set(['cache-index', 'campaign']);
/** Benchmarks that run on the file's own plane when it has one (MC_TESTENV), else start a private one. */
const ON_FILE_PLANE = new Set(['webhook']);

/** The namespaces the webhook's benchmark makes (freshNamespace('bench-wh') in bench/webhook.ts) on the file's plane. */
async function webhookNamespaces(): Promise<KubeObject[]> {
  const c = new KubeClient(await adminKubeConfig());
  try {
    return (await c.listAll(GVRs.Namespace, undefined, { labelSelector: 'e2e=true' })).items.filter((n) => n.metadata?.name?.startsWith('bench-wh-'));
  } finally {
    c.close();
  }
}

export interface BenchSmoke {
  /** The `figures` of `<name>.quick.json` the run wrote. */
  figures<T>(name: string): T;
  /** The whole of a results file the run wrote (`<name>.quick.json`). */
  result<T>(name: string): T;
}

/** Registers the run of `names` (a hook) and the test that every one of them ended; returns its results. */
export function benchSmoke(names: string[], extraFlags: string[] = []): BenchSmoke {
  const work = mkdtempSync(join(tmpdir(), 'mc-bench-smoke-'));
  const resultsDir = join(work, 'results');
  const recordFile = join(work, 'controlplanes.jsonl');
  let run: { code: number | null; signal: string | null; timedOut: boolean; output: string };

  before(async () => {
    const args = [
      // Two at a time: the runner starts the smoke files side by side (they are among its longest), and
      // seven private planes booting at once beside the suite's four (and the image build) starved the
      // other files' API servers — GETs of 1–4 s.
      join(REPO_ROOT, 'bench/run.ts'), '--quick', '--only', names.join(','), '--parallel', '2',
      '--pv-sync-period', '1s', '--repeats', '1',
      ...extraFlags,
    ];
    // Its own process group, so a benchmark that hangs can be ended with everything it started.
    const child = spawn(process.execPath, args, {
      cwd: REPO_ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      // The file's own plane (MC_TESTENV, when the e2e runner runs it) goes on to the benchmarks: the webhook's
      // (the only one that connects through testEnv; the others start a private plane in bench/lib.ts) runs
      // on it instead of starting one (~9 CPU s). The runner gives the plane to one file at a time, and the
      // webhook's benchmark deletes its namespace and StorageClass as it ends.
      env: { ...process.env, MC_TESTENV: process.env.MC_TESTENV ?? '', BENCH_RESULTS_DIR: resultsDir, [CONTROLPLANE_RECORD_ENV]: recordFile },
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
    // Each benchmark's verdict and time ("#### <name>: done in <n> s"), for whoever reads the file's output.
    for (const l of run.output.split('\n')) if (/^#### \S+: (done|FAILED)/.test(l)) console.log(l);
    // The hook's own limit: past the run's deadline (the runner's per-test default of 10 min would cut a
    // slow but healthy run short on a loaded machine, before the deadline could say which benchmark hung).
  }, { timeout: RUN_DEADLINE_MS + 60_000 });

  after(async () => {
    rmSync(work, { recursive: true, force: true });
    // Whatever a benchmark that failed midway left on the file's plane goes, so no later file meets it.
    if (process.env.MC_TESTENV && names.some((n) => ON_FILE_PLANE.has(n))) {
      const c = new KubeClient(await adminKubeConfig());
      try {
        for (const n of await webhookNamespaces()) await c.delete(GVRs.Namespace, undefined, n.metadata!.name!);
      } finally {
        c.close();
      }
    }
  });

  /** Each benchmark's verdict line and the first error line it printed, then the run's last lines. */
  function summary(): string {
    const lines = run.output.split('\n');
    const verdicts = lines.filter((l) => /^#### \S+: (done|FAILED)/.test(l));
    const errors = lines.filter((l) => /^(Error|\S*Error\b|.*control plane failed to start)/.test(l)).map((l) => l.slice(0, 400));
    return [...verdicts, ...errors.slice(0, 10), '…', run.output.slice(-2000)].join('\n');
  }

  test(`every benchmark process of \`npm run bench -- --only ${names.join(',')}\` ends by itself and leaves no control plane behind`, () => {
    assert.equal(run.timedOut, false, `bench/run.ts --quick did not end within ${RUN_DEADLINE_MS / 60_000} min:\n${summary()}`);
    assert.equal(run.code, 0, summary());
    const ran = run.output.split('\n').filter((l) => /^#### \S+: done/.test(l)).map((l) => /^#### (\S+):/.exec(l)![1]!);
    assert.deepEqual(ran.sort(), [...names].sort(), `each benchmark ran: ${summary()}`);
    const withPlane = names.filter((n) => !PLANELESS.has(n) && !(process.env.MC_TESTENV && ON_FILE_PLANE.has(n)));
    if (!withPlane.length) return;
    const started = readFileSync(recordFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { dir: string; component: string; pid: number });
    const planes = new Set(started.map((s) => s.dir));
    // At least one private control plane per benchmark that has one.
    assert.ok(planes.size >= withPlane.length, `one control plane per benchmark (${withPlane.join(', ')}), saw ${planes.size}`);
    for (const s of started) assert.equal(alive(s.pid), false, `${s.component} (pid ${s.pid}) of ${s.dir} outlived its benchmark`);
    for (const d of planes) assert.equal(existsSync(d), false, `the control plane's folder ${d} was left behind`);
  });

  if (process.env.MC_TESTENV && names.some((n) => ON_FILE_PLANE.has(n))) {
    test('a benchmark run on the file\'s own plane deletes what it made there', async () => {
      const left = (await webhookNamespaces()).filter((n) => !n.metadata?.deletionTimestamp).map((n) => n.metadata!.name!);
      assert.deepEqual(left, [], 'the webhook benchmark deleted its namespace');
    });
  }

  const result = <T>(name: string): T => {
    const path = join(resultsDir, `${name}.quick.json`);
    assert.ok(existsSync(path), `bench wrote ${name}.quick.json:\n${run.output.slice(-3000)}`);
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  };
  return { result, figures: <T>(name: string): T => result<{ figures: T }>(name).figures };
}
