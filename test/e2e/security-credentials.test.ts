// Credentials at rest, through the real API server: a tenant writes the vCenter and ESXi passwords
// inline with `kubectl apply`; the webhook seals them, the controller opens them only to fill Forklift's
// Secrets, re-applying changes nothing, and a key rotation leaves old values readable.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import { SecretKeyring } from '../../src/credentials/keyring.ts';
import { startTestWebhook, type TestWebhook } from '../../src/webhook/testkit.ts';
import { freshNamespace, kubectl, testEnv, waitFor } from './env/index.ts';
import { applyAs, bootWorld, denial, tenantWithRole, waitForWebhookEffective, type BootedWorld } from './fixtures.ts';
import { getSource, projectedSecretNameOf, readyOf, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-sealed.example.com/sdk';
const CANARY = `canary-${randomBytes(6).toString('hex')}`;
const world = vcenter({ url: URL_VC, password: CANARY, hosts: [{ id: 'host-1', address: '192.0.2.71' }], vms: [{ id: 'vm-1', name: 'app01', host: 'host-1' }] });
const ESXI_PASSWORD = 'esxi-host-1'; // the simulated host's account (test/sim/world.ts)
const KEY_SECRET = 'mc-e2e-credentials-key';

/** Every line the controller logs, at debug level (the most it ever says), as a log collector keeps it. */
const logLines: string[] = [];
const logSink = new Writable({
  write(chunk: Buffer | string, _enc, cb) {
    logLines.push(...String(chunk).split('\n').filter((l) => l.length > 0));
    cb();
  },
});

let booted: BootedWorld;
let c: KubeClient;
let wh: TestWebhook;
let keyNs: string;
let ns: string;
let tenant: string;

type SecretObj = KubeObject & { data?: Record<string, string> };
type SourceObj = KubeObject & { spec: { credentials: { password?: string }; hosts?: Array<{ credentials: { password?: string } }> } };

const manifest = (password: string, hostPassword = ESXI_PASSWORD) => ({
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportSource',
  metadata: { name: 'vc' },
  spec: {
    type: 'vsphere',
    url: URL_VC,
    credentials: { username: world.user, password, caCert: world.caPEM },
    hosts: [{ id: 'host-1', address: '192.0.2.71', credentials: { username: 'root', password: hostPassword, insecureSkipVerify: true } }],
  },
});
const text = (s: SecretObj | undefined, k: string) => Buffer.from(s?.data?.[k] ?? '', 'base64').toString('utf8');

before(async () => {
  keyNs = await freshNamespace('mc-system');
  // The controller (webhook off) and the test's webhook share one key ring: the Secret in keyNs.
  booted = await bootWorld({ worlds: [world], controller: { extra: { podNamespace: keyNs, credentialsKeySecret: KEY_SECRET }, logLevel: 'debug', logDestination: logSink } });
  c = booted.c;
  wh = await startTestWebhook({ client: c, keyring: new SecretKeyring({ client: c, namespace: keyNs, name: KEY_SECRET, ttlMs: 200 }) });
  ns = await freshNamespace('sealed', { [wh.selector.key]: wh.selector.value });
  tenant = await tenantWithRole(ns);
  await waitForWebhookEffective(ns, { ...manifest('x'), spec: { ...manifest('x').spec, url: 'http://nope.example/sdk' } });
});

after(async () => {
  await wh?.stop();
  await booted?.shutdown();
});

test('an inline password is stored sealed, is never readable back by the tenant, and reaches only Forklift\'s Secret', async () => {
  const r = await applyAs(tenant, ns, manifest(world.password));
  assert.equal(r.code, 0, r.stderr);
  const stored = (await c.get<SourceObj>(GVRs.VMImportSource, ns, 'vc'))!;
  assert.match(stored.spec.credentials.password!, /^enc:v2:k1:[A-Za-z0-9+/]+=*$/);
  assert.match(stored.spec.hosts![0]!.credentials.password!, /^enc:v2:k1:/);
  // What the tenant reads back (spec and kubectl's last-applied annotation) holds neither password.
  const got = await kubectl(['get', 'vmimportsource', 'vc', '-n', ns, '-o', 'json'], { kubeconfig: tenant });
  assert.equal(got.code, 0, got.stderr);
  assert.ok(!got.stdout.includes(world.password) && !got.stdout.includes(ESXI_PASSWORD), 'a password is readable back');
  assert.match(got.stdout, /kubectl\.kubernetes\.io\/last-applied-configuration/);

  await waitForReason(c, ns, 'vc', 'Connected');
  const secret = await c.get<SecretObj>(GVRs.Secret, keyNs, (await projectedSecretNameOf(c, ns, 'vc'))!);
  assert.equal(text(secret, 'password'), world.password);
  const hostSecret = await waitFor('the host Secret', async () => c.get<SecretObj>(GVRs.Secret, keyNs, (await projectedSecretNameOf(c, ns, 'vc', 'host-1'))!));
  assert.equal(text(hostSecret, 'password'), ESXI_PASSWORD);
});

test('re-applying the same manifest changes nothing: no generation bump, the Forklift Secret and Provider untouched', async () => {
  const before = (await getSource(c, ns, 'vc'))!;
  const secretBefore = (await c.get<SecretObj>(GVRs.Secret, keyNs, (await projectedSecretNameOf(c, ns, 'vc'))!))!;
  const providerBefore = (await c.get(GVRs.Provider, ns, 'vmimport-vc'))!;
  const r = await applyAs(tenant, ns, manifest(world.password));
  // kubectl still sends a patch (its last-applied copy holds the sealed value, the manifest the plain
  // one); the webhook turns it into the stored object exactly, so the API server stores nothing.
  assert.equal(r.code, 0, r.stderr);
  const after = (await getSource(c, ns, 'vc'))!;
  assert.equal(after.metadata.generation, before.metadata.generation);
  assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion);
  // A later reconcile (forced by a label the controller ignores) leaves the projected Secret alone.
  await c.patch(GVRs.VMImportSource, ns, 'vc', { metadata: { labels: { touched: String(Date.now()) } } });
  await waitForReason(c, ns, 'vc', 'Connected');
  assert.equal((await c.get(GVRs.Secret, keyNs, (await projectedSecretNameOf(c, ns, 'vc'))!))!.metadata?.resourceVersion, secretBefore.metadata?.resourceVersion);
  assert.equal((await c.get(GVRs.Provider, ns, 'vmimport-vc'))!.metadata?.resourceVersion, providerBefore.metadata?.resourceVersion);
});

