// Shared state of one running simulator: the REST client, informers, worlds, timings and small helpers.
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { type Informer, type Obj, type Rest, R, notFound } from './rest.ts';
import type { World } from './world.ts';

export interface SimTimings {
  /** How long a vSphere Provider shows `LoadInventory` before `Ready`. */
  loadInventoryMs: number;
  /** How long a Plan shows `ValidatingVDDK` (the VDDK check Job) before `Ready`. */
  validatingVddkMs: number;
  /** How long a transfer to an unreachable ESXi host sits at 0% before failing with the NBD error. */
  unreachableFailMs: number;
  /** How long DataVolume progress stays frozen at 99.92% for a VM with the `conversionFreeze` fault. */
  conversionMs: number;
  /** Progress tick of a running transfer (and the coalescing period of status writes). */
  tickMs: number;
  /** Pause between itinerary phases, so observers can see each one. */
  stepMs: number;
  /**
   * How long CDI's importer pod waits before its next start after it exited with an error (the kubelet's
   * CrashLoopBackOff, 10 s doubling to 5 min in a cluster), fast-forwarded: a VDDK open refused past the
   * ESXi host's NFC ceiling is retried this often until Forklift's IMPORTER_RETRY restarts are used up.
   */
  importerRestartMs: number;
  /**
   * Forklift's MAX_VM_INFLIGHT (controller_max_vm_inflight, 20): the disks in flight per ESXi host, across
   * the Plans of one source Provider (scheduler/vsphere/scheduler.go); VMs beyond it are Pending.
   */
  maxVmInflight: number;
  /**
   * Warm: the time between precopies, Forklift's PRECOPY_INTERVAL (minutes, default 60:
   * kubev2v/forklift@v2.11.5:pkg/settings/migration.go), fast-forwarded.
   */
  precopyIntervalMs: number;
  /**
   * v2.12.5: how long a Critical/Error condition stays on an executing Plan before Forklift fails the run
   * (BLOCKER_GRACE_PERIOD_MINUTES, default 5: kubev2v/forklift@v2.12.5:pkg/settings/migration.go,
   * pkg/controller/plan/controller.go failExecutingMigrationOnBlocker), fast-forwarded.
   */
  blockerGraceMs: number;
  /**
   * Forklift's Secret webhook's timeoutSeconds (30 at both tags: operator/roles/forkliftcontroller/templates/api/
   * validatingwebhookconfiguration-secrets.yml.j2), as the sim registers it: how long the API server waits for
   * a provider Secret's login to a vCenter whose packets are dropped before failing the write. Whole seconds
   * (the API server's unit); a test that only needs the stall shortens it.
   */
  secretWebhookTimeoutSeconds: number;
}

export const DEFAULT_TIMINGS: SimTimings = {
  loadInventoryMs: 300,
  validatingVddkMs: 300,
  unreachableFailMs: 2000,
  conversionMs: 1000,
  tickMs: 100,
  stepMs: 30,
  importerRestartMs: 250,
  maxVmInflight: 20,
  precopyIntervalMs: 1000,
  blockerGraceMs: 3000,
  secretWebhookTimeoutSeconds: 30,
};

export interface Informers {
  secret: Informer;
  pvc: Informer;
  pv: Informer;
  sc: Informer;
  dv: Informer;
  vm: Informer;
  vmdisk: Informer;
  vminstance: Informer;
  provider?: Informer;
  host?: Informer;
  nmap?: Informer;
  smap?: Informer;
  plan?: Informer;
  migration?: Informer;
}

/**
 * Which Forklift the sim plays: kubev2v/forklift v2.11.5 (what the platform pins) or v2.12.5. Every side
 * effect played, and how it differs between the two, is listed in test/sim/SIDE-EFFECTS.md.
 */
export const FORKLIFT_VERSIONS = ['v2.11.5', 'v2.12.5'] as const;
export type ForkliftVersion = (typeof FORKLIFT_VERSIONS)[number];

/** True when the sim plays Forklift 2.12 (v2.12.5). */
export function is212(ctx: Pick<Ctx, 'forkliftVersion'>): boolean {
  return ctx.forkliftVersion === 'v2.12.5';
}

