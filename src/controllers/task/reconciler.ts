// VMImportTask reconciler: preflight before anything exists, then one NetworkMap + StorageMap per task
// and one Plan + Migration per VM, progress read from Forklift's objects, failures translated, the
// handoff driven once a VM is transferred. A terminal task is a record: nothing more happens to it.
//
// A thin loop: observe.ts reads, decide.ts chooses each VM's one next action (a pure decision table),
// effects.ts executes it, status.ts derives the task's status, written once per pass with its evidence.
import { Registry } from 'prom-client';
import type { ControllerConfig } from '../../config.ts';
import { FINALIZER, LABEL_MANAGED_BY, LABEL_TASK, MANAGED_BY_VALUE } from '../../api/labels.ts';
import type { VMImportSource, VMImportTask, VMImportTaskStatus, VMStatus } from '../../api/types.ts';
import type { SlotVerdict } from './decide.ts';
import { hasLegacyDisks, normalizeVMDisks } from '../../api/disks.ts';
import { defaultInventoryClient } from '../../forklift/inventory-client.ts';
import { renderNetworkMap, renderStorageMap, type InventoryNetworkLike, type InventoryVMLike, type ProviderRefs } from '../../forklift/maps.ts';
import { networkMapName, planName, storageMapName, migrationName } from '../../forklift/names.ts';
import { destinationProviderName, sourceProviderName } from '../../forklift/provider.ts';
import { checkStorageClass, type StorageClassLike } from '../../preflight/storage.ts';
import { GVRs, type GVR } from '../../runtime/gvr.ts';
import type { KubeObject } from '../../runtime/kube.ts';
import { keyString, type Cache, type ObjectKey, type ReconcileContext, type Reconciler, type Result, type Watch } from '../../runtime/reconciler.ts';
import { patchStatus } from '../../runtime/status.ts';
import { TaskReason } from '../../api/conditions.ts';
import { failVM, runPreflight, type CIDRSource, type TaskInventory } from './preflight.ts';
import { TaskMetrics } from './metrics.ts';
import { backfillFinished, isTerminalPhase } from './status.ts';
import { nextVMAction, passOrder, requestPriority, statusBeforeAction, stepsToEnd, taskGate, writesNothing, type VMAction } from './decide.ts';
import { withRequestPriority } from '../../runtime/ratelimit.ts';
import { StatusBoard, boundedPool } from './board.ts';
import { PassLane, finishCandidates, finishable, type CachedOutput } from './lane.ts';
import { VM_STEPS } from '../handoff/steps.ts';
import { Handoff } from '../handoff/index.ts';
import { PLAN_LABEL, getCached, observeVM, taskKey, type VMObjects } from './observe.ts';
import { retireEndedPlans } from './retire.ts';
import { applyVMAction, createIfAbsent, defaultCIDRSource, finalize, writeStatus, type TaskEffects } from './effects.ts';
import { TaskMemory } from './memory.ts';
import { keepTaskObject } from './retention.ts';
import { TransferAdmission, queuedOnSameHost } from './admission.ts';

export interface TaskReconcilerOptions {
  /** Inventory client (tests inject one; default: Forklift's inventory service from the config). */
  inventory?: TaskInventory;
  /** Service-CIDR source (default: ServiceCIDRResolver with the configured override). */
  cidr?: CIDRSource;
  /** No progress for this long → Stalled with diagnosis. */
  stallAfterMs?: number;
  /** Safety-net requeue while a transfer runs; watches on Plans/Migrations are the main signal. */
  resyncMs?: number;
  /** Project metrics registry (domain metrics are registered on it). */
  registry?: Registry;
}

/**
 * A transfer that moved nothing for 10 minutes is almost always VDDK failing to reach the ESXi host
 * (docs/forklift-contract.md): long enough not to flag a slow start, short enough to beat the late NBD error.
 */
export const DEFAULT_STALL_AFTER_MS = 10 * 60_000;
/** Safety-net resync while anything runs; progress arrives by watch events long before this. */
export const DEFAULT_RESYNC_MS = 30_000;
/** Waiting on the source or on Forklift to appear: the watches on sources/CRDs wake us; this is a backstop. */
const WAITING_RESYNC_MS = 60_000;
/**
 * VMs observed at once: nearly every read is a cache's, and the few live ones (an absence that would fail
 * a VM) should not queue behind each other in a 200-VM task.
 */
