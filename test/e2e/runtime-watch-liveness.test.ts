// Watch liveness against the real API server, through a TCP proxy (node:net) that can blackhole a
// connection without closing it — what a node or a load balancer dropping its state does to a long watch.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { Informer } from '../../src/runtime/informer.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { KubeClient } from '../../src/runtime/kube.ts';
import { adminKubeConfig, freshNamespace, waitFor } from './env/index.ts';

interface Conn {
  client: net.Socket;
  upstream: net.Socket;
  openedAt: number;
  blackholed: boolean;
}

/** Forwards TCP to `target`; blackhole(conn) drops its bytes both ways and keeps both sockets open. */
async function tcpProxy(target: URL): Promise<{ url: string; conns: Conn[]; close(): Promise<void> }> {
  const conns: Conn[] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    const c: Conn = { client, upstream, openedAt: performance.now(), blackholed: false };
    conns.push(c);
    client.on('data', (d) => {
      if (!c.blackholed) upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (!c.blackholed) client.write(d);
    });
    // A blackholed connection does not pass on the other side's close either: it just goes silent.
    client.on('end', () => !c.blackholed && upstream.end());
    upstream.on('end', () => !c.blackholed && client.end());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => !c.blackholed && upstream.destroy());
    upstream.on('close', () => !c.blackholed && client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    conns,
    close: async () => {
      for (const c of conns) {
        c.client.destroy();
        c.upstream.destroy();
      }
      await new Promise((r) => server.close(r));
    },
  };
}

let proxy: Awaited<ReturnType<typeof tcpProxy>>;
let viaProxy: KubeClient;
let direct: KubeClient;

before(async () => {
  const kc = await adminKubeConfig();
  proxy = await tcpProxy(new URL(kc.getCurrentCluster()!.server));
  const pk = new KubeConfig();
  pk.loadFromOptions({ clusters: kc.clusters.map((c) => ({ ...c, server: proxy.url })), users: kc.users, contexts: kc.contexts, currentContext: kc.currentContext });
  viaProxy = new KubeClient(pk);
  direct = new KubeClient(kc);
});

after(async () => {
  viaProxy?.close();
  direct?.close();
  await proxy?.close();
});

// Short for the test (the defaults are client-go's 5–10 min plus 30 s): a blackholed watch is found dead
// at most 3 s + 1 s after it opened.
const LIVENESS = { minTimeoutSeconds: 2, maxTimeoutSeconds: 3, graceMs: 1_000 };
const BOUND_MS = (LIVENESS.maxTimeoutSeconds * 1000 + LIVENESS.graceMs) * 2;

test('a watch blackholed without being closed is torn down once it outlives its timeout, and the cache catches up within the bound', async () => {
  const ns = await freshNamespace('liveness');
  const inf = new Informer(viaProxy, GVRs.ConfigMap, { namespace: ns, liveness: LIVENESS });
  inf.start();
  try {
    await inf.waitForSync();
    // The watch is the connection opened after the list: wait for it, then blackhole it.
    const watchConn = await waitFor('the watch connection', () => (proxy.conns.length >= 2 ? proxy.conns.at(-1) : undefined));
    watchConn.blackholed = true;
    const blackholedAt = performance.now();
    await direct.create(GVRs.ConfigMap, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'after-the-cut', namespace: ns }, data: { a: '1' } });
    await waitFor('the cache shows the ConfigMap created after the cut', () => inf.store.get(ns, 'after-the-cut'), { timeoutMs: BOUND_MS, intervalMs: 50 });
    const caughtUpMs = performance.now() - blackholedAt;
    assert.ok(inf.staleWatches >= 1, 'the half-open watch was detected as such');
    assert.equal(inf.lists, 1, 'resumed from its resourceVersion, not relisted');
    assert.ok(caughtUpMs <= BOUND_MS, `caught up in ${Math.round(caughtUpMs)} ms`);
    assert.ok(proxy.conns.length >= 3, 'over a new connection');
  } finally {
    await inf.stop();
  }
});
