// List+watch of one kind into a local store. Handlers only enqueue; reconcilers read the store.
// - resumes the watch from the last resourceVersion (bookmarks keep it fresh on quiet kinds);
// - relists on every watch error but the retriable ones (a connection refused or broken, 429), emitting
//   the differences as events so no change made while disconnected is lost;
// - lists as client-go's reflector does (k8s.io/client-go tools/cache/reflector.go, relistResourceVersion):
//   the first list from the watch cache (resourceVersion=0), a relist not older than the last version seen,
//   and — once a resourceVersion is expired or too large (an etcd restored from a backup, an HA API server
//   behind the others) — a consistent read (resourceVersion="") that re-anchors the informer;
// - restarts with exponential backoff on errors and disconnects (API server restart, network).
import type { Logger } from 'pino';
import type { GVR } from './gvr.ts';
import { ApiError, DeadlineError, isExpired, isTooLargeResourceVersion, isTooManyRequests, type KubeClient, type KubeObject } from './kube.ts';
import type { Cache } from './reconciler.ts';
import { IndexedMap } from './indexer.ts';

export interface InformerHandlers {
  add?(obj: KubeObject): void;
  update?(oldObj: KubeObject, obj: KubeObject): void;
  delete?(obj: KubeObject): void;
}

export interface InformerOptions {
  namespace?: string;
  labelSelector?: string;
  log?: Logger;
  /** First retry delay after an error; doubles up to maxBackoffMs. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Called after every full list (metrics). */
  onList?: () => void;
  /** Watch liveness (defaults: client-go's 5–10 min server timeout, 30 s grace); tests shorten it. */
  liveness?: WatchLiveness;
  /** Which objects the store holds (Watch.keep); the others' changes are still emitted. */
  keep?: (obj: KubeObject) => boolean;
  /**
   * What the store holds of an object (client-go's SetTransform): applied on arrival, before handlers see
   * it. Discovery keeps a few fields of a CustomResourceDefinition instead of its schema.
   */
  transform?: (obj: KubeObject) => KubeObject;
  /**
   * Lists in pages of this size with consistent reads instead of from the watch cache (which answers a
   * list at once, whole): for a kind whose objects are large (CustomResourceDefinitions, up to megabytes
   * of schema each), a whole list parsed at once is the peak of the process's memory.
   */
  pageSize?: number;
}

/** Where the informer stands for its next list (client-go's lastSyncResourceVersion and isLastSyncResourceVersionUnavailable). */
export interface ListPosition {
  /** The last resourceVersion listed or watched; undefined before the first list. */
  lastSyncResourceVersion: string | undefined;
  /** A list or watch at lastSyncResourceVersion failed as expired or too large. */
  unavailable: boolean;
}

/**
 * The resourceVersion of the next list (client-go's relistResourceVersion). Pure:
 * - the position is unavailable: '' — a consistent read from etcd, the only list certain to succeed;
 * - never listed: '0' — the watch cache answers, sparing etcd the full read (a restart of every
 *   replica, or of the API server under every informer, otherwise costs one quorum read per kind);
 * - else the last version: the watch cache answers with data at least that fresh, never going back in time.
 */
export function relistResourceVersion(p: ListPosition): string {
  if (p.unavailable) return '';
  return p.lastSyncResourceVersion ?? '0';
}

/**
 * What a watch that failed with `e` calls for (client-go's ListAndWatch and isWatchErrorRetriable): a
 * connection refused or broken, or a 429, is retried from the same resourceVersion after a backoff (the API
 * server is restarting or shedding load; a relist would only add to it); an expired resourceVersion is
 * relisted at once; anything else (a resourceVersion too large, a 5xx, a Status the stream ended with) is
 * relisted after a backoff — retrying the same resourceVersion forever would never recover. Pure.
 */
export function afterWatchError(e: unknown): 'rewatch' | 'relist-now' | 'relist' {
  if (isExpired(e)) return 'relist-now';
  if (e instanceof ApiError && e.code === 0 && !(e instanceof DeadlineError)) return 'rewatch';
  if (isTooManyRequests(e)) return 'rewatch';
  return 'relist';
}

export interface WatchLiveness {
  /** Each watch asks the server to end it after a random timeoutSeconds in [min, max]. */
  minTimeoutSeconds: number;
  maxTimeoutSeconds: number;
  /**
   * A watch still open this long after its timeoutSeconds is dead: a half-open connection (a node or a
   * load balancer dropped its state) delivers nothing and never closes. It is torn down and resumed.
   */
  graceMs: number;
}

