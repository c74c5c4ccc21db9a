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

/**
 * Bound of a PEM block's label (CERTIFICATE, RSA PRIVATE KEY, …): the longest RFC 7468 label is far
 * shorter; a longer run is not a label, and the scan never looks further for one.
 */
const MAX_PEM_LABEL = 64;
const BEGIN = '-----BEGIN ';
const END = '-----END ';
const DASHES = '-----';

/** The blocks of a PEM text and the characters the scan visited (at most a small multiple of its length). */
export interface PemScan {
  blocks: Array<{ label: string; text: string }>;
  steps: number;
}

/**
 * The PEM blocks of `pem`, in one pass: each `-----BEGIN <label>-----` opens a block, the next
 * `-----END <same label>-----` closes it, and whatever was open starts afresh after a close. Linear in
 * the input: every boundary marker is read once and a label is read at most MAX_PEM_LABEL characters far.
 * (The regular expression it replaces, /-----BEGIN (…)-----([\s\S]*?)-----END \1-----/g, searched to
 * the end of the text again from every unmatched BEGIN: quadratic in the input.)
 */
export function scanPem(pem: string): PemScan {
  const blocks: PemScan['blocks'] = [];
  const open = new Map<string, number>();
  let steps = 0;
  let i = 0;
  const label = (from: number): { label: string; next: number } | undefined => {
    const stop = Math.min(pem.length, from + MAX_PEM_LABEL + DASHES.length);
    for (let j = from; j < stop; j++) {
      steps++;
      const ch = pem.charCodeAt(j);
      if (ch === 45 /* - */) return pem.startsWith(DASHES, j) && j > from ? { label: pem.slice(from, j), next: j + DASHES.length } : undefined;
      const ok = (ch >= 65 && ch <= 90) || (ch >= 48 && ch <= 57) || ch === 32;
      if (!ok) return undefined;
    }
    return undefined;
  };
  while (i < pem.length) {
    const at = pem.indexOf(DASHES, i);
    if (at < 0) {
      steps += pem.length - i;
      break;
    }
    steps += at - i + DASHES.length;
    if (pem.startsWith(BEGIN, at)) {
      const l = label(at + BEGIN.length);
      if (l) {
        if (!open.has(l.label)) open.set(l.label, at);
        i = l.next;
        continue;
      }
    } else if (pem.startsWith(END, at)) {
      const l = label(at + END.length);
      if (l) {
        const start = open.get(l.label);
        if (start !== undefined) {
          blocks.push({ label: l.label, text: pem.slice(start, l.next) });
          open.clear();
        }
        i = l.next;
        continue;
      }
    }
    i = at + 1;
  }
  return { blocks, steps };
}

/** The CERTIFICATE blocks of a PEM bundle. */
export function pemCertificates(pem: string): string[] {
  return scanPem(pem)
    .blocks.filter((b) => b.label === 'CERTIFICATE')
    .map((b) => b.text);
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
  const scanned = scanPem(t).blocks;
  const blocks = scanned.filter((b) => b.label === 'CERTIFICATE').map((b) => b.text);
  if (blocks.length === 0 && (scanned.some((b) => b.label.endsWith('PRIVATE KEY')) || hasPrivateKeyHeader(t))) {
    return 'holds a private key, not a certificate; paste the PEM CA certificate (and do not share that key)';
  }
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

/** A BEGIN line of a private key, whether or not its block is closed (linear: indexOf and a bounded label). */
function hasPrivateKeyHeader(t: string): boolean {
  for (let at = t.indexOf(BEGIN); at >= 0; at = t.indexOf(BEGIN, at + 1)) {
    const window = t.slice(at + BEGIN.length, at + BEGIN.length + MAX_PEM_LABEL + DASHES.length);
    const end = window.indexOf(DASHES);
    if (end > 0 && /^[A-Z ]*PRIVATE KEY$/.test(window.slice(0, end))) return true;
  }
  return false;
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
