// Runs reconcilers: one informer per watched kind (shared between reconcilers), a work queue and N workers
// per reconciler, optional kinds started and stopped through discovery, metrics and logs per reconcile.
import type { Logger } from 'pino';
import type { Metrics } from '../telemetry/metrics.ts';
import { Discovery } from './discovery.ts';
import { FaultTracker, writeDegraded } from './faults.ts';
import { gvrKey, type GVR } from './gvr.ts';
import { Informer, UnionCache, type WatchLiveness } from './informer.ts';
import { ApiError, type KubeClient, type KubeObject } from './kube.ts';
import { keyString, parseKey, TerminalError, type Cache, type EventRecorder, type ObjectKey, type ReconcileContext, type Reconciler, type Watch } from './reconciler.ts';
import { jsonEqual } from './status.ts';
import { WorkQueue, type RateLimiter } from './workqueue.ts';
import { TimerWheel } from './timerwheel.ts';

export interface ManagerOptions {
  client: KubeClient;
  log: Logger;
  metrics: Metrics;
  events: EventRecorder;
  /** Namespace scope of namespaced informers; '' or undefined = all namespaces. */
  namespace?: string;
  /** Workers per reconciler. */
  workers?: number;
  /** Tests inject a faster limiter. */
  rateLimiter?: () => RateLimiter;
  now?: () => Date;
  /** Watch timeouts and the bound on a silent (half-open) watch; default client-go's 5–10 min + 30 s. */
  watchLiveness?: WatchLiveness;
  /** How often caches with a `keep` rule drop what it no longer wants (default CACHE_SWEEP_MS). */
  cacheSweepMs?: number;
}

/**
 * A cache with a `keep` rule is swept this often: an object it holds stops being wanted when something
 * else changes (its task ends), not itself, so nothing else would drop it. A minute keeps what ended
 * recently for at most a minute, at the cost of one pass over such caches (a predicate per object).
 */
export const CACHE_SWEEP_MS = 60_000;

interface Subscription {
  reconciler: Registered;
  /** The reconciler's own kind (not a secondary watch). */
  primary: boolean;
  map: (obj: KubeObject, cache: (gvr: GVR) => Cache | undefined) => ObjectKey[];
  keep?: Watch['keep'];
}

interface Registered {
  r: Reconciler;
  queue: WorkQueue;
  log: Logger;
  /** Consecutive failures per key (the Degraded condition). */
  faults: FaultTracker;
}

interface InformerSlot {
  gvr: GVR;
  labelSelector?: string;
  informer?: Informer;
  subs: Subscription[];
}

export class Manager {
  private readonly o: ManagerOptions;
  readonly discovery: Discovery;
  private readonly registered: Registered[] = [];
  private readonly slots = new Map<string, InformerSlot>();
  private workers: Promise<void>[] = [];
  private started = false;
  private workersStarted = false;
  /** Workers take keys only while this says so (leader election: only while the lease surely holds). */
  private gate: () => boolean = () => true;
  private paused = false;
  /** One timer for every timed requeue and retry of every reconciler's queue. */
  private readonly wheel: TimerWheel;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(o: ManagerOptions) {
    this.o = o;
    this.wheel = new TimerWheel({ onWake: () => o.metrics.timerWakeups.inc() });
    this.discovery = new Discovery(o.client, o.log.child({ component: 'discovery' }), () => o.metrics.informerLists.inc({ kind: 'CustomResourceDefinition' }));
    this.discovery.onChange((gvr, installed) => this.onOptionalKind(gvr, installed));
  }

  register(r: Reconciler): void {
    if (this.started) throw new Error('register reconcilers before start()');
    const m = this.o.metrics;
    const name = r.name;
    const queue = new WorkQueue(name, {
      rateLimiter: this.o.rateLimiter?.(),
      // A reconcile supersedes its key's pending timed requeue (see WorkQueue).
      supersedeTimedAdds: true,
      wheel: this.wheel,
      metrics: {
        depth: (n) => m.queueDepth.set({ name }, n),
        add: () => m.queueAdds.inc({ name }),
        retry: () => m.queueRetries.inc({ name }),
        latency: (s) => m.queueLatency.observe({ name }, s),
        workDuration: (s) => m.queueWorkDuration.observe({ name }, s),
      },
    });
    const reg: Registered = { r, queue, log: this.o.log.child({ controller: name }), faults: new FaultTracker() };
    this.registered.push(reg);
    this.subscribe(r.primary, undefined, { reconciler: reg, primary: true, map: (o) => [{ namespace: o.metadata?.namespace ?? '', name: o.metadata?.name ?? '' }] });
    for (const w of r.watches) this.subscribe(w.gvr, w.labelSelector, { reconciler: reg, primary: false, map: w.map, keep: w.keep });
  }

