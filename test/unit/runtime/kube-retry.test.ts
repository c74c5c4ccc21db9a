// The REST client retries what client-go retries — a refusal with Retry-After (any verb), a read whose
// connection broke or that got a 5xx or a bare 404 (a path not served yet) — and nothing that may have been
// applied: a write answered 5xx or cut off. Only a NotFound Status says an object is gone.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient, MAX_RETRIES, classifyFailure, errorOfAnswer, isNotFound, isNotServed, ApiError, DeadlineError } from '../../../src/runtime/kube.ts';
import { GVRs } from '../../../src/runtime/gvr.ts';

let server: http.Server;
let url: string;
/** Per path: the answers still to give before a normal one ('429', '500', 'reset', '404' bare, 'gone' a NotFound Status). */
const script = new Map<string, string[]>();
const received: string[] = [];

before(async () => {
  server = http.createServer((req, res) => {
    received.push(`${req.method} ${req.url}`);
    req.resume();
    const next = script.get(new URL(req.url ?? '/', 'http://x').pathname)?.shift();
    if (next === 'reset') {
      res.socket?.destroy();
      return;
    }
    if (next === '404') {
      // What kube-apiserver answers for a path it does not serve (yet): net/http's NotFound, no Status.
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('404 page not found\n');
      return;
    }
    res.setHeader('Content-Type', 'application/json');
    if (next === 'gone') {
      res.writeHead(404);
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 404, reason: 'NotFound', message: 'configmaps "x" not found', details: { name: 'x', kind: 'configmaps' } }));
    } else if (next === '429') {
      res.writeHead(429, { 'Retry-After': '0' });
      res.end(JSON.stringify({ kind: 'Status', code: 429, reason: 'TooManyRequests', message: 'slow down' }));
    } else if (next === '500') {
      res.writeHead(500);
      res.end(JSON.stringify({ kind: 'Status', code: 500, reason: 'InternalError', message: 'etcd timeout' }));
    } else {
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'ns' } }));
    }
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
  return new KubeClient(kc, { timeoutMs: 10_000 });
}

const path = '/api/v1/namespaces/ns/configmaps/x';

test('a read refused with 429, answered 500 or cut off is retried and succeeds', async () => {
  const c = client();
  script.set(path, ['429', '500', 'reset']);
  received.length = 0;
  assert.ok(await c.get(GVRs.ConfigMap, 'ns', 'x'));
  assert.equal(received.length, 4, 'three refusals, then the answer');
  c.close();
});

test('a write refused with 429 is retried (the API server did not handle it)', async () => {
  const c = client();
  script.set(path, ['429']);
  received.length = 0;
  await c.patch(GVRs.ConfigMap, 'ns', 'x', { data: {} });
  assert.deepEqual(received.map((r) => r.split(' ')[0]), ['PATCH', 'PATCH']);
  c.close();
});

test('a write answered 500 or cut off is not retried: it may have been applied', async () => {
  const c = client();
  for (const fault of ['500', 'reset']) {
    script.set(path, [fault]);
    received.length = 0;
    await assert.rejects(c.patch(GVRs.ConfigMap, 'ns', 'x', { data: {} }), ApiError);
    assert.equal(received.length, 1, `${fault}: sent once`);
  }
  c.close();
});

test('retries stop after MAX_RETRIES, and never for a refusal other than 429/5xx/broken connection', async () => {
  const c = client();
  script.set(path, Array.from({ length: MAX_RETRIES + 1 }, () => '500'));
  received.length = 0;
  await assert.rejects(c.get(GVRs.ConfigMap, 'ns', 'x'), /etcd timeout/);
  assert.equal(received.length, MAX_RETRIES + 1);
  script.delete(path);
  c.close();
  assert.equal(classifyFailure('GET', new ApiError(404, 'NotFound', 'gone'), 0).kind, 'terminal');
  assert.equal(classifyFailure('GET', new ApiError(409, 'Conflict', 'modified'), 0).kind, 'terminal');
  assert.equal(classifyFailure('GET', new DeadlineError('request timed out after 30000 ms: GET /x'), 0).kind, 'terminal', 'a request past its deadline is not retried');
});

