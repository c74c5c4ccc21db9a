import { test } from 'node:test';
import assert from 'node:assert/strict';
import { replicaReady, startHealthServer } from '../../../src/runtime/health.ts';
import { Registry } from 'prom-client';

test('a replica whose admission webhook does not serve yet is not Ready, even with its caches synced', () => {
  assert.equal(replicaReady({ webhookRequired: true, webhookServing: false, cachesSynced: true }), false);
  assert.equal(replicaReady({ webhookRequired: true, webhookServing: true, cachesSynced: false }), false);
  assert.equal(replicaReady({ webhookRequired: true, webhookServing: true, cachesSynced: true }), true);
  assert.equal(replicaReady({ webhookRequired: false, webhookServing: false, cachesSynced: true }), true, 'webhook off: caches alone');
});

test('/readyz answers 503 until ready, then 200 naming the role (a standby is ready too)', async () => {
  let ready = false;
  const srv = await startHealthServer(0, { ready: () => ready, role: () => 'standby, webhook serving', registry: new Registry() }, '127.0.0.1');
  try {
    const before = await fetch(`${srv.url}/readyz`);
    assert.equal(before.status, 503);
    await before.text();
    ready = true;
    const after = await fetch(`${srv.url}/readyz`);
    assert.equal(after.status, 200);
    assert.equal(await after.text(), 'ok (standby, webhook serving)');
  } finally {
    await srv.close();
  }
});
