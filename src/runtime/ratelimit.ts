// The client-side rate limit of a KubeClient: client-go's token bucket (k8s.io/client-go
// util/flowcontrol/throttle.go NewTokenBucketRateLimiter over golang.org/x/time/rate): the bucket starts
// full with `burst` tokens and refills at `qps` per second; every request — each retry and each watch open
// included, as client-go's rest.Request.tryThrottle does — takes one, and waits its turn when none is left.
// Turns are first come, first served: a request that had to wait reserves the next token, so a later one
// cannot overtake it.

export interface RateLimiterStats {
  /** Requests that had to wait for a token. */
  throttled: number;
  /** Total ms spent waiting. */
  waitedMs: number;
}

export class TokenBucket {
  readonly qps: number;
  readonly burst: number;
  private tokens: number;
  private last: number;
  private readonly now: () => number;
  readonly stats: RateLimiterStats = { throttled: 0, waitedMs: 0 };

  constructor(qps: number, burst: number, now: () => number = () => performance.now()) {
    if (!(qps > 0) || !(burst >= 1)) throw new Error(`rate limit needs qps > 0 and burst >= 1 (got ${qps}, ${burst})`);
    this.qps = qps;
    this.burst = burst;
    this.now = now;
    this.tokens = burst;
    this.last = now();
  }

  /**
   * Takes a token; returns how long the caller must wait before using it (0 = at once). The bucket may go
   * negative: that is the queue of waiting callers, each with its own turn. Pure of timers.
   */
  reserve(): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  /** Gives back a token taken but not used (its request was cancelled while waiting). */
  cancel(): void {
    this.tokens = Math.min(this.burst, this.tokens + 1);
  }

  /**
   * Waits for a token. Resolves the ms waited; rejects with the signal's reason when it aborts first (the
   * token goes back).
   */
  async wait(signal?: AbortSignal): Promise<number> {
    const ms = this.reserve();
    if (ms <= 0) return 0;
    this.stats.throttled++;
    this.stats.waitedMs += ms;
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(done, ms);
      function done(): void {
        signal?.removeEventListener('abort', abort);
        resolve();
      }
      const abort = (): void => {
        clearTimeout(t);
        reject(signal!.reason ?? new Error('aborted'));
      };
      if (signal?.aborted) return abort();
      signal?.addEventListener('abort', abort, { once: true });
    }).catch((e: unknown) => {
      this.cancel();
      throw e;
    });
    return ms;
  }
}
