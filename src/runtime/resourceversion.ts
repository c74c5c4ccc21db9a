// Ordering of resourceVersions where the server makes them comparable.
/**
 * Orders two resourceVersions when both are etcd revisions (decimal integers, as every etcd-backed kind
 * and Cozystack's aggregated API — backed by HelmReleases — serve them): -1, 0 or 1. Undefined when either
 * is not: resourceVersions are opaque by contract, so callers fall back to asking the API server.
 */
export function compareResourceVersions(a: string | undefined, b: string | undefined): -1 | 0 | 1 | undefined {
  if (!a || !b || !/^[0-9]{1,20}$/.test(a) || !/^[0-9]{1,20}$/.test(b)) return undefined;
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}
