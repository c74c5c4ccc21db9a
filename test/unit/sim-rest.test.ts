// The simulator's REST client against an API server that dies mid-answer (kube-apiserver killed while a
// response is on the wire, as the restart tests do): the request must fail, never hang.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import YAML from 'yaml';
import { makeCA, makeServingCert } from '../sim/certs.ts';
import { Rest, R } from '../sim/rest.ts';

test('a write whose response the API server breaks off after the headers fails instead of waiting forever', async (t) => {
  const ca = makeCA('sim-rest-test-ca');
  const serving = makeServingCert(ca, '127.0.0.1', { ips: ['127.0.0.1'] });
  let requests = 0;
  const server = https.createServer({ key: serving.keyPEM, cert: serving.certPEM }, (req, res) => {
    requests++;
    req.resume();
    // Headers and half a body, then the connection goes, as when the server process is killed.
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '1000' });
    res.write('{"kind":"Plan","metadata":{"name":"p"');
    setImmediate(() => res.socket?.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const dir = mkdtempSync(join(tmpdir(), 'sim-rest-'));
  const rest = (() => {
    const path = join(dir, 'kubeconfig');
    const port = (server.address() as AddressInfo).port;
    writeFileSync(path, YAML.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: `https://127.0.0.1:${port}`, 'certificate-authority-data': Buffer.from(ca.certPEM).toString('base64') } }],
      users: [{ name: 'u', user: { token: 'x' } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'c',
    }));
    return new Rest(path);
  })();
  t.after(() => {
    rest.close();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // A deadline, not a sleep: the hang this guards against would otherwise be the test's own timeout.
  const outcome = await Promise.race([
    rest.patch(R.Plan, 'ns', 'p', { status: {} }, 'status').then(() => 'resolved', (e: Error) => `rejected: ${e.message}`),
    new Promise<string>((r) => setTimeout(() => r('still waiting after 10 s'), 10_000).unref()),
  ]);
  assert.match(outcome, /^rejected: .*cut off/);
  assert.equal(requests, 1, 'a write whose outcome is unknown is not sent again by the client');
});
