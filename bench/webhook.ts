// Admission latency: p50 / p99 / max of AdmissionReviews answered by the webhook over HTTPS at fixed
// request rates (open loop: requests are sent on schedule whether or not earlier ones have returned, so
// a slow answer cannot hide the ones queued behind it), and the inventory calls the reviews cost. Prints
// the figures and writes bench/results/webhook.json. Asserts nothing about time.
//
//   node bench/webhook.ts                      # 200 and 1000 req/s, 10 s each
//   node bench/webhook.ts --baseline main      # the same, side by side with the webhook of git ref `main`
//   BENCH_RATES=50,200,400 BENCH_SECONDS=20 node bench/webhook.ts
//   node bench/webhook.ts --quick              # writes webhook.quick.json (never replaces the figures)
//
// With --baseline, the webhook code of that ref (its src/, extracted with `git archive` into .testenv/)
// runs as a second server in the same process, against the same API server and the same inventory; at
// each rate the two are measured one after the other, alternating which goes first, and the ratios
// baseline / current are reported.
import https from 'node:https';
import os from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { testEnv, adminKubeConfig, freshNamespace, installOurCRDs, stopTestEnv } from '../test/e2e/env/index.ts';
import { KubeClient, type KubeObject } from '../src/runtime/kube.ts';
import { GVRs } from '../src/runtime/gvr.ts';
import { PATHS } from '../src/webhook/config.ts';
import { generateCA } from '../src/webhook/certs.ts';
import { startTestWebhook } from '../src/webhook/testkit.ts';
import type { InventoryReader } from '../src/webhook/validate-task.ts';
import { RESULTS_DIR, parseFlags, revOf, sourceOfRef } from './lib.ts';

const flags = parseFlags(process.argv.slice(2));
const baselineRef = flags.get('baseline');
const RATES = (process.env.BENCH_RATES ?? '200,1000').split(',').map(Number).filter((n) => n > 0);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = 1;

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

// The inventory answers at once (the figure is the webhook's own cost plus its cached cluster reads),
// and counts the calls each webhook makes.
function countingInventory(): { inventory: InventoryReader; calls: { n: number } } {
  const calls = { n: 0 };
  return {
    calls,
    inventory: {
      async getVM(_p, id) {
        calls.n++;
        return { name: `vm-${id}`, host: 'host-1', disks: [{ capacity: 2 ** 35 }, { capacity: 2 ** 34 }] };
      },
      async listHosts() {
        calls.n++;
        return [{ id: 'host-1', name: '192.168.1.10' }];
      },
    },
  };
}

interface Target {
  name: 'current' | 'baseline';
  port: number;
  agent: https.Agent;
  calls: { n: number };
  stop(): Promise<void>;
}

async function target(name: Target['name'], start: typeof startTestWebhook): Promise<Target> {
  const { inventory, calls } = countingInventory();
  const wh = await start({ client, inventory, install: false });
  const agent = new https.Agent({ keepAlive: true, maxSockets: 256, ca: wh.caPEM });
  return {
    name,
    port: wh.server.port,
    agent,
    calls,
    async stop() {
      agent.destroy();
      await wh.stop();
    },
  };
}

/** The webhook of git ref `ref` (its src/ extracted under .testenv/). */
async function baselineStarter(ref: string): Promise<typeof startTestWebhook> {
  const mod = (await import(pathToFileURL(join(sourceOfRef(ref), 'src/webhook/testkit.ts')).href)) as { startTestWebhook: typeof startTestWebhook };
  return mod.startTestWebhook;
}

const targets: Target[] = [await target('current', startTestWebhook)];
if (baselineRef) targets.push(await target('baseline', await baselineStarter(baselineRef)));
const ca = generateCA({ commonName: 'bench', validityMs: 86_400_000 });

let seq = 0;
function body(): { path: string; text: string } {
  const n = seq++;
  const uid = `bench-${n}`;
  const gvk = (kind: string) => ({ group: 'forklift.cozystack.io', version: 'v1alpha1', kind });
  // A mix: valid tasks (every fact read), a denied task, and sources (PEM parsing).
  if (n % 4 === 3) {
    const object = { metadata: { name: 's', namespace: ns }, spec: { type: 'vsphere', url: 'https://vc.example/sdk', credentials: { username: 'u@vsphere.local', password: 'p', caCert: ca.certPEM } } };
    return { path: PATHS.validateSource, text: JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid, kind: gvk('VMImportSource'), operation: 'CREATE', namespace: ns, object } }) };
  }
  const storageClass = n % 4 === 2 ? 'no-such-class' : className;
  const object = { metadata: { name: 't', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass, vms: [{ id: `vm-${n % 50}` }, { id: `vm-${(n % 50) + 100}`, name: 'db' }] } };
  return { path: PATHS.validateTask, text: JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid, kind: gvk('VMImportTask'), operation: 'CREATE', namespace: ns, object } }) };
}

