// Simulated ESXi hosts as the VDDK sees them: each host's NFC service serves every disk transfer opened
// on it, sharing one bandwidth, up to a connection ceiling.
//
// What it plays, from VMware's VDDK Programming Guide (vSphere 8.0, "NFC Session Limits and Timeouts"):
// - VixDiskLib_Open takes one NFC connection for every virtual disk it opens on an ESXi host; connections
//   are not shared across disks, and the limits are the host's, not a process's.
// - vSphere 6.x, 7.0 and 8.0: the NFC connection buffers of one ESXi host together cannot exceed 48 MB by
//   default; with 1 MB buffers per I/O stream, 48 requests can be concurrent. So the default ceiling is 48
//   transfers per host (vSphere 5.x: 32 MB, about 32), counted over every client of the host — the
//   guide's "host limits, not per process limits" is why two tenants' imports meet on one host.
// - Past the ceiling the open fails. The NFC server cannot allocate the stream's buffer and VixDiskLib
//   reports VIX_E_OUT_OF_MEMORY (error 2, "Memory allocation failed. Out of memory.") with DiskLib error
//   802, NBD_ERR_INSUFFICIENT_RESOURCES; nbdkit's vddk plugin prints it after the call that failed
//   (`VixDiskLib_Open: <disk>: …`), and CDI's importer ends with it (VDDK_OPEN_FAILURE below).
// - Below the ceiling the transfers slow each other down: the host's NFC bandwidth (its management
//   network, the NFC service's own throughput) is shared equally among the streams moving bytes, each
//   stream also bounded by what one NFC connection moves on its own (optional).
//
// The model is deterministic and clockless: every call passes `now` (epoch ms) and the bytes each
// transfer has moved are integrated between calls. A discrete-event simulation (bench/campaign.ts) asks
// `nextCompletion()` for the next instant anything ends; a real-time simulator calls `advance(now)` on its
// own ticks.

/** The default NFC streams per host on vSphere 6.x–8.0 (48 MB of buffers, 1 MB per stream). */
export const NFC_CONNECTION_CEILING = 48;

/** What CDI's importer reports when VixDiskLib_Open fails past the host's NFC ceiling. */
export function vddkOpenFailure(disk: string): string {
  return `Unable to connect to vddk data source: nbdkit: vddk[1]: error: VixDiskLib_Open: ${disk}: Memory allocation failed. Out of memory. (DiskLib error 802: NBD_ERR_INSUFFICIENT_RESOURCES)`;
}

export interface EsxiHostSpec {
  /** Inventory host id (`host-N`). */
  id: string;
  /** The host's NFC bandwidth, shared by its transfers (bytes per second). */
  bandwidthBytesPerSecond: number;
  /** What one NFC stream moves at most on its own; absent → only the host's bandwidth bounds it. */
  perStreamBytesPerSecond?: number;
  /** Transfers open at once past which a new one fails (default NFC_CONNECTION_CEILING). */
  connectionCeiling?: number;
}

interface Transfer {
  id: string;
  host: string;
  bytes: number;
  done: number;
  startedAt: number;
  /** Open but moving nothing (a stalled read, a run Forklift froze): it keeps its connection and takes no share. */
  held: boolean;
}

interface HostState {
  spec: Required<Omit<EsxiHostSpec, 'perStreamBytesPerSecond'>> & { perStreamBytesPerSecond?: number };
  open: Map<string, Transfer>;
  peak: number;
  failed: number;
  started: number;
  bytesMoved: number;
}

export type StartResult = { ok: true } | { ok: false; error: string };

export interface HostStats {
  id: string;
  ceiling: number;
  bandwidthBytesPerSecond: number;
  /** Most transfers open at once. */
  peak: number;
  /** Opens refused by the ceiling. */
  failed: number;
  started: number;
  bytesMoved: number;
}

