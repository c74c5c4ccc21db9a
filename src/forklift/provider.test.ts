import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { VMImportSource } from '../api/types.ts';
import {
  childName,
  credentialsSecretName,
  destinationProviderName,
  hostObjectName,
  hostSecretName,
  mergeDesired,
  needsUpdate,
  legacyProjectedSecretName,
  renderCredentialsSecret,
  renderDestinationProvider,
  renderHost,
  renderHostSecret,
  renderSourceProvider,
  sourceProviderName,
} from './provider.ts';

const src = (over: Partial<VMImportSource['spec']> = {}, name = 'vcenter-prod'): VMImportSource => ({
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportSource',
  metadata: { name, namespace: 'tenant-foo', uid: 'uid-1', generation: 1 },
  spec: { type: 'vsphere', url: 'https://vc.example.com/sdk', credentials: { username: 'mtv@vsphere.local', password: 'pw', caCert: 'PEM' }, ...over },
});
const dec = (s: string | undefined): string => Buffer.from(s ?? '', 'base64').toString('utf8');

const CTL_NS = 'cozy-migration-controller';

test('the credentials Secret lives in the controller\'s namespace and carries user, password, cacert AND ca.crt, insecureSkipVerify and url, with the managed-by, source and Forklift labels', () => {
  const s = renderCredentialsSecret(src(), CTL_NS);
  assert.equal(s.metadata?.name, credentialsSecretName(src()));
  assert.equal(s.metadata!.name!, 'vmimport-uid-1', "named after the source's UID");
  assert.equal(s.metadata?.namespace, CTL_NS);
  assert.deepEqual(Object.fromEntries(Object.entries(s.data!).map(([k, v]) => [k, dec(v)])), {
    user: 'mtv@vsphere.local',
    password: 'pw',
    cacert: 'PEM',
    'ca.crt': 'PEM',
    insecureSkipVerify: 'false',
    url: 'https://vc.example.com/sdk',
  });
  assert.equal(s.metadata?.labels?.['apps.cozystack.io/managed-by'], 'cozystack-migration');
  assert.equal(s.metadata?.labels?.createdForResourceType, 'providers');
  assert.equal(s.metadata?.labels?.createdForProviderType, 'vsphere');
  assert.equal(s.metadata?.labels?.['forklift.cozystack.io/source-uid'], 'uid-1');
  assert.equal(s.metadata?.labels?.['forklift.cozystack.io/source-namespace'], 'tenant-foo');
  // Owner references cannot cross namespaces: the source's finalizer removes it.
  assert.equal(s.metadata?.ownerReferences, undefined);
});

test('an insecure source gets insecureSkipVerify "true" and no CA keys', () => {
  const s = renderCredentialsSecret(src({ credentials: { username: 'u@d', password: 'p', insecureSkipVerify: true } }), CTL_NS);
  assert.equal(dec(s.data!.insecureSkipVerify), 'true');
  assert.equal(s.data!.cacert, undefined);
  assert.equal(s.data!['ca.crt'], undefined);
});

test('the source Provider is vsphere with the VDDK image and sdkEndpoint vcenter; the destination is openshift with an empty url', () => {
  const p = renderSourceProvider(src(), 'reg/vddk:8', CTL_NS) as { spec: Record<string, unknown>; metadata: { name: string; namespace: string; annotations?: Record<string, string> } };
  assert.deepEqual(p.spec, { type: 'vsphere', url: 'https://vc.example.com/sdk', secret: { name: credentialsSecretName(src()), namespace: CTL_NS }, settings: { vddkInitImage: 'reg/vddk:8', sdkEndpoint: 'vcenter' } });
  assert.equal(p.metadata.namespace, 'tenant-foo');
  assert.equal(p.metadata.name, sourceProviderName('vcenter-prod'));
  // Forklift filters annotation-only Provider updates (provider/predicate.go): a re-test goes through the Secret.
  assert.equal(p.metadata.annotations, undefined);
  const d = renderDestinationProvider(src()) as { spec: Record<string, unknown>; metadata: { name: string } };
  assert.deepEqual(d.spec, { type: 'openshift', url: '', secret: {} });
  assert.equal(d.metadata.name, destinationProviderName('vcenter-prod'));
});

