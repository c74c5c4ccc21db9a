// Sealed credentials: a password a tenant writes inline in a VMImportSource is replaced at admission by
// `enc:v2:<kid>:<base64>` — AES-256-GCM-SIV (RFC 8452) under the key <kid> of the controller's key ring,
// bound as associated data to the endpoint it was written for: the source's namespace and spec.url, and
// for an ESXi host's password the host's address too. Copied into another source (or left in place while
// the URL changes), it does not open: nobody who may write sources can send a password they never saw to
// a server of their choice. `enc:v1:` values (bound to the namespace alone, written by earlier versions)
// still open in the controller; the webhook admits one only unchanged, on an unchanged endpoint.
// Pure: no I/O, keys come in as bytes.
//
// Deterministic on purpose: the same plaintext under the same key for the same endpoint always seals to
// the same text, so re-applying a manifest changes nothing (no generation bump, no Forklift re-test).
// GCM-SIV is nonce-misuse resistant: a fixed nonce reveals only whether two sealed values are equal
// (RFC 8452 §9), which is exactly the determinism asked for. Node 24's OpenSSL build offers no GCM-SIV
// cipher (crypto.getCiphers() lists none), hence @noble/ciphers (audited, no dependencies).
import { gcmsiv } from '@noble/ciphers/aes.js';

export const SEALED_PREFIX = 'enc:v2:';
/** Values sealed by earlier versions, bound to the namespace alone. */
export const LEGACY_SEALED_PREFIX = 'enc:v1:';
/** Key ids: short, lower-case, usable as a Secret data key (rotation adds k2, k3 … or dated ids). */
export const KID_PATTERN = /^[a-z0-9][a-z0-9-]{0,31}$/;
export const KEY_BYTES = 32;
/** RFC 8452 nonce length; fixed (all zero) so the output is a function of key, namespace and plaintext. */
const NONCE = new Uint8Array(12);
/**
 * Longest plaintext accepted (the CRD's former limit on the inline password). Its sealed form,
 * base64 of plaintext + 16-byte tag plus the prefix, stays under the schema's 2048.
 */
export const MAX_PLAINTEXT_BYTES = 1024;

export interface Keyring {
  /** Key id → 32-byte AES-256 key. */
  keys: ReadonlyMap<string, Uint8Array>;
  /** The key new writes use (the newest). */
  active: string;
}

export class SealError extends Error {
  /** `UnknownKey`: sealed under a key id this ring does not hold; `Invalid`: malformed or tampered (or sealed for another namespace). */
  readonly code: 'UnknownKey' | 'Invalid' | 'TooLong';
  constructor(code: SealError['code'], message: string) {
    super(message);
    this.name = 'SealError';
    this.code = code;
  }
}

export function isSealed(value: unknown): value is string {
  return typeof value === 'string' && (value.startsWith(SEALED_PREFIX) || value.startsWith(LEGACY_SEALED_PREFIX));
}

/** True for a value sealed by an earlier version (bound to its namespace only). */
export function isLegacySealed(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(LEGACY_SEALED_PREFIX);
}

/** The key id a sealed value names (undefined when it is not a sealed value). */
export function sealedKid(value: string): string | undefined {
  if (!isSealed(value)) return undefined;
  const rest = value.slice(SEALED_PREFIX.length);
  const i = rest.indexOf(':');
  return i > 0 ? rest.slice(0, i) : undefined;
}

/**
 * What a sealed password is for: the source's namespace and spec.url exactly as written, and for an
 * ESXi host's password that host's address exactly as written (Forklift logs in to https://<address>/sdk
 * with it).
 */
export interface SealBinding {
  namespace: string;
  url: string;
  address?: string;
}

/**
 * Associated data. JSON of a fixed-shape array: no two bindings share an encoding (a URL holding the
 * separator cannot pass for another namespace and URL).
 */
export function sealContext(b: SealBinding): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(['forklift.cozystack.io/VMImportSource', b.namespace, b.url, b.address ?? null]));
}
/** The associated data of enc:v1 values: the namespace alone. */
function legacyContext(namespace: string): Uint8Array {
  return new TextEncoder().encode(`forklift.cozystack.io/VMImportSource/${namespace}`);
}

export function seal(ring: Keyring, plaintext: string, binding: SealBinding): string {
  const key = ring.keys.get(ring.active);
  if (!key) throw new SealError('UnknownKey', `the active key ${ring.active} is not in the key ring`);
  const pt = new TextEncoder().encode(plaintext);
  if (pt.length > MAX_PLAINTEXT_BYTES) throw new SealError('TooLong', `longer than ${MAX_PLAINTEXT_BYTES} bytes`);
  const ct = gcmsiv(key, NONCE, sealContext(binding)).encrypt(pt);
  return `${SEALED_PREFIX}${ring.active}:${Buffer.from(ct).toString('base64')}`;
}

/**
 * The plaintext of a sealed value written for `binding` (an enc:v1 value: for its namespace); throws
 * SealError (never echoing the value) when it does not open.
 */
export function unseal(ring: Keyring, value: string, binding: SealBinding): string {
  const kid = sealedKid(value);
  if (!kid) throw new SealError('Invalid', 'not a sealed value (enc:v2:<key id>:<base64>)');
  const key = ring.keys.get(kid);
  if (!key) throw new SealError('UnknownKey', `sealed under key ${kid}, which the key ring does not hold`);
  const b64 = value.slice(SEALED_PREFIX.length + kid.length + 1);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw new SealError('Invalid', `sealed under key ${kid} but not valid base64`);
  const ct = Buffer.from(b64, 'base64');
  const legacy = isLegacySealed(value);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(gcmsiv(key, NONCE, legacy ? legacyContext(binding.namespace) : sealContext(binding)).decrypt(ct));
  } catch {
    throw new SealError(
      'Invalid',
      legacy
        ? `sealed under key ${kid} but does not open in namespace ${binding.namespace} (altered, or sealed for another namespace)`
        : `sealed under key ${kid} but does not open for this endpoint (altered, or sealed for another namespace, URL or host address)`,
    );
  }
}

/** Orders key ids so that k2 < k10 and 2026-01 < 2026-06 (the greatest is the newest). */
export function compareKids(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}

/**
 * The key ring a Secret's `data` holds: every entry named like a key id whose value is 32 bytes. The
 * active key is `preferred` when given and present, else the greatest id. Returns the problems found
 * (never key material) when no usable key exists.
 */
export function keyringFromSecretData(data: Record<string, string> | undefined, preferred?: string): { ring: Keyring } | { error: string } {
  const keys = new Map<string, Uint8Array>();
  const skipped: string[] = [];
  for (const [k, v] of Object.entries(data ?? {})) {
    if (!KID_PATTERN.test(k)) continue;
    const bytes = Buffer.from(v, 'base64');
    if (bytes.length !== KEY_BYTES) {
      skipped.push(`${k} (${bytes.length} bytes, not ${KEY_BYTES})`);
      continue;
    }
    keys.set(k, new Uint8Array(bytes));
  }
  if (keys.size === 0) return { error: `no usable key${skipped.length ? `; skipped ${skipped.join(', ')}` : ''}` };
  const ids = [...keys.keys()].sort(compareKids);
  const active = preferred && keys.has(preferred) ? preferred : ids[ids.length - 1]!;
  return { ring: { keys, active } };
}
