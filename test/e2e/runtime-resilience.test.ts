// The runtime against what a real cluster does to a client: the real API server, reached through the
// fault proxy (test/e2e/chaos/faultproxy.ts), which answers a chosen request as kube-apiserver answers it
// in trouble — a resourceVersion too large after an etcd restore, a watch that fails with a Status, API
// Priority and Fairness shedding load with 429 — and forwards everything else to the real server.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { freshNamespace, kubeConfigFor, testEnv, waitFor, writeKubeconfig } from './env/index.ts';
import { KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { TokenBucket } from '../../src/runtime/ratelimit.ts';
import { NO_FAULTS, TOO_LARGE_RESOURCE_VERSION, startFaultProxy, type FaultProxy } from './chaos/faultproxy.ts';

let proxy: FaultProxy;
let admin: KubeClient;
let kubeconfig: string;
const informers: Informer[] = [];
const clients: KubeClient[] = [];

before(async () => {
  const env = await testEnv();
  proxy = await startFaultProxy(env.server, env.caPEM, NO_FAULTS);
  kubeconfig = join(env.dir, `via-fault-proxy-resilience-${process.pid}.kubeconfig`);
  writeKubeconfig(kubeconfig, proxy.url, proxy.caPEM, env.admin.name, env.admin.token);
  admin = new KubeClient(kubeConfigFor(env.admin.kubeconfigPath), { fieldManager: 'e2e' });
});

after(async () => {
  await Promise.all(informers.map((i) => i.stop()));
  for (const c of [...clients, admin]) c?.close();
  await proxy?.close();
});

function viaProxy(o: ConstructorParameters<typeof KubeClient>[1] = {}): KubeClient {
  const c = new KubeClient(kubeConfigFor(kubeconfig), { fieldManager: 'e2e', ...o });
  clients.push(c);
  return c;
}

async function configMapInformer(ns: string, c = viaProxy()): Promise<Informer> {
  // Liveness short enough that a re-watch happens within the test, not so short that it races the faults.
  const inf = new Informer(c, GVRs.ConfigMap, { namespace: ns, minBackoffMs: 50, maxBackoffMs: 500, liveness: { minTimeoutSeconds: 30, maxTimeoutSeconds: 40, graceMs: 5_000 } });
  informers.push(inf);
  inf.start();
  await inf.waitForSync();
  return inf;
}

const cm = (ns: string, name: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { k: name } });
const listsOf = (ns: string): string[] => proxy.log.filter((r) => r.method === 'GET' && !/[?&]watch=/.test(r.url) && r.url.startsWith(`/api/v1/namespaces/${ns}/configmaps`)).map((r) => r.url);

test('an informer lists first from the watch cache (resourceVersion=0), not with a quorum read from etcd', async () => {
  const ns = await freshNamespace('res-cache');
  await admin.create(GVRs.ConfigMap, cm(ns, 'a'));
  const inf = await configMapInformer(ns);
  const [first] = listsOf(ns);
  assert.match(first ?? '', /[?&]resourceVersion=0(&|$)/, `the first list: ${first}`);
  assert.ok(inf.store.get(ns, 'a'), 'and the cache holds what was there');
});

/** An informer whose watches the proxy cuts every 300 ms, so each re-watch meets the next injected answer. */
async function cutWatchInformer(ns: string): Promise<Informer> {
  proxy.setRates({ ...NO_FAULTS, watchCutMs: 300 });
  return await configMapInformer(ns);
}

const collection = (ns: string): RegExp => new RegExp(`^/api/v1/namespaces/${ns}/configmaps$`);

test('a watch whose resourceVersion is too large (etcd restored from a backup) relists with a consistent read and sees every change since', async () => {
  const ns = await freshNamespace('res-toolarge');
  try {
    const inf = await cutWatchInformer(ns);
    const listsBefore = inf.lists;
    // The API server now has an older history than the informer saw: its next watch is answered "too
    // large", and so would any list "not older than" that version; only a consistent read succeeds.
    proxy.failNext({ method: 'GET', path: collection(ns), query: /watch=true/, code: 504, status: TOO_LARGE_RESOURCE_VERSION, asWatchEvent: true });
    proxy.failNext({ method: 'GET', path: collection(ns), query: /^(?!.*watch=).*resourceVersion=[1-9]/, code: 504, status: TOO_LARGE_RESOURCE_VERSION, times: 3 });
    await waitFor('the injected too-large answer to a re-watch', () => (proxy.counts['targeted:504'] ?? 0) >= 1);
    await admin.create(GVRs.ConfigMap, cm(ns, 'after-fault'));
    await waitFor('the informer to relist and see the change made after the fault', () => inf.store.get(ns, 'after-fault'), { timeoutMs: 30_000 });
    assert.ok(inf.lists > listsBefore, 'it relisted');
    assert.equal(inf.listedAt.at(-1), '', `the relist was a consistent read (lists asked at: ${inf.listedAt.join(', ')})`);
    assert.ok(listsOf(ns).some((u) => !/resourceVersion=/.test(u)), `the API server got a list without resourceVersion: ${listsOf(ns).join(' ')}`);
  } finally {
    proxy.setRates(NO_FAULTS);
  }
});