test('after a key is added, new passwords are sealed with it and values sealed with the old key still open', async () => {
  const key = (await c.get<SecretObj>(GVRs.Secret, keyNs, KEY_SECRET))!;
  await c.patch(GVRs.Secret, keyNs, KEY_SECRET, { data: { ...key.data, k2: randomBytes(32).toString('base64') } });
  // A wrong vCenter password, sealed with k2 (the webhook re-reads its ring within 200 ms), next to
  // the ESXi password still sealed with k1.
  const wrong = `wrong-${randomBytes(4).toString('hex')}`;
  await waitFor('a write sealed with k2', async () => {
    const r = await applyAs(tenant, ns, manifest(wrong));
    assert.equal(r.code, 0, r.stderr);
    const s = (await c.get<SourceObj>(GVRs.VMImportSource, ns, 'vc'))!;
    if (!s.spec.credentials.password!.startsWith('enc:v2:k2:')) {
      await applyAs(tenant, ns, manifest(world.password));
      return false;
    }
    return true;
  });
  const s = (await c.get<SourceObj>(GVRs.VMImportSource, ns, 'vc'))!;
  assert.match(s.spec.hosts![0]!.credentials.password!, /^enc:v2:k1:/);
  // The controller opened the k2 value and offered it to Forklift, whose Secret admission refused it
  // (vCenter said 401), so the projected Secret keeps the last good password.
  const failed = await waitForReason(c, ns, 'vc', 'AuthenticationFailed');
  assert.ok(!JSON.stringify(failed.status).includes(wrong));
  assert.equal(text(await c.get<SecretObj>(GVRs.Secret, keyNs, (await projectedSecretNameOf(c, ns, 'vc'))!), 'password'), world.password);
  assert.equal(text(await c.get<SecretObj>(GVRs.Secret, keyNs, (await projectedSecretNameOf(c, ns, 'vc', 'host-1'))!), 'password'), ESXI_PASSWORD);
  assert.equal((await applyAs(tenant, ns, manifest(world.password))).code, 0);
  await waitForReason(c, ns, 'vc', 'Connected');
});

test('a sealed value copied from another namespace is refused at admission', async () => {
  const stored = (await c.get<SourceObj>(GVRs.VMImportSource, ns, 'vc'))!;
  const other = await freshNamespace('sealed-b', { [wh.selector.key]: wh.selector.value });
  const otherTenant = await tenantWithRole(other);
  const r = await applyAs(otherTenant, other, manifest(stored.spec.credentials.password!));
  assert.notEqual(r.code, 0);
  assert.equal(
    denial(r.stderr),
    'spec.credentials.password is a sealed value (enc:v2:…) that cannot be used: it does not open here (altered, or sealed for another namespace, spec.url); write the password in plain text instead, it is sealed on admission',
  );
  assert.equal(readyOf(await getSource(c, other, 'vc')), undefined);
});

