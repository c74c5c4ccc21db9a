// The platform's transfer budget in the task reconciler: before a task's per-VM pass, which of its VMs
// whose Plans are ready may get their Migration now (admitted), and which wait (Queued), counted per ESXi
// host over every task of every tenant that imports from the same vCenter (src/controllers/budget/).
//
// Everything the budget counts is read from what the API server keeps, through the VMImportTask informer
// cache, never from this process's memory:
// - a VM's place — the vCenter's instance UUID, the ESXi host's inventory id, its disks — is recorded in
//   its task's status (status.vms[].transferSlot) the first time the pass sees the VM, from Forklift's
//   inventory;
// - its admission is a checkpoint, `transferSlot.admittedAt`, written in the task's status BEFORE its
//   Migration is created (the per-VM pass creates the Migration only for a VM whose checkpoint is
//   recorded: decide.ts, SlotVerdict);
// - a VM holds its slots while its checkpoint or its Migration exists and its copy is not over (its
//   Migration's per-disk progress: budget/cost.ts; its status once transferred or ended).
// A new leader therefore counts every slot an old one handed out, written or half-written, and never
// admits past the budget. What memory adds — the ledger of checkpoints not yet in the cache, the hosts'
// measured rates — only makes a pass sharper, and the budget's passes over one vCenter run one at a time
// (budget/campaign.ts).
//
// The VMImportTask cache is scanned whole on each pass (the runtime's cache indexes namespaces and label
// values only; the vCenter lives in status): a pass reads statuses already in memory, no request.
import type { Registry } from 'prom-client';
import type { VMImportSource, VMImportTask, VMStatus, TransferSlot } from '../../api/types.ts';
import { hostIdOf, type InventoryVMLike } from '../../forklift/maps.ts';
import { migrationName } from '../../forklift/names.ts';
import { readPlanVerdict } from '../../forklift/plan.ts';
import { GVRs } from '../../runtime/gvr.ts';
import type { KubeObject } from '../../runtime/kube.ts';
import type { ReconcileContext } from '../../runtime/reconciler.ts';
import { vmKey, type BudgetConfig, type CampaignVM } from '../budget/budget.ts';
import { CampaignBudget } from '../budget/campaign.ts';
import { slotCost, type ForkliftVMStatus } from '../budget/cost.ts';
import { BudgetMetrics } from '../budget/metrics.ts';
import { admissionHooks } from './admission-hooks.ts';
import { TRANSIENT_BLOCKERS, type SlotVerdict } from './decide.ts';
import { isTerminalPhase } from './status.ts';
import type { InventoryHostLike, TaskInventory } from './preflight.ts';

/** What one admission pass needs beside the cluster: the inventory, and a status write for its checkpoints. */
export interface AdmissionIO {
  inventory: TaskInventory & { get?: <T>(path: string) => Promise<T> };
  /** Writes the task's status with these VMs (effects.ts writeStatus); returns the written status's VMs. */
  record: (vms: VMStatus[]) => Promise<void>;
}

export interface AdmissionResult {
  /** The VMs with their places (and this pass's checkpoints) recorded. */
  vms: VMStatus[];
  /** By VM id: the budget's verdict for each VM whose Migration is not created yet (decide.ts `slot`). */
  slots: Map<string, SlotVerdict>;
}

/** Inventory ids are `host-N`; anything longer is cut before it reaches a status (the schema's bound). */
const MAX_ID = 64;

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A VM's place from its inventory record: the host whose NFC service serves its disks, and the disks' sizes. */
export function placementOf(vm: InventoryVMLike, vcenter: string, hosts: readonly InventoryHostLike[]): Omit<TransferSlot, 'queuedAt' | 'admittedAt'> {
  const host = (hostIdOf(vm) ?? 'unknown').slice(0, MAX_ID);
  const name = hosts.find((h) => h.id === host)?.name;
  const diskBytes = (vm.disks ?? []).map((d) => Math.max(0, Math.round(d.capacity ?? 0)));
  return { vcenter: vcenter.slice(0, MAX_ID), host, ...(name ? { hostName: name.slice(0, 253) } : {}), disks: diskBytes.length, diskBytes };
}

/** The VM's entry in its Migration's status.vms[] (plain Forklift JSON). */
function migrationVM(mig: KubeObject | undefined, id: string): ForkliftVMStatus | undefined {
  const list = (mig?.status as { vms?: Array<ForkliftVMStatus & { id?: string }> } | undefined)?.vms ?? [];
  return list.find((v) => v.id === id);
}

/**
 * Every VM of a task that has a place on `vcenter`, as the budget counts it. Pure: from the task's status
 * (as recorded, or as this pass holds it), the Migrations `migrationOf` finds, and `ready`, which says for
 * a VM with no Migration whether its Plan is ready (other tasks' VMs: their phase Queued says it was).
 */