export interface Ctx {
  rest: Rest;
  forkliftVersion: ForkliftVersion;
  worlds: World[];
  timings: SimTimings;
  mbPerSecond: number;
  forkliftNamespace: string;
  inf: Informers;
  /** Whether an object is this simulator's to play (test/sim/scope.ts); every informer filters by it. */
  visible: (o: Obj) => boolean;
  stopping: boolean;
  /**
   * Name of the pipeline step that carries the disk transfer: `DiskTransfer` (cold raw copy), or what other
   * Forklift versions and modes report instead — `DiskTransferV2v` (2.10 without skipGuestConversion), or
   * an unnamed step.
   */
  transferStepName: string;
  /** Timers owned by the sim (cleared on stop so nothing keeps node --test alive). */
  timers: Set<NodeJS.Timeout>;
  /** Cluster instance types / preferences the vm-instance chart can find; undefined: all (SimOptions). */
  instanceTypes?: Set<string>;
  instancePreferences?: Set<string>;
  /** Play Kubernetes 1.33's CSI PV deletion protection (test/sim/storage.ts, handleProtectionFinalizer). */
  csiPVFinalizer?: boolean;
  /** Play Cozystack's lineage webhook and Flux's origin labels (test/sim/lineage.ts); `down`: not callable. */
  lineage?: { down: boolean };
}

export function later(ctx: Ctx, ms: number, fn: () => void): void {
  const t = setTimeout(() => {
    ctx.timers.delete(t);
    if (!ctx.stopping) fn();
  }, ms);
  ctx.timers.add(t);
}

/** Resolves after `ms` (a simulated duration, not synchronisation), rejects when `signal` aborts. */
export function sleep(ctx: Ctx, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('aborted'));
    const t = setTimeout(() => {
      ctx.timers.delete(t);
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    ctx.timers.add(t);
    const onAbort = (): void => {
      clearTimeout(t);
      ctx.timers.delete(t);
      reject(new Error('aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export async function emitEvent(ctx: Ctx, o: Obj, type: 'Normal' | 'Warning', reason: string, message: string, component: string): Promise<void> {
  const now = new Date().toISOString();
  try {
    await ctx.rest.create(R.Event, {
      metadata: { name: `${o.metadata.name}.${randomBytes(6).toString('hex')}`, namespace: o.metadata.namespace ?? 'default' },
      involvedObject: { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, namespace: o.metadata.namespace, uid: o.metadata.uid },
      type,
      reason,
      message,
      source: { component },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    });
  } catch (e) {
    if (!notFound(e) && !ctx.stopping) console.error(`[sim] event: ${(e as Error).message}`);
  }
}

/** Decodes a Secret's data (base64) and stringData into plain strings. */
export function secretData(s: Obj | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((s?.data ?? {}) as Record<string, string>)) out[k] = Buffer.from(v, 'base64').toString('utf8');
  return out;
}

/** Forklift's condition: only ever status "True", with a category. */
export interface Cond {
  type: string;
  status: 'True';
  reason?: string;
  category: 'Critical' | 'Error' | 'Warn' | 'Required' | 'Advisory';
  message: string;
  items?: string[];
  durable?: boolean;
  lastTransitionTime?: string;
}

export const cond = (type: string, category: Cond['category'], reason: string, message: string, items?: string[]): Cond => ({
  type,
  status: 'True',
  reason,
  category,
  message,
  ...(items && items.length ? { items } : {}),
});

/** Keeps lastTransitionTime of conditions already present (a condition only "transitions" when it appears). */
export function stamp(next: Cond[], prev: Cond[] | undefined): Cond[] {
  const now = new Date().toISOString();
  return next.map((c) => ({ ...c, lastTransitionTime: prev?.find((p) => p.type === c.type)?.lastTransitionTime ?? c.lastTransitionTime ?? now }));
}

export const blocking = (cs: Cond[]): boolean => cs.some((c) => c.category === 'Critical' || c.category === 'Error');

/**
 * Equal ignoring lastTransitionTime (to skip no-op status writes that would re-trigger watches), and ignoring
 * the order of keys: the API server returns a custom resource's fields sorted, so comparing the stored status
 * as text with one built in the sim's own key order found every status changed and sent a no-op write on
 * each pass.
 */
export function sameStatus(a: unknown, b: unknown): boolean {
  const strip = (x: unknown): unknown => JSON.parse(JSON.stringify(x ?? null, (k, v) => (k === 'lastTransitionTime' ? undefined : v)));
  return isDeepStrictEqual(strip(a), strip(b));
}
