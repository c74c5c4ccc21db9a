// What the task reconciler keeps in memory between passes. Nothing here is needed for correctness after a
// restart (status records every milestone, the objects the handoff wrote every step of it); it makes
// rates, stall clocks and diagnosis cheaper, and routes watch events of
// objects that carry only Forklift's labels back to their task.
import { Expectations } from '../../runtime/expectations.ts';
import { keyString, type ObjectKey } from '../../runtime/reconciler.ts';
import type { ProgressSample } from '../../forklift/progress.ts';

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
      taskExpectations: this.ownWrites.size(),
      forkliftExpectations: this.forkliftWrites.size(),
    };
  }
}