export function campaignVMs(task: VMImportTask, vms: readonly VMStatus[], vcenter: string, migrationOf: (vmId: string) => KubeObject | undefined, ready: (v: VMStatus) => boolean): CampaignVM[] {
  const out: CampaignVM[] = [];
  const ns = task.metadata.namespace ?? '';
  const name = task.metadata.name ?? '';
  const created = Date.parse(task.metadata.creationTimestamp ?? '') || 0;
  const deleting = !!task.metadata.deletionTimestamp;
  const index = new Map(task.spec.vms.map((s, i) => [s.id, i]));
  for (const v of vms) {
    const s = v.transferSlot;
    if (!s || s.vcenter !== vcenter) continue;
    const started = !!v.timestamps?.started;
    const mig = started || s.admittedAt ? migrationOf(v.id) : undefined;
    const migration = started || !!mig;
    // Over: ended, or copied (its slots are free from then on). A deleted task's VM that never started
    // gets no Migration any more: it holds nothing; one that started holds its slots until its Migration goes.
    const finished = isTerminalPhase(v.phase) || !!v.timestamps?.transferred || (deleting && !migration);
    const c = migration ? slotCost(migrationVM(mig, v.id), s.disks) : undefined;
    const queued = !migration && !s.admittedAt;
    out.push({
      namespace: ns,
      task: name,
      taskCreated: created,
      index: index.get(v.id) ?? 0,
      id: v.id,
      vcenter,
      host: s.host,
      ...(s.hostName ? { hostName: s.hostName } : {}),
      disks: s.disks,
      ...(c ? { disksRemaining: c.disksRemaining } : {}),
      admitted: !!s.admittedAt,
      migration,
      finished,
      ready: queued && ready(v),
      ...(s.queuedAt ? { queuedSince: Date.parse(s.queuedAt) } : {}),
      // Bytes left: the Migration's per-disk progress, else (queued, or admitted before its Migration) the disks' sizes.
      ...(c?.disksLeft ? { disksLeft: c.disksLeft } : !migration && s.diskBytes ? { disksLeft: s.diskBytes } : {}),
      ...(v.bytesPerSecond !== undefined ? { bytesPerSecond: v.bytesPerSecond } : {}),
    });
  }
  return out;
}

/** The budget's sentence for a VM that waits for Forklift's inventory to say where its disks are. */
function placementUnknown(err: string): string {
  return `Waiting for Forklift's inventory to say which ESXi host serves the VM's disks, before a transfer slot can be given (${err.slice(0, 200)})`;
}

/** The checkpoint's sentence for a VM admitted to a slot whose Migration is created next. */
export function admittedMessage(hostName: string): string {
  return `Admitted to a transfer slot on ESXi host ${hostName}; its Forklift Migration is created next`;
}

/** The budget for the process: one object, passes serialised per vCenter, metrics on the project registry. */
export class TransferAdmission {
  readonly cfg: BudgetConfig;
  private readonly budget: CampaignBudget;
  /** Task UID → the whole task's ETA as the last pass computed it (seconds, and when). */
  private readonly etas = new Map<string, { seconds: number; at: number }>();

  constructor(cfg: BudgetConfig, o: { registry?: Registry } = {}) {
    this.cfg = cfg;
    this.budget = new CampaignBudget(cfg, o.registry ? { metrics: new BudgetMetrics(o.registry) } : {});
  }

  /** The task's ETA now, from its last pass: undefined while no host's rate is known. */
  etaSeconds(taskUID: string | undefined, now: number): number | undefined {
    const e = taskUID ? this.etas.get(taskUID) : undefined;
    return e ? Math.max(0, e.seconds - (now - e.at) / 1000) : undefined;
  }

  sizes(): Record<string, number> {
    return { budgetETAs: this.etas.size };
  }

  /** Drops what is kept for a task that is gone or finished: its ETA. */
  forget(taskUID: string | undefined): void {
    if (taskUID) this.etas.delete(taskUID);
  }

  /**
   * The vCenter's identity: its instance UUID from the provider's inventory (kubev2v/forklift v2.11.5
   * pkg/controller/provider/web/vsphere/provider.go: Provider.InstanceUuid, from the collector's About).
   * An inventory that does not give it: the provider's UID, so the source counts alone (as Forklift does)
   * rather than being merged with another vCenter on a guess.
   */
  private async vcenterOf(io: AdmissionIO, providerUID: string): Promise<string> {
    // Read on each pass that places VMs (a task's first passes), beside the inventory read of each VM it
    // places: nothing is kept in memory for a source, so nothing outlives it.
    let id: string | undefined;
    if (io.inventory.get) {
      const p = await io.inventory.get<{ instanceUuid?: unknown }>(`/providers/vsphere/${encodeURIComponent(providerUID)}`);
      if (typeof p?.instanceUuid === 'string' && p.instanceUuid.trim()) id = p.instanceUuid.trim().toLowerCase();
    }
    return id ?? `provider:${providerUID}`;
  }

