// The webhook loads what its first reviews need before it listens (Reviewer.warm), so a tenant's first
// source is not the review that waits on the key ring's Secret; and a key ring that cannot be loaded yet
// never stops the webhook from starting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient } from '../runtime/kube.ts';
import { StaticKeyring, type KeyringSource } from '../credentials/keyring.ts';
import { createReviewer } from './server.ts';

const noCluster = new Proxy({}, { get: () => () => { throw new Error('no API server here'); } }) as unknown as KubeClient;

test('warming the reviewer loads the credentials key ring once, before any review', async () => {
  const ring = new StaticKeyring();
  let loads = 0;
  const keyring: KeyringSource = { get: () => (loads++, ring.get()) };
  const reviewer = createReviewer({ client: noCluster, keyring });
  assert.equal(loads, 0, 'creating the reviewer loads nothing');
  await reviewer.warm();
  assert.equal(loads, 1);
});

test('a key ring that cannot be loaded while warming does not fail the warm-up (the review that needs it tries again)', async () => {
  const keyring: KeyringSource = { get: () => Promise.reject(new Error('the credentials key Secret cannot be read')) };
  const reviewer = createReviewer({ client: noCluster, keyring, probeNamespace: 'mc-system' });
  await reviewer.warm();
});
