// With METRICS_AUTH=kubernetes an unauthenticated scrape gets 401: /metrics answers only a bearer token
// the API server authenticates (TokenReview) for a user allowed `get` on /metrics (SubjectAccessReview).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient, KubeObject } from '../runtime/kube.ts';
import { startHealthServer, type HealthServer } from '../runtime/health.ts';
import { Metrics } from './metrics.ts';
import { METRICS_AUTH_TTL_MS, kubernetesMetricsAuthorizer } from './metrics-auth.ts';

/** The API server's answers: the scraper's token names a user RBAC allows; another token, a user it does not. */
const calls: string[] = [];
const fakeAPI = {
  create: (gvr: { kind: string }, o: KubeObject & { spec?: { token?: string; user?: string; nonResourceAttributes?: { path: string; verb: string } } }) => {
    calls.push(gvr.kind);
    if (gvr.kind === 'TokenReview') {
      const user = { 'scraper-token': 'system:serviceaccount:cozy-monitoring:vmagent', 'tenant-token': 'tenant-alpha' }[o.spec!.token!];
      return Promise.resolve({ ...o, status: user ? { authenticated: true, user: { username: user, groups: ['system:authenticated'] } } : { authenticated: false } });
    }
    const a = o.spec!.nonResourceAttributes!;
    return Promise.resolve({ ...o, status: { allowed: o.spec!.user === 'system:serviceaccount:cozy-monitoring:vmagent' && a.path === '/metrics' && a.verb === 'get' } });
  },
} as unknown as KubeClient;

let clock = 0;
let server: HealthServer;
before(async () => {
  const m = new Metrics();
  m.sourceReady.set({ namespace: 'tenant-alpha', source: 'vc' }, 1);
  server = await startHealthServer(0, { ready: () => true, role: () => 'leader', registry: m.registry, authorizeMetrics: kubernetesMetricsAuthorizer(fakeAPI, () => clock) }, '127.0.0.1');
});
after(() => server?.close());

const scrape = async (token?: string) => {
  const r = await fetch(`${server.url}/metrics`, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  return { status: r.status, body: await r.text() };
};

test('an unauthenticated scrape gets 401 and no series; so does a token that does not authenticate, or whose user may not get /metrics', async () => {
  for (const token of [undefined, 'made-up', 'tenant-token']) {
    const r = await scrape(token);
    assert.equal(r.status, 401, String(token));
    assert.ok(!r.body.includes('tenant-alpha') && !r.body.includes('migration_controller_'), r.body);
  }
});

test("the monitoring stack's token gets the metrics; its verdict is kept a minute, then asked again", async () => {
  calls.length = 0;
  assert.equal((await scrape('scraper-token')).status, 200);
  assert.match((await scrape('scraper-token')).body, /migration_controller_sources\{namespace="tenant-alpha",ready="true"\} 1/);
  assert.deepEqual(calls, ['TokenReview', 'SubjectAccessReview']);
  clock += METRICS_AUTH_TTL_MS;
  assert.equal((await scrape('scraper-token')).status, 200);
  assert.deepEqual(calls, ['TokenReview', 'SubjectAccessReview', 'TokenReview', 'SubjectAccessReview']);
});

test('probes stay open without a token', async () => {
  assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
  assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
});
