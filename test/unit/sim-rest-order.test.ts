// The simulator's REST client (test/sim/rest.ts) against a stand-in API server that answers the first
// write slowly and applies each write when it answers, as a loaded kube-apiserver may.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { makeCA, makeServingCert } from '../sim/certs.ts';
import { R, Rest } from '../sim/rest.ts';
import { writeKubeconfig } from '../e2e/env/controlplane.ts';

test("the simulator's writes to one object are applied in the order it made them, even when the first is answered slowly", async () => {
  const ca = makeCA('sim-rest-order-test');
  const serving = makeServingCert(ca, 'localhost', { ips: ['127.0.0.1'] });
  const applied: string[] = [];
  let writes = 0;
  const server = https.createServer({ cert: serving.certPEM, key: serving.keyPEM }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      // The first write is slow to be applied (1 s), every later one quick: sent side by side, the second
      // would be applied first and the first, older one, last.
      const delay = writes++ === 0 ? 1000 : 0;
      setTimeout(() => {
        const phase = (JSON.parse(body) as { status: { phase: string } }).status.phase;
        applied.push(phase);
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ metadata: { name: 'm', namespace: 'ns' }, status: { phase } }));
      }, delay);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const dir = mkdtempSync(join(tmpdir(), 'sim-rest-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeKubeconfig(kubeconfig, `https://127.0.0.1:${(server.address() as AddressInfo).port}`, ca.certPEM, 'sim', 'token');
  const rest = new Rest(kubeconfig);
  try {
    // A progress write made while the run copies, then the write that ends it, without waiting in between.
    await Promise.all([rest.patch(R.Migration, 'ns', 'm', { status: { phase: 'Running' } }, 'status'), rest.patch(R.Migration, 'ns', 'm', { status: { phase: 'Succeeded' } }, 'status')]);
    assert.deepEqual(applied, ['Running', 'Succeeded'], 'the last write made is the last applied');
  } finally {
    rest.close();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
