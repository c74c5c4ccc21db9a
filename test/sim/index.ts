// The simulated vCenter / Forklift / CDI / KubeVirt / Cozystack engine, running in-process against the real
// API server of test/e2e/env: watch-driven loops, an HTTPS inventory server and a validating webhook server.
// It never imports controller code (src/**).
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { type Ctx, DEFAULT_TIMINGS, type ForkliftVersion, type SimTimings } from './context.ts';
import { Forklift } from './forklift.ts';
import { Informer, type Obj, R, Rest, notFound, HttpError } from './rest.ts';
import { Inventory, Webhook } from './servers.ts';
import { SIM_PROVISIONER, Storage } from './storage.ts';
import { World, type WorldFixture } from './world.ts';
import { visibleIn } from './scope.ts';
import { serveVMInstanceDefinition, type VMInstanceChart } from './cozystack.ts';

export { SIM_PROVISIONER, POPULATED_FOR, ALLOW_ADOPTION, CSI_PV_FINALIZER } from './storage.ts';
export { vcenter, World, contentIdentity, inServiceCIDR, type WorldFixture, type VCenterSpec, type VMFixture, type HostFixture, type DiskFixture, type VMFaults, type ConversionFailure } from './world.ts';
export { CONTENT_ANNOTATION, SOURCE_ANNOTATION, NBD_ERROR, GUEST_CONVERSION_FAILED, VIRT_V2V_IMAGE } from './forklift.ts';
export { INVENTORY_SECRET, NAME_LIMITS, appNameError } from './servers.ts';
export { OWNER_LABEL, PROCESS_OWNER } from './scope.ts';
export { vmInstanceDefinition, vmInstanceSchema, type VMInstanceChart } from './cozystack.ts';
export { NFC_CONNECTION_CEILING, vddkOpenFailure, type HostStats } from './esxi.ts';
export { DEFAULT_TIMINGS, FORKLIFT_VERSIONS, type ForkliftVersion, type SimTimings } from './context.ts';

const CRD_DIR = join(dirname(fileURLToPath(import.meta.url)), '../crds');

export interface SimOptions {
  /** Admin kubeconfig of the control plane. */
  kubeconfigPath: string;
  /** One per simulated vCenter, matched by Provider spec.url. */
  worlds: WorldFixture[];
  /** Transfer speed in MiB/s; default 16384 (a 16 GiB disk ≈ 1 s). */
  mbPerSecond?: number;
  /** Default true; false = Forklift CRDs absent (removed if present) until sim.installForklift(). */
  forkliftInstalled?: boolean;
  /** Default 'cozy-forklift'. */
  forkliftNamespace?: string;
  /** Which Forklift to play: 'v2.11.5' (default) or 'v2.12.5' (test/sim/SIDE-EFFECTS.md). */
  forkliftVersion?: ForkliftVersion;
  /**
   * Name of the pipeline step that carries the disk transfer (default `DiskTransfer`); `DiskTransferV2v` or
   * '' play Forklift versions and modes whose transfer step has another name or none
   * (kubev2v/forklift@v2.11.5:pkg/controller/plan/migrator/base/migrator.go, the step names by phase).
   */
  transferStepName?: string;
  /** Fast-forward knobs; defaults are small (DEFAULT_TIMINGS). */
  timings?: Partial<SimTimings>;
  /**
   * The VirtualMachineClusterInstancetypes / -Preferences the cluster has, for the vm-instance chart's
   * lookups. Undefined: every name exists (not checked).
   */
  instanceTypes?: string[];
  instancePreferences?: string[];
  /**
   * Kubernetes 1.33: the CSI provisioner keeps its finalizer on the PVs it provisioned while their
   * reclaim policy is Delete (HonorPVReclaimPolicy, GA in 1.33), as test/sim/storage.ts plays it.
   * Default false (what a 1.20 cluster's provisioners do).
   */
  csiPVFinalizer?: boolean;
  /**
   * The vm-instance chart the platform has, as its ApplicationDefinition's values schema states it
   * (test/sim/cozystack.ts): `v1.6.2`, the release, without a firmware value; `firmware-pr3002`, with
   * PR #3002's. Default `firmware-pr3002`, the values the stand-in VMInstance CRD keeps and the files
   * written before the platform was read expect (firmware carried as stated).
   */
  vmInstanceChart?: VMInstanceChart;
  /**
   * A Cozystack platform's lineage webhook on the tenant namespaces' Pods, Secrets, Services, claims and
   * Ingresses, and Flux's origin labels on the charts' objects it follows (test/sim/lineage.ts). Default
   * false (the suite's other files do without it).
   */
  lineage?: boolean;
}

