// The REST client's deadlines and fencing, against a local HTTP server that answers, or never does.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { queryObjects } from 'node:v8';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { FencedError, KubeClient } from '../../../src/runtime/kube.ts';
import { GVRs } from '../../../src/runtime/gvr.ts';

let server: http.Server;
let url: string;
const received: string[] = [];

before(async () => {
  server = http.createServer((req, res) => {
    received.push(`${req.method} ${req.url}`);
    // /hang never answers: only a client-side deadline ends the request.
    if (req.url?.includes('/hang')) return;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'ns' } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** Resolves once the server has received a request for `path` (the request is then in flight). */
async function arrived(path: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!received.some((r) => r.endsWith(path))) {
    if (Date.now() > deadline) throw new Error(`no request for ${path} reached the server`);
    await new Promise((r) => setImmediate(r));
  }
}

function client(timeoutMs = 30_000): KubeClient {
  const kc = new KubeConfig();
  kc.loadFromOptions({ clusters: [{ name: 'c', server: url, skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
  return new KubeClient(kc, { timeoutMs });
}

test('a request that gets no answer ends at its deadline', async () => {
  const c = client(300);
  const t0 = performance.now();
  await assert.rejects(c.request('GET', '/api/v1/hang'), /timed out after 300 ms/);
  assert.ok(performance.now() - t0 < 2_000);
  c.close();
});

test('a fenced client sends no write (reads still go), and unfenced it writes again', async () => {
  const c = client();
  let fenced = true;
  c.setFence(() => (fenced ? 'not the leader' : undefined));
  received.length = 0;
  await assert.rejects(c.create(GVRs.ConfigMap, { metadata: { name: 'x', namespace: 'ns' } }), (e: unknown) => e instanceof FencedError && /not the leader/.test((e as Error).message));
  await assert.rejects(c.patch(GVRs.ConfigMap, 'ns', 'x', { data: {} }), FencedError);
  await assert.rejects(c.delete(GVRs.ConfigMap, 'ns', 'x'), FencedError);
  assert.ok(await c.get(GVRs.ConfigMap, 'ns', 'x'));
  // (A read may be sent twice: the client retries a read whose keep-alive connection broke.)
  assert.deepEqual([...new Set(received.map((r) => r.split(' ')[0]))], ['GET'], 'only the read reached the server');
  fenced = false;
  await c.patch(GVRs.ConfigMap, 'ns', 'x', { data: {} });
  assert.equal(received.at(-1)?.split(' ')[0], 'PATCH');
  c.close();
});

test('a write decided before the fence closed is refused when its connection comes up', async () => {
  const c = client();
  let fenced = false;
  c.setFence(() => (fenced ? 'lease expired' : undefined));
  received.length = 0;
  // The fence closes after the write was accepted for sending but before a (new) connection is up.
  const p = c.create(GVRs.ConfigMap, { metadata: { name: 'y', namespace: 'ns' } });
  fenced = true;
  await assert.rejects(p, FencedError);
  assert.deepEqual(received, [], 'nothing reached the server');
  c.close();
});

test('abortInFlight cancels what is in flight; later requests go through', async () => {
  const c = client();
  received.length = 0;
  const hanging = c.request('GET', '/api/v1/hang');
  await arrived('/api/v1/hang');
  c.abortInFlight();
  await assert.rejects(hanging, /ConnectionError|abort/i);
  assert.ok(await c.get(GVRs.ConfigMap, 'ns', 'x'));
  c.close();
});

test('a finished request leaves nothing of its deadline or cancel behind (no timer, signal or listener for the rest of its deadline)', async () => {
  const c = client();
  await c.get(GVRs.ConfigMap, 'ns', 'x'); // connection up, lazy state built
  // queryObjects collects garbage first: what it counts is what something still holds.
  const signals = (): number => queryObjects(AbortSignal, { format: 'count' }) as number;
  const before = signals();
  for (let i = 0; i < 300; i++) await c.get(GVRs.ConfigMap, 'ns', 'x');
  const grown = signals() - before;
  assert.ok(grown < 30, `${grown} AbortSignals outlived 300 finished requests`);
  // ... and cancelling in-flight work later still works (the listener is per request, not lost).
  received.length = 0;
  const hanging = c.request('GET', '/api/v1/hang');
  await arrived('/api/v1/hang');
  c.abortInFlight();
  await assert.rejects(hanging, /ConnectionError|abort/i);
  c.close();
});
