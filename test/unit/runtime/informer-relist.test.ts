// The informer's list and watch sequence against a stand-in API server that answers as kube-apiserver does
// in trouble (the e2e file runtime-resilience does the same against the real one through the fault proxy):
// which resourceVersion each list asks for, and that a watch told "too large" or ended by a Status relists.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../../src/runtime/kube.ts';
import { Informer } from '../../../src/runtime/informer.ts';
import { GVRs } from '../../../src/runtime/gvr.ts';

const TOO_LARGE = { kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'Timeout: Too large resource version: 50, current: 10', reason: 'Timeout', details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 }, code: 504 };

let server: http.Server;
let url: string;
/** What the stand-in holds, and how it answers the next watches and lists at a resourceVersion. */
let items: Array<{ name: string; rv: string }> = [];
let listRV = '10';
let watchAnswers: Array<'tooLarge' | 'status500' | 'hold'> = [];
let listsAtVersionTooLarge = 0;
const lists: string[] = [];
const open = new Set<http.ServerResponse>();

before(async () => {
  server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    req.resume();
    res.setHeader('Content-Type', 'application/json');
    if (u.searchParams.get('watch') === 'true') {
      const next = watchAnswers.shift() ?? 'hold';
      res.writeHead(200);
      if (next === 'tooLarge') return res.end(`${JSON.stringify({ type: 'ERROR', object: TOO_LARGE })}\n`);
      if (next === 'status500') return res.end(`${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 500, reason: 'InternalError', message: 'etcdserver: leader changed' } })}\n`);
      res.flushHeaders();
      open.add(res);
      res.once('close', () => open.delete(res));
      return;
    }
    const rv = u.searchParams.get('resourceVersion');
    lists.push(rv === null ? '(none)' : rv);
    if (rv && rv !== '0' && listsAtVersionTooLarge > 0) {
      listsAtVersionTooLarge--;
      res.writeHead(504);
      return res.end(JSON.stringify(TOO_LARGE));
    }
    res.end(JSON.stringify({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: listRV }, items: items.map((i) => ({ metadata: { name: i.name, namespace: 'ns', resourceVersion: i.rv } })) }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function client(): KubeClient {
  const kc = new KubeConfig();
  kc.loadFromOptions({ clusters: [{ name: 'c', server: url, skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
  return new KubeClient(kc, { timeoutMs: 5_000 });
}

async function until(what: string, fn: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function reset(): void {
  items = [{ name: 'a', rv: '5' }];
  listRV = '10';
  watchAnswers = [];
  listsAtVersionTooLarge = 0;
  lists.length = 0;
}

function endWatches(): void {
  for (const r of open) r.end();
}

test('the first list asks resourceVersion=0; a watch told "too large" relists with a consistent read', async () => {
  reset();
  const c = client();
  const inf = new Informer(c, GVRs.ConfigMap, { namespace: 'ns', minBackoffMs: 5, maxBackoffMs: 20 });
  inf.start();
  await inf.waitForSync();
  assert.deepEqual(lists, ['0']);
  watchAnswers = ['tooLarge'];
  items.push({ name: 'b', rv: '11' });
  listRV = '11';
  endWatches();
  await until('the relist', () => inf.lists >= 2);
  assert.deepEqual(lists, ['0', '(none)'], 'after "too large" the relist is a consistent read, not one at the same version');
  assert.ok(inf.store.get('ns', 'b'), 'and it sees what changed');
  await inf.stop();
  c.close();
});

test('a watch ended by a 500 relists not older than the last version; refused as too large, the relist falls back to a consistent read', async () => {
  reset();
  const c = client();
  const inf = new Informer(c, GVRs.ConfigMap, { namespace: 'ns', minBackoffMs: 5, maxBackoffMs: 20 });
  inf.start();
  await inf.waitForSync();
  watchAnswers = ['status500'];
  listsAtVersionTooLarge = 1;
  endWatches();
  await until('the relist', () => inf.lists >= 2);
  assert.deepEqual(lists, ['0', '10', '(none)']);
  assert.deepEqual(inf.listedAt, ['0', '10', '']);
  await inf.stop();
  c.close();
});
