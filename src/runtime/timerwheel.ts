// One timer for many deadlines: the work queues' timed requeues (safety nets, backoffs) share it.
//
// A timer per pending requeue made the process wake once per task per safety-net period: with thousands
// of waiting tasks, thousands of wake-ups, each running one callback. Here deadlines are rounded up onto
// slots whose width grows with the delay (at most 5% of it: 1 ms below 200 ms, 10 ms below 2 s, 100 ms
// below 20 s, 1 s above), every deadline of a slot fires together, and only the earliest slot holds a
// native timer. Deadlines that fall together — the common case for safety nets set by passes that ran
// together — cost one wake-up. A deadline is never early; it is late by at most its slot's width.

export interface TimerWheelOptions {
  now?: () => number;
  /** The native timer (tests drive a manual clock through these). */
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
  /** Counts each wake-up of the native timer (the metric of timer wake-ups). */
  onWake?: (fired: number) => void;
}

/** Slot width for a delay: the largest of 1 ms, 10 ms, 100 ms, 1 s not above 5% of it. Pure. */
export function slotWidth(delayMs: number): number {
  for (const w of [1_000, 100, 10]) if (w * 20 <= delayMs) return w;
  return 1;
}

interface Entry {
  slot: number;
  fire: () => void;
}

export class TimerWheel {
  private readonly now: () => number;
  private readonly onWake: ((fired: number) => void) | undefined;
  /** slot time (ms) → keys due then */
  private readonly slots = new Map<number, Set<string>>();
  /** slot times, ascending */
  private readonly order: number[] = [];
  private readonly entries = new Map<string, Entry>();
  private armed: { at: number; timer: unknown } | undefined;
  private readonly setTimer: (fn: () => void, ms: number) => unknown;
  private readonly clearTimer: (handle: unknown) => void;

  constructor(o: TimerWheelOptions = {}) {
    this.now = o.now ?? (() => performance.now());
    this.onWake = o.onWake;
    this.setTimer =
      o.setTimer ??
      ((fn, ms) => {
        const t = setTimeout(fn, ms);
        // Never keeps the process alive on its own (a stopped controller exits).
        t.unref?.();
        return t;
      });
    this.clearTimer = o.clearTimer ?? ((h) => clearTimeout(h as NodeJS.Timeout));
  }

  /** Runs `fire` after `delayMs` (rounded up onto its slot), replacing any pending entry of `key`. */
  set(key: string, delayMs: number, fire: () => void): void {
    this.cancel(key);
    const w = slotWidth(delayMs);
    const slot = Math.ceil((this.now() + Math.max(0, delayMs)) / w) * w;
    this.entries.set(key, { slot, fire });
    let keys = this.slots.get(slot);
    if (!keys) {
      keys = new Set();
      this.slots.set(slot, keys);
      this.order.splice(upperBound(this.order, slot), 0, slot);
    }
    keys.add(key);
    this.arm();
  }

  /** When `key` is due (ms on the wheel's clock), or undefined. */
  due(key: string): number | undefined {
    return this.entries.get(key)?.slot;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  cancel(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    const keys = this.slots.get(e.slot);
    keys?.delete(key);
    if (keys && keys.size === 0) {
      this.slots.delete(e.slot);
      const i = this.order.indexOf(e.slot);
      if (i >= 0) this.order.splice(i, 1);
    }
    // A timer armed for an emptied slot fires once and finds nothing: cheaper than re-arming on every cancel.
  }

  /** Pending entries. */
  size(): number {
    return this.entries.size;
  }

  /** Drops every entry and the native timer. */
  clear(): void {
    this.entries.clear();
    this.slots.clear();
    this.order.length = 0;
    if (this.armed) this.clearTimer(this.armed.timer);
    this.armed = undefined;
  }

  private arm(): void {
    const next = this.order[0];
    if (next === undefined) return;
    if (this.armed && this.armed.at <= next) return;
    if (this.armed) this.clearTimer(this.armed.timer);
    // Rounded up: a timer set for a fraction of a millisecond less would wake before its slot, find
    // nothing due, and wake again.
    const timer = this.setTimer(() => this.tick(), Math.max(0, Math.ceil(next - this.now())));
    this.armed = { at: next, timer };
  }

  private tick(): void {
    this.armed = undefined;
    const now = this.now();
    const due: Array<() => void> = [];
    while (this.order.length && this.order[0]! <= now) {
      const slot = this.order.shift()!;
      for (const k of this.slots.get(slot) ?? []) {
        const e = this.entries.get(k);
        this.entries.delete(k);
        if (e) due.push(e.fire);
      }
      this.slots.delete(slot);
    }
    this.onWake?.(due.length);
    this.arm();
    for (const f of due) f();
  }
}

function upperBound(a: number[], x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
