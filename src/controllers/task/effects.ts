// Effects of the task reconciler: the writes one decided action makes (create a Plan or Migration, cancel
// a VM's run, the handoff's next step), the diagnosis a failure message needs, the status write with its
// Events and metrics, and the deletion of a task's Forklift objects. Each write is idempotent or carries
// preconditions, so a step decided on a stale read fails harmlessly and a crash between two is resumed.
import { TaskReason } from '../../api/conditions.ts';
import { ANNOTATION_KEEP_VOLUMES, CLAIM_FINALIZER, FINALIZER, LABEL_TASK_UID, LABEL_VM_ID, UPSTREAM_LABEL_TASK_NAME, UPSTREAM_LABEL_TASK_NAMESPACE, UPSTREAM_TASK_FINALIZER, VMDISK_RELEASE_PREFIX } from '../../api/labels.ts';
import type { DiskStatus, VMImportSource, VMImportTask, VMImportTaskStatus, VMStatus } from '../../api/types.ts';
import { diskNames, readVMDisks, withVMDisks, type VMDisks } from '../../api/disks.ts';
import { translateFailure, translatePlanBlockers, type FailureContext } from '../../forklift/failures.ts';
import type { ProviderRefs } from '../../forklift/maps.ts';
import { renderMigration } from '../../forklift/migration.ts';
import { planDrift, planDriftMessage, preserveStaticIPsFor, renderPlan } from '../../forklift/plan.ts';
import { archivePatch, planDeletionStep } from '../../forklift/retire.ts';
import { recheckStorageClass, type StorageClassLike } from '../../preflight/storage.ts';
import { importMode } from '../../forklift/warm.ts';
import { stallMessage, type ClaimEventLike } from '../../forklift/progress.ts';
import { ServiceCIDRResolver, collisionMessage, hostAddressCollision } from '../../preflight/cidr.ts';
import { GVRs, type GVR } from '../../runtime/gvr.ts';
import { ApiError, isAlreadyExists, isNotFound, type KubeObject } from '../../runtime/kube.ts';
import type { ReconcileContext, Result } from '../../runtime/reconciler.ts';
import { patchStatus } from '../../runtime/status.ts';
import { withRequestPriority } from '../../runtime/ratelimit.ts';
import type { Handoff } from '../handoff/index.ts';
import { desiredReclaimPolicy } from '../handoff/plan.ts';
import { notBefore, type VMAction } from './decide.ts';
import type { TaskMemory } from './memory.ts';
import type { TransferAdmission } from './admission.ts';
import { admissionHooks } from './admission-hooks.ts';
import type { TaskMetrics } from './metrics.ts';
import { MIGRATION_LABEL, PLAN_LABEL, VM_ID_LABEL, getCached, listOptional, taskKey, type VMObjects } from './observe.ts';
import { advertisedAddress, failVM, hostDescription, type CIDRSource, type InventoryHostLike, type TaskInventory } from './preflight.ts';
import { deriveTaskStatus } from './status.ts';

/** Above every other request's turn in the client-side limiter (0 and below: runtime/ratelimit.ts, decide.ts requestPriority). */
const STATUS_WRITE_PRIORITY = 1;
/** While deleting: poll for the Forklift objects to be gone (Forklift may hold finalizers on them). */
const DELETE_POLL_MS = 2_000;

/** What the effects need beside the API server: the inventory, the service CIDRs, memory, metrics and the handoff. */
export interface TaskEffects {
  inventory: TaskInventory;
  cidr: CIDRSource;
  mem: TaskMemory;
  metrics: TaskMetrics;
  handoff: Handoff;
  /** The platform's transfer budget (task/admission.ts): its checkpoints and the whole task's ETA. */
  budget?: TransferAdmission;
}

/** The service-CIDR source of a controller: the probe runs only in its own namespace. */
export function defaultCIDRSource(ctx: ReconcileContext, serviceCIDR: string | undefined, podNamespace: string): CIDRSource {
  // The probe Service (Kubernetes < 1.33) is tried only in the controller's own namespace: the
  // controller may create Services nowhere else (docs/security.md).
  const resolver = new ServiceCIDRResolver(ctx.client, { override: serviceCIDR });
  return { resolve: () => resolver.resolve(podNamespace) };
}

