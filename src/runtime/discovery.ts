// Discovery of optional kinds (Forklift, CDI, KubeVirt, apps.cozystack.io). Nothing waits on an optional
// kind: start-up and readiness only depend on the CRD informer itself.
// - A kind served by a CRD: one informer on CustomResourceDefinitions tells when it becomes Established
//   (start its informer) or goes away (stop it). It keeps only the CRDs of tracked kinds, and of those only
//   the fields read here (group, plural, versions, Established): a Cozystack cluster has hundreds of CRDs,
//   some with megabytes of schema, none of which this controller reads. It lists in small pages, so the
//   full objects of one page at most are in memory at once.
// - A kind served by an aggregated API server (Cozystack's cozystack-api) or built into the API server: its
//   group version's discovery document says whether it is served, with watch. It is asked at start and
//   again whenever the group version's APIService changes (kube-aggregator's registration: an aggregated
//   server that comes up late becomes Available, and is picked up without a restart).
import type { Logger } from 'pino';
import { GVRs, gvrKey, type GVR } from './gvr.ts';
import { Informer } from './informer.ts';
import type { KubeClient, KubeObject } from './kube.ts';

export type InstallListener = (gvr: GVR, installed: boolean) => void;

/** The part of a version's schema kept: its spec's top-level field names, and whether it keeps unknown fields. */
interface SpecSchema {
  properties?: { spec?: { properties?: Record<string, unknown>; 'x-kubernetes-preserve-unknown-fields'?: boolean } };
}

