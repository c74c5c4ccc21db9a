// A rate-limited work queue with client-go semantics (k8s.io/client-go/util/workqueue):
// - de-duplication: a key waiting in the queue is held once however often it is added;
// - a key being processed is never handed to a second worker; if it is added meanwhile it is marked dirty
//   and queued again when the first worker calls done();
// - per-key exponential backoff on failure combined (max) with an overall token bucket;
// - addAfter for timed requeues; forget resets a key's failure count; shutdown wakes every waiter.
// One deliberate difference (option `supersedeTimedAdds`, on for the controller): when a worker takes a
// key, that key's pending timed add is dropped. The reconcile about to run observes the world later than
// the one that asked for the timed look, and its own result schedules the next one; in client-go the old
// timer still fires and costs a second, redundant reconcile of every key that was also woken by an event.
// Timed adds live on a timer wheel (timerwheel.ts), shared by every queue of the process: one native timer
// for all pending deadlines, instead of one per key.
import { TimerWheel } from './timerwheel.ts';

/** The process's wheel, unless a queue is given its own (tests, the manager with its wake-up metric). */
export const sharedTimerWheel = new TimerWheel();

export interface RateLimiter {
  /** Delay before `key` may be processed again; counts as one failure. */
  when(key: string): number;
  /** Clears the key's failure history. */
  forget(key: string): void;
  numRequeues(key: string): number;
}

/** base·2^failures, capped. */
export class ItemExponentialFailureRateLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();
  private readonly baseMs: number;
  private readonly maxMs: number;
  constructor(baseMs: number, maxMs: number) {
    this.baseMs = baseMs;
    this.maxMs = maxMs;
  }
  when(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    // 2^n overflows to Infinity for large n; min() keeps it at the cap.
    return Math.min(this.baseMs * Math.pow(2, n), this.maxMs);
  }
  forget(key: string): void {
    this.failures.delete(key);
  }
  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

/** Overall token bucket: `qps` steady rate, `burst` tokens. Tokens may go negative (reservations). */
export class BucketRateLimiter implements RateLimiter {
  private tokens: number;
  private last: number;
  private readonly qps: number;
  private readonly burst: number;
  private readonly now: () => number;
  constructor(qps: number, burst: number, now: () => number = () => performance.now()) {
    this.qps = qps;
    this.burst = burst;
    this.tokens = burst;
    this.now = now;
    this.last = now();
  }
  when(_key: string): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }
  forget(_key: string): void {}
  numRequeues(_key: string): number {
    return 0;
  }
}

/** The worst (longest) delay of several limiters. */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: RateLimiter[];
  constructor(...limiters: RateLimiter[]) {
    this.limiters = limiters;
  }
  when(key: string): number {
    return Math.max(...this.limiters.map((l) => l.when(key)));
  }
  forget(key: string): void {
    for (const l of this.limiters) l.forget(key);
  }
  numRequeues(key: string): number {
    return Math.max(...this.limiters.map((l) => l.numRequeues(key)));
  }
}

// client-go's DefaultControllerRateLimiter shape: 5 ms doubling per key — a failing object is retried
// quickly at first — and 10 qps / burst 100 overall so a storm of failures across many keys cannot exceed
// a steady request rate. The per-key cap is 60 s, not client-go's 1000 s: after an outage of the API server
// or the inventory, client-go's cap left an object untouched for up to 16 minutes after the cause was gone;
// one look a minute per failing object costs little, and the overall bucket still bounds the total.
export const BACKOFF_BASE_MS = 5;
export const BACKOFF_MAX_MS = 60_000;
export const BUCKET_QPS = 10;
export const BUCKET_BURST = 100;

export function defaultControllerRateLimiter(): RateLimiter {
  return new MaxOfRateLimiter(new ItemExponentialFailureRateLimiter(BACKOFF_BASE_MS, BACKOFF_MAX_MS), new BucketRateLimiter(BUCKET_QPS, BUCKET_BURST));
}

export interface QueueMetrics {
  depth(n: number): void;
  add(): void;
  retry(): void;
  latency(seconds: number): void;
  workDuration(seconds: number): void;
}

let queueIds = 0;