export async function createIfAbsent(ctx: ReconcileContext, mem: TaskMemory, gvr: GVR, obj: KubeObject): Promise<KubeObject> {
  try {
    const created = await ctx.client.create(gvr, obj);
    // Made on no object: until the cache holds it, the created object answers the next pass.
    mem.forkliftWrites.wrote(gvr, created, { over: null });
    return created;
  } catch (e) {
    if (isAlreadyExists(e)) {
      const got = await ctx.client.get(gvr, obj.metadata?.namespace, obj.metadata?.name ?? '');
      mem.forkliftWrites.exists(gvr, obj.metadata?.namespace, obj.metadata?.name ?? '');
      if (got) return got;
    }
    throw e;
  }
}

export interface ActionInput {
  task: VMImportTask & KubeObject;
  source: (VMImportSource & KubeObject) | undefined;
  action: VMAction;
  objects: VMObjects;
  providers: ProviderRefs;
  maps: { network: { name: string; namespace: string }; storage: { name: string; namespace: string } };
  now: Date;
  /** Writes the task's status with this VM's status replaced, before a handoff create that needs it recorded. */
  record: (vm: VMStatus) => Promise<void>;
}

/** Executes one VM's action; returns the VM's status to record and, when sooner than the resync, a requeue. */
export async function applyVMAction(ctx: ReconcileContext, fx: TaskEffects, i: ActionInput): Promise<{ status: VMStatus; requeueAfterMs?: number }> {
  const { task, action: a } = i;
  switch (a.type) {
    case 'none':
    case 'report':
    case 'fail':
      return { status: a.status };
    case 'create-plan': {
      // The class is read again right before the Plan (src/preflight/storage.ts recheckStorageClass).
      const cls = task.status?.storageClass;
      const changed = cls ? recheckStorageClass(cls, (await ctx.client.get(GVRs.StorageClass, undefined, cls)) as unknown as StorageClassLike | undefined) : undefined;
      if (changed) return { status: failVM(a.status, changed.reason, changed.message) };
      // static IPs only when every NIC maps to Multus (src/forklift/plan.ts preserveStaticIPsFor).
      const staticIPs = (await staticIPsOf(ctx, fx, task, i.maps.network.name)) ?? false;
      await createIfAbsent(ctx, fx.mem, GVRs.Plan, renderPlan({ task, vmId: a.status.id, providers: i.providers, networkMap: i.maps.network, storageMap: i.maps.storage, staticIPs }));
      return { status: a.status };
    }
    case 'create-migration': {
      // Only a Plan stored as it was rendered runs (src/forklift/plan.ts planDrift).
      // A NetworkMap not readable now: its preserveStaticIPs is taken as stored (the others are still compared).
      const stored = (i.objects.plan as { spec?: { preserveStaticIPs?: unknown } } | undefined)?.spec?.preserveStaticIPs === true;
      const rendered = renderPlan({ task, vmId: a.status.id, providers: i.providers, networkMap: i.maps.network, storageMap: i.maps.storage, staticIPs: (await staticIPsOf(ctx, fx, task, i.maps.network.name)) ?? stored });
      const drift = planDrift(rendered, i.objects.plan);
      if (drift.length) return { status: failVM(a.status, TaskReason.PlanNotValid, planDriftMessage(drift, rendered, i.objects.plan)) };
      await createIfAbsent(ctx, fx.mem, GVRs.Migration, renderMigration(task, a.status.id, i.objects.plan!));
      admissionHooks.afterMigrationCreate?.(task.metadata.uid ?? '', a.status.id);
      return { status: a.status };
    }
    case 'fail-diagnosed': {
      const fc = await failureContext(ctx, fx, task, i.source, a.status.id);
      const t = a.blockers ? translatePlanBlockers(a.blockers, fc) : translateFailure(a.text ?? '', fc);
      return { status: failVM(a.status, t.reason, t.message) };
    }
    case 'set-cutover': {
      // Forklift takes the cutover once Migration.spec.cutover is not after now
      // (kubev2v/forklift@v2.11.5:pkg/controller/plan/migration.go, CopyingPaused). A merge patch of one
      // field: repeating it is harmless, and the decision never moves it later.
      const mig = i.objects.migration!;
      fx.mem.forkliftWrites.wrote(GVRs.Migration, await ctx.client.patch(GVRs.Migration, mig.metadata?.namespace, mig.metadata?.name ?? '', { spec: { cutover: a.cutover } }));
      ctx.events.event(task, 'Normal', 'CutoverScheduled', `VM ${a.status.id}: cutover at ${a.cutover}`);
      return { status: a.status };
    }
    case 'stalled':
      return { status: await stalledVM(ctx, fx, task, i.source, a.status, i.objects.migration!, a.status.plan ?? '', a.idleMs, a.percent) };
    case 'handoff': {
      const v = a.status;
      const creating = (o: Partial<VMStatus>): VMStatus => ({ ...v, phase: 'Creating', reason: TaskReason.Creating, ...o });
      // The handoff names the VMDisks: from its first record on, status.vms[].disks lists them, and its
      // evidence goes to diskHandoffs in the same write.
      const handedOver = (evidence: DiskStatus[]): VMDisks => ({ names: diskNames(evidence), evidence });
      const h = await fx.handoff.reconcile(ctx, {
        task,
        spec: task.spec.vms.find((s) => s.id === v.id)!,
        vmName: v.name,
        status: v,
        className: task.status?.storageClass ?? '',
        forkliftVM: i.objects.forkliftVM,
        transferClaims: i.objects.transferClaims,
        record: (disks, vmInstance) => i.record(withVMDisks(creating({ ...(vmInstance ? { vmInstance } : {}), message: v.phase === 'Creating' ? v.message : 'handing the transferred volumes over to VMDisks' }), handedOver(disks))),
      });
      // The pass that made the VMInstance says what of the source's shape it carries; later passes keep it.
      const out: VMStatus = { ...withVMDisks(v, handedOver(h.disks)), vmInstance: h.vmInstance ?? v.vmInstance, ...(h.shape ? { shape: h.shape } : {}) };
      if (h.state === 'failed') return { status: failVM(out, h.reason ?? TaskReason.OutputRejected, h.message ?? 'the handoff failed'), requeueAfterMs: h.requeueAfterMs };
      if (h.state === 'done') {
        const ts = { ...(out.timestamps ?? {}), completed: notBefore(i.now, out.timestamps?.transferred) };
        return { status: { ...out, timestamps: ts, phase: 'Succeeded', reason: TaskReason.Succeeded, message: `imported as VMInstance ${out.vmInstance ?? out.name}` }, requeueAfterMs: h.requeueAfterMs };
      }
      return { status: { ...out, phase: 'Creating', reason: TaskReason.Creating, message: h.message ?? 'handing the transferred volumes over to VMDisks' }, requeueAfterMs: h.requeueAfterMs };
    }
  }
}