const OBSERVE_IN_FLIGHT = 16;
/**
 * VMs whose action writes (a Plan, a Migration, a handoff step), at once. The client's rate limit is the
 * real brake (--kube-api-qps); more in flight only queue on it and lengthen the pass, and a VM whose world
 * changed meanwhile is observed only by the next one. At 8, a 50-VM task's passes ran to 1.6 s and a VM
 * whose VMInstance turned Ready showed Succeeded 2.9 s later (p95, the default 50 requests/s); at 4, the
 * passes end within 0.9 s and it shows within 1.8 s, at the same throughput (bench/status-latency.ts).
 */
const VM_ACTIONS_IN_FLIGHT = 4;
/**
 * After this long a pass starts no more actions: it ends with those in flight and the next pass, at
 * once, observes every VM again. Without it a 200-VM task showed a VM's phase change only after every
 * other VM's live reads (30 s for 30 VMs).
 */
const PASS_START_BUDGET_MS = 250;
/**
 * How long a finisher woken between two passes of a task waits for the next: that pass was queued by the
 * same event and begins as the last one ends (a 200-VM task's pass lasts about a second). Past it — the
 * task's key backed off after errors — the main pass alone takes the VM, and the finisher's worker is
 * free for other tasks.
 */
const NEXT_PASS_WAIT_MS = 2_000;
/** Below every action's request priority (decide.ts requestPriority): the Plans of ended VMs can wait. */
const CLEANUP_PRIORITY = Number.MIN_SAFE_INTEGER;
/** A long pass writes what it has so far this often: a VM's result shows within about a second. */
const INTERIM_WRITE_MS = 1_000;

const byTaskLabel = (obj: KubeObject): ObjectKey[] => {
  const l = obj.metadata?.labels ?? {};
  return l[LABEL_TASK] ? [{ namespace: obj.metadata?.namespace ?? '', name: l[LABEL_TASK] }] : [];
};
/**
 * Forklift's transfer claims, DataVolumes and VirtualMachines carry only the UID of their Plan: the
 * Plan, found by that UID among the cached Plans of the object's namespace (the namespace index), names
 * its task in a label. Nothing a reconcile remembered is needed, so the first event after a restart maps.
 */
const byPlanLabel = (obj: KubeObject, cache: (gvr: GVR) => Cache | undefined): ObjectKey[] => {
  const uid = obj.metadata?.labels?.[PLAN_LABEL];
  const ns = obj.metadata?.namespace ?? '';
  if (!uid) return [];
  const plan = cache(GVRs.Plan)?.list(ns).find((p) => p.metadata?.uid === uid);
  const task = plan?.metadata?.labels?.[LABEL_TASK];
  return task ? [{ namespace: ns, name: task }] : [];
};
/** A volume the handoff marked: its task's name is a label, its namespace the claim it is bound to. */
const byVolume = (obj: KubeObject): ObjectKey[] => {
  const task = obj.metadata?.labels?.[LABEL_TASK];
  const ns = ((obj as { spec?: { claimRef?: { namespace?: string } } }).spec?.claimRef?.namespace ?? '') || '';
  return task && ns ? [{ namespace: ns, name: task }] : [];
};
/** A source wakes the tasks of its namespace that reference it (the task cache's namespace index). */
const bySource = (obj: KubeObject, cache: (gvr: GVR) => Cache | undefined): ObjectKey[] => {
  const ns = obj.metadata?.namespace ?? '';
  const name = obj.metadata?.name;
  return (cache(GVRs.VMImportTask)?.list(ns) ?? []).filter((t) => (t as unknown as VMImportTask).spec?.sourceRef?.name === name).map((t) => ({ namespace: ns, name: t.metadata?.name ?? '' }));
};

const ourSelector = `${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}`;
const keepTaskObjects = (obj: KubeObject, cache: (gvr: GVR) => Cache | undefined): boolean => keepTaskObject(obj, cache(GVRs.VMImportTask), Date.now());

/** `st` with its VMs' disks in this version's shape, or undefined when `st` is undefined. */
function migrateDisks(st: VMImportTaskStatus | undefined): VMImportTaskStatus | undefined {
  if (!st) return undefined;
  return st.vms?.some(hasLegacyDisks) ? { ...st, vms: st.vms.map(normalizeVMDisks) } : st;
}

