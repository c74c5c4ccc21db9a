// Preflight of a VMImportTask: everything that can be known before any Forklift object exists. The
// reads happen here; every verdict comes from a pure function (src/preflight, src/forklift/maps.ts).
import { TaskReason } from '../../api/conditions.ts';
import { LABEL_TASK_UID, vmDiskClaimName, vmDiskName } from '../../api/labels.ts';
import type { DiskStatus, VMImportSource, VMImportTask, VMStatus } from '../../api/types.ts';
import { foreignNetworkProblem, hostIdOf, multusDuplicateProblem, podNetworkProblem, type InventoryNetworkLike, type InventoryVMLike } from '../../forklift/maps.ts';
import { GVRs } from '../../runtime/gvr.ts';
import { isNotServed, type KubeObject } from '../../runtime/kube.ts';
import type { ReconcileContext } from '../../runtime/reconciler.ts';
import { collisionMessage, hostAddressCollision } from '../../preflight/cidr.ts';
import { defaultVMName, outputNameProblems } from '../../preflight/names.ts';
import { importBudget, quotaVerdict, type QuotaLike } from '../../preflight/quota.ts';
import { guestConversionProblem } from '../../preflight/conversion.ts';
import { concernSentence, concernsFor, vmConcerns, type InventoryVMRecord } from '../../forklift/assess.ts';
import { warmVerdict, type WarmVMLike } from '../../preflight/warm.ts';

/** What the task reconciler needs from Forklift's inventory (InventoryClient satisfies it). */
export interface TaskInventory {
  getVM(providerUID: string, id: string): Promise<InventoryVMLike & { name?: string }>;
  listHosts(providerUID: string): Promise<InventoryHostLike[]>;
  listNetworks(providerUID: string): Promise<InventoryNetworkLike[]>;
}

export interface InventoryHostLike {
  id: string;
  /** The address vCenter advertises for the host. */
  name?: string;
}

export interface CIDRSource {
  resolve(probeNamespace: string): Promise<{ cidrs: string[] } | undefined>;
}

/** Cozystack's aggregated API returns user labels prefixed with this (docs/cozystack-contract.md). */
const COZY_LABEL_PREFIX = 'apps.cozystack.io-';

/** An output carries this task's markers (directly or as the aggregated API reflects them). */
export function hasTaskMarkers(obj: KubeObject | undefined, taskUID: string): boolean {
  const l = obj?.metadata?.labels ?? {};
  return l[LABEL_TASK_UID] === taskUID || l[`${COZY_LABEL_PREFIX}${LABEL_TASK_UID}`] === taskUID;
}

export function failVM(v: VMStatus, reason: string, message: string): VMStatus {
  return { ...v, phase: 'Failed', reason, message };
}

/** The address vCenter advertises for an ESXi host: the inventory host's name (an IP or a DNS name). */
export function advertisedAddress(h: InventoryHostLike | undefined): string | undefined {
  return h?.name;
}

export function hostDescription(source: VMImportSource, hostId: string | undefined, hosts: InventoryHostLike[]): string | undefined {
  if (!hostId) return undefined;
  const o = (source.spec.hosts ?? []).find((h) => h.id === hostId);
  if (o) return `ESXi host ${hostId} at ${o.address} (spec.hosts override)`;
  const a = advertisedAddress(hosts.find((h) => h.id === hostId));
  return a ? `ESXi host ${hostId} at ${a}, as vCenter advertises it` : `ESXi host ${hostId}`;
}

/**
 * GET that reads a kind which is not installed (discovery does not see it, and its path answers a bare
 * 404) as "no such object": nothing of it can hold the name. A kind discovery sees installed and whose
 * path is not served (an API server restarting) throws, and the preflight is retried: a name read as free
 * on that answer could be someone's.
 */
async function getOptional(ctx: ReconcileContext, gvr: (typeof GVRs)[keyof typeof GVRs], ns: string, name: string): Promise<KubeObject | undefined> {
  const probe = !ctx.installed(gvr);
  try {
    return await ctx.client.get(gvr, ns, name, { probe });
  } catch (e) {
    if (probe && isNotServed(e)) return undefined;
    throw e;
  }
}

