// Certificates for the simulated vCenters, the inventory service and the webhook server.
// Keys come from node:crypto (native, fast); node-forge signs the certificates.
import { generateKeyPairSync, randomBytes, createHash } from 'node:crypto';
import forge from 'node-forge';

export interface CertPair {
  certPEM: string;
  keyPEM: string;
}
export interface CA extends CertPair {
  cert: forge.pki.Certificate;
  key: forge.pki.rsa.PrivateKey;
}

function keys(): { pub: forge.pki.rsa.PublicKey; priv: forge.pki.rsa.PrivateKey; privPEM: string } {
  const kp = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privPEM = kp.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const pubPEM = kp.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return { pub: forge.pki.publicKeyFromPem(pubPEM), priv: forge.pki.privateKeyFromPem(privPEM), privPEM };
}

function base(cn: string, pub: forge.pki.rsa.PublicKey): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = pub;
  cert.serialNumber = '01' + randomBytes(8).toString('hex');
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 365 * 24 * 3600_000);
  cert.setSubject([{ name: 'commonName', value: cn }]);
  return cert;
}

export function makeCA(cn: string): CA {
  const k = keys();
  const cert = base(cn, k.pub);
  cert.setIssuer(cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true },
  ]);
  cert.sign(k.priv, forge.md.sha256.create());
  return { cert, key: k.priv, certPEM: forge.pki.certificateToPem(cert), keyPEM: k.privPEM };
}

export function makeServingCert(ca: CA, cn: string, o: { dns?: string[]; ips?: string[] }): CertPair {
  const k = keys();
  const cert = base(cn, k.pub);
  cert.setIssuer(ca.cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: [...(o.dns ?? []).map((value) => ({ type: 2, value })), ...(o.ips ?? []).map((ip) => ({ type: 7, ip }))] },
  ]);
  cert.sign(ca.key, forge.md.sha256.create());
  return { certPEM: forge.pki.certificateToPem(cert), keyPEM: k.privPEM };
}

/** SHA-1 fingerprint "AA:BB:…" of a PEM certificate (what vSphere calls a thumbprint). */
export function sha1Thumbprint(certPEM: string): string {
  const der = forge.asn1.toDer(forge.pki.certificateToAsn1(forge.pki.certificateFromPem(certPEM))).getBytes();
  const hex = createHash('sha1').update(Buffer.from(der, 'binary')).digest('hex').toUpperCase();
  return hex.match(/../g)!.join(':');
}

/** Parses every certificate in a PEM bundle; [] when it is not PEM at all. */
export function parsePEMBundle(text: string): forge.pki.Certificate[] {
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const out: forge.pki.Certificate[] = [];
  for (const b of blocks) {
    try {
      out.push(forge.pki.certificateFromPem(b));
    } catch {
      /* malformed block */
    }
  }
  return out;
}

/** True when some certificate of the bundle signed `leafPEM` (or is it). */
export function bundleVerifies(bundlePEM: string, leafPEM: string): boolean {
  const leaf = forge.pki.certificateFromPem(leafPEM);
  for (const ca of parsePEMBundle(bundlePEM)) {
    try {
      if (ca.verify(leaf)) return true;
    } catch {
      /* not the issuer */
    }
  }
  return false;
}
