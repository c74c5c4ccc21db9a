// Leader election on a coordination.k8s.io/v1 Lease, the client-go algorithm:
// - the holder renews every retry period; if it cannot renew within the renew deadline it steps down;
// - a candidate takes the lease once it has seen the same record unchanged for a full lease duration
//   (measured on its own clock, so clock skew between nodes does not matter);
// - a clean stop releases the lease (empty holder) so the standby takes over at once.
// Fencing (client-go's contract, enforced rather than hoped for): the holder may act only while its last
// successful renewal *started* less than renewDeadline ago (`mayAct`). A candidate waits a full lease
// duration from when it saw our last renewal, which is after that start, and renewDeadline < leaseDuration:
// so while mayAct() is true nobody else can hold the lease. A watchdog steps down at the deadline even
// while a renewal hangs, and the work client checks mayAct() right before each write goes on the wire
// (kube.ts), so a process frozen (SIGSTOP, a long GC pause, a suspended VM) wakes up unable to write —
// but for the one write it may have been putting on the wire at the instant it froze, which it finishes
// on waking (no check in the process can stop a system call under way; preconditions on the writes that
// cannot be undone make that one harmless).
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { GVRs } from './gvr.ts';
import { isAlreadyExists, isConflict, type KubeClient, type KubeObject } from './kube.ts';
import { sleep } from './informer.ts';

// client-go defaults. Lease 15 s: a dead leader is replaced within ~15 s. Renew deadline 10 s < lease so
// a partitioned leader stops reconciling before anyone else may start (no two leaders). Retry 2 s: several
// renew attempts fit in the deadline, so one slow request does not cost the lease.
export const LEASE_DURATION_MS = 15_000;
export const RENEW_DEADLINE_MS = 10_000;
export const RETRY_PERIOD_MS = 2_000;

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}
interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

export interface LeaderElectorOptions {
  namespace: string;
  name: string;
  identity?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log?: Logger;
  onStartedLeading: () => void;
  /** Called once when leadership is lost (not on a clean stop()). */
  onStoppedLeading: () => void;
}

