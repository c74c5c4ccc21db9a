import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fastJsonPatch from 'fast-json-patch';
import { isSealed, seal, unseal, type Keyring } from '../credentials/seal.ts';
import { LAST_APPLIED, sealSourcePasswords, sealedKidsIn } from './seal-source.ts';

const ring: Keyring = { keys: new Map([['k1', new Uint8Array(randomBytes(32))]]), active: 'k1' };
const NS = 'tenant-a';
const VC = { namespace: NS, url: 'https://vc.example/sdk' };
const HOST = { ...VC, address: '192.0.2.1' };

function source(password: unknown, hostPassword: unknown = 'esxi-pw', url = 'https://vc.example/sdk', address = '192.0.2.1') {
  return {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportSource',
    metadata: { name: 'vc', namespace: NS },
    spec: {
      type: 'vsphere',
      url,
      credentials: { username: 'u@vsphere.local', password, insecureSkipVerify: true },
      hosts: [{ id: 'host-1', address, credentials: { username: 'root', password: hostPassword, insecureSkipVerify: true } }],
    },
  };
}

type Src = ReturnType<typeof source>;
const apply = (o: unknown, patch: unknown[]) => fastJsonPatch.applyPatch(structuredClone(o), patch as never).newDocument as Src;

test('a new source gets both passwords replaced by sealed values that open to them', () => {
  const r = sealSourcePasswords(ring, NS, source('vc-pw'), undefined);
  assert.deepEqual(r.problems, []);
  const out = apply(source('vc-pw'), r.patch);
  assert.ok(isSealed(out.spec.credentials.password));
  assert.equal(unseal(ring, out.spec.credentials.password as string, VC), 'vc-pw');
  assert.equal(unseal(ring, out.spec.hosts[0]!.credentials.password as string, HOST), 'esxi-pw');
  assert.deepEqual(r.patch.map((o) => o.op), ['replace', 'replace']);
});

test('re-applying the same plain password over the stored source yields no patch at all', () => {
  const stored = apply(source('vc-pw'), sealSourcePasswords(ring, NS, source('vc-pw'), undefined).patch);
  const r = sealSourcePasswords(ring, NS, source('vc-pw'), stored);
  assert.deepEqual(apply(source('vc-pw'), r.patch).spec, stored.spec);
  // Also when the stored value was sealed under an older key: it is kept, not re-sealed.
  const older: Keyring = { keys: new Map([['k0', new Uint8Array(randomBytes(32))], ...ring.keys]), active: 'k0' };
  const storedOld = source(seal(older, 'vc-pw', VC), seal(older, 'esxi-pw', HOST));
  assert.deepEqual(apply(source('vc-pw'), sealSourcePasswords({ ...older, active: 'k1' }, NS, source('vc-pw'), storedOld).patch).spec, storedOld.spec);
});

test('an unchanged sealed password is kept; a changed plain one is sealed afresh', () => {
  const stored = apply(source('vc-pw'), sealSourcePasswords(ring, NS, source('vc-pw'), undefined).patch);
  assert.deepEqual(sealSourcePasswords(ring, NS, stored, stored).patch, []);
  const changed = sealSourcePasswords(ring, NS, source('new-pw'), stored);
  assert.equal(unseal(ring, apply(source('new-pw'), changed.patch).spec.credentials.password as string, VC), 'new-pw');
});

test('a sealed value from another namespace or under an unknown key is refused without echoing it', () => {
  const foreign = seal(ring, 'vc-pw', { ...VC, namespace: 'tenant-b' });
  const r = sealSourcePasswords(ring, NS, source(foreign), undefined);
  assert.deepEqual(r.problems, [
    'spec.credentials.password is a sealed value (enc:v2:…) that cannot be used: it does not open here (altered, or sealed for another namespace, spec.url); write the password in plain text instead, it is sealed on admission',
  ]);
  const other: Keyring = { keys: new Map([['k9', new Uint8Array(randomBytes(32))]]), active: 'k9' };
  const unknown = seal(other, 'x', VC);
  assert.deepEqual(sealedKidsIn(source(unknown)), ['k9']);
  assert.match(sealSourcePasswords(ring, NS, source(unknown), undefined).problems[0]!, /sealed under key k9, which the key ring does not hold/);
  assert.deepEqual(r.patch, []);
});

