// VMImportTask reconciler: preflight before anything exists, then one NetworkMap + StorageMap per task
// and one Plan + Migration per VM, progress read from Forklift's objects, failures translated, the
// handoff driven once a VM is transferred. A terminal task is a record: nothing more happens to it.
import { Registry } from 'prom-client';
import type { ControllerConfig } from '../../config.ts';
import { SourceReason, TaskReason } from '../../api/conditions.ts';
import { FINALIZER, LABEL_MANAGED_BY, LABEL_TASK, LABEL_TASK_UID, LABEL_VM_ID, MANAGED_BY_VALUE, VMDISK_RELEASE_PREFIX } from '../../api/labels.ts';
import type { VMImportSource, VMImportTask, VMImportTaskStatus, VMStatus } from '../../api/types.ts';
import { engineSucceededWithoutOutput, SUCCESS_WITHOUT_OUTPUT_MESSAGE, translateFailure, translatePlanBlockers, type FailureContext } from '../../forklift/failures.ts';
import { defaultInventoryClient } from '../source/reconciler.ts';
import { renderNetworkMap, renderStorageMap, type InventoryNetworkLike, type InventoryVMLike, type ProviderRefs } from '../../forklift/maps.ts';
import { readVMMigration, renderMigration, sourcePoweredOff, transferDone, currentStep, type VMMigration } from '../../forklift/migration.ts';
import { networkMapName, planName, storageMapName, migrationName } from '../../forklift/names.ts';
import { readPlanVerdict, renderPlan, conditionsOf, describeCondition } from '../../forklift/plan.ts';
import { advanceProgress, dataVolumeProgress, isStalled, restoreSample, stallMessage, type ClaimEventLike, type DataVolumeLike, type ProgressSample } from '../../forklift/progress.ts';
import { destinationProviderName, sourceProviderName } from '../../forklift/provider.ts';
import { checkStorageClass, type StorageClassLike } from '../../preflight/storage.ts';
import { ServiceCIDRResolver, collisionMessage, hostAddressCollision } from '../../preflight/cidr.ts';
import { GVRs, type GVR } from '../../runtime/gvr.ts';
import { ApiError, isAlreadyExists, isNotFound, type KubeObject } from '../../runtime/kube.ts';
import { keyString, type ObjectKey, type ReconcileContext, type Reconciler, type Result } from '../../runtime/reconciler.ts';
import { patchStatus } from '../../runtime/status.ts';
import { Expectations } from '../../runtime/expectations.ts';
import { advertisedAddress, failVM, hostDescription, runPreflight, type CIDRSource, type InventoryHostLike, type TaskInventory } from './preflight.ts';
import { TaskMetrics } from './metrics.ts';
import { backfillFinished, deriveTaskStatus, isTerminalPhase } from './status.ts';
import { reconcileHandoff } from '../handoff/index.ts';

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
/** While deleting: poll for the Forklift objects to be gone (Forklift may hold finalizers on them). */
const DELETE_POLL_MS = 2_000;

/**
 * Plan blockers that mean "not yet" rather than "never": the maps and providers are created moments
 * before the Plan and validate asynchronously. Anything else Critical/Error fails the VM.
 */
const TRANSIENT_BLOCKERS = new Set(['NetworkMapNotReady', 'StorageMapNotReady', 'SourceProviderNotReady', 'DestinationProviderNotReady', 'ProviderNotReady', 'ValidatingVDDK']);

/** Itinerary phases reached only once every disk is copied: CreateVM, PostHook, Completed. */
const PHASES_AFTER_COPY: ReadonlySet<string> = new Set(['CreateVM', 'PostHook', 'Completed']);

const VM_ID_LABEL = 'vmID';
const MIGRATION_LABEL = 'migration';
const PLAN_LABEL = 'plan';

