import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { gcmsiv } from '@noble/ciphers/aes.js';
import fc from 'fast-check';
import { SealError, compareKids, isSealed, keyringFromSecretData, seal, sealedKid, unseal, type Keyring, type SealBinding } from './seal.ts';

const key = () => new Uint8Array(randomBytes(32));
const ring1: Keyring = { keys: new Map([['k1', key()]]), active: 'k1' };
const at = (namespace: string, url = 'https://vc.example.com/sdk', address?: string): SealBinding => ({ namespace, url, ...(address !== undefined ? { address } : {}) });

test('sealing is deterministic: the same password, key and endpoint give the same text, which opens to the password', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 300 }), fc.stringMatching(/^[a-z0-9-]{1,63}$/), fc.webUrl(), (pw, ns, url) => {
      const a = seal(ring1, pw, at(ns, url));
      assert.equal(seal(ring1, pw, at(ns, url)), a);
      assert.ok(isSealed(a));
      assert.match(a, /^enc:v2:k1:/);
      assert.equal(sealedKid(a), 'k1');
      assert.equal(unseal(ring1, a, at(ns, url)), pw);
      if (pw.length >= 4) assert.ok(!a.includes(pw), 'the password shows through');
    }),
  );
});

test('a sealed value does not open in another namespace, nor after one character is changed', () => {
  const v = seal(ring1, 'correct horse', at('tenant-a'));
  assert.throws(() => unseal(ring1, v, at('tenant-b')), (e: unknown) => e instanceof SealError && e.code === 'Invalid' && !e.message.includes('correct horse'));
  const last = v.at(-3) === 'A' ? 'B' : 'A';
  const tampered = `${v.slice(0, -3)}${last}${v.slice(-2)}`;
  assert.throws(() => unseal(ring1, tampered, at('tenant-a')), SealError);
});

test('a sealed value does not open for another URL of the same namespace, nor a host password for another address', () => {
  const vc = seal(ring1, 'vc-pw', at('tenant-a', 'https://vc.example.com/sdk'));
  assert.throws(() => unseal(ring1, vc, at('tenant-a', 'https://attacker.example.net/sdk')), (e: unknown) => e instanceof SealError && e.code === 'Invalid' && /for this endpoint/.test(e.message));
  const host = seal(ring1, 'esxi-pw', at('tenant-a', 'https://vc.example.com/sdk', '192.0.2.10'));
  assert.equal(unseal(ring1, host, at('tenant-a', 'https://vc.example.com/sdk', '192.0.2.10')), 'esxi-pw');
  assert.throws(() => unseal(ring1, host, at('tenant-a', 'https://vc.example.com/sdk', '198.51.100.7')), SealError);
  assert.throws(() => unseal(ring1, host, at('tenant-a', 'https://vc.example.com/sdk')), SealError, 'a host password is not a vCenter password');
  // No two bindings share an encoding: a URL cannot absorb the namespace's boundary.
  assert.throws(() => unseal(ring1, seal(ring1, 'p', at('a', 'b')), { namespace: 'a","b', url: '' }), SealError);
});

test('a value sealed by an earlier version (enc:v1, bound to the namespace) still opens in its namespace only', () => {
  const k = ring1.keys.get('k1')!;
  const ct = gcmsiv(k, new Uint8Array(12), new TextEncoder().encode('forklift.cozystack.io/VMImportSource/tenant-a')).encrypt(new TextEncoder().encode('old-pw'));
  const v1 = `enc:v1:k1:${Buffer.from(ct).toString('base64')}`;
  assert.ok(isSealed(v1));
  assert.equal(sealedKid(v1), 'k1');
  assert.equal(unseal(ring1, v1, at('tenant-a', 'https://any.example/sdk')), 'old-pw');
  assert.throws(() => unseal(ring1, v1, at('tenant-b')), SealError);
});

test('after a rotation new writes use the newest key and values sealed under the old key still open', () => {
  const rotated: Keyring = { keys: new Map([...ring1.keys, ['k2', key()]]), active: 'k2' };
  const old = seal(ring1, 'pw', at('ns'));
  assert.equal(sealedKid(seal(rotated, 'pw', at('ns'))), 'k2');
  assert.equal(unseal(rotated, old, at('ns')), 'pw');
  assert.throws(() => unseal(ring1, seal(rotated, 'pw', at('ns')), at('ns')), (e: unknown) => e instanceof SealError && e.code === 'UnknownKey');
});

test('the key ring from a Secret takes 32-byte entries named like key ids; the greatest id is active unless one is named', () => {
  const b = (n: number) => randomBytes(n).toString('base64');
  const r = keyringFromSecretData({ k2: b(32), k10: b(32), short: b(16), 'Not_A_Kid': b(32) });
  assert.ok('ring' in r);
  assert.deepEqual([...r.ring.keys.keys()].sort(compareKids), ['k2', 'k10']);
  assert.equal(r.ring.active, 'k10');
  const named = keyringFromSecretData({ k2: b(32), k10: b(32) }, 'k2');
  assert.equal('ring' in named && named.ring.active, 'k2');
  const none = keyringFromSecretData({ short: b(16) });
  assert.deepEqual(none, { error: 'no usable key; skipped short (16 bytes, not 32)' });
});

test('a password longer than 1024 bytes is refused rather than sealed', () => {
  assert.throws(() => seal(ring1, 'x'.repeat(1025), at('ns')), (e: unknown) => e instanceof SealError && e.code === 'TooLong');
  assert.ok(seal(ring1, 'x'.repeat(1024), at('n'.repeat(63), `https://${'h'.repeat(2000)}/sdk`)).length <= 2048);
});
