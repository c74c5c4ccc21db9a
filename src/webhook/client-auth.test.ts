// Forged reviews: with a client CA configured, the webhook answers only a caller presenting the API
// server's client certificate. Anyone else who reaches the port gets 401 and no AdmissionReview: not the
// sealed form of a guessed password, not a verdict that tells a right guess from a wrong one.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import type { KubeClient } from '../runtime/kube.ts';
import { StaticKeyring } from '../credentials/keyring.ts';
import { StaticCerts, generateCA, generateClientCert, generateServingCert, type PEMPair } from './certs.ts';
import { PATHS } from './config.ts';
import { startWebhookServer, type WebhookServer } from './server.ts';

const DAY = 86_400_000;
const noCluster = new Proxy({}, { get: () => () => { throw new Error('no cluster in this test'); } }) as unknown as KubeClient;
const servingCA = generateCA({ commonName: 'serving CA', validityMs: DAY });
const serving = generateServingCert(servingCA, { commonName: '127.0.0.1', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], validityMs: DAY });
const clientCA = generateCA({ commonName: 'front-proxy CA', validityMs: DAY });
const apiServer = generateClientCert(clientCA, { commonName: 'kube-apiserver-webhook-client', validityMs: DAY });
const wrongName = generateClientCert(clientCA, { commonName: 'someone-else', validityMs: DAY });
const otherCA = generateCA({ commonName: 'attacker CA', validityMs: DAY });
const forgedName = generateClientCert(otherCA, { commonName: 'kube-apiserver-webhook-client', validityMs: DAY });

let server: WebhookServer;
before(async () => {
  server = await startWebhookServer({
    port: 0,
    host: '127.0.0.1',
    client: noCluster,
    certs: new StaticCerts({ cert: serving.certPEM, key: serving.keyPEM }),
    keyring: new StaticKeyring(),
    clientAuth: { caPEM: clientCA.certPEM, names: ['kube-apiserver-webhook-client'] },
  });
});
after(() => server?.close());

// The sealing oracle: a review of a guessed password, answered with its sealed form.
const guess = {
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'forged',
    kind: { group: 'forklift.cozystack.io', version: 'v1alpha1', kind: 'VMImportSource' },
    operation: 'CREATE',
    namespace: 'tenant-victim',
    object: { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name: 'vc', namespace: 'tenant-victim' }, spec: { type: 'vsphere', url: 'https://vc.victim.example/sdk', credentials: { username: 'u@vsphere.local', password: 'Guess-1234', insecureSkipVerify: true } } },
  },
};

function post(path: string, client?: PEMPair): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(guess);
    const req = https.request(
      { host: '127.0.0.1', port: server.port, path, method: 'POST', ca: servingCA.certPEM, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) }, ...(client ? { cert: client.certPEM, key: client.keyPEM } : {}), agent: false },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

test("a forged review from a caller without the API server's client certificate gets 401 and no AdmissionReview, on every review path", async () => {
  for (const path of Object.values(PATHS)) {
    for (const [who, cert] of [['no certificate', undefined], ['a certificate of another CA under the right name', forgedName], ['a certificate of the right CA under another name', wrongName]] as const) {
      const r = await post(path, cert);
      assert.equal(r.status, 401, `${path}, ${who}`);
      assert.ok(!r.body.includes('AdmissionReview') && !r.body.includes('enc:'), `${path}, ${who}: ${r.body}`);
    }
  }
});

test("the API server's client certificate gets the review answered (the sealed password in the patch)", async () => {
  const r = await post(PATHS.earlySource, apiServer);
  assert.equal(r.status, 200);
  const review = JSON.parse(r.body) as { response: { allowed: boolean; patch?: string } };
  assert.equal(review.response.allowed, true);
  assert.match(Buffer.from(review.response.patch ?? '', 'base64').toString(), /enc:v2:k1:/);
});

test('the kubelet probes /healthz without a client certificate', async () => {
  const r = await new Promise<number>((resolve, reject) => {
    https.get({ host: '127.0.0.1', port: server.port, path: '/healthz', ca: servingCA.certPEM, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
  assert.equal(r, 200);
});