function initialVMs(task: VMImportTask): VMStatus[] {
  // A VM status an earlier version wrote (its evidence in `disks`) is read in this version's shape: the
  // pass's first status write stores both fields at once (src/api/disks.ts).
  const prev = (task.status?.vms ?? []).map(normalizeVMDisks);
  // Until preflight resolves the default name, the VM's id stands in for it (the schema requires a
  // non-null name, and the API server refused an empty one as null).
  return task.spec.vms.map((s) => prev.find((p) => p.id === s.id) ?? { id: s.id, name: s.name ?? s.id, phase: 'Pending' as const });
}

/**
 * The VMImportTask reconciler: what it remembers between passes (progress samples, its own writes, its
 * handoff) lives in this object, and its dependencies (inventory, service CIDRs, metrics registry,
 * config) are injected. A restart in process is a new object that remembers nothing.
 */
export class TaskReconciler implements Reconciler {
  readonly name = 'vmimporttask';
  readonly faultConditions = true;
  readonly primary = GVRs.VMImportTask;
  private readonly cfg: ControllerConfig;
  private readonly o: TaskReconcilerOptions;
  private readonly stallAfterMs: number;
  private readonly resyncMs: number;
  private readonly metrics: TaskMetrics;
  private readonly mem = new TaskMemory();
  /** This reconciler's handoff: what it remembers lives and dies with this reconciler. */
  private readonly handoff = new Handoff();
  private fx: TaskEffects | undefined;
  /** The lane of each task whose pass is running, by task key (lane.ts): what the finisher acts through. */
  private readonly lanes = new Map<string, PassLane<FinishPass>>();
  /** Finishers woken between two passes of a task, by task key: each waits for the next pass's lane. */
  private readonly awaitingPass = new Map<string, Array<(lane: PassLane<FinishPass> | undefined) => void>>();
  /** The platform's transfer budget (task/admission.ts); its metrics are on the registry from the start. */
  private readonly budget: TransferAdmission;

  constructor(cfg: ControllerConfig, o: TaskReconcilerOptions = {}) {
    this.cfg = cfg;
    this.o = o;
    this.stallAfterMs = o.stallAfterMs ?? (cfg.taskStallAfterSeconds ? cfg.taskStallAfterSeconds * 1000 : DEFAULT_STALL_AFTER_MS);
    this.resyncMs = o.resyncMs ?? DEFAULT_RESYNC_MS;
    this.metrics = new TaskMetrics(o.registry ?? new Registry());
    this.budget = new TransferAdmission({ enabled: cfg.transferBudget ?? true, maxDisksPerHost: cfg.transferMaxDisksPerHost || 10, ...(cfg.transferMaxDisksPerTenant ? { maxDisksPerTenant: cfg.transferMaxDisksPerTenant } : {}) }, { registry: o.registry });
  }

  readonly watches: Watch[] = [
    { gvr: GVRs.VMImportSource, map: bySource },
    // Held only while their task runs (retention.ts): a kept, ended task reads none of them again.
    { gvr: GVRs.Plan, map: byTaskLabel, labelSelector: ourSelector, keep: keepTaskObjects },
    // A Migration that freed transfer slots also wakes the tasks Queued on its host (task/admission.ts).
    { gvr: GVRs.Migration, map: (o, c) => [...byTaskLabel(o), ...queuedOnSameHost(o, (c(GVRs.VMImportTask)?.list() ?? []) as Array<VMImportTask & KubeObject>, LABEL_TASK)], labelSelector: ourSelector, keep: keepTaskObjects },
    // Watched so that the task reads its maps from a cache (they change a handful of times).
    { gvr: GVRs.NetworkMap, map: byTaskLabel, labelSelector: ourSelector, keep: keepTaskObjects },
    { gvr: GVRs.StorageMap, map: byTaskLabel, labelSelector: ourSelector, keep: keepTaskObjects },
    { gvr: GVRs.PersistentVolumeClaim, map: byPlanLabel, labelSelector: PLAN_LABEL },
    { gvr: GVRs.DataVolume, map: byPlanLabel, labelSelector: PLAN_LABEL },
    { gvr: GVRs.VirtualMachine, map: byPlanLabel, labelSelector: PLAN_LABEL },
    // The handoff's own objects carry this task's labels: the target claims, their DataVolumes and the
    // volumes it marks. Their changes (bound, adopted, released) wake the task at once, so a handoff
    // waiting on the PV binder or CDI needs no fast polling. Held only while their task runs
    // (retention.ts): they keep the labels for good, and a finished or deleted task never reads them.
    { gvr: GVRs.PersistentVolumeClaim, map: byTaskLabel, labelSelector: LABEL_TASK, keep: keepTaskObjects },
    { gvr: GVRs.DataVolume, map: byTaskLabel, labelSelector: LABEL_TASK, keep: keepTaskObjects },
    { gvr: GVRs.PersistentVolume, map: byVolume, labelSelector: LABEL_TASK, keep: keepTaskObjects },
    // The handoff's outputs, served by Cozystack's aggregated API, which serves watch (with label
    // selectors) for every application kind (cozystack/cozystack@v1.6.2:pkg/registry/apps/application/rest.go,
    // Watch). Their creation and their Helm release's readiness wake the task; where the API does not
    // serve watch, discovery leaves them uncached and the handoff reads them live on a timer instead.
    { gvr: GVRs.VMDisk, map: byTaskLabel, labelSelector: LABEL_TASK, keep: keepTaskObjects },
    { gvr: GVRs.VMInstance, map: byTaskLabel, labelSelector: LABEL_TASK, keep: keepTaskObjects },
  ];

