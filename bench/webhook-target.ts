// One webhook under test in bench/webhook.ts, in its own worker thread: its own event loop and its own
// heap, as the webhook has in its pod. In the benchmark's main thread it shared the loop with the other
// webhook (current and baseline side by side) and with the benchmark's own work — building the reviews
// of a run (10,000 at 1,000 req/s) and the garbage that leaves — so a collection of that garbage stalled
// the webhook and was measured as its latency. The thread starts the webhook of the given source tree
// (this checkout's src/, or a baseline ref's extracted copy) on an answer-at-once inventory, and counts
// the inventory calls, the API requests and its own CPU time.
import { parentPort, threadId, workerData } from 'node:worker_threads';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../src/runtime/kube.ts';
import type { startTestWebhook } from '../src/webhook/testkit.ts';
import type { InventoryReader } from '../src/webhook/validate-task.ts';

export interface TargetData {
  /** The source tree whose src/webhook/testkit.ts starts the webhook. */
  root: string;
  kubeconfigPath: string;
}

/** Sent once the webhook listens. */
export interface TargetReady {
  type: 'ready';
  port: number;
  caPEM: string;
}

/** The answer to `{ type: 'counts' }`: totals since the thread started. */
export interface TargetCounts {
  type: 'counts';
  inventoryCalls: number;
  apiRequests: number;
  /** This thread's CPU time (user + system), µs. */
  cpuMicros: number;
  /** The longest this webhook's event loop was held up since the previous count, ms (a review waits that long). */
  maxStallMs: number;
}

const data = workerData as TargetData;
const calls = { n: 0 };
const apiRequests = { n: 0 };
// The inventory answers at once (the figure is the webhook's own cost plus its cached cluster reads).
const inventory: InventoryReader = {
  async getVM(_p, id) {
    calls.n++;
    return { name: `vm-${id}`, host: 'host-1', disks: [{ capacity: 2 ** 35 }, { capacity: 2 ** 34 }] };
  },
  async listHosts() {
    calls.n++;
    return [{ id: 'host-1', name: '192.168.1.10' }];
  },
};

// BENCH_WEBHOOK_HEAP_PROFILE=DIR: V8's sampling heap profiler over this thread for its whole life (what
// the webhook allocates, by stack; garbage included, so the young generation's churn shows), written as
// DIR/webhook-<thread>.heapprofile (Chrome DevTools' format) when the thread stops.
const heapProfileDir = process.env.BENCH_WEBHOOK_HEAP_PROFILE;
const profiler = heapProfileDir ? new Session() : undefined;
if (profiler) {
  profiler.connect();
  // One sample per 8 KiB allocated on average; includeObjectsCollectedByMajorGC/MinorGC keep the garbage.
  await profiler.post('HeapProfiler.startSampling', { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
}

const stalls = monitorEventLoopDelay({ resolution: 5 });
stalls.enable();
const kc = new KubeConfig();
kc.loadFromFile(data.kubeconfigPath);
// This checkout's client for both webhooks (it counts the requests), as before the webhooks had threads.
const own = new KubeClient(kc, { observe: () => apiRequests.n++ });
const { startTestWebhook: start } = (await import(pathToFileURL(join(data.root, 'src/webhook/testkit.ts')).href)) as { startTestWebhook: typeof startTestWebhook };
const wh = await start({ client: own, inventory, install: false });

parentPort!.on('message', async (m: { type: 'counts' | 'stop' }) => {
  if (m.type === 'counts') {
    const cpu = process.threadCpuUsage();
    const maxStallMs = Math.round(stalls.max / 1e4) / 100;
    stalls.reset();
    parentPort!.postMessage({ type: 'counts', inventoryCalls: calls.n, apiRequests: apiRequests.n, cpuMicros: cpu.user + cpu.system, maxStallMs } satisfies TargetCounts);
  } else {
    if (profiler) {
      const { profile } = await profiler.post('HeapProfiler.stopSampling');
      writeFileSync(join(heapProfileDir!, `webhook-${threadId}.heapprofile`), JSON.stringify(profile));
      profiler.disconnect();
    }
    await wh.stop();
    own.close();
    parentPort!.postMessage({ type: 'stopped' });
    parentPort!.close();
  }
});
parentPort!.postMessage({ type: 'ready', port: wh.server.port, caPEM: wh.caPEM } satisfies TargetReady);