  /**
   * One pass for one task: places recorded, checkpoints written, each waiting VM's verdict. With the budget
   * on, every VM not started gets a verdict: one this pass did not admit never gets its Migration, even
   * when the per-VM pass sees its Plan turn ready a moment after this one saw it not ready.
   */
  async pass(ctx: ReconcileContext, task: VMImportTask & KubeObject, vms0: VMStatus[], source: VMImportSource | undefined, io: AdmissionIO): Promise<AdmissionResult> {
    if (!this.cfg.enabled) return { vms: vms0, slots: new Map() };
    const r = await this.admit(ctx, task, vms0, source, io);
    for (const v of r.vms) {
      if (!v.plan || isTerminalPhase(v.phase) || v.timestamps?.started || r.slots.has(v.id)) continue;
      const host = v.transferSlot ? ` on ESXi host ${v.transferSlot.hostName ?? v.transferSlot.host}` : '';
      r.slots.set(v.id, { admitted: false, message: `Waiting for a transfer slot${host}: its place in the queue is given once Forklift reports its Plan ready` });
    }
    return r;
  }

  private async admit(ctx: ReconcileContext, task: VMImportTask & KubeObject, vms0: VMStatus[], source: VMImportSource | undefined, io: AdmissionIO): Promise<AdmissionResult> {
    const slots = new Map<string, SlotVerdict>();
    const now = ctx.now().getTime();
    const ns = task.metadata.namespace ?? '';
    let vms = vms0;
    // VMs the budget counts: a Plan made, not ended, not copied yet.
    const live = (v: VMStatus): boolean => !!v.plan && !isTerminalPhase(v.phase) && !v.timestamps?.transferred;
    const unplaced = vms.filter((v) => live(v) && !v.transferSlot);
    if (unplaced.length) {
      const uid = source?.status?.provider?.uid;
      try {
        if (!uid) throw new Error('the source has no Forklift provider yet');
        const vcenter = await this.vcenterOf(io, uid);
        const hosts = await io.inventory.listHosts(uid);
        const placed = new Map<string, TransferSlot>();
        for (const v of unplaced) {
          const p = placementOf(await io.inventory.getVM(uid, v.id), vcenter, hosts);
          // A VM that started before it had a place (an earlier version, the budget off then) was admitted then.
          placed.set(v.id, { ...p, queuedAt: iso(now), ...(v.timestamps?.started ? { admittedAt: v.timestamps.started } : {}) });
        }
        vms = vms.map((v) => (placed.has(v.id) ? { ...v, transferSlot: placed.get(v.id)! } : v));
      } catch (e) {
        const msg = placementUnknown((e as Error).message);
        for (const v of unplaced) if (!v.timestamps?.started) slots.set(v.id, { admitted: false, message: msg });
        ctx.log.debug({ err: (e as Error).message }, 'transfer budget: VM placement unknown');
      }
    }
    const mine = vms.filter((v) => live(v) && v.transferSlot);
    const vcenter = mine[0]?.transferSlot?.vcenter;
    if (!vcenter) return { vms, slots };
    // Own VMs' Plans, from the cache (a VM whose Plan is not ready waits for nothing yet).
    const planReady = (v: VMStatus): boolean => {
      const plan = ctx.cache(GVRs.Plan)?.get(ns, v.plan ?? '');
      if (!plan) return false;
      const verdict = readPlanVerdict(plan);
      return verdict.ready && !verdict.blockers.some((b) => !TRANSIENT_BLOCKERS.has(b.type));
    };
    const migrations = ctx.cache(GVRs.Migration);
    const migrationOf = (t: VMImportTask) => (vmId: string) => migrations?.get(t.metadata.namespace ?? '', migrationName(t.metadata.name ?? '', t.metadata.uid ?? '', vmId));
    const gather = (): CampaignVM[] => {
      const out: CampaignVM[] = [];
      const seen = new Set<string>();
      for (const o of (ctx.cache<VMImportTask & KubeObject>(GVRs.VMImportTask)?.list() ?? []) as Array<VMImportTask & KubeObject>) {
        if (o.metadata.uid === task.metadata.uid) continue;
        seen.add(o.metadata.uid ?? '');
        if (isTerminalPhase(o.status?.phase) && o.status?.completedAt) continue;
        out.push(...campaignVMs(o, o.status?.vms ?? [], vcenter, migrationOf(o), (v) => v.phase === 'Queued'));
      }
      seen.add(task.metadata.uid ?? '');
      for (const k of this.etas.keys()) if (!seen.has(k)) this.etas.delete(k);
      out.push(...campaignVMs(task, vms, vcenter, migrationOf(task), planReady));
      return out;
    };
    return await this.budget.run(
      vcenter,
      gather,
      async (d) => {
        const prefix = `${ns}/${task.metadata.name ?? ''}/`;
        const admitNow = new Set(d.admission.admit.filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length)));
        const holders = new Set(d.admission.holders);
        // The checkpoint says what it records: a VM admitted, its Migration not created yet, no longer
        // reads as waiting with the disks that were ahead of it (its phase turns when the Migration exists).
        vms = vms.map((v) =>
          admitNow.has(v.id) && v.transferSlot
            ? { ...v, transferSlot: { ...v.transferSlot, admittedAt: iso(now) }, ...(v.phase === 'Queued' ? { message: admittedMessage(v.transferSlot.hostName ?? v.transferSlot.host) } : {}) }
            : v,
        );
        for (const v of vms) {
          if (!live(v) || !v.transferSlot || v.timestamps?.started) continue;
          const key = vmKey({ namespace: ns, task: task.metadata.name ?? '', id: v.id });
          const q = d.admission.queued.get(key);
          if (v.transferSlot.admittedAt || holders.has(key)) slots.set(v.id, { admitted: true });
          else if (q) slots.set(v.id, { admitted: false, message: q.message });
          // Not ready: no verdict; the Plan's own state is reported (Validating).
        }
        // The whole task's ETA: when its last VM is copied, by the play of every host of the vCenter.
        let eta = 0;
        let known = true;
        for (const v of vms) {
          if (!live(v) || !v.transferSlot) continue;
          const f = d.finishes.get(vmKey({ namespace: ns, task: task.metadata.name ?? '', id: v.id }));
          if (f === undefined) known = false;
          else eta = Math.max(eta, f);
        }
        if (known) this.etas.set(task.metadata.uid ?? '', { seconds: eta, at: now });
        else this.etas.delete(task.metadata.uid ?? '');
        const placedNow = vms.some((v, i) => v.transferSlot && !vms0[i]?.transferSlot);
        if (!admitNow.size && !placedNow) return { written: [], result: { vms, slots } };
        // The checkpoint: recorded before any of these Migrations is created.
        await io.record(vms);
        if (admitNow.size) admissionHooks.afterRecord?.(task.metadata.uid ?? '', [...admitNow]);
        return { written: [...admitNow].map((id) => vmKey({ namespace: ns, task: task.metadata.name ?? '', id })), result: { vms, slots } };
      },
      () => now,
    );
  }
}

