import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateCA } from './certs.ts';
import { secretRefsToCheck, sourceURLChanged, urlEditRefusal, validateSource, type SourceFacts } from './validate-source.ts';

const ca = generateCA({ commonName: 'vCenter CA', validityMs: 86_400_000 });
const facts: SourceFacts = { serviceCIDRs: { value: ['10.96.0.0/12'] } };
const good = () => ({
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportSource',
  metadata: { name: 'vc', namespace: 't' },
  spec: { type: 'vsphere', url: 'https://vcenter.lab/sdk', credentials: { username: 'mtv@vsphere.local', password: 'x', caCert: ca.certPEM } },
});

test('a complete source with a PEM CA passes without warnings', () => {
  assert.deepEqual(validateSource('CREATE', good(), undefined, facts), { allowed: true, problems: [], warnings: [] });
});

test("both caCert and insecureSkipVerify are accepted as Cozystack's own controller accepts them, warning that the certificate is then not verified", () => {
  const s = good();
  (s.spec.credentials as Record<string, unknown>).insecureSkipVerify = true;
  const v = validateSource('CREATE', s, undefined, facts);
  assert.equal(v.allowed, true);
  assert.deepEqual(v.warnings, [
    "spec.credentials: both caCert and insecureSkipVerify: true are set; as with Cozystack's own controller, insecureSkipVerify wins: the vCenter certificate is not verified and caCert is not used; remove insecureSkipVerify to verify against caCert",
  ]);
});

test('a thumbprint in caCert gets its own message', () => {
  const s = good();
  s.spec.credentials.caCert = 'AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01';
  assert.deepEqual(validateSource('CREATE', s, undefined, facts).problems, [
    "spec.credentials.caCert: a SHA-1 thumbprint does not work here; paste the PEM CA certificate that signed the server's certificate (-----BEGIN CERTIFICATE----- …)",
  ]);
});

test('http, a non-/sdk path and a user without @domain: a denial and two warnings', () => {
  const s = good();
  s.spec.url = 'http://vcenter.lab/sdk';
  assert.deepEqual(validateSource('CREATE', s, undefined, facts).problems, [
    'spec.url must use https:// (got "http"); vCenter\'s SDK is only served over TLS, for example https://vcenter.lab/sdk',
  ]);
  const w = good();
  w.spec.url = 'https://vcenter.lab/';
  w.spec.credentials.username = 'mtv';
  const v = validateSource('CREATE', w, undefined, facts);
  assert.equal(v.allowed, true);
  assert.deepEqual(v.warnings, [
    'spec.url path is "/", not /sdk: Forklift talks to vCenter\'s SDK endpoint, usually https://vcenter.lab/sdk',
    'spec.credentials.username "mtv" has no @domain: vCenter reports a user without its SSO domain as a wrong password; use for example "mtv@vsphere.local"',
  ]);
});

test('host overrides: unique ids, a real address outside the Service CIDR, and the same TLS rule', () => {
  const s = good() as ReturnType<typeof good> & { spec: { hosts?: unknown[] } };
  s.spec.hosts = [
    { id: 'host-1', address: '10.96.0.7', credentials: { username: 'root', password: 'p', insecureSkipVerify: true } },
    { id: 'host-1', address: 'https://esxi:443', credentials: { username: 'root', password: 'p' } },
  ];
  const v = validateSource('CREATE', s, undefined, facts);
  assert.deepEqual(v.problems, [
    "spec.hosts[0].address 10.96.0.7 is inside the cluster's Service CIDR 10.96.0.0/12: service routing would capture the transfer's traffic to it; give an address of the ESXi host outside 10.96.0.0/12",
    'spec.hosts[1].id "host-1" is listed twice (also spec.hosts[0]); give each ESXi host one entry',
    'spec.hosts[1].address "https://esxi:443" is neither an IP address nor a DNS name; give the bare address, without scheme, port or path',
    "spec.hosts[1].credentials: set exactly one of caCert (the PEM CA that signed the server's certificate) or insecureSkipVerify: true",
  ]);
});

