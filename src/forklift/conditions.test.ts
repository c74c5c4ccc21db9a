import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockers, hostVerdict, isForkliftReady, looksLikeThumbprint, providerVerdict } from './conditions.ts';

const obj = (conditions: object[], phase?: string) => ({ metadata: { name: 'p' }, status: { phase, conditions } });
const ready = { type: 'Ready', status: 'True', category: 'Required', message: 'The provider is ready.' };
const spec = { username: 'mtv@vsphere.local', caCert: '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----' };

test('only status "True" counts; Ready with a blocker is not ready', () => {
  assert.ok(isForkliftReady(obj([ready])));
  assert.ok(!isForkliftReady(obj([{ ...ready, status: 'False' }])));
  assert.ok(!isForkliftReady(obj([ready, { type: 'ConnectionTestFailed', status: 'True', category: 'Critical', message: 'x' }])));
  assert.equal(blockers(obj([{ type: 'X', status: 'True', category: 'Error' }, { type: 'Y', status: 'True', category: 'Warn' }])).length, 1);
});

test('a ready Provider is Connected', () => {
  const v = providerVerdict(obj([ready, { type: 'ConnectionTestSucceeded', status: 'True', category: 'Required' }, { type: 'InventoryCreated', status: 'True', category: 'Required' }], 'Ready'), spec);
  assert.deepEqual([v.ready, v.reason], [true, 'Connected']);
});

test('an authentication failure is AuthenticationFailed and keeps Forklift words', () => {
  const v = providerVerdict(obj([{ type: 'ConnectionAuthFailed', status: 'True', category: 'Critical', reason: 'Unauthorized', message: 'Cannot complete login due to an incorrect user name or password.' }]), spec);
  assert.equal(v.reason, 'AuthenticationFailed');
  assert.match(v.message, /incorrect user name or password/);
  assert.doesNotMatch(v.message, /SSO domain/);
});

test('a username without @ mentions the missing SSO domain', () => {
  const v = providerVerdict(obj([{ type: 'ConnectionAuthFailed', status: 'True', category: 'Critical', message: 'incorrect user name or password' }]), { username: 'mtv-migration' });
  assert.equal(v.reason, 'AuthenticationFailed');
  assert.match(v.message, /SSO domain/);
  assert.match(v.message, /user@vsphere\.local/);
});

test('a thumbprint in caCert gives InvalidCACertificate, not a credentials problem', () => {
  const tp = 'AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01';
  assert.ok(looksLikeThumbprint(tp));
  assert.ok(!looksLikeThumbprint(spec.caCert));
  assert.ok(looksLikeThumbprint(`-----BEGIN CERTIFICATE-----\n${tp}\n-----END CERTIFICATE-----`), 'armoured thumbprint');
  const v = providerVerdict(obj([{ type: 'SecretNotValid', status: 'True', category: 'Critical', reason: 'DataErr', message: 'The secret is not valid.' }]), { username: 'u@d', caCert: tp });
  assert.equal(v.reason, 'InvalidCACertificate');
  assert.match(v.message, /thumbprint/);
  assert.match(v.message, /The secret is not valid/);
});

test("a CA Forklift cannot parse (its connection test fails before connecting) says caCert is not a PEM CA, not that vCenter's certificate is unsigned", () => {
  const failed = { type: 'ConnectionTestFailed', status: 'True', category: 'Critical', reason: 'Tested', message: 'failed to parse the specified certificate' };
  const tp = 'AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01';
  for (const caCert of [`-----BEGIN CERTIFICATE-----\n${tp}\n-----END CERTIFICATE-----`, spec.caCert]) {
    const v = providerVerdict(obj([failed], 'ConnectionFailed'), { username: 'u@d', caCert });
    assert.equal(v.reason, 'InvalidCACertificate');
    assert.match(v.message, /not a PEM certificate authority/);
    assert.match(v.message, /failed to parse the specified certificate/);
    assert.doesNotMatch(v.message, /not signed by/);
  }
});

test('an x509 failure gives InvalidCACertificate; another connection failure ConnectionFailed', () => {
  const x = providerVerdict(obj([{ type: 'ConnectionTestFailed', status: 'True', category: 'Critical', message: 'x509: certificate signed by unknown authority' }]), spec);
  assert.equal(x.reason, 'InvalidCACertificate');
  assert.match(x.message, /x509/);
  const c = providerVerdict(obj([{ type: 'ConnectionTestFailed', status: 'True', category: 'Critical', message: 'dial tcp: no route to host' }]), spec);
  assert.equal(c.reason, 'ConnectionFailed');
});

test('a Secret missing keys is CredentialsMissing naming them', () => {
  const v = providerVerdict(obj([{ type: 'SecretNotValid', status: 'True', category: 'Critical', reason: 'DataErr', message: 'The secret is not valid.', items: ['password'] }]), spec);
  assert.equal(v.reason, 'CredentialsMissing');
  assert.match(v.message, /password/);
  const ca = providerVerdict(obj([{ type: 'SecretNotValid', status: 'True', category: 'Critical', reason: 'DataErr', message: 'The secret is not valid.', items: ['cacert'] }]), { username: 'u@d', caCert: '-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----' });
  assert.equal(ca.reason, 'InvalidCACertificate', 'an unusable CA is a CA problem');
});

test('no verdict yet is Connecting', () => {
  assert.equal(providerVerdict(obj([], 'Staging'), spec).reason, 'Connecting');
  assert.equal(providerVerdict(undefined, spec).reason, 'Connecting');
  assert.equal(providerVerdict(obj([{ type: 'LoadInventory', status: 'True', category: 'Advisory', message: 'Loading' }]), spec).reason, 'Connecting');
});

test('a host override that is not Ready is HostUnreachable; untested hosts have no reason yet', () => {
  assert.deepEqual(hostVerdict(obj([ready])), { ready: true, message: 'Host connection tested.' });
  const bad = hostVerdict(obj([{ type: 'ConnectionTestFailed', status: 'True', category: 'Critical', message: 'dial tcp 10.31.0.29:443: i/o timeout' }]));
  assert.equal(bad.reason, 'HostUnreachable');
  assert.match(bad.message, /i\/o timeout/);
  assert.equal(hostVerdict(obj([])).reason, undefined);
});

test('an ESXi host vCenter reports not green is named as such, with the fix, not as an unreachable address', () => {
  const host = (...cs: Array<{ type: string; category: string; message: string }>) => ({ metadata: { name: 'h' }, status: { conditions: cs.map((c) => ({ ...c, status: 'True', reason: 'StateEvaluated' })) } });
  const sick = hostVerdict(host({ type: 'NotHealthy', category: 'Critical', message: "Host status not 'green'." }, { type: 'ConnectionTestSucceeded', category: 'Required', message: 'ok' }));
  assert.equal(sick.ready, false);
  assert.match(sick.message ?? '', /vCenter reports the ESXi host not healthy/);
  assert.match(sick.message ?? '', /go to the address vCenter advertises/);
  const maint = hostVerdict(host({ type: 'InMaintenance', category: 'Critical', message: 'Host is in maintenance mode.' }));
  assert.match(maint.message ?? '', /maintenance mode \(take it out in vSphere\)/);
});