  async reconcile(key: ObjectKey, ctx: ReconcileContext): Promise<Result> {
    const fx = (this.fx ??= {
      inventory: this.o.inventory ?? defaultInventoryClient(this.cfg, ctx.client),
      cidr: this.o.cidr ?? defaultCIDRSource(ctx, this.cfg.serviceCIDR, this.cfg.podNamespace),
      mem: this.mem,
      metrics: this.metrics,
      handoff: this.handoff,
      budget: this.budget,
    });
    // From the informer cache, never behind our own last write (status, finalizer); a private copy,
    // because the reconcile edits it as it goes.
    const seen = await this.mem.ownWrites.get(ctx, GVRs.VMImportTask, key.namespace, key.name);
    const task = seen ? (structuredClone(seen) as VMImportTask & KubeObject) : undefined;
    if (!task) {
      this.metrics.setStalled(key, []);
      this.budget.forget(this.mem.dropTask(key));
      return {};
    }
    this.mem.taskUIDs.set(keyString(key), task.metadata.uid ?? '');
    if (task.metadata.deletionTimestamp) return await finalize(ctx, fx, task);
    // A terminal task is a record: no further actions, no requeues, nothing kept in memory for it.
    if (isTerminalPhase(task.status?.phase) && task.status?.completedAt) {
      this.metrics.setStalled(key, []);
      this.budget.forget(this.mem.dropTask(key) ?? task.metadata.uid);
      // Ended before the Finished condition existed: add it once, so a wait on it ends here too.
      // Written by an earlier version: its VMs' disks are stored once in this version's shape, so that the
      // console lists the VMDisk names (src/api/disks.ts).
      const backfilled = migrateDisks(backfillFinished(task.status, task.metadata.generation, ctx.now()) ?? task.status);
      if (backfilled) this.mem.ownWrites.wrote(GVRs.VMImportTask, await patchStatus(ctx.client, GVRs.VMImportTask, task, backfilled));
      // Forklift's VDDK Secret goes only with an archived Plan (retire.ts).
      const retireMs = await retireEndedPlans(ctx, task);
      return retireMs === undefined ? {} : { requeueAfterMs: retireMs };
    }
    if (!(task.metadata.finalizers ?? []).includes(FINALIZER)) {
      this.mem.ownWrites.wrote(GVRs.VMImportTask, await ctx.client.patch<KubeObject>(GVRs.VMImportTask, key.namespace, key.name, { metadata: { finalizers: [...(task.metadata.finalizers ?? []), FINALIZER], resourceVersion: task.metadata.resourceVersion } }), {
        over: task.metadata.resourceVersion,
      });
      return { requeueAfterMs: 0 };
    }
    return await this.drive(ctx, fx, task);
  }


  /** A pass of a running task, with its finishing lane open from its actions' start to its last write. */
  private async drive(ctx: ReconcileContext, fx: TaskEffects, task: VMImportTask & KubeObject): Promise<Result> {
    const k = keyString(taskKey(task));
    const lane = new PassLane<FinishPass>(task.metadata.uid ?? '');
    this.lanes.set(k, lane);
    const waiting = this.awaitingPass.get(k) ?? [];
    this.awaitingPass.delete(k);
    for (const give of waiting) give(lane);
    try {
      return await this.pass(ctx, fx, task, lane);
    } finally {
      await lane.close();
      if (this.lanes.get(k) === lane) this.lanes.delete(k);
    }
  }

