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
    // Built-in optional APIs (e.g. networking.k8s.io ServiceCIDR on newer clusters) have no CRD.
    for (const t of this.tracked.values()) {
      if (!t.gvr.group.endsWith('.k8s.io')) continue;
      try {
        const res = await this.client.request<{ resources?: Array<{ name: string }> }>('GET', `/apis/${t.gvr.group}/${t.gvr.version}`);
        if (res.resources?.some((r) => r.name === t.gvr.plural)) {
          this.builtin.add(gvrKey(t.gvr));
          t.installed = true;
          for (const l of this.listeners) l(t.gvr, true);
        }
      } catch {
        /* not served */
      }
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
