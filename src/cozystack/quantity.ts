// Kubernetes resource quantities (the subset storage and memory use) → bytes.
// A disk's size is carried from the PersistentVolume to the claim, DataVolume and VMDisk as the PV's own
// quantity string (never re-formatted: a rounding here would be a silent resize); bytes are for status.

const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, m: 1e-3 };

/** Parses a quantity ("10Gi", "500M", "1073741824", "1e9") into a number of units; undefined if invalid. */
export function parseQuantity(q: string | number | undefined): number | undefined {
  if (typeof q === 'number') return Number.isFinite(q) ? q : undefined;
  if (typeof q !== 'string') return undefined;
  const m = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[kMGTPEm]|[eE][+-]?\d+)?$/.exec(q.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  const suffix = m[2] ?? '';
  if (suffix in BINARY) return n * BINARY[suffix]!;
  if (suffix in DECIMAL) return n * DECIMAL[suffix]!;
  if (/^[eE]/.test(suffix)) return n * 10 ** Number(suffix.slice(1));
  return undefined;
}
