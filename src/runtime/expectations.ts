// Reads from the informer caches that never miss this process's own writes.
//
// An informer cache lags the API server by one watch event. For a checkpoint machine that is harmless
// for everything other actors do (their change wakes us once the cache holds it) but not for our own
// writes: the pass right after a step would see the world from before the step and repeat it. So each
// write leaves an expectation (client-go's "expectations" pattern, keyed by object):
//   - wrote(obj): the cache must show exactly this resourceVersion before it is believed;
//   - deleted(uid): the cache must show the object gone, replaced or terminating;
//   - exists(): a create answered AlreadyExists, so something is there the cache may not hold;
//   - stale(): a write met a conflict, so the cache is behind the server for this object.
// While an expectation is open, reads of that object go to the API server. A live read that returns what
// the cache holds closes it too (someone wrote after us and the cache has caught up), and every
// expectation lapses after `ttlMs` so a missed event cannot pin an object to live reads forever.
import { gvrKey, type GVR } from './gvr.ts';
import type { KubeObject } from './kube.ts';
import type { ReconcileContext } from './reconciler.ts';

type Expectation = { kind: 'rv'; rv: string; over?: { rv: string | null; obj: KubeObject } } | { kind: 'deleted'; uid?: string } | { kind: 'exists' } | { kind: 'stale' };

/**
 * An expectation lapses after this long. Watch events arrive in milliseconds; a minute covers a slow,
 * re-listing informer, and after it the reader trusts the cache again instead of reading live forever.
 */
export const EXPECTATION_TTL_MS = 60_000;

export interface ReadCounters {
  cache: number;
  live: number;
}

export class Expectations {
  private readonly open = new Map<string, Expectation & { until: number }>();
  private readonly ttlMs: number;
  private readonly now: () => number;
  private nextSweep = 0;

  constructor(o: { ttlMs?: number; now?: () => number } = {}) {
    this.ttlMs = o.ttlMs ?? EXPECTATION_TTL_MS;
    this.now = o.now ?? (() => Date.now());
  }

  private key(gvr: GVR, ns: string | undefined, name: string): string {
    return `${gvrKey(gvr)}|${ns ?? ''}|${name}`;
  }

  private set(gvr: GVR, ns: string | undefined, name: string | undefined, e: Expectation): void {
    if (!name) return;
    const now = this.now();
    // Entries of objects never read again (deleted, or their owner gone) would stay forever: at most once
    // per TTL, every lapsed entry goes. Amortised O(1) per write; the map stays bounded by one TTL of writes.
    if (now >= this.nextSweep) {
      this.sweep();
      this.nextSweep = now + this.ttlMs;
    }
    this.open.set(this.key(gvr, ns, name), { ...e, until: now + this.ttlMs });
  }

  /**
   * Our write returned `obj`: until the cache shows its resourceVersion, read this object live. With
   * `over`, the version the write was made on is known — the resourceVersion it carried as its
   * precondition, or `null` for a create (there was no object) — so `obj` is the object as it stood right
   * after: while the cache still shows `over` (or, for a create, still lacks the object), it has not seen
   * our write, and `obj` is answered instead of a live read — exactly what a cache that had caught up with
   * our write would hold. A cache showing any other version is read past, live. (A watch delivers every
   * version in order, so a cache reaches versions after ours only through ours, which closes the
   * expectation; only a re-list can skip it, and then the cache shows another version and is read past.)
   */
  wrote(gvr: GVR, obj: KubeObject | undefined, o: { over?: string | null } = {}): void {
    const rv = obj?.metadata?.resourceVersion;
    if (rv) this.set(gvr, obj.metadata?.namespace, obj.metadata?.name, { kind: 'rv', rv, ...(o.over !== undefined ? { over: { rv: o.over, obj } } : {}) });
  }

  /** We deleted the object with this UID. */
  deleted(gvr: GVR, ns: string | undefined, name: string, uid?: string): void {
    this.set(gvr, ns, name, { kind: 'deleted', uid });
  }

  /** A create met AlreadyExists: the object exists whether or not the cache holds it. */
  exists(gvr: GVR, ns: string | undefined, name: string): void {
    this.set(gvr, ns, name, { kind: 'exists' });
  }

  /** A write met a conflict: the cache is behind the server for this object. */
  stale(gvr: GVR, ns: string | undefined, name: string): void {
    this.set(gvr, ns, name, { kind: 'stale' });
  }

  /** Drops the expectation of an object that is gone (its reconciler saw it deleted): nothing is left behind. */
  forget(gvr: GVR, ns: string | undefined, name: string): void {
    this.open.delete(this.key(gvr, ns, name));
  }

  /** Drops every expectation past its deadline (a periodic sweep keeps the map bounded). */
  sweep(): void {
    const now = this.now();
    for (const [k, e] of this.open) if (e.until < now) this.open.delete(k);
  }

  /** Open expectations (tests, metrics). */
  size(): number {
    return this.open.size;
  }

  /**
   * The object as the cache holds it when the cache can be believed, otherwise as the API server returns
   * it. `live` forces the API server (verdicts that end something are taken on live reads only).
   * `trustAbsence` believes a filtered cache's absence (see below).
   */
  async get(
    ctx: ReconcileContext,
    gvr: GVR,
    ns: string | undefined,
    name: string | undefined,
    o: { live?: boolean; counters?: ReadCounters; trustAbsence?: boolean } = {},
  ): Promise<KubeObject | undefined> {
    if (!name) return undefined;
    const cache = o.live ? undefined : ctx.cache(gvr);
    const k = this.key(gvr, ns, name);
    const liveRead = async (): Promise<KubeObject | undefined> => {
      if (o.counters) o.counters.live++;
      return await ctx.client.get<KubeObject>(gvr, ns, name);
    };
    if (!cache) return await liveRead();
    const cached = cache.get(ns, name);
    let e = this.open.get(k);
    if (e && e.until < this.now()) {
      this.open.delete(k);
      e = undefined;
    }
    if (e) {
      if (satisfied(e, cached)) {
        this.open.delete(k);
      } else if (e.kind === 'rv' && e.over && (e.over.rv === null ? !cached : cached?.metadata?.resourceVersion === e.over.rv)) {
        if (o.counters) o.counters.cache++;
        return e.over.obj;
      } else {
        const live = await liveRead();
        if (live?.metadata?.resourceVersion === cached?.metadata?.resourceVersion && (e.kind !== 'exists' || live)) this.open.delete(k);
        return live;
      }
    }
    if (cached) {
      if (o.counters) o.counters.cache++;
      return cached;
    }
    // Absent from a label-filtered cache says nothing — the object may exist without the labels — unless
    // the caller knows the object would carry them (`trustAbsence`: our own objects, by our labels).
    if (cache.labelSelector && !o.trustAbsence) return await liveRead();
    if (o.counters) o.counters.cache++;
    return undefined;
  }
}

function satisfied(e: Expectation, cached: KubeObject | undefined): boolean {
  switch (e.kind) {
    case 'rv':
      return cached?.metadata?.resourceVersion === e.rv;
    case 'deleted':
      return !cached || (!!e.uid && cached.metadata?.uid !== e.uid) || !!cached.metadata?.deletionTimestamp;
    case 'exists':
      return !!cached;
    case 'stale':
      return false;
  }
}
