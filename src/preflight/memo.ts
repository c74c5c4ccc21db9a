// A bounded memo of a pure function of one string: admission reviews parse the same few addresses,
// CIDRs and CA bundles over and over (ipaddr.js throws and catches while parsing, and an X.509 parse is
// ~0.1 ms), so each distinct input is parsed once. Bounded because the inputs come from tenants: a flood
// of distinct strings evicts the oldest entries instead of growing memory.

/** Distinct inputs kept per memo; a cluster's addresses, CIDRs and CA bundles are far fewer. */
export const MEMO_MAX_ENTRIES = 1024;

export function memoize<T>(fn: (s: string) => T, maxEntries = MEMO_MAX_ENTRIES): ((s: string) => T) & { size(): number } {
  const cache = new Map<string, T>();
  const f = (s: string): T => {
    if (cache.has(s)) return cache.get(s) as T;
    const v = fn(s);
    if (cache.size >= maxEntries) cache.delete(cache.keys().next().value as string);
    cache.set(s, v);
    return v;
  };
  return Object.assign(f, { size: () => cache.size });
}