test('a watch ended by a non-retriable Status (500) relists, and a relist refused as too large falls back to a consistent read', async () => {
  const ns = await freshNamespace('res-watch500');
  try {
    const inf = await cutWatchInformer(ns);
    const listsBefore = inf.lists;
    const before = proxy.counts['targeted:500'] ?? 0;
    proxy.failNext({ method: 'GET', path: collection(ns), query: /watch=true/, code: 500, status: { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 500, reason: 'InternalError', message: 'etcdserver: leader changed (injected)' }, asWatchEvent: true });
    proxy.failNext({ method: 'GET', path: collection(ns), query: /^(?!.*watch=).*resourceVersion=[1-9]/, code: 504, status: TOO_LARGE_RESOURCE_VERSION });
    await waitFor('the injected watch error', () => (proxy.counts['targeted:500'] ?? 0) > before);
    await waitFor('the informer to relist', () => inf.lists > listsBefore, { timeoutMs: 30_000 });
    const asked = inf.listedAt.slice(-2);
    assert.match(asked[0] ?? '', /^[1-9]\d*$/, `the relist first asked not older than the last version (asked: ${inf.listedAt.join(', ')})`);
    assert.equal(asked[1], '', 'then, refused as too large, a consistent read');
    await admin.create(GVRs.ConfigMap, cm(ns, 'later'));
    await waitFor('the cache to follow changes after the relist', () => inf.store.get(ns, 'later'));
  } finally {
    proxy.setRates(NO_FAULTS);
  }
});

test('a client never sends more than its QPS and burst allow, and the time requests waited is counted', async () => {
  const ns = await freshNamespace('res-qps');
  const waits: number[] = [];
  const c = viaProxy({ limiter: new TokenBucket(10, 5), onThrottled: (ms) => waits.push(ms) });
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 25 }, (_, i) => c.create(GVRs.ConfigMap, cm(ns, `q${i}`))));
  const elapsed = performance.now() - t0;
  const arrived = proxy.log.filter((r) => r.method === 'POST' && r.url.startsWith(`/api/v1/namespaces/${ns}/configmaps`)).map((r) => r.at);
  assert.equal(arrived.length, 25, 'each create sent once');
  // 5 at once, the other 20 at 10/s: at least 2 s, and the API server never saw more than 5 + 10 in a second.
  assert.ok(elapsed >= 1_900, `25 requests at 10/s with a burst of 5 took ${Math.round(elapsed)} ms`);
  const busiest = Math.max(...arrived.map((t) => arrived.filter((u) => u >= t && u < t + 1_000).length));
  // The limit lets at most burst + qps (15) leave in any second; the proxy, on this process's event loop,
  // stamps arrivals late and bunched when the machine is loaded (18 seen), so it is given a margin that
  // still tells a limited client from an unlimited one (all 25 in the first second).
  assert.ok(busiest <= 20, `at most burst + qps requests arrive in any second, give or take the proxy's stamping (busiest: ${busiest})`);
  assert.equal(waits.length, 20, 'the 20 beyond the burst waited');
  assert.ok(Math.max(...waits) >= 1_800, `the last waited ${Math.round(Math.max(...waits))} ms`);
});

test('an API server shedding load with 429 is retried after its Retry-After and every request finally succeeds', async () => {
  const ns = await freshNamespace('res-apf');
  const c = viaProxy({ limiter: new TokenBucket(50, 50) });
  // The priority level admits 20/s; the client bursts 40 at once. On a loaded machine the 40 can reach the
  // server spread over more than the 1.5 s the limit needs to shed any, so the first 10 are shed whatever
  // their pace (the same 429 with Retry-After 1), and the limit sheds what else arrives too fast.
  proxy.setServerLimit({ qps: 20, burst: 10 });
  proxy.failNext({ method: 'POST', path: new RegExp(`^/api/v1/namespaces/${ns}/configmaps$`), code: 429, times: 10 });
  try {
    const results = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => c.create(GVRs.ConfigMap, cm(ns, `apf${i}`))));
    const shed = (proxy.counts.apf429 ?? 0) + (proxy.counts['targeted:429'] ?? 0);
    assert.ok(shed >= 10, `the server shed requests (${shed})`);
    const failed = results.filter((r) => r.status === 'rejected').length;
    // Each request has MAX_RETRIES retries after the server's 1 s Retry-After: 40 at 20/s fit in them.
    assert.equal(failed, 0, `${failed} of 40 failed (${shed} answers were 429)`);
  } finally {
    proxy.setServerLimit(undefined);
  }
  const list = await admin.listAll(GVRs.ConfigMap, ns);
  assert.equal(list.items.filter((o) => o.metadata?.name?.startsWith('apf')).length, 40);
});