/** Writes the task's derived status; Events and metrics on VM transitions after the write succeeded. */
export async function writeStatus(ctx: ReconcileContext, fx: Pick<TaskEffects, 'mem' | 'metrics' | 'budget'>, task: VMImportTask & KubeObject, vms: VMStatus[], extra: { waiting?: { reason: string; message: string }; storageClass?: string }): Promise<VMImportTaskStatus> {
  const now = ctx.now();
  const { metrics } = fx;
  const prevVMs = task.status?.vms ?? [];
  const etaSeconds = fx.budget?.etaSeconds(task.metadata.uid, now.getTime());
  const next = deriveTaskStatus({ prev: task.status, vms, generation: task.metadata.generation, now, waiting: extra.waiting, storageClass: extra.storageClass, ...(etaSeconds !== undefined ? { etaSeconds } : {}) });
  // On the version read: the task's conditions are written whole, and the manager's Degraded among them
  // must not come back from a read older than its clearing.
  const over = task.metadata.resourceVersion;
  // Ahead of every other request in the client-side limiter: it is what the tenant sees of them all.
  const wrote = await withRequestPriority(STATUS_WRITE_PRIORITY, () => patchStatus(ctx.client, GVRs.VMImportTask, task, next, { precondition: true }));
  // Written on `over` (the precondition): until the cache has the write, the next pass reads it from here.
  fx.mem.ownWrites.wrote(GVRs.VMImportTask, wrote, { over });
  // A second write in the same pass (after the preflight's) holds on the version this one made.
  if (wrote?.metadata?.resourceVersion) task.metadata.resourceVersion = wrote.metadata.resourceVersion;
  const observe = (phase: string, from: string | undefined, to: string | undefined): void => {
    if (!from || !to) return;
    const s = (Date.parse(to) - Date.parse(from)) / 1000;
    if (Number.isFinite(s) && s >= 0) metrics.phaseDuration.observe({ phase }, s);
  };
  // Events and metrics on VM transitions (after the write succeeded, so a retry repeats neither).
  for (const v of next.vms ?? []) {
    const before = prevVMs.find((p) => p.id === v.id);
    const precopied = (v.warm?.precopies ?? 0) - (before?.warm?.precopies ?? 0);
    if (precopied > 0) {
      metrics.precopies.inc({ namespace: task.metadata.namespace ?? '' }, precopied);
      ctx.events.event(task, 'Normal', 'Precopied', `VM ${v.id}: precopy ${v.warm!.precopies} done${v.warm?.lastPrecopySeconds !== undefined ? ` in ${v.warm.lastPrecopySeconds} s` : ''}${v.warm?.nextPrecopyAt ? `; next at ${v.warm.nextPrecopyAt}` : ''}`);
    }
    // A precopy Forklift retries: said once per episode (the VM stays Precopying meanwhile).
    if (v.reason === TaskReason.PrecopyRetrying && before?.reason !== TaskReason.PrecopyRetrying) ctx.events.event(task, 'Warning', 'PrecopyRetrying', `VM ${v.id}: ${v.message ?? ''}`);
    if (before?.phase === v.phase) continue;
    if (v.phase === 'CuttingOver') ctx.events.event(task, 'Normal', 'CutoverStarted', `VM ${v.id}: cutover started after ${v.warm?.precopies ?? 0} precopies; the source is powered off`);
    if (v.phase === 'Succeeded') {
      ctx.events.event(task, 'Normal', 'Imported', `VM ${v.id} imported as VMInstance ${v.vmInstance ?? v.name}${v.downtimeSeconds !== undefined ? ` (downtime ${v.downtimeSeconds} s)` : ''}`);
      metrics.imports.inc({ namespace: task.metadata.namespace ?? '', outcome: 'succeeded', reason: TaskReason.Succeeded });
      observe('creating', v.timestamps?.transferred, v.timestamps?.completed);
      if (v.downtimeSeconds !== undefined) metrics.phaseDuration.observe({ phase: 'downtime' }, v.downtimeSeconds);
      if (v.downtimeSeconds !== undefined) metrics.downtime.observe({ mode: importMode(task) }, v.downtimeSeconds);
    } else if (v.phase === 'Failed') {
      ctx.events.event(task, 'Warning', 'ImportFailed', `VM ${v.id} (${v.name}): ${v.reason}: ${v.message ?? ''}`);
      metrics.imports.inc({ namespace: task.metadata.namespace ?? '', outcome: 'failed', reason: v.reason ?? TaskReason.Failed });
    }
    if (v.timestamps?.started && !before?.timestamps?.started) observe('validating', task.metadata.creationTimestamp, v.timestamps.started);
    if (v.timestamps?.transferred && !before?.timestamps?.transferred) {
      observe('transferring', v.timestamps.started, v.timestamps.transferred);
      if (importMode(task) === 'warm' && v.timestamps.sourcePoweredOff) {
        const s = (Date.parse(v.timestamps.transferred) - Date.parse(v.timestamps.sourcePoweredOff)) / 1000;
        if (Number.isFinite(s) && s >= 0) metrics.cutoverDuration.observe(s);
      }
      if (v.bytesTotal) metrics.bytesTransferred.inc(v.bytesTotal);
    }
  }
  return next;
}