// After an error the informer waits 200 ms, doubling to 30 s: an API server restart (seconds) is
// bridged quickly, while a kind that keeps failing does not spin.
const MIN_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 30_000;
// The server closes a watch after timeoutSeconds; a random 5–10 min spreads the re-watches of many
// informers (client-go's minWatchTimeout jitter) so they never all reconnect at once. 30 s past that, the
// server has had ample time to end it (it sends a bookmark just before): a stream still open is half-open.
export const DEFAULT_LIVENESS: WatchLiveness = { minTimeoutSeconds: 300, maxTimeoutSeconds: 600, graceMs: 30_000 };

/**
 * What the cache keeps of an object: all of it but `metadata.managedFields` — the API server's record of
 * which field manager set which field, often the largest part of an object's metadata and read by nothing
 * here (client-go's informers drop it the same way, cache.TransformStripManagedFields). An update sent
 * without managedFields leaves the server's record as it is. Mutates and returns `o` (fresh from JSON).
 */
export function stripForCache<T extends KubeObject>(o: T): T {
  if (o.metadata && 'managedFields' in o.metadata) delete (o.metadata as { managedFields?: unknown }).managedFields;
  return o;
}

function objKey(o: KubeObject): string {
  const ns = o.metadata?.namespace;
  return ns ? `${ns}/${o.metadata?.name}` : String(o.metadata?.name);
}

export function matchesLabels(obj: KubeObject, sel: Record<string, string> | undefined): boolean {
  if (!sel) return true;
  const labels = obj.metadata?.labels ?? {};
  return Object.entries(sel).every(([k, v]) => labels[k] === v);
}

export class Store<T extends KubeObject = KubeObject> implements Cache<T> {
  /** Indexed by namespace and by the label keys lists select on (src/runtime/indexer.ts). */
  readonly items = new IndexedMap<T>();
  synced = false;
  /** The server-side selector the informer lists with: an object outside it is never in this store. */
  readonly labelSelector: string | undefined;
  constructor(labelSelector?: string) {
    this.labelSelector = labelSelector || undefined;
  }
  get(namespace: string | undefined, name: string): T | undefined {
    return this.items.get(namespace ? `${namespace}/${name}` : name);
  }
  list(namespace?: string, labelSelector?: Record<string, string>): T[] {
    const out: T[] = [];
    const keys = this.items.candidates(namespace, labelSelector);
    const objs = keys ? [...keys].map((k) => this.items.get(k)!) : this.items.values();
    for (const o of objs) {
      if (namespace && o.metadata?.namespace !== namespace) continue;
      if (!matchesLabels(o, labelSelector)) continue;
      out.push(o);
    }
    return out;
  }
  hasSynced(): boolean {
    return this.synced;
  }
}

/**
 * Several filtered stores of one kind read as one: the first holding an object answers a get, a list is
 * their union. Its selector is theirs together, so an absence is only believed where the caller knows
 * the object would match one of them (see Expectations.get's trustAbsence).
 */
export class UnionCache<T extends KubeObject = KubeObject> implements Cache<T> {
  private readonly stores: Store<T>[];
  readonly labelSelector: string | undefined;
  constructor(stores: Store<T>[]) {
    this.stores = stores;
    this.labelSelector = stores.some((s) => !s.labelSelector) ? undefined : stores.map((s) => s.labelSelector).join(' | ');
  }
  get(namespace: string | undefined, name: string): T | undefined {
    for (const s of this.stores) {
      const o = s.get(namespace, name);
      if (o) return o;
    }
    return undefined;
  }
  list(namespace?: string, labelSelector?: Record<string, string>): T[] {
    const seen = new Map<string, T>();
    for (const s of this.stores) for (const o of s.list(namespace, labelSelector)) seen.set(objKey(o), o);
    return [...seen.values()];
  }
  hasSynced(): boolean {
    return this.stores.every((s) => s.hasSynced());
  }
}

