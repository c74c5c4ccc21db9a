import { test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import forge from 'node-forge';
import { CachedCA, InventoryClient, pickerList, statusInventory, type CASecretRead, type InventoryError } from './inventory.ts';

function makeCA(cn: string): { cert: forge.pki.Certificate; key: forge.pki.rsa.PrivateKey; pem: string } {
  const keys = forge.pki.rsa.generateKeyPair(2048);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = '01';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: 'commonName', value: cn }]);
  cert.setIssuer([{ name: 'commonName', value: cn }]);
  cert.setExtensions([{ name: 'basicConstraints', cA: true }, { name: 'keyUsage', keyCertSign: true }]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { cert, key: keys.privateKey, pem: forge.pki.certificateToPem(cert) };
}

function serving(ca: ReturnType<typeof makeCA>): { cert: string; key: string } {
  const keys = forge.pki.rsa.generateKeyPair(2048);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = '02';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: 'commonName', value: 'localhost' }]);
  cert.setIssuer(ca.cert.subject.attributes);
  cert.setExtensions([{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }]);
  cert.sign(ca.key, forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: forge.pki.privateKeyToPem(keys.privateKey) };
}

const ca = makeCA('inventory CA');
const other = makeCA('rotated CA');
const tls = serving(ca);

async function withServer(fn: (url: string, seen: string[]) => Promise<void>, pair: { cert: string; key: string } = tls): Promise<void> {
  const seen: string[] = [];
  const srv = https.createServer({ cert: pair.cert, key: pair.key }, (req, res) => {
    seen.push(`${req.url} ${req.headers.authorization}`);
    if (req.url === '/providers/vsphere/p-1/vms') return void res.end(JSON.stringify([{ id: 'vm-2', name: 'b', path: '/dc/vm/b' }, { id: 'vm-1', name: 'a', path: '/dc/vm/a' }]));
    if (req.url === '/providers/vsphere/p-1/vms/vm-1') return void res.end(JSON.stringify({ id: 'vm-1', name: 'a', firmware: 'efi', disks: [{ key: 2000, file: '[ds] a/a.vmdk', datastore: { kind: 'Datastore', id: 'datastore-1' }, capacity: 1024 }] }));
    res.writeHead(404).end('not found');
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  try {
    await fn(`https://127.0.0.1:${(srv.address() as AddressInfo).port}`, seen);
  } finally {
    srv.closeAllConnections();
    await new Promise((r) => srv.close(r));
  }
}

test('the inventory client verifies the published CA and sends the bearer token', async () => {
  await withServer(async (url, seen) => {
    const c = new InventoryClient({ baseURL: url, ca: () => ca.pem, token: async () => 'tok' });
    const vms = await c.listVMs('p-1');
    assert.deepEqual(vms.map((v) => v.id), ['vm-2', 'vm-1']);
    const vm = await c.getVM('p-1', 'vm-1');
    assert.equal(vm.firmware, 'efi');
    assert.equal(vm.disks[0]!.datastore.id, 'datastore-1');
    assert.equal(seen[0], '/providers/vsphere/p-1/vms Bearer tok');
    await assert.rejects(c.getVM('p-1', 'vm-9'), (e: InventoryError) => e.code === 'NotFound' && e.status === 404);
  });
});

test('a certificate the published CA does not validate gives a clear error naming the rollout restart', async () => {
  await withServer(async (url) => {
    const c = new InventoryClient({ baseURL: url, ca: () => other.pem, token: () => 'tok', forkliftNamespace: 'cozy-forklift' });
    await assert.rejects(c.listVMs('p-1'), (e: InventoryError) => {
      assert.equal(e.code, 'CAMismatch');
      assert.match(e.message, /kubectl -n cozy-forklift rollout restart deploy\/forklift-controller/);
      assert.doesNotMatch(e.message, /tok/);
      return true;
    });
  });
});

test('no published CA is an error, never an unverified connection', async () => {
  const c = new InventoryClient({ baseURL: 'https://127.0.0.1:1', ca: () => undefined, token: () => 'x' });
  await assert.rejects(c.listVMs('p'), (e: InventoryError) => e.code === 'NoCA');
});

test('the picker list is id/name/path, sorted, and capped with the total', () => {
  const vms = Array.from({ length: 7 }, (_, i) => ({ id: `vm-${i}`, name: `n${6 - i}`, path: `/dc/vm/n${6 - i}`, extra: 1 }));
  const r = pickerList(vms, 5);
  assert.equal(r.items.length, 5);
  assert.equal(r.truncated, true);
  assert.equal(r.total, 7);
  assert.deepEqual(r.items[0], { id: 'vm-6', name: 'n0', path: '/dc/vm/n0' });
  assert.equal(pickerList(vms, 5000).truncated, false);
});

test('the status inventory lists VMs by path, name and id, cut at a VM count or a byte budget with truncated and both counts', () => {
  const vms = [
    { id: 'vm-3', name: 'c', path: '/dc/vm/b/c' },
    { id: 'vm-1', name: 'a', path: '/dc/vm/a/a' },
    { id: 'vm-2', name: 'b', path: '/dc/vm/a/b' },
  ];
  const whole = statusInventory(vms, 10, 10_000);
  assert.deepEqual(whole, { total: 3, listed: 3, truncated: false, vms: [vms[1], vms[2], vms[0]] });
  const byCount = statusInventory(vms, 2, 10_000);
  assert.deepEqual([byCount.total, byCount.listed, byCount.truncated, byCount.vms.map((v) => v.id)], [3, 2, true, ['vm-1', 'vm-2']]);
  // Each entry is about 45 bytes of JSON: 100 bytes hold two.
  const byBytes = statusInventory(vms, 10, 100);
  assert.deepEqual([byBytes.listed, byBytes.truncated], [2, true]);
  assert.ok(Buffer.byteLength(JSON.stringify(byBytes.vms)) <= 100);
  assert.deepEqual(statusInventory([], 10, 100), { total: 0, listed: 0, truncated: false, vms: [] });
});

/** A stand-in for the Secret read: counts reads and serves whatever the test publishes. */
function secretReader(initial: CASecretRead | undefined): { read: () => Promise<CASecretRead | undefined>; reads: () => number; publish: (s: CASecretRead | undefined) => void } {
  let current = initial;
  let n = 0;
  return {
    read: async () => {
      n++;
      return current && { ...current };
    },
    reads: () => n,
    publish: (s) => (current = s),
  };
}

test('the inventory CA Secret is read once for many inventory calls, and again only after its TTL', async () => {
  await withServer(async (url) => {
    let now = 1_000;
    const secret = secretReader({ resourceVersion: '7', pem: ca.pem });
    const cached = new CachedCA({ read: secret.read, ttlMs: 60_000, now: () => now });
    const c = new InventoryClient({ baseURL: url, ca: () => cached.get(), refreshCA: () => cached.refresh(), token: () => 'tok' });
    // A burst (concurrent calls before the first read returns) and then sequential calls.
    await Promise.all(Array.from({ length: 5 }, () => c.listVMs('p-1')));
    for (let i = 0; i < 10; i++) await c.getVM('p-1', 'vm-1');
    assert.equal(secret.reads(), 1);
    assert.equal(cached.resourceVersion, '7');
    now += 60_000;
    await c.listVMs('p-1');
    assert.equal(secret.reads(), 2, 'one read once the TTL has passed');
    await c.listVMs('p-1');
    assert.equal(secret.reads(), 2);
  });
});

test('a rotated inventory certificate makes the client re-read the CA Secret at once and succeed with the new CA', async () => {
  await withServer(
    async (url) => {
      // The cache still holds the old CA; Forklift has already published the new one (a new resourceVersion).
      const secret = secretReader({ resourceVersion: '7', pem: ca.pem });
      const cached = new CachedCA({ read: secret.read, ttlMs: 60_000 });
      assert.equal(await cached.get(), ca.pem);
      secret.publish({ resourceVersion: '8', pem: other.pem });
      const c = new InventoryClient({ baseURL: url, ca: () => cached.get(), refreshCA: () => cached.refresh(), token: () => 'tok' });
      assert.equal((await c.listVMs('p-1')).length, 2);
      assert.equal(secret.reads(), 2);
      assert.equal(cached.resourceVersion, '8');
      await c.listVMs('p-1');
      assert.equal(secret.reads(), 2, 'the new CA is cached');
    },
    serving(other),
  );
});

test('a certificate the re-read CA still does not validate is reported after one re-read, not retried in a loop', async () => {
  await withServer(
    async (url) => {
      const secret = secretReader({ resourceVersion: '7', pem: ca.pem });
      const cached = new CachedCA({ read: secret.read, ttlMs: 60_000 });
      const c = new InventoryClient({ baseURL: url, ca: () => cached.get(), refreshCA: () => cached.refresh(), token: () => 'tok', forkliftNamespace: 'cozy-forklift' });
      await assert.rejects(c.listVMs('p-1'), (e: InventoryError) => e.code === 'CAMismatch');
      assert.equal(secret.reads(), 2, 'the first read and one re-read on the mismatch');
    },
    serving(other),
  );
});

test('an absent inventory CA Secret is not cached: the next call reads it again', async () => {
  const secret = secretReader(undefined);
  const cached = new CachedCA({ read: secret.read, ttlMs: 60_000 });
  assert.equal(await cached.get(), undefined);
  secret.publish({ resourceVersion: '1', pem: ca.pem });
  assert.equal(await cached.get(), ca.pem);
  assert.equal(secret.reads(), 2);
});
