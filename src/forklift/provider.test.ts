import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { VMImportSource } from '../api/types.ts';
import {
  childName,
  destinationProviderName,
  hostObjectName,
  hostSecretName,
  mergeDesired,
  needsUpdate,
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

test('the credentials Secret carries user, password, cacert AND ca.crt, insecureSkipVerify and url, with the managed-by and Forklift labels', () => {
  const s = renderCredentialsSecret(src());
  assert.equal(s.metadata?.name, 'vmimport-vcenter-prod-credentials');
  assert.equal(s.metadata?.namespace, 'tenant-foo');
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
  assert.deepEqual(s.metadata?.ownerReferences?.[0], { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', name: 'vcenter-prod', uid: 'uid-1', controller: true, blockOwnerDeletion: true });
});

test('an insecure source gets insecureSkipVerify "true" and no CA keys', () => {
  const s = renderCredentialsSecret(src({ credentials: { username: 'u@d', password: 'p', insecureSkipVerify: true } }));
  assert.equal(dec(s.data!.insecureSkipVerify), 'true');
  assert.equal(s.data!.cacert, undefined);
  assert.equal(s.data!['ca.crt'], undefined);
});

test('the source Provider is vsphere with the VDDK image and sdkEndpoint vcenter; the destination is openshift with an empty url', () => {
  const p = renderSourceProvider(src(), 'reg/vddk:8', '42') as { spec: Record<string, unknown>; metadata: { name: string; annotations?: Record<string, string> } };
  assert.deepEqual(p.spec, { type: 'vsphere', url: 'https://vc.example.com/sdk', secret: { name: 'vmimport-vcenter-prod-credentials', namespace: 'tenant-foo' }, settings: { vddkInitImage: 'reg/vddk:8', sdkEndpoint: 'vcenter' } });
  assert.equal(p.metadata.name, sourceProviderName('vcenter-prod'));
  assert.equal(p.metadata.annotations?.['forklift.cozystack.io/secret-version'], '42');
  const d = renderDestinationProvider(src()) as { spec: Record<string, unknown>; metadata: { name: string } };
  assert.deepEqual(d.spec, { type: 'openshift', url: '' });
  assert.equal(d.metadata.name, destinationProviderName('vcenter-prod'));
});

test('a Host and its Secret per spec.hosts entry reference the source Provider and carry the ESXi account', () => {
  const s = src({ hosts: [{ id: 'host-10', address: '10.31.0.29', credentials: { username: 'root', password: 'esx', insecureSkipVerify: true } }] });
  const h = renderHost(s, s.spec.hosts![0]!) as { spec: Record<string, unknown>; metadata: { name: string; labels: Record<string, string> } };
  assert.deepEqual(h.spec, { id: 'host-10', provider: { name: sourceProviderName('vcenter-prod'), namespace: 'tenant-foo' }, ipAddress: '10.31.0.29', secret: { name: hostSecretName('vcenter-prod', 'host-10'), namespace: 'tenant-foo' } });
  assert.equal(h.metadata.labels['forklift.cozystack.io/host-id'], 'host-10');
  const sec = renderHostSecret(s, s.spec.hosts![0]!);
  assert.equal(dec(sec.data!.user), 'root');
  assert.equal(dec(sec.data!.password), 'esx');
  assert.equal(sec.metadata?.labels?.createdForResourceType, 'hosts');
});

test('a host Secret carries what Forklift\'s Secret webhook requires and tests: createdForResource = the host id, the Provider\'s name and the address', () => {
  const s = src({ hosts: [{ id: 'host-10', address: '10.31.0.29', credentials: { username: 'root', password: 'esx', insecureSkipVerify: true } }] });
  const sec = renderHostSecret(s, s.spec.hosts![0]!);
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
  assert.equal(hostSecretName('s', 'host-1'), 'vmimport-s-host-1-credentials');
});

test('an object is updated only when the desired spec, data, labels or owner differ', () => {
  const desired = renderSourceProvider(src(), 'img');
  const actual = { ...structuredClone(desired), status: { phase: 'Ready' }, metadata: { ...structuredClone(desired.metadata), resourceVersion: '5', labels: { ...desired.metadata!.labels, extra: 'x' } } };
  assert.equal(needsUpdate(desired, actual), false, 'extra labels and status do not count');
  assert.equal(needsUpdate(renderSourceProvider(src(), 'img2'), actual), true);
  const merged = mergeDesired(renderSourceProvider(src(), 'img2'), actual);
  assert.equal((merged.spec as { settings: { vddkInitImage: string } }).settings.vddkInitImage, 'img2');
  assert.equal(merged.metadata?.resourceVersion, '5', 'keeps resourceVersion for optimistic concurrency');
  assert.equal(merged.metadata?.labels?.extra, 'x');
  const s1 = renderCredentialsSecret(src());
  assert.equal(needsUpdate(renderCredentialsSecret(src({ credentials: { username: 'mtv@vsphere.local', password: 'rotated', caCert: 'PEM' } })), s1), true, 'a rotated password updates the Secret');
});