  private async pass(ctx: ReconcileContext, fx: TaskEffects, task: VMImportTask & KubeObject, lane: PassLane<FinishPass>): Promise<Result> {
    const began = Date.now();
    const ns = task.metadata.namespace ?? '';
    let vms = initialVMs(task);
    const needsPreflight = vms.some((v) => v.phase !== 'Failed' && !v.plan);

    // 1. the source exists and is Ready
    // The source is only read here: its informer cache answers (a miss is confirmed by the API server).
    const source =
      (ctx.cache<VMImportSource & KubeObject>(GVRs.VMImportSource)?.get(ns, task.spec.sourceRef.name) as (VMImportSource & KubeObject) | undefined) ??
      (await ctx.client.get<VMImportSource & KubeObject>(GVRs.VMImportSource, ns, task.spec.sourceRef.name));
    if (needsPreflight) {
      const waiting = taskGate({
        namespace: ns,
        sourceName: task.spec.sourceRef.name,
        source: source && { name: source.metadata.name ?? '', ready: (source.status?.conditions ?? []).find((c) => c.type === 'Ready'), providerUID: source.status?.provider?.uid },
        forkliftInstalled: ctx.installed(GVRs.Plan),
      });
      if (waiting) {
        await writeStatus(ctx, fx, task, vms, { waiting });
        return { requeueAfterMs: WAITING_RESYNC_MS };
      }
    }

    // 2. storage class, resolved once and frozen in status
    let storageClass = task.status?.storageClass;
    if (needsPreflight) {
      const classes = (await ctx.client.list<KubeObject & StorageClassLike>(GVRs.StorageClass)).items as unknown as StorageClassLike[];
      const sc = checkStorageClass(storageClass ?? task.spec.storageClass, classes);
      if (!sc.ok) {
        vms = vms.map((v) => (v.phase === 'Failed' || v.plan ? v : failVM(v, sc.reason, sc.message)));
        await writeStatus(ctx, fx, task, vms, {});
        return {};
      }
      storageClass = sc.className;
    }
    if (!storageClass) throw new Error('storage class not resolved');

    // 3. per-VM preflight
    let inv: Map<string, InventoryVMLike> | undefined;
    let networks: InventoryNetworkLike[] | undefined;
    if (needsPreflight && source) {
      const pre = await runPreflight({ ctx, task, source, providerUID: source.status!.provider!.uid!, storageClass, inventory: fx.inventory, cidr: fx.cidr, vms: vms.map((v) => (v.phase === 'Pending' ? { ...v, phase: 'Validating' as const, reason: TaskReason.Validating } : v)), guestConversionEnabled: this.cfg.guestConversion });
      inv = pre.inventory;
      networks = pre.networks;
      for (const [id, i] of pre.inventory) {
        const h = typeof i.host === 'string' ? i.host : i.host?.id;
        if (h) this.mem.vmHosts.set(`${task.metadata.uid}/${id}`, h);
      }
      vms = pre.vms.map((v) => (v.phase === 'Failed' || v.plan ? v : { ...v, plan: planName(task.metadata.name ?? '', task.metadata.uid ?? '', v.id), reason: TaskReason.Validating, message: 'preflight passed; creating the migration plan' }));
      // Record the verdict (and the frozen class) before any Forklift object exists.
      task.status = await writeStatus(ctx, fx, task, vms, { storageClass });
      if (vms.every((v) => v.phase === 'Failed')) return {};
    }
    if (!source) {
      // The source went away after preflight: Forklift keeps running on its own objects.
      ctx.log.info('source gone after preflight; continuing on the existing Forklift objects');
    }

    // 4. maps (created once; never edited while a migration runs)
    const providers: ProviderRefs = {
      source: { name: sourceProviderName(task.spec.sourceRef.name), namespace: ns },
      destination: { name: destinationProviderName(task.spec.sourceRef.name), namespace: ns },
    };
    const live = vms.filter((v) => v.phase !== 'Failed' && v.plan);
    const nmName = networkMapName(task.metadata.name ?? '', task.metadata.uid ?? '');
    const smName = storageMapName(task.metadata.name ?? '', task.metadata.uid ?? '');
    if (live.some((v) => !v.timestamps?.started)) {
      const nm = await getCached(ctx, this.mem, GVRs.NetworkMap, ns, nmName);
      const sm = await getCached(ctx, this.mem, GVRs.StorageMap, ns, smName);
      if (!nm || !sm) {
        if (!inv || !networks) {
          const uid = source?.status?.provider?.uid;
          if (!uid) throw new Error('source provider UID unknown; cannot build maps');
          inv = new Map();
          for (const v of live) inv.set(v.id, await fx.inventory.getVM(uid, v.id));
          networks = await fx.inventory.listNetworks(uid);
        }
        const liveInv = live.map((v) => inv!.get(v.id)).filter((x): x is InventoryVMLike => !!x);
        if (!nm) await createIfAbsent(ctx, this.mem, GVRs.NetworkMap, renderNetworkMap({ task, vms: liveInv, networks, providers }));
        if (!sm) await createIfAbsent(ctx, this.mem, GVRs.StorageMap, renderStorageMap({ task, vms: liveInv, providers, storageClass }));
      }
    }

    // 4b. the platform's transfer budget: places and admission checkpoints recorded before any Migration (task/admission.ts)
    const slots = await fx.budget!.pass(ctx, task, vms, source, { inventory: fx.inventory, record: async (v) => void (task.status = await writeStatus(ctx, fx, task, v, { storageClass })) });
    vms = slots.vms;

    // 5. per VM: observe → decide → act (Plan → Migration → progress → handoff). Every VM is observed and
    // decided from the caches first, and what that alone changed is written at once; the actions that
    // write then run a few at a time (board.ts), each result on the board as it comes.
    const now = ctx.now();
    const observing = Date.now();
    let requeueMs = Math.min(this.resyncMs, this.stallAfterMs);
    const maps = { network: { name: nmName, namespace: ns }, storage: { name: smName, namespace: ns } };
    const board = new StatusBoard(vms, async (list) => {
      task.status = await writeStatus(ctx, fx, task, list, { storageClass });
    });
    const open = [...vms.keys()].filter((k) => !isTerminalPhase(vms[k]!.phase) && vms[k]!.plan);
    const decided = new Map<number, { action: VMAction; objects: VMObjects }>();
    await boundedPool(open, OBSERVE_IN_FLIGHT, async (k) => {
      const v = vms[k]!;
      const seen = await observeVM(ctx, this.mem, task, v, { now, stallAfterMs: this.stallAfterMs, migrationName: migrationName(task.metadata.name ?? '', task.metadata.uid ?? '', v.id) });
      const action = nextVMAction({ ...seen.observation, slot: slots.slots.get(v.id) });
      // A decision that writes nothing is its own result; one that writes shows what was observed now,
      // and its own effect once its write succeeded.
      board.set(k, writesNothing(action) ? action.status : statusBeforeAction(action, v));
      if (!writesNothing(action)) decided.set(k, { action, objects: seen.objects });
    });
    // What the observation alone changed is written beside the actions, not before them: an action that
    // must find its VM's status recorded first says so (its `record`, which the board writes after this).
    const observedWrite = decided.size > 0 ? board.flush() : Promise.resolve();
    // From here the finisher may end a VM whose outputs deployed meanwhile, on this pass's board.
    lane.open({ task, board, slots: slots.slots, source, providers, maps });
    const passStart = Date.now();
    // The VMs a pass did not reach go first in the next one; then those nearest their end (a VM whose
    // VMInstance is Ready has two steps left, and its tenant waits on them).
    const order = passOrder([...decided.keys()], this.mem.behindOf(task.metadata.uid ?? ''), (k) => stepsToEnd(decided.get(k)!.action));
    const mayStart = (): boolean => Date.now() - passStart < PASS_START_BUDGET_MS;
    // The Plans of VMs that ended in an earlier pass are archived, then deleted, beside the VMs' actions.
    const endedEarlier = (task.status?.vms ?? []).some((v) => isTerminalPhase(v.phase));
    // Clean-up: its requests take the limiter's last turns, after every VM's.
    const retiring = endedEarlier ? withRequestPriority(CLEANUP_PRIORITY, () => retireEndedPlans(ctx, task, { preferCache: true, mayStart })) : Promise.resolve(undefined);
    // One VM's action, its result on the board; true when the board should be written now.
    const act = async (k: number): Promise<boolean> => {
      const { action, objects } = decided.get(k)!;
      // A handoff create is recorded first: this VM's status as it will be, the others' as the board has them.
      const record = async (vm: VMStatus): Promise<void> => {
        board.set(k, vm);
        await board.flush();
      };
      const r = await withRequestPriority(requestPriority(action), () => applyVMAction(ctx, fx, { task, source, action, objects, providers, maps, now, record }));
      if (r.requeueAfterMs !== undefined) requeueMs = Math.min(requeueMs, r.requeueAfterMs);
      board.set(k, r.status);
      // A VM that ended shows at once (once per VM; writes that overlap are one: board.ts); otherwise a
      // long pass shows what it has so far at most once a second.
      return (isTerminalPhase(r.status.phase) && !isTerminalPhase(action.status.phase)) || board.sinceWrite() >= INTERIM_WRITE_MS;
    };
    const acting = boundedPool(
      order,
      VM_ACTIONS_IN_FLIGHT,
      async (k) => {
        // Ended, or being ended, by the finisher in this pass: its result is on the board.
        if (!lane.claimForMain(k)) return;
        let show: boolean;
        try {
          show = await act(k);
        } finally {
          // Its result is on the board: the finisher may take it from here, without waiting for the write.
          lane.mainEnded(k);
        }
        if (show) await board.flush();
      },
      mayStart,
    );
    // All run to their end before any error is thrown: no write is left running behind the pass.
    const [shown, retired, acted] = await Promise.allSettled([observedWrite, retiring, acting]);
    // The finisher's work in flight ends on this pass's board before the pass reads it for its last write.
    await lane.close();
    if (shown.status === 'rejected') throw shown.reason;
    if (retired.status === 'rejected') throw retired.reason;
    if (acted.status === 'rejected') throw acted.reason;
    const left = acted.value;
    // A pass's length and its parts: what precedes the VMs (source, maps, budget), their observation, their actions.
    const kinds: Record<string, number> = {};
    for (const { action } of decided.values()) kinds[action.type] = (kinds[action.type] ?? 0) + 1;
    ctx.log.debug({ vms: vms.length, observed: open.length, actions: kinds, acted: decided.size - left.length, left: left.length, beforeMs: observing - began, observeMs: passStart - observing, actMs: Date.now() - passStart }, 'task pass');
    if (retired.value !== undefined) requeueMs = Math.min(requeueMs, retired.value);
    this.mem.deferred(task.metadata.uid ?? '', left);
    if (left.length) requeueMs = 0;
    const next = board.list();
    for (const v of next) if (v.timestamps?.transferred) this.mem.transferOver(task.metadata.uid ?? '', v.id);
    this.metrics.setStalled(taskKey(task), next.filter((v) => !isTerminalPhase(v.phase) && v.reason === TaskReason.Stalled).map((v) => v.id));
    // Level-triggered: the status this pass derived from what it observed, written if it changed.
    await board.flush();
    // A task that ended in this pass goes on at once to what an ended task does (its Plans retired, then a
    // record): the watch event of this pass's own status write is not what wakes it.
    if (isTerminalPhase(task.status!.phase)) return { requeueAfterMs: 0 };
    return { requeueAfterMs: requeueMs };
  }