/** Names an output of this VM would take that already belong to someone else. */
async function foreignOutputs(ctx: ReconcileContext, ns: string, taskUID: string, vmName: string, diskCount: number): Promise<string[]> {
  const taken: string[] = [];
  const check = async (gvr: (typeof GVRs)[keyof typeof GVRs], name: string, what: string): Promise<void> => {
    const o = await getOptional(ctx, gvr, ns, name);
    if (o && !hasTaskMarkers(o, taskUID)) taken.push(`${what} "${name}"`);
  };
  await check(GVRs.VMInstance, vmName, 'VMInstance');
  for (let i = 0; i < diskCount; i++) {
    const d = vmDiskName(vmName, i);
    await check(GVRs.VMDisk, d, 'VMDisk');
    await check(GVRs.PersistentVolumeClaim, vmDiskClaimName(d), 'PersistentVolumeClaim');
    await check(GVRs.DataVolume, vmDiskClaimName(d), 'DataVolume');
  }
  return taken;
}

/**
 * The readiness assessment of one inventory VM for a task in `mode`: the message that fails it when a
 * concern is Critical, and the Warning sentences kept on its status. Pure.
 */
export function assessmentVerdict(inv: InventoryVMRecord, mode: string | undefined): { blocked?: string; warnings: string[] } {
  const concerns = concernsFor(vmConcerns(inv), mode);
  const critical = concerns.filter((c) => c.category === 'Critical');
  const warnings = concerns.filter((c) => c.category === 'Warning').map(concernSentence).slice(0, MAX_WARNINGS);
  if (critical.length) return { blocked: `VM ${String(inv.name ?? inv.id ?? '')} cannot be imported: ${critical.map(concernSentence).join(' ')}`, warnings };
  return { warnings };
}

/** The CRD's bound on status.vms[].warnings (crds/forklift.cozystack.io_vmimporttasks.yaml). */
const MAX_WARNINGS = 64;

export interface PreflightInput {
  ctx: ReconcileContext;
  task: VMImportTask;
  source: VMImportSource;
  providerUID: string;
  storageClass: string;
  inventory: TaskInventory;
  cidr: CIDRSource;
  /** Per-VM status as the last write left it (Pending/Validating). */
  vms: VMStatus[];
  /**
   * The platform's guest-conversion opt-in (ControllerConfig.guestConversion). Given, a task asking for
   * conversion on a platform without it fails before any Forklift object exists (the webhook may have
   * been off when it was admitted); undefined skips the check.
   */
  guestConversionEnabled?: boolean;
}

export interface PreflightResult {
  vms: VMStatus[];
  /** Inventory records of the VMs that passed, by id (maps and diagnosis use them). */
  inventory: Map<string, InventoryVMLike & { name?: string }>;
  hosts: InventoryHostLike[];
  networks: InventoryNetworkLike[];
}

function isNotFoundError(e: unknown): boolean {
  const x = e as { status?: number; code?: string | number };
  return x?.status === 404 || x?.code === 'NotFound' || x?.code === 404;
}

/**
 * Inventory, warm capability (warm tasks), names, outputs, networks, Service CIDR and quota, in that
 * order, for every VM still waiting.
 * A VM failing a check is Failed with the reason; the others go on. Throws on transient errors (retry).
 */
