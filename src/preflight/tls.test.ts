import { test } from 'node:test';
import assert from 'node:assert/strict';
import forge from 'node-forge';
import { generateKeyPairSync } from 'node:crypto';
import { caCertProblem, looksLikeThumbprint, tlsChoiceProblem } from './tls.ts';

function cert(o: { ca: boolean; issuer?: { cert: forge.pki.Certificate; key: forge.pki.rsa.PrivateKey }; cn: string }) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const key = forge.pki.privateKeyFromPem(privateKey.export({ type: 'pkcs1', format: 'pem' }) as string) as forge.pki.rsa.PrivateKey;
  const c = forge.pki.createCertificate();
  c.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }) as string);
  c.serialNumber = '0' + Math.floor(Math.random() * 1e9).toString(16);
  c.validity.notBefore = new Date(Date.now() - 60_000);
  c.validity.notAfter = new Date(Date.now() + 86_400_000);
  c.setSubject([{ name: 'commonName', value: o.cn }]);
  c.setIssuer(o.issuer ? o.issuer.cert.subject.attributes : [{ name: 'commonName', value: o.cn }]);
  c.setExtensions([{ name: 'basicConstraints', cA: o.ca }]);
  c.sign(o.issuer?.key ?? key, forge.md.sha256.create());
  return { cert: c, key, pem: forge.pki.certificateToPem(c) };
}

const ca = cert({ ca: true, cn: 'Lab CA' });
const leaf = cert({ ca: false, cn: 'vcenter.lab', issuer: ca });
const selfSignedLeaf = cert({ ca: false, cn: 'esxi.lab' });

test('SHA-1 thumbprints are recognised with colons or as 40 hex digits', () => {
  assert.equal(looksLikeThumbprint('AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01'), true);
  assert.equal(looksLikeThumbprint(' abcdef0123456789abcdef0123456789abcdef01 \n'), true);
  assert.equal(looksLikeThumbprint('AB:CD'), false);
  assert.equal(looksLikeThumbprint(ca.pem), false);
});

test('a CA certificate and a self-signed leaf pass; a leaf issued by a CA does not', () => {
  assert.equal(caCertProblem(ca.pem), undefined);
  assert.equal(caCertProblem(selfSignedLeaf.pem), undefined);
  assert.equal(caCertProblem(leaf.pem + ca.pem), undefined, 'a bundle containing the CA passes');
  assert.match(caCertProblem(leaf.pem) ?? '', /^is a certificate issued by another CA, not a CA itself/);
});

test('a thumbprint gets its own message', () => {
  assert.equal(caCertProblem('AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01'), "a SHA-1 thumbprint does not work here; paste the PEM CA certificate that signed the server's certificate (-----BEGIN CERTIFICATE----- …)");
});

test('garbage, a broken PEM and a private key are refused without echoing them', () => {
  assert.equal(caCertProblem('hello'), 'is not a PEM certificate; expected a block starting with -----BEGIN CERTIFICATE-----');
  assert.equal(caCertProblem('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----'), 'does not parse as an X.509 certificate; paste the PEM CA certificate exactly as exported');
  const k = forge.pki.privateKeyToPem(ca.key);
  const m = caCertProblem(k) ?? '';
  assert.match(m, /holds a private key/);
  assert.ok(!m.includes('MII'));
  assert.equal(caCertProblem(''), 'is empty; paste the PEM CA certificate');
});

test('exactly one of caCert and insecureSkipVerify: true, saying which to remove', () => {
  assert.equal(tlsChoiceProblem('spec.credentials', { caCert: ca.pem }), undefined);
  assert.equal(tlsChoiceProblem('spec.credentials', { insecureSkipVerify: true }), undefined);
  assert.equal(
    tlsChoiceProblem('spec.credentials', { caCert: ca.pem, insecureSkipVerify: true }),
    'spec.credentials: set exactly one of caCert or insecureSkipVerify: true, not both; remove insecureSkipVerify to verify the server against caCert, or remove caCert to skip verification',
  );
  assert.equal(tlsChoiceProblem('spec.hosts[0].credentials', { insecureSkipVerify: false }), "spec.hosts[0].credentials: set exactly one of caCert (the PEM CA that signed the server's certificate) or insecureSkipVerify: true");
});