interface CRDLike extends KubeObject {
  spec?: { group?: string; names?: { plural?: string }; versions?: Array<{ name: string; served?: boolean; schema?: { openAPIV3Schema?: SpecSchema } }> };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

interface APIServiceLike extends KubeObject {
  spec?: { group?: string; version?: string };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

/**
 * First re-ask of an Available APIService's document that does not serve its kinds yet; doubles to the
 * maximum. The aggregator's proxy is usually in place within a second; an aggregated server that serves a
 * document without the kind (an older cozystack-api) is asked twice a minute, never more.
 */
const DOCUMENT_RETRY_MS = 500;
const MAX_DOCUMENT_RETRY_MS = 30_000;

/**
 * CRDs per list page: each may hold megabytes of schema, and a page is parsed whole. With 500 CRDs of
 * 31 MiB (bench/cluster.ts crds), pages of 25 peak at 199 MiB RSS, pages of 100 at 276 MiB (one list of
 * everything, f63458f: 295 MiB); the price is start-up time (23 s against 18 s and 13 s).
 */
export const CRD_PAGE_SIZE = 25;

/** The name of the CRD that serves `gvr` (API conventions: <plural>.<group>). Pure. */
export function crdName(gvr: GVR): string {
  return `${gvr.plural}.${gvr.group}`;
}

/** The name of the APIService of `gvr`'s group version (<version>.<group>). Pure. */
export function apiServiceName(gvr: GVR): string {
  return `${gvr.version}.${gvr.group}`;
}

/** True when `crd` serves `gvr` and is Established. Pure. */
export function crdServes(crd: CRDLike, gvr: GVR): boolean {
  if (crd.spec?.group !== gvr.group || crd.spec?.names?.plural !== gvr.plural) return false;
  if (crd.metadata?.deletionTimestamp) return false;
  if (!crd.spec?.versions?.some((v) => v.name === gvr.version && v.served !== false)) return false;
  return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
}

/**
 * What the cache keeps of a CRD: what crdServes reads and, of each version's schema, only the names of its
 * spec's top-level fields (each as `{}`) and whether the spec keeps unknown fields — what feature detection
 * reads (src/forklift/features.ts: which Plan fields this Forklift knows), so that no reconcile has to read a
 * CRD of hundreds of kilobytes (Forklift's Plan) from the API server. Pure (a new object; the full one can
 * be collected).
 */
export function slimCRD(o: KubeObject): KubeObject {
  const c = o as CRDLike;
  const est = c.status?.conditions?.find((x) => x.type === 'Established');
  const slimVersion = (v: NonNullable<NonNullable<CRDLike['spec']>['versions']>[number]): Record<string, unknown> => {
    const spec = v.schema?.openAPIV3Schema?.properties?.spec;
    if (!spec) return { name: v.name, served: v.served };
    const kept: Record<string, unknown> = {};
    if (spec.properties) kept.properties = Object.fromEntries(Object.keys(spec.properties).map((k) => [k, {}]));
    if (spec['x-kubernetes-preserve-unknown-fields'] === true) kept['x-kubernetes-preserve-unknown-fields'] = true;
    return { name: v.name, served: v.served, schema: { openAPIV3Schema: { properties: { spec: kept } } } };
  };
  return {
    apiVersion: c.apiVersion,
    kind: c.kind,
    metadata: { name: c.metadata?.name, uid: c.metadata?.uid, resourceVersion: c.metadata?.resourceVersion, ...(c.metadata?.deletionTimestamp ? { deletionTimestamp: c.metadata.deletionTimestamp } : {}) },
    spec: { group: c.spec?.group, names: { plural: c.spec?.names?.plural }, versions: (c.spec?.versions ?? []).map(slimVersion) },
    status: { conditions: est ? [{ type: est.type, status: est.status }] : [] },
  };
}

/** True when an APIService says its group version is served (Available=True). Pure. */
export function apiServiceAvailable(a: APIServiceLike | undefined): boolean {
  return !!a && !a.metadata?.deletionTimestamp && (a.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True') ?? false);
}

/** An API group version's discovery document (GET /apis/<group>/<version>), the part read here. */
export interface APIResourceList {
  resources?: Array<{ name: string; verbs?: string[] }>;
}

/**
 * How a group version's discovery document serves `gvr`: `watch` (listed with list and watch: an
 * informer can cache it), `poll` (listed without them: read from the API server, woken by timers) or
 * `absent`. Pure.
 */
export function servedAs(doc: APIResourceList | undefined, gvr: GVR): 'watch' | 'poll' | 'absent' {
  const r = doc?.resources?.find((x) => x.name === gvr.plural);
  if (!r) return 'absent';
  const verbs = new Set(r.verbs ?? []);
  return verbs.has('list') && verbs.has('watch') ? 'watch' : 'poll';
}

/** Kinds found through their group version's discovery document (not a CRD). */
function byDocument(gvr: GVR): boolean {
  return gvr.group.endsWith('.k8s.io') || !!gvr.aggregated;
}

export class Discovery {
  private readonly client: KubeClient;
  private readonly log: Logger | undefined;
  readonly crds: Informer;
  /** APIServices of the group versions asked by document: each change asks the document again. */
  readonly apiServices: Informer;
  private readonly tracked = new Map<string, { gvr: GVR; installed: boolean }>();
  /** Kinds found by their discovery document (built in or aggregated), not by a CRD. */
  private readonly builtin = new Set<string>();
  private readonly listeners: InstallListener[] = [];
  /** Group versions whose document is being asked (one question at a time per group version). */
  private readonly asking = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  /** Re-asks of a group version whose APIService is Available but whose document does not serve its kinds yet. */
  private readonly retries = new Map<string, { timer: NodeJS.Timeout; delayMs: number }>();
  private stopped = false;

  constructor(client: KubeClient, log?: Logger, onList?: () => void) {
    this.client = client;
    this.log = log;
    const crdNames = (): Set<string> => new Set([...this.tracked.values()].map((t) => crdName(t.gvr)));
    this.crds = new Informer(client, GVRs.CustomResourceDefinition, { log, onList, keep: (o) => crdNames().has(o.metadata?.name ?? ''), transform: slimCRD, pageSize: CRD_PAGE_SIZE });
    this.crds.addHandlers({ add: () => this.recompute(true), update: () => this.recompute(true), delete: () => this.recompute(true) });
    const serviceNames = (): Set<string> => new Set([...this.tracked.values()].filter((t) => byDocument(t.gvr)).map((t) => apiServiceName(t.gvr)));
    this.apiServices = new Informer(client, GVRs.APIService, { log, keep: (o) => serviceNames().has(o.metadata?.name ?? '') });
    const onService = (o: KubeObject): void => {
      const name = o.metadata?.name ?? '';
      if (!serviceNames().has(name)) return;
      const now = this.apiServices.store.get(undefined, name) as APIServiceLike | undefined;
      // Asked when it becomes Available (the aggregated server answers discovery) or goes away.
      if (!now || apiServiceAvailable(now)) void this.askGroupVersion(name, now);
    };
    this.apiServices.addHandlers({ add: onService, update: (_old, o) => onService(o), delete: onService });
  }

  onChange(l: InstallListener): void {
    this.listeners.push(l);
  }

  /** Tracks an optional kind; listeners hear about it once it is (or stops being) served. */
  track(gvr: GVR): void {
    const k = gvrKey(gvr);
    if (this.tracked.has(k)) return;
    this.tracked.set(k, { gvr, installed: false });
    this.recompute();
  }

  installed(gvr: GVR): boolean {
    if (!gvr.optional) return true;
    return this.tracked.get(gvrKey(gvr))?.installed ?? false;
  }

  /**
   * The CRD that serves a tracked kind, as the cache keeps it (slimCRD), while it is installed by a CRD;
   * undefined otherwise (not tracked, not installed, served by an aggregated server or built in).
   */
  definition(gvr: GVR): KubeObject | undefined {
    if (!this.installed(gvr) || !this.crds.hasSynced()) return undefined;
    const c = this.crds.store.get(undefined, crdName(gvr)) as CRDLike | undefined;
    return c && crdServes(c, gvr) ? c : undefined;
  }

  async start(): Promise<void> {
    // Built-in optional APIs (e.g. networking.k8s.io ServiceCIDR on newer clusters) and aggregated ones
    // (Cozystack's apps.cozystack.io) have no CRD: their group's discovery document says whether they are
    // served. An aggregated kind served without watch is not "installed" for the informers: its readers
    // fall back to the API server (ctx.cache() answers undefined) and its waits to timed requeues.
    const gvs = new Set([...this.tracked.values()].filter((t) => byDocument(t.gvr)).map((t) => apiServiceName(t.gvr)));
    await Promise.all([...gvs].map((gv) => this.askGroupVersion(gv, undefined)));
    this.crds.start();
    void this.crds.waitForSync().then(() => this.recompute(true));
    // Not waited for: without it (no permission to watch APIServices, say) only a late aggregated server
    // goes unnoticed until a restart, as before.
    if (gvs.size) this.apiServices.start();
  }

  /**
   * Asks a group version's discovery document and records what it serves. `service` is its APIService as
   * last seen (undefined at start): one deleted withdraws the kinds found through it.
   */
  private askGroupVersion(gv: string, service: APIServiceLike | undefined): Promise<void> {
    const busy = this.asking.get(gv);
    if (busy) {
      this.again.add(gv);
      return busy;
    }
    const gone = this.apiServices.hasSynced() && !service;
    const p = (async () => {
      const kinds = [...this.tracked.values()].filter((t) => byDocument(t.gvr) && apiServiceName(t.gvr) === gv);
      const [version, ...group] = gv.split('.');
      // A probe: a group version not served answers a bare 404 at once (not retried), read as no document.
      const doc = gone ? undefined : await this.client.request<APIResourceList>('GET', `/apis/${group.join('.')}/${version}`, undefined, undefined, undefined, undefined, { probe: true }).catch(() => undefined);
      if (this.stopped) return;
      for (const t of kinds) {
        const served = servedAs(doc, t.gvr);
        if (served === 'poll') this.log?.info({ kind: t.gvr.kind, group: t.gvr.group }, 'served without watch: read from the API server and polled');
        // A document that cannot be read while its APIService stands (the aggregated server restarting)
        // withdraws nothing: only a deleted APIService, or a document without the kind, does. Informers of
        // a kind that stops answering retry on their own.
        if (doc === undefined && !gone) continue;
        if (served === 'watch') this.builtin.add(gvrKey(t.gvr));
        else this.builtin.delete(gvrKey(t.gvr));
      }
      this.recompute();
      // kube-aggregator marks an APIService Available before its proxy for that group version is in place:
      // the document asked at that moment is a 404 or 503. Asked again, with backoff, while it stays so.
      const pending = apiServiceAvailable(service) && kinds.some((t) => servedAs(doc, t.gvr) === 'absent');
      const prev = this.retries.get(gv);
      if (prev) clearTimeout(prev.timer);
      if (!pending) {
        this.retries.delete(gv);
        return;
      }
      const delayMs = Math.min((prev?.delayMs ?? DOCUMENT_RETRY_MS / 2) * 2, MAX_DOCUMENT_RETRY_MS);
      const timer = setTimeout(() => void this.askGroupVersion(gv, this.apiServices.store.get(undefined, gv) as APIServiceLike | undefined), delayMs);
      timer.unref();
      this.retries.set(gv, { timer, delayMs });
    })().finally(() => {
      this.asking.delete(gv);
      if (this.again.delete(gv) && !this.stopped) void this.askGroupVersion(gv, this.apiServices.store.get(undefined, gv) as APIServiceLike | undefined);
    });
    this.asking.set(gv, p);
    return p;
  }

  hasSynced(): boolean {
    return this.crds.hasSynced();
  }

  waitForSync(): Promise<void> {
    return this.crds.waitForSync();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const r of this.retries.values()) clearTimeout(r.timer);
    this.retries.clear();
    await Promise.all([this.crds.stop(), this.apiServices.stop()]);
  }

  /** Each tracked kind is installed when its discovery document serves it with watch, or an Established CRD does. */
  private recompute(crdChanged = false): void {
    const crds = this.crds.hasSynced() ? (this.crds.store.list() as CRDLike[]) : [];
    for (const [k, t] of this.tracked) {
      const byCRD = crds.some((c) => crdServes(c, t.gvr));
      // A CRD of a kind found by document, Established later than its APIService appeared: ask again
      // (the document lists it only once the CRD is Established).
      if (crdChanged && byCRD && byDocument(t.gvr) && !this.builtin.has(k)) void this.askGroupVersion(apiServiceName(t.gvr), this.apiServices.store.get(undefined, apiServiceName(t.gvr)) as APIServiceLike | undefined);
      const now = byCRD || this.builtin.has(k);
      if (now === t.installed) continue;
      if (!now && !this.crds.hasSynced()) continue;
      t.installed = now;
      this.log?.info({ kind: t.gvr.kind, group: t.gvr.group, installed: now }, now ? 'optional kind appeared' : 'optional kind removed');
      for (const l of this.listeners) l(t.gvr, now);
    }
  }
}
