import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { SealError, compareKids, isSealed, keyringFromSecretData, seal, sealedKid, unseal, type Keyring } from './seal.ts';

const key = () => new Uint8Array(randomBytes(32));
const ring1: Keyring = { keys: new Map([['k1', key()]]), active: 'k1' };

test('sealing is deterministic: the same password, key and namespace give the same text, which opens to the password', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 300 }), fc.stringMatching(/^[a-z0-9-]{1,63}$/), (pw, ns) => {
      const a = seal(ring1, pw, ns);
      assert.equal(seal(ring1, pw, ns), a);
      assert.ok(isSealed(a));
      assert.equal(sealedKid(a), 'k1');
      assert.equal(unseal(ring1, a, ns), pw);
      if (pw.length >= 4) assert.ok(!a.includes(pw), 'the password shows through');
    }),
  );
});

test('a sealed value does not open in another namespace, nor after one character is changed', () => {
  const v = seal(ring1, 'correct horse', 'tenant-a');
  assert.throws(() => unseal(ring1, v, 'tenant-b'), (e: unknown) => e instanceof SealError && e.code === 'Invalid' && !e.message.includes('correct horse'));
  const last = v.at(-3) === 'A' ? 'B' : 'A';
  const tampered = `${v.slice(0, -3)}${last}${v.slice(-2)}`;
  assert.throws(() => unseal(ring1, tampered, 'tenant-a'), SealError);
});

test('after a rotation new writes use the newest key and values sealed under the old key still open', () => {
  const rotated: Keyring = { keys: new Map([...ring1.keys, ['k2', key()]]), active: 'k2' };
  const old = seal(ring1, 'pw', 'ns');
  assert.equal(sealedKid(seal(rotated, 'pw', 'ns')), 'k2');
  assert.equal(unseal(rotated, old, 'ns'), 'pw');
  assert.throws(() => unseal(ring1, seal(rotated, 'pw', 'ns'), 'ns'), (e: unknown) => e instanceof SealError && e.code === 'UnknownKey');
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
  assert.throws(() => seal(ring1, 'x'.repeat(1025), 'ns'), (e: unknown) => e instanceof SealError && e.code === 'TooLong');
  assert.ok(seal(ring1, 'x'.repeat(1024), 'ns').length <= 2048);
});