  /**
   * The finisher's reconcile (the `vmimporttask-finish` reconciler, woken by its task's VMDisks and
   * VMInstances): while a pass of the task runs, it ends the VMs whose outputs have all deployed on that
   * pass's board (lane.ts). With no pass running it does nothing: the same event queued the task's pass,
   * which starts at once. Its errors are logged and left to that pass (its key is queued, its steps
   * idempotent): the finisher is never the only one to take a step.
   */
  async finish(key: ObjectKey, ctx: ReconcileContext): Promise<Result> {
    const k = keyString(key);
    const fx = this.fx;
    if (!fx) return {};
    const cached: CachedOutput = (kind, name) => ctx.cache(kind === 'VMDisk' ? GVRs.VMDisk : GVRs.VMInstance)?.get(key.namespace, name);
    // Only for a task with a deployed VMInstance of a VM not ended as its stored status has it: its other
    // events (a preflight's, a spec edit's) do not wait on its pass.
    const stored = ctx.cache<VMImportTask & KubeObject>(GVRs.VMImportTask)?.get(key.namespace, key.name);
    if (!stored || !finishCandidates(stored.status?.vms ?? [], cached).length) return {};
    // Between two passes (the last one closing, or none running), the same event queued the next pass:
    // its lane is the one to act on, opened before that pass's first action (it may start with others).
    const current = this.lanes.get(k);
    const lane = current && !current.isClosed() ? current : await this.nextLane(k);
    if (!lane || lane.uid !== stored.metadata.uid) return {};
    const pass = await lane.opened();
    if (!pass) return {};
    // Started, not awaited: the task's next event (another VM's VMInstance turning Ready) is not held
    // behind this one's handoff call, since the task's key is one in the queue. The lane tracks the work (the
    // pass's last write waits for it); the claims keep two calls off one VM; the client's rate limit
    // bounds the requests.
    for (const k of finishCandidates(pass.board.list(), cached)) void lane.track(this.finishVM(ctx, fx, lane, pass, k, cached));
    return {};
  }

