import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EMPTY_POLICY, checkAddress, checkHost, checkName, parseEgressPolicy, type ClusterNetworks } from './egress.ts';

const cluster: ClusterNetworks = { serviceCIDRs: ['10.96.0.0/12'], podCIDRs: ['10.244.0.0/24', '10.244.1.0/24'] };
const rule = (v: ReturnType<typeof checkAddress>) => (v.allowed ? 'allowed' : v.rule);

test('loopback, link-local metadata, unspecified and multicast addresses are denied, in IPv4, IPv6 and IPv4-mapped form', () => {
  assert.equal(rule(checkAddress('127.0.0.1', EMPTY_POLICY, cluster)), 'loopback 127.0.0.0/8');
  assert.equal(rule(checkAddress('::1', EMPTY_POLICY, cluster)), 'loopback ::1/128');
  assert.equal(rule(checkAddress('::ffff:127.0.0.1', EMPTY_POLICY, cluster)), 'loopback 127.0.0.0/8');
  assert.equal(rule(checkAddress('169.254.169.254', EMPTY_POLICY, cluster)), 'link-local 169.254.0.0/16');
  assert.equal(rule(checkAddress('fe80::1', EMPTY_POLICY, cluster)), 'link-local fe80::/10');
  assert.equal(rule(checkAddress('0.0.0.0', EMPTY_POLICY, cluster)), 'unspecified 0.0.0.0/8');
  assert.equal(rule(checkAddress('239.1.1.1', EMPTY_POLICY, cluster)), 'multicast 224.0.0.0/4');
});

test("the cluster's Service CIDR and the nodes' pod CIDRs are denied; an address outside them is allowed", () => {
  assert.equal(rule(checkAddress('10.96.0.1', EMPTY_POLICY, cluster)), "the cluster's Service CIDR 10.96.0.0/12");
  assert.equal(rule(checkAddress('10.244.1.17', EMPTY_POLICY, cluster)), "the cluster's pod CIDR 10.244.1.0/24");
  assert.equal(rule(checkAddress('10.31.0.29', EMPTY_POLICY, cluster)), 'allowed');
  assert.equal(rule(checkAddress('2001:db8::5', EMPTY_POLICY, cluster)), 'allowed');
});

test('the platform lists denied networks, and an allow-list when it has one; a denial always wins', () => {
  const p = parseEgressPolicy({ allowed: '10.31.0.0/16, 192.0.2.0/24', denied: '10.31.99.0/24' });
  assert.equal(rule(checkAddress('10.31.0.29', p, cluster)), 'allowed');
  assert.equal(rule(checkAddress('10.31.99.1', p, cluster)), "the platform's denied network 10.31.99.0/24");
  assert.equal(rule(checkAddress('198.51.100.7', p, cluster)), "outside the platform's allowed networks 10.31.0.0/16, 192.0.2.0/24");
  assert.throws(() => parseEgressPolicy({ denied: '10.0.0.0/33' }), /denied networks: not a CIDR: 10\.0\.0\.0\/33/);
});

test('cluster DNS names are denied whatever they resolve to; other names pass the name rules', () => {
  for (const n of ['kubernetes.default.svc', 'kubernetes.default.svc.cluster.local', 'forklift-inventory.cozy-forklift.svc', 'KUBERNETES.DEFAULT', 'kubernetes', 'localhost', 'api.localhost', 'x.cluster.local.']) {
    assert.equal(checkName(n, EMPTY_POLICY).allowed, false, n);
  }
  assert.deepEqual(checkName('kubernetes.default.svc', EMPTY_POLICY), { allowed: false, rule: 'cluster-internal name *.svc' });
  assert.deepEqual(checkName('forklift-inventory', EMPTY_POLICY), { allowed: false, rule: "single-label name (completed by the cluster's DNS search path)" });
  for (const n of ['vcenter.example.com', 'svc.example.com', 'cluster.local.example.org']) assert.equal(checkName(n, EMPTY_POLICY).allowed, true, n);
  assert.deepEqual(checkName('vc.corp.internal', parseEgressPolicy({ deniedNames: '*.corp.internal' })), { allowed: false, rule: 'cluster-internal name *.corp.internal' });
});

test('a field holding an IP literal is judged by address, a name by name', () => {
  assert.equal(checkHost('10.96.0.1', EMPTY_POLICY, cluster).allowed, false);
  assert.equal(checkHost('[::1]', EMPTY_POLICY, cluster).allowed, false);
  assert.equal(checkHost('kubernetes.default.svc', EMPTY_POLICY, cluster).allowed, false);
  assert.equal(checkHost('vcenter.example.com', EMPTY_POLICY, cluster).allowed, true);
});

test('the controller takes the platform egress values from its environment and refuses to start on a bad CIDR', async () => {
  const { parseConfig, ConfigError } = await import('../config.ts');
  const cfg = parseConfig(['--kubeconfig', '/dev/null'], { EGRESS_ALLOWED_NETWORKS: '10.31.0.0/16', EGRESS_DENIED_NETWORKS: '10.0.0.0/8,192.168.0.0/16', EGRESS_DENIED_NAMES: '*.corp.internal' });
  assert.deepEqual(cfg.egress, { allowedNetworks: ['10.31.0.0/16'], deniedNetworks: ['10.0.0.0/8', '192.168.0.0/16'], deniedNames: ['*.corp.internal'] });
  assert.throws(() => parseConfig(['--kubeconfig', '/dev/null'], { EGRESS_DENIED_NETWORKS: 'ten.0.0.0/8' }), (e: unknown) => e instanceof ConfigError && /egress policy: denied networks: not a CIDR: ten\.0\.0\.0\/8/.test(e.message));
});