export class Informer {
  readonly gvr: GVR;
  readonly store: Store;
  private readonly client: KubeClient;
  private readonly opts: InformerOptions;
  private readonly handlers: InformerHandlers[] = [];
  private abort: AbortController | undefined;
  private running: Promise<void> | undefined;
  private rv: string | undefined;
  private readonly syncWaiters: Array<() => void> = [];
  /** Number of full lists done (tests observe relists). */
  lists = 0;
  /** Watches torn down because they outlived their timeout (half-open connections). */
  staleWatches = 0;
  /** Objects dropped from the store because `keep` no longer wanted them. */
  dropped = 0;
  /** The resourceVersion of every list, in order (the last few: tests and logs see the fallbacks). */
  readonly listedAt: string[] = [];
  private unavailable = false;

  constructor(client: KubeClient, gvr: GVR, opts: InformerOptions = {}) {
    this.client = client;
    this.gvr = gvr;
    this.opts = opts;
    this.store = new Store(opts.labelSelector);
  }

  addHandlers(h: InformerHandlers): void {
    this.handlers.push(h);
    // A late subscriber sees the current contents as adds.
    if (this.store.synced) for (const o of this.store.items.values()) h.add?.(o);
  }

  hasSynced(): boolean {
    return this.store.synced;
  }

  waitForSync(): Promise<void> {
    if (this.store.synced) return Promise.resolve();
    return new Promise((r) => this.syncWaiters.push(r));
  }

  start(): void {
    if (this.running) return;
    this.abort = new AbortController();
    this.running = this.run(this.abort.signal);
  }

  async stop(): Promise<void> {
    this.abort?.abort();
    await this.running;
    this.running = undefined;
    for (const w of this.syncWaiters.splice(0)) w();
  }

  private emit(kind: 'add' | 'update' | 'delete', obj: KubeObject, old?: KubeObject): void {
    for (const h of this.handlers) {
      try {
        if (kind === 'add') h.add?.(obj);
        else if (kind === 'update') h.update?.(old!, obj);
        else h.delete?.(obj);
      } catch (e) {
        this.opts.log?.error({ err: (e as Error).message, gvr: this.gvr.plural }, 'informer handler failed');
      }
    }
  }