/** A transfer with no more than this left counts as copied: integrating rates in floating point leaves dust. */
const copied = (t: Transfer): boolean => t.bytes - t.done <= Math.max(1e-6, t.bytes * 1e-9);
/** A transfer that takes a share of its host's bandwidth: open, not copied, not held. */
const moving = (t: Transfer): boolean => !t.held && !copied(t);

export class EsxiHosts {
  private readonly hosts = new Map<string, HostState>();
  private readonly transfers = new Map<string, Transfer>();
  private at: number;

  constructor(specs: readonly EsxiHostSpec[], now = 0) {
    for (const s of specs) {
      if (!(s.bandwidthBytesPerSecond > 0)) throw new Error(`host ${s.id}: bandwidth must be positive`);
      // An unlimited host needs a bound per stream, or a stream alone would move at an infinite rate.
      if (s.bandwidthBytesPerSecond === Infinity && !(s.perStreamBytesPerSecond && Number.isFinite(s.perStreamBytesPerSecond))) throw new Error(`host ${s.id}: an unlimited bandwidth needs a finite perStreamBytesPerSecond`);
      this.hosts.set(s.id, {
        spec: { id: s.id, bandwidthBytesPerSecond: s.bandwidthBytesPerSecond, connectionCeiling: s.connectionCeiling ?? NFC_CONNECTION_CEILING, ...(s.perStreamBytesPerSecond ? { perStreamBytesPerSecond: s.perStreamBytesPerSecond } : {}) },
        open: new Map(),
        peak: 0,
        failed: 0,
        started: 0,
        bytesMoved: 0,
      });
    }
    this.at = now;
  }

  private host(id: string): HostState {
    const h = this.hosts.get(id);
    if (!h) throw new Error(`no simulated ESXi host ${id}`);
    return h;
  }

  /** Each moving stream's rate on a host now: an equal share of the bandwidth, within the per-stream bound. */
  private share(h: HostState): number {
    let n = 0;
    for (const t of h.open.values()) if (moving(t)) n++;
    if (n === 0) return 0;
    const fair = h.spec.bandwidthBytesPerSecond / n;
    return h.spec.perStreamBytesPerSecond ? Math.min(fair, h.spec.perStreamBytesPerSecond) : fair;
  }

  /**
   * Integrates every open transfer's bytes up to `now`, piece by piece between the instants a transfer
   * is copied (its share goes to the others from then on). Time never runs backwards.
   */
  advance(now: number): void {
    while (now > this.at) {
      let until = now;
      for (const h of this.hosts.values()) {
        const r = this.share(h);
        if (r === 0) continue;
        for (const t of h.open.values()) if (moving(t)) until = Math.min(until, this.at + ((t.bytes - t.done) / r) * 1000);
      }
      const next = Math.max(until, Math.min(now, this.at + 1e-6));
      // On an epoch-ms clock (about 1.8e12) a double resolves about 2.4e-4 ms: a transfer whose last few
      // hundred bytes take less than that ends at an instant equal to `at`, and stepping to it would move
      // nothing, forever (the simulator's event loop hung in this loop). Such dust counts as copied now.
      if (next <= this.at) this.settleDust();
      else this.step(next);
    }
  }

  /** Completes every moving transfer whose remaining bytes take no representable time at its rate. */
  private settleDust(): void {
    for (const h of this.hosts.values()) {
      const r = this.share(h);
      if (r === 0) continue;
      for (const t of h.open.values()) {
        if (!moving(t) || this.at + ((t.bytes - t.done) / r) * 1000 > this.at) continue;
        h.bytesMoved += t.bytes - t.done;
        t.done = t.bytes;
      }
    }
  }

  private step(now: number): void {
    const dt = (now - this.at) / 1000;
    for (const h of this.hosts.values()) {
      const r = this.share(h);
      if (r === 0) continue;
      for (const t of h.open.values()) {
        if (!moving(t)) continue;
        const left = t.bytes - t.done;
        const moved = Math.min(left, r * dt);
        t.done += moved;
        if (copied(t)) t.done = t.bytes;
        h.bytesMoved += t.done === t.bytes ? left : moved;
      }
    }
    this.at = now;
  }

