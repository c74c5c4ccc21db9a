// The platform's transfer budget: which waiting VMs may start their disk transfer now, counted per ESXi
// host across every task of every tenant that imports from the same vCenter.
//
// Why the platform counts and not Forklift alone: Forklift's vSphere scheduler limits the untransferred
// disks per ESXi host (MAX_VM_INFLIGHT, default 20: pkg/settings/migration.go), but counts only the Plans
// whose spec.provider.source is the Plan's own (kubev2v/forklift v2.11.5 and v2.12.5
// pkg/controller/plan/scheduler/vsphere/scheduler.go, buildInFlight: "ignore plans that aren't using the
// same source provider"). Every VMImportSource has its own Provider, so two sources on one vCenter, in one
// tenant or in two, each get their own 20 per host. The NFC service that serves the VDDK's reads shares
// one buffer pool per ESXi host — 48 MB by default on vSphere 6.x to 8.0, about 48 concurrent 1 MB
// streams, VixDiskLib_Open taking one connection per disk (VMware's VDDK Programming Guide, "NFC Session
// Limits and Timeouts") — and past it a transfer fails to open (test/sim/esxi.ts plays that).
//
// What this module decides is pure: the caller gathers, for one vCenter, every VM of every task that
// targets it (running tasks only), with the evidence of the VM's slot, and records what comes back.
//
// A VM holds a slot when its admission checkpoint is recorded OR its Migration exists: the checkpoint is
// written before the Migration is created, so after a crash or a failover the slots are rebuilt from
// objects the API server keeps, never from memory, and a VM whose checkpoint write was lost but whose
// Migration exists (or which an older version started) still counts. A holder's cost is its
// untransferred disks (Forklift's cost(): len(vm.Disks) - finishedDisks, 0 once the copy is done).
//
// Decision, per host (first match wins, repeated until it stops):
//   no tenant with a VM waiting on the host ........................ stop
//   the least-served tenant's next VM would pass its tenant cap ..... skip that tenant this pass
//   the least-served tenant's next VM fits the host's budget ........ admit it
//   it does not fit ................................................. stop: the slots freed next are its
// A VM with more disks than the budget fits only an idle host (Forklift's own rule, schedulable() in the
// same file), likewise for the tenant cap. Stopping, rather than letting a smaller VM behind it pass,
// is what keeps a 4-disk VM from waiting forever behind a stream of 1-disk VMs.
import { cmp, nextTenant, projectedOrder, tenantQueues } from './fair.ts';

/**
 * Forklift's own per-Provider limit (MAX_VM_INFLIGHT default: kubev2v/forklift v2.11.5
 * pkg/settings/migration.go getPositiveEnvLimit(MaxVmInFlight, 20)). The platform budget defaults below it
 * so that Forklift's limit never binds first and stays a backstop.
 */
export const FORKLIFT_MAX_VM_INFLIGHT = 20;

/**
 * The NFC streams one ESXi host serves at once by default on vSphere 6.x–8.0: a 48 MB buffer pool, 1 MB
 * per stream (VDDK Programming Guide, "NFC Session Limits and Timeouts"). Backups, clones, OVF exports and
 * the datastore browser draw on the same pool.
 */
export const NFC_STREAMS_PER_HOST = 48;

/**
 * Default disks in transfer per ESXi host across the platform: half of Forklift's 20 and about a fifth of
 * the host's NFC streams, leaving the rest of the pool to the host's own users (backup proxies open one
 * stream per disk they read) so that an import never makes a nightly backup fail, or the reverse.
 */
export const DEFAULT_MAX_DISKS_PER_HOST = 10;

export interface BudgetConfig {
  /** false: every ready VM starts at once (Forklift's per-Provider limit alone, the behaviour without a budget). */
  enabled: boolean;
  /** Disks in transfer per ESXi host across every tenant. */
  maxDisksPerHost: number;
  /** Of one host's budget, the disks one tenant may hold at most; absent → no cap beyond the host's. */
  maxDisksPerTenant?: number;
}

