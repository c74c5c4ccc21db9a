// A whole task's progress and ETA, queued VMs included.
//
// The model: an ESXi host's NFC service shares its bandwidth equally among the disk streams open on it
// (each stream within what one NFC connection moves), and the platform's budget keeps at most `slots`
// disks open there, handing freed slots to the queue in its fair order (fair.ts). `drain` plays exactly
// that forward from what a pass observed — the bytes each open disk has left, the queued VMs' disks in
// the order they will be admitted, every tenant's together, since they share the host — and gives the
// instant each VM will be copied. A task is done when its last VM is. The rates are the ones measured in
// this campaign (HostRates): a host not measured yet borrows the mean of the measured ones, and with
// nothing measured anywhere the ETA is unknown rather than invented. Forward play rather than "bytes
// ahead ÷ rate": a VM is copied when its largest disk is, and a host's last streams run alone, so
// neither the summed bytes nor the summed rate tells when.

export interface VMProgress {
  /** vmKey (budget.ts): what `drain`'s answer is keyed by. */
  key: string;
  bytesTotal: number;
  bytesDone: number;
  /** transferring: holds its slot and moves bytes; queued: waits for one; done: copied (or ended). */
  state: 'transferring' | 'queued' | 'done';
  /** Its own current rate (transferring). */
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

/** One host's open disks and queue, as `drain` plays them forward. */
export interface HostDrain {
  /** The host's rate measured in this campaign, every stream together. */
  bytesPerSecond?: number;
  /**
   * What one stream moves at most, when known (HostRates.streamBound, learnt from a host's last streams);
   * absent → only the host's rate bounds a stream. While a host is contended each stream shows its
   * share, not its bound.
   */
  perStreamBytesPerSecond?: number;
  /** The host's budget (disks open at once); absent → every queued VM opens at once. */
  slots?: number;
  /** VMs holding slots: the bytes each of their disks has left. */
  transferring: Array<{ key: string; disksLeft: number[] }>;
  /** Queued VMs in the order slots go to them (QueuePosition order: fair.ts projectedOrder), their disks' sizes. */
  queued: Array<{ key: string; disksLeft: number[] }>;
}

/**
 * Seconds from now until each VM of the host is copied, by playing the host forward; undefined when the
 * host has no rate to play with. The play is event by event (a disk copied, a VM admitted): O(disks²).
 */
export function drain(h: HostDrain): Map<string, number> | undefined {
  const out = new Map<string, number>();
  const R = h.bytesPerSecond;
  const open: Array<{ key: string; left: number }> = [];
  const pending = new Map<string, number>();
  let t = 0;
  const add = (key: string, disks: number[]): void => {
    let n = 0;
    for (const b of disks) {
      if (b <= 0) continue;
      open.push({ key, left: b });
      n++;
    }
    if (n === 0) out.set(key, t);
    else pending.set(key, n);
  };
  for (const v of h.transferring) add(v.key, v.disksLeft);
  const queue = h.queued.map((q) => ({ key: q.key, disks: q.disksLeft }));
  let next = 0;
  const admitQueued = (): void => {
    while (next < queue.length) {
      const q = queue[next]!;
      const cost = q.disks.length;
      if (h.slots !== undefined && !(open.length + cost <= h.slots || (open.length === 0 && cost > h.slots))) break;
      add(q.key, q.disks);
      next++;
    }
  };
  admitQueued();
  if (!(R && R > 0)) return open.length || next < queue.length ? undefined : out;
  while (open.length) {
    const rate = Math.min(R / open.length, h.perStreamBytesPerSecond ?? Infinity);
    let min = Infinity;
    for (const d of open) min = Math.min(min, d.left);
    t += min / rate;
    for (let i = open.length - 1; i >= 0; i--) {
      const d = open[i]!;
      d.left -= min;
      if (d.left > min * 1e-9) continue;
      open.splice(i, 1);
      const n = pending.get(d.key)! - 1;
      if (n === 0) {
        pending.delete(d.key);
        out.set(d.key, t);
      } else pending.set(d.key, n);
    }
    admitQueued();
  }
  return out;
}

/**
 * The task's bytes, its rate now, and its ETA: when its last VM is copied, by `finish` (drain's answer,
 * merged over the hosts of the vCenter).
 */
export function taskProgress(vms: readonly VMProgress[], finish: (key: string) => number | undefined): TaskProgress {
  let bytesDone = 0;
  let bytesTotal = 0;
  let rate = 0;
  let eta = 0;
  let unknown = false;
  for (const v of vms) {
    bytesTotal += Math.max(0, v.bytesTotal);
    bytesDone += Math.min(Math.max(0, v.bytesDone), Math.max(0, v.bytesTotal));
    if (v.state === 'transferring') rate += Math.max(0, v.bytesPerSecond ?? 0);
    if (v.state === 'done' || v.bytesDone >= v.bytesTotal) continue;
    const f = finish(v.key);
    if (f === undefined) unknown = true;
    else eta = Math.max(eta, f);
  }
  const done = bytesDone >= bytesTotal;
  return { bytesDone, bytesTotal, bytesPerSecond: rate, ...(done ? { etaSeconds: 0 } : unknown ? {} : { etaSeconds: Math.ceil(eta) }) };
}

/** Each host's measured rate, or the mean of the measured hosts' for one not measured yet. */
export function ratesWithFallback(hosts: readonly string[], measured: (host: string) => number | undefined): Map<string, number | undefined> {
  const known = hosts.map(measured).filter((r): r is number => r !== undefined && r > 0);
  const mean = known.length ? known.reduce((a, b) => a + b, 0) / known.length : undefined;
  return new Map(hosts.map((h) => [h, measured(h) ?? mean]));
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
  private readonly peaks = new Map<string, { rate: number; streams: number }>();
  private bound: number | undefined;
  private readonly halfLifeMs: number;

  constructor(o: { halfLifeMs?: number } = {}) {
    // Five minutes: long enough to ride over one disk's start and end on a host, short enough to follow a
    // host that another workload slows down within the quarter of an hour an operator would notice it.
    this.halfLifeMs = o.halfLifeMs ?? 5 * 60_000;
  }

  /**
   * Record that the host's `streams` transfers move `bytesPerSecond` together at `now` (epoch ms). Fewer
   * streams than at the host's best moving clearly less than that best means each runs at what one NFC
   * connection moves on its own: that bound is kept (the largest seen on any host of the vCenter, the same
   * NFC service everywhere) for the play of a host's last streams. The same number of streams moving less
   * is the host slowed by something else, and says nothing about the bound.
   */
  observe(host: string, bytesPerSecond: number, now: number, streams = 0): void {
    if (!(bytesPerSecond > 0)) return;
    if (streams > 0) {
      const peak = this.peaks.get(host);
      if (!peak || bytesPerSecond > peak.rate) this.peaks.set(host, { rate: bytesPerSecond, streams });
      // 0.8: a fifth below the best is past the jitter of one pass's sampled rates.
      else if (streams < peak.streams && bytesPerSecond < 0.8 * peak.rate) this.bound = Math.max(this.bound ?? 0, bytesPerSecond / streams);
    }
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

  /** What one stream moves at most, once a host's last streams showed it (HostDrain.perStreamBytesPerSecond). */
  streamBound(): number | undefined {
    return this.bound;
  }


  /** Hosts no VM transfers on any more are forgotten (the campaign there is over). */
  retain(hosts: ReadonlySet<string>): void {
    for (const h of this.rates.keys()) if (!hosts.has(h)) this.rates.delete(h);
    for (const h of this.peaks.keys()) if (!hosts.has(h)) this.peaks.delete(h);
  }
}