export interface Sim {
  /** HTTPS inventory; `caPEM` is the CA currently published in Secret forklift-inventory-serving-cert (key ca.crt). */
  inventory: { url: string; readonly caPEM: string };
  /** The live, mutable model of the vCenter with that URL (power state, faults). */
  world(url: string): World;
  /** Installs the Forklift CRDs later ("absent or late Forklift") and starts the Forklift loops. */
  installForklift(): Promise<void>;
  /** Fault: the inventory keeps serving its certificate while the published CA no longer matches it (false restores). */
  setInventoryCertMismatch(on: boolean): Promise<void>;
  /** Fault: Cozystack's lineage webhook cannot be called (its Service has no endpoints); false restores. Needs `lineage`. */
  setLineageWebhookDown(down: boolean): void;
  /**
   * Fault: the vCenter at `url` refuses connections for `holdMs`; Forklift re-tests its Providers as it
   * goes down and as it comes back (resolves once both status writes are done).
   */
  flapConnection(url: string, holdMs: number): Promise<void>;
  /** The log of a virt-v2v conversion pod (Forklift's pod logs: no kubelet runs here, the sim keeps them). */
  conversionPodLog(namespace: string, name: string): string | undefined;
  /** Sizes of the simulator's in-memory state: Forklift's maps, the informer caches, timers pending. */
  memory(): Record<string, number>;
  /**
   * The object as the simulated controllers' shared cache holds it now (undefined when absent). Upstream
   * decides from its manager's cache, which trails the API server: a test that means to assert a decision
   * on a given state waits until the cache shows that state.
   */
  cached(kind: keyof Ctx['inf'], namespace: string | undefined, name: string): Obj | undefined;
  /** Name of the ValidatingWebhookConfiguration the sim registered. */
  readonly webhookConfigName: string;
  /** Stops loops and servers, removes its webhook configuration. */
  stop(): Promise<void>;
}

/**
 * The kube-apiserver of test/e2e/env judges an empty string as `null` against a structural `type: string`
 * and refuses it (observed: `spec.url in body must be of type string: "null"` for `url: ""`), where the
 * Kubernetes releases Forklift and Cozystack run on accept it. Every string field of a stand-in is therefore
 * marked nullable when installed; nothing writes null to these kinds, and the unit test that holds renders to
 * the schemas ignores the mark.
 */
function emptyStringsAccepted(s: Record<string, unknown>): void {
  if (s.type === 'string') s.nullable = true;
  for (const p of Object.values((s.properties ?? {}) as Record<string, Record<string, unknown>>)) emptyStringsAccepted(p);
  if (s.items && typeof s.items === 'object') emptyStringsAccepted(s.items as Record<string, unknown>);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') emptyStringsAccepted(s.additionalProperties as Record<string, unknown>);
}

let parsedCRDs: Obj[] | undefined;

/** Every stand-in CRD of test/crds, by component label (forklift | cdi | kubevirt | cozystack): fresh copies. */
export function standInCRDs(component?: string): Obj[] {
  // The files are parsed once per process (a simulator start asks four times, and the YAML parse was a
  // tenth of a short e2e file's CPU); every caller gets its own copies to change.
  if (!parsedCRDs) {
    parsedCRDs = [];
    for (const f of readdirSync(CRD_DIR).filter((x) => x.endsWith('.yaml')).sort()) {
      // Each document parsed separately (YAML aliases share nodes within a document; the mark is idempotent).
      for (const d of YAML.parseAllDocuments(readFileSync(join(CRD_DIR, f), 'utf8'))) {
        const o = d.toJSON() as Obj | null;
        if (o?.kind !== 'CustomResourceDefinition') continue;
        for (const v of (o.spec?.versions ?? []) as Array<{ schema?: { openAPIV3Schema?: Record<string, unknown> } }>) if (v.schema?.openAPIV3Schema) emptyStringsAccepted(v.schema.openAPIV3Schema);
        parsedCRDs.push(o);
      }
    }
  }
  return structuredClone(parsedCRDs.filter((o) => !component || o.metadata.labels?.['sim.cozystack.io/component'] === component));
}