export class WorkQueue {
  readonly name: string;
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly addedAt = new Map<string, number>();
  private readonly startedAt = new Map<string, number>();
  private readonly waiters: Array<(k: string | undefined) => void> = [];
  /** Timed adds pending, by key (their deadlines are on the wheel, under `wheelKey`). */
  private readonly timers = new Map<string, { at: number }>();
  private readonly wheel: TimerWheel;
  private readonly limiter: RateLimiter;
  private readonly metrics: QueueMetrics | undefined;
  private readonly supersede: boolean;
  private down = false;

  constructor(name: string, o: { rateLimiter?: RateLimiter; metrics?: QueueMetrics; supersedeTimedAdds?: boolean; wheel?: TimerWheel } = {}) {
    this.name = name;
    this.wheel = o.wheel ?? sharedTimerWheel;
    this.supersede = o.supersedeTimedAdds ?? false;
    this.limiter = o.rateLimiter ?? defaultControllerRateLimiter();
    this.metrics = o.metrics;
    // Publish the empty queue at once: an absent series reads as "no data", not as "idle".
    this.metrics?.depth(0);
  }

  add(key: string): void {
    if (this.down) return;
    if (this.dirty.has(key)) return;
    this.metrics?.add();
    this.dirty.add(key);
    if (this.processing.has(key)) return; // re-queued by done()
    this.push(key);
  }

  private push(key: string): void {
    this.addedAt.set(key, performance.now());
    const w = this.waiters.shift();
    if (w) {
      this.take(key);
      w(key);
      return;
    }
    this.queue.push(key);
    this.metrics?.depth(this.queue.length);
  }

  private take(key: string): void {
    if (this.supersede) {
      if (this.timers.delete(key)) this.wheel.cancel(this.wheelKey(key));
    }
    this.processing.add(key);
    this.dirty.delete(key);
    const t = this.addedAt.get(key);
    if (t !== undefined) this.metrics?.latency((performance.now() - t) / 1000);
    this.addedAt.delete(key);
    this.startedAt.set(key, performance.now());
  }

  /**
   * Adds `key` after `ms`; of several pending timed adds of one key the earliest wins. `onFire` runs when
   * this add really queues the key (not when it is superseded or loses to an earlier one).
   */
  addAfter(key: string, ms: number, onFire?: () => void): void {
    if (this.down) return;
    if (ms <= 0) {
      onFire?.();
      this.add(key);
      return;
    }
    const at = performance.now() + ms;
    const prev = this.timers.get(key);
    if (prev && prev.at <= at) return;
    this.timers.set(key, { at });
    this.wheel.set(this.wheelKey(key), ms, () => {
      this.timers.delete(key);
      onFire?.();
      this.add(key);
    });
  }

  /** Keys on the shared wheel: one namespace per queue (`this` identity, not the name, which may repeat). */
  private readonly wheelPrefix = `${++queueIds}\u0000`;
  private wheelKey(key: string): string {
    return this.wheelPrefix + key;
  }

  /** Re-adds after the rate limiter's delay (one more failure for the key). */
  addRateLimited(key: string, onFire?: () => void): void {
    this.metrics?.retry();
    this.addAfter(key, this.limiter.when(key), onFire);
  }

  forget(key: string): void {
    this.limiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.limiter.numRequeues(key);
  }

  /** Waits for the next key; undefined once shut down. The caller must call done(key). */
  get(): Promise<string | undefined> {
    if (this.down) return Promise.resolve(undefined);
    const key = this.queue.shift();
    if (key !== undefined) {
      this.metrics?.depth(this.queue.length);
      this.take(key);
      return Promise.resolve(key);
    }
    return new Promise((r) => this.waiters.push(r));
  }

  done(key: string): void {
    this.processing.delete(key);
    const t = this.startedAt.get(key);
    if (t !== undefined) this.metrics?.workDuration((performance.now() - t) / 1000);
    this.startedAt.delete(key);
    if (this.dirty.has(key) && !this.down) this.push(key);
  }

  len(): number {
    return this.queue.length;
  }

  /** A timed add of `key` is pending. */
  hasTimedAdd(key: string): boolean {
    return this.timers.has(key);
  }

  isProcessing(key: string): boolean {
    return this.processing.has(key);
  }

  shutdown(): void {
    this.down = true;
    for (const k of this.timers.keys()) this.wheel.cancel(this.wheelKey(k));
    this.timers.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  get shuttingDown(): boolean {
    return this.down;
  }
}
