// VMImportSource against the simulated Forklift and vCenter on the real API server: what a tenant sees.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter, type Sim } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { CONTROLLER_NS, createSource, getSource, projectedSecret, readyOf, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-connect.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [
    { id: 'host-1', address: '10.96.0.50', otherAddresses: ['192.0.2.51'] },
    { id: 'host-2', address: '192.0.2.60' },
  ],
  vms: [
    { id: 'vm-3', name: 'web02', host: 'host-1' },
    { id: 'vm-1', name: 'app01', host: 'host-1' },
    { id: 'vm-2', name: 'db01', host: 'host-2' },
  ],
});
const good = { username: world.user, password: world.password, caCert: world.caPEM };
const spec = (over: object = {}) => ({ type: 'vsphere' as const, url: URL_VC, credentials: good, ...over });

let booted: BootedWorld;
let sim: Sim;
let ctl: BootedWorld['ctl'];
let c: KubeClient;

// The controller runs with VDDK_IMAGE (registry.example.com/vddk:8.0.3).
before(async () => {
  booted = await bootWorld({ worlds: [world] });
  ({ sim, ctl, c } = booted);
});

after(async () => {
  await booted?.shutdown();
});

const secretText = (s: KubeObject & { data?: Record<string, string> }, k: string): string => Buffer.from(s.data?.[k] ?? '', 'base64').toString('utf8');

test('a source with good credentials becomes Ready=Connected, projects the Secret (into the controller\'s namespace) and Providers, and publishes its sorted VM inventory', async () => {
  const ns = await freshNamespace('src');
  await createSource(c, ns, 'vc', spec());
  const s = await waitForReason(c, ns, 'vc', 'Connected');
  assert.equal(readyOf(s)?.status, 'True');
  assert.equal(s.status?.provider?.phase, 'Ready');
  assert.equal(s.status?.provider?.fingerprint, world.thumbprint);
  assert.ok(s.status?.provider?.uid);
  assert.ok(s.metadata.finalizers?.includes('forklift.cozystack.io/finalizer'));

  const secret = (await projectedSecret(c, ns, 'vc')) as KubeObject & { data: Record<string, string> };
  assert.equal(secret.metadata?.labels?.['apps.cozystack.io/managed-by'], 'cozystack-migration');
  assert.equal(secretText(secret, 'user'), world.user);
  assert.equal(secretText(secret, 'cacert'), world.caPEM);
  assert.equal(secretText(secret, 'ca.crt'), world.caPEM);
  assert.equal(secretText(secret, 'insecureSkipVerify'), 'false');
  assert.equal(secretText(secret, 'url'), URL_VC);
  assert.equal(secret.metadata?.labels?.['forklift.cozystack.io/source-uid'], s.metadata.uid);
  assert.equal(secret.metadata?.namespace, CONTROLLER_NS);
  // Nothing holding the credentials is left in the tenant's namespace.
  const inTenantNs = (await c.list(GVRs.Secret, ns)).items.filter((x) => (x as KubeObject & { type?: string }).type !== 'kubernetes.io/service-account-token');
  assert.deepEqual(inTenantNs.map((x) => x.metadata?.name), []);

  const providers = (await c.list(GVRs.Provider, ns)).items as Array<KubeObject & { spec: { type: string; url: string; settings?: { vddkInitImage?: string } } }>;
  assert.deepEqual(providers.map((p) => p.spec.type).sort(), ['openshift', 'vsphere']);
  assert.equal(providers.find((p) => p.spec.type === 'vsphere')?.spec.settings?.vddkInitImage, 'registry.example.com/vddk:8.0.3');
  assert.equal(providers.find((p) => p.spec.type === 'openshift')?.spec.url, '');

  const cm = await waitFor('inventory ConfigMap', () => c.get(GVRs.ConfigMap, ns, 'vmimport-inventory-vc'));
  const vms = JSON.parse((cm as unknown as { data: Record<string, string> }).data['vms.json']!) as Array<{ id: string; name: string; path: string }>;
  assert.deepEqual(vms.map((v) => v.name), ['app01', 'db01', 'web02']);
  assert.deepEqual(Object.keys(vms[0]!).sort(), ['id', 'name', 'path']);
  assert.equal(cm.metadata?.annotations?.['forklift.cozystack.io/inventory-truncated'], 'false');
  const again = await waitFor('vmCount in status', async () => ((await getSource(c, ns, 'vc'))?.status?.vmCount === 3 ? true : undefined));
  assert.ok(again);
});

