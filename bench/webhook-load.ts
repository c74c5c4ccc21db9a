// The open-loop client of bench/webhook.ts, in its own worker thread: the webhook under test keeps the
// main thread's event loop to itself, so a busy client (TLS and JSON for 1,000 req/s) is not measured as
// webhook latency. Requests leave on schedule whether or not earlier ones have returned; latency counts
// from the scheduled send time. One keep-alive agent per webhook port, kept across runs.
import https from 'node:https';
import { parentPort } from 'node:worker_threads';
import { monitorEventLoopDelay } from 'node:perf_hooks';

export interface LoadRun {
  type: 'run';
  port: number;
  caPEM: string;
  rate: number;
  seconds: number;
  /** The reviews to send, cycled in order (built once by the main thread). */
  bodies: Array<{ path: string; text: string; kind?: string }>;
}

export interface LoadResult {
  latenciesMs: number[];
  /** The same latencies by the kind of review (an admitted task, a denied one, a source). */
  latenciesByKind: Record<string, number[]>;
  /** When (ms into the run, by schedule) the slowest 1 % of requests were due: a burst at the start is connection set-up, spread out is the server. */
  slowestAtMs: number[];
  errors: number;
  errorReasons: Record<string, number>;
  elapsedSeconds: number;
  /** The longest this (client) thread's event loop was held up during the run, ms: a stall here delays sends and reads, and counts as latency. */
  clientMaxStallMs: number;
}

const agents = new Map<number, https.Agent>();

function send(agent: https.Agent, port: number, path: string, text: string, fail: (r: string) => false): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }, timeout: 10_000 },
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

async function run(m: LoadRun): Promise<LoadResult> {
  let agent = agents.get(m.port);
  if (!agent) agents.set(m.port, (agent = new https.Agent({ keepAlive: true, maxSockets: 256, ca: m.caPEM })));
  const errorReasons: Record<string, number> = {};
  const fail = (reason: string): false => {
    errorReasons[reason] = (errorReasons[reason] ?? 0) + 1;
    return false;
  };
  const total = Math.round(m.rate * m.seconds);
  const lat: number[] = [];
  const byKind: Record<string, number[]> = {};
  const timed: Array<[number, number]> = [];
  let errors = 0;
  const inflight: Promise<void>[] = [];
  const stalls = monitorEventLoopDelay({ resolution: 5 });
  stalls.enable();
  const t0 = performance.now();
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / m.rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const b = m.bodies[i % m.bodies.length]!;
    inflight.push(
      send(agent, m.port, b.path, b.text, fail).then((ok) => {
        if (ok) {
          const ms = performance.now() - due;
          lat.push(ms);
          timed.push([due - t0, ms]);
          (byKind[b.kind ?? 'review'] ??= []).push(ms);
        } else errors++;
      }),
    );
  }
  await Promise.all(inflight);
  stalls.disable();
  const slowestAtMs = timed
    .sort((a, b) => b[1] - a[1])
    .slice(0, Math.ceil(timed.length / 100))
    .map(([at]) => Math.round(at));
  return { latenciesMs: lat, latenciesByKind: byKind, slowestAtMs, errors, errorReasons, elapsedSeconds: (performance.now() - t0) / 1000, clientMaxStallMs: Math.round(stalls.max / 1e4) / 100 };
}

parentPort?.on('message', (m: LoadRun | { type: 'stop' }) => {
  if (m.type === 'stop') {
    for (const a of agents.values()) a.destroy();
    parentPort?.close();
    return;
  }
  void run(m).then((r) => parentPort?.postMessage(r));
});
