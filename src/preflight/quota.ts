// Storage quota preflight: what the VDDK path allocates in the task's namespace, per the code of CDI
// v1.64.0 and of this controller's handoff, so that an import is refused only when it certainly cannot
// fit, and warned about when it may not.
//
// Per disk, Forklift creates a DataVolume with spec.storage = the disk's capacity (cold migration: no
// usePopulator annotation, kubev2v/forklift@v2.11.5:pkg/controller/plan/kubevirt.go). CDI then:
// - sizes the claim: on a Filesystem volume the request is inflated by the filesystem overhead of the
//   class (global default 0.06) after rounding up to 1 MiB; a Block volume is not inflated
//   (kubevirt/containerized-data-importer@v1.64.0:pkg/controller/datavolume/util.go, renderPvcSpecVolumeSize;
//   pkg/controller/common/util.go, InflateSizeWithOverhead; pkg/util/util.go, GetRequiredSpace;
//   pkg/common/common.go, DefaultGlobalOverhead);
// - uses NO scratch space for a VDDK import: the VDDK source goes straight to TransferDataFile
//   (pkg/importer/vddk-datasource_amd64.go, Info/Transfer) and requiresScratchSpace is true only for
//   archives, Glance, ImageIO checkpoints and registry imports (pkg/controller/import-controller.go);
// - on a CSI class, populates through a prime claim `prime-<uid>` with the target's very requests
//   (pkg/controller/datavolume/controller-base.go, shouldUseCDIPopulator; pkg/controller/populators/populator-base.go,
//   createPVCPrime): while a disk transfers, its request counts twice against the quota.
// The handoff then creates the VMDisk's claim, bound to the same volume, before deleting the transfer
// claim: for one moment per disk, its size counts twice as well (src/controllers/handoff/plan.ts, steps 4-5).
//
// Certain (fail): every disk's claim at its smallest (Block, or no overhead) at once — every VM of a task
// starts together, one Plan each — plus the handoff's overlap of at least one disk, and as many claims.
// Possible (warn): every disk inflated by the default overhead, twice (target + prime claim).

/** CDI's default filesystem overhead (CDIConfig may set another per class: the warning bound only). */
export const CDI_DEFAULT_FS_OVERHEAD = 0.06;
const MiB = 2 ** 20;

export interface ImportBudget {
  /** Bytes the import certainly holds at its peak; a quota with less free fails it. */
  certainBytes: number;
  /** Bytes it may hold at its peak (default overhead, prime claims); less free is a warning. */
  possibleBytes: number;
  certainClaims: number;
  possibleClaims: number;
}

/** The import's storage budget for these disk capacities. Pure. */
export function importBudget(diskCapacityBytes: number[]): ImportBudget {
  const disks = diskCapacityBytes.filter((d) => Number.isFinite(d) && d > 0).map((d) => Math.ceil(d / MiB) * MiB);
  if (!disks.length) return { certainBytes: 0, possibleBytes: 0, certainClaims: 0, possibleClaims: 0 };
  const sum = disks.reduce((a, d) => a + d, 0);
  const inflated = disks.reduce((a, d) => a + Math.ceil(d * (1 + CDI_DEFAULT_FS_OVERHEAD)), 0);
  return { certainBytes: sum + Math.min(...disks), possibleBytes: 2 * inflated, certainClaims: disks.length + 1, possibleClaims: 2 * disks.length };
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

export interface QuotaLike {
  metadata?: { name?: string };
  spec?: { hard?: Record<string, string> };
  status?: { hard?: Record<string, string>; used?: Record<string, string> };
}

/** A quota that certainly cannot hold the import (`fail`), or may not (`warn`); both undefined when it fits. */
export interface QuotaVerdict {
  fail?: string;
  warn?: string;
}

/** The namespace's quotas against an import's budget on class `className`. Pure. */
export function quotaVerdict(quotas: QuotaLike[], className: string, b: ImportBudget): QuotaVerdict {
  const fails: string[] = [];
  const warns: string[] = [];
  const check = (q: QuotaLike, key: string, certain: number, possible: number, show: (n: number) => string): void => {
    const hardStr = q?.status?.hard?.[key] ?? q?.spec?.hard?.[key];
    if (hardStr === undefined) return;
    const hard = parseQuantity(hardStr);
    if (!Number.isFinite(hard)) return;
    const usedStr = q?.status?.used?.[key];
    const usedN = usedStr === undefined ? 0 : parseQuantity(usedStr);
    const used = Number.isFinite(usedN) ? usedN : 0;
    const free = Math.max(0, hard - used);
    const where = `ResourceQuota "${q?.metadata?.name ?? ''}" limits ${key} to ${show(hard)} with ${show(used)} used (${show(free)} free)`;
    if (free < certain) fails.push(`${where}, but the import certainly needs ${show(certain)} at its peak (every disk's claim, plus one disk twice while its claim is handed over)`);
    else if (free < possible) warns.push(`${where}; the import may need up to ${show(possible)} at its peak (on a CSI class CDI fills each disk through a second claim of the same size, plus filesystem overhead)`);
  };
  const gibs = (n: number): string => `${gib(n)} GiB`;
  const count = (n: number): string => String(Math.ceil(n));
  for (const q of quotas ?? []) {
    for (const key of ['requests.storage', `${className}.storageclass.storage.k8s.io/requests.storage`]) check(q, key, b.certainBytes, b.possibleBytes, gibs);
    for (const key of ['persistentvolumeclaims', `${className}.storageclass.storage.k8s.io/persistentvolumeclaims`]) check(q, key, b.certainClaims, b.possibleClaims, count);
  }
  return { ...(fails.length ? { fail: fails.join('; ') } : {}), ...(warns.length ? { warn: warns.join('; ') } : {}) };
}
