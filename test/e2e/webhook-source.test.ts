// VMImportSource admission, through the real API server: a tenant runs `kubectl apply` and reads the
// message the webhook gives.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminKubeConfig, freshNamespace, installOurCRDs } from './env/index.ts';
import { applyAs, denial, tenantWithRole, waitForWebhookEffective } from './fixtures.ts';
import { KubeClient } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { generateCA, generateServingCert } from '../../src/webhook/certs.ts';
import { startTestWebhook, type TestWebhook } from '../../src/webhook/testkit.ts';

let client: KubeClient;
let wh: TestWebhook;
let ns: string;
let tenantKubeconfig: string;
const vcenterCA = generateCA({ commonName: 'vCenter lab CA', validityMs: 86_400_000 });

function source(name: string, spec: Record<string, unknown> = {}, credentials: Record<string, unknown> = {}) {
  return {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportSource',
    metadata: { name },
    spec: {
      type: 'vsphere',
      url: 'https://vcenter.lab.example/sdk',
      credentials: { username: 'mtv-migration@vsphere.local', password: 'correct horse', caCert: vcenterCA.certPEM, ...credentials },
      ...spec,
    },
  };
}

const applyAsTenant = (obj: unknown) => applyAs(tenantKubeconfig, ns, obj);

before(async () => {
  await installOurCRDs();
  client = new KubeClient(await adminKubeConfig());
  // No serviceCIDR configured: the webhook learns it the way it would in a cluster without ServiceCIDR
  // objects (1.20), from the API server's refusal of a probe Service.
  wh = await startTestWebhook({ client });
  ns = await freshNamespace('wh-src', { [wh.selector.key]: wh.selector.value });
  tenantKubeconfig = await tenantWithRole(ns);
  await waitForWebhookEffective(ns, source('probe', { url: 'http://vcenter.lab.example/sdk' }));
});

after(async () => {
  await wh?.stop();
  client?.close();
});

test('a complete source with a PEM CA is admitted without warnings', async () => {
  const r = await applyAsTenant(source('good'));
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /Warning/);
  assert.ok(await client.get(GVRs.VMImportSource, ns, 'good'));
});

test("caCert together with insecureSkipVerify is admitted, as Cozystack's own controller admits it, with a warning that the certificate is not verified", async () => {
  const r = await applyAsTenant(source('both', {}, { insecureSkipVerify: true }));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /Warning: spec\.credentials: both caCert and insecureSkipVerify: true are set; as with Cozystack's own controller, insecureSkipVerify wins/);
  assert.ok(await client.get(GVRs.VMImportSource, ns, 'both'));
});

test('neither caCert nor insecureSkipVerify is refused', async () => {
  const r = await applyAsTenant(source('neither', {}, { caCert: undefined }));
  assert.equal(denial(r.stderr), "spec.credentials: set exactly one of caCert (the PEM CA that signed the server's certificate) or insecureSkipVerify: true");
});

test('a SHA-1 thumbprint in caCert gets its own message, not the CRD pattern', async () => {
  const r = await applyAsTenant(source('thumb', {}, { caCert: '6B:2F:0C:51:8A:7E:33:90:1D:4C:AA:02:9F:E1:57:08:B3:6D:44:C2' }));
  assert.equal(denial(r.stderr), "spec.credentials.caCert: a SHA-1 thumbprint does not work here; paste the PEM CA certificate that signed the server's certificate (-----BEGIN CERTIFICATE----- …)");
  assert.doesNotMatch(r.stderr, /should match/);
});

test('a server certificate issued by a CA is not accepted as the CA', async () => {
  const leaf = generateServingCert(vcenterCA, { commonName: 'vcenter.lab.example', dnsNames: ['vcenter.lab.example'], ipAddresses: [], validityMs: 86_400_000 });
  const r = await applyAsTenant(source('leaf', {}, { caCert: leaf.certPEM }));
  assert.equal(
    denial(r.stderr),
    "spec.credentials.caCert is a certificate issued by another CA, not a CA itself; paste the CA certificate that signed the server's certificate (or the server's own certificate if it is self-signed)",
  );
});

test('an http:// URL is refused with the https rule', async () => {
  const r = await applyAsTenant(source('plain', { url: 'http://vcenter.lab.example/sdk' }));
  assert.equal(denial(r.stderr), 'spec.url must use https:// (got "http"); vCenter\'s SDK is only served over TLS, for example https://vcenter.lab.example/sdk');
});