  /** The lane of the task's next pass, once it begins; undefined if none begins within NEXT_PASS_WAIT_MS. */
  private nextLane(k: string): Promise<PassLane<FinishPass> | undefined> {
    return new Promise((resolve) => {
      const waiters = this.awaitingPass.get(k) ?? [];
      const give = (lane: PassLane<FinishPass> | undefined): void => {
        clearTimeout(timer);
        resolve(lane);
      };
      const timer = setTimeout(() => {
        const left = (this.awaitingPass.get(k) ?? []).filter((w) => w !== give);
        if (left.length) this.awaitingPass.set(k, left);
        else this.awaitingPass.delete(k);
        give(undefined);
      }, NEXT_PASS_WAIT_MS);
      waiters.push(give);
      this.awaitingPass.set(k, waiters);
    });
  }

  /** One VM on the lane: observed afresh, and its last handoff call taken if that is what it needs. */
  private async finishVM(ctx: ReconcileContext, fx: TaskEffects, lane: PassLane<FinishPass>, pass: FinishPass, k: number, cached: CachedOutput): Promise<void> {
    const { task, board } = pass;
    // The main pass's action on it (the VMInstance's create, often) ends first: its result is what counts.
    await lane.mainSettled(k);
    const v = board.get(k);
    if (!finishable(v, cached) || !lane.claimForFinisher(k, v)) return;
    try {
      const now = ctx.now();
      const seen = await observeVM(ctx, this.mem, task, v, { now, stallAfterMs: this.stallAfterMs, migrationName: migrationName(task.metadata.name ?? '', task.metadata.uid ?? '', v.id) });
      const action = nextVMAction({ ...seen.observation, slot: pass.slots.get(v.id) });
      // Anything but the handoff's last call (its disks done, its VMInstance recorded) is the main pass's.
      if (action.type !== 'handoff' || stepsToEnd(action) > VM_STEPS.length - 1) {
        lane.release(k);
        return;
      }
      const record = async (vm: VMStatus): Promise<void> => {
        board.set(k, vm);
        await board.flush();
      };
      const r = await withRequestPriority(requestPriority(action), () => applyVMAction(ctx, fx, { task, source: pass.source, action, objects: seen.objects, providers: pass.providers, maps: pass.maps, now, record }));
      board.set(k, r.status);
      await board.flush();
    } catch (e) {
      ctx.log.warn({ vm: v.id, err: (e as Error).message }, 'finishing a VM failed; left to the task pass');
    }
  }

