import { test } from 'node:test';
import assert from 'node:assert/strict';
import { boundedName, migrationName, networkMapName, planName, projectedSecretName, storageMapName } from './names.ts';

const UID = '0b7f3c0e-1111-2222-3333-444455556666';

test('scaffolding names are deterministic and stay within 63 characters', () => {
  const long = 'a'.repeat(200);
  for (const n of [networkMapName(long, UID), storageMapName(long, UID), planName(long, UID, 'vm-123456789'), migrationName(long, UID, 'vm-1')]) {
    assert.ok(n.length <= 63, n);
    assert.match(n, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
  }
  assert.equal(planName('t', UID, 'vm-1'), planName('t', UID, 'vm-1'));
});

test('two long task names sharing a 63-character prefix get different names', () => {
  const a = 'x'.repeat(70) + 'a';
  const b = 'x'.repeat(70) + 'b';
  assert.notEqual(planName(a, UID, 'vm-1'), planName(b, UID, 'vm-1'));
});

test('a re-created task of the same name never reuses an old Plan name', () => {
  assert.notEqual(planName('t', UID, 'vm-1'), planName('t', 'another-uid', 'vm-1'));
});

test('short names are kept readable', () => {
  assert.match(planName('web', UID, 'vm-42'), /^vmimport-web-[0-9a-f]{5}-vm-42$/);
  assert.equal(boundedName(['A_b', 'C']), 'a-b-c');
});

test("a projected Secret's name is the source's UID (and a 64-bit hash of the host id): no source name of any tenant reaches another's", () => {
  const uid = '6f1c2a8e-93b4-4e4f-9d1f-0a6c2f7b5e11';
  assert.equal(projectedSecretName(uid), `vmimport-${uid}`);
  const host = projectedSecretName(uid, 'host-123456789');
  assert.match(host, new RegExp(`^vmimport-${uid}-[0-9a-f]{16}$`));
  assert.ok(host.length <= 63);
  assert.notEqual(projectedSecretName(uid, 'host-1'), projectedSecretName(uid, 'host-2'));
  assert.notEqual(projectedSecretName(uid, 'host-1'), projectedSecretName('6f1c2a8e-93b4-4e4f-9d1f-0a6c2f7b5e12', 'host-1'));
});
