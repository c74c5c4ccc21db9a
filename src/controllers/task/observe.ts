// Observation for the task reconciler: everything one pass decides on, read afresh — from the informer
// caches never behind this controller's own writes, and from the API server wherever an absence would
// fail a VM. Reads only; the one thing it keeps is the progress samples (memory.ts) a rate needs.
import { LABEL_TASK_UID, LABEL_VM_ID, VMDISK_RELEASE_PREFIX } from '../../api/labels.ts';
import type { VMImportTask, VMStatus } from '../../api/types.ts';
import { readVMDisks } from '../../api/disks.ts';
import { claimsPendingAfterCopy, engineSucceededWithoutOutput } from '../../forklift/failures.ts';
import { readVMMigration } from '../../forklift/migration.ts';
import { conditionsOf, readPlanVerdict } from '../../forklift/plan.ts';
import { advanceProgress, dataVolumeProgress, restoreSample, type DataVolumeLike } from '../../forklift/progress.ts';
import { GVRs, type GVR } from '../../runtime/gvr.ts';
import { isNotServed, type KubeObject } from '../../runtime/kube.ts';
import type { ObjectKey, ReconcileContext } from '../../runtime/reconciler.ts';
import { importMode, taskCutover } from '../../forklift/warm.ts';
import { copiedEarlier, runIsRunning, stampOf, type VMObservation } from './decide.ts';
import type { TaskMemory } from './memory.ts';

export const VM_ID_LABEL = 'vmID';
export const MIGRATION_LABEL = 'migration';
export const PLAN_LABEL = 'plan';

