// What the task reconciler keeps in memory between passes. Nothing here is needed for correctness after a
// restart (status records every milestone, the objects the handoff wrote every step of it); it makes
// rates, stall clocks, diagnosis and the handoff's status writes cheaper, and routes watch events of
// objects that carry only Forklift's labels back to their task.
import { Expectations } from '../../runtime/expectations.ts';
import { keyString, type ObjectKey } from '../../runtime/reconciler.ts';
import type { ProgressSample } from '../../forklift/progress.ts';
import type { VMStatus } from '../../api/types.ts';

export class TaskMemory {
  /** Progress samples per task UID / VM id (rate and stall need the previous observation). */
  readonly samples = new Map<string, ProgressSample>();
  /**
   * The DataVolumes' own progress per task UID / VM id: a second witness of moving bytes, so a transfer
   * is never called Stalled while CDI still moves data that Forklift's pipeline does not show.
   */
  readonly dvSamples = new Map<string, ProgressSample>();
  /** Forklift's Plan UID → task key: transfer claims, DataVolumes and VMs carry only Forklift's labels. */
  readonly planOwners = new Map<string, ObjectKey>();
  /** source key → task keys referencing it: a source turning Ready wakes its tasks. */
  readonly sourceTasks = new Map<string, Set<string>>();
  /** Inventory facts kept for diagnosis (host of each VM), per task UID / VM id. */
  readonly vmHosts = new Map<string, string>();
  /** This reconciler's writes of tasks: the cache is read for a task only once it shows the last one. */
  readonly ownWrites = new Expectations();
  /** Its creates of Forklift objects (maps, Plans, Migrations), likewise. */
  readonly forkliftWrites = new Expectations();
  /** Task key → UID of the task last seen under it (to forget a deleted task's UID-keyed entries). */
  readonly taskUIDs = new Map<string, string>();
  /**
   * Task key → the VMs' status after handoff steps whose write was deferred (RECORDED_AT_ONCE), with the
   * resourceVersion of the task it was derived from. The next pass starts from it only while the task is
   * still at that version; otherwise (or after a restart) it starts from the status, which lags by those
   * steps — as after a crash, which the handoff resumes from the objects themselves.
   */
  private readonly deferred = new Map<string, { resourceVersion: string; vms: VMStatus[]; since: number }>();

  /** Holds the VMs' status of a pass whose write was deferred; `now` starts the clock of the first one. */
  defer(key: ObjectKey, resourceVersion: string | undefined, vms: VMStatus[], now = Date.now()): void {
    const k = keyString(key);
    const prev = this.deferred.get(k);
    if (resourceVersion) this.deferred.set(k, { resourceVersion, vms, since: prev?.resourceVersion === resourceVersion ? prev.since : now });
    else this.deferred.delete(k);
  }

  /** How long the task's status has been deferred (0: nothing is). */
  deferredFor(key: ObjectKey, resourceVersion: string | undefined, now = Date.now()): number {
    const e = this.deferred.get(keyString(key));
    return e && e.resourceVersion === resourceVersion ? now - e.since : 0;
  }

  /** The deferred VMs' status for the task at this version, if any; any other entry of the key is dropped. */
  deferredVMs(key: ObjectKey, resourceVersion: string | undefined): VMStatus[] | undefined {
    const k = keyString(key);
    const e = this.deferred.get(k);
    if (!e) return undefined;
    if (e.resourceVersion === resourceVersion) return e.vms;
    this.deferred.delete(k);
    return undefined;
  }

  /** The status was written: nothing is deferred any more. */
  recorded(key: ObjectKey): void {
    this.deferred.delete(keyString(key));
  }

  /** Remembers that the task reads this source (a source turning Ready wakes it). */
  sourceOf(key: ObjectKey, sourceName: string): void {
    const srcKey = keyString({ namespace: key.namespace, name: sourceName });
    let set = this.sourceTasks.get(srcKey);
    if (!set) this.sourceTasks.set(srcKey, (set = new Set()));
    set.add(key.name);
  }

  /** Drops the progress samples of one VM whose transfer is over. */
  transferOver(taskUID: string, vmId: string): void {
    this.samples.delete(`${taskUID}/${vmId}`);
    this.dvSamples.delete(`${taskUID}/${vmId}`);
  }

  /**
   * Everything kept for a task that is gone or finished: its progress samples and diagnosis facts, its
   * place among its source's tasks, its Plans' owner entries. A controller that runs for months keeps
   * only what its live tasks need.
   */
  dropTask(key: ObjectKey): void {
    const k = keyString(key);
    const uid = this.taskUIDs.get(k);
    if (uid) this.forget(uid);
    this.taskUIDs.delete(k);
    this.deferred.delete(k);
    const prefix = `${key.namespace}/`;
    for (const [sk, set] of this.sourceTasks) {
      if (!sk.startsWith(prefix)) continue;
      set.delete(key.name);
      if (!set.size) this.sourceTasks.delete(sk);
    }
    for (const [planUID, owner] of this.planOwners) if (owner.namespace === key.namespace && owner.name === key.name) this.planOwners.delete(planUID);
  }

  /** Drops the in-memory progress samples and diagnosis facts of a task that needs no more of them. */
  forget(taskUID: string): void {
    for (const m of [this.samples, this.dvSamples, this.vmHosts]) for (const k of m.keys()) if (k.startsWith(`${taskUID}/`)) m.delete(k);
  }

  sizes(): Record<string, number> {
    return {
      samples: this.samples.size,
      dvSamples: this.dvSamples.size,
      planOwners: this.planOwners.size,
      sourceTasks: this.sourceTasks.size,
      vmHosts: this.vmHosts.size,
      taskUIDs: this.taskUIDs.size,
      deferredStatus: this.deferred.size,
      taskExpectations: this.ownWrites.size(),
      forkliftExpectations: this.forkliftWrites.size(),
    };
  }
}
