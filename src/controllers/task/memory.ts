// What the task reconciler keeps in memory between passes. Nothing here is needed for correctness after a
// restart (status records every milestone, the objects the handoff wrote every step of it); it makes
// rates, stall clocks and diagnosis cheaper. Watch events are routed through the caches' indexes
// (reconciler.ts), never through this.
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
  /** Inventory facts kept for diagnosis (host of each VM), per task UID / VM id. */
  readonly vmHosts = new Map<string, string>();
  /** This reconciler's writes of tasks: the cache is read for a task only once it shows the last one. */
  readonly ownWrites = new Expectations();
  /** Its creates of Forklift objects (maps, Plans, Migrations), likewise. */
  readonly forkliftWrites = new Expectations();
  /** Task key → UID of the task last seen under it (to forget a deleted task's UID-keyed entries). */
  readonly taskUIDs = new Map<string, string>();
  /** Per task UID: the VMs (by index) whose action the last pass did not start; they go first next time. */
  private readonly behind = new Map<string, number[]>();

  /** The VMs (by index) the last pass of a task did not reach (lost on a restart: the order is only fairness). */
  behindOf(taskUID: string): ReadonlySet<number> {
    return new Set(this.behind.get(taskUID) ?? []);
  }

  /** Records the VMs a pass did not reach. */
  deferred(taskUID: string, ks: number[]): void {
    if (ks.length) this.behind.set(taskUID, ks);
    else this.behind.delete(taskUID);
  }

  /** Drops the progress samples of one VM whose transfer is over. */
  transferOver(taskUID: string, vmId: string): void {
    this.samples.delete(`${taskUID}/${vmId}`);
    this.dvSamples.delete(`${taskUID}/${vmId}`);
  }

  /**
   * Everything kept for a task that is gone or finished: its progress samples and diagnosis facts. A controller that runs for months keeps
   * only what its live tasks need. Returns the UID the task was last seen with.
   */
  dropTask(key: ObjectKey): string | undefined {
    const k = keyString(key);
    const uid = this.taskUIDs.get(k);
    if (uid) this.forget(uid);
    this.taskUIDs.delete(k);
    return uid;
  }

  /** Drops the in-memory progress samples and diagnosis facts of a task that needs no more of them. */
  forget(taskUID: string): void {
    for (const m of [this.samples, this.dvSamples, this.vmHosts]) for (const k of m.keys()) if (k.startsWith(`${taskUID}/`)) m.delete(k);
    this.behind.delete(taskUID);
  }

  sizes(): Record<string, number> {
    return {
      samples: this.samples.size,
      dvSamples: this.dvSamples.size,
      vmHosts: this.vmHosts.size,
      taskUIDs: this.taskUIDs.size,
      behind: this.behind.size,
      taskExpectations: this.ownWrites.size(),
      forkliftExpectations: this.forkliftWrites.size(),
    };
  }
}
