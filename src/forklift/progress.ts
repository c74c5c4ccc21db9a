// Transfer progress as a pure function of (previous sample, new observation, now): bytes done/total,
// rate and ETA, "converting" at CDI's 99.92% plateau, and stall detection.
import { parseQuantity } from '../cozystack/quantity.ts';

export interface ProgressSample {
  /** Epoch milliseconds of the observation. */
  at: number;
  bytesDone: number;
  bytesTotal: number;
  /** Smoothed rate (bytes/s) carried between samples. */
  bytesPerSecond?: number;
  /** Epoch ms when bytesDone last increased (or the first observation). */
  lastChangeAt: number;
}

export interface ProgressView {
  sample: ProgressSample;
  /** 0–100, two decimals. */
  percent: number;
  bytesPerSecond?: number;
  etaSeconds?: number;
  /** CDI has downloaded everything and runs `qemu-img convert` with the counter frozen. */
  converting: boolean;
  /** Milliseconds since the last increase. */
  idleMs: number;
}

/**
 * Weight of the newest rate in the exponential moving average. 0.3 follows a real change within a few
 * samples while one bursty sample (a watch event arriving late) does not swing the ETA wildly.
 */
const RATE_ALPHA = 0.3;

/**
 * CDI's DataVolume progress measures only the download and freezes at 99.92% while `qemu-img convert`
 * runs from scratch onto the target (≈30 min per 230 GiB). From this fraction on we say "converting"
 * instead of showing a transfer that looks stuck.
 */
export const CONVERTING_FRACTION = 0.999;

export function advanceProgress(prev: ProgressSample | undefined, obs: { bytesDone: number; bytesTotal: number }, now: number): ProgressView {
  const total = Math.max(0, obs.bytesTotal);
  const done = Math.max(0, Math.min(obs.bytesDone, total || obs.bytesDone));
  let rate = prev?.bytesPerSecond;
  let lastChangeAt = prev?.lastChangeAt ?? now;
  if (prev && done > prev.bytesDone && now > prev.at) {
    const inst = ((done - prev.bytesDone) * 1000) / (now - prev.at);
    rate = rate === undefined ? inst : RATE_ALPHA * inst + (1 - RATE_ALPHA) * rate;
    lastChangeAt = now;
  } else if (prev && done < prev.bytesDone) {
    // The counter went back (a retried disk): start over.
    rate = undefined;
    lastChangeAt = now;
  }
  const sample: ProgressSample = { at: prev && done === prev.bytesDone ? prev.at : now, bytesDone: done, bytesTotal: total, bytesPerSecond: rate, lastChangeAt };
  const fraction = total > 0 ? done / total : 0;
  const converting = total > 0 && fraction >= CONVERTING_FRACTION && done < total;
  let eta: number | undefined;
  if (rate && rate > 0 && total > 0 && !converting) eta = Math.max(0, Math.round((total - done) / rate));
  if (total > 0 && done >= total) eta = 0;
  return {
    sample,
    percent: Math.round(fraction * 10000) / 100,
    bytesPerSecond: rate === undefined ? undefined : Math.round(rate),
    etaSeconds: eta,
    converting,
    idleMs: Math.max(0, now - lastChangeAt),
  };
}

/**
 * The sample a previous controller left in status, for the first observation after a restart: the stall
 * clock then counts from the recorded last progress instead of starting over, and the rate carries on.
 * Undefined when status holds no running transfer's figures. Pure.
 */
export function restoreSample(v: { bytesDone?: number; bytesTotal?: number; bytesPerSecond?: number; lastProgressTime?: string }): ProgressSample | undefined {
  const t = v.lastProgressTime ? Date.parse(v.lastProgressTime) : NaN;
  if (!Number.isFinite(t) || v.bytesDone === undefined || !v.bytesTotal) return undefined;
  return { at: t, bytesDone: v.bytesDone, bytesTotal: v.bytesTotal, bytesPerSecond: v.bytesPerSecond, lastChangeAt: t };
}

export interface StallInput {
  idleMs: number;
  stallAfterMs: number;
  converting: boolean;
}

/** Stalled: no progress for `stallAfterMs`, except while CDI converts (a known silent phase). */
export function isStalled(s: StallInput): boolean {
  return !s.converting && s.stallAfterMs > 0 && s.idleMs >= s.stallAfterMs;
}

export interface ClaimEventLike {
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  involvedObject?: { kind?: string; name?: string };
  lastTimestamp?: string;
  eventTime?: string;
}

/** At most this many claim events go into a VM's message: status must stay readable (and under 32 KiB). */
const MAX_EVENTS = 5;

/**
 * The VM's message when its transfer stalls: what the claims' events say (where a VDDK failure to reach
 * the ESXi host surfaces, and nowhere else) plus the host/Service-CIDR diagnosis.
 */
export function stallMessage(o: { idleMs: number; percent: number; events: ClaimEventLike[]; eventsError?: string; hostDiagnosis?: string }): string {
  const mins = Math.round(o.idleMs / 60000);
  const idle = mins >= 1 ? `${mins} min` : `${Math.round(o.idleMs / 1000)} s`;
  let msg = `transfer has made no progress for ${idle} (at ${o.percent}%).`;
  const evs = [...o.events]
    .filter((e) => e.message)
    .sort((a, b) => (b.lastTimestamp ?? b.eventTime ?? '').localeCompare(a.lastTimestamp ?? a.eventTime ?? ''))
    .slice(0, MAX_EVENTS);
  if (evs.length) {
    msg += ` Claim events: ${evs.map((e) => `${e.involvedObject?.name ?? '?'}: ${e.reason ?? ''} ${e.message}`.replace(/\s+/g, ' ').trim()).join('; ')}.`;
  } else if (o.eventsError) {
    // Never "no events" when they could not be read: that would send the user looking in the wrong place.
    msg += ` The transfer claims' events could not be read: ${o.eventsError}.`;
  } else {
    msg += ' No events on the transfer claims.';
  }
  if (o.hostDiagnosis) msg += ` ${o.hostDiagnosis}`;
  return msg;
}

/** What the DataVolume fallback reads of one DataVolume (CDI's `status.progress` and its requested size). */
export interface DataVolumeLike {
  spec?: { storage?: { resources?: { requests?: { storage?: string } } }; pvc?: { resources?: { requests?: { storage?: string } } } };
  status?: { phase?: string; progress?: string };
}

/**
 * The bytes a VM's DataVolumes have moved, from CDI's own progress: "N/A" or a percentage of the import
 * (kubevirt/containerized-data-importer@v1.64.0:staging/src/kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1/types.go,
 * DataVolumeProgress) times each volume's requested size; a Succeeded DataVolume counts in full.
 * Undefined when no DataVolume states a size. Used when Forklift's pipeline has no `DiskTransfer` step
 * to read (an unnamed step, or `DiskTransferV2v` on Forklift 2.10 without skipGuestConversion). Pure.
 */
export function dataVolumeProgress(dvs: readonly DataVolumeLike[]): { bytesDone: number; bytesTotal: number } | undefined {
  let total = 0;
  let done = 0;
  for (const dv of dvs) {
    const size = parseQuantity(dv.spec?.storage?.resources?.requests?.storage ?? dv.spec?.pvc?.resources?.requests?.storage);
    if (!size || size <= 0) continue;
    total += size;
    const m = /^\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$/.exec(dv.status?.progress ?? '');
    const pct = dv.status?.phase === 'Succeeded' ? 100 : m ? Math.min(100, Number(m[1])) : 0;
    done += Math.round((size * pct) / 100);
  }
  return total > 0 ? { bytesDone: done, bytesTotal: total } : undefined;
}
