// A whole task's progress and ETA, queued VMs included.
//
// The model: an ESXi host is a work-conserving server whose NFC bandwidth its transfers share. Whatever
// the mix of tenants on it, a host that keeps transferring at rate R has finished the work W in front of a
// point of its queue after W / R. A VM that transfers now is done when its own rate finishes its remaining
// bytes; a queued VM is done once its host has drained what holds slots now, what the fair order puts
// before it (QueuePosition.bytesAheadTotal, every tenant's), and the VM itself. The task is done when its
// last VM is. R is the host's rate measured in this campaign (HostRates); a host not measured yet borrows
// the mean of the measured ones, and with nothing measured anywhere the ETA is unknown rather than
// invented.

export interface VMProgress {
  host: string;
  bytesTotal: number;
  bytesDone: number;
  /** transferring: holds its slot and moves bytes; queued: waits for one; done: copied (or ended). */
  state: 'transferring' | 'queued' | 'done';
  /** Its own current rate (transferring). */
  bytesPerSecond?: number;
  /** Queued: bytes of every VM before it on its host (QueuePosition.bytesAheadTotal). */
  bytesAhead?: number;
}

export interface HostLoad {
  /** Remaining bytes of every tenant's VMs holding slots on the host (HostUsage.inFlightBytes). */
  inFlightBytes: number;
  /** The host's rate measured in this campaign; absent when not measured yet. */
  bytesPerSecond?: number;
}

export interface TaskProgress {
  bytesDone: number;
  bytesTotal: number;
  /** The task's own transfers' rate now. */
  bytesPerSecond: number;
  /** Seconds until the task's last VM is copied; absent when no rate is known to estimate from. */
  etaSeconds?: number;
}

export function taskProgress(vms: readonly VMProgress[], hosts: ReadonlyMap<string, HostLoad>): TaskProgress {
  let bytesDone = 0;
  let bytesTotal = 0;
  let rate = 0;
  for (const v of vms) {
    bytesTotal += Math.max(0, v.bytesTotal);
    bytesDone += Math.min(Math.max(0, v.bytesDone), Math.max(0, v.bytesTotal));
    if (v.state === 'transferring') rate += Math.max(0, v.bytesPerSecond ?? 0);
  }
  const measured = [...hosts.values()].map((h) => h.bytesPerSecond ?? 0).filter((r) => r > 0);
  const fallback = measured.length ? measured.reduce((a, b) => a + b, 0) / measured.length : undefined;
  const hostRate = (h: string): number | undefined => {
    const r = hosts.get(h)?.bytesPerSecond;
    return r && r > 0 ? r : fallback;
  };
  let eta = 0;
  let unknown = false;
  for (const v of vms) {
    const left = Math.max(0, v.bytesTotal - v.bytesDone);
    if (v.state === 'done' || left === 0) continue;
    if (v.state === 'transferring') {
      const own = v.bytesPerSecond ?? 0;
      const r = hostRate(v.host);
      if (own > 0) eta = Math.max(eta, left / own);
      else if (r) eta = Math.max(eta, (hosts.get(v.host)?.inFlightBytes ?? left) / r);
      else unknown = true;
      continue;
    }
    const r = hostRate(v.host);
    if (!r) {
      unknown = true;
      continue;
    }
    eta = Math.max(eta, ((hosts.get(v.host)?.inFlightBytes ?? 0) + (v.bytesAhead ?? 0) + left) / r);
  }
  const done = bytesDone >= bytesTotal;
  return { bytesDone, bytesTotal, bytesPerSecond: rate, ...(done ? { etaSeconds: 0 } : unknown ? {} : { etaSeconds: Math.ceil(eta) }) };
}

/**
 * Each host's transfer rate in this campaign, smoothed: an exponentially weighted mean of the host's
 * summed transfer rates (every tenant's VMs on it), sampled whenever a pass observes them. The weight
 * follows the time between samples (a sample `halfLifeMs` old counts half), so passes that come in bursts
 * do not outweigh a quiet hour. Memory only: after a restart the rate is measured again from the VMs'
 * own rates in their status.
 */
export class HostRates {
  private readonly rates = new Map<string, { rate: number; at: number }>();
  private readonly halfLifeMs: number;

  constructor(o: { halfLifeMs?: number } = {}) {
    // Five minutes: long enough to ride over one disk's start and end on a host, short enough to follow a
    // host that another workload slows down within the quarter of an hour an operator would notice it.
    this.halfLifeMs = o.halfLifeMs ?? 5 * 60_000;
  }

  /** Record that the host's transfers move `bytesPerSecond` together at `now` (epoch ms). */
  observe(host: string, bytesPerSecond: number, now: number): void {
    if (!(bytesPerSecond > 0)) return;
    const prev = this.rates.get(host);
    if (!prev) {
      this.rates.set(host, { rate: bytesPerSecond, at: now });
      return;
    }
    const dt = Math.max(0, now - prev.at);
    const keep = Math.pow(0.5, dt / this.halfLifeMs);
    this.rates.set(host, { rate: keep * prev.rate + (1 - keep) * bytesPerSecond, at: Math.max(now, prev.at) });
  }

  rate(host: string): number | undefined {
    return this.rates.get(host)?.rate;
  }

  /** Hosts no VM transfers on any more are forgotten (the campaign there is over). */
  retain(hosts: ReadonlySet<string>): void {
    for (const h of this.rates.keys()) if (!hosts.has(h)) this.rates.delete(h);
  }
}
