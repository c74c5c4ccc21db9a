// Admission latency: p50 / p99 / max of AdmissionReviews answered by the webhook over HTTPS at fixed
// request rates (open loop: requests are sent on schedule whether or not earlier ones have returned, so
// a slow answer cannot hide the ones queued behind it). Prints the figures and writes
// bench/results/webhook.json. Asserts nothing about time.
//
//   node bench/webhook.ts                      # 50 and 200 req/s, 10 s each
//   BENCH_RATES=50,200,400 BENCH_SECONDS=20 node bench/webhook.ts
//   node bench/webhook.ts --quick              # writes webhook.quick.json (never replaces the figures)
import https from 'node:https';
import os from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { testEnv, adminKubeConfig, freshNamespace, installOurCRDs, stopTestEnv } from '../test/e2e/env/index.ts';
import { RESULTS_DIR } from './lib.ts';
import { KubeClient, type KubeObject } from '../src/runtime/kube.ts';
import { GVRs } from '../src/runtime/gvr.ts';
import { PATHS } from '../src/webhook/config.ts';
import { generateCA } from '../src/webhook/certs.ts';
import { startTestWebhook } from '../src/webhook/testkit.ts';
import type { InventoryReader } from '../src/webhook/validate-task.ts';

const RATES = (process.env.BENCH_RATES ?? '50,200').split(',').map(Number).filter((n) => n > 0);
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

// The inventory answers at once: the figure is the webhook's own cost plus its (cached) cluster reads.
const inventory: InventoryReader = {
  async getVM(_p, id) {
    return { name: `vm-${id}`, host: 'host-1', disks: [{ capacity: 2 ** 35 }, { capacity: 2 ** 34 }] };
  },
  async listHosts() {
    return [{ id: 'host-1', name: '192.168.1.10' }];
  },
};
const wh = await startTestWebhook({ client, inventory, install: false });
const agent = new https.Agent({ keepAlive: true, maxSockets: 256, ca: wh.caPEM });
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

function send(path: string, text: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.request(
      { host: '127.0.0.1', port: wh.server.port, path, method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }, timeout: 10_000 },
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

async function run(rate: number, seconds: number): Promise<{ rate: number; seconds: number; sent: number; ok: number; errors: number; errorReasons: Record<string, number>; p50Ms: number; p99Ms: number; maxMs: number; achievedRate: number }> {
  for (const k of Object.keys(errorReasons)) delete errorReasons[k];
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
      send(b.path, b.text).then((ok) => {
        if (ok) lat.push(performance.now() - due);
        else errors++;
      }),
    );
  }
  await Promise.all(inflight);
  const elapsed = (performance.now() - t0) / 1000;
  lat.sort((a, b) => a - b);
  const r2 = (x: number) => Math.round(x * 100) / 100;
  return { rate, seconds, sent: total, ok: lat.length, errors, errorReasons: { ...errorReasons }, p50Ms: r2(pct(lat, 50)), p99Ms: r2(pct(lat, 99)), maxMs: r2(lat[lat.length - 1] ?? NaN), achievedRate: r2(total / elapsed) };
}

const loadBefore = Math.round(os.loadavg()[0]! * 100) / 100;
await run(50, WARMUP_SECONDS);
const results = [];
for (const rate of RATES) {
  const r = await run(rate, SECONDS);
  results.push(r);
  console.log(`webhook @ ${r.rate} req/s (load average ${os.loadavg()[0]!.toFixed(2)} on ${os.cpus().length} CPUs) for ${r.seconds} s: p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, max ${r.maxMs} ms (${r.ok}/${r.sent} ok, ${r.errors} errors, achieved ${r.achievedRate} req/s)${r.errors ? ` errors: ${JSON.stringify(r.errorReasons)}` : ''}`);
}

const out = {
  benchmark: 'webhook admission latency (HTTPS, open loop, mixed VMImportTask/VMImportSource reviews, cluster reads cached)',
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

agent.destroy();
await wh.stop();
await client.delete(GVRs.StorageClass, undefined, className).catch(() => undefined);
client.close();
// The private control plane (no MC_TESTENV) is stopped here rather than left to `beforeExit`; with
// nothing else pending the process then ends by itself.
await stopTestEnv();
