// The client-side rate limit of a KubeClient: client-go's token bucket (k8s.io/client-go
// util/flowcontrol/throttle.go NewTokenBucketRateLimiter over golang.org/x/time/rate): the bucket starts
// full with `burst` tokens and refills at `qps` per second; every request — each retry and each watch open
// included, as client-go's rest.Request.tryThrottle does — takes one, and waits its turn when none is left.
//
// Turns go by priority, then by arrival (client-go's are by arrival alone). A request's priority is the
// work it serves (withRequestPriority, below): a VM one step from its end should not wait behind a queue of other
// VMs' first steps, which hold the limiter for seconds when a campaign saturates it. The limit itself is
// unchanged: the same requests go at the same rate, only their order differs. So that no request waits
// for ever behind a stream of more urgent ones, a request that has waited MAX_OVERTAKEN_MS goes next,
// whatever its priority.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface RateLimiterStats {
  /** Requests that had to wait for a token. */
  throttled: number;
  /** Total ms spent waiting. */
  waitedMs: number;
}

/**
 * The longest a request yields its turn to more urgent ones. A watch's reopen or a relist of an informer
 * (priority 0) held behind minutes of a campaign's handoff requests would leave its cache stale for as
 * long; a second is many turns at any configured rate, and short beside any watch timeout.
 */
export const MAX_OVERTAKEN_MS = 1_000;

interface Waiter {
  priority: number;
  /** Arrival order (ties of priority). */
  seq: number;
  since: number;
  resolve: (waitedMs: number) => void;
  reject: (e: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

export class TokenBucket {
  readonly qps: number;
  readonly burst: number;
  private tokens: number;
  private last: number;
  private readonly now: () => number;
  private readonly queue: Waiter[] = [];
  private seq = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  readonly stats: RateLimiterStats = { throttled: 0, waitedMs: 0 };

  constructor(qps: number, burst: number, now: () => number = () => performance.now()) {
    if (!(qps > 0) || !(burst >= 1)) throw new Error(`rate limit needs qps > 0 and burst >= 1 (got ${qps}, ${burst})`);
    this.qps = qps;
    this.burst = burst;
    this.now = now;
    this.tokens = burst;
    this.last = now();
  }

  private refill(t: number): void {
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
  }

  /** Requests waiting for a token now. */
  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Takes a token for a request of `priority` (higher goes first); resolves the ms it waited (0 = at
   * once). A request arriving while others wait queues behind those of its priority and above, even with
   * a token at hand. Rejects with the signal's reason when it aborts first (its turn goes to the next).
   */
  wait(signal?: AbortSignal, priority = 0): Promise<number> {
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
    const t = this.now();
    this.refill(t);
    if (this.queue.length === 0 && this.tokens >= 1) {
      this.tokens -= 1;
      return Promise.resolve(0);
    }
    this.stats.throttled++;
    return new Promise<number>((resolve, reject) => {
      const w: Waiter = { priority, seq: this.seq++, since: t, resolve, reject, signal, onAbort: undefined };
      if (signal) {
        w.onAbort = (): void => {
          const i = this.queue.indexOf(w);
          if (i >= 0) this.queue.splice(i, 1);
          reject(signal.reason ?? new Error('aborted'));
          this.schedule();
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      this.queue.push(w);
      this.schedule();
    });
  }

  /** The waiter whose turn is next: one overtaken for MAX_OVERTAKEN_MS first, else by priority, then arrival. */
  private next(t: number): number {
    let best = 0;
    for (let i = 1; i < this.queue.length; i++) {
      const a = this.queue[i]!;
      const b = this.queue[best]!;
      const aLate = t - a.since >= MAX_OVERTAKEN_MS;
      const bLate = t - b.since >= MAX_OVERTAKEN_MS;
      if (aLate !== bLate ? aLate : aLate ? a.seq < b.seq : a.priority !== b.priority ? a.priority > b.priority : a.seq < b.seq) best = i;
    }
    return best;
  }

  /** Hands out the tokens there are to the waiters whose turn it is, then sleeps until the next token. */
  private schedule(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const t = this.now();
    this.refill(t);
    while (this.queue.length && this.tokens >= 1) {
      const [w] = this.queue.splice(this.next(t), 1);
      this.tokens -= 1;
      if (w!.onAbort) w!.signal?.removeEventListener('abort', w!.onAbort);
      const waited = Math.max(0, t - w!.since);
      this.stats.waitedMs += waited;
      w!.resolve(waited);
    }
    if (!this.queue.length) return;
    const ms = ((1 - this.tokens) / this.qps) * 1000;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.schedule();
    }, Math.max(1, Math.ceil(ms)));
  }
}

const requestPriority = new AsyncLocalStorage<number>();

/**
 * Runs `fn` with every request it makes (through a limited KubeClient, awaited or not) at `priority`
 * in the client-side limiter's queue. Default 0.
 */
export function withRequestPriority<T>(priority: number, fn: () => T): T {
  return requestPriority.run(priority, fn);
}

/** The priority of the work running now (withRequestPriority), 0 outside any. */
export function currentRequestPriority(): number {
  return requestPriority.getStore() ?? 0;
}
