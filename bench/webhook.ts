// Admission latency: p50 / p99 / max of AdmissionReviews answered by the webhook over HTTPS at fixed
// request rates (open loop: requests are sent on schedule whether or not earlier ones have returned, so
// a slow answer cannot hide the ones queued behind it), and the inventory calls the reviews cost. Prints
// the figures and writes bench/results/webhook.json. Asserts nothing about time.
//
//   node bench/webhook.ts                      # 200 and 1000 req/s, 10 s each
//   node bench/webhook.ts --baseline main      # the same, side by side with the webhook of git ref `main`
//   BENCH_RATES=50,200,400 BENCH_SECONDS=20 node bench/webhook.ts
//   node bench/webhook.ts --quick              # writes webhook.quick.json (never replaces the figures)
//   node bench/webhook.ts --pin                # the webhook's thread alone on the last CPU, the rest on the
//                                              # others (as a pod with a CPU of its own); webhook-pinned.json
//
// Each webhook runs in its own worker thread (bench/webhook-target.ts), the client in a third
// (bench/webhook-load.ts). With --baseline, the webhook code of that ref (its src/, extracted with
// `git archive` into .testenv/) runs as a second server in the same process, against the same API server and the same inventory; at
// each rate the two are measured one after the other, alternating which goes first, and the ratios
// baseline / current are reported.
import { Worker } from 'node:worker_threads';
import os from 'node:os';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { testEnv, adminKubeConfig, deleteOwnedNamespaces, freshNamespace, installOurCRDs, stopTestEnv } from '../test/e2e/env/index.ts';
import { KubeClient, type KubeObject } from '../src/runtime/kube.ts';
import { GVRs } from '../src/runtime/gvr.ts';
import { PATHS } from '../src/webhook/config.ts';
import { generateCA } from '../src/webhook/certs.ts';
import { RESULTS_DIR, parseFlags, revOf, sourceOfRef } from './lib.ts';
import type { LoadResult, LoadRun } from './webhook-load.ts';
import type { TargetCounts, TargetData, TargetReady } from './webhook-target.ts';

const flags = parseFlags(process.argv.slice(2));
const baselineRef = flags.get('baseline');
const RATES = (process.env.BENCH_RATES ?? '200,1000').split(',').map(Number).filter((n) => n > 0);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
// Long enough for the JIT and every cache (access reviews, facts, inventory) to warm before figures count,
// and, run at each rate before it is measured, for the client's pool of keep-alive connections to grow to
// what the rate needs: measured straight after a 100 req/s warm-up, every one of the slowest 1 % at
// 1,000 req/s fell in the run's first second (TLS handshakes of the new connections queued behind each
// other), the connection set-up of a rate jump rather than the webhook's steady state. An API server
// keeps its connections to a webhook alive the same way.
const WARMUP_SECONDS = 2;
// Distinct reviews per run (uids, the four tenants, the 50 VM ids, the kinds' mix all cycle within it).
const BODIES = 400;
const PIN = flags.has('pin');

const env = await testEnv();
await installOurCRDs();
const client = new KubeClient(await adminKubeConfig());
const ns = await freshNamespace('bench-wh');
const className = `bench-fast-${ns}`;
await client.create(GVRs.StorageClass, { metadata: { name: className }, provisioner: 'example.com/none', volumeBindingMode: 'Immediate' } as KubeObject);
await client.create(GVRs.VMImportSource, {
  metadata: { name: 'vc', namespace: ns },
  spec: { type: 'vsphere', url: 'https://vc.example/sdk', credentials: { username: 'u@vsphere.local', password: 'p', insecureSkipVerify: true } },
} as KubeObject);
await client.patch(GVRs.VMImportSource, ns, 'vc', { status: { provider: { uid: 'p-bench' }, conditions: [{ type: 'Ready', status: 'True', reason: 'Connected', message: 'connected', lastTransitionTime: new Date().toISOString() }] } }, 'merge', { subresource: 'status' });

interface Target {
  name: 'current' | 'baseline';
  port: number;
  caPEM: string;
  /** The webhook's thread: its inventory calls, API requests and CPU time so far. */
  counts(): Promise<TargetCounts>;
  stop(): Promise<void>;
}

