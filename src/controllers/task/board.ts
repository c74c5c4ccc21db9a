// One pass of a task over its VMs, concurrent where it writes: the statuses of the task's VMs as the pass
// has them so far (the board), the one writer of the task's status during that pass, and a bounded pool
// for the VMs' actions. A VM's phase change then shows in the task's status as soon as the pass observed
// it, not after every other VM's live reads: a 200-VM task is not a serial pass of 200 VMs' requests.
import type { VMStatus } from '../../api/types.ts';

/**
 * The VMs' statuses of one pass, and their writer. Writes are made one after another, each on the version
 * the last one returned (a status write carries its precondition); every request that arrives while one
 * is in flight is answered by the next, which writes the board as it is when it starts. So a VM that
 * records a step before its create (the handoff's announcement) finds it written when its `flush` returns,
 * and twenty VMs recording at once cost one or two writes, not twenty conflicts.
 */
export class StatusBoard {
  private readonly vms: VMStatus[];
  private tail: Promise<void> = Promise.resolve();
  private queued: Promise<void> | undefined;
  private startedAt = -Infinity;
  private readonly write: (vms: VMStatus[]) => Promise<void>;
  private readonly clock: () => number;

  constructor(vms: VMStatus[], write: (vms: VMStatus[]) => Promise<void>, clock: () => number = Date.now) {
    this.vms = [...vms];
    this.write = write;
    this.clock = clock;
  }

  set(k: number, vm: VMStatus): void {
    this.vms[k] = vm;
  }

  get(k: number): VMStatus {
    return this.vms[k]!;
  }

  list(): VMStatus[] {
    return [...this.vms];
  }

  /** Ms since the last write started (Infinity before the first). */
  sinceWrite(): number {
    return this.clock() - this.startedAt;
  }

  /** Writes the board; resolves once a write that started after this call has succeeded. */
  flush(): Promise<void> {
    if (this.queued) return this.queued;
    const next = this.tail.then(() => {
      this.queued = undefined;
      this.startedAt = this.clock();
      return this.write([...this.vms]);
    });
    this.queued = next;
    // A failed write fails its callers; the next request tries again on what the world then says.
    this.tail = next.catch(() => undefined);
    return next;
  }
}

/**
 * Runs `fn` over `items`, at most `n` at a time, in order of start; an item is started only while
 * `mayStart()` says so (the rest are returned unstarted, in order). Every started item is awaited; the
 * first error is thrown after all of them settled, so no write is left running behind a failed pass.
 */
export async function boundedPool<T>(items: T[], n: number, fn: (x: T) => Promise<void>, mayStart: () => boolean = () => true): Promise<T[]> {
  const queue = [...items];
  const unstarted: T[] = [];
  let error: { e: unknown } | undefined;
  const worker = async (): Promise<void> => {
    for (let x = queue.shift(); x !== undefined; x = queue.shift()) {
      if (error || !mayStart()) {
        unstarted.push(x, ...queue.splice(0));
        return;
      }
      try {
        await fn(x);
      } catch (e) {
        error ??= { e };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(n, queue.length)) }, worker));
  if (error) throw error.e;
  // Items handed back by several workers: in their original order.
  const left = new Set(unstarted);
  return items.filter((x) => left.has(x));
}