const errorReasons: Record<string, number> = {};
function fail(reason: string): false {
  errorReasons[reason] = (errorReasons[reason] ?? 0) + 1;
  return false;
}

function send(t: Target, path: string, text: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.request(
      { host: '127.0.0.1', port: t.port, path, method: 'POST', agent: t.agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }, timeout: 10_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            const r = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { response?: { uid?: string } };
            resolve(res.statusCode === 200 && typeof r.response?.uid === 'string' ? true : fail(`HTTP ${res.statusCode}`));
          } catch {
            resolve(fail('answer is not JSON'));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', (e) => resolve(fail(e.message)));
    req.end(text);
  });
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
}

async function run(t: Target, rate: number, seconds: number): Promise<RunFigures> {
  for (const k of Object.keys(errorReasons)) delete errorReasons[k];
  const callsBefore = t.calls.n;
  const total = Math.round(rate * seconds);
  const lat: number[] = [];
  let errors = 0;
  const t0 = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const b = body();
    // Latency from the scheduled send time: a stalled event loop counts against the server.
    inflight.push(
      send(t, b.path, b.text).then((ok) => {
        if (ok) lat.push(performance.now() - due);
        else errors++;
      }),
    );
  }
  await Promise.all(inflight);
  const elapsed = (performance.now() - t0) / 1000;
  lat.sort((a, b) => a - b);
  const r2 = (x: number) => Math.round(x * 100) / 100;
  return { rate, seconds, sent: total, ok: lat.length, errors, errorReasons: { ...errorReasons }, p50Ms: r2(pct(lat, 50)), p99Ms: r2(pct(lat, 99)), maxMs: r2(lat[lat.length - 1] ?? NaN), achievedRate: r2(total / elapsed), inventoryCallsPerReview: r2((t.calls.n - callsBefore) / total) };
}

const loadBefore = Math.round(os.loadavg()[0]! * 100) / 100;
for (const t of targets) await run(t, 50, WARMUP_SECONDS);
const results: Array<{ rate: number; current: RunFigures; baseline?: RunFigures; ratio?: { p50: number; p99: number; max: number } }> = [];
const show = (name: string, r: RunFigures): string =>
  `webhook ${name} @ ${r.rate} req/s (load average ${os.loadavg()[0]!.toFixed(2)} on ${os.cpus().length} CPUs) for ${r.seconds} s: p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, max ${r.maxMs} ms (${r.ok}/${r.sent} ok, ${r.errors} errors, achieved ${r.achievedRate} req/s, ${r.inventoryCallsPerReview} inventory calls per review)${r.errors ? ` errors: ${JSON.stringify(r.errorReasons)}` : ''}`;
for (const [i, rate] of RATES.entries()) {
  // Alternate which webhook goes first, so neither always meets the machine's load first.
  const order = i % 2 ? [...targets].reverse() : targets;
  const got: Partial<Record<Target['name'], RunFigures>> = {};
  for (const t of order) {
    got[t.name] = await run(t, rate, SECONDS);
    console.log(show(t.name, got[t.name]!));
  }
  const cur = got.current!;
  const base = got.baseline;
  const r2 = (x: number) => Math.round(x * 100) / 100;
  results.push({ rate, current: cur, ...(base ? { baseline: base, ratio: { p50: r2(base.p50Ms / cur.p50Ms), p99: r2(base.p99Ms / cur.p99Ms), max: r2(base.maxMs / cur.maxMs) } } : {}) });
  if (base) console.log(`webhook @ ${rate} req/s: baseline / current p99 = ${results.at(-1)!.ratio!.p99}×`);
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
  results,
};
const file = join(RESULTS_DIR, process.argv.includes('--quick') ? 'webhook.quick.json' : 'webhook.json');
mkdirSync(RESULTS_DIR, { recursive: true });
writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
console.log(`wrote ${file}`);

for (const t of targets) await t.stop();
await client.delete(GVRs.StorageClass, undefined, className).catch(() => undefined);
client.close();
// The private control plane (no MC_TESTENV) is stopped here rather than left to `beforeExit`; with
// nothing else pending the process then ends by itself.
await stopTestEnv();