  private async relist(): Promise<void> {
    const resourceVersion = this.opts.pageSize ? '' : relistResourceVersion({ lastSyncResourceVersion: this.rv, unavailable: this.unavailable });
    this.listedAt.push(resourceVersion);
    if (this.listedAt.length > 16) this.listedAt.shift();
    const list = await this.client.listAll<KubeObject>(this.gvr, this.opts.namespace || undefined, {
      labelSelector: this.opts.labelSelector,
      resourceVersion,
      pageSize: this.opts.pageSize,
      // Applied page by page, so a page's full objects can be collected before the next one arrives.
      transform: this.opts.transform ? (o) => this.opts.transform!(stripForCache(o)) : undefined,
    });
    this.unavailable = false;
    this.lists++;
    this.opts.onList?.();
    const seen = new Set<string>();
    for (const o of list.items) {
      stripForCache(o);
      // Lists return items without apiVersion/kind; restore them so reconcilers and Events get full objects.
      o.apiVersion ??= this.gvr.group ? `${this.gvr.group}/${this.gvr.version}` : this.gvr.version;
      o.kind ??= this.gvr.kind;
      const k = objKey(o);
      seen.add(k);
      const old = this.store.items.get(k);
      if (!this.wanted(o)) {
        if (old) this.drop(k, o, old);
        continue;
      }
      this.store.items.set(k, o);
      if (!old) this.emit('add', o);
      else if (old.metadata?.resourceVersion !== o.metadata?.resourceVersion) this.emit('update', o, old);
    }
    for (const [k, o] of [...this.store.items]) {
      if (!seen.has(k)) {
        this.store.items.delete(k);
        this.emit('delete', o);
      }
    }
    this.rv = list.metadata.resourceVersion;
    if (!this.store.synced) {
      this.store.synced = true;
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  private onEvent(type: string, raw: KubeObject): void {
    const rv = raw.metadata?.resourceVersion;
    if (type === 'BOOKMARK') {
      if (rv) this.rv = rv;
      return;
    }
    const o = this.opts.transform ? this.opts.transform(stripForCache(raw)) : raw;
    const k = objKey(o);
    const old = this.store.items.get(k);
    if ((type === 'ADDED' || type === 'MODIFIED') && !this.wanted(o)) {
      // Not held: an object the store had is dropped (its change still wakes whoever maps it); one it
      // never had changes nothing anyone reads.
      if (old) this.drop(k, o, old);
    } else if (type === 'ADDED' || type === 'MODIFIED') {
      this.store.items.set(k, stripForCache(o));
      if (old) this.emit('update', o, old);
      else this.emit('add', o);
    } else if (type === 'DELETED') {
      this.store.items.delete(k);
      this.emit('delete', old ?? o);
    }
    if (rv) this.rv = rv;
  }

  private wanted(o: KubeObject): boolean {
    return !this.opts.keep || this.opts.keep(o);
  }

  private drop(k: string, o: KubeObject, old: KubeObject): void {
    this.store.items.delete(k);
    this.dropped++;
    this.emit('update', o, old);
  }

  /**
   * Drops what `keep` no longer wants (whatever it rests on changed since the object arrived). Emits
   * nothing: the objects themselves did not change. Returns how many were dropped.
   */
  sweep(): number {
    if (!this.opts.keep || !this.store.synced) return 0;
    let n = 0;
    for (const [k, o] of [...this.store.items]) {
      if (this.wanted(o)) continue;
      this.store.items.delete(k);
      n++;
    }
    this.dropped += n;
    return n;
  }

  private async run(signal: AbortSignal): Promise<void> {
    const min = this.opts.minBackoffMs ?? MIN_BACKOFF_MS;
    const max = this.opts.maxBackoffMs ?? MAX_BACKOFF_MS;
    let backoff = min;
    let needList = true;
    while (!signal.aborted) {
      try {
        if (needList) {
          await this.relist();
          needList = false;
        }
        const lv = this.opts.liveness ?? DEFAULT_LIVENESS;
        const timeoutSeconds = lv.minTimeoutSeconds + Math.floor(Math.random() * (lv.maxTimeoutSeconds - lv.minTimeoutSeconds + 1));
        const started = Date.now();
        // This watch's own end: the informer stopping, or the stream outliving its expected lifetime.
        const stream = new AbortController();
        const stopStream = (): void => stream.abort();
        signal.addEventListener('abort', stopStream, { once: true });
        const dead = setTimeout(() => {
          this.staleWatches++;
          this.opts.log?.warn({ gvr: this.gvr.plural, timeoutSeconds }, 'watch outlived its timeout without closing (half-open connection); resuming it');
          stream.abort();
        }, timeoutSeconds * 1000 + lv.graceMs);
        dead.unref?.();
        try {
          await this.client.watch(
            this.gvr,
            this.opts.namespace || undefined,
            { resourceVersion: this.rv, labelSelector: this.opts.labelSelector, timeoutSeconds, allowBookmarks: true },
            (type, o) => this.onEvent(type, o),
            stream.signal,
          );
        } finally {
          clearTimeout(dead);
          signal.removeEventListener('abort', stopStream);
        }
        // A watch that ends at once (not by its timeout) is a disconnect; back off before re-watching.
        if (Date.now() - started < 1000 && !signal.aborted) {
          await sleep(backoff, signal);
          backoff = Math.min(backoff * 2, max);
        } else {
          backoff = min;
        }
      } catch (e) {
        if (signal.aborted) break;
        if (needList) {
          // The list failed. At an expired or too large resourceVersion, list again at once with a consistent
          // read (client-go: "fallback to resourceVersion=\"\" in all to recover and ensure the reflector makes
          // forward progress"); otherwise back off and list again.
          if ((isExpired(e) || isTooLargeResourceVersion(e)) && !this.unavailable) {
            this.unavailable = true;
            this.opts.log?.info({ gvr: this.gvr.plural, err: (e as Error).message }, 'list at the last resourceVersion refused; listing with a consistent read');
            continue;
          }
          this.opts.log?.warn({ gvr: this.gvr.plural, err: (e as Error).message, retryInMs: backoff }, 'list failed; retrying');
        } else {
          const next = afterWatchError(e);
          // The watch's resourceVersion is past what the server has: a list not older than it would wait
          // and fail the same way, so the relist goes straight to the consistent read.
          if (isTooLargeResourceVersion(e)) this.unavailable = true;
          if (next !== 'rewatch') needList = true;
          if (next === 'relist-now') {
            this.opts.log?.info({ gvr: this.gvr.plural }, 'watch expired (410); relisting');
            continue;
          }
          this.opts.log?.warn({ gvr: this.gvr.plural, err: (e as Error).message, retryInMs: backoff, next }, next === 'rewatch' ? 'watch failed; watching again' : 'watch failed; relisting');
        }
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, max);
      }
    }
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