test('without a known Service CIDR a host IP is allowed with a warning', () => {
  const s = good() as ReturnType<typeof good> & { spec: { hosts?: unknown[] } };
  s.spec.hosts = [{ id: 'host-1', address: '10.96.0.7', credentials: { username: 'root', password: 'p', caCert: ca.certPEM } }];
  const v = validateSource('CREATE', s, undefined, { serviceCIDRs: { error: 'timed out' } });
  assert.equal(v.allowed, true);
  assert.match(v.warnings[0]!, /could not learn the cluster's Service CIDR \(timed out\)/);
});

test('type is immutable; a metadata-only update and an update while deleting pass untouched', () => {
  const old = good();
  const changed = { ...good(), spec: { ...good().spec, type: 'ovirt' } };
  assert.deepEqual(validateSource('UPDATE', changed, old, facts).problems, ['spec.type is immutable (was "vsphere"); create a new VMImportSource instead']);
  const bad = good();
  bad.spec.credentials.caCert = 'garbage';
  const meta = { ...bad, metadata: { ...bad.metadata, finalizers: ['x'] } };
  assert.equal(validateSource('UPDATE', meta, bad, facts).allowed, true, 'a spec that did not change is not re-judged');
  assert.equal(validateSource('UPDATE', { ...meta, metadata: { ...meta.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }, good(), facts).allowed, true);
});

test('secrets never appear in messages', () => {
  const s = good();
  s.spec.credentials.password = 'hunter2-secret';
  s.spec.credentials.caCert = '-----BEGIN RSA PRIVATE KEY-----\nTOPSECRET\n-----END RSA PRIVATE KEY-----';
  s.spec.url = 'ftp://u:hunter2-secret@vc';
  const v = validateSource('CREATE', s, undefined, facts);
  const all = [...v.problems, ...v.warnings].join('\n');
  assert.ok(!all.includes('hunter2'), all);
  assert.ok(!all.includes('TOPSECRET'), all);
});

test('garbage objects are denied with a message, never thrown on', () => {
  for (const o of [null, 42, 'x', [], {}, { spec: [] }, { spec: { credentials: 'x', hosts: 'y' } }, { spec: { hosts: [null, 1, { address: 5 }] } }]) {
    const v = validateSource('CREATE', o, undefined, facts);
    assert.equal(v.allowed, false);
    assert.ok(v.problems.length > 0);
  }
});

test('credentials take exactly one of password or secretRef', () => {
  const both = good();
  (both.spec.credentials as Record<string, unknown>).secretRef = { name: 'vc-secret' };
  assert.deepEqual(validateSource('CREATE', both, undefined, facts).problems, ['spec.credentials: set exactly one of password or secretRef, not both']);
  const ref = good();
  delete (ref.spec.credentials as Record<string, unknown>).password;
  (ref.spec.credentials as Record<string, unknown>).secretRef = { name: 'vc-secret', key: 'pw' };
  assert.deepEqual(validateSource('CREATE', ref, undefined, facts).problems, []);
  (ref.spec.credentials as Record<string, unknown>).secretRef = { name: 'Not/A/Name' };
  assert.deepEqual(validateSource('CREATE', ref, undefined, facts).problems, ['spec.credentials.secretRef.name must name a Secret in this namespace']);
  const neither = good();
  delete (neither.spec.credentials as Record<string, unknown>).password;
  assert.deepEqual(validateSource('CREATE', neither, undefined, facts).problems, ['spec.credentials.password is required (or secretRef naming a Secret that holds it)']);
});

test('only a secretRef that is new or renamed needs its author to be shown able to read the Secret', () => {
  const withRefs = (vc: string, host: string) => ({
    spec: { credentials: { username: 'u', secretRef: { name: vc } }, hosts: [{ id: 'host-1', credentials: { username: 'root', secretRef: { name: host } } }] },
  });
  assert.deepEqual(secretRefsToCheck(withRefs('a', 'b'), undefined), [
    { field: 'spec.credentials', name: 'a' },
    { field: 'spec.hosts[0].credentials', name: 'b' },
  ]);
  assert.deepEqual(secretRefsToCheck(withRefs('a', 'c'), withRefs('a', 'b')), [{ field: 'spec.hosts[0].credentials', name: 'c' }]);
  assert.deepEqual(secretRefsToCheck(withRefs('a', 'b'), withRefs('a', 'b')), []);
});

test('a spec.url edit while tasks import over the source is refused, naming them; with none it passes', () => {
  const before = { spec: { url: 'https://vc-a/sdk' } };
  assert.equal(sourceURLChanged({ spec: { url: 'https://vc-b/sdk' } }, before), true);
  assert.equal(sourceURLChanged({ spec: { url: 'https://vc-a/sdk' } }, before), false);
  assert.equal(sourceURLChanged({ spec: { url: 'https://vc-b/sdk' } }, undefined), false, 'a create is not an edit');
  assert.match(urlEditRefusal(['t1', 't2'])!, /spec\.url cannot change while tasks import over this source \(t1, t2\).*cancels every running import/);
  assert.equal(urlEditRefusal([]), undefined);
});
