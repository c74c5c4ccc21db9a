import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { certValidity, generateCA, generateServingCert, needsRotation, servingCertFits } from './certs.ts';

const DAY = 86_400_000;

test('the CA is a CA and the serving certificate it signs names every DNS name and IP', () => {
  const ca = generateCA({ commonName: 'test-ca', validityMs: 10 * DAY });
  const c = new X509Certificate(ca.certPEM);
  assert.equal(c.ca, true);
  const s = generateServingCert(ca, { commonName: 'svc', dnsNames: ['svc.ns.svc'], ipAddresses: ['127.0.0.1'], validityMs: DAY });
  const sc = new X509Certificate(s.certPEM);
  assert.equal(sc.ca, false);
  assert.ok(sc.verify(c.publicKey));
  assert.equal(servingCertFits(s.certPEM, ca.certPEM, ['svc.ns.svc'], ['127.0.0.1']), true);
  assert.equal(servingCertFits(s.certPEM, ca.certPEM, ['other.ns.svc'], []), false, 'a missing SAN needs a new certificate');
  assert.equal(servingCertFits(s.certPEM, generateCA({ commonName: 'x', validityMs: DAY }).certPEM, ['svc.ns.svc'], []), false, 'another CA needs a new certificate');
});

test('a serving certificate never outlives its CA', () => {
  const ca = generateCA({ commonName: 'short-ca', validityMs: DAY });
  const s = generateServingCert(ca, { commonName: 'svc', dnsNames: ['svc'], ipAddresses: [], validityMs: 365 * DAY });
  assert.ok(certValidity(s.certPEM).notAfter.getTime() <= certValidity(ca.certPEM).notAfter.getTime());
});

test('rotation is due within the margin before expiry, capped at half the lifetime', () => {
  const now = new Date();
  const ca = generateCA({ commonName: 'ca', validityMs: 100 * DAY, now });
  assert.equal(needsRotation(ca.certPEM, now, 30 * DAY), false);
  assert.equal(needsRotation(ca.certPEM, new Date(now.getTime() + 71 * DAY), 30 * DAY), true);
  const short = generateCA({ commonName: 'ca', validityMs: 20_000, now });
  // lifetime 20 s: half is 10 s, so not due right away despite a 30-day margin
  assert.equal(needsRotation(short.certPEM, now, 30 * DAY), false);
  assert.equal(needsRotation(short.certPEM, new Date(now.getTime() + 11_000), 30 * DAY), true);
  assert.equal(needsRotation('garbage', now, DAY), true);
});