test('a wrong password gives AuthenticationFailed with Forklift words, and rotating the password re-tests to Connected', async () => {
  const ns = await freshNamespace('src');
  await createSource(c, ns, 'vc', spec({ credentials: { ...good, password: 'wrong' } }));
  const s = await waitForReason(c, ns, 'vc', 'AuthenticationFailed');
  // Forklift's words: its Secret webhook's refusal, or the Provider's ConnectionAuthFailed.
  assert.match(readyOf(s)!.message, /incorrect user name or password|Invalid credentials/);
  assert.doesNotMatch(readyOf(s)!.message, /SSO domain/);
  assert.doesNotMatch(JSON.stringify(s.status), /wrong|vcenter-password/);
  await c.patch(GVRs.VMImportSource, ns, 'vc', { spec: { credentials: { password: world.password } } });
  await waitForReason(c, ns, 'vc', 'Connected');
  const secret = (await projectedSecret(c, ns, 'vc')) as KubeObject & { data: Record<string, string> };
  assert.equal(secretText(secret, 'password'), world.password);
});

test('a username without the SSO domain gives AuthenticationFailed mentioning the SSO domain', async () => {
  const ns = await freshNamespace('src');
  await createSource(c, ns, 'vc', spec({ credentials: { ...good, username: 'mtv' } }));
  const s = await waitForReason(c, ns, 'vc', 'AuthenticationFailed');
  assert.match(readyOf(s)!.message, /SSO domain/);
  assert.match(readyOf(s)!.message, /user@vsphere\.local/);
});

test('a SHA-1 thumbprint in caCert gives InvalidCACertificate saying a PEM CA is needed', async () => {
  const ns = await freshNamespace('src');
  // A bare thumbprint is refused by the API itself; one wrapped in PEM armour gets through to Forklift.
  await assert.rejects(createSource(c, ns, 'bare', spec({ credentials: { ...good, caCert: world.thumbprint } })), /caCert/);
  const armoured = `-----BEGIN CERTIFICATE-----\n${world.thumbprint}\n-----END CERTIFICATE-----\n`;
  await createSource(c, ns, 'vc', spec({ credentials: { ...good, caCert: armoured } }));
  const s = await waitForReason(c, ns, 'vc', 'InvalidCACertificate');
  assert.match(readyOf(s)!.message, /thumbprint/);
  // Forklift's own words: it cannot parse the CA (kubev2v/forklift@v2.11.5:pkg/lib/util/util.go tlsConfig).
  assert.match(readyOf(s)!.message, /failed to parse the specified certificate/);
});

test('a CA that did not sign the vCenter certificate gives InvalidCACertificate with the x509 error', async () => {
  const ns = await freshNamespace('src');
  await createSource(c, ns, 'vc', spec({ credentials: { ...good, caCert: world.wrongCaPEM } }));
  const s = await waitForReason(c, ns, 'vc', 'InvalidCACertificate');
  assert.match(readyOf(s)!.message, /x509: certificate signed by unknown authority/);
});

test('a Secret in the tenant namespace named like the one earlier versions projected is neither read nor touched', async () => {
  const ns = await freshNamespace('src');
  await c.create(GVRs.Secret, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'vmimport-vc-credentials', namespace: ns }, data: { user: Buffer.from('someone-else').toString('base64') } } as KubeObject);
  await createSource(c, ns, 'vc', spec());
  await waitForReason(c, ns, 'vc', 'Connected');
  const tenantSecret = (await c.get(GVRs.Secret, ns, 'vmimport-vc-credentials')) as KubeObject & { data: Record<string, string> };
  assert.deepEqual(Object.keys(tenantSecret.data), ['user']);
  assert.equal(secretText(tenantSecret, 'user'), 'someone-else');
  const provider = (await c.get(GVRs.Provider, ns, 'vmimport-vc')) as KubeObject & { spec: { secret: { namespace: string } } };
  assert.equal(provider.spec.secret.namespace, CONTROLLER_NS);
});

