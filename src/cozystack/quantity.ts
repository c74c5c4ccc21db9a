// Kubernetes resource quantities → bytes, for the handoff. One parser for the whole project lives in
// src/preflight/quota.ts; this adapter only maps "did not parse" to undefined.
// A disk's size is carried from the PersistentVolume to the claim, DataVolume and VMDisk as the PV's own
// quantity string (never re-formatted: a rounding here would be a silent resize); bytes are for status.
import { parseQuantity as parse } from '../preflight/quota.ts';

/** Parses a quantity ("10Gi", "500M", "1073741824", "1e9") into a number of units; undefined if invalid. */
export function parseQuantity(q: string | number | undefined): number | undefined {
  if (typeof q === 'number') return Number.isFinite(q) ? q : undefined;
  if (typeof q !== 'string') return undefined;
  const n = parse(q);
  return Number.isFinite(n) ? n : undefined;
}
