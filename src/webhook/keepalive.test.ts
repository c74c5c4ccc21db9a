// The API server's webhook client reuses an idle connection for up to 90 s; a server closing idle
// connections sooner races it, and the review in flight fails with EOF (a denied create under
// failurePolicy Fail). The webhook server must keep an idle connection open past Node's 5 s default.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import type { KubeClient } from '../runtime/kube.ts';
import { StaticKeyring } from '../credentials/keyring.ts';
import { StaticCerts, generateCA, generateServingCert } from './certs.ts';
import { WEBHOOK_KEEPALIVE_MS, startWebhookServer } from './server.ts';

// Node's own default keepAliveTimeout: the idle time after which the connection used to be closed.
const NODE_DEFAULT_KEEPALIVE_MS = 5_000;

test('an idle connection to the webhook is still open after Node\'s 5 s default, and the next request reuses it', async () => {
  assert.ok(WEBHOOK_KEEPALIVE_MS > 90_000, 'longer than the API server client keeps idle connections');
  const ca = generateCA({ commonName: 'test-ca', validityMs: 3_600_000 });
  const serving = generateServingCert(ca, { commonName: '127.0.0.1', dnsNames: [], ipAddresses: ['127.0.0.1'], validityMs: 3_600_000 });
  const server = await startWebhookServer({ port: 0, host: '127.0.0.1', client: {} as KubeClient, certs: new StaticCerts({ cert: serving.certPEM, key: serving.keyPEM }), keyring: new StaticKeyring() });
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: ca.certPEM });
  const get = (): Promise<{ reused: boolean; status: number }> =>
    new Promise((resolve, reject) => {
      const req = https.get({ host: '127.0.0.1', port: server.port, path: '/healthz', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve({ reused: req.reusedSocket, status: res.statusCode ?? 0 }));
      });
      req.on('error', reject);
    });
  try {
    assert.deepEqual(await get(), { reused: false, status: 200 });
    // The idle period is what is under test, not a synchronisation: the connection must survive it.
    await new Promise((r) => setTimeout(r, NODE_DEFAULT_KEEPALIVE_MS + 1_000));
    assert.deepEqual(await get(), { reused: true, status: 200 });
  } finally {
    agent.destroy();
    await server.close();
  }
});
