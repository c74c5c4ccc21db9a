// TLS settings of a vCenter/ESXi endpoint. Forklift takes a PEM CA (or insecureSkipVerify); a SHA-1
// thumbprint in the CA field — what vSphere's UI shows and other tools want — yields Forklift's opaque
// "The secret is not valid" (docs/forklift-contract.md), so it gets its own message here.
import { X509Certificate, createHash } from 'node:crypto';
import { MEMO_MAX_ENTRIES } from './memo.ts';

const SHA1_COLONS = /^([0-9a-f]{2}:){19}[0-9a-f]{2}$/i;
const SHA1_HEX = /^[0-9a-f]{40}$/i;
const SHA256_COLONS = /^([0-9a-f]{2}:){31}[0-9a-f]{2}$/i;
const SHA256_HEX = /^[0-9a-f]{64}$/i;

export function looksLikeThumbprint(s: string): boolean {
  if (typeof s !== 'string') return false;
  const t = s.trim();
  return SHA1_COLONS.test(t) || SHA1_HEX.test(t);
}

export const THUMBPRINT_MESSAGE = 'a SHA-1 thumbprint does not work here; paste the PEM CA certificate that signed the server\'s certificate (-----BEGIN CERTIFICATE----- …)';

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

/** The CERTIFICATE blocks of a PEM bundle. */
export function pemCertificates(pem: string): string[] {
  const out: string[] = [];
  for (const m of pem.matchAll(PEM_BLOCK)) {
    if (m[1] === 'CERTIFICATE') out.push(m[0]);
  }
  return out;
}

function isSelfSigned(c: X509Certificate): boolean {
  try {
    return c.checkIssued(c) && c.verify(c.publicKey);
  } catch {
    return false;
  }
}

/**
 * undefined when `pem` holds at least one X.509 certificate that is a CA (basicConstraints CA:TRUE) or
 * self-signed; otherwise why not. Never echoes the input (it might be a private key pasted by mistake).
 */
export function caCertProblem(pem: string): string | undefined {
  if (typeof pem !== 'string' || pem.trim() === '') return 'is empty; paste the PEM CA certificate';
  return caProblemByDigest(digest(pem), pem);
}

// Keyed by the bundle's SHA-256, so the memo holds digests and short verdicts, never the bundles (a CA
// bundle can be hundreds of KiB). Admission sees the same few CA bundles over and over; an X.509 parse costs
// far more than the digest.
function digest(pem: string): string {
  return createHash('sha256').update(pem).digest('base64');
}
const problemMemo = new Map<string, string | undefined>();
function caProblemByDigest(key: string, pem: string): string | undefined {
  if (problemMemo.has(key)) return problemMemo.get(key);
  const v = computeCACertProblem(pem);
  remember(problemMemo, key, v);
  return v;
}
function remember<V>(m: Map<string, V>, key: string, v: V): void {
  if (m.size >= MEMO_MAX_ENTRIES) m.delete(m.keys().next().value as string);
  m.set(key, v);
}

function computeCACertProblem(pem: string): string | undefined {
  const t = pem.trim();
  if (looksLikeThumbprint(t)) return THUMBPRINT_MESSAGE;
  if (SHA256_COLONS.test(t) || SHA256_HEX.test(t)) return 'a certificate fingerprint does not work here; paste the PEM CA certificate that signed the server\'s certificate (-----BEGIN CERTIFICATE----- …)';
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(t) && pemCertificates(t).length === 0) {
    return 'holds a private key, not a certificate; paste the PEM CA certificate (and do not share that key)';
  }
  const blocks = pemCertificates(t);
  if (blocks.length === 0) return 'is not a PEM certificate; expected a block starting with -----BEGIN CERTIFICATE-----';
  let parsed = 0;
  for (const b of blocks) {
    let c: X509Certificate;
    try {
      c = new X509Certificate(b);
    } catch {
      continue;
    }
    parsed++;
    if (c.ca || isSelfSigned(c)) return undefined;
  }
  if (parsed === 0) return 'does not parse as an X.509 certificate; paste the PEM CA certificate exactly as exported';
  return 'is a certificate issued by another CA, not a CA itself; paste the CA certificate that signed the server\'s certificate (or the server\'s own certificate if it is self-signed)';
}

/** Warnings about a usable CA bundle (expiry). */
export function caCertWarnings(pem: string, now: Date = new Date()): string[] {
  if (typeof pem !== 'string') return [];
  return validity(pem)
    .filter((c) => c.validTo < now.getTime())
    .map((c) => `the certificate "${c.subject}" expired on ${new Date(c.validTo).toISOString()}`);
}

/** Each parsable certificate's subject and end of validity (ms), memoized by the bundle's digest. */
const validityMemo = new Map<string, Array<{ subject: string; validTo: number }>>();
function validity(pem: string): Array<{ subject: string; validTo: number }> {
  const key = digest(pem);
  const hit = validityMemo.get(key);
  if (hit) return hit;
  const out: Array<{ subject: string; validTo: number }> = [];
  for (const b of pemCertificates(pem)) {
    try {
      const c = new X509Certificate(b);
      out.push({ subject: c.subject.replace(/\n/g, ', '), validTo: new Date(c.validTo).getTime() });
    } catch {
      /* reported by caCertProblem */
    }
  }
  remember(validityMemo, key, out);
  return out;
}

/** Exactly one of caCert / insecureSkipVerify: true. `field` is the path of the credentials object. */
export function tlsChoiceProblem(field: string, c: { caCert?: string; insecureSkipVerify?: boolean }): string | undefined {
  const hasCA = typeof c?.caCert === 'string' && c.caCert.trim() !== '';
  const insecure = c?.insecureSkipVerify === true;
  if (hasCA && insecure) {
    return `${field}: set exactly one of caCert or insecureSkipVerify: true, not both; remove insecureSkipVerify to verify the server against caCert, or remove caCert to skip verification`;
  }
  if (!hasCA && !insecure) {
    return `${field}: set exactly one of caCert (the PEM CA that signed the server's certificate) or insecureSkipVerify: true`;
  }
  return undefined;
}