export async function failureContext(ctx: ReconcileContext, fx: Pick<TaskEffects, 'mem' | 'inventory' | 'cidr'>, task: VMImportTask, source: VMImportSource | undefined, vmId: string): Promise<FailureContext & { hostId?: string }> {
  const { mem, inventory, cidr } = fx;
  let hostId = mem.vmHosts.get(`${task.metadata.uid}/${vmId}`);
  const providerUID = source?.status?.provider?.uid;
  if (!hostId && providerUID) {
    // Not remembered (the controller restarted since preflight): ask the inventory again.
    try {
      const vm = await inventory.getVM(providerUID, vmId);
      hostId = typeof vm.host === 'string' ? vm.host : vm.host?.id;
      if (hostId) mem.vmHosts.set(`${task.metadata.uid}/${vmId}`, hostId);
    } catch (e) {
      ctx.log.debug({ err: (e as Error).message }, 'inventory VM unavailable for diagnosis');
    }
  }
  const out: FailureContext & { hostId?: string } = { sourceName: task.spec.sourceRef.name, hostId };
  if (!source || !hostId) return out;
  let hosts: InventoryHostLike[] = [];
  try {
    hosts = source.status?.provider?.uid ? await inventory.listHosts(source.status.provider.uid) : [];
  } catch (e) {
    ctx.log.debug({ err: (e as Error).message }, 'inventory hosts unavailable for diagnosis');
  }
  out.hostDescription = hostDescription(source, hostId, hosts);
  const overridden = (source.spec.hosts ?? []).map((h) => h.id);
  const addr = advertisedAddress(hosts.find((h) => h.id === hostId));
  if (addr && !overridden.includes(hostId)) {
    const r = await cidr.resolve(task.metadata.namespace ?? '').catch(() => undefined);
    const c = r ? hostAddressCollision(hostId, addr, r.cidrs, overridden) : undefined;
    out.hostDiagnosis = c
      ? collisionMessage(c)
      : `vCenter advertises ESXi host ${hostId} at ${addr}; if the cluster cannot reach that address on TCP 443/902, add spec.hosts[] to VMImportSource "${source.metadata.name}" with one it can reach`;
  } else if (overridden.includes(hostId)) {
    out.hostDiagnosis = `disk traffic for ESXi host ${hostId} goes to the spec.hosts override; check that the cluster reaches it on TCP 443/902`;
  }
  return out;
}