test('a sealed password cannot be retargeted: copied into a source of the same namespace with another URL it is refused, and changing the URL asks for the password again', async () => {
  const stored = (await c.get<SourceObj>(GVRs.VMImportSource, ns, 'vc'))!;
  const elsewhere = (password: string) => ({ ...manifest(password), metadata: { name: 'vc-retarget' }, spec: { ...manifest(password).spec, url: 'https://collector.example.net/sdk', hosts: [] } });
  const copied = await applyAs(tenant, ns, elsewhere(stored.spec.credentials.password!));
  assert.notEqual(copied.code, 0);
  assert.match(denial(copied.stderr), /^spec\.credentials\.password is a sealed value \(enc:v2:…\) that cannot be used: it does not open here/);
  assert.equal(await getSource(c, ns, 'vc-retarget'), undefined);
  const moved = await c.patch(GVRs.VMImportSource, ns, 'vc', { spec: { url: 'https://collector.example.net/sdk' } }).then(() => undefined, (e: Error) => e.message);
  assert.match(moved ?? 'admitted', /spec\.credentials\.password: spec\.url changed, and a sealed password opens only for the endpoint it was written for; write the password again in plain text/);
  assert.equal((await c.get<SourceObj & { spec: { url: string } }>(GVRs.VMImportSource, ns, 'vc'))!.spec.url, URL_VC);
});

test('a secretRef naming a Secret its author cannot read is refused; one the author can read feeds Forklift\'s Secret', async () => {
  const refNs = await freshNamespace('sealed-ref', { [wh.selector.key]: wh.selector.value });
  const author = await tenantWithRole(refNs);
  await c.create(GVRs.Secret, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'vc-password', namespace: refNs }, data: { pw: Buffer.from(world.password).toString('base64') } } as KubeObject);
  const withRef = { ...manifest('unused'), spec: { ...manifest('unused').spec, credentials: { username: world.user, secretRef: { name: 'vc-password', key: 'pw' }, caCert: world.caPEM } } };
  const refused = await applyAs(author, refNs, withRef);
  assert.notEqual(refused.code, 0);
  assert.equal(denial(refused.stderr), 'spec.credentials.secretRef: you may not read the Secret "vc-password" in this namespace; a source may name only a Secret its author can read');
  assert.equal(await getSource(c, refNs, 'vc'), undefined);

  // The author is allowed to read that one Secret: the source is admitted and connects with its password.
  const tenantName = (await testEnv()).tenants[0]!.name;
  const grant = await kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'read-vc-password', namespace: refNs }, rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['vc-password'], verbs: ['get'] }] },
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'read-vc-password', namespace: refNs }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-vc-password' }, subjects: [{ kind: 'User', name: tenantName, apiGroup: 'rbac.authorization.k8s.io' }] },
      ],
    }),
  });
  assert.equal(grant.code, 0, grant.stderr);
  // The webhook caches an access answer for up to 10 s.
  await waitFor('the author to be allowed', async () => (await applyAs(author, refNs, withRef)).code === 0, { timeoutMs: 20_000 });
  await waitForReason(c, refNs, 'vc', 'Connected');
  assert.equal(text(await c.get<SecretObj>(GVRs.Secret, keyNs, (await projectedSecretNameOf(c, refNs, 'vc'))!), 'password'), world.password);
});

/** Every key and value etcd holds, read over its v3 JSON gateway (not through the API server). */
async function etcdDump(): Promise<Array<{ key: string; value: Buffer }>> {
  const url = (await testEnv()).etcdURL;
  assert.ok(url, 'the control plane publishes its etcd URL');
  const zero = Buffer.from([0]).toString('base64');
  const r = await fetch(`${url}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: zero, range_end: zero }) });
  assert.equal(r.status, 200);
  const body = (await r.json()) as { kvs?: Array<{ key: string; value: string }> };
  return (body.kvs ?? []).map((kv) => ({ key: Buffer.from(kv.key, 'base64').toString('utf8'), value: Buffer.from(kv.value, 'base64') }));
}

test('the canary password is stored in etcd only in the projected Secret of the controller\'s namespace: not in the source, its status, Events, ConfigMaps or Forklift objects; nor in the metrics', async () => {
  await waitForReason(c, ns, 'vc', 'Connected');
  const holding = (await etcdDump())
    .filter((kv) => kv.value.includes(CANARY))
    .map((kv) => kv.key)
    .sort();
  // Besides the projected Secrets, only the Secret the secretRef test's tenant wrote itself holds it.
  const refNs = holding.find((k) => k.endsWith('/vc-password'))?.split('/')[3];
  assert.deepEqual(holding, [`/registry/secrets/${keyNs}/${(await projectedSecretNameOf(c, ns, 'vc'))!}`, `/registry/secrets/${keyNs}/${(await projectedSecretNameOf(c, refNs ?? '?', 'vc'))!}`, `/registry/secrets/${refNs}/vc-password`].sort());
  const metrics = await (await fetch(booted.ctl.metricsURL)).text();
  assert.ok(!metrics.includes(CANARY));
});

test('the canary password is absent from every line the controller logs, at debug level, after connecting with it', async () => {
  await waitForReason(c, ns, 'vc', 'Connected');
  // The controller did log (so the search below can find something): it connected the source it opened.
  assert.ok(logLines.length > 0, 'no log line captured');
  assert.ok(logLines.some((l) => l.includes(ns)), 'no log line about the source namespace');
  const leaking = logLines.filter((l) => l.includes(CANARY) || l.includes(ESXI_PASSWORD));
  assert.deepEqual(leaking, []);
});
