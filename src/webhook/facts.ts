// The thin async layer: gathers what the pure validators need from the cluster and the inventory.
// Every read is bounded (the API server gives the whole webhook call 5 s) and cached for a short TTL;
// a read that fails or times out becomes a Fact error, which validators turn into a warning.
import { GVRs } from '../runtime/gvr.ts';
import { isNotServed, ApiError, type KubeClient, type KubeObject } from '../runtime/kube.ts';
import type { ServiceCIDRResolver } from '../preflight/cidr.ts';
import type { StorageClassLike } from '../preflight/storage.ts';
import { asArray, asObject, asString, type Fact, type JsonObject } from './fields.ts';
import type { SourceFacts } from './validate-source.ts';
import { apiServerAddresses, listNodeNetworks } from '../preflight/podcidr.ts';
import { LABEL_MANAGED_BY, MANAGED_BY_VALUE } from '../api/labels.ts';
import type { VMImportTask } from '../api/types.ts';
import { tasksHoldingSource } from '../controllers/source/inuse.ts';
import { vmConcerns } from '../forklift/assess.ts';
import type { EgressPolicy } from '../preflight/egress.ts';
import { mapsToMultus, type CachedFact, type InventoryHost, type InventoryReader, type InventoryVM, type QuotaLike, type TaskFacts } from './validate-task.ts';
import type { InventoryNetworkLike } from '../forklift/maps.ts';

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ApiError(0, 'Timeout', `${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** Entries a TTLCache keeps at most (a flood of distinct namespaces or VM ids cannot grow memory without limit). */
export const TTL_CACHE_MAX_ENTRIES = 10_000;
/**
 * No entry outlives this, however it is asked for: the longest any caller accepts is the inventory's TTL
 * (30 s) served up to six TTLs stale, 3 min. Older entries are evicted, so a namespace or VM asked about
 * once does not hold memory for the life of the process.
 */
export const TTL_CACHE_MAX_AGE_MS = 3 * 60_000;

/**
 * A TTL cache with in-flight de-duplication: a burst of reviews costs one read. Bounded both ways: at most
 * `maxEntries` entries (the oldest evicted first) and none older than `maxAgeMs` (evicted as newer ones
 * arrive and on lookup). A fresh lookup joins a load in flight for its key, else starts one.
 */
export class TTLCache {
  // Map order is age order: an entry is re-inserted when it is replaced.
  private readonly entries = new Map<string, { at: number; seq: number; value: unknown }>();
  private readonly inflight = new Map<string, { seq: number; p: Promise<unknown> }>();
  private readonly now: () => number;
  private readonly maxEntries: number;
  private readonly maxAgeMs: number;
  private seq = 0;
  constructor(o: { now?: () => number; maxEntries?: number; maxAgeMs?: number } = {}) {
    this.now = o.now ?? Date.now;
    this.maxEntries = o.maxEntries ?? TTL_CACHE_MAX_ENTRIES;
    this.maxAgeMs = o.maxAgeMs ?? TTL_CACHE_MAX_AGE_MS;
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * Fresh within `ttlMs`; between `ttlMs` and `staleMs` the cached value is returned at once and refreshed
   * in the background (a slow API server then delays one refresh, not every review behind it).
   */
  async get<T>(key: string, ttlMs: number, load: () => Promise<T>, o: { fresh?: boolean; cacheIf?: (v: T) => boolean; staleMs?: number } = {}): Promise<{ value: T; cached: boolean }> {
    this.evictExpired();
    const e = this.entries.get(key);
    if (o.fresh) return { value: await this.load(key, load, o.cacheIf), cached: false };
    const age = e ? this.now() - e.at : Infinity;
    if (e && age < ttlMs) return { value: e.value as T, cached: true };
    if (e && age < (o.staleMs ?? 0)) {
      this.load(key, load, o.cacheIf).catch(() => undefined);
      return { value: e.value as T, cached: true };
    }
    return { value: await this.load(key, load, o.cacheIf), cached: false };
  }

  private evictExpired(): void {
    const oldest = this.now() - this.maxAgeMs;
    for (const [k, e] of this.entries) {
      if (e.at > oldest) break;
      this.entries.delete(k);
    }
  }

  /** Joins the load in flight for `key`, else starts one. */
  private load<T>(key: string, load: () => Promise<T>, cacheIf?: (v: T) => boolean): Promise<T> {
    const running = this.inflight.get(key);
    if (running) return running.p as Promise<T>;
    const seq = ++this.seq;
    const p = load().then((value) => {
      const cur = this.entries.get(key);
      // A slower, older load never replaces what a newer one cached.
      if ((!cacheIf || cacheIf(value)) && !(cur && cur.seq > seq)) {
        this.entries.delete(key);
        if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
        this.entries.set(key, { at: this.now(), seq, value });
      }
      return value;
    });
    const entry = { seq, p: p as Promise<unknown> };
    this.inflight.set(key, entry);
    p.finally(() => {
      if (this.inflight.get(key) === entry) this.inflight.delete(key);
    }).catch(() => undefined);
    return p;
  }
}

function errText(e: unknown): string {
  if (e instanceof ApiError) return e.code ? `HTTP ${e.code} ${e.reason}: ${e.message.slice(0, 200)}` : e.message.slice(0, 200);
  return e instanceof Error ? e.message.slice(0, 200) : String(e).slice(0, 200);
}

/** 404 from the inventory (InventoryError: status 404, code 'NotFound'); never an API server's answer. */
function looksNotFound(e: unknown): boolean {
  if (e instanceof ApiError) return false;
  const x = (e ?? {}) as { code?: unknown; status?: unknown; statusCode?: unknown };
  return x.status === 404 || x.statusCode === 404 || x.code === 404 || x.code === 'NotFound';
}

/** The inventory is another service: take only the fields we use, in the types we expect. */
export function normaliseVM(x: unknown): InventoryVM | null {
  const o = asObject(x);
  if (!o) return null;
  const bool = (v: unknown): boolean | undefined => (typeof v === 'boolean' ? v : undefined);
  const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
  const disks = (asArray(o.disks) ?? []).map((x) => {
    const d = asObject(x) ?? {};
    // The warm facts (kubev2v/forklift@v2.11.5:pkg/controller/provider/model/vsphere/model.go Disk), kept only when served.
    const warm = { file: asString(d.file), rdm: bool(d.rdm), mode: asString(d.mode), shared: bool(d.shared), changeTrackingEnabled: bool(d.changeTrackingEnabled), bus: asString(d.bus), controllerKey: num(d.controllerKey), unitNumber: num(d.unitNumber) };
    return { capacity: Number(d.capacity) || 0, ...Object.fromEntries(Object.entries(warm).filter(([, v]) => v !== undefined)) };
  });
  const snap = asObject(o.snapshot);
  return {
    name: asString(o.name) ?? asString(o.id) ?? '',
    host: asString(o.host),
    disks,
    ...(typeof o.changeTrackingEnabled === 'boolean' ? { changeTrackingEnabled: o.changeTrackingEnabled } : {}),
    ...(snap ? { snapshot: { kind: asString(snap.kind), id: asString(snap.id) } } : {}),
    // The readiness assessment (src/forklift/assess.ts): Forklift's concerns and ours, Critical first.
    assessed: vmConcerns(o),
    // Each NIC's network, as src/forklift/maps.ts nicNetworkIds reads them: the NICs, else the VM's networks.
    ...(asArray(o.nics) || asArray(o.networks) ? { nicNetworks: nicNetworksOf(o) } : {}),
  };
}

function nicNetworksOf(o: JsonObject): string[] {
  const nics = asArray(o.nics) ?? [];
  const ids = nics.length ? nics.map((n) => asString(asObject(asObject(n)?.network)?.id)) : (asArray(o.networks) ?? []).map((n) => asString(asObject(n)?.id));
  return ids.filter((x): x is string => !!x);
}

export function normaliseNetworks(x: unknown): InventoryNetworkLike[] {
  return (asArray(x) ?? []).map(asObject).flatMap((n) => (n && typeof n.id === 'string' ? [{ id: n.id, ...(typeof n.name === 'string' ? { name: n.name } : {}) }] : []));
}

export function normaliseHosts(x: unknown): InventoryHost[] {
  return (asArray(x) ?? []).map(asObject).flatMap((h) => (h && typeof h.id === 'string' && typeof h.name === 'string' ? [{ id: h.id, name: h.name }] : []));
}

export interface FactsOptions {
  client: KubeClient;
  inventory?: InventoryReader;
  cidr: ServiceCIDRResolver;
  /** Namespace the Service-CIDR probe Service is created in; default: the request's namespace. */
  probeNamespace?: string;
  /** Bound on each read. The API server waits 5 s for the whole call; two sequential reads must fit. */
  readTimeoutMs?: number;
  /** TTL of cached cluster reads (storage classes, quotas, sources). */
  cacheTtlMs?: number;
  /** TTL of cached inventory reads (VM disks and hosts change rarely). */
  inventoryTtlMs?: number;
}

export interface Gathered<F> {
  facts: F;
  /** Some fact came from the cache: a denial is re-checked with fresh reads before it is returned. */
  usedCache: boolean;
  /** Which of the task's facts came (wholly or in part) from the cache. */
  cachedFacts: Set<CachedFact>;
}

/** What the nodes and the API server's endpoints say about the cluster's own addresses. */
export interface NodeNetworks {
  podCIDRs: string[];
  nodeAddresses: string[];
  apiServerAddresses: string[];
}

export class FactsGatherer {
  private readonly o: Required<Omit<FactsOptions, 'inventory' | 'probeNamespace'>> & Pick<FactsOptions, 'inventory' | 'probeNamespace'>;
  private readonly cache = new TTLCache();

  constructor(o: FactsOptions) {
    this.o = { ...o, readTimeoutMs: o.readTimeoutMs ?? 1500, cacheTtlMs: o.cacheTtlMs ?? 5000, inventoryTtlMs: o.inventoryTtlMs ?? 30_000 };
  }

  /**
   * `fresh`: true reads afresh; 'ttl' takes a cached answer only within its TTL (never a stale one);
   * false also serves up to 6 TTLs stale while refreshing (denials are re-checked anyway).
   */
  private async fact<T>(key: string, ttl: number, what: string, load: () => Promise<T>, fresh: boolean | 'ttl', flags: { cached: boolean; facts?: Set<CachedFact> }, cacheIf?: (v: T) => boolean, name?: CachedFact): Promise<Fact<T>> {
    try {
      const r = await this.cache.get(key, ttl, () => withTimeout(load(), this.o.readTimeoutMs, what), { fresh: fresh === true, cacheIf, staleMs: fresh ? 0 : ttl * 6 });
      if (r.cached) {
        flags.cached = true;
        if (name) flags.facts?.add(name);
      }
      return { value: r.value };
    } catch (e) {
      return { error: errText(e) };
    }
  }

  private serviceCIDRs(namespace: string): Promise<Fact<string[] | undefined>> {
    return withTimeout(this.o.cidr.resolve(this.o.probeNamespace ?? namespace), this.o.readTimeoutMs * 2, 'learning the Service CIDR').then(
      (r) => ({ value: r?.cidrs }),
      (e: unknown) => ({ error: errText(e) }),
    );
  }

  /** The tasks still importing over source `name` (inuse.ts), read fresh, bounded like every read. */
  async tasksImportingOver(namespace: string, name: string): Promise<string[]> {
    const read = async (): Promise<string[]> => {
      const tasks = (await this.o.client.list<KubeObject>(GVRs.VMImportTask, namespace)).items as unknown as VMImportTask[];
      // Forklift not installed: no Plans. Asked as a probe (a bare 404 is the answer, not retried, within
      // the webhook's read bound). A Plan path not served for a moment (an API server restarting) also
      // reads as no Plans: the edit is then admitted, which is safe, as when the tasks cannot be read (the
      // controller holds the Provider's spec while tasks import over it).
      const plans = await this.o.client.list<KubeObject>(GVRs.Plan, namespace, { labelSelector: `${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}`, probe: true }).then((l) => l.items, (e: unknown) => (isNotServed(e) ? [] : Promise.reject(e)));
      return tasksHoldingSource(name, tasks, plans);
    };
    return await withTimeout(read(), this.o.readTimeoutMs, 'listing the tasks of the source');
  }

  async sourceFacts(namespace: string, needCIDR: boolean, egress?: EgressPolicy): Promise<Gathered<SourceFacts>> {
    const flags = { cached: false };
    const none: NodeNetworks = { podCIDRs: [], nodeAddresses: [], apiServerAddresses: [] };
    const [serviceCIDRs, cluster] = await Promise.all([
      needCIDR ? this.serviceCIDRs(namespace) : Promise.resolve({ value: undefined }),
      egress && needCIDR
        ? this.fact('nodenetworks', this.o.cacheTtlMs, 'listing nodes and the API server\'s endpoints', async () => ({ ...(await listNodeNetworks(this.o.client)), apiServerAddresses: await apiServerAddresses(this.o.client) }), false, flags)
        : Promise.resolve({ value: none }),
    ]);
    return { facts: { serviceCIDRs, ...(egress ? { egress: { policy: egress, cluster } } : {}) }, usedCache: flags.cached, cachedFacts: new Set() };
  }

  /**
   * `fresh`: true re-reads every cluster fact (and the inventory past its TTL); a set re-reads only the
   * facts it names, the others answered as before (a denial re-checks the facts it rests on, `deniedOn`).
   */
  async taskFacts(namespace: string, task: JsonObject, fresh: boolean | ReadonlySet<CachedFact> = false): Promise<Gathered<TaskFacts>> {
    const flags = { cached: false, facts: new Set<CachedFact>() };
    const reread = (name: CachedFact): boolean => fresh === true || (typeof fresh === 'object' && fresh.has(name));
    const spec = asObject(task.spec) ?? {};
    const sourceName = asString(asObject(spec.sourceRef)?.name) ?? '';
    const vmIds = [...new Set((asArray(spec.vms) ?? []).map((v) => asString(asObject(v)?.id)).filter((x): x is string => !!x))].slice(0, 256);
    const ttl = this.o.cacheTtlMs;
    const client = this.o.client;

    const sourceP: Promise<Fact<JsonObject | undefined>> = sourceName
      ? this.fact(`source/${namespace}/${sourceName}`, ttl, `reading VMImportSource ${sourceName}`, () => client.get<KubeObject>(GVRs.VMImportSource, namespace, sourceName) as Promise<JsonObject | undefined>, reread('source'), flags, (v) => v !== undefined, 'source')
      : Promise.resolve({ value: undefined });
    const classesP = this.fact('storageclasses', ttl, 'listing storage classes', async () => (await client.list<KubeObject>(GVRs.StorageClass)).items as unknown as StorageClassLike[], reread('storageClasses'), flags, undefined, 'storageClasses');
    const quotasP = this.fact(`quotas/${namespace}`, ttl, 'listing resource quotas', async () => (await client.list<KubeObject>(GVRs.ResourceQuota, namespace)).items as unknown as QuotaLike[], reread('quotas'), flags, undefined, 'quotas');
    const cidrP = this.serviceCIDRs(namespace);
    const inventoryP = sourceP.then(async (src): Promise<TaskFacts['inventory']> => {
      if (!this.o.inventory) return { error: 'no inventory client configured' };
      if ('error' in src) return { error: `the source could not be read: ${src.error}` };
      const providerUID = asString(asObject(asObject(src.value?.status)?.provider)?.uid);
      if (!src.value) return { error: 'the source does not exist' };
      if (!providerUID) return { error: 'the source has not registered with Forklift yet (no status.provider.uid)' };
      const inv = this.o.inventory;
      const invTtl = this.o.inventoryTtlMs;
      // The inventory is not asked again when its cached answer is within its TTL, not even to re-check
      // a denial: VMs' disks and hosts change on vCenter's time scale, and Forklift's inventory itself
      // lags vCenter. Re-checks re-read the cluster objects (a class or quota just created) and only
      // inventory answers older than the TTL. A VM the inventory did not know is never cached.
      const invFresh = reread('inventory') ? 'ttl' : false;
      const hostsF = this.fact(`hosts/${providerUID}`, invTtl, 'listing inventory hosts', () => inv.listHosts(providerUID), invFresh, flags, undefined, 'inventory');
      const vmFs = vmIds.map(async (id): Promise<[string, Fact<InventoryVM | null>]> => {
        const f = await this.fact<InventoryVM | null>(
          `vm/${providerUID}/${id}`,
          invTtl,
          `reading VM ${id} from the inventory`,
          async () => {
            try {
              return normaliseVM(await inv.getVM(providerUID, id));
            } catch (e) {
              if (looksNotFound(e)) return null;
              throw e;
            }
          },
          invFresh,
          flags,
          (v) => v !== null,
          'inventory',
        );
        return [id, f];
      });
      // The source's networks, for the Multus mapping of the VMs' NICs (validate-task.ts multusDuplicateProblem).
      const listNetworks = inv.listNetworks?.bind(inv);
      const networksF: Promise<Fact<InventoryNetworkLike[] | undefined>> =
        listNetworks && mapsToMultus(spec) ? this.fact(`networks/${providerUID}`, invTtl, 'listing inventory networks', async () => normaliseNetworks(await listNetworks(providerUID)), invFresh, flags, undefined, 'inventory') : Promise.resolve({ value: undefined });
      const [hosts, networks, ...vms] = await Promise.all([hostsF, networksF, ...vmFs]);
      if ('error' in hosts) return { error: hosts.error };
      if ('error' in networks) return { error: networks.error };
      const out: Record<string, InventoryVM | null> = {};
      for (const [id, f] of vms) {
        if ('error' in f) return { error: f.error };
        out[id] = f.value;
      }
      return { value: { vms: out, hosts: normaliseHosts(hosts.value), ...(networks.value ? { networks: networks.value } : {}) } };
    });
    const [source, storageClasses, quotas, serviceCIDRs, inventory] = await Promise.all([sourceP, classesP, quotasP, cidrP, inventoryP]);
    return { facts: { source, storageClasses, quotas, serviceCIDRs, inventory }, usedCache: flags.cached, cachedFacts: flags.facts };
  }
}