/**
 * A stalled transfer: the claims' events and the host diagnosis go into the message. A DataVolume that
 * waits for a VDDK image (`AwaitingVDDK`) waits forever: that VM is canceled and fails at once.
 */
async function stalledVM(ctx: ReconcileContext, fx: TaskEffects, task: VMImportTask, source: VMImportSource | undefined, v: VMStatus, mig: KubeObject, plan: string, idleMs: number, percent: number): Promise<VMStatus> {
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
  const fc = await failureContext(ctx, fx, task, source, v.id);
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

/**
 * preserveStaticIPs of the task's Plans, from its NetworkMap (created before any Plan);
 * undefined when a converting task's NetworkMap cannot be read (the caller decides: false at create).
 */
async function staticIPsOf(ctx: ReconcileContext, fx: Pick<TaskEffects, 'mem'>, task: VMImportTask, networkMap: string): Promise<boolean | undefined> {
  if (task.spec.guestConversion !== true) return false;
  const nm = await getCached(ctx, fx.mem, GVRs.NetworkMap, task.metadata.namespace ?? '', networkMap);
  return nm ? preserveStaticIPsFor(true, nm) : undefined;
}

/**
 * Deletion: cancel and delete Migrations, delete Plans, maps, and every transfer DataVolume/claim and
 * scaffolding VirtualMachine of this task's Plans that was not handed off. Selection is by this task's
 * UID label and by the UIDs of this task's own Plans: nothing of another task is ever touched.
 */
export async function finalize(ctx: ReconcileContext, fx: Pick<TaskEffects, 'mem' | 'metrics' | 'budget'>, task: VMImportTask & KubeObject): Promise<Result> {
  const ns = task.metadata.namespace ?? '';
  const key = taskKey(task);
  fx.metrics.setStalled(key, []);
  const held = task.metadata.finalizers ?? [];
  const upstream = held.includes(UPSTREAM_TASK_FINALIZER);
  if (!held.includes(FINALIZER) && !upstream) return {};
  const mine = { [LABEL_TASK_UID]: task.metadata.uid ?? '' };
  // The volumes the task holds (its failed VMs', and those of a handoff it did not finish) leave its
  // custody first, so that nothing deleted below can release one under the wrong policy.
  const keep = await releaseCustody(ctx, task);
  let remaining = 0;
  if (upstream && ctx.installed(GVRs.Plan)) remaining += await cleanUpstreamTransferVolumes(ctx, task);
  if (ctx.installed(GVRs.Plan)) {
    const migrations = await listOptional(ctx, GVRs.Migration, ns, mine);
    const plans = await listOptional(ctx, GVRs.Plan, ns, mine);
    // Claims already being handed off belong to the handoff: deleted only once their volume is released
    // under its class's policy (above), never while it is kept for an admin.
    const handedOff = new Set(!keep ? [] : (task.status?.vms ?? []).flatMap((v) => readVMDisks(v).evidence.filter((d) => d.handoff && d.transferClaim).map((d) => d.transferClaim!)));
    for (const m of migrations) {
      // Deleting the active Migration cancels the run (docs/forklift-contract.md, Plan).
      if (await ctx.client.delete(GVRs.Migration, ns, m.metadata!.name!, { propagationPolicy: 'Background' })) remaining++;
    }
    for (const p of plans) {
      // Archived first, so that Forklift removes the VDDK Secret it left in this
      // namespace (v2.11.5 never does once the Plan is gone): src/forklift/retire.ts.
      const step = planDeletionStep(p, ctx.now());
      if (step !== 'delete') {
        if (step === 'archive') await ctx.client.patch(GVRs.Plan, ns, p.metadata!.name!, archivePatch(ctx.now())).catch((e: unknown) => { if (!isNotFound(e)) throw e; });
        remaining++;
        continue;
      }
      const uid = p.metadata?.uid ?? '';
      for (const gvr of [GVRs.VirtualMachine, GVRs.DataVolume, GVRs.PersistentVolumeClaim]) {
        for (const o of await listOptional(ctx, gvr, ns, { [PLAN_LABEL]: uid })) {
          const n = o.metadata?.name ?? '';
          if (n.startsWith(VMDISK_RELEASE_PREFIX) || handedOff.has(n)) continue;
          // The handoff's first step labels the volume with this task's UID before anything else; a
          // claim whose volume carries it is being handed off even if that status write was lost.
          const volume = gvr === GVRs.PersistentVolumeClaim && keep ? (o as { spec?: { volumeName?: string } }).spec?.volumeName : undefined;
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
  fx.mem.dropTask(key);
  fx.budget?.forget(task.metadata.uid);
  const finalizers = held.filter((f) => f !== FINALIZER && f !== UPSTREAM_TASK_FINALIZER);
  try {
    await ctx.client.patch(GVRs.VMImportTask, ns, key.name, { metadata: { finalizers, resourceVersion: task.metadata.resourceVersion } });
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
  return {};
}

/**
 * The cleanup Cozystack's own controller's finalizer stands for, on a task it served: the DataVolumes
 * Forklift created for that controller's Plans, which carry no owner and would retry the transfer after
 * the task is gone (cozystack/cozystack@4dc7d04ca:internal/migrationcontroller/vmimporttask_controller.go,
 * deleteTransferVolumes). Its Plans are found by its labels and kept only when owned by this very task
 * (a Plan is not a tenant's to write, and the owner reference rules out a namesake task's). Returns the
 * deletions made (0: nothing left).
 */
async function cleanUpstreamTransferVolumes(ctx: ReconcileContext, task: VMImportTask & KubeObject): Promise<number> {
  const ns = task.metadata.namespace ?? '';
  const uid = task.metadata.uid ?? '';
  let deleted = 0;
  const plans = await listOptional(ctx, GVRs.Plan, ns, { [UPSTREAM_LABEL_TASK_NAME]: task.metadata.name ?? '', [UPSTREAM_LABEL_TASK_NAMESPACE]: ns });
  for (const p of plans.filter((x) => (x.metadata?.ownerReferences ?? []).some((o) => o.uid === uid))) {
    for (const dv of await listOptional(ctx, GVRs.DataVolume, ns, { [PLAN_LABEL]: p.metadata?.uid ?? '' })) {
      if (await ctx.client.delete(GVRs.DataVolume, ns, dv.metadata!.name!, { propagationPolicy: 'Background' })) deleted++;
    }
  }
  return deleted;
}

/**
 * On the task's deletion: every volume the handoff marked as this task's, of a VM that did not succeed,
 * goes back to its storage class's reclaim policy (Delete when the class is gone or names none) — a
 * Released one is then deleted by its provisioner, so no Released volume of the task outlives it — unless
 * the task carries ANNOTATION_KEEP_VOLUMES=true, which keeps them on Retain for an admin. The handoff's
 * finalizer leaves the task's claims either way. A succeeded VM's volumes are the tenant's: untouched.
 * Returns whether the volumes are kept.
 */
async function releaseCustody(ctx: ReconcileContext, task: VMImportTask & KubeObject): Promise<boolean> {
  const uid = task.metadata.uid ?? '';
  const ns = task.metadata.namespace ?? '';
  const keep = task.metadata.annotations?.[ANNOTATION_KEEP_VOLUMES] === 'true';
  const succeeded = new Set((task.status?.vms ?? []).filter((v) => v.phase === 'Succeeded').map((v) => v.id));
  const pvs = (await ctx.client.listAll<KubeObject>(GVRs.PersistentVolume, undefined, { labelSelector: `${LABEL_TASK_UID}=${uid}` })).items;
  const classes = new Map<string, Promise<KubeObject | undefined>>();
  for (const pv of pvs) {
    if (keep || succeeded.has(pv.metadata?.labels?.[LABEL_VM_ID] ?? '')) continue;
    const spec = (pv.spec ?? {}) as { persistentVolumeReclaimPolicy?: string; storageClassName?: string };
    const className = spec.storageClassName || task.status?.storageClass || '';
    if (!classes.has(className)) classes.set(className, className ? ctx.client.get<KubeObject>(GVRs.StorageClass, undefined, className) : Promise.resolve(undefined));
    const policy = desiredReclaimPolicy(await classes.get(className)!);
    if (spec.persistentVolumeReclaimPolicy === policy) continue;
    await ctx.client.patch(GVRs.PersistentVolume, undefined, pv.metadata!.name!, { metadata: { resourceVersion: pv.metadata?.resourceVersion }, spec: { persistentVolumeReclaimPolicy: policy } });
  }
  for (const claim of (await ctx.client.listAll<KubeObject>(GVRs.PersistentVolumeClaim, ns, { labelSelector: `${LABEL_TASK_UID}=${uid}` })).items) {
    if (!(claim.metadata?.finalizers ?? []).includes(CLAIM_FINALIZER)) continue;
    await ctx.client.patch(GVRs.PersistentVolumeClaim, ns, claim.metadata!.name!, {
      metadata: { resourceVersion: claim.metadata?.resourceVersion, finalizers: (claim.metadata?.finalizers ?? []).filter((f) => f !== CLAIM_FINALIZER) },
    });
  }
  return keep;
}