function iso(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Forklift's timestamp (any precision) in our RFC 3339 seconds form; `fallback` when absent or unparsable. */
function stampOf(x: string | undefined, fallback: Date): string {
  const t = x ? Date.parse(x) : NaN;
  return iso(Number.isFinite(t) ? new Date(t) : fallback);
}

/** The later of an observed time and a recorded earlier milestone: timestamps never run backwards. */
function notBefore(now: Date, earlier: string | undefined): string {
  const e = earlier ? Date.parse(earlier) : NaN;
  return iso(Number.isFinite(e) && e > now.getTime() ? new Date(e) : now);
}

function taskKey(t: VMImportTask): ObjectKey {
  return { namespace: t.metadata.namespace ?? '', name: t.metadata.name ?? '' };
}

function labelSel(l: Record<string, string>): string {
  return Object.entries(l)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

export function taskReconciler(cfg: ControllerConfig, o: TaskReconcilerOptions = {}): Reconciler {
  let inventory: TaskInventory | undefined = o.inventory;
  let cidr: CIDRSource | undefined = o.cidr;
  const stallAfterMs = o.stallAfterMs ?? (Number(process.env.MC_TASK_STALL_AFTER_SECONDS) * 1000 || DEFAULT_STALL_AFTER_MS);
  const resyncMs = o.resyncMs ?? DEFAULT_RESYNC_MS;
  const metrics = new TaskMetrics(o.registry ?? new Registry());
  /** Progress samples per task UID / VM id (rate and stall need the previous observation). */
  const samples = new Map<string, ProgressSample>();
  /**
   * The DataVolumes' own progress per task UID / VM id: a second witness of moving bytes, so a transfer
   * is never called Stalled while CDI still moves data that Forklift's pipeline does not show.
   */
  const dvSamples = new Map<string, ProgressSample>();
  /** Forklift's Plan UID → task key: transfer claims, DataVolumes and VMs carry only Forklift's labels. */
  const planOwners = new Map<string, ObjectKey>();
  /** source key → task keys referencing it: a source turning Ready wakes its tasks. */
  const sourceTasks = new Map<string, Set<string>>();
  /** Inventory facts kept for diagnosis (host of each VM), per task UID / VM id. */
  const vmHosts = new Map<string, string>();
  /** This reconciler's writes of tasks: the cache is read for a task only once it shows the last one. */
  const ownWrites = new Expectations();
  /** Its creates of Forklift objects (maps, Plans, Migrations), likewise. */
  const forkliftWrites = new Expectations();
  /** Task key → UID of the task last seen under it (to forget a deleted task's UID-keyed entries). */
  const taskUIDs = new Map<string, string>();

  const byTaskLabel = (obj: KubeObject): ObjectKey[] => {
    const l = obj.metadata?.labels ?? {};
    return l[LABEL_TASK] ? [{ namespace: obj.metadata?.namespace ?? '', name: l[LABEL_TASK] }] : [];
  };
  const byPlanLabel = (obj: KubeObject): ObjectKey[] => {
    const uid = obj.metadata?.labels?.[PLAN_LABEL];
    const k = uid ? planOwners.get(uid) : undefined;
    return k ? [k] : [];
  };
  /** A volume the handoff marked: its task's name is a label, its namespace the claim it is bound to. */
  const byVolume = (obj: KubeObject): ObjectKey[] => {
    const task = obj.metadata?.labels?.[LABEL_TASK];
    const ns = ((obj as { spec?: { claimRef?: { namespace?: string } } }).spec?.claimRef?.namespace ?? '') || '';
    return task && ns ? [{ namespace: ns, name: task }] : [];
  };
  const bySource = (obj: KubeObject): ObjectKey[] => {
    const set = sourceTasks.get(keyString({ namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' }));
    return set ? [...set].map((k) => ({ namespace: obj.metadata?.namespace ?? '', name: k })) : [];
  };

  const ourSelector = `${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}`;

  const reconciler: Reconciler = {
    name: 'vmimporttask',
    faultConditions: true,
    primary: GVRs.VMImportTask,
    watches: [
      { gvr: GVRs.VMImportSource, map: bySource },
      { gvr: GVRs.Plan, map: byTaskLabel, labelSelector: ourSelector },
      { gvr: GVRs.Migration, map: byTaskLabel, labelSelector: ourSelector },
      // Watched so that the task reads its maps from a cache (they change a handful of times).
      { gvr: GVRs.NetworkMap, map: byTaskLabel, labelSelector: ourSelector },
      { gvr: GVRs.StorageMap, map: byTaskLabel, labelSelector: ourSelector },
      { gvr: GVRs.PersistentVolumeClaim, map: byPlanLabel, labelSelector: PLAN_LABEL },
      { gvr: GVRs.DataVolume, map: byPlanLabel, labelSelector: PLAN_LABEL },
      { gvr: GVRs.VirtualMachine, map: byPlanLabel, labelSelector: PLAN_LABEL },
      // The handoff's own objects carry this task's labels: the target claims, their DataVolumes and the
      // volumes it marks. Their changes (bound, adopted, released) wake the task at once, so a handoff
      // waiting on the PV binder or CDI needs no fast polling.
      { gvr: GVRs.PersistentVolumeClaim, map: byTaskLabel, labelSelector: LABEL_TASK },
      { gvr: GVRs.DataVolume, map: byTaskLabel, labelSelector: LABEL_TASK },
      { gvr: GVRs.PersistentVolume, map: byVolume, labelSelector: LABEL_TASK },
    ],
    async reconcile(key: ObjectKey, ctx: ReconcileContext): Promise<Result> {
      inventory ??= defaultInventoryClient(cfg, ctx.client);
      if (!cidr) {
        // The probe Service (Kubernetes < 1.33) is tried only in the controller's own namespace: the
        // controller may create Services nowhere else (docs/security.md).
        const resolver = new ServiceCIDRResolver(ctx.client, { override: cfg.serviceCIDR });
        cidr = { resolve: () => resolver.resolve(cfg.podNamespace) };
      }
      // From the informer cache, never behind our own last write (status, finalizer); a private copy,
      // because the reconcile edits it as it goes.
      const seen = await ownWrites.get(ctx, GVRs.VMImportTask, key.namespace, key.name);
      const task = seen ? (structuredClone(seen) as VMImportTask & KubeObject) : undefined;
      if (!task) {
        metrics.setStalled(key, []);
        dropTask(key);
        return {};
      }
      taskUIDs.set(keyString(key), task.metadata.uid ?? '');
      if (task.metadata.deletionTimestamp) return await finalize(ctx, task);
      // A terminal task is a record: no further actions, no requeues, nothing kept in memory for it.
      if (isTerminalPhase(task.status?.phase) && task.status?.completedAt) {
        metrics.setStalled(key, []);
        dropTask(key);
        // Ended before the Finished condition existed: add it once, so a wait on it ends here too.
        const backfilled = backfillFinished(task.status, task.metadata.generation, ctx.now());
        if (backfilled) ownWrites.wrote(GVRs.VMImportTask, await patchStatus(ctx.client, GVRs.VMImportTask, task, backfilled));
        return {};
      }
      const srcKey = keyString({ namespace: key.namespace, name: task.spec.sourceRef.name });
      let set = sourceTasks.get(srcKey);
      if (!set) sourceTasks.set(srcKey, (set = new Set()));
      set.add(key.name);

      if (!(task.metadata.finalizers ?? []).includes(FINALIZER)) {
        ownWrites.wrote(GVRs.VMImportTask, await ctx.client.patch<KubeObject>(GVRs.VMImportTask, key.namespace, key.name, { metadata: { finalizers: [...(task.metadata.finalizers ?? []), FINALIZER], resourceVersion: task.metadata.resourceVersion } }));
        return { requeueAfterMs: 0 };
      }
      return await drive(ctx, task);
    },
  };

  /**
   * Everything kept in memory for a task that is gone or finished: its progress samples and diagnosis
   * facts, its place among its source's tasks, its Plans' owner entries. A controller that runs for months
   * keeps only what its live tasks need.
   */
  function dropTask(key: ObjectKey): void {
    const k = keyString(key);
    const uid = taskUIDs.get(k);
    if (uid) forget(uid);
    taskUIDs.delete(k);
    const prefix = `${key.namespace}/`;
    for (const [sk, set] of sourceTasks) {
      if (!sk.startsWith(prefix)) continue;
      set.delete(key.name);
      if (!set.size) sourceTasks.delete(sk);
    }
    for (const [planUID, owner] of planOwners) if (owner.namespace === key.namespace && owner.name === key.name) planOwners.delete(planUID);
  }

  /** Drops the in-memory progress samples and diagnosis facts of a task that needs no more of them. */
  function forget(taskUID: string): void {
    for (const k of samples.keys()) if (k.startsWith(`${taskUID}/`)) samples.delete(k);
    for (const k of dvSamples.keys()) if (k.startsWith(`${taskUID}/`)) dvSamples.delete(k);
    for (const k of vmHosts.keys()) if (k.startsWith(`${taskUID}/`)) vmHosts.delete(k);
  }

  // -------------------------------------------------------------------------------------------------
  async function writeStatus(ctx: ReconcileContext, task: VMImportTask & KubeObject, vms: VMStatus[], extra: { waiting?: { reason: string; message: string }; storageClass?: string }): Promise<VMImportTaskStatus> {
    const now = ctx.now();
    const prevVMs = task.status?.vms ?? [];
    const next = deriveTaskStatus({ prev: task.status, vms, generation: task.metadata.generation, now, waiting: extra.waiting, storageClass: extra.storageClass });
    ownWrites.wrote(GVRs.VMImportTask, await patchStatus(ctx.client, GVRs.VMImportTask, task, next));
    // Events and metrics on VM transitions (after the write succeeded, so a retry repeats neither).
    for (const v of next.vms ?? []) {
      const before = prevVMs.find((p) => p.id === v.id);
      if (before?.phase === v.phase) continue;
      if (v.phase === 'Succeeded') {
        ctx.events.event(task, 'Normal', 'Imported', `VM ${v.id} imported as VMInstance ${v.vmInstance ?? v.name}${v.downtimeSeconds !== undefined ? ` (downtime ${v.downtimeSeconds} s)` : ''}`);
        metrics.imports.inc({ namespace: task.metadata.namespace ?? '', outcome: 'succeeded', reason: TaskReason.Succeeded });
        observe('creating', v.timestamps?.transferred, v.timestamps?.completed);
        if (v.downtimeSeconds !== undefined) metrics.phaseDuration.observe({ phase: 'downtime' }, v.downtimeSeconds);
      } else if (v.phase === 'Failed') {
        ctx.events.event(task, 'Warning', 'ImportFailed', `VM ${v.id} (${v.name}): ${v.reason}: ${v.message ?? ''}`);
        metrics.imports.inc({ namespace: task.metadata.namespace ?? '', outcome: 'failed', reason: v.reason ?? TaskReason.Failed });
      }
      if (v.timestamps?.started && !before?.timestamps?.started) observe('validating', task.metadata.creationTimestamp, v.timestamps.started);
      if (v.timestamps?.transferred && !before?.timestamps?.transferred) {
        observe('transferring', v.timestamps.started, v.timestamps.transferred);
        if (v.bytesTotal) metrics.bytesTransferred.inc(v.bytesTotal);
      }
    }
    return next;
  }

  function observe(phase: string, from: string | undefined, to: string | undefined): void {
    if (!from || !to) return;
    const s = (Date.parse(to) - Date.parse(from)) / 1000;
    if (Number.isFinite(s) && s >= 0) metrics.phaseDuration.observe({ phase }, s);
  }

  function initialVMs(task: VMImportTask): VMStatus[] {
    const prev = task.status?.vms ?? [];
    // Until preflight resolves the default name, the VM's id stands in for it (the schema requires a
    // non-null name, and the API server refused an empty one as null).
    return task.spec.vms.map((s) => prev.find((p) => p.id === s.id) ?? { id: s.id, name: s.name ?? s.id, phase: 'Pending' as const });
  }

  async function drive(ctx: ReconcileContext, task: VMImportTask & KubeObject): Promise<Result> {
    const ns = task.metadata.namespace ?? '';
    let vms = initialVMs(task);
    const needsPreflight = vms.some((v) => v.phase !== 'Failed' && !v.plan);

    // 1. the source exists and is Ready
    // The source is only read here: its informer cache answers (a miss is confirmed by the API server).
    const source =
      (ctx.cache<VMImportSource & KubeObject>(GVRs.VMImportSource)?.get(ns, task.spec.sourceRef.name) as (VMImportSource & KubeObject) | undefined) ??
      (await ctx.client.get<VMImportSource & KubeObject>(GVRs.VMImportSource, ns, task.spec.sourceRef.name));
    if (needsPreflight) {
      if (!source) {
        await writeStatus(ctx, task, vms, { waiting: { reason: TaskReason.SourceNotFound, message: `VMImportSource "${task.spec.sourceRef.name}" does not exist in namespace ${ns}; create it (the task proceeds by itself once it is Ready)` } });
        return { requeueAfterMs: WAITING_RESYNC_MS };
      }
      const ready = (source.status?.conditions ?? []).find((c) => c.type === 'Ready');
      if (ready?.status !== 'True' || !source.status?.provider?.uid) {
        const why = ready ? `${ready.reason}${ready.message ? `: ${ready.message}` : ''}` : 'it has not reported Ready yet';
        // A source gated on an engine too old for our Plans: the task says so in its own reason.
        const reason = ready?.reason === SourceReason.ForkliftTooOld ? TaskReason.ForkliftTooOld : TaskReason.SourceNotReady;
        await writeStatus(ctx, task, vms, { waiting: { reason, message: `VMImportSource "${source.metadata.name}" is not Ready (${why}); the task proceeds by itself once it is` } });
        return { requeueAfterMs: WAITING_RESYNC_MS };
      }
      if (!ctx.installed(GVRs.Plan)) {
        await writeStatus(ctx, task, vms, { waiting: { reason: TaskReason.ForkliftNotInstalled, message: 'Forklift (forklift.konveyor.io) is not installed; the task proceeds by itself once it is' } });
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
        await writeStatus(ctx, task, vms, {});
        return {};
      }
      storageClass = sc.className;
    }
    if (!storageClass) throw new Error('storage class not resolved');

    // 3. per-VM preflight
    let inv: Map<string, InventoryVMLike> | undefined;
    let networks: InventoryNetworkLike[] | undefined;
    if (needsPreflight && source) {
      const pre = await runPreflight({ ctx, task, source, providerUID: source.status!.provider!.uid!, storageClass, inventory: inventory!, cidr: cidr!, vms: vms.map((v) => (v.phase === 'Pending' ? { ...v, phase: 'Validating' as const, reason: TaskReason.Validating } : v)) });
      inv = pre.inventory;
      networks = pre.networks;
      for (const [id, i] of pre.inventory) {
        const h = typeof i.host === 'string' ? i.host : i.host?.id;
        if (h) vmHosts.set(`${task.metadata.uid}/${id}`, h);
      }
      vms = pre.vms.map((v) => (v.phase === 'Failed' || v.plan ? v : { ...v, plan: planName(task.metadata.name ?? '', task.metadata.uid ?? '', v.id), reason: TaskReason.Validating, message: 'preflight passed; creating the migration plan' }));
      // Record the verdict (and the frozen class) before any Forklift object exists.
      task.status = await writeStatus(ctx, task, vms, { storageClass });
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
    const anyUnstarted = live.some((v) => !v.timestamps?.started);
    if (anyUnstarted) {
      const nm = await getCached(ctx, GVRs.NetworkMap, ns, nmName);
      const sm = await getCached(ctx, GVRs.StorageMap, ns, smName);
      if (!nm || !sm) {
        if (!inv || !networks) {
          const uid = source?.status?.provider?.uid;
          if (!uid) throw new Error('source provider UID unknown; cannot build maps');
          inv = new Map();
          for (const v of live) inv.set(v.id, await inventory!.getVM(uid, v.id));
          networks = await inventory!.listNetworks(uid);
        }
        const liveInv = live.map((v) => inv!.get(v.id)).filter((x): x is InventoryVMLike => !!x);
        if (!nm) await createIfAbsent(ctx, GVRs.NetworkMap, renderNetworkMap({ task, vms: liveInv, networks, providers }));
        if (!sm) await createIfAbsent(ctx, GVRs.StorageMap, renderStorageMap({ task, vms: liveInv, providers, storageClass }));
      }
    }

    // 5. per VM: Plan → Migration → progress → handoff
    const now = ctx.now();
    const next: VMStatus[] = [];
    const stalled: string[] = [];
    const requeueHint = { ms: Math.min(resyncMs, stallAfterMs) };
    for (const v of vms) {
      if (isTerminalPhase(v.phase) || !v.plan) {
        next.push(v);
        continue;
      }
      const r = await driveVM(ctx, task, source, v, providers, { network: { name: nmName, namespace: ns }, storage: { name: smName, namespace: ns } }, now, requeueHint);
      if (r.reason === TaskReason.Stalled) stalled.push(r.id);
      next.push(r);
    }
    metrics.setStalled(taskKey(task), stalled);
    const st = await writeStatus(ctx, task, next, { storageClass });
    if (isTerminalPhase(st.phase)) return {};
    return { requeueAfterMs: requeueHint.ms };
  }

  /**
   * One of this task's own Forklift objects (deterministic name, our labels) from the informer cache,
   * never behind our own create. Absent from a synced cache reads as absent — the caller only creates on
   * that (AlreadyExists then reads the server), and confirms live before failing a VM on it. Without a
   * cache (kind not installed or not synced yet) the API server answers; not installed reads as absent.
   */
  async function getCached(ctx: ReconcileContext, gvr: GVR, ns: string, name: string): Promise<KubeObject | undefined> {
    const c = ctx.cache(gvr);
    if (!c) return await ctx.client.get(gvr, ns, name);
    return await forkliftWrites.get(ctx, gvr, ns, name, { trustAbsence: true });
  }

  async function createIfAbsent(ctx: ReconcileContext, gvr: GVR, obj: KubeObject): Promise<KubeObject> {
    try {
      const created = await ctx.client.create(gvr, obj);
      forkliftWrites.wrote(gvr, created);
      return created;
    } catch (e) {
      if (isAlreadyExists(e)) {
        const got = await ctx.client.get(gvr, obj.metadata?.namespace, obj.metadata?.name ?? '');
        forkliftWrites.exists(gvr, obj.metadata?.namespace, obj.metadata?.name ?? '');
        if (got) return got;
      }
      throw e;
    }
  }

  /**
   * Lists objects of a kind by labels. With `preferCache`, a synced informer cache answers when it holds
   * matches; an empty answer is confirmed by the API server, because decisions taken on absence
   * ("Forklift produced nothing") must not rest on a cache that has not seen a just-created object —
   * unless `trustCacheAbsence` says no decision rests on it.
   */
  async function listOptional(ctx: ReconcileContext, gvr: GVR, ns: string, labels: Record<string, string>, o: { preferCache?: boolean; trustCacheAbsence?: boolean } = {}): Promise<KubeObject[]> {
    if (o.preferCache) {
      const c = ctx.cache(gvr);
      const hit = c?.hasSynced() ? c.list(ns, labels) : undefined;
      if (hit?.length || (hit && o.trustCacheAbsence)) return hit;
    }
    try {
      return (await ctx.client.list(gvr, ns, { labelSelector: labelSel(labels) })).items;
    } catch (e) {
      // An optional kind that is not installed: nothing of it exists.
      if (gvr.optional && isNotFound(e)) return [];
      throw e;
    }
  }

  async function failureContext(ctx: ReconcileContext, task: VMImportTask, source: VMImportSource | undefined, vmId: string): Promise<FailureContext & { hostId?: string }> {
    let hostId = vmHosts.get(`${task.metadata.uid}/${vmId}`);
    const providerUID = source?.status?.provider?.uid;
    if (!hostId && providerUID) {
      // Not remembered (the controller restarted since preflight): ask the inventory again.
      try {
        const vm = await inventory!.getVM(providerUID, vmId);
        hostId = typeof vm.host === 'string' ? vm.host : vm.host?.id;
        if (hostId) vmHosts.set(`${task.metadata.uid}/${vmId}`, hostId);
      } catch (e) {
        ctx.log.debug({ err: (e as Error).message }, 'inventory VM unavailable for diagnosis');
      }
    }
    const out: FailureContext & { hostId?: string } = { sourceName: task.spec.sourceRef.name, hostId };
    if (!source || !hostId) return out;
    let hosts: InventoryHostLike[] = [];
    try {
      hosts = source.status?.provider?.uid ? await inventory!.listHosts(source.status.provider.uid) : [];
    } catch (e) {
      ctx.log.debug({ err: (e as Error).message }, 'inventory hosts unavailable for diagnosis');
    }
    out.hostDescription = hostDescription(source, hostId, hosts);
    const overridden = (source.spec.hosts ?? []).map((h) => h.id);
    const addr = advertisedAddress(hosts.find((h) => h.id === hostId));
    if (addr && !overridden.includes(hostId)) {
      const r = await cidr!.resolve(task.metadata.namespace ?? '').catch(() => undefined);
      const c = r ? hostAddressCollision(hostId, addr, r.cidrs, overridden) : undefined;
      out.hostDiagnosis = c
        ? collisionMessage(c)
        : `vCenter advertises ESXi host ${hostId} at ${addr}; if the cluster cannot reach that address on TCP 443/902, add spec.hosts[] to VMImportSource "${source.metadata.name}" with one it can reach`;
    } else if (overridden.includes(hostId)) {
      out.hostDiagnosis = `disk traffic for ESXi host ${hostId} goes to the spec.hosts override; check that the cluster reaches it on TCP 443/902`;
    }
    return out;
  }

  async function driveVM(
    ctx: ReconcileContext,
    task: VMImportTask & KubeObject,
    source: (VMImportSource & KubeObject) | undefined,
    v0: VMStatus,
    providers: ProviderRefs,
    maps: { network: { name: string; namespace: string }; storage: { name: string; namespace: string } },
    now: Date,
    requeueHint: { ms: number },
  ): Promise<VMStatus> {
    const ns = task.metadata.namespace ?? '';
    let v: VMStatus = { ...v0, timestamps: { ...(v0.timestamps ?? {}) } };
    const ts = v.timestamps!;
    const pName = v.plan!;
    let plan = await getCached(ctx, GVRs.Plan, ns, pName);
    if (!plan && ts.started) plan = await ctx.client.get(GVRs.Plan, ns, pName); // absence that fails the VM: confirmed live
    if (!plan) {
      if (ts.started) return failVM(v, TaskReason.Failed, `Forklift Plan ${pName} disappeared while the VM was migrating; create a new task`);
      plan = await createIfAbsent(ctx, GVRs.Plan, renderPlan({ task, vmId: v.id, providers, networkMap: maps.network, storageMap: maps.storage }));
    }
    if (plan.metadata?.uid) planOwners.set(plan.metadata.uid, taskKey(task));
    const mName = migrationName(task.metadata.name ?? '', task.metadata.uid ?? '', v.id);
    let mig = await getCached(ctx, GVRs.Migration, ns, mName);
    if (!mig && ts.started) mig = await ctx.client.get(GVRs.Migration, ns, mName); // absence that fails the VM: confirmed live
    if (!mig) {
      if (ts.started) return failVM(v, TaskReason.Canceled, `Forklift Migration ${mName} was deleted while the VM was migrating (the run is canceled); create a new task`);
      const verdict = readPlanVerdict(plan);
      const hard = verdict.blockers.filter((b) => !TRANSIENT_BLOCKERS.has(b.type));
      if (hard.length) {
        const t = translatePlanBlockers(hard, await failureContext(ctx, task, source, v.id));
        return failVM(v, t.reason, t.message);
      }
      if (!verdict.ready) {
        const waiting = conditionsOf(plan).filter((c) => TRANSIENT_BLOCKERS.has(c.type)).map(describeCondition);
        return { ...v, phase: 'Validating', reason: TaskReason.Validating, message: `Forklift is validating the plan${waiting.length ? `: ${waiting.join('; ')}` : ''}` };
      }
      mig = await createIfAbsent(ctx, GVRs.Migration, renderMigration(task, v.id, plan));
      ts.started = iso(now);
      return { ...v, phase: 'Transferring', reason: TaskReason.Transferring, message: 'migration started' };
    }
    ts.started ??= stampOf(mig.metadata?.creationTimestamp, now);
    const run: VMMigration | undefined = readVMMigration(mig, v.id) ?? readVMMigration(plan, v.id);
    if (!run) {
      const mc = conditionsOf(mig).filter((c) => c.category === 'Critical' || c.category === 'Error');
      const hard = mc.filter((c) => c.type !== 'PlanNotReady');
      if (hard.length) {
        const t = translatePlanBlockers(hard, await failureContext(ctx, task, source, v.id));
        return failVM(v, t.reason, t.message);
      }
      return { ...v, phase: 'Transferring', reason: TaskReason.Transferring, message: 'waiting for Forklift to start the migration' };
    }
    if (sourcePoweredOff(run) && !ts.sourcePoweredOff) ts.sourcePoweredOff = stampOf(run.pipeline.find((s) => s.name === 'DiskTransfer')?.started, now);

    // progress: from Forklift's DiskTransfer step; without one (an unnamed step, or DiskTransferV2v), from
    // the DataVolumes' own progress, which also witnesses moving bytes the step does not show.
    const sKey = `${task.metadata.uid}/${v.id}`;
    const running = !run.failed && !run.canceled && !run.succeeded;
    const dvMoved = running ? await dataVolumesMoved(ctx, ns, mig, v, v0, sKey, now) : undefined;
    const fromDataVolumes = !run.transfer && !!dvMoved?.transfer;
    const transfer = run.transfer ?? dvMoved?.transfer;
    if (transfer && transfer.totalBytes > 0) {
      // The in-memory sample (ms precision); after a restart, the one the last status write recorded.
      const pv = advanceProgress(samples.get(sKey) ?? restoreSample(v0), { bytesDone: transfer.doneBytes, bytesTotal: transfer.totalBytes }, now.getTime());
      samples.set(sKey, pv.sample);
      v = {
        ...v,
        bytesTotal: transfer.totalBytes,
        bytesDone: transfer.doneBytes,
        progress: pv.percent,
        bytesPerSecond: pv.bytesPerSecond,
        etaSeconds: pv.etaSeconds,
        lastProgressTime: iso(new Date(pv.sample.lastChangeAt)),
      };
      if (run.failed || run.canceled) {
        // fall through to the verdict below
      } else if (!transferDone(run) && !(fromDataVolumes && transfer.doneBytes >= transfer.totalBytes)) {
        if (pv.converting) {
          return { ...v, phase: 'Transferring', reason: TaskReason.Converting, message: `converting: the data is downloaded and CDI is writing it to the target volume (qemu-img convert; about 30 min per 230 GiB); progress stays at ${pv.percent}% meanwhile` };
        }
        const idleMs = Math.min(pv.idleMs, dvMoved?.idleMs ?? Infinity);
        if (isStalled({ idleMs, stallAfterMs, converting: false })) return await stalledVM(ctx, task, source, v, mig, pName, idleMs, pv.percent);
        const step = currentStep(run);
        return { ...v, phase: 'Transferring', reason: TaskReason.Transferring, message: `${step ?? run.phase ?? 'starting'}${run.phase ? ` (${run.phase})` : ''}` };
      }
    } else if (running && !copiedEarlier(v0, run)) {
      // Before the DiskTransfer step reports sizes: a stall here is measured from the start.
      const pv = advanceProgress(samples.get(sKey), { bytesDone: 0, bytesTotal: 0 }, now.getTime());
      if (!samples.has(sKey)) samples.set(sKey, { ...pv.sample, lastChangeAt: Date.parse(ts.started) || now.getTime() });
      const idle = Math.min(now.getTime() - samples.get(sKey)!.lastChangeAt, dvMoved?.idleMs ?? Infinity);
      if (isStalled({ idleMs: idle, stallAfterMs, converting: false })) return await stalledVM(ctx, task, source, v, mig, pName, idle, 0);
      return { ...v, phase: 'Transferring', reason: run.pending ? TaskReason.Pending : TaskReason.Transferring, message: run.pending ? 'queued behind Forklift\'s in-flight limit' : `${currentStep(run) ?? 'Initialize'} (${run.phase ?? 'Started'})` };
    }

    if (run.canceled) return failVM(v, TaskReason.Canceled, `Forklift canceled the migration${run.errors.length ? `: ${run.errors.join('; ')}` : ''}; create a new task`);
    if (run.failed) {
      const fc = await failureContext(ctx, task, source, v.id);
      let text = run.errors.join('; ');
      if (!text) text = conditionsOf(mig).filter((c) => c.type === 'Failed').map(describeCondition).join('; ') || 'The VM migration has FAILED.';
      const t = translateFailure(text, fc);
      return failVM(v, t.reason, t.message);
    }
    // transferred
    if (!ts.transferred) ts.transferred = stampOf(run.transfer?.completed, now);
    samples.delete(sKey);
    dvSamples.delete(sKey);
    v = { ...v, progress: 100, bytesDone: v.bytesTotal ?? v.bytesDone, bytesPerSecond: undefined, etaSeconds: 0, lastProgressTime: undefined };
    if (!run.succeeded) return { ...v, phase: 'Creating', reason: TaskReason.Creating, message: `transfer complete; Forklift is creating the VM (${run.phase ?? ''})` };

    // Forklift says Succeeded: outputs must exist (the retry trap), unless the handoff already consumed them.
    const migUID = mig.metadata?.uid ?? '';
    const sel = { [MIGRATION_LABEL]: migUID, [VM_ID_LABEL]: v.id };
    // Once the handoff has recorded a step, it consumes the transfer claims and the scaffolding VM: their
    // absence is expected, and the cache answers alone. Before that an absence is confirmed by the API
    // server, because "Forklift produced nothing" fails the VM.
    const startedByStatus = (v.disks ?? []).some((d) => d.handoff) || !!v.vmInstance;
    const forkliftVMs = await listOptional(ctx, GVRs.VirtualMachine, ns, sel, { preferCache: true, trustCacheAbsence: startedByStatus });
    const claims = (await listOptional(ctx, GVRs.PersistentVolumeClaim, ns, sel, { preferCache: true, trustCacheAbsence: startedByStatus })).filter((c) => !c.metadata?.name?.startsWith(VMDISK_RELEASE_PREFIX));
    // The handoff marks the PVs it has started on: a crash between its steps and our status write
    // must not read as "nothing produced".
    const handoffStarted =
      startedByStatus ||
      (await ctx.client.list(GVRs.PersistentVolume, undefined, { labelSelector: labelSel({ [LABEL_TASK_UID]: task.metadata.uid ?? '', [LABEL_VM_ID]: v.id }), limit: 1 })).items.length > 0;
    if (!handoffStarted && engineSucceededWithoutOutput({ engineSucceeded: true, forkliftVM: forkliftVMs[0], transferClaims: claims, expectedDisks: v.disks?.length ?? 0 })) {
      return failVM(v, TaskReason.EngineReportedSuccessWithoutOutput, SUCCESS_WITHOUT_OUTPUT_MESSAGE);
    }
    const h = await reconcileHandoff(ctx, { task, spec: task.spec.vms.find((s) => s.id === v.id)!, vmName: v.name, status: v, className: task.status?.storageClass ?? '', forkliftVM: forkliftVMs[0], transferClaims: claims });
    if (h.requeueAfterMs !== undefined) requeueHint.ms = Math.min(requeueHint.ms, h.requeueAfterMs);
    v = { ...v, disks: h.disks, vmInstance: h.vmInstance ?? v.vmInstance };
    if (h.state === 'failed') return failVM(v, h.reason ?? TaskReason.OutputRejected, h.message ?? 'the handoff failed');
    if (h.state === 'done') {
      ts.completed = notBefore(now, ts.transferred);
      return { ...v, phase: 'Succeeded', reason: TaskReason.Succeeded, message: `imported as VMInstance ${v.vmInstance ?? v.name}` };
    }
    return { ...v, phase: 'Creating', reason: TaskReason.Creating, message: h.message ?? 'handing the transferred volumes over to VMDisks' };
  }

  /**
   * Without a DiskTransfer step, the bytes were last seen on the DataVolumes, which Forklift deletes once
   * it builds the VM: a copy recorded complete in status is done, not a transfer that stopped moving.
   */
  function copiedEarlier(v0: VMStatus, run: VMMigration): boolean {
    if (run.transfer) return false;
    // The cold itinerary's phases after the copy (kubev2v/forklift@v2.11.5:pkg/controller/plan/migrator/base/migrator.go).
    if (run.phase && PHASES_AFTER_COPY.has(run.phase)) return true;
    return (v0.bytesTotal ?? 0) > 0 && (v0.bytesDone ?? 0) >= v0.bytesTotal!;
  }

  /**
   * The VM's DataVolumes as CDI reports them: their bytes as a transfer, and how long since they last
   * moved (the second witness against a false stall). Read from the cache; Forklift labels each with its
   * migration and VM. Undefined when no DataVolume states a size yet.
   */
  async function dataVolumesMoved(ctx: ReconcileContext, ns: string, mig: KubeObject, v: VMStatus, v0: VMStatus, sKey: string, now: Date): Promise<{ transfer: { totalBytes: number; doneBytes: number }; idleMs: number } | undefined> {
    const dvs = await listOptional(ctx, GVRs.DataVolume, ns, { [MIGRATION_LABEL]: mig.metadata?.uid ?? '', [VM_ID_LABEL]: v.id }, { preferCache: true, trustCacheAbsence: true });
    const p = dataVolumeProgress(dvs as DataVolumeLike[]);
    if (!p) return undefined;
    // After a restart the DataVolumes are assumed still since the progress the last status write recorded.
    const restored = restoreSample(v0);
    const prev = dvSamples.get(sKey) ?? (restored ? { ...restored, bytesDone: p.bytesDone, bytesTotal: p.bytesTotal } : undefined);
    const view = advanceProgress(prev, p, now.getTime());
    dvSamples.set(sKey, view.sample);
    return { transfer: { totalBytes: p.bytesTotal, doneBytes: p.bytesDone }, idleMs: view.idleMs };
  }

  /**
   * A stalled transfer: the claims' events and the host diagnosis go into the message. A DataVolume that
   * waits for a VDDK image (`AwaitingVDDK`) waits forever: that VM is canceled and fails at once.
   */
  async function stalledVM(ctx: ReconcileContext, task: VMImportTask, source: VMImportSource | undefined, v: VMStatus, mig: KubeObject, plan: string, idleMs: number, percent: number): Promise<VMStatus> {
    const ns = task.metadata.namespace ?? '';
    const dvs = await listOptional(ctx, GVRs.DataVolume, ns, { [MIGRATION_LABEL]: mig.metadata?.uid ?? '', [VM_ID_LABEL]: v.id }, { preferCache: true });
    const awaiting = dvs
      .flatMap((d) => ((d.status as { conditions?: Array<{ reason?: string; message?: string }> } | undefined)?.conditions ?? []).filter((c) => c.reason === 'AwaitingVDDK'))
      .map((c) => `AwaitingVDDK: ${c.message ?? ''}`.trim());
    if (awaiting.length) {
      await cancelVM(ctx, mig, v.id);
      const t = translateFailure(`DataVolume ${[...new Set(awaiting)].join('; ')}`, { sourceName: task.spec.sourceRef.name });
      return failVM(v, t.reason, t.message);
    }
    const fc = await failureContext(ctx, task, source, v.id);
    const { events, error: eventsError } = await claimEvents(ctx, task, plan, mig);
    return { ...v, phase: 'Transferring', reason: TaskReason.Stalled, message: stallMessage({ idleMs, percent, events, eventsError, hostDiagnosis: fc.hostDiagnosis }) };
  }

  /** Asks Forklift to cancel one VM of a running Migration (spec.cancel), leaving its siblings alone. */
  async function cancelVM(ctx: ReconcileContext, mig: KubeObject, vmId: string): Promise<void> {
    const cur = ((mig.spec as { cancel?: Array<{ id?: string }> } | undefined)?.cancel ?? []).filter((x) => x.id !== vmId);
    await ctx.client.patch(GVRs.Migration, mig.metadata?.namespace, mig.metadata?.name ?? '', { spec: { cancel: [...cur, { id: vmId }] } });
  }

  /**
   * The events of this migration's transfer claims and DataVolumes (CDI's importer reports a VDDK failure
   * to reach the ESXi host there, and nowhere else). The chart grants list on events for this; a refusal
   * or any other failure is returned as `error` for the VM's message and a Warning Event, never dropped.
   */
  async function claimEvents(ctx: ReconcileContext, task: VMImportTask, plan: string, mig: KubeObject): Promise<{ events: ClaimEventLike[]; error?: string }> {
    const ns = task.metadata.namespace ?? '';
    try {
      const claims = await listOptional(ctx, GVRs.PersistentVolumeClaim, ns, { [MIGRATION_LABEL]: mig.metadata?.uid ?? '' }, { preferCache: true });
      const names = new Set(claims.map((c) => c.metadata?.name));
      const evs = (await ctx.client.list<KubeObject & ClaimEventLike>(GVRs.Event, ns)).items;
      return {
        events: evs.filter((e) => {
          const n = e.involvedObject?.name ?? '';
          return (e.involvedObject?.kind === 'PersistentVolumeClaim' || e.involvedObject?.kind === 'DataVolume') && (names.has(n) || n.startsWith(`${plan}-`));
        }),
      };
    } catch (e) {
      const error =
        e instanceof ApiError && e.code === 403
          ? `the controller may not list events in namespace ${ns} (HTTP 403; the chart's ClusterRole grants list on events — check the controller's RBAC)`
          : `reading them failed: ${(e as Error).message}`;
      ctx.log.warn({ err: (e as Error).message }, 'could not read the claims\' events for a stall diagnosis');
      ctx.events.event(task as unknown as KubeObject, 'Warning', 'ClaimEventsUnreadable', `Stall diagnosis without the claims' events: ${error}`);
      return { events: [], error };
    }
  }

  // -------------------------------------------------------------------------------------------------
  /**
   * Deletion: cancel and delete Migrations, delete Plans, maps, and every transfer DataVolume/claim and
   * scaffolding VirtualMachine of this task's Plans that was not handed off. Selection is by this task's
   * UID label and by the UIDs of this task's own Plans: nothing of another task is ever touched.
   */
  async function finalize(ctx: ReconcileContext, task: VMImportTask & KubeObject): Promise<Result> {
    const ns = task.metadata.namespace ?? '';
    const key = taskKey(task);
    metrics.setStalled(key, []);
    if (!(task.metadata.finalizers ?? []).includes(FINALIZER)) return {};
    const mine = { [LABEL_TASK_UID]: task.metadata.uid ?? '' };
    let remaining = 0;
    if (ctx.installed(GVRs.Plan)) {
      const migrations = await listOptional(ctx, GVRs.Migration, ns, mine);
      const plans = await listOptional(ctx, GVRs.Plan, ns, mine);
      // Claims already being handed off belong to the handoff: never delete them under it.
      const handedOff = new Set((task.status?.vms ?? []).flatMap((v) => (v.disks ?? []).filter((d) => d.handoff && d.transferClaim).map((d) => d.transferClaim!)));
      for (const m of migrations) {
        // Deleting the active Migration cancels the run (docs/forklift-contract.md, Plan).
        if (await ctx.client.delete(GVRs.Migration, ns, m.metadata!.name!, { propagationPolicy: 'Background' })) remaining++;
      }
      for (const p of plans) {
        const uid = p.metadata?.uid ?? '';
        for (const gvr of [GVRs.VirtualMachine, GVRs.DataVolume, GVRs.PersistentVolumeClaim]) {
          for (const o of await listOptional(ctx, gvr, ns, { [PLAN_LABEL]: uid })) {
            const n = o.metadata?.name ?? '';
            if (n.startsWith(VMDISK_RELEASE_PREFIX) || handedOff.has(n)) continue;
            // The handoff's first step labels the volume with this task's UID before anything else; a
            // claim whose volume carries it is being handed off even if that status write was lost.
            const volume = gvr === GVRs.PersistentVolumeClaim ? (o as { spec?: { volumeName?: string } }).spec?.volumeName : undefined;
            if (volume && (await ctx.client.get(GVRs.PersistentVolume, undefined, volume))?.metadata?.labels?.[LABEL_TASK_UID] === task.metadata.uid) continue;
            if (await ctx.client.delete(gvr, ns, n, { propagationPolicy: 'Background' })) remaining++;
          }
        }
        if (await ctx.client.delete(GVRs.Plan, ns, p.metadata!.name!, { propagationPolicy: 'Background' })) remaining++;
      }
      for (const gvr of [GVRs.NetworkMap, GVRs.StorageMap]) {
        for (const o of await listOptional(ctx, gvr, ns, mine)) if (await ctx.client.delete(gvr, ns, o.metadata!.name!)) remaining++;
      }
    }
    if (remaining > 0) return { requeueAfterMs: DELETE_POLL_MS };
    dropTask(key);
    const finalizers = (task.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
    try {
      await ctx.client.patch(GVRs.VMImportTask, ns, key.name, { metadata: { finalizers, resourceVersion: task.metadata.resourceVersion } });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    return {};
  }

  reconciler.memory = () => ({
    samples: samples.size,
    dvSamples: dvSamples.size,
    planOwners: planOwners.size,
    sourceTasks: sourceTasks.size,
    vmHosts: vmHosts.size,
    taskUIDs: taskUIDs.size,
    taskExpectations: ownWrites.size(),
    forkliftExpectations: forkliftWrites.size(),
  });
  return reconciler;
}