test('a host override Forklift cannot reach makes the source HostUnreachable; a reachable one is Ready per host', async () => {
  const ns = await freshNamespace('src');
  const hostCreds = { username: 'root', password: world.hosts[0]!.password, insecureSkipVerify: true };
  // 192.0.2.52 is allowed by the egress policy but is not an address the simulated host answers on.
  await createSource(c, ns, 'vc', spec({ hosts: [{ id: 'host-1', address: '192.0.2.52', credentials: hostCreds }] }));
  const s = await waitForReason(c, ns, 'vc', 'HostUnreachable');
  assert.match(readyOf(s)!.message, /host-1 \(192\.0\.2\.52\)/);
  assert.equal(s.status?.hosts?.[0]?.ready, false);
  await c.patch(GVRs.VMImportSource, ns, 'vc', { spec: { hosts: [{ id: 'host-1', address: '192.0.2.51', credentials: hostCreds }] } });
  const ok = await waitForReason(c, ns, 'vc', 'Connected');
  assert.deepEqual(ok.status?.hosts?.map((h) => [h.id, h.address, h.ready]), [['host-1', '192.0.2.51', true]]);
});

test('two sources in one namespace never touch each other\'s hosts: removing a host from one prunes only its own', async () => {
  const ns = await freshNamespace('src');
  const hc = (id: string) => ({ username: 'root', password: world.hosts.find((h) => h.id === id)!.password, insecureSkipVerify: true });
  await createSource(c, ns, 'a', spec({ hosts: [{ id: 'host-1', address: '192.0.2.51', credentials: hc('host-1') }, { id: 'host-2', address: '192.0.2.60', credentials: hc('host-2') }] }));
  await createSource(c, ns, 'b', spec({ hosts: [{ id: 'host-1', address: '192.0.2.51', credentials: hc('host-1') }, { id: 'host-2', address: '192.0.2.60', credentials: hc('host-2') }] }));
  await waitForReason(c, ns, 'a', 'Connected');
  await waitForReason(c, ns, 'b', 'Connected');
  const hosts = async () => (await c.list(GVRs.Host, ns)).items.map((h) => h.metadata!.name!).sort();
  assert.equal((await hosts()).length, 4);
  await c.patch(GVRs.VMImportSource, ns, 'a', { spec: { hosts: [{ id: 'host-2', address: '192.0.2.60', credentials: hc('host-2') }] } });
  await waitFor('a\'s host-1 pruned', async () => ((await hosts()).length === 3 ? true : undefined));
  const left = await hosts();
  assert.ok(!left.includes('vmimport-a-host-1'));
  assert.ok(left.includes('vmimport-b-host-1') && left.includes('vmimport-b-host-2') && left.includes('vmimport-a-host-2'));
  const hostSecrets = (await c.list(GVRs.Secret, CONTROLLER_NS, { labelSelector: `forklift.cozystack.io/host-id,forklift.cozystack.io/source-namespace=${ns}` })).items
    .map((s) => `${s.metadata!.labels!['forklift.cozystack.io/source']}/${s.metadata!.labels!['forklift.cozystack.io/host-id']}`)
    .sort();
  assert.deepEqual(hostSecrets, ['a/host-2', 'b/host-1', 'b/host-2']);
  await waitForReason(c, ns, 'b', 'Connected');
});

