import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fastJsonPatch from 'fast-json-patch';
import { isSealed, seal, unseal, type Keyring } from '../credentials/seal.ts';
import { LAST_APPLIED, sealSourcePasswords, sealedKidsIn } from './seal-source.ts';

const ring: Keyring = { keys: new Map([['k1', new Uint8Array(randomBytes(32))]]), active: 'k1' };
const NS = 'tenant-a';

function source(password: unknown, hostPassword: unknown = 'esxi-pw') {
  return {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportSource',
    metadata: { name: 'vc', namespace: NS },
    spec: {
      type: 'vsphere',
      url: 'https://vc.example/sdk',
      credentials: { username: 'u@vsphere.local', password, insecureSkipVerify: true },
      hosts: [{ id: 'host-1', address: '192.0.2.1', credentials: { username: 'root', password: hostPassword, insecureSkipVerify: true } }],
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
  assert.equal(unseal(ring, out.spec.credentials.password as string, NS), 'vc-pw');
  assert.equal(unseal(ring, out.spec.hosts[0]!.credentials.password as string, NS), 'esxi-pw');
  assert.deepEqual(r.patch.map((o) => o.op), ['replace', 'replace']);
});

test('re-applying the same plain password over the stored source yields no patch at all', () => {
  const stored = apply(source('vc-pw'), sealSourcePasswords(ring, NS, source('vc-pw'), undefined).patch);
  const r = sealSourcePasswords(ring, NS, source('vc-pw'), stored);
  assert.deepEqual(apply(source('vc-pw'), r.patch).spec, stored.spec);
  // Also when the stored value was sealed under an older key: it is kept, not re-sealed.
  const older: Keyring = { keys: new Map([['k0', new Uint8Array(randomBytes(32))], ...ring.keys]), active: 'k0' };
  const storedOld = source(seal(older, 'vc-pw', NS), seal(older, 'esxi-pw', NS));
  assert.deepEqual(apply(source('vc-pw'), sealSourcePasswords({ ...older, active: 'k1' }, NS, source('vc-pw'), storedOld).patch).spec, storedOld.spec);
});

test('an unchanged sealed password is kept; a changed plain one is sealed afresh', () => {
  const stored = apply(source('vc-pw'), sealSourcePasswords(ring, NS, source('vc-pw'), undefined).patch);
  assert.deepEqual(sealSourcePasswords(ring, NS, stored, stored).patch, []);
  const changed = sealSourcePasswords(ring, NS, source('new-pw'), stored);
  assert.equal(unseal(ring, apply(source('new-pw'), changed.patch).spec.credentials.password as string, NS), 'new-pw');
});

test('a sealed value from another namespace or under an unknown key is refused without echoing it', () => {
  const foreign = seal(ring, 'vc-pw', 'tenant-b');
  const r = sealSourcePasswords(ring, NS, source(foreign), undefined);
  assert.deepEqual(r.problems, [
    'spec.credentials.password is a sealed value (enc:v1:…) that cannot be used: it does not open here (altered, or sealed for another namespace); write the password in plain text instead, it is sealed on admission',
  ]);
  const other: Keyring = { keys: new Map([['k9', new Uint8Array(randomBytes(32))]]), active: 'k9' };
  const unknown = seal(other, 'x', NS);
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