  private slotKey(gvr: GVR, labelSelector?: string): string {
    return `${gvrKey(gvr)}|${labelSelector ?? ''}`;
  }

  /** Every informer slot of a kind (one per distinct selector). */
  private slotsOf(gvr: GVR): InformerSlot[] {
    const k = gvrKey(gvr);
    return [...this.slots.values()].filter((s) => gvrKey(s.gvr) === k);
  }

  /**
   * One informer per kind and selector: watchers of one kind with different selectors get separate,
   * filtered informers (their caches hold only what the selectors ask for: a cluster's every claim and
   * DataVolume would otherwise sit in memory). Only when some watcher wants the kind unfiltered do all of
   * its watchers share that one informer (its cache holds everything anyway).
   */
  private subscribe(gvr: GVR, labelSelector: string | undefined, sub: Subscription): void {
    const unfiltered = this.slots.get(this.slotKey(gvr));
    const k = this.slotKey(gvr, unfiltered ? undefined : labelSelector);
    let slot = this.slots.get(k);
    if (!slot) {
      slot = { gvr, labelSelector: unfiltered ? undefined : labelSelector, subs: [] };
      this.slots.set(k, slot);
    }
    slot.subs.push(sub);
    if (!slot.labelSelector) {
      // An unfiltered watcher: the kind's filtered slots fold into this one.
      for (const other of this.slotsOf(gvr)) {
        if (other === slot) continue;
        slot.subs.push(...other.subs);
        this.slots.delete(this.slotKey(gvr, other.labelSelector));
      }
    }
  }