test("kubectl's last-applied-configuration annotation carries the sealed value, never the plain one", () => {
  const manifest = source('vc-pw');
  const withAnnotation = { ...manifest, metadata: { ...manifest.metadata, annotations: { [LAST_APPLIED]: `${JSON.stringify(manifest)}\n`, other: 'x' } } };
  const out = apply(withAnnotation, sealSourcePasswords(ring, NS, withAnnotation, undefined).patch) as Src & { metadata: { annotations: Record<string, string> } };
  const text = out.metadata.annotations[LAST_APPLIED]!;
  assert.ok(!text.includes('vc-pw') && !text.includes('esxi-pw'));
  assert.ok(text.endsWith('\n'));
  const inner = JSON.parse(text) as Src;
  assert.equal(inner.spec.credentials.password, out.spec.credentials.password);
  assert.equal(out.metadata.annotations.other, 'x');
  // An annotation that is not JSON cannot be proven clean: it is dropped.
  const garbled = { ...manifest, metadata: { ...manifest.metadata, annotations: { [LAST_APPLIED]: '{"spec": vc-pw' } } };
  const g = apply(garbled, sealSourcePasswords(ring, NS, garbled, undefined).patch) as Src & { metadata: { annotations: Record<string, string> } };
  assert.deepEqual(g.metadata.annotations, {});
});

test('a secretRef credential has no password to seal and yields no patch', () => {
  const s = source(undefined);
  (s.spec.credentials as Record<string, unknown>).secretRef = { name: 'vc-secret' };
  delete (s.spec.credentials as Record<string, unknown>).password;
  const r = sealSourcePasswords(ring, NS, s, undefined);
  assert.deepEqual(r.patch.map((o) => o.path), ['/spec/hosts/0/credentials/password']);
});

test('a sealed password copied into a source of the same namespace with another URL, or another host address, is refused', () => {
  const stored = apply(source('vc-pw'), sealSourcePasswords(ring, NS, source('vc-pw'), undefined).patch);
  const [vc, esxi] = [stored.spec.credentials.password, stored.spec.hosts[0]!.credentials.password];
  const retargeted = sealSourcePasswords(ring, NS, source(vc, esxi, 'https://attacker.example.net/sdk'), undefined);
  assert.deepEqual(retargeted.patch, []);
  assert.deepEqual(retargeted.problems, [
    'spec.credentials.password is a sealed value (enc:v2:…) that cannot be used: it does not open here (altered, or sealed for another namespace, spec.url); write the password in plain text instead, it is sealed on admission',
    'spec.hosts[0].credentials.password is a sealed value (enc:v2:…) that cannot be used: it does not open here (altered, or sealed for another namespace, spec.url or spec.hosts[0].address); write the password in plain text instead, it is sealed on admission',
  ]);
  const otherHost = sealSourcePasswords(ring, NS, source(vc, esxi, 'https://vc.example/sdk', '198.51.100.9'), undefined);
  assert.equal(otherHost.problems.length, 1);
  assert.match(otherHost.problems[0]!, /^spec\.hosts\[0\]\.credentials\.password is a sealed value/);
  // The same copy for the very same endpoint (a source re-created from its own manifest) is fine.
  assert.deepEqual(sealSourcePasswords(ring, NS, source(vc, esxi), undefined).problems, []);
});

test('changing the URL of a stored source keeps no sealed password: the webhook asks for it again', () => {
  const stored = apply(source('vc-pw'), sealSourcePasswords(ring, NS, source('vc-pw'), undefined).patch);
  const moved = structuredClone(stored);
  moved.spec.url = 'https://attacker.example.net/sdk';
  assert.deepEqual(sealSourcePasswords(ring, NS, moved, stored).problems, [
    'spec.credentials.password: spec.url changed, and a sealed password opens only for the endpoint it was written for; write the password again in plain text; it is sealed on admission for the new endpoint',
    'spec.hosts[0].credentials.password: spec.url or spec.hosts[0].address changed, and a sealed password opens only for the endpoint it was written for; write the password again in plain text; it is sealed on admission for the new endpoint',
  ]);
  // With the passwords given again in plain text, the change is sealed for the new URL.
  const given = source('vc-pw', 'esxi-pw', 'https://attacker.example.net/sdk');
  const r = sealSourcePasswords(ring, NS, given, stored);
  assert.deepEqual(r.problems, []);
  const out = apply(given, r.patch);
  assert.equal(unseal(ring, out.spec.credentials.password as string, { ...VC, url: 'https://attacker.example.net/sdk' }), 'vc-pw');
  assert.notEqual(out.spec.credentials.password, stored.spec.credentials.password);
});
