import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EMPTY_POLICY, checkAddress, checkHost, checkName, parseEgressPolicy, urlDestination, type ClusterNetworks } from './egress.ts';
import { nodeAddressesOf } from './podcidr.ts';

const cluster: ClusterNetworks = { serviceCIDRs: ['10.96.0.0/12'], podCIDRs: ['10.244.0.0/24', '10.244.1.0/24'] };
const rule = (v: ReturnType<typeof checkAddress>) => (v.allowed ? 'allowed' : v.rule);

test('loopback, link-local metadata, unspecified and multicast addresses are denied, in IPv4, IPv6 and IPv4-mapped form', () => {
  assert.equal(rule(checkAddress('127.0.0.1', EMPTY_POLICY, cluster)), 'loopback 127.0.0.0/8');
  assert.equal(rule(checkAddress('::1', EMPTY_POLICY, cluster)), 'loopback ::1/128');
  assert.equal(rule(checkAddress('::ffff:127.0.0.1', EMPTY_POLICY, cluster)), 'loopback 127.0.0.0/8, embedded as 127.0.0.1 in the IPv4-mapped ::ffff:0:0/96 form');
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

// One address per class the second security round found admitted.
test("a node's own address and the API server's endpoints are denied, as the cluster reports them", () => {
  const live: ClusterNetworks = { ...cluster, nodeAddresses: ['172.18.0.2', 'fd00:10::2'], apiServerAddresses: ['172.18.0.10'] };
  assert.equal(rule(checkAddress('172.18.0.2', EMPTY_POLICY, live)), "a node's own address 172.18.0.2");
  assert.equal(rule(checkAddress('fd00:10:0:0::2', EMPTY_POLICY, live)), "a node's own address fd00:10::2");
  assert.equal(rule(checkAddress('172.18.0.10', EMPTY_POLICY, live)), "the API server's address 172.18.0.10");
  assert.equal(rule(checkAddress('172.18.0.3', EMPTY_POLICY, live)), 'allowed');
  // What the nodes report: InternalIP and ExternalIP, not names.
  const nodes = [
    { status: { addresses: [{ type: 'InternalIP', address: '172.18.0.2' }, { type: 'Hostname', address: 'node-1' }, { type: 'ExternalIP', address: '203.0.113.9' }] } },
    { status: { addresses: [{ type: 'InternalIP', address: 'fd00:10::2' }] } },
    {},
  ];
  assert.deepEqual(nodeAddressesOf(nodes), ['172.18.0.2', '203.0.113.9', 'fd00:10::2']);
});

test("Cozystack's join network (carrier-grade NAT 100.64.0.0/10) is denied", () => {
  assert.equal(rule(checkAddress('100.64.0.1', EMPTY_POLICY, cluster)), 'carrier-grade NAT (platform join network) 100.64.0.0/10');
  assert.equal(rule(checkAddress('100.100.100.200', EMPTY_POLICY, cluster)), 'carrier-grade NAT (platform join network) 100.64.0.0/10');
  assert.equal(rule(checkAddress('100.128.0.1', EMPTY_POLICY, cluster)), 'allowed');
});

test('IPv6 forms embedding a denied IPv4 address are judged as that address', () => {
  const cases: Array<[string, string]> = [
    ['::ffff:169.254.169.254', 'IPv4-mapped ::ffff:0:0/96'],
    ['::a9fe:a9fe', 'IPv4-compatible ::/96'],
    ['::ffff:0:a9fe:a9fe', 'IPv4-translated ::ffff:0:0:0/96'],
    ['64:ff9b::169.254.169.254', 'NAT64 64:ff9b::/96'],
    ['64:ff9b:1::a9fe:a9fe', 'local NAT64 64:ff9b:1::/48'],
    ['2002:a9fe:a9fe::1', '6to4 2002::/16'],
    ['2001:0:a9fe:a9fe::1', 'Teredo server 2001::/32'],
    ['2001:0:4136:e378:8000:63bf:5601:5601', 'Teredo client 2001::/32'],
    ['2001:db8::5efe:169.254.169.254', 'ISATAP ::5efe:0:0/96'],
  ];
  for (const [ip, form] of cases) assert.equal(rule(checkAddress(ip, EMPTY_POLICY, cluster)), `link-local 169.254.0.0/16, embedded as 169.254.169.254 in the ${form} form`, ip);
  assert.equal(rule(checkAddress('64:ff9b::10.96.0.1', EMPTY_POLICY, cluster)), "the cluster's Service CIDR 10.96.0.0/12, embedded as 10.96.0.1 in the NAT64 64:ff9b::/96 form");
  assert.equal(rule(checkAddress('64:ff9b::192.0.2.10', EMPTY_POLICY, cluster)), 'allowed');
  // An allow-list holds every form: a NAT64 address of an IPv4 outside it is outside it.
  assert.equal(rule(checkAddress('64:ff9b::198.51.100.1', parseEgressPolicy({ allowed: '64:ff9b::/96, 192.0.2.0/24' }), cluster)), "outside the platform's allowed networks 64:ff9b::/96, 192.0.2.0/24");
});

test("the major clouds' metadata addresses and names are denied", () => {
  for (const [ip, r] of [
    ['fd00:ec2::254', 'cloud metadata (AWS) fd00:ec2::/32'],
    ['fd20:ce::254', 'cloud metadata (Google Cloud) fd20:ce::254/128'],
    ['fd00:c1::a9fe:a9fe', 'cloud metadata (Oracle Cloud) fd00:c1::a9fe:a9fe/128'],
    ['168.63.129.16', 'cloud platform endpoint (Azure WireServer) 168.63.129.16/32'],
    ['fe80::a9fe:a9fe', 'link-local fe80::/10'],
  ]) assert.equal(rule(checkAddress(ip!, EMPTY_POLICY, cluster)), r, ip);
  for (const n of ['metadata.google.internal', 'METADATA.google.internal.', 'instance-data.ec2.internal', 'metadata', 'instance-data']) assert.equal(checkName(n, EMPTY_POLICY).allowed, false, n);
});

test('a URL is judged only when every parser reads the same host from it; one Node cannot parse, or rewrites, is not allowed', () => {
  assert.deepEqual(urlDestination('https://vc.example.com/sdk'), { host: 'vc.example.com' });
  assert.deepEqual(urlDestination('https://VC.Example.com:443/sdk'), { host: 'vc.example.com' });
  assert.deepEqual(urlDestination('https://[fd00::1]:8443/sdk'), { host: 'fd00::1' });
  assert.deepEqual(urlDestination('https://vc example/sdk'), { error: 'does not parse as a URL' });
  for (const u of ['https://0x7f.1/sdk', 'https://2130706433/sdk', 'https://vc%2eexample.com/sdk', 'https://[fd00:0::1]/sdk', 'https://vc.example.com\\@169.254.169.254/sdk']) {
    assert.match((urlDestination(u) as { error: string }).error ?? 'allowed', /in a form parsers read differently; write it as /, u);
  }
});