export function labelSel(l: Record<string, string>): string {
  return Object.entries(l)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

export function taskKey(t: VMImportTask): ObjectKey {
  return { namespace: t.metadata.namespace ?? '', name: t.metadata.name ?? '' };
}

/**
 * One of this task's own Forklift objects (deterministic name, our labels) from the informer cache,
 * never behind our own create. Absent from a synced cache reads as absent — the caller only creates on
 * that (AlreadyExists then reads the server), and confirms live before failing a VM on it. Without a
 * cache (kind not installed or not synced yet) the API server answers; not installed reads as absent.
 */
export async function getCached(ctx: ReconcileContext, mem: TaskMemory, gvr: GVR, ns: string, name: string): Promise<KubeObject | undefined> {
  const c = ctx.cache(gvr);
  if (!c) return await ctx.client.get(gvr, ns, name);
  return await mem.forkliftWrites.get(ctx, gvr, ns, name, { trustAbsence: true });
}

/**
 * Lists objects of a kind by labels. With `preferCache`, a synced informer cache answers when it holds
 * matches; an empty answer is confirmed by the API server, because decisions taken on absence
 * ("Forklift produced nothing") must not rest on a cache that has not seen a just-created object —
 * unless `trustCacheAbsence` says no decision rests on it.
 */
export async function listOptional(ctx: ReconcileContext, gvr: GVR, ns: string, labels: Record<string, string>, o: { preferCache?: boolean; trustCacheAbsence?: boolean } = {}): Promise<KubeObject[]> {
  if (o.preferCache) {
    const c = ctx.cache(gvr);
    const hit = c?.hasSynced() ? c.list(ns, labels) : undefined;
    if (hit?.length || (hit && o.trustCacheAbsence)) return hit;
  }
  // An optional kind discovery does not see installed is asked once (a probe); one it sees installed is
  // retried on a bare 404 like any read.
  const probe = !!gvr.optional && !ctx.installed(gvr);
  try {
    return (await ctx.client.list(gvr, ns, { labelSelector: labelSel(labels), probe })).items;
  } catch (e) {
    // Not served and not installed: nothing of the kind exists. Not served while discovery says it is
    // installed is a server not ready for it (a kube-apiserver restarting answers custom resources a bare
    // 404 until its CRD informer syncs): decisions taken on absence ("Forklift produced nothing", "no
    // DataVolume left to delete") must not rest on that, so the pass fails and is retried.
    if (probe && isNotServed(e)) return [];
    throw e;
  }
}

/** The raw objects an action needs beside the observation (the Plan a Migration is owned by, ...). */
export interface VMObjects {
  plan?: KubeObject;
  migration?: KubeObject;
  /** The scaffolding VirtualMachine Forklift built (once it says Succeeded). */
  forkliftVM?: KubeObject;
  /** Forklift's transfer claims of this VM (once it says Succeeded). */
  transferClaims: KubeObject[];
}

export interface ObservedVM {
  observation: VMObservation;
  objects: VMObjects;
}

/** Observes one VM of a task: its Plan, Migration, run, moving bytes and, once Forklift succeeded, its outputs. */
export async function observeVM(ctx: ReconcileContext, mem: TaskMemory, task: VMImportTask, v0: VMStatus, o: { now: Date; stallAfterMs: number; migrationName: string }): Promise<ObservedVM> {
  const ns = task.metadata.namespace ?? '';
  const started = v0.timestamps?.started;
  const observation: VMObservation = { status: v0, migrationName: o.migrationName, now: o.now, stallAfterMs: o.stallAfterMs, mode: importMode(task), cutoverAt: taskCutover(task) };
  const objects: VMObjects = { transferClaims: [] };
  let plan = await getCached(ctx, mem, GVRs.Plan, ns, v0.plan ?? '');
  if (!plan && started) plan = await ctx.client.get(GVRs.Plan, ns, v0.plan ?? ''); // absence that fails the VM: confirmed live
  if (!plan) return { observation, objects };
  objects.plan = plan;
  observation.plan = { verdict: readPlanVerdict(plan) };
  let mig = await getCached(ctx, mem, GVRs.Migration, ns, o.migrationName);
  if (!mig && started) mig = await ctx.client.get(GVRs.Migration, ns, o.migrationName); // absence that fails the VM: confirmed live
  if (!mig) return { observation, objects };
  objects.migration = mig;
  const migCutover = (mig.spec as { cutover?: string } | undefined)?.cutover;
  observation.migration = { creationTimestamp: mig.metadata?.creationTimestamp, conditions: conditionsOf(mig), cutover: migCutover ? stampOf(migCutover, o.now) : undefined };
  const run = readVMMigration(mig, v0.id) ?? readVMMigration(plan, v0.id);
  if (!run) return { observation, objects };
  observation.run = run;

  // progress: from Forklift's DiskTransfer step; without one (an unnamed step, or DiskTransferV2v), from
  // the DataVolumes' own progress, which also witnesses moving bytes the step does not show.
  const now = o.now.getTime();
  const sKey = `${task.metadata.uid}/${v0.id}`;
  const running = runIsRunning(run);
  const dv = running ? await dataVolumesMoved(ctx, mem, ns, mig, v0, sKey, now) : undefined;
  if (dv) observation.dataVolumeIdleMs = dv.idleMs;
  const transfer = run.transfer ?? dv?.transfer;
  if (transfer && transfer.totalBytes > 0) {
    // The in-memory sample (ms precision); after a restart, the one the last status write recorded.
    const pv = advanceProgress(mem.samples.get(sKey) ?? restoreSample(v0), { bytesDone: transfer.doneBytes, bytesTotal: transfer.totalBytes }, now);
    mem.samples.set(sKey, pv.sample);
    observation.transfer = {
      totalBytes: transfer.totalBytes,
      doneBytes: transfer.doneBytes,
      percent: pv.percent,
      bytesPerSecond: pv.bytesPerSecond,
      etaSeconds: pv.etaSeconds,
      lastChangeAt: pv.sample.lastChangeAt,
      idleMs: pv.idleMs,
      converting: pv.converting,
      fromDataVolumes: !run.transfer,
    };
  } else if (running && !copiedEarlier(v0, run)) {
    // Before the DiskTransfer step reports sizes: a stall here is measured from the start.
    const pv = advanceProgress(mem.samples.get(sKey), { bytesDone: 0, bytesTotal: 0 }, now);
    const since = Date.parse(started ?? mig.metadata?.creationTimestamp ?? '') || now;
    if (!mem.samples.has(sKey)) mem.samples.set(sKey, { ...pv.sample, lastChangeAt: since });
    observation.idleBeforeBytesMs = now - mem.samples.get(sKey)!.lastChangeAt;
  }

  if (run.succeeded && !run.failed && !run.canceled) {
    // Forklift says Succeeded: outputs must exist (the retry trap), unless the handoff already consumed them.
    const sel = { [MIGRATION_LABEL]: mig.metadata?.uid ?? '', [VM_ID_LABEL]: v0.id };
    // Once the handoff has recorded a step, it consumes the transfer claims and the scaffolding VM: their
    // absence is expected, and the cache answers alone. Before that an absence is confirmed by the API
    // server, because "Forklift produced nothing" fails the VM.
    const evidence = readVMDisks(v0).evidence;
    const startedByStatus = evidence.some((d) => d.handoff) || !!v0.vmInstance;
    const forkliftVMs = await listOptional(ctx, GVRs.VirtualMachine, ns, sel, { preferCache: true, trustCacheAbsence: startedByStatus });
    const claims = (await listOptional(ctx, GVRs.PersistentVolumeClaim, ns, sel, { preferCache: true, trustCacheAbsence: startedByStatus })).filter((c) => !c.metadata?.name?.startsWith(VMDISK_RELEASE_PREFIX));
    objects.forkliftVM = forkliftVMs[0];
    objects.transferClaims = claims;
    const succeededWithoutOutput = engineSucceededWithoutOutput({ engineSucceeded: true, forkliftVM: forkliftVMs[0], transferClaims: claims, expectedDisks: evidence.length });
    // The handoff marks the PVs it has started on: a crash between its steps and our status write
    // must not read as "nothing produced". Asked only when it matters.
    const handoffStarted =
      startedByStatus ||
      (succeededWithoutOutput && (await ctx.client.list(GVRs.PersistentVolume, undefined, { labelSelector: labelSel({ [LABEL_TASK_UID]: task.metadata.uid ?? '', [LABEL_VM_ID]: v0.id }), limit: 1 })).items.length > 0);
    // claims still Pending after the copy (src/forklift/failures.ts claimsPendingAfterCopy).
    observation.outputs = { handoffStarted, succeededWithoutOutput, pendingClaims: claimsPendingAfterCopy(claims) };
  }
  return { observation, objects };
}

/**
 * The VM's DataVolumes as CDI reports them: their bytes as a transfer, and how long since they last
 * moved (the second witness against a false stall). Read from the cache; Forklift labels each with its
 * migration and VM. Undefined when no DataVolume states a size yet.
 */
async function dataVolumesMoved(ctx: ReconcileContext, mem: TaskMemory, ns: string, mig: KubeObject, v0: VMStatus, sKey: string, now: number): Promise<{ transfer: { totalBytes: number; doneBytes: number }; idleMs: number } | undefined> {
  const dvs = await listOptional(ctx, GVRs.DataVolume, ns, { [MIGRATION_LABEL]: mig.metadata?.uid ?? '', [VM_ID_LABEL]: v0.id }, { preferCache: true, trustCacheAbsence: true });
  const p = dataVolumeProgress(dvs as DataVolumeLike[]);
  if (!p) return undefined;
  // After a restart the DataVolumes are assumed still since the progress the last status write recorded.
  const restored = restoreSample(v0);
  const prev = mem.dvSamples.get(sKey) ?? (restored ? { ...restored, bytesDone: p.bytesDone, bytesTotal: p.bytesTotal } : undefined);
  const view = advanceProgress(prev, p, now);
  mem.dvSamples.set(sKey, view.sample);
  return { transfer: { totalBytes: p.bytesTotal, doneBytes: p.bytesDone }, idleMs: view.idleMs };
}
