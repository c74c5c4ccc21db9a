// Webhook certificates: several replicas agree on one self-managed Secret; the serving certificate and
// the CA rotate while the API server keeps calling, without a single failed call; cert-manager mode
// reloads mounted files.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import tls from 'node:tls';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import { adminKubeConfig, freshNamespace, installOurCRDs, waitFor } from './env/index.ts';
import { KubeClient, ApiError, type KubeObject } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { FileCerts, SelfManagedCerts, generateCA, generateServingCert, VALIDATING_WEBHOOK_GVR, MUTATING_WEBHOOK_GVR } from '../../src/webhook/certs.ts';
import { installWebhookConfigurations, uninstallWebhookConfigurations } from '../../src/webhook/config.ts';
import { startTestWebhook, testWebhookNames, type TestWebhook } from '../../src/webhook/testkit.ts';
import { startWebhookServer } from '../../src/webhook/server.ts';
import { StaticKeyring } from '../../src/credentials/keyring.ts';

let client: KubeClient;
let secretNs: string;

before(async () => {
  await installOurCRDs();
  client = new KubeClient(await adminKubeConfig());
  secretNs = await freshNamespace('wh-certs');
});

after(() => client?.close());

/** The certificate a TLS client is served right now (serial and issuer). */
function servedCert(port: number): Promise<{ serial: string; issuer: string }> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const c = s.getPeerCertificate();
      s.end();
      resolve({ serial: c.serialNumber, issuer: String(c.issuer?.CN ?? '') });
    });
    s.on('error', reject);
  });
}

const source = (namespace: string, o: Record<string, unknown> = {}) =>
  ({
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportSource',
    metadata: { name: `s-${randomBytes(3).toString('hex')}`, namespace },
    spec: { type: 'vsphere', url: 'https://vc.example/sdk', credentials: { username: 'u@vsphere.local', password: 'p', insecureSkipVerify: true, ...o } },
  }) as KubeObject;

test('replicas starting at once agree on one certificate Secret', async () => {
  const replicas = Array.from({ length: 4 }, () => new SelfManagedCerts({ client, namespace: secretNs, secretName: 'agree', serviceName: 'mc-webhook' }));
  await Promise.all(replicas.map((r) => r.start()));
  try {
    const certs = new Set(replicas.map((r) => r.current().cert));
    assert.equal(certs.size, 1, 'every replica serves the same certificate');
    const secret = await client.get<KubeObject & { data: Record<string, string> }>(GVRs.Secret, secretNs, 'agree');
    assert.equal(Buffer.from(secret!.data['tls.crt']!, 'base64').toString(), replicas[0]!.current().cert);
    assert.equal(new Set(replicas.map((r) => r.caBundle())).size, 1);
  } finally {
    for (const r of replicas) r.stop();
  }
});

type SecretData = KubeObject & { data: Record<string, string>; type: string };
const pem = (s: SecretData | undefined, k: string): string => Buffer.from(s?.data[k] ?? '', 'base64').toString();

test('the serving Secret holds no CA private key: the CA key lives in a Secret of its own', async () => {
  const replicas = Array.from({ length: 3 }, () => new SelfManagedCerts({ client, namespace: secretNs, secretName: 'apart', serviceName: 'mc-webhook' }));
  await Promise.all(replicas.map((r) => r.start()));
  try {
    const serving = await client.get<SecretData>(GVRs.Secret, secretNs, 'apart');
    const ca = await client.get<SecretData>(GVRs.Secret, secretNs, 'apart-ca');
    assert.deepEqual(Object.keys(serving!.data).sort(), ['ca-bundle.crt', 'ca.crt', 'tls.crt', 'tls.key'], 'public certificates and the serving pair only');
    assert.ok(!Object.values(serving!.data).some((v) => /PRIVATE KEY/.test(Buffer.from(v, 'base64').toString()) && Buffer.from(v, 'base64').toString() !== pem(serving, 'tls.key')), 'no private key but the serving one');
    const caKey = createPrivateKey(pem(ca, 'ca.key'));
    assert.ok(new X509Certificate(pem(ca, 'ca.crt')).checkPrivateKey(caKey), 'the CA Secret holds the CA key');
    assert.ok(new X509Certificate(pem(serving, 'tls.crt')).checkPrivateKey(createPrivateKey(pem(serving, 'tls.key'))), 'the serving key matches the serving certificate');
    assert.ok(new X509Certificate(pem(serving, 'tls.crt')).checkIssued(new X509Certificate(pem(ca, 'ca.crt'))), 'served by a certificate the CA signed');
    assert.equal(new Set(replicas.map((r) => r.current().cert)).size, 1);
  } finally {
    for (const r of replicas) r.stop();
  }
});