async function until(what: string, fn: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`sim: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// The digest of the stand-in CRD a simulator wrote, kept on the CRD: a start that finds its CRDs already
// exactly so (every start after the first on a shared plane) writes nothing. Each of those writes was a
// replace that changed nothing, yet kube-apiserver decoded and validated the whole CRD for it: half of a
// simulator start's API-server CPU. A CRD anyone else wrote since (a file installing an older Plan, say)
// lacks the digest or carries another, and is replaced.
const APPLIED_DIGEST = 'sim.cozystack.io/applied-sha256';

async function applyCRDs(rest: Rest, crds: Obj[]): Promise<void> {
  for (const c of crds) {
    const digest = createHash('sha256').update(JSON.stringify(c)).digest('hex');
    const body = { ...c, metadata: { ...c.metadata, annotations: { ...(c.metadata.annotations ?? {}), [APPLIED_DIGEST]: digest } } };
    const cur = await rest.get(R.CRD, undefined, c.metadata.name);
    if (cur && !cur.metadata.deletionTimestamp && cur.metadata.annotations?.[APPLIED_DIGEST] === digest) continue;
    if (cur) await rest.replace(R.CRD, { ...body, metadata: { ...body.metadata, resourceVersion: cur.metadata.resourceVersion } });
    else await rest.create(R.CRD, body);
  }
  for (const c of crds) {
    await until(`CRD ${c.metadata.name} Established`, async () => {
      const got = await rest.get(R.CRD, undefined, c.metadata.name);
      return !!got?.status?.conditions?.some((x: { type: string; status: string }) => x.type === 'Established' && x.status === 'True');
    });
  }
}

/** One sim per process at a time: two would both play Forklift and run every Migration twice. */
let running = false;

export async function startSim(opts: SimOptions): Promise<Sim> {
  if (running) throw new Error('startSim: a simulator is already running in this process; stop() it first');
  const rest = new Rest(opts.kubeconfigPath);
  running = true;
  // Namespaces first: the scope of every other informer is decided by their owner labels.
  const namespaces = new Informer(rest, R.Namespace).start();
  namespaces.on((t, o) => {
    if (t === 'DELETED') forklift?.namespaceGone(o.metadata.name);
  });
  const visible = visibleIn((n) => namespaces.get(undefined, n));
  const mk = (res: (typeof R)[keyof typeof R]): Informer => new Informer(rest, res, visible);
  const ctx: Ctx = {
    rest,
    forkliftVersion: opts.forkliftVersion ?? 'v2.11.5',
    // Each host's transfers move at mbPerSecond apiece unless its fixture bounds them otherwise (world.ts).
    worlds: opts.worlds.map((w) => new World(w, { streamBytesPerSecond: (opts.mbPerSecond ?? 16384) * 2 ** 20 })),
    timings: { ...DEFAULT_TIMINGS, ...(opts.timings ?? {}) },
    mbPerSecond: opts.mbPerSecond ?? 16384,
    forkliftNamespace: opts.forkliftNamespace ?? 'cozy-forklift',
    transferStepName: opts.transferStepName ?? 'DiskTransfer',
    visible,
    stopping: false,
    timers: new Set(),
    ...(opts.instanceTypes ? { instanceTypes: new Set(opts.instanceTypes) } : {}),
    ...(opts.instancePreferences ? { instancePreferences: new Set(opts.instancePreferences) } : {}),
    ...(opts.csiPVFinalizer ? { csiPVFinalizer: true } : {}),
    ...(opts.lineage ? { lineage: { down: false } } : {}),
    inf: { secret: mk(R.Secret), pvc: mk(R.PVC), pv: mk(R.PV), sc: mk(R.StorageClass), dv: mk(R.DataVolume), vm: mk(R.VirtualMachine), vmdisk: mk(R.VMDisk), vminstance: mk(R.VMInstance) },
  };
  let forklift: Forklift | undefined;
  let storage: Storage | undefined;
  let inventory: Inventory | undefined;
  let webhook: Webhook | undefined;
  const stop = async (): Promise<void> => {
    if (ctx.stopping) return;
    ctx.stopping = true;
    for (const t of ctx.timers) clearTimeout(t);
    ctx.timers.clear();
    forklift?.stop();
    storage?.stop();
    for (const i of Object.values(ctx.inf)) (i as Informer | undefined)?.stop();
    namespaces.stop();
    await webhook?.stop().catch(() => undefined);
    await inventory?.stop().catch(() => undefined);
    rest.close();
    running = false;
  };
  const startForklift = async (): Promise<void> => {
    if (forklift) return;
    const f = new Forklift(ctx);
    forklift = f;
    await f.start();
  };
  try {
    await applyCRDs(rest, [...standInCRDs('cdi'), ...standInCRDs('kubevirt'), ...standInCRDs('cozystack')]);
    await serveVMInstanceDefinition(rest, opts.vmInstanceChart ?? 'firmware-pr3002');
    if (opts.forkliftInstalled === false) {
      // A shared control plane may still have them from an earlier file: Forklift must really be absent.
      for (const c of standInCRDs('forklift')) await rest.del(R.CRD, undefined, c.metadata.name);
      for (const c of standInCRDs('forklift')) await until(`CRD ${c.metadata.name} removed`, async () => !(await rest.get(R.CRD, undefined, c.metadata.name)), 60_000);
    } else {
      await applyCRDs(rest, standInCRDs('forklift'));
    }
    try {
      await rest.create(R.Namespace, { metadata: { name: ctx.forkliftNamespace } });
    } catch (e) {
      if (!(e instanceof HttpError && e.code === 409)) throw e;
    }
    await namespaces.synced;
    storage = new Storage(ctx);
    for (const i of Object.values(ctx.inf)) (i as Informer).start();
    await Promise.all(Object.values(ctx.inf).map((i) => (i as Informer).synced));
    if (opts.forkliftInstalled !== false) await startForklift();
    inventory = new Inventory(ctx, () => forklift);
    await inventory.start();
    webhook = new Webhook(ctx, () => forklift);
    await webhook.start();
    // The API server picks webhook configurations up asynchronously: wait until a dry-run create is judged.
    const probeNs = ctx.forkliftNamespace;
    await until('the sim admission webhook to be effective', async () => {
      try {
        await rest.createDryRun(R.VMDisk, { metadata: { name: 'x'.repeat(46), namespace: probeNs }, spec: {} });
        return false;
      } catch (e) {
        return e instanceof HttpError && /validate\.apps\.cozystack\.io/.test(e.message);
      }
    });
  } catch (e) {
    await stop();
    throw e;
  }
  const inv = inventory;
  const wh = webhook;
  const byUrl = new Map(ctx.worlds.map((w) => [w.url, w]));
  return {
    inventory: {
      get url() {
        return inv.url;
      },
      get caPEM() {
        return inv.caPEM;
      },
    },
    world(url: string): World {
      const w = byUrl.get(url) ?? ctx.worlds.find((x) => x.url.replace(/\/$/, '') === url.replace(/\/$/, ''));
      if (!w) throw new Error(`sim: no world for ${url}`);
      return w;
    },
    async installForklift(): Promise<void> {
      await applyCRDs(rest, standInCRDs('forklift'));
      await startForklift();
    },
    setInventoryCertMismatch: (on: boolean) => inv.setCertMismatch(on),
    setLineageWebhookDown: (down: boolean) => {
      if (!ctx.lineage) throw new Error('setLineageWebhookDown: the simulator was started without lineage');
      ctx.lineage.down = down;
    },
    conversionPodLog: (namespace: string, name: string) => forklift?.conversionPodLog(namespace, name),
    memory(): Record<string, number> {
      const out: Record<string, number> = { timers: ctx.timers.size };
      for (const [k, v] of Object.entries(forklift?.memory() ?? {})) out[`forklift.${k}`] = v;
      for (const [k, i] of Object.entries(ctx.inf)) if (i) out[`cache.${k}`] = (i as Informer).cache.size;
      for (const w of ctx.worlds) out[`world.${w.fixture.url}.snapshotLog`] = w.snapshotLog.length;
      return out;
    },
    async flapConnection(url: string, holdMs: number): Promise<void> {
      if (!forklift) throw new Error('sim: Forklift is not installed');
      const w = byUrl.get(url) ?? ctx.worlds.find((x) => x.url.replace(/\/$/, '') === url.replace(/\/$/, ''));
      if (!w) throw new Error(`sim: no world for ${url}`);
      await forklift.flapConnection(w, holdMs);
    },
    cached: (kind, namespace, name) => ctx.inf[kind]?.get(namespace, name),
    webhookConfigName: wh.configName,
    stop,
  };
}

/** Creates (or replaces) a StorageClass; `SIM_PROVISIONER` classes are provisioned by the running sim. */
export async function createStorageClass(
  kubeconfigPath: string,
  o: { name: string; bindingMode?: 'Immediate' | 'WaitForFirstConsumer'; reclaimPolicy?: 'Delete' | 'Retain'; isDefault?: boolean; provisioner?: string },
): Promise<void> {
  const rest = new Rest(kubeconfigPath);
  try {
    const body: Obj = {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: o.name, annotations: o.isDefault ? { 'storageclass.kubernetes.io/is-default-class': 'true' } : {} },
      provisioner: o.provisioner ?? SIM_PROVISIONER,
      reclaimPolicy: o.reclaimPolicy ?? 'Delete',
      volumeBindingMode: o.bindingMode ?? 'Immediate',
    };
    const cur = await rest.get(R.StorageClass, undefined, o.name);
    if (cur) {
      // Most StorageClass fields are immutable: replace by delete + create.
      await rest.del(R.StorageClass, undefined, o.name);
      await until(`StorageClass ${o.name} deleted`, async () => !(await rest.get(R.StorageClass, undefined, o.name)));
    }
    await rest.create(R.StorageClass, body);
  } catch (e) {
    if (!notFound(e)) throw e;
  } finally {
    rest.close();
  }
}