/**
 * A Migration whose state can have freed transfer slots: being deleted, or a VM with a disk copied, past
 * its copy, or ended. Progress alone frees nothing, and most of a Migration's updates are progress.
 */
export function freesSlots(mig: KubeObject): boolean {
  if (mig.metadata?.deletionTimestamp) return true;
  const vms = (mig.status as { vms?: Array<ForkliftVMStatus & { completed?: string }> } | undefined)?.vms ?? [];
  return vms.some((v) => {
    if (v.completed) return true;
    const c = slotCost(v, Number.MAX_SAFE_INTEGER);
    return c.disksLeft !== undefined && (c.disksLeft.length === 0 || c.disksLeft.some((b) => b === 0));
  });
}

/**
 * The Migration watch's extra wake-ups: a Migration whose VM copied a disk, finished or went away frees
 * slots on its host, and the tasks with VMs Queued there should take them now rather than at their next
 * resync. Read from the caches only (the Migration's task by its label, the tasks' recorded places).
 */
export function queuedOnSameHost(mig: KubeObject, tasks: readonly (VMImportTask & KubeObject)[], taskLabel: string): Array<{ namespace: string; name: string }> {
  if (!freesSlots(mig)) return [];
  const ns = mig.metadata?.namespace ?? '';
  const own = tasks.find((t) => t.metadata.namespace === ns && t.metadata.name === mig.metadata?.labels?.[taskLabel]);
  const places = new Set((own?.status?.vms ?? []).map((v) => (v.transferSlot ? `${v.transferSlot.vcenter}/${v.transferSlot.host}` : '')).filter(Boolean));
  if (!places.size) return [];
  const out: Array<{ namespace: string; name: string }> = [];
  for (const t of tasks) {
    if (t === own) continue;
    if ((t.status?.vms ?? []).some((v) => v.phase === 'Queued' && v.transferSlot && places.has(`${v.transferSlot.vcenter}/${v.transferSlot.host}`))) out.push({ namespace: t.metadata.namespace ?? '', name: t.metadata.name ?? '' });
  }
  return out;
}