test('a combined Secret from an earlier version is split: its CA key moves to the CA Secret and leaves the serving Secret, and the certificate served stays the same', async () => {
  const ca = generateCA({ commonName: 'earlier-ca', validityMs: 100 * 86_400_000 });
  const s = generateServingCert(ca, { commonName: 'mc-webhook', dnsNames: ['mc-webhook', `mc-webhook.${secretNs}`, `mc-webhook.${secretNs}.svc`, `mc-webhook.${secretNs}.svc.cluster.local`], ipAddresses: [], validityMs: 50 * 86_400_000 });
  const b = (x: string) => Buffer.from(x).toString('base64');
  await client.create(GVRs.Secret, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'combined', namespace: secretNs },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': b(s.certPEM), 'tls.key': b(s.keyPEM), 'ca.crt': b(ca.certPEM), 'ca.key': b(ca.keyPEM), 'ca-bundle.crt': b(ca.certPEM) },
  } as KubeObject);
  const certs = new SelfManagedCerts({ client, namespace: secretNs, secretName: 'combined', serviceName: 'mc-webhook' });
  await certs.start();
  try {
    const serving = await client.get<SecretData>(GVRs.Secret, secretNs, 'combined');
    const caSecret = await client.get<SecretData>(GVRs.Secret, secretNs, 'combined-ca');
    assert.equal(serving!.data['ca.key'], undefined, 'the CA key left the serving Secret');
    assert.equal(pem(caSecret, 'ca.key'), ca.keyPEM, 'the CA Secret holds the earlier CA key');
    assert.equal(pem(caSecret, 'ca.crt'), ca.certPEM);
    assert.equal(certs.current().cert, s.certPEM, 'no new certificate was needed');
    assert.equal(certs.caBundle(), ca.certPEM, 'the API server keeps trusting the same CA');
    // A second pass (another replica, a restart) changes nothing.
    const rv = [serving!.metadata!.resourceVersion, caSecret!.metadata!.resourceVersion];
    await certs.sync();
    const again = await Promise.all(['combined', 'combined-ca'].map((n) => client.get<SecretData>(GVRs.Secret, secretNs, n)));
    assert.deepEqual(again.map((x) => x!.metadata!.resourceVersion), rv);
  } finally {
    certs.stop();
  }
});

