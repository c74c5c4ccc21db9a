// Defensive readers for objects that arrive as arbitrary JSON: an admission request's object has passed
// the CRD schema on the API server, but a fuzzer, a stale schema or a direct call has not.
import ipaddr from 'ipaddr.js';

export type JsonObject = Record<string, unknown>;

export function asObject(x: unknown): JsonObject | undefined {
  return x !== null && typeof x === 'object' && !Array.isArray(x) ? (x as JsonObject) : undefined;
}
export function asArray(x: unknown): unknown[] | undefined {
  return Array.isArray(x) ? x : undefined;
}
export function asString(x: unknown): string | undefined {
  return typeof x === 'string' ? x : undefined;
}
export function nonEmpty(x: unknown): x is string {
  return typeof x === 'string' && x.trim() !== '';
}

/** A bounded, printable rendering of a user value for a message (never used for secret fields). */
export function show(x: unknown, max = 80): string {
  let s: string;
  try {
    s = typeof x === 'string' ? x : JSON.stringify(x) ?? String(x);
  } catch {
    s = String(x);
  }
  // eslint-disable-next-line no-control-regex -- control characters would garble a terminal
  s = s.replace(/[\u0000-\u001f\u007f]/g, '?');
  return JSON.stringify(s.length > max ? `${s.slice(0, max)}…` : s);
}

/** Dotted IPv4 (four decimal parts) or IPv6; not the odd forms ipaddr accepts ("1", "0x7f.1"). */
export function isIPAddress(s: string): boolean {
  if (ipaddr.IPv4.isValidFourPartDecimal(s)) return true;
  return s.includes(':') && ipaddr.IPv6.isValid(s);
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export function isDNSName(s: string): boolean {
  return s.length <= 253 && DNS1123_SUBDOMAIN.test(s.toLowerCase());
}

/** Order-independent for object keys, order-sensitive for arrays: what "changed" means for a spec field. */
export function canonical(x: unknown): string {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      const o: JsonObject = {};
      for (const k of Object.keys(v as JsonObject).sort()) {
        const val = (v as JsonObject)[k];
        if (val !== undefined) o[k] = walk(val);
      }
      return o;
    }
    return v;
  };
  return JSON.stringify(walk(x)) ?? 'undefined';
}

export function sameValue(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

/** Joins a field path and a problem: "spec.x: problem", or "spec.x is …" when the problem reads as a predicate. */
export function at(field: string, problem: string): string {
  return /^(is|does|holds|has|must) /.test(problem) ? `${field} ${problem}` : `${field}: ${problem}`;
}

/** A Fact is a cluster observation the thin async layer made, or why it could not be made. */
export type Fact<T> = { value: T } | { error: string };
export function factValue<T>(f: Fact<T> | undefined): T | undefined {
  return f && 'value' in f ? f.value : undefined;
}
export function factError(f: Fact<unknown> | undefined): string | undefined {
  return f && 'error' in f ? f.error : undefined;
}