/** hostname_pid_random: unique per process, and names the process in logs and the audit log. */
export function defaultIdentity(): string {
  return `${hostname()}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

function microTime(d: Date): string {
  // MicroTime: RFC 3339 with microseconds.
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  readonly identity: string;
  private readonly client: KubeClient;
  private readonly o: Required<Omit<LeaderElectorOptions, 'log' | 'identity'>> & { log?: Logger };
  private observed: { record: string; at: number } | undefined;
  private leading = false;
  /** performance.now() when the last successful acquire/renew request started (monotonic clock). */
  private renewedAt = 0;
  private watchdog: NodeJS.Timeout | undefined;
  private abort = new AbortController();
  private running: Promise<void> | undefined;

  constructor(client: KubeClient, opts: LeaderElectorOptions) {
    this.client = client;
    this.identity = opts.identity ?? defaultIdentity();
    this.o = {
      ...opts,
      leaseDurationMs: opts.leaseDurationMs ?? LEASE_DURATION_MS,
      renewDeadlineMs: opts.renewDeadlineMs ?? RENEW_DEADLINE_MS,
      retryPeriodMs: opts.retryPeriodMs ?? RETRY_PERIOD_MS,
    };
    if (!(this.o.renewDeadlineMs < this.o.leaseDurationMs)) throw new Error('leader election: the renew deadline must be shorter than the lease duration');
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** True while this process leads and renewed within the renew deadline: the only time it may write. */
  mayAct(): boolean {
    return this.leading && performance.now() - this.renewedAt < this.o.renewDeadlineMs;
  }

  /** Steps down once (leadership lost): the caller stops its work. */
  private lose(why: string): void {
    if (!this.leading) return;
    this.leading = false;
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = undefined;
    this.o.log?.error({ lease: this.o.name, why }, 'lost the leader lease');
    this.o.onStoppedLeading();
  }

  /** Re-arms the watchdog: at renewedAt + renewDeadline without a newer renewal, leadership is lost. */
  private arm(): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    const at = this.renewedAt + this.o.renewDeadlineMs;
    this.watchdog = setTimeout(() => {
      if (performance.now() >= this.renewedAt + this.o.renewDeadlineMs) this.lose('not renewed within the renew deadline');
      else this.arm();
    }, Math.max(0, at - performance.now()));
    this.watchdog.unref?.();
  }

  start(): void {
    if (!this.running) this.running = this.run(this.abort.signal);
  }

  /** Stops campaigning; releases the lease when held (so a standby takes over without waiting). */
  async stop(o: { release?: boolean } = {}): Promise<void> {
    this.abort.abort();
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = undefined;
    await this.running;
    if (this.leading && o.release !== false) {
      try {
        await this.release();
      } catch (e) {
        this.o.log?.warn({ err: (e as Error).message }, 'could not release the lease');
      }
    }
    this.leading = false;
  }

  private async run(signal: AbortSignal): Promise<void> {
    // Acquire.
    while (!signal.aborted && !this.leading) {
      if (await this.tryAcquireOrRenew()) {
        this.leading = true;
        this.arm();
        this.o.log?.info({ lease: this.o.name, identity: this.identity }, 'became leader');
        this.o.onStartedLeading();
        break;
      }
      await sleep(this.o.retryPeriodMs * (1 + Math.random() * 0.2), signal);
    }
    // Renew.
    while (!signal.aborted && this.leading) {
      await sleep(this.o.retryPeriodMs, signal);
      if (signal.aborted || !this.leading) break;
      if (await this.tryAcquireOrRenew()) {
        if (this.leading) this.arm();
        continue;
      }
      if (performance.now() - this.renewedAt >= this.o.renewDeadlineMs) {
        this.lose('could not renew within the renew deadline');
        return;
      }
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const started = performance.now();
    const ok = await this.tryAcquireOrRenewOnce();
    // A renewal that answered after the lease could have expired proves nothing about the time between.
    if (ok && performance.now() - started < this.o.renewDeadlineMs) {
      this.renewedAt = started;
      return true;
    }
    return false;
  }

  private async tryAcquireOrRenewOnce(): Promise<boolean> {
    const now = new Date();
    const mine: LeaseSpec = {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.o.leaseDurationMs / 1000),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    try {
      const lease = await this.client.get<Lease>(GVRs.Lease, this.o.namespace, this.o.name);
      if (!lease) {
        await this.client.create<Lease>(GVRs.Lease, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.o.name, namespace: this.o.namespace }, spec: mine });
        this.observed = { record: JSON.stringify(mine), at: Date.now() };
        return true;
      }
      const spec = lease.spec ?? {};
      const record = JSON.stringify(spec);
      if (!this.observed || this.observed.record !== record) this.observed = { record, at: Date.now() };
      const holder = spec.holderIdentity ?? '';
      const durMs = (spec.leaseDurationSeconds ?? Math.ceil(this.o.leaseDurationMs / 1000)) * 1000;
      if (holder && holder !== this.identity && this.observed.at + durMs > Date.now()) return false;
      const next: LeaseSpec =
        holder === this.identity
          ? { ...spec, renewTime: mine.renewTime, leaseDurationSeconds: mine.leaseDurationSeconds }
          : { ...mine, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 };
      const updated = await this.client.replace<Lease>(GVRs.Lease, { ...lease, spec: next });
      this.observed = { record: JSON.stringify(updated.spec ?? next), at: Date.now() };
      return true;
    } catch (e) {
      if (!isConflict(e) && !isAlreadyExists(e)) this.o.log?.warn({ err: (e as Error).message }, 'lease acquire/renew failed');
      return false;
    }
  }

  private async release(): Promise<void> {
    const lease = await this.client.get<Lease>(GVRs.Lease, this.o.namespace, this.o.name);
    if (!lease || lease.spec?.holderIdentity !== this.identity) return;
    await this.client.replace<Lease>(GVRs.Lease, { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(new Date()) } });
  }
}