  /** The finisher: a reconciler of its own (its own queue and workers), acting through this one's lanes. */
  finisher(): Reconciler {
    return {
      name: 'vmimporttask-finish',
      primary: GVRs.VMImportTask,
      watches: [
        { gvr: GVRs.VMDisk, map: byTaskLabel, labelSelector: LABEL_TASK, keep: keepTaskObjects },
        { gvr: GVRs.VMInstance, map: byTaskLabel, labelSelector: LABEL_TASK, keep: keepTaskObjects },
      ],
      reconcile: (key, ctx) => this.finish(key, ctx),
      memory: () => ({ lanes: this.lanes.size, awaitingPass: this.awaitingPass.size }),
    };
  }

  memory(): Record<string, number> {
    return { ...this.mem.sizes(), ...this.handoff.memory(), ...this.budget.sizes(), lanes: this.lanes.size };
  }
}

/** What the finisher needs of a running pass (lane.ts). */
interface FinishPass {
  task: VMImportTask & KubeObject;
  board: StatusBoard;
  slots: ReadonlyMap<string, SlotVerdict>;
  source: (VMImportSource & KubeObject) | undefined;
  providers: ProviderRefs;
  maps: { network: { name: string; namespace: string }; storage: { name: string; namespace: string } };
}

export function taskReconciler(cfg: ControllerConfig, o: TaskReconcilerOptions = {}): Reconciler {
  return new TaskReconciler(cfg, o);
}