/** A webhook in its own worker thread (bench/webhook-target.ts), started from the source tree at `root`. */
async function target(name: Target['name'], root: string): Promise<Target> {
  // Named, so --pin finds its thread in /proc (Node names a worker's thread after it).
  const w = new Worker(new URL('./webhook-target.ts', import.meta.url), { name: `webhook-${name}`, workerData: { root, kubeconfigPath: env.admin.kubeconfigPath } satisfies TargetData });
  const next = <T>(type: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const onMessage = (m: { type: string }) => {
        if (m.type !== type) return;
        w.off('message', onMessage);
        w.off('error', reject);
        resolve(m as T);
      };
      w.on('message', onMessage);
      w.once('error', reject);
    });
  const ready = await next<TargetReady>('ready');
  return {
    name,
    port: ready.port,
    caPEM: ready.caPEM,
    counts() {
      const got = next<TargetCounts>('counts');
      w.postMessage({ type: 'counts' });
      return got;
    },
    async stop() {
      const stopped = next('stopped');
      w.postMessage({ type: 'stop' });
      await stopped;
      await w.terminate();
    },
  };
}

const targets: Target[] = [await target('current', join(dirname(fileURLToPath(import.meta.url)), '..'))];
if (baselineRef) targets.push(await target('baseline', sourceOfRef(baselineRef)));
const ca = generateCA({ commonName: 'bench', validityMs: 86_400_000 });

let seq = 0;
function body(): { path: string; text: string; kind: string } {
  const n = seq++;
  const uid = `bench-${n}`;
  const gvk = (kind: string) => ({ group: 'forklift.cozystack.io', version: 'v1alpha1', kind });
  // Who asks, as the API server says: a review without a user gets the structural checks only (the
  // webhook tells facts only to a user who may read the namespace's imports), so the figures would miss
  // the cluster and inventory reads. Four tenants, each allowed (their access reviews are cached).
  const userInfo = { username: `bench-tenant-${n % 4}`, uid: `u-${n % 4}`, groups: ['system:masters', 'system:authenticated'] };
  // A mix: valid tasks (every fact read), a denied task, and sources (PEM parsing).
  if (n % 4 === 3) {
    const object = { metadata: { name: 's', namespace: ns }, spec: { type: 'vsphere', url: 'https://vc.example/sdk', credentials: { username: 'u@vsphere.local', password: 'p', caCert: ca.certPEM } } };
    return { path: PATHS.validateSource, kind: 'source', text: JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid, kind: gvk('VMImportSource'), operation: 'CREATE', namespace: ns, userInfo, object } }) };
  }
  const storageClass = n % 4 === 2 ? 'no-such-class' : className;
  const object = { metadata: { name: 't', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass, vms: [{ id: `vm-${n % 50}` }, { id: `vm-${(n % 50) + 100}`, name: 'db' }] } };
  return { path: PATHS.validateTask, kind: n % 4 === 2 ? 'task-denied' : 'task-admitted', text: JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid, kind: gvk('VMImportTask'), operation: 'CREATE', namespace: ns, userInfo, object } }) };
}

