// Discovery against a stand-in API server (runtime-discovery.test.ts does the same against a real one with
// a real aggregated server): an aggregated group version that starts being served after discovery started
// is found when its APIService turns Available, and withdrawn when the APIService is deleted.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../../src/runtime/kube.ts';
import { Discovery } from '../../../src/runtime/discovery.ts';
import type { GVR } from '../../../src/runtime/gvr.ts';

const LATE: GVR = { group: 'late.example.com', version: 'v1alpha1', plural: 'widgets', kind: 'Widget', namespaced: true, optional: true, aggregated: true };
let server: http.Server;
let url: string;
let served = false;
const serviceWatches = new Set<http.ServerResponse>();
let rv = 1;

before(async () => {
  server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    req.resume();
    res.setHeader('Content-Type', 'application/json');
    if (u.pathname === '/apis/late.example.com/v1alpha1') {
      if (!served) {
        res.writeHead(404);
        return res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: 'the server could not find the requested resource' }));
      }
      return res.end(JSON.stringify({ kind: 'APIResourceList', groupVersion: 'late.example.com/v1alpha1', resources: [{ name: 'widgets', verbs: ['get', 'list', 'watch'] }] }));
    }
    if (u.searchParams.get('watch') === 'true') {
      res.writeHead(200);
      res.flushHeaders();
      if (u.pathname.endsWith('/apiservices')) {
        serviceWatches.add(res);
        res.once('close', () => serviceWatches.delete(res));
      }
      return;
    }
    res.end(JSON.stringify({ kind: 'List', metadata: { resourceVersion: String(rv) }, items: [] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function apiServiceEvent(type: string, available: boolean): void {
  const object = { apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: { name: 'v1alpha1.late.example.com', resourceVersion: String(++rv) }, spec: { group: 'late.example.com', version: 'v1alpha1' }, status: { conditions: [{ type: 'Available', status: available ? 'True' : 'False' }] } };
  for (const w of serviceWatches) w.write(`${JSON.stringify({ type, object })}\n`);
}

async function until(what: string, fn: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('an aggregated kind served only after start is found when its APIService becomes Available, and withdrawn when it is deleted', async () => {
  const kc = new KubeConfig();
  kc.loadFromOptions({ clusters: [{ name: 'c', server: url, skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
  const c = new KubeClient(kc, { timeoutMs: 5_000 });
  const d = new Discovery(c);
  const heard: boolean[] = [];
  d.onChange((g, installed) => g.kind === 'Widget' && heard.push(installed));
  d.track(LATE);
  await d.start();
  await d.waitForSync();
  await until('the APIService watch', () => serviceWatches.size > 0 && d.apiServices.hasSynced());
  assert.equal(d.installed(LATE), false, 'not served at start');
  // Registered, not yet Available: not asked, not installed.
  apiServiceEvent('ADDED', false);
  served = true;
  apiServiceEvent('MODIFIED', true);
  await until('the kind to be found', () => d.installed(LATE));
  apiServiceEvent('DELETED', true);
  await until('the kind to be withdrawn', () => !d.installed(LATE));
  assert.deepEqual(heard, [true, false]);
  await d.stop();
  c.close();
});
