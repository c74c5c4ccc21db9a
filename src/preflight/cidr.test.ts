import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, type KubeClient } from '../runtime/kube.ts';
import { ServiceCIDRResolver, collisionMessage, hostAddressCollision, ipInCIDR, serviceCIDRFromRefusal } from './cidr.ts';

test('IPv4 and IPv6 addresses are matched against ranges of their own family', () => {
  assert.equal(ipInCIDR('10.96.0.1', '10.96.0.0/12'), true);
  assert.equal(ipInCIDR('10.111.255.255', '10.96.0.0/12'), true);
  assert.equal(ipInCIDR('10.112.0.0', '10.96.0.0/12'), false);
  assert.equal(ipInCIDR('fd00::10', 'fd00::/108'), true);
  assert.equal(ipInCIDR('fd01::10', 'fd00::/108'), false);
  assert.equal(ipInCIDR('10.96.0.1', 'fd00::/108'), false);
  assert.equal(ipInCIDR('::ffff:10.96.0.1', '10.96.0.0/12'), true);
  assert.equal(ipInCIDR('esxi.example.com', '10.96.0.0/12'), false);
  assert.equal(ipInCIDR('10.96.0.1', 'garbage'), false);
});

test('the API server refusal of an out-of-range clusterIP yields the range, single- and dual-stack', () => {
  assert.deepEqual(
    serviceCIDRFromRefusal('Service "p" is invalid: spec.clusterIPs: Invalid value: []string{"1.1.1.1"}: failed to allocated ip:1.1.1.1 with error:provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12'),
    ['10.96.0.0/12'],
  );
  assert.deepEqual(serviceCIDRFromRefusal('... The range of valid IPs is 10.96.0.0/12 and fd00:10:96::/108.'), ['10.96.0.0/12', 'fd00:10:96::/108']);
  assert.equal(serviceCIDRFromRefusal('forbidden: User "x" cannot create resource "services"'), undefined);
});

test('a host inside the range without an override collides; an override or a DNS name does not', () => {
  assert.deepEqual(hostAddressCollision('host-1', '10.96.3.4', ['10.96.0.0/12'], []), { hostId: 'host-1', address: '10.96.3.4', cidr: '10.96.0.0/12' });
  assert.equal(hostAddressCollision('host-1', '10.96.3.4', ['10.96.0.0/12'], ['host-1']), undefined);
  assert.equal(hostAddressCollision('host-1', '192.168.1.4', ['10.96.0.0/12'], []), undefined);
  assert.equal(hostAddressCollision('host-1', 'esxi1.lab', ['10.96.0.0/12'], []), undefined);
});

test('the collision message names host, address, range and the remedy', () => {
  const m = collisionMessage({ hostId: 'host-12', address: '10.96.0.20', cidr: '10.96.0.0/12' }, 'web');
  assert.equal(
    m,
    'VM "web" runs on ESXi host host-12, which vCenter advertises at 10.96.0.20, inside the cluster\'s Service CIDR 10.96.0.0/12: service routing would capture the transfer\'s traffic and it would fail late. Add spec.hosts[] on the VMImportSource with id: host-12, an address the cluster can reach, and the ESXi host\'s own credentials',
  );
  assert.match(collisionMessage({ hostId: 'host-12', address: '10.96.0.20', cidr: '10.96.0.0/12' }), /^vCenter advertises ESXi host host-12 at 10.96.0.20/);
});

// A scripted stand-in for the three calls the resolver makes; the real API server path is covered by
// test/e2e/webhook-servicecidr.test.ts.
function fakeClient(o: { serviceCIDRs?: string[][] | 'notServed'; refusal?: string; hang?: boolean; createSucceeds?: boolean }) {
  const calls: string[] = [];
  const client = {
    async list(gvr: { plural: string; version: string }) {
      calls.push(`list ${gvr.plural}/${gvr.version}`);
      if (o.hang) return await new Promise(() => undefined);
      if (o.serviceCIDRs === 'notServed' || !o.serviceCIDRs) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
      return { items: o.serviceCIDRs.map((cidrs) => ({ spec: { cidrs } })), metadata: {} };
    },
    async create(_gvr: unknown, obj: { metadata: { namespace: string } }) {
      calls.push(`create service in ${obj.metadata.namespace}`);
      if (o.createSucceeds) return { metadata: { name: 'mc-servicecidr-probe-abc' } };
      throw new ApiError(422, 'Invalid', o.refusal ?? 'Service "x" is invalid: provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12');
    },
    async delete(_gvr: unknown, ns: string, name: string) {
      calls.push(`delete ${ns}/${name}`);
      return true;
    },
  };
  return { client: client as unknown as KubeClient, calls };
}

test('configuration wins over discovery', async () => {
  const { client, calls } = fakeClient({});
  assert.deepEqual(await new ServiceCIDRResolver(client, { override: '10.43.0.0/16' }).resolve('ns'), { cidrs: ['10.43.0.0/16'], source: 'config' });
  assert.deepEqual(calls, []);
});

test('ServiceCIDR objects are used when served, without creating anything', async () => {
  const { client, calls } = fakeClient({ serviceCIDRs: [['10.96.0.0/12', 'fd00::/108'], ['10.200.0.0/16']] });
  assert.deepEqual(await new ServiceCIDRResolver(client, {}).resolve('ns'), { cidrs: ['10.96.0.0/12', 'fd00::/108', '10.200.0.0/16'], source: 'ServiceCIDR' });
  assert.deepEqual(calls, ['list servicecidrs/v1']);
});

test('without ServiceCIDR objects the refusal of a real probe Service is parsed, then cached', async () => {
  const { client, calls } = fakeClient({ serviceCIDRs: 'notServed' });
  let now = 0;
  const r = new ServiceCIDRResolver(client, { ttlMs: 1000, now: () => now });
  assert.deepEqual(await r.resolve('probe-ns'), { cidrs: ['10.96.0.0/12'], source: 'apiserver-refusal' });
  assert.deepEqual(calls, ['list servicecidrs/v1', 'list servicecidrs/v1beta1', 'create service in probe-ns']);
  now = 999;
  await r.resolve('probe-ns');
  assert.equal(calls.length, 3, 'answered from the cache within the TTL');
  now = 1001;
  await r.resolve('probe-ns');
  assert.equal(calls.length, 6, 'asked again after the TTL');
});

test('a probe Service that is unexpectedly accepted is deleted and nothing is learnt', async () => {
  const { client, calls } = fakeClient({ createSucceeds: true });
  assert.equal(await new ServiceCIDRResolver(client, {}).resolve('ns'), undefined);
  assert.deepEqual(calls.slice(-1), ['delete ns/mc-servicecidr-probe-abc']);
});

test('every call is bounded by the timeout', async () => {
  const { client } = fakeClient({ hang: true });
  // The fake never answers: without the timeouts, resolve() would never end. The bound is far above the
  // three 50 ms timeouts, so that a loaded machine (or other tests' work in the same process) cannot fail
  // it, and far below the runner's per-test limit, so that a hang fails here with this message.
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((res) => (timer = setTimeout(() => res('hung'), 20_000)));
  const r = await Promise.race([new ServiceCIDRResolver(client, { timeoutMs: 50 }).resolve(''), hung]);
  clearTimeout(timer);
  assert.notEqual(r, 'hung', 'resolve() ended while every call to the API server hung');
  assert.equal(r, undefined);
});