export const DEFAULT_BUDGET: BudgetConfig = { enabled: true, maxDisksPerHost: DEFAULT_MAX_DISKS_PER_HOST };

/**
 * The budget from the controller's environment (the chart's transfer.* values): TRANSFER_BUDGET
 * ("false" turns it off), TRANSFER_MAX_DISKS_PER_HOST, TRANSFER_MAX_DISKS_PER_TENANT (empty or 0 = none).
 * A value that is not a positive integer is an error naming the variable: the process refuses to start
 * rather than run a campaign without the limit the admin asked for.
 */
export function budgetFromEnv(env: Readonly<Record<string, string | undefined>>): BudgetConfig {
  const int = (name: string, v: string): number => {
    if (!/^[0-9]{1,6}$/.test(v)) throw new Error(`${name} must be a whole number of disks, got ${JSON.stringify(v.slice(0, 32))}`);
    return Number(v);
  };
  const onOff = (env.TRANSFER_BUDGET ?? 'true').trim().toLowerCase();
  if (onOff !== 'true' && onOff !== 'false') throw new Error(`TRANSFER_BUDGET must be true or false, got ${JSON.stringify(onOff.slice(0, 32))}`);
  const perHostRaw = (env.TRANSFER_MAX_DISKS_PER_HOST ?? '').trim();
  const perHost = perHostRaw === '' ? DEFAULT_MAX_DISKS_PER_HOST : int('TRANSFER_MAX_DISKS_PER_HOST', perHostRaw);
  if (perHost < 1) throw new Error('TRANSFER_MAX_DISKS_PER_HOST must be at least 1');
  const perTenantRaw = (env.TRANSFER_MAX_DISKS_PER_TENANT ?? '').trim();
  const perTenant = perTenantRaw === '' ? 0 : int('TRANSFER_MAX_DISKS_PER_TENANT', perTenantRaw);
  return { enabled: onOff === 'true', maxDisksPerHost: perHost, ...(perTenant > 0 ? { maxDisksPerTenant: perTenant } : {}) };
}

/** One VM of one task that imports from the vCenter, with the evidence of its slot. */
export interface CampaignVM {
  /** The tenant. */
  namespace: string;
  task: string;
  /** The task's creationTimestamp, epoch ms. */
  taskCreated: number;
  /** Position in the task's spec.vms. */
  index: number;
  /** The VM's inventory id. */
  id: string;
  /** The vCenter's instance identity from the inventory (the provider's instanceUuid), not its URL. */
  vcenter: string;
  /** The inventory id of the ESXi host whose NFC service serves the VM's disks (the inventory VM's `host`). */
  host: string;
  /** The host's name as the inventory gives it, for the Queued message; the id when absent. */
  hostName?: string;
  /** Disks the transfer opens. */
  disks: number;
  /** Disks not transferred yet (a holder's cost); `disks` when absent. 0 once the copy is done. */
  disksRemaining?: number;
  /** The admission checkpoint is recorded in the task's status. */
  admitted: boolean;
  /** The VM's Migration exists. */
  migration: boolean;
  /** Terminal (succeeded, failed, canceled) or being canceled: holds nothing and waits for nothing. */
  finished: boolean;
  /** Waiting only: everything before the Migration is done (the Plan is Ready); a VM not ready waits for no slot. */
  ready: boolean;
  /** Waiting: when it became Queued (epoch ms), for the wait metrics. */
  queuedSince?: number;
  /**
   * For the ETA: each disk's bytes left (a transferring VM: from the Migration's DiskTransfer tasks; a
   * waiting one: the disks' capacities from the inventory). Absent → the VM is left out of the ETA.
   */
  disksLeft?: number[];
  /** Transferring: the VM's current rate (its status' bytesPerSecond); the host's rate is the sum. */
  bytesPerSecond?: number;
}