  /**
   * VixDiskLib_Open of one disk on a host: the transfer `id` of `bytes` opens an NFC connection, or fails
   * with the VDDK's error when the host already serves its ceiling.
   */
  start(hostId: string, id: string, bytes: number, now: number, disk = id): StartResult {
    this.advance(now);
    const h = this.host(hostId);
    if (this.transfers.has(id)) throw new Error(`transfer ${id} is already open`);
    if (h.open.size >= h.spec.connectionCeiling) {
      h.failed++;
      return { ok: false, error: vddkOpenFailure(disk) };
    }
    const t: Transfer = { id, host: hostId, bytes: Math.max(0, bytes), done: 0, startedAt: now, held: false };
    h.open.set(id, t);
    this.transfers.set(id, t);
    h.started++;
    h.peak = Math.max(h.peak, h.open.size);
    return { ok: true };
  }

  /** VixDiskLib_Close: the transfer ends (copied or canceled) and its connection is released. Returns the bytes it moved. */
  finish(id: string, now: number): number {
    this.advance(now);
    const t = this.transfers.get(id);
    if (!t) return 0;
    this.transfers.delete(id);
    this.hosts.get(t.host)!.open.delete(id);
    return t.done;
  }

  /**
   * Holds an open transfer still (`held` true) or lets it move again: a held stream keeps its NFC
   * connection (it still counts against the ceiling) but moves no bytes and leaves its share to the others.
   */
  hold(id: string, held: boolean, now: number): void {
    this.advance(now);
    const t = this.transfers.get(id);
    if (t) t.held = held;
  }

  /** Bytes the transfer has moved by `now` (0 for an unknown one). */
  bytesDone(id: string, now: number): number {
    this.advance(now);
    return this.transfers.get(id)?.done ?? 0;
  }

  /** All bytes of the transfer are moved. */
  complete(id: string, now: number): boolean {
    this.advance(now);
    const t = this.transfers.get(id);
    return t !== undefined && copied(t);
  }

  /** The transfer's rate now (bytes per second). */
  rate(id: string, now: number): number {
    this.advance(now);
    const t = this.transfers.get(id);
    if (!t || !moving(t)) return 0;
    return this.share(this.hosts.get(t.host)!);
  }

  /** The host's transfers' rate together now. */
  hostRate(hostId: string, now: number): number {
    this.advance(now);
    const h = this.host(hostId);
    let n = 0;
    for (const t of h.open.values()) if (moving(t)) n++;
    return n * this.share(h);
  }

  /** Whether the simulation knows this host. */
  has(hostId: string): boolean {
    return this.hosts.has(hostId);
  }

  /** Transfers open on the host. */
  open(hostId: string): number {
    return this.host(hostId).open.size;
  }

  /** When the next open transfer moves its last byte if nothing else changes (now, for one copied but still open), and which one. */
  nextCompletion(): { at: number; id: string } | undefined {
    let best: { at: number; id: string } | undefined;
    for (const h of this.hosts.values()) {
      const r = this.share(h);
      for (const t of h.open.values()) {
        // A held transfer ends only when it is let go; a copied one not closed yet ends now.
        if (t.held && !copied(t)) continue;
        const at = copied(t) ? this.at : this.at + ((t.bytes - t.done) / r) * 1000;
        if (!best || at < best.at || (at === best.at && t.id < best.id)) best = { at, id: t.id };
      }
    }
    return best;
  }

  stats(): HostStats[] {
    return [...this.hosts.values()].map((h) => ({
      id: h.spec.id,
      ceiling: h.spec.connectionCeiling,
      bandwidthBytesPerSecond: h.spec.bandwidthBytesPerSecond,
      peak: h.peak,
      failed: h.failed,
      started: h.started,
      bytesMoved: h.bytesMoved,
    }));
  }
}