test('a Host and its Secret per spec.hosts entry reference the source Provider and carry the ESXi account', () => {
  const s = src({ hosts: [{ id: 'host-10', address: '10.31.0.29', credentials: { username: 'root', password: 'esx', insecureSkipVerify: true } }] });
  const h = renderHost(s, s.spec.hosts![0]!, CTL_NS) as { spec: Record<string, unknown>; metadata: { name: string; labels: Record<string, string> } };
  assert.deepEqual(h.spec, { id: 'host-10', provider: { name: sourceProviderName('vcenter-prod'), namespace: 'tenant-foo' }, ipAddress: '10.31.0.29', secret: { name: hostSecretName(s, 'host-10'), namespace: CTL_NS } });
  assert.equal(h.metadata.labels['forklift.cozystack.io/host-id'], 'host-10');
  const sec = renderHostSecret(s, s.spec.hosts![0]!, CTL_NS);
  assert.equal(sec.metadata?.namespace, CTL_NS);
  assert.equal(dec(sec.data!.user), 'root');
  assert.equal(dec(sec.data!.password), 'esx');
  assert.equal(sec.metadata?.labels?.createdForResourceType, 'hosts');
});

test('a host Secret carries what Forklift\'s Secret webhook requires and tests: createdForResource = the host id, the Provider\'s name and the address', () => {
  const s = src({ hosts: [{ id: 'host-10', address: '10.31.0.29', credentials: { username: 'root', password: 'esx', insecureSkipVerify: true } }] });
  const sec = renderHostSecret(s, s.spec.hosts![0]!, 'cozy-migration-controller');
  assert.equal(sec.metadata?.labels?.createdForResource, 'host-10');
  assert.equal(dec(sec.data!.provider), sourceProviderName('vcenter-prod'));
  assert.equal(dec(sec.data!.ip), '10.31.0.29');
  // Present, so the mutating webhook never needs the Provider's Secret.
  assert.equal(dec(sec.data!.insecureSkipVerify), 'true');
});

test('child names are deterministic DNS labels within 63 characters, distinct for distinct long sources', () => {
  const long = 'a'.repeat(60);
  const a = hostObjectName(long, 'host-10');
  const b = hostObjectName(`${long}b`, 'host-10');
  assert.ok(a.length <= 63 && b.length <= 63);
  assert.notEqual(a, b);
  assert.equal(a, hostObjectName(long, 'host-10'));
  assert.match(a, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
  assert.equal(childName('vmimport', 'Web_01'), 'vmimport-web-01');
  // The legacy projected names (read only to clean up): different (namespace, source) pairs never met.
  assert.notEqual(legacyProjectedSecretName('a-b', 'c'), legacyProjectedSecretName('a', 'b-c'));
});

test('an object is updated only when the desired spec, data, labels or owner differ', () => {
  const desired = renderSourceProvider(src(), 'img', CTL_NS);
  const actual = { ...structuredClone(desired), status: { phase: 'Ready' }, metadata: { ...structuredClone(desired.metadata), resourceVersion: '5', labels: { ...desired.metadata!.labels, extra: 'x' } } };
  assert.equal(needsUpdate(desired, actual), false, 'extra labels and status do not count');
  assert.equal(needsUpdate(renderSourceProvider(src(), 'img2', CTL_NS), actual), true);
  const merged = mergeDesired(renderSourceProvider(src(), 'img2', CTL_NS), actual);
  assert.equal((merged.spec as { settings: { vddkInitImage: string } }).settings.vddkInitImage, 'img2');
  assert.equal(merged.metadata?.resourceVersion, '5', 'keeps resourceVersion for optimistic concurrency');
  assert.equal(merged.metadata?.labels?.extra, 'x');
  const s1 = renderCredentialsSecret(src(), CTL_NS);
  assert.equal(needsUpdate(renderCredentialsSecret(src({ credentials: { username: 'mtv@vsphere.local', password: 'rotated', caCert: 'PEM' } }), CTL_NS), s1), true, 'a rotated password updates the Secret');
});