export const vmKey = (v: Pick<CampaignVM, 'namespace' | 'task' | 'id'>): string => `${v.namespace}/${v.task}/${v.id}`;
export const hostKey = (v: Pick<CampaignVM, 'vcenter' | 'host'>): string => `${v.vcenter}/${v.host}`;

/** Where a queued VM stands. Counts only: never another tenant's VMs or namespaces. */
export interface QueuePosition {
  host: string;
  hostName: string;
  /** Disks of this tenant's VMs that go before it on the host. */
  disksAheadInTenant: number;
  /** Disks of every tenant's VMs that go before it on the host. */
  disksAheadTotal: number;
  /** Its place in the host's queue, from 0: the order the ETA admits the queue in (eta.ts drain). */
  position: number;
  /** The sentence the VM's status message carries. */
  message: string;
}

export interface HostUsage {
  vcenter: string;
  host: string;
  hostName: string;
  /** Undefined when the budget is off. */
  budget?: number;
  /** Disks held after this pass's admissions. */
  inUse: number;
  queuedVMs: number;
  queuedDisks: number;
}

export interface Admission {
  /** Keys (vmKey) of the VMs to admit now: record the checkpoint, then create the Migration. */
  admit: string[];
  /** Keys of every VM that holds a slot after this pass (rebuilt holders plus `admit`). */
  holders: string[];
  /** Ready VMs left waiting, by key. */
  queued: Map<string, QueuePosition>;
  hosts: HostUsage[];
}

/** A DNS name's length: longer inventory host names are cut in messages. */
const MAX_HOST_NAME = 253;

const holds = (v: CampaignVM): boolean => !v.finished && (v.admitted || v.migration);
const cost = (v: CampaignVM): number => Math.max(0, Math.min(v.disks, v.disksRemaining ?? v.disks));

/** The slots of one vCenter's hosts, and which waiting VMs take the free ones now. */
export function admit(vms: readonly CampaignVM[], cfg: BudgetConfig): Admission {
  const byHost = new Map<string, CampaignVM[]>();
  for (const v of vms) {
    if (v.finished) continue;
    const k = hostKey(v);
    const l = byHost.get(k);
    if (l) l.push(v);
    else byHost.set(k, [v]);
  }
  const admitted: string[] = [];
  const holders: string[] = [];
  const queued = new Map<string, QueuePosition>();
  const hosts: HostUsage[] = [];
  for (const hk of [...byHost.keys()].sort(cmp)) {
    const list = byHost.get(hk)!;
    const first = list[0]!;
    // The inventory's host name comes from the vCenter: bounded before it reaches a status message.
    const hostName = (list.find((v) => v.hostName)?.hostName ?? first.host).slice(0, MAX_HOST_NAME);
    const held = new Map<string, number>();
    let used = 0;
    for (const v of list) {
      if (!holds(v)) continue;
      holders.push(vmKey(v));
      used += cost(v);
      held.set(v.namespace, (held.get(v.namespace) ?? 0) + cost(v));
    }
    const waiting = list.filter((v) => !holds(v) && v.ready).map((v) => ({ ...v, cost: v.disks }));
    let left = waiting;
    if (!cfg.enabled) {
      for (const w of waiting) {
        admitted.push(vmKey(w));
        holders.push(vmKey(w));
        used += w.cost;
      }
      left = [];
    } else {
      const queues = tenantQueues(waiting);
      const pos = new Map<string, number>();
      const skipped = new Set<string>();
      const live = (): string[] => [...queues.keys()].filter((ns) => !skipped.has(ns) && (pos.get(ns) ?? 0) < queues.get(ns)!.length);
      const head = (ns: string): (typeof waiting)[number] => queues.get(ns)![pos.get(ns) ?? 0]!;
      const took = new Set<string>();
      for (;;) {
        const ns = nextTenant(live(), held, head);
        if (ns === undefined) break;
        const w = head(ns);
        const mine = held.get(ns) ?? 0;
        const cap = cfg.maxDisksPerTenant;
        if (cap !== undefined && !(mine + w.cost <= cap || (mine === 0 && w.cost > cap))) {
          skipped.add(ns);
          continue;
        }
        if (!(used + w.cost <= cfg.maxDisksPerHost || (used === 0 && w.cost > cfg.maxDisksPerHost))) break;
        took.add(vmKey(w));
        admitted.push(vmKey(w));
        holders.push(vmKey(w));
        used += w.cost;
        held.set(ns, mine + w.cost);
        pos.set(ns, (pos.get(ns) ?? 0) + 1);
      }
      left = waiting.filter((w) => !took.has(vmKey(w)));
    }
    let aheadTotal = 0;
    let position = 0;
    const aheadTenant = new Map<string, number>();
    for (const w of projectedOrder(left, held)) {
      const inTenant = aheadTenant.get(w.namespace) ?? 0;
      queued.set(vmKey(w), {
        host: w.host,
        hostName,
        disksAheadInTenant: inTenant,
        disksAheadTotal: aheadTotal,
        position: position++,
        message: queuedMessage(hostName, w.cost, inTenant, aheadTotal, used, cfg.maxDisksPerHost),
      });
      aheadTenant.set(w.namespace, inTenant + w.cost);
      aheadTotal += w.cost;
    }
    hosts.push({
      vcenter: first.vcenter,
      host: first.host,
      hostName,
      ...(cfg.enabled ? { budget: cfg.maxDisksPerHost } : {}),
      inUse: used,
      queuedVMs: left.length,
      queuedDisks: left.reduce((a, w) => a + w.cost, 0),
    });
  }
  return { admit: admitted, holders, queued, hosts };
}