const BARE_404 = '404 page not found\n';
const NOT_FOUND_STATUS = JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 404, reason: 'NotFound', message: 'vmdisks.apps.cozystack.io "d" not found', details: { name: 'd', group: 'apps.cozystack.io', kind: 'vmdisks' } });

test('only a NotFound Status says the object is gone; a bare 404 says the path is not served', () => {
  const gone = errorOfAnswer(404, NOT_FOUND_STATUS);
  assert.ok(isNotFound(gone));
  assert.ok(!isNotServed(gone));
  const bare = errorOfAnswer(404, BARE_404);
  assert.equal(bare.reason, '404');
  assert.ok(!isNotFound(bare), 'a bare 404 is not the object gone');
  assert.ok(isNotServed(bare));
  assert.ok(!isNotServed(errorOfAnswer(500, '')) && !isNotServed(new Error('x')));
});

test('a read answered a bare 404 is retried with the backoff of a 5xx; a NotFound Status, a write or a probe is not', () => {
  const bare = errorOfAnswer(404, BARE_404);
  assert.equal(classifyFailure('GET', bare, 0).kind, 'retry');
  assert.equal(classifyFailure('GET', bare, MAX_RETRIES).kind, 'terminal', 'after MAX_RETRIES');
  assert.equal(classifyFailure('GET', errorOfAnswer(404, NOT_FOUND_STATUS), 0).kind, 'terminal');
  for (const m of ['POST', 'PUT', 'PATCH', 'DELETE']) assert.equal(classifyFailure(m, bare, 0).kind, 'terminal', m);
  assert.equal(classifyFailure('GET', bare, 0, { probe: true }).kind, 'terminal');
});

test('a read of an object answered a bare 404 is asked again and never read as absent', async () => {
  const c = client();
  script.set(path, ['404', '404']);
  received.length = 0;
  assert.ok(await c.get(GVRs.ConfigMap, 'ns', 'x'), 'the object, once the path is served');
  assert.equal(received.length, 3);
  script.set(path, Array.from({ length: MAX_RETRIES + 1 }, () => '404'));
  received.length = 0;
  await assert.rejects(c.get(GVRs.ConfigMap, 'ns', 'x'), (e: unknown) => isNotServed(e) && !isNotFound(e), 'still not served: an error, not undefined');
  assert.equal(received.length, MAX_RETRIES + 1);
  script.set(path, ['gone']);
  assert.equal(await c.get(GVRs.ConfigMap, 'ns', 'x'), undefined, 'a NotFound Status: absent');
  script.set(path, ['404']);
  received.length = 0;
  await assert.rejects(c.get(GVRs.ConfigMap, 'ns', 'x', { probe: true }), (e: unknown) => isNotServed(e));
  assert.equal(received.length, 1, 'a probe takes the bare 404 as its answer');
  script.delete(path);
  c.close();
});

test('a write answered a bare 404 is not retried, and a delete so answered is not taken as already gone', async () => {
  const c = client();
  script.set(path, ['404']);
  received.length = 0;
  await assert.rejects(c.patch(GVRs.ConfigMap, 'ns', 'x', { data: {} }), (e: unknown) => isNotServed(e));
  assert.equal(received.length, 1);
  script.set(path, ['404']);
  received.length = 0;
  await assert.rejects(c.delete(GVRs.ConfigMap, 'ns', 'x'), (e: unknown) => isNotServed(e));
  assert.equal(received.length, 1);
  script.set(path, ['gone']);
  assert.equal(await c.delete(GVRs.ConfigMap, 'ns', 'x'), false, 'a NotFound Status: already gone');
  script.delete(path);
  c.close();
});