test('a user without @domain and a URL not ending in /sdk are admitted with warnings', async () => {
  const r = await applyAsTenant(source('warned', { url: 'https://vcenter.lab.example/' }, { username: 'mtv-migration' }));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /Warning: spec\.url path is "\/", not \/sdk: Forklift talks to vCenter's SDK endpoint, usually https:\/\/vcenter\.lab\.example\/sdk/);
  assert.match(r.stderr, /Warning: spec\.credentials\.username "mtv-migration" has no @domain: vCenter reports a user without its SSO domain as a wrong password; use for example "mtv-migration@vsphere\.local"/);
});

test('an insecure source is admitted with a warning about the unverified connection', async () => {
  const r = await applyAsTenant(source('insecure', {}, { caCert: undefined, insecureSkipVerify: true }));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /Warning: spec\.credentials\.insecureSkipVerify is true/);
});

test("a host override inside the cluster's Service CIDR is refused, naming the range the API server reported", async () => {
  const r = await applyAsTenant(
    source('svc-collide', { hosts: [{ id: 'host-7', address: '10.96.0.50', credentials: { username: 'root', password: 'esxi', insecureSkipVerify: true } }] }),
  );
  assert.equal(
    denial(r.stderr),
    "spec.hosts[0].address 10.96.0.50 is inside the cluster's Service CIDR 10.96.0.0/12: service routing would capture the transfer's traffic to it; give an address of the ESXi host outside 10.96.0.0/12",
  );
  const ok = await applyAsTenant(source('svc-ok', { hosts: [{ id: 'host-7', address: '192.168.40.7', credentials: { username: 'root', password: 'esxi', insecureSkipVerify: true } }] }));
  assert.equal(ok.code, 0, ok.stderr);
  // The range was learnt from a refused probe Service: nothing was left behind.
  const services = await client.list(GVRs.Service, ns);
  assert.deepEqual(services.items.map((x) => x.metadata?.name), []);
});

test('host overrides need unique ids, a bare address and their own TLS choice', async () => {
  const r = await applyAsTenant(
    source('hosts-bad', {
      hosts: [
        { id: 'host-1', address: 'esxi1.lab.example', credentials: { username: 'root', password: 'a', insecureSkipVerify: true } },
        { id: 'host-1', address: 'https://esxi2.lab.example:443', credentials: { username: 'root', password: 'b' } },
      ],
    }),
  );
  assert.equal(
    denial(r.stderr),
    [
      'spec.hosts[1].id "host-1" is listed twice (also spec.hosts[0]); give each ESXi host one entry',
      'spec.hosts[1].address "https://esxi2.lab.example:443" is neither an IP address nor a DNS name; give the bare address, without scheme, port or path',
      "spec.hosts[1].credentials: set exactly one of caCert (the PEM CA that signed the server's certificate) or insecureSkipVerify: true",
    ].join('; '),
  );
});

test('an update that leaves no TLS choice is refused; the stored source is unchanged', async () => {
  assert.equal((await applyAsTenant(source('upd'))).code, 0);
  const r = await applyAsTenant(source('upd', {}, { caCert: undefined }));
  assert.match(denial(r.stderr), /^spec\.credentials: set exactly one of caCert \(the PEM CA that signed the server's certificate\) or insecureSkipVerify: true/);
  const stored = await client.get<{ spec: { credentials: { caCert?: string } } } & Record<string, unknown>>(GVRs.VMImportSource, ns, 'upd');
  assert.equal(stored?.spec.credentials.caCert, vcenterCA.certPEM);
});

test("the controller's own metadata and status writes pass", async () => {
  assert.equal((await applyAsTenant(source('meta'))).code, 0);
  await client.patch(GVRs.VMImportSource, ns, 'meta', { metadata: { finalizers: ['forklift.cozystack.io/finalizer'], labels: { a: 'b' } } });
  await client.patch(GVRs.VMImportSource, ns, 'meta', { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Connected', message: 'ok', lastTransitionTime: new Date().toISOString() }] } }, 'merge', { subresource: 'status' });
  await client.patch(GVRs.VMImportSource, ns, 'meta', { metadata: { finalizers: null } });
});
