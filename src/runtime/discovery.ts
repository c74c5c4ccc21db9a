// Discovery of optional kinds (Forklift, CDI, KubeVirt, apps.cozystack.io). CustomResourceDefinitions are a
// core kind, always served: one informer on them tells when an optional kind becomes Established (start
// its informer) or goes away (stop it). Nothing waits on an optional kind: start-up and readiness only
// depend on the CRD informer itself.
import type { Logger } from 'pino';
import { GVRs, gvrKey, type GVR } from './gvr.ts';
import { Informer } from './informer.ts';
import type { KubeClient, KubeObject } from './kube.ts';

export type InstallListener = (gvr: GVR, installed: boolean) => void;

interface CRDLike extends KubeObject {
  spec?: { group?: string; names?: { plural?: string }; versions?: Array<{ name: string; served?: boolean }> };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

/** True when `crd` serves `gvr` and is Established. Pure. */
export function crdServes(crd: CRDLike, gvr: GVR): boolean {
  if (crd.spec?.group !== gvr.group || crd.spec?.names?.plural !== gvr.plural) return false;
  if (crd.metadata?.deletionTimestamp) return false;
  if (!crd.spec?.versions?.some((v) => v.name === gvr.version && v.served !== false)) return false;
  return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
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

export class Discovery {
  private readonly client: KubeClient;
  private readonly log: Logger | undefined;
  readonly crds: Informer;
  private readonly tracked = new Map<string, { gvr: GVR; installed: boolean }>();
  /** Optional kinds that are built into the API server (not CRDs), found by API discovery at start. */
  private readonly builtin = new Set<string>();
  private readonly listeners: InstallListener[] = [];

  constructor(client: KubeClient, log?: Logger, onList?: () => void) {
    this.client = client;
    this.log = log;
    this.crds = new Informer(client, GVRs.CustomResourceDefinition, { log, onList });
    this.crds.addHandlers({ add: () => this.recompute(), update: () => this.recompute(), delete: () => this.recompute() });
  }

  onChange(l: InstallListener): void {
    this.listeners.push(l);
  }

  /** Tracks an optional kind; listeners hear about it once it is (or stops being) served. */
  track(gvr: GVR): void {
    const k = gvrKey(gvr);
    if (this.tracked.has(k)) return;
    this.tracked.set(k, { gvr, installed: false });
    if (this.crds.hasSynced()) this.recompute();
  }

  installed(gvr: GVR): boolean {
    if (!gvr.optional) return true;
    const k = gvrKey(gvr);
    return this.builtin.has(k) || (this.tracked.get(k)?.installed ?? false);
  }

  async start(): Promise<void> {
    // Built-in optional APIs (e.g. networking.k8s.io ServiceCIDR on newer clusters) and aggregated ones
    // (Cozystack's apps.cozystack.io) have no CRD: their group's discovery document says whether they are
    // served. An aggregated kind served without watch is not "installed" for the informers: its readers
    // fall back to the API server (ctx.cache() answers undefined) and its waits to timed requeues.
    // Asked once per group version at start (a kind that appears later is found by a restart, or by its
    // CRD where a CRD serves it).
    const docs = new Map<string, Promise<APIResourceList | undefined>>();
    for (const t of this.tracked.values()) {
      if (!t.gvr.group.endsWith('.k8s.io') && !t.gvr.aggregated) continue;
      const path = `/apis/${t.gvr.group}/${t.gvr.version}`;
      if (!docs.has(path)) docs.set(path, this.client.request<APIResourceList>('GET', path).catch(() => undefined));
      const served = servedAs(await docs.get(path), t.gvr);
      if (served === 'poll') this.log?.info({ kind: t.gvr.kind, group: t.gvr.group }, 'served without watch: read from the API server and polled');
      if (served !== 'watch') continue;
      this.builtin.add(gvrKey(t.gvr));
      t.installed = true;
      for (const l of this.listeners) l(t.gvr, true);
    }
    this.crds.start();
    void this.crds.waitForSync().then(() => this.recompute());
  }

  hasSynced(): boolean {
    return this.crds.hasSynced();
  }

  waitForSync(): Promise<void> {
    return this.crds.waitForSync();
  }

  async stop(): Promise<void> {
    await this.crds.stop();
  }

  private recompute(): void {
    if (!this.crds.hasSynced()) return;
    const crds = this.crds.store.list() as CRDLike[];
    for (const [k, t] of this.tracked) {
      if (this.builtin.has(k)) continue;
      const now = crds.some((c) => crdServes(c, t.gvr));
      if (now === t.installed) continue;
      t.installed = now;
      this.log?.info({ kind: t.gvr.kind, group: t.gvr.group, installed: now }, now ? 'optional kind appeared' : 'optional kind removed');
      for (const l of this.listeners) l(t.gvr, now);
    }
  }
}