function pct(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

interface RunFigures {
  rate: number;
  seconds: number;
  sent: number;
  ok: number;
  errors: number;
  errorReasons: Record<string, number>;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  achievedRate: number;
  /** Inventory calls the webhook made during the run, per review. */
  inventoryCallsPerReview: number;
  /**
   * CPU time of the webhook's thread per review (process.threadCpuUsage of the main thread; the client
   * runs in its own thread). Unlike latency, a loaded machine barely moves it: compare this first.
   */
  cpuMsPerReview: number;
  /** Requests to the API server per review (access reviews, cluster reads and their re-checks). */
  apiRequestsPerReview: number;
  /**
   * Latency by kind of review: admitted tasks (every fact read, from the cache when fresh), denied tasks
   * (a denial resting on a cached fact re-reads it from the API server first) and sources.
   */
  byKind: Record<string, { n: number; p50Ms: number; p99Ms: number; maxMs: number }>;
  /** The slowest 1 % of reviews by the second of the run they were due in (how many in each second). */
  slowestBySecond: number[];
  /**
   * The longest stall of each thread's event loop during the run (perf_hooks.monitorEventLoopDelay, 5 ms
   * resolution): a stall of the webhook's thread holds every review in it; the client's delays the sends
   * and reads and is measured as latency too. Tells which side a tail comes from.
   */
  maxStallMs: { webhook: number; client: number };
}

// The client runs in a worker thread (bench/webhook-load.ts): in the webhook's own thread, at 1,000 req/s
// the client's TLS and JSON work took the event loop from the server and was measured as its latency.
const loader = new Worker(new URL('./webhook-load.ts', import.meta.url), { name: 'bench-client' });
loader.unref();

/** Every process started below `pid` (the control plane's etcd, kube-apiserver, kube-controller-manager). */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      // Field 4 of /proc/<pid>/stat, after the command in parentheses (which may hold spaces).
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone */
    }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const [c, pp] of parent) {
      if (pp !== p) continue;
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

/**
 * --pin: the webhooks' threads on the last CPU, every other thread of this process (the client's, the
 * main one, V8's and libuv's) and the control plane on the others, with taskset (util-linux). What a pod
 * with a CPU of its own sees: on a shared 2-core machine the webhook's thread otherwise waits for a core
 * that kube-apiserver and etcd hold, and that wait is most of its tail.
 */
function pinThreads(): { webhookCpu: number; otherCpus: string; threads: Record<string, string> } {
  const n = os.cpus().length;
  if (n < 2) throw new Error('--pin needs at least 2 CPUs');
  const webhookCpu = n - 1;
  const otherCpus = n === 2 ? '0' : `0-${n - 2}`;
  const threads: Record<string, string> = {};
  for (const tid of readdirSync('/proc/self/task')) {
    const comm = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
    const cpus = comm.startsWith('webhook-') ? String(webhookCpu) : otherCpus;
    execFileSync('taskset', ['-p', '-c', cpus, tid], { stdio: 'ignore' });
    threads[`${comm} ${tid}`] = cpus;
  }
  for (const pid of descendants(process.pid)) {
    execFileSync('taskset', ['-a', '-p', '-c', otherCpus, String(pid)], { stdio: 'ignore' });
    threads[`${readFileSync(`/proc/${pid}/comm`, 'utf8').trim()} ${pid} (all threads)`] = otherCpus;
  }
  return { webhookCpu, otherCpus, threads };
}
const pinned = PIN ? pinThreads() : undefined;
if (pinned) console.log(`pinned: webhook threads on CPU ${pinned.webhookCpu}, everything else on ${pinned.otherCpus}: ${JSON.stringify(pinned.threads)}`);

async function run(t: Target, rate: number, seconds: number): Promise<RunFigures> {
  const before = await t.counts();
  const total = Math.round(rate * seconds);
  // The client cycles through at most BODIES distinct reviews: sending it one per request (10,000 at
  // 1,000 req/s, ~8 MB to clone into its thread) made it collect that garbage in the run's first second,
  // a 40 ms stall of the client measured as the webhook's p99.
  const msg: LoadRun = { type: 'run', port: t.port, caPEM: t.caPEM, rate, seconds, bodies: Array.from({ length: Math.min(total, BODIES) }, body) };
  const r = await new Promise<LoadResult>((resolve, reject) => {
    loader.once('message', resolve);
    loader.once('error', reject);
    loader.postMessage(msg);
  });
  loader.removeAllListeners('error');
  const after = await t.counts();
  const lat = r.latenciesMs.sort((a, b) => a - b);
  const r2 = (x: number) => Math.round(x * 100) / 100;
  const byKind = Object.fromEntries(
    Object.entries(r.latenciesByKind).map(([k, xs]) => {
      const s = xs.sort((a, b) => a - b);
      return [k, { n: s.length, p50Ms: r2(pct(s, 50)), p99Ms: r2(pct(s, 99)), maxMs: r2(s[s.length - 1] ?? NaN) }];
    }),
  );
  return { rate, seconds, sent: total, ok: lat.length, errors: r.errors, errorReasons: r.errorReasons, p50Ms: r2(pct(lat, 50)), p99Ms: r2(pct(lat, 99)), maxMs: r2(lat[lat.length - 1] ?? NaN), achievedRate: r2(total / r.elapsedSeconds), inventoryCallsPerReview: r2((after.inventoryCalls - before.inventoryCalls) / total), cpuMsPerReview: Math.round(((after.cpuMicros - before.cpuMicros) / 1000 / total) * 1000) / 1000, apiRequestsPerReview: Math.round(((after.apiRequests - before.apiRequests) / total) * 1000) / 1000, byKind, slowestBySecond: Array.from({ length: Math.ceil(seconds) }, (_, i) => r.slowestAtMs.filter((at) => Math.floor(at / 1000) === i).length), maxStallMs: { webhook: after.maxStallMs, client: r.clientMaxStallMs } };
}

const loadBefore = Math.round(os.loadavg()[0]! * 100) / 100;
for (const t of targets) await run(t, 100, WARMUP_SECONDS);
const results: Array<{ rate: number; current: RunFigures; baseline?: RunFigures; ratio?: { p50: number; p99: number; max: number; cpuPerReview: number } }> = [];
const show = (name: string, r: RunFigures): string =>
  `webhook ${name} @ ${r.rate} req/s (load average ${os.loadavg()[0]!.toFixed(2)} on ${os.cpus().length} CPUs) for ${r.seconds} s: p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, max ${r.maxMs} ms (${r.ok}/${r.sent} ok, ${r.errors} errors, achieved ${r.achievedRate} req/s, ${r.inventoryCallsPerReview} inventory calls per review, ${r.cpuMsPerReview} CPU ms and ${r.apiRequestsPerReview} API requests per review; p99 by kind: ${Object.entries(r.byKind).map(([k, x]) => `${k} ${x.p99Ms} ms`).join(', ')}; slowest 1 % by second: ${r.slowestBySecond.join(' ')}; longest stall: webhook ${r.maxStallMs.webhook} ms, client ${r.maxStallMs.client} ms)${r.errors ? ` errors: ${JSON.stringify(r.errorReasons)}` : ''}`;
for (const [i, rate] of RATES.entries()) {
  // Alternate which webhook goes first, so neither always meets the machine's load first.
  const order = i % 2 ? [...targets].reverse() : targets;
  const got: Partial<Record<Target['name'], RunFigures>> = {};
  for (const t of order) {
    await run(t, rate, WARMUP_SECONDS);
    got[t.name] = await run(t, rate, SECONDS);
    console.log(show(t.name, got[t.name]!));
  }
  const cur = got.current!;
  const base = got.baseline;
  const r2 = (x: number) => Math.round(x * 100) / 100;
  results.push({ rate, current: cur, ...(base ? { baseline: base, ratio: { p50: r2(base.p50Ms / cur.p50Ms), p99: r2(base.p99Ms / cur.p99Ms), max: r2(base.maxMs / cur.maxMs), cpuPerReview: r2(base.cpuMsPerReview / cur.cpuMsPerReview) } } : {}) });
  if (base) console.log(`webhook @ ${rate} req/s: baseline / current p99 = ${results.at(-1)!.ratio!.p99}×, CPU per review = ${results.at(-1)!.ratio!.cpuPerReview}×`);
}

const out = {
  benchmark: 'webhook admission latency (HTTPS, open loop, mixed VMImportTask/VMImportSource reviews, cluster reads cached)',
  ...(baselineRef ? { baseline: { ref: baselineRef, rev: revOf(baselineRef) } } : {}),
  date: new Date().toISOString(),
  node: process.version,
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model,
  // The machine is shared: a high load average explains a long tail better than the webhook does.
  loadAverage1m: { before: loadBefore, after: Math.round(os.loadavg()[0]! * 100) / 100 },
  kubeApiServer: env.server,
  ...(pinned ? { pinned: { webhookCpu: pinned.webhookCpu, otherCpus: pinned.otherCpus } } : {}),
  results,
};
const file = join(RESULTS_DIR, `webhook${PIN ? '-pinned' : ''}${process.argv.includes('--quick') ? '.quick' : ''}.json`);
mkdirSync(RESULTS_DIR, { recursive: true });
writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
console.log(`wrote ${file}`);

loader.postMessage({ type: 'stop' });
for (const t of targets) await t.stop();
await client.delete(GVRs.StorageClass, undefined, className).catch(() => undefined);
// On a shared plane (MC_TESTENV: the benchmark smoke test hands on its own) its namespace goes with it, as
// an e2e file's does; its source carries no finalizer (no controller runs here), so it goes at once.
await deleteOwnedNamespaces(client, { waitMs: 30_000 });
client.close();
// The private control plane (no MC_TESTENV) is stopped here rather than left to `beforeExit`; with
// nothing else pending the process then ends by itself.
await stopTestEnv();