/** A Queued VM's message: the host it waits for and the disks ahead of it, in its tenant and in total. */
export function queuedMessage(hostName: string, disks: number, aheadInTenant: number, aheadTotal: number, inUse: number, budget: number): string {
  const d = (n: number): string => `${n} disk${n === 1 ? '' : 's'}`;
  return (
    `Waiting for ${d(disks)} of transfer slots on ESXi host ${hostName}, which transfers ${d(inUse)} of its budget of ${budget}: ` +
    `${d(aheadInTenant)} ahead of it in this namespace, ${d(aheadTotal)} in total.`
  );
}

/**
 * Admissions this process decided whose checkpoint the informer cache does not show yet. The budget is
 * computed from every task's status in the cache; right after a task's status write, that cache still
 * shows the VM waiting, and a pass for another task in that moment would hand the same slot out twice.
 * The caller overlays the ledger on what it gathered (`overlay`) and records each checkpoint it writes
 * (`record`); an entry ends when the gathered state shows the checkpoint or the Migration itself, or when
 * the write is known to have failed (`forget`). Passes over one vCenter must run one at a time (Forklift
 * serialises its own scheduler the same way: the package-level mutex in scheduler.go).
 */
export class AdmissionLedger {
  private readonly pending = new Set<string>();

  record(key: string): void {
    this.pending.add(key);
  }

  forget(key: string): void {
    this.pending.delete(key);
  }

  get size(): number {
    return this.pending.size;
  }

  /** The gathered VMs with the ledger's admissions applied; entries the cache now shows are dropped. */
  overlay(vms: readonly CampaignVM[]): CampaignVM[] {
    const seen = new Set<string>();
    const out = vms.map((v) => {
      const k = vmKey(v);
      seen.add(k);
      if (!this.pending.has(k)) return v;
      if (v.admitted || v.migration || v.finished) {
        this.pending.delete(k);
        return v;
      }
      return { ...v, admitted: true };
    });
    // A VM no longer gathered (its task deleted) frees its entry.
    for (const k of this.pending) if (!seen.has(k)) this.pending.delete(k);
    return out;
  }
}
