// The finishing lane of a task's pass. A VM whose outputs have all deployed is one handoff call from its
// end (the scaffolding VM deleted, the claims released, Succeeded), and its tenant waits on that call.
// In a long pass — a 200-VM task's runs for seconds — the watch event that says so only queues the task
// for the next pass, and the VM showed Succeeded 3.4 s after its VMInstance turned Ready (p95,
// bench/status-latency.ts). The lane lets a second reconciler, woken by that same event, take that last
// call while the pass runs, and put its result on the running pass's own board: one writer of the task's
// status, one resourceVersion, one "Imported" Event.
//
// Per VM, one lane acts at a time, and the main pass never acts on a decision older than the finisher's:
// the main pass holds a VM for the length of its action, and skips one the finisher held in this pass
// (its decision was taken before the finisher's); the finisher waits for the main pass's action on a VM
// to end (the VMInstance that action created may be Ready before the action returns), then takes it if
// it is still one call from its end and not terminal on the board. The main pass closes the lane before
// its last write, and waits for the finisher's actions in flight.
import type { VMStatus } from '../../api/types.ts';
import { readVMDisks } from '../../api/disks.ts';
import { releaseState } from '../../cozystack/release.ts';
import type { KubeObject } from '../../runtime/kube.ts';
import { diskStepsLeft } from '../handoff/steps.ts';
import { isTerminalPhase } from './status.ts';

type LaneState = 'starting' | 'open' | 'closed';

/**
 * One pass's lane: its state, the VMs each side claimed, the finisher's work in flight, and what the
 * finisher needs of the pass (`P`: its board, task, source...), given when the pass opens the lane.
 */
export class PassLane<P> {
  readonly uid: string;
  private state: LaneState = 'starting';
  private pass: P | undefined;
  /** VMs the main pass is acting on, each with what its action's end resolves. */
  private readonly byMain = new Map<number, { ended: Promise<void>; end: () => void }>();
  private readonly byFinisher = new Set<number>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly settled: Promise<void>;
  private settle!: () => void;

  constructor(uid: string) {
    this.uid = uid;
    this.settled = new Promise<void>((r) => (this.settle = r));
  }

  /** The pass's VMs are observed and its actions about to start: the finisher may act on them. */
  open(pass: P): void {
    if (this.state !== 'starting') return;
    this.pass = pass;
    this.state = 'open';
    this.settle();
  }

  /**
   * Resolves with the pass once the lane opened, or undefined once it closed without (a pass that ended
   * before its actions: waiting on its source, or failed), so a finisher woken early waits on the pass
   * instead of polling it.
   */
  async opened(): Promise<P | undefined> {
    await this.settled;
    return this.state === 'open' ? this.pass : undefined;
  }

  /** The pass is ending: the finisher starts nothing more on it. */
  isClosed(): boolean {
    return this.state === 'closed';
  }

  /**
   * The main pass is about to act on VM `k`: false when the finisher holds or held it in this pass (the
   * main pass's decision is older than the finisher's). Until `mainEnded(k)` the finisher leaves it.
   */
  claimForMain(k: number): boolean {
    if (this.byFinisher.has(k) || this.byMain.has(k)) return false;
    let end!: () => void;
    const ended = new Promise<void>((r) => (end = r));
    this.byMain.set(k, { ended, end });
    return true;
  }

  /** The main pass's action on VM `k` ended (its result is on the board). */
  mainEnded(k: number): void {
    const m = this.byMain.get(k);
    this.byMain.delete(k);
    m?.end();
  }

  /** Resolves once the main pass is not acting on VM `k`. */
  async mainSettled(k: number): Promise<void> {
    await this.byMain.get(k)?.ended;
  }

  /**
   * The finisher would act on VM `k`, whose status on the board is `vm`: true (and claimed) only while the
   * lane is open, for a VM the main pass is not acting on, the finisher did not hold in this pass, and
   * not ended.
   */
  claimForFinisher(k: number, vm: VMStatus | undefined): boolean {
    if (this.state !== 'open' || !vm || isTerminalPhase(vm.phase) || this.byMain.has(k) || this.byFinisher.has(k)) return false;
    this.byFinisher.add(k);
    return true;
  }

  /** The finisher claimed VM `k` and found nothing of its own to do: the main pass may act on it. */
  release(k: number): void {
    this.byFinisher.delete(k);
  }

  /** Runs the finisher's work on the lane: the pass's close waits for it. */
  track<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    const drop = (): void => void this.inFlight.delete(work);
    work.then(drop, drop);
    return work;
  }

  /** No finisher work starts from now on; resolves once what was in flight settled (errors are its own). */
  async close(): Promise<void> {
    this.state = 'closed';
    this.settle();
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }
}

/** An output as the caches hold it, by kind and name (undefined when the cache does not hold it). */
export type CachedOutput = (kind: 'VMDisk' | 'VMInstance', name: string) => KubeObject | undefined;

/**
 * A VM the finisher may take: Creating, the VMInstance recorded, every disk's handoff done, and every
 * output — each VMDisk and the VMInstance — deployed as the caches read them. Anything short of that is
 * the main pass's, whose observation and live reads decide it. Pure.
 */
export function finishable(v: VMStatus | undefined, cached: CachedOutput): boolean {
  if (!v || v.phase !== 'Creating' || !v.vmInstance) return false;
  const disks = readVMDisks(v).evidence;
  if (!disks.length || disks.some((d) => diskStepsLeft(d.handoff) > 0)) return false;
  const outputs = [...disks.map((d) => cached('VMDisk', d.vmDisk)), cached('VMInstance', v.vmInstance)];
  return outputs.every((o) => releaseState(o).state === 'deployed');
}

/**
 * The VMs of a board worth the finisher's look: not ended, and their VMInstance (under the name recorded,
 * or the VM's own name, which the handoff gives it) deployed in the cache. Their status may not record
 * the VMInstance yet — the main pass's action that created it may still run — so the finisher waits for
 * that action before it asks `finishable`. Pure.
 */
export function finishCandidates(vms: readonly VMStatus[], cached: CachedOutput): number[] {
  const out: number[] = [];
  vms.forEach((v, k) => {
    if (isTerminalPhase(v.phase) || !v.plan) return;
    if (releaseState(cached('VMInstance', v.vmInstance ?? v.name)).state === 'deployed') out.push(k);
  });
  return out;
}