export async function runPreflight(p: PreflightInput): Promise<PreflightResult> {
  const { ctx, task, source } = p;
  const ns = task.metadata.namespace ?? '';
  const uid = task.metadata.uid ?? '';
  const inventory = new Map<string, InventoryVMLike & { name?: string }>();
  const [hosts, networks] = await Promise.all([p.inventory.listHosts(p.providerUID), p.inventory.listNetworks(p.providerUID)]);
  const out: VMStatus[] = [];
  const usedNames = new Map<string, string>();
  const conversion = p.guestConversionEnabled === undefined ? undefined : guestConversionProblem(task.spec.guestConversion, p.guestConversionEnabled);
  for (const v of p.vms) {
    if (conversion && v.phase !== 'Failed' && !v.plan) {
      out.push(failVM(v, TaskReason.PlanNotValid, conversion));
      continue;
    }
    if (v.phase === 'Failed' || v.plan) {
      out.push(v);
      continue;
    }
    const spec = task.spec.vms.find((x) => x.id === v.id)!;
    let inv: InventoryVMLike & { name?: string };
    try {
      inv = await p.inventory.getVM(p.providerUID, v.id);
    } catch (e) {
      if (isNotFoundError(e)) {
        out.push(failVM(v, TaskReason.VMNotFound, `VM ${v.id} is not in the inventory of VMImportSource "${source.metadata.name}"; check the id (the vm-N managed-object reference from the vSphere client URL or \`govc ls -i\`)`));
        continue;
      }
      throw e;
    }
    const disks = inv.disks ?? [];
    const name = spec.name ?? defaultVMName(inv.name ?? v.id, disks.length);
    let cur: VMStatus = { ...v, name };
    // readiness: the admission check again, on a fresh inventory read (the webhook may not have had one)
    const readiness = assessmentVerdict(inv as InventoryVMRecord, (task.spec as { mode?: string }).mode);
    if (readiness.blocked) {
      out.push(failVM(cur, TaskReason.VMBlocked, readiness.blocked));
      continue;
    }
    if (readiness.warnings.length) cur = { ...cur, warnings: readiness.warnings };
    // warm: CBT, snapshots, disks a precopy cannot carry (Forklift's Critical warm conditions, up front)
    if (task.spec.mode === 'warm') {
      const w = warmVerdict(inv as WarmVMLike);
      if (w) {
        out.push(failVM(cur, w.reason, w.message));
        continue;
      }
    }
    // names
    const problems = outputNameProblems(name, disks.length);
    if (problems.length) {
      out.push(failVM(cur, TaskReason.InvalidOutputName, `${problems.join('; ')}; set spec.vms[].name for ${v.id} to a shorter DNS-1035 name`));
      continue;
    }
    const dup = usedNames.get(name);
    if (dup) {
      out.push(failVM(cur, TaskReason.OutputExists, `VM ${v.id} would be imported as "${name}", the same name as ${dup} in this task; give one of them another spec.vms[].name`));
      continue;
    }
    usedNames.set(name, v.id);
    // outputs
    const taken = await foreignOutputs(ctx, ns, uid, name, disks.length);
    if (taken.length) {
      out.push(failVM(cur, TaskReason.OutputExists, `${taken.join(', ')} already exist${taken.length === 1 ? 's' : ''} in namespace ${ns} and ${taken.length === 1 ? 'does' : 'do'} not belong to this task; it is never overwritten. Choose another spec.vms[].name for ${v.id} or remove the existing object`));
      continue;
    }
    // networks
    // two NICs on one Multus attachment (maps.ts multusDuplicateProblem).
    const net = podNetworkProblem(task, inv, networks) ?? multusDuplicateProblem(task, inv, networks) ?? foreignNetworkProblem(task, inv, networks);
    if (net) {
      out.push(failVM(cur, TaskReason.PlanNotValid, net));
      continue;
    }
    // Service CIDR
    const hostId = hostIdOf(inv);
    if (hostId) {
      const overridden = (source.spec.hosts ?? []).map((h) => h.id);
      const addr = advertisedAddress(hosts.find((h) => h.id === hostId));
      if (addr && !overridden.includes(hostId)) {
        const r = await p.cidr.resolve(ns);
        const c = r ? hostAddressCollision(hostId, addr, r.cidrs, overridden) : undefined;
        if (c) {
          out.push(failVM(cur, TaskReason.HostAddressInServiceCIDR, collisionMessage(c, name)));
          continue;
        }
      }
    }
    const diskStatus: DiskStatus[] = disks.map((d, i) => ({ index: i, vmDisk: vmDiskName(name, i), capacityBytes: d.capacity }));
    cur = { ...cur, diskHandoffs: diskStatus, bytesTotal: disks.reduce((a, d) => a + (d.capacity ?? 0), 0) };
    inventory.set(v.id, inv);
    out.push(cur);
  }
  // quota: the whole remaining import against the namespace's quota
  const passing = out.filter((v) => inventory.has(v.id) && v.phase !== 'Failed' && !v.plan);
  if (passing.length) {
    const quotas = (await ctx.client.list(GVRs.ResourceQuota, ns)).items;
    const budget = importBudget(passing.flatMap((v) => (inventory.get(v.id)?.disks ?? []).map((d) => d.capacity ?? 0)));
    const q = quotaVerdict(quotas as unknown as QuotaLike[], p.storageClass, budget);
    if (q.fail) {
      for (let i = 0; i < out.length; i++) {
        const v = out[i]!;
        if (passing.includes(v)) out[i] = failVM(v, TaskReason.QuotaExceeded, `${q.fail}. Raise the quota or import fewer VMs per task`);
      }
    } else if (q.warn) {
      // Not certain: the import starts, and the user is told what may stop it (a claim refused by the quota).
      p.ctx.events.event(p.task as unknown as KubeObject, 'Warning', 'QuotaMayBeExceeded', `${q.warn}. A claim the quota refuses stalls its VM's transfer.`);
    }
  }
  return { vms: out, inventory, hosts, networks };
}
