// Where a source may point, through the real API server: the webhook refuses literal addresses and names
// in denied networks (spec.url and spec.hosts[].address), and the controller — which resolves names on
// every pass — refuses what a name resolves to, creating nothing and withdrawing what it had created.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import { parseEgressPolicy } from '../../src/preflight/egress.ts';
import { startTestWebhook, type TestWebhook } from '../../src/webhook/testkit.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { applyAs, bootWorld, denial, tenantWithRole, waitForWebhookEffective, type BootedWorld } from './fixtures.ts';
import { CONTROLLER_NS, createSource, getSource, projectedSecretNameOf, readyOf, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-egress.example.com/sdk';
const world = vcenter({ url: URL_VC, vms: [{ id: 'vm-1', name: 'app01' }] });
const NODE = 'e2e-egress-node';
const POD_CIDR = '10.244.7.0/24';
const NODE_IP = '172.31.0.9';

// The stand-in DNS: what vcenter-egress.example.com resolves to, changed by the tests.
let answer = ['192.0.2.80'];
let booted: BootedWorld;
let c: KubeClient;
let wh: TestWebhook;
let ns: string;
let tenant: string;

const source = (url: string, hosts?: unknown[]) => ({
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportSource',
  metadata: { name: 'probe' },
  spec: { type: 'vsphere', url, credentials: { username: 'u@vsphere.local', password: 'p', insecureSkipVerify: true }, ...(hosts ? { hosts } : {}) },
});
const host = (address: string) => ({ id: 'host-1', address, credentials: { username: 'root', password: 'p', insecureSkipVerify: true } });

before(async () => {
  booted = await bootWorld({ worlds: [world], controller: { resolve: async (h) => (h === 'vcenter-egress.example.com' ? answer : Promise.reject(new Error('ENOTFOUND'))) } });
  c = booted.c;
  // A node whose pods use POD_CIDR (the control plane runs no kubelet; the object is what counts).
  await c.create(GVRs.Node, { apiVersion: 'v1', kind: 'Node', metadata: { name: NODE }, spec: { podCIDR: POD_CIDR, podCIDRs: [POD_CIDR] } } as KubeObject);
  // …and whose own address (a kubelet's) is NODE_IP, as the kubelet reports it.
  await c.patch(GVRs.Node, undefined, NODE, { status: { addresses: [{ type: 'InternalIP', address: NODE_IP }, { type: 'Hostname', address: NODE }] } }, 'merge', { subresource: 'status' });
  wh = await startTestWebhook({ client: c, egress: parseEgressPolicy({ denied: '198.51.100.0/24' }) });
  ns = await freshNamespace('egress', { [wh.selector.key]: wh.selector.value });
  tenant = await tenantWithRole(ns);
  await waitForWebhookEffective(ns, source('http://nope.example/sdk'));
});

after(async () => {
  await wh?.stop();
  await c?.delete(GVRs.Node, undefined, NODE).catch(() => undefined);
  await booted?.shutdown();
});

const refused = async (obj: unknown): Promise<string> => {
  const r = await applyAs(tenant, ns, obj);
  assert.notEqual(r.code, 0, `admitted: ${JSON.stringify(obj)}`);
  return denial(r.stderr);
};

test('the webhook refuses a vCenter URL at the cluster itself: Service CIDR, API server names, loopback, link-local metadata, a bare label', async () => {
  const tail = 'is not an allowed destination';
  const cases: Array<[string, string]> = [
    ['https://10.96.0.1/sdk', "spec.url: 10.96.0.1 is not an allowed destination (the cluster's Service CIDR 10.96.0.0/12)"],
    ['https://kubernetes.default.svc/sdk', 'spec.url: kubernetes.default.svc is not an allowed destination (cluster-internal name *.svc)'],
    ['https://kubernetes.default.svc.cluster.local/sdk', 'spec.url: kubernetes.default.svc.cluster.local is not an allowed destination (cluster-internal name *.svc.cluster.local)'],
    ['https://kubernetes.default/sdk', 'spec.url: kubernetes.default is not an allowed destination (cluster-internal name kubernetes.default)'],
    ['https://127.0.0.1:6443/sdk', 'spec.url: 127.0.0.1 is not an allowed destination (loopback 127.0.0.0/8)'],
    ['https://[::1]/sdk', 'spec.url: ::1 is not an allowed destination (loopback ::1/128)'],
    ['https://169.254.169.254/sdk', 'spec.url: 169.254.169.254 is not an allowed destination (link-local 169.254.0.0/16)'],
    ['https://forklift-inventory/sdk', "spec.url: forklift-inventory is not an allowed destination (single-label name (completed by the cluster's DNS search path))"],
    ['https://10.244.7.9/sdk', `spec.url: 10.244.7.9 is not an allowed destination (the cluster's pod CIDR ${POD_CIDR})`],
    ['https://198.51.100.7/sdk', "spec.url: 198.51.100.7 is not an allowed destination (the platform's denied network 198.51.100.0/24)"],
  ];
  for (const [url, message] of cases) {
    const d = await refused(source(url));
    assert.ok(d.startsWith(message), `${url}: ${d}`);
    assert.ok(d.includes(tail));
  }
  assert.equal(await getSource(c, ns, 'probe'), undefined);
});

test('the webhook refuses ESXi host addresses in denied networks or cluster names, and admits an outside one', async () => {
  const cases: Array<[string, string]> = [
    ['127.0.0.1', 'spec.hosts[0].address: 127.0.0.1 is not an allowed destination (loopback 127.0.0.0/8)'],
    ['localhost', 'spec.hosts[0].address: localhost is not an allowed destination (cluster-internal name localhost)'],
    ['169.254.169.254', 'spec.hosts[0].address: 169.254.169.254 is not an allowed destination (link-local 169.254.0.0/16)'],
    ['10.244.7.20', `spec.hosts[0].address: 10.244.7.20 is not an allowed destination (the cluster's pod CIDR ${POD_CIDR})`],
    ['esxi.cozy-forklift.svc', 'spec.hosts[0].address: esxi.cozy-forklift.svc is not an allowed destination (cluster-internal name *.svc)'],
  ];
  for (const [address, message] of cases) assert.ok((await refused(source('https://vcenter.lab.example/sdk', [host(address)]))).startsWith(message), address);
  // Inside the Service CIDR keeps its own, more specific message.
  assert.match(await refused(source('https://vcenter.lab.example/sdk', [host('10.96.0.50')])), /inside the cluster's Service CIDR 10\.96\.0\.0\/12/);
  const ok = await applyAs(tenant, ns, source('https://vcenter.lab.example/sdk', [host('192.0.2.7')]));
  assert.equal(ok.code, 0, ok.stderr);
});

test('the controller refuses an address it is given directly (no webhook) and creates nothing for it', async () => {
  const direct = await freshNamespace('egress-direct');
  await createSource(c, direct, 'meta', { type: 'vsphere', url: 'https://169.254.169.254/sdk', credentials: { username: world.user, password: world.password, insecureSkipVerify: true } });
  const s = await waitForReason(c, direct, 'meta', 'AddressNotAllowed');
  assert.equal(readyOf(s)?.status, 'False');
  assert.equal(readyOf(s)?.message, 'spec.url: 169.254.169.254 is not an allowed destination (link-local 169.254.0.0/16); a source must point at a vCenter or ESXi host outside the cluster\'s own networks');
  assert.equal((await c.list(GVRs.Provider, direct)).items.length, 0);
  assert.equal(await c.get(GVRs.Secret, CONTROLLER_NS, (await projectedSecretNameOf(c, direct, 'meta'))!), undefined);
});

test('a name that resolves into the cluster is refused on the next pass, what was created is withdrawn, and Forklift\'s words never reach the tenant', async () => {
  const direct = await freshNamespace('egress-dns');
  answer = ['192.0.2.80'];
  await createSource(c, direct, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, direct, 'vc', 'Connected');
  assert.ok(await c.get(GVRs.Secret, CONTROLLER_NS, (await projectedSecretNameOf(c, direct, 'vc'))!));

  // The name now answers with the API server's Service address; any write wakes the source.
  answer = ['192.0.2.80', '10.96.0.1'];
  await c.patch(GVRs.VMImportSource, direct, 'vc', { metadata: { labels: { poke: '1' } } });
  const s = await waitForReason(c, direct, 'vc', 'AddressNotAllowed');
  assert.equal(
    readyOf(s)?.message,
    "spec.url: vcenter-egress.example.com resolves to 10.96.0.1, which is not an allowed destination (the cluster's Service CIDR 10.96.0.0/12); a source must point at a vCenter or ESXi host outside the cluster's own networks",
  );
  await waitFor('the Providers and the projected Secret withdrawn', async () =>
    (await c.list(GVRs.Provider, direct)).items.length === 0 && !(await c.get(GVRs.Secret, CONTROLLER_NS, (await projectedSecretNameOf(c, direct, 'vc'))!)),
  );

  // The answer changes back: the periodic re-check (every 10 s while refused) connects it again.
  answer = ['192.0.2.80'];
  await waitForReason(c, direct, 'vc', 'Connected', 30_000);
});

test('the controller refuses, one address per class: a node\'s own address, the join network, an IPv6 form embedding the metadata address, a metadata name, a URL whose host parsers read differently', async () => {
  const direct = await freshNamespace('egress-classes');
  const cases: Array<[string, string, string]> = [
    ['node', `https://${NODE_IP}:10250/sdk`, `spec.url: ${NODE_IP} is not an allowed destination (a node's own address ${NODE_IP})`],
    ['join', 'https://100.64.0.10/sdk', 'spec.url: 100.64.0.10 is not an allowed destination (carrier-grade NAT (platform join network) 100.64.0.0/10)'],
    ['nat64', 'https://[64:ff9b::a9fe:a9fe]/sdk', 'spec.url: 64:ff9b::a9fe:a9fe is not an allowed destination (link-local 169.254.0.0/16, embedded as 169.254.169.254 in the NAT64 64:ff9b::/96 form)'],
    ['gce', 'https://metadata.google.internal/sdk', 'spec.url: metadata.google.internal is not an allowed destination (cluster-internal name metadata.google.internal)'],
    ['hex', 'https://0x7f.1/sdk', 'spec.url writes its host "0x7f.1" in a form parsers read differently; write it as 127.0.0.1, so its destination cannot be checked'],
  ];
  await Promise.all(cases.map(([name, url]) => createSource(c, direct, name, { type: 'vsphere', url, credentials: { username: world.user, password: world.password, insecureSkipVerify: true } })));
  for (const [name, , message] of cases) {
    const s = await waitForReason(c, direct, name, 'AddressNotAllowed');
    assert.ok(readyOf(s)?.message.startsWith(message), `${name}: ${readyOf(s)?.message}`);
  }
  assert.equal((await c.list(GVRs.Provider, direct)).items.length, 0, 'nothing created for any of them');
});
