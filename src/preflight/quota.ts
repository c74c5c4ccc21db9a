// Storage quota preflight. A transfer needs, per disk, the target volume plus CDI's scratch volume (the
// disk again plus filesystem overhead); a quota that cannot hold both leaves the claim Pending and the
// import stalled at 0% with nothing on the migration objects.

/** CDI's scratch space is the disk plus its filesystem overhead (~6% on the default 5.5% + rounding). */
export const SCRATCH_FACTOR = 1.06;

export function importBudgetBytes(diskCapacityBytes: number[]): number {
  let total = 0;
  for (const d of diskCapacityBytes) {
    if (Number.isFinite(d) && d > 0) total += d * (1 + SCRATCH_FACTOR);
  }
  return Math.ceil(total);
}

// Decimal suffixes as powers of ten (applied textually, so 1.1G is exactly 1100000000), binary ones as factors.
const DECIMAL_EXP: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;

/** A Kubernetes resource.Quantity as a number (bytes for storage); NaN when it does not parse. */
export function parseQuantity(q: string): number {
  if (typeof q === 'number') return q;
  if (typeof q !== 'string') return NaN;
  const m = QUANTITY.exec(q.trim());
  if (!m) return NaN;
  if (m[2]) return Number(`${m[1]}${m[2]}`);
  const suffix = m[3] ?? '';
  const bin = BINARY[suffix];
  if (bin !== undefined) return Number(m[1]) * bin;
  return Number(`${m[1]}e${DECIMAL_EXP[suffix]!}`);
}

export const GiB = 2 ** 30;
export function gib(bytes: number): string {
  const v = bytes / GiB;
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

interface QuotaLike {
  metadata?: { name?: string };
  spec?: { hard?: Record<string, string> };
  status?: { hard?: Record<string, string>; used?: Record<string, string> };
}

/** undefined when every relevant quota has room for `budgetBytes`; else a message with the numbers. */
export function quotaProblem(quotas: QuotaLike[], className: string, budgetBytes: number): string | undefined {
  const keys = ['requests.storage', `${className}.storageclass.storage.k8s.io/requests.storage`];
  const problems: string[] = [];
  for (const q of quotas ?? []) {
    for (const key of keys) {
      const hardStr = q?.status?.hard?.[key] ?? q?.spec?.hard?.[key];
      if (hardStr === undefined) continue;
      const hard = parseQuantity(hardStr);
      if (!Number.isFinite(hard)) continue;
      const usedStr = q?.status?.used?.[key];
      const used = usedStr === undefined ? 0 : parseQuantity(usedStr);
      const free = Math.max(0, hard - (Number.isFinite(used) ? used : 0));
      if (free < budgetBytes) {
        problems.push(
          `ResourceQuota "${q?.metadata?.name ?? ''}" limits ${key} to ${gib(hard)} GiB with ${gib(used)} GiB used (${gib(free)} GiB free), but the import needs about ${gib(budgetBytes)} GiB while it runs (each disk about twice: the target volume plus CDI's scratch volume)`,
        );
      }
    }
  }
  return problems.length ? problems.join('; ') : undefined;
}
