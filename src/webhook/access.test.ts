import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ACCESS_REFRESH_MS, ACCESS_TTL_MS, SARAccessChecker } from './access.ts';
import type { KubeClient } from '../runtime/kube.ts';

/** An API server that answers SubjectAccessReviews with `allowed`, counting them. */
function sarServer(allowed: { now: boolean }) {
  const reviews = { n: 0 };
  const client = {
    async create(_gvr: unknown, body: { spec?: unknown }) {
      reviews.n++;
      return { ...body, status: { allowed: allowed.now } };
    },
  } as unknown as KubeClient;
  return { client, reviews };
}

const user = { username: 'tenant', uid: 'u-1', groups: ['system:authenticated'] };
const attrs = { namespace: 't', verb: 'get', group: 'forklift.cozystack.io', resource: 'vmimportsources' };
const settle = () => new Promise((r) => setImmediate(r));

test("a tenant's stream of reviews never waits on an access review, and a revoked permission is honoured within ACCESS_TTL_MS", async () => {
  let t = 0;
  const allowed = { now: true };
  const { client, reviews } = sarServer(allowed);
  const access = new SARAccessChecker({ client, now: () => t });
  assert.equal(await access.allowed(user, attrs), true);
  assert.equal(reviews.n, 1);
  // A burst within the refresh age: answered from the cache.
  for (let i = 0; i < 20; i++) assert.equal(await access.allowed(user, attrs), true);
  assert.equal(reviews.n, 1, 'one review for the burst');
  // The permission is revoked. Past the refresh age the cached answer is served at once, and asked again behind it.
  allowed.now = false;
  t = ACCESS_REFRESH_MS + 1;
  assert.equal(await access.allowed(user, attrs), true, 'served from the cache, not after a round trip');
  await settle();
  assert.equal(reviews.n, 2, 'asked again behind the answer');
  assert.equal(await access.allowed(user, attrs), false, 'the revocation is seen by the next review');
  // Without reviews in between, an answer older than ACCESS_TTL_MS is never served: it is asked for afresh.
  allowed.now = true;
  t += ACCESS_TTL_MS + 1;
  assert.equal(await access.allowed(user, attrs), true);
  assert.equal(reviews.n, 3);
});

test('a failed access review denies (fail closed) and a user without a name is never allowed', async () => {
  const client = { create: () => Promise.reject(new Error('connection refused')) } as unknown as KubeClient;
  const access = new SARAccessChecker({ client });
  assert.equal(await access.allowed(user, attrs), false);
  assert.equal(await access.allowed(undefined, attrs), false);
  assert.equal(await access.allowed({ groups: ['system:masters'] }, attrs), false);
});
