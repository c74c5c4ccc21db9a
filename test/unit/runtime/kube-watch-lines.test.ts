// The watch stream's line reader: one event per line, however the bytes were split on the wire.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient, type KubeObject } from '../../../src/runtime/kube.ts';
import { GVRs } from '../../../src/runtime/gvr.ts';

let server: http.Server;
let url: string;
// A large event (a many-VM status), then a small one and an empty line, written in uneven pieces that cut
// lines anywhere, two lines in one piece included.
const big = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'big', namespace: 'ns', resourceVersion: '2' }, data: { blob: 'x'.repeat(300_000) } };
const small = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'small', namespace: 'ns', resourceVersion: '3' } };
const stream = `${JSON.stringify({ type: 'ADDED', object: big })}\n\n${JSON.stringify({ type: 'MODIFIED', object: small })}\n${JSON.stringify({ type: 'DELETED', object: small })}\n`;

before(async () => {
  server = http.createServer(async (_req, res) => {
    res.setHeader('Content-Type', 'application/json');
    const sizes = [1, 7, 4096, 65_536, 3, 250_000];
    let at = 0;
    for (let k = 0; at < stream.length; k++) {
      const n = sizes[k % sizes.length]!;
      res.write(stream.slice(at, at + n));
      at += n;
      await new Promise((r) => setImmediate(r));
    }
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

test('a watch delivers each event whole and in order, however its line was split across chunks', async () => {
  const kc = new KubeConfig();
  kc.loadFromOptions({ clusters: [{ name: 'c', server: url, skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
  const c = new KubeClient(kc, { timeoutMs: 5_000 });
  const seen: Array<[string, KubeObject]> = [];
  await c.watch(GVRs.ConfigMap, 'ns', {}, (type, obj) => seen.push([type, obj]));
  c.close();
  assert.deepEqual(
    seen.map(([t, o]) => `${t} ${o.metadata?.name}`),
    ['ADDED big', 'MODIFIED small', 'DELETED small'],
  );
  assert.equal((seen[0]![1] as unknown as typeof big).data.blob.length, 300_000);
});