  /** Objects held per informer cache, by kind and selector (the soak test checks they stay bounded). */
  cacheSizes(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const s of this.slots.values()) if (s.informer) out[`${s.gvr.kind}${s.labelSelector ? `{${s.labelSelector}}` : ''}`] = s.informer.store.items.size;
    return out;
  }

  /** The slot's keep rule: an object is held when any subscriber wants it; every object when one has no rule. */
  private keepOf(slot: InformerSlot): ((o: KubeObject) => boolean) | undefined {
    if (slot.subs.some((s) => !s.keep)) return undefined;
    const lookup = (gvr: GVR): Cache | undefined => this.cache(gvr);
    return (o) => slot.subs.some((s) => s.keep!(o, lookup));
  }

  /** Every cache with a keep rule drops what the rule no longer wants; returns how many objects went. */
  sweep(): number {
    let n = 0;
    for (const s of this.slots.values()) n += s.informer?.sweep() ?? 0;
    return n;
  }

  private makeInformer(slot: InformerSlot): Informer {
    const inf = new Informer(this.o.client, slot.gvr, {
      keep: this.keepOf(slot),
      namespace: slot.gvr.namespaced ? this.o.namespace || undefined : undefined,
      labelSelector: slot.labelSelector,
      log: this.o.log.child({ component: 'informer', kind: slot.gvr.kind }),
      onList: () => this.o.metrics.informerLists.inc({ kind: slot.gvr.kind }),
      liveness: this.o.watchLiveness,
    });
    const fire = (objs: KubeObject[], old?: KubeObject): void => {
      for (const s of slot.subs) {
        const cause = `watch:${slot.gvr.kind}`;
        // A reconciler's own status write comes back as an update of its primary object; it reflects what
        // that reconcile already knew, so it wakes nothing.
        if (s.primary && old && statusOnlyChange(old, objs[0]!)) {
          this.o.metrics.wakeups.inc({ controller: s.reconciler.r.name, cause: `${cause}:filtered` });
          continue;
        }
        const keys = new Set<string>();
        for (const obj of objs) {
          try {
            for (const key of s.map(obj, (gvr) => this.cache(gvr))) if (key.name) keys.add(keyString(key));
          } catch (e) {
            s.reconciler.log.error({ err: (e as Error).message }, 'watch mapping failed');
          }
        }
        for (const k of keys) {
          this.o.metrics.wakeups.inc({ controller: s.reconciler.r.name, cause });
          s.reconciler.queue.add(k);
        }
      }
    };
    inf.addHandlers({ add: (o) => fire([o]), update: (old, obj) => fire([obj, old], old), delete: (o) => fire([o]) });
    return inf;
  }

  /** Starts discovery and the informers of required kinds; workers start with startWorkers(). */
  async start(): Promise<void> {
    this.started = true;
    for (const slot of this.slots.values()) if (slot.gvr.optional) this.discovery.track(slot.gvr);
    await this.discovery.start();
    for (const slot of this.slots.values()) {
      if (slot.gvr.optional) continue;
      slot.informer = this.makeInformer(slot);
      slot.informer.start();
    }
    if ([...this.slots.values()].some((s) => this.keepOf(s))) {
      this.sweeper = setInterval(() => {
        const n = this.sweep();
        if (n) this.o.log.debug({ dropped: n }, 'caches swept');
      }, this.o.cacheSweepMs ?? CACHE_SWEEP_MS);
      this.sweeper.unref();
    }
  }

  private onOptionalKind(gvr: GVR, installed: boolean): void {
    for (const slot of this.slotsOf(gvr)) this.onOptionalSlot(slot, installed);
  }

  private onOptionalSlot(slot: InformerSlot, installed: boolean): void {
    if (installed && !slot.informer) {
      const inf = this.makeInformer(slot);
      slot.informer = inf;
      inf.start();
      // Objects that waited for this kind (e.g. a source reporting ForkliftNotInstalled) look again once the
      // cache can answer.
      void inf.waitForSync().then(() => this.requeueSubscribers(slot));
    } else if (!installed && slot.informer) {
      const inf = slot.informer;
      slot.informer = undefined;
      void inf.stop();
      this.requeueSubscribers(slot);
    }
  }

  private requeueSubscribers(slot: InformerSlot): void {
    for (const s of new Set(slot.subs.map((x) => x.reconciler))) {
      const primary = this.slots.get(this.slotKey(s.r.primary))?.informer;
      for (const o of primary?.store.list() ?? []) s.queue.add(keyString({ namespace: o.metadata?.namespace ?? '', name: o.metadata?.name ?? '' }));
    }
  }

  /** Caches of required kinds synced (optional kinds never count). */
  ready(): boolean {
    if (!this.discovery.hasSynced()) return false;
    for (const slot of this.slots.values()) if (!slot.gvr.optional && !slot.informer?.hasSynced()) return false;
    return true;
  }

  async waitForSync(): Promise<void> {
    await this.discovery.waitForSync();
    await Promise.all([...this.slots.values()].filter((s) => !s.gvr.optional).map((s) => s.informer?.waitForSync()));
  }

  cache<T extends KubeObject = KubeObject>(gvr: GVR): Cache<T> | undefined {
    const slots = this.slotsOf(gvr);
    if (!slots.length || !slots.every((s) => s.informer?.hasSynced())) return undefined;
    if (slots.length === 1) return slots[0]!.informer!.store as unknown as Cache<T>;
    // Several filtered informers of one kind: read as one cache holding the union of their selectors.
    return new UnionCache(slots.map((s) => s.informer!.store)) as unknown as Cache<T>;
  }

  informer(gvr: GVR): Informer | undefined {
    return (this.slots.get(this.slotKey(gvr)) ?? this.slotsOf(gvr)[0])?.informer;
  }

  installed(gvr: GVR): boolean {
    return this.discovery.installed(gvr);
  }

  /** Starts N workers per reconciler (call when leading). */
  startWorkers(): void {
    if (this.workersStarted) return;
    this.workersStarted = true;
    const n = Math.max(1, this.o.workers ?? 2);
    for (const reg of this.registered) for (let i = 0; i < n; i++) this.workers.push(this.worker(reg));
  }

  /** Dispatch only while `gate()` holds (checked before each reconcile). */
  setGate(gate: () => boolean): void {
    this.gate = gate;
  }

  /** Stops dispatching at once (leadership lost); what is queued stays for no one. */
  pause(): void {
    this.paused = true;
  }

  private async worker(reg: Registered): Promise<void> {
    for (;;) {
      const k = await reg.queue.get();
      if (k === undefined) return;
      if (this.paused || !this.gate()) {
        // Not (surely) the leader: nothing is dispatched; the next leader reconciles every object anyway.
        reg.queue.done(k);
        continue;
      }
      try {
        await this.processOne(reg, k);
      } finally {
        reg.queue.done(k);
      }
    }
  }

  private async processOne(reg: Registered, k: string): Promise<void> {
    const key = parseKey(k);
    const m = this.o.metrics;
    const name = reg.r.name;
    const log = reg.log.child({ namespace: key.namespace, name: key.name });
    const ctx: ReconcileContext = {
      client: this.o.client,
      cache: <T extends KubeObject = KubeObject>(gvr: GVR) => this.cache<T>(gvr),
      installed: (gvr) => this.installed(gvr),
      definition: (gvr) => this.discovery.definition(gvr),
      log,
      events: this.o.events,
      now: this.o.now ?? (() => new Date()),
    };
    const end = m.reconcileDuration.startTimer({ controller: name });
    try {
      const res = await reg.r.reconcile(key, ctx);
      reg.queue.forget(k);
      await this.clearFault(reg, k, key, ctx);
      if (res.requeueAfterMs !== undefined && res.requeueAfterMs >= 0) {
        const delay = res.requeueAfterMs;
        reg.queue.addAfter(k, delay, () => m.wakeups.inc({ controller: name, cause: `requeue:${delayBucket(delay)}` }));
        m.reconcileTotal.inc({ controller: name, result: 'requeue' });
      } else {
        m.reconcileTotal.inc({ controller: name, result: 'success' });
      }
    } catch (e) {
      if (e instanceof TerminalError) {
        reg.queue.forget(k);
        m.reconcileTotal.inc({ controller: name, result: 'terminal' });
        m.reconcileErrors.inc({ controller: name, reason: e.reason });
        log.warn({ reason: e.reason, err: e.message }, 'terminal error; not retrying');
      } else {
        const reason = e instanceof ApiError ? e.reason : 'Error';
        m.reconcileTotal.inc({ controller: name, result: 'error' });
        m.reconcileErrors.inc({ controller: name, reason });
        log.warn({ err: (e as Error).message, reason, retries: reg.queue.numRequeues(k) }, 'reconcile failed; retrying with backoff');
        reg.queue.addRateLimited(k, () => m.wakeups.inc({ controller: name, cause: 'retry' }));
        await this.reportFault(reg, k, key, ctx, e);
      }
    } finally {
      end();
    }
  }

  /** A failure of `k`: once it is a fault (faults.ts), the object's Degraded condition says so. */
  private async reportFault(reg: Registered, k: string, key: ObjectKey, ctx: ReconcileContext, e: unknown): Promise<void> {
    const f = reg.faults.failed(k, e, ctx.now());
    if (!f || !reg.r.faultConditions) return;
    const ok = await writeDegraded(this.o.client, reg.r.primary, key.namespace, key.name, f, false, ctx.now());
    reg.faults.markReported(k, ok);
  }

  /** A clean reconcile of `k`: a Degraded condition written for it is cleared (kept tracked until it is). */
  private async clearFault(reg: Registered, k: string, key: ObjectKey, ctx: ReconcileContext): Promise<void> {
    const f = reg.faults.get(k);
    if (!f) return;
    if (!f.reported || !reg.r.faultConditions) {
      reg.faults.forget(k);
      return;
    }
    if (await writeDegraded(this.o.client, reg.r.primary, key.namespace, key.name, f, true, ctx.now())) reg.faults.forget(k);
  }

  /** In-memory map sizes per reconciler, with its failing keys (the soak test checks they stay bounded). */
  memory(): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = {};
    for (const reg of this.registered) out[reg.r.name] = { ...(reg.r.memory?.() ?? {}), faults: reg.faults.size() };
    return out;
  }

  /** Keys currently failing per reconciler (tests, the soak benchmark). */
  faultCount(reconciler: string): number {
    return this.registered.find((r) => r.r.name === reconciler)?.faults.size() ?? 0;
  }

  /** Enqueues a key by hand (tests, cross-controller nudges). */
  enqueue(reconciler: string, key: ObjectKey): void {
    this.registered.find((r) => r.r.name === reconciler)?.queue.add(keyString(key));
  }

  async stop(): Promise<void> {
    clearInterval(this.sweeper);
    for (const reg of this.registered) reg.queue.shutdown();
    this.wheel.clear();
    await Promise.all(this.workers);
    await Promise.all([...this.slots.values()].map((s) => s.informer?.stop()));
    await this.discovery.stop();
  }
}

/**
 * True when an update changed nothing a reconciler acts on: same generation (spec), deletion state,
 * finalizers, labels, annotations and owners — only status (and bookkeeping such as resourceVersion or
 * managedFields). Pure.
 */
export function statusOnlyChange(old: KubeObject, obj: KubeObject): boolean {
  const a = old.metadata ?? {};
  const b = obj.metadata ?? {};
  if (a.uid !== b.uid || a.generation !== b.generation || a.deletionTimestamp !== b.deletionTimestamp) return false;
  return jsonEqual(a.finalizers ?? [], b.finalizers ?? []) && jsonEqual(a.labels ?? {}, b.labels ?? {}) && jsonEqual(a.annotations ?? {}, b.annotations ?? {}) && jsonEqual(a.ownerReferences ?? [], b.ownerReferences ?? []);
}

/** A coarse label for a requeue delay (metric cardinality stays fixed). */
export function delayBucket(ms: number): string {
  if (ms <= 0) return 'now';
  if (ms <= 100) return 'le100ms';
  if (ms <= 2_000) return 'le2s';
  if (ms <= 30_000) return 'le30s';
  return 'gt30s';
}