test('deleting the source removes every Forklift object, Secret and the inventory ConfigMap', async () => {
  const ns = await freshNamespace('src');
  await createSource(c, ns, 'vc', spec({ hosts: [{ id: 'host-2', address: '192.0.2.60', credentials: { username: 'root', password: world.hosts[1]!.password, insecureSkipVerify: true } }] }));
  await waitForReason(c, ns, 'vc', 'Connected');
  await waitFor('inventory ConfigMap', () => c.get(GVRs.ConfigMap, ns, 'vmimport-inventory-vc'));
  await c.delete(GVRs.VMImportSource, ns, 'vc');
  await waitFor('source gone', async () => !(await getSource(c, ns, 'vc')));
  await waitFor('everything the source created is gone', async () => {
    const counts = await Promise.all([
      c.list(GVRs.Provider, ns),
      c.list(GVRs.Host, ns),
      c.list(GVRs.Secret, CONTROLLER_NS, { labelSelector: `forklift.cozystack.io/source-namespace=${ns}` }),
      c.list(GVRs.ConfigMap, ns, { labelSelector: 'forklift.cozystack.io/source=vc' }),
    ]);
    return counts.every((l) => l.items.length === 0);
  });
  assert.equal(await projectedSecret(c, ns, 'vc'), undefined);
  assert.equal(await projectedSecret(c, ns, 'vc', 'host-2'), undefined);
});

test('the metrics endpoint reports reconciles under the one project prefix', async () => {
  const text = await (await fetch(ctl.metricsURL)).text();
  assert.match(text, /migration_controller_reconcile_total\{controller="vmimportsource",result="(success|requeue)"\} \d+/);
  assert.match(text, /migration_controller_workqueue_adds_total\{name="vmimportsource"\} \d+/);
  assert.match(text, /migration_controller_api_requests_total\{verb="PATCH",resource="vmimportsources",code="200"\}/);
});

test('an inventory certificate its published CA no longer validates is reported with the rollout-restart fix', async () => {
  const ns = await freshNamespace('src');
  await sim.setInventoryCertMismatch(true);
  try {
    await createSource(c, ns, 'vc', spec());
    await waitForReason(c, ns, 'vc', 'Connected');
    const ev = await waitFor('an InventoryUnavailable Event', async () =>
      (await c.list(GVRs.Event, ns)).items.find((e) => (e as unknown as { reason: string }).reason === 'InventoryUnavailable'),
    );
    const message = (ev as unknown as { message: string; type: string }).message;
    assert.equal((ev as unknown as { type: string }).type, 'Warning');
    assert.match(message, /kubectl -n cozy-forklift rollout restart deploy\/forklift-controller/);
    assert.equal(await c.get(GVRs.ConfigMap, ns, 'vmimport-inventory-vc'), undefined, 'nothing published from an unverified server');
  } finally {
    await sim.setInventoryCertMismatch(false);
  }
  await waitFor('the inventory is published once the certificate matches again', () => c.get(GVRs.ConfigMap, ns, 'vmimport-inventory-vc'), { timeoutMs: 30_000 });
});

test('when vCenter\'s password changes, Forklift\'s AuthenticationFailed shows, and rotating the password in the spec re-tests to Connected', async () => {
  const ns = await freshNamespace('src');
  // The live vCenter model: its password changes for the duration of this test.
  const w = sim.world(URL_VC);
  const original = w.fixture.password;
  await createSource(c, ns, 'vc', spec());
  await waitForReason(c, ns, 'vc', 'Connected');
  try {
    w.fixture.password = 'rotated-in-vcenter';
    // Forklift looks again when the Provider's spec changes (a new generation; an annotation is filtered
    // out, and a write to its Secret is refused by Forklift's Secret webhook, which logs in with the now
    // stale password: test/sim/SIDE-EFFECTS.md). The controller then puts the spec back: another look.
    await c.patch(GVRs.Provider, ns, 'vmimport-vc', { spec: { settings: { 'e2e-poke': '1' } } });
    const failed = await waitForReason(c, ns, 'vc', 'AuthenticationFailed');
    assert.match(readyOf(failed)!.message, /incorrect user name or password/);
    await c.patch(GVRs.VMImportSource, ns, 'vc', { spec: { credentials: { password: 'rotated-in-vcenter' } } });
    await waitForReason(c, ns, 'vc', 'Connected');
    const secret = (await projectedSecret(c, ns, 'vc')) as KubeObject & { data: Record<string, string> };
    assert.equal(secretText(secret, 'password'), 'rotated-in-vcenter');
  } finally {
    w.fixture.password = original;
  }
});