test('the serving certificate and the CA rotate while the API server keeps calling, and no call fails', async () => {
  const id = randomBytes(3).toString('hex');
  const names = testWebhookNames(id);
  const certs = new SelfManagedCerts({
    client,
    namespace: secretNs,
    secretName: `rotate-${id}`,
    ipAddresses: ['127.0.0.1'],
    validatingWebhookConfigurations: [names.validating],
    mutatingWebhookConfigurations: [names.mutating],
    // Forced short lives: the serving certificate rotates every ~6 s, the CA once at ~24 s.
    caValidityMs: 30_000,
    certValidityMs: 12_000,
    rotateBeforeMs: 6_000,
    checkIntervalMs: 500,
    caPublishDelayMs: 3_000,
  });
  await certs.start();
  let wh: TestWebhook | undefined;
  const serials = new Set<string>();
  const issuers = new Set<string>();
  try {
    wh = await startTestWebhook({ client, certs, caPEM: certs.caBundle(), id });
    const ns = await freshNamespace('wh-rot', { [wh.selector.key]: wh.selector.value });
    await waitFor('the webhook to be effective', async () => {
      try {
        await client.create(GVRs.VMImportSource, source(ns, { caCert: 'AB:CD' }), { dryRun: true });
        return false;
      } catch (e) {
        return e instanceof ApiError && e.message.includes('denied the request');
      }
    });
    const port = wh.server.port;
    const deadline = Date.now() + 36_000;
    let ok = 0;
    const failures: string[] = [];
    // Each caller paces itself: what counts is a call at every moment of a rotation (with two callers, one
    // every ~10 ms), not throughput. Unpaced, the two took a whole core of kube-apiserver for the 36 s.
    const CALL_GAP_MS = 20;
    const caller = async (): Promise<void> => {
      while (Date.now() < deadline) {
        try {
          await client.create(GVRs.VMImportSource, source(ns), { dryRun: true });
          ok++;
        } catch (e) {
          failures.push(`${new Date().toISOString()} ${(e as Error).message}`);
        }
        await new Promise((r) => setTimeout(r, CALL_GAP_MS));
      }
    };
    const watcher = async (): Promise<void> => {
      while (Date.now() < deadline) {
        const c = await servedCert(port);
        serials.add(c.serial);
        issuers.add(c.issuer);
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    await Promise.all([caller(), caller(), watcher()]);
    console.log(`${ok} calls through the API server; ${serials.size} serving certificates from ${issuers.size} CAs; ${failures.length} failures`);
    assert.deepEqual(failures.slice(0, 5), []);
    assert.ok(ok > 100, `only ${ok} calls`);
    assert.ok(serials.size >= 4, `the serving certificate rotated only ${serials.size - 1} times`);
    assert.ok(issuers.size >= 2, 'the CA rotated');
    // Still judged by the webhook after all that (not silently bypassed).
    await assert.rejects(client.create(GVRs.VMImportSource, source(ns, { caCert: 'AB:CD' }), { dryRun: true }), /denied the request/);
  } finally {
    certs.stop();
    await wh?.stop();
  }
});

test('a new CA is trusted in the webhook configurations before any certificate it signs is served', async () => {
  const id = randomBytes(3).toString('hex');
  const names = testWebhookNames(id);
  // Configurations that match no namespace: only their caBundle matters here.
  await installWebhookConfigurations(client, { target: { url: 'https://127.0.0.1:1' }, names, namespaceSelector: { matchLabels: { 'never-matches': id } } });
  let now = Date.now();
  const DAY = 86_400_000;
  const certs = new SelfManagedCerts({
    client,
    namespace: secretNs,
    secretName: `phases-${id}`,
    ipAddresses: ['127.0.0.1'],
    validatingWebhookConfigurations: [names.validating],
    mutatingWebhookConfigurations: [names.mutating],
    caValidityMs: 100 * DAY,
    certValidityMs: 10 * DAY,
    rotateBeforeMs: 3 * DAY,
    caPublishDelayMs: 60_000,
    now: () => new Date(now),
  });
  const bundleIn = async (): Promise<string[]> => {
    const out: string[] = [];
    for (const gvr of [VALIDATING_WEBHOOK_GVR, MUTATING_WEBHOOK_GVR]) {
      const cfg = await client.get<KubeObject & { webhooks: Array<{ clientConfig: { caBundle?: string } }> }>(gvr, undefined, gvr === VALIDATING_WEBHOOK_GVR ? names.validating : names.mutating);
      for (const h of cfg!.webhooks) out.push(Buffer.from(h.clientConfig.caBundle ?? '', 'base64').toString());
    }
    return out;
  };
  const issuerOf = (pem: string) => new X509Certificate(pem).issuer;
  try {
    await certs.start();
    const firstCA = new X509Certificate(certs.caBundle()).subject;
    assert.ok((await bundleIn()).every((b) => b === certs.caBundle()), 'the bundle is injected into every webhook');
    const firstServing = certs.current().cert;

    now += 98 * DAY; // the CA is within 3 days of expiry
    await certs.sync();
    const bundle = await bundleIn();
    assert.ok(bundle.every((b) => (b.match(/BEGIN CERTIFICATE/g) ?? []).length === 2), 'old and next CA are both trusted');
    assert.equal(issuerOf(certs.current().cert), firstCA, 'still serving a certificate of the old CA');
    assert.notEqual(certs.current().cert, firstServing, 'the serving certificate itself was renewed');

    now += 30_000; // not yet published long enough
    await certs.sync();
    assert.equal(issuerOf(certs.current().cert), firstCA);

    now += 31_000;
    await certs.sync();
    assert.notEqual(issuerOf(certs.current().cert), firstCA, 'now serving a certificate of the new CA');
    assert.ok((await bundleIn()).every((b) => b === certs.caBundle()), 'the configurations trust what is served');
    assert.ok(new X509Certificate(certs.current().cert).checkIssued(new X509Certificate(certs.caBundle())), 'the bundle leads with the CA now in use');
  } finally {
    certs.stop();
    await uninstallWebhookConfigurations(client, names);
  }
});

test('cert-manager mode reloads the mounted certificate without a restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'wh-files-'));
  const ca = generateCA({ commonName: 'cm-ca', validityMs: 86_400_000 });
  const write = () => {
    const s = generateServingCert(ca, { commonName: '127.0.0.1', dnsNames: [], ipAddresses: ['127.0.0.1'], validityMs: 86_400_000 });
    writeFileSync(join(dir, 'tls.crt'), s.certPEM);
    writeFileSync(join(dir, 'tls.key'), s.keyPEM);
  };
  write();
  const certs = new FileCerts({ certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key'), pollIntervalMs: 100 });
  const server = await startWebhookServer({ port: 0, host: '127.0.0.1', client, certs, keyring: new StaticKeyring() });
  try {
    const first = await servedCert(server.port);
    // A half-written pair (new cert, old key) is not loaded: the old pair keeps serving.
    const s = generateServingCert(ca, { commonName: '127.0.0.1', dnsNames: [], ipAddresses: ['127.0.0.1'], validityMs: 86_400_000 });
    writeFileSync(join(dir, 'tls.crt'), s.certPEM);
    await certs.poll();
    assert.equal((await servedCert(server.port)).serial, first.serial);
    writeFileSync(join(dir, 'tls.key'), s.keyPEM);
    await waitFor('the new certificate to be served', async () => (await servedCert(server.port)).serial !== first.serial);
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
