// Simulated Konveyor Forklift: Provider, Host, NetworkMap/StorageMap, Plan validation and the cold raw-copy
// Migration itinerary (docs/forklift-contract.md). Conditions are written the Forklift way: only status "True",
// with categories, re-staged on every reconcile.
import ipaddr from 'ipaddr.js';
import { bundleVerifies, parsePEMBundle } from './certs.ts';
import { type Cond, type Ctx, blocking, cond, emitEvent, is212, later, sameStatus, secretData, sleep, stamp } from './context.ts';
import { HttpError, Informer, type Obj, Queue, R, conflict, keyOf, notFound, notServed } from './rest.ts';
import { type ConversionFailure, type DiskFixture, type VMFixture, type World, NO_PERMISSION, contentIdentity, sameUrl } from './world.ts';

/**
 * scheduler.go schedulable (kubev2v/forklift@v2.11.5 and @v2.12.5:pkg/controller/plan/scheduler/vsphere/):
 * a host already at MAX_VM_INFLIGHT schedules nothing; else a VM fits when its cost (untransferred disks)
 * plus the host's in-flight disks stay within it, and a VM costing more than the limit runs on an idle host.
 * Each pending VM is judged against the host's current load (not cumulatively). Upstream's own table
 * (scheduler_test.go TestScheduler) runs against this in test/unit/sim-oracle.test.ts.
 */
export function schedulableOnHost(inflight: number, cost: number, max: number): boolean {
  if (inflight >= max) return false;
  return cost + inflight <= max || (cost > max && inflight === 0);
}

/** Forklift's Provider/Host predicates: an update counts when status.observedGeneration < generation. */
function specChanged(o: Obj): boolean {
  return (o.status?.observedGeneration ?? 0) < (o.metadata.generation ?? 0);
}

/** Forklift's and CDI's MB: MiB. */
const MiB = 2 ** 20;

export const FORKLIFT_API = 'forklift.konveyor.io/v1beta1';
/** Forklift's own error text when VDDK cannot open the disk on an unreachable/captured ESXi address. */
export const NBD_ERROR = "nbd_connect_uri: the server has no export named ''";

type Ref = { name?: string; namespace?: string; uid?: string } | undefined;

interface StepState {
  name: string;
  description: string;
  phase: 'Pending' | 'Running' | 'Completed';
  progress: { total: number; completed: number };
  annotations?: Record<string, string>;
  tasks?: Array<{ name: string; phase: string; progress: { total: number; completed: number }; annotations: Record<string, string>; started?: string; completed?: string; error?: { phase: string; reasons: string[] } }>;
  started?: string;
  completed?: string;
  error?: { phase: string; reasons: string[] };
}

interface VMState {
  id: string;
  name: string;
  phase: string;
  started?: string;
  completed?: string;
  error?: { phase: string; reasons: string[] };
  conditions: Cond[];
  pipeline: StepState[];
  restorePowerState?: string;
  newName?: string;
  /** A warm run's precopy record (kubev2v/forklift@v2.11.5:pkg/apis/forklift/v1beta1/plan/vm.go, Warm). */
  warm?: WarmState;
}

/** The sim's own record of a VM holding transfer slots on its ESXi host (not written to any status). */
interface Slot {
  provider: string;
  host: string;
  /**
   * The VM's cost (scheduler.go cost): its disks, held until the VM ends (upstream frees each disk as it
   * finishes, finishedDisks: a VM whose copy is done but is still being built holds slots here a little longer).
   */
  disks: number;
}

interface Precopy {
  start?: string;
  end?: string;
  snapshot?: string;
  createTaskId?: string;
  removeTaskId?: string;
  deltas?: Array<{ disk: string; deltaId: string }>;
}

interface WarmState {
  successes: number;
  failures: number;
  /** Declared by v2.11.5's API and never written by its controller: it stays 0. */
  consecutiveFailures: number;
  nextPrecopyAt?: string;
  precopies: Precopy[];
}

interface Run {
  planKey: string;
  migration: Obj;
  started: string;
  completed?: string;
  vms: VMState[];
  abort: AbortController;
  result?: 'Succeeded' | 'Failed' | 'Canceled';
  canceledByDelete?: boolean;
  cancelVM: Map<string, AbortController>;
  /** A Provider of the Plan went away mid-run: the run stops where it is, with no verdict (see freeze). */
  frozen?: boolean;
  /**
   * The run's snapshot of what it runs on (plan/snapshot.go at both tags): each of the Plan, its Providers and
   * maps as uid and generation, matched on every pass (matchSnapshot, see snapshotMismatch).
   */
  snapshot: Record<string, { uid: string; generation: number }>;
  /** Why the run was canceled when neither a user nor a deletion did it: 'Modified' (matchSnapshot). */
  cancelReason?: 'Modified';
  /** v2.12.5 failExecutingMigrationOnBlocker ended the run: its message (the VMs and the Plan carry it). */
  blockerFailure?: string;
  /** When this run's status was last written (ms): progress alone is written at most every PROGRESS_WRITE_MS. */
  flushedAt?: number;
  /** A progress-only write waiting for its turn (see markProgress). */
  progressTimer?: NodeJS.Timeout;
}

export class Forklift {
  private readonly ctx: Ctx;
  private readonly loaded = new Set<string>();
  private readonly loading = new Set<string>();
  private readonly vddkChecked = new Set<string>();
  private readonly vddkChecking = new Set<string>();
  /** Validation conditions per plan key (merged with runtime conditions on every write). */
  private readonly planValidation = new Map<string, Cond[]>();
  private readonly runs = new Map<string, Run>();
  /** Logs of the virt-v2v pods, by namespace/name. */
  private readonly podLogs = new Map<string, string>();
  private readonly writeChains = new Map<string, Promise<boolean>>();
  /** VMs holding transfer slots, by run and VM id (scheduler.go buildInFlight). */
  private readonly slots = new Map<string, Slot>();
  /** When each Critical/Error condition of a Plan first appeared (by plan key, then condition type). */
  private readonly blockerSince = new Map<string, Map<string, number>>();
  /** Plans whose refused status write is to be redone (one pending redo each). */
  private readonly planRedo = new Set<string>();
  private readonly dirty = new Set<string>();
  /** Numbers the NFC streams the disk copies open (World.esxi ids are unique per stream). */
  private streamSeq = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private queues: Queue[] = [];
  private pq!: Queue;
  private hq!: Queue;
  private mq!: Queue;
  private planq!: Queue;
  private migq!: Queue;

  constructor(ctx: Ctx) {
    this.ctx = ctx;
  }

  /** Starts the Forklift informers and loops (the CRDs must exist). */
  async start(): Promise<void> {
    const { ctx } = this;
    const inf = ctx.inf;
    inf.provider = new Informer(ctx.rest, R.Provider, ctx.visible);
    inf.host = new Informer(ctx.rest, R.Host, ctx.visible);
    inf.nmap = new Informer(ctx.rest, R.NetworkMap, ctx.visible);
    inf.smap = new Informer(ctx.rest, R.StorageMap, ctx.visible);
    inf.plan = new Informer(ctx.rest, R.Plan, ctx.visible);
    inf.migration = new Informer(ctx.rest, R.Migration, ctx.visible);
    this.pq = new Queue((k) => this.reconcileProvider(k));
    this.hq = new Queue((k) => this.reconcileHost(k));
    this.mq = new Queue((k) => this.reconcileMap(k));
    this.planq = new Queue((k) => this.reconcilePlan(k));
    this.migq = new Queue((k) => this.reconcileMigration(k));
    this.queues = [this.pq, this.hq, this.mq, this.planq, this.migq];
    const all = (ns?: string): void => {
      for (const i of [inf.host!, inf.nmap!, inf.smap!, inf.plan!]) for (const o of i.list(ns)) this.queueOf(i).add(`${i.res.kind}|${keyOf(o)}`);
    };
    inf.provider.on((t, o) => {
      // ProviderPredicate (kubev2v/forklift@v2.11.5 and @v2.12.5:pkg/controller/provider/predicate.go): a
      // create reconciles, an update only when status.observedGeneration < generation — a label or an
      // annotation changed on the Provider reconciles nothing (the Secret's watch below does).
      if (t === 'ADDED' || (t === 'MODIFIED' && specChanged(o))) {
        // A changed spec drops the inventory collector (controller.go Reconcile, !provider.HasReconciled():
        // r.container.Delete): the inventory loads again (LoadInventory) before the Provider is Ready again.
        if (t === 'MODIFIED') this.forget(this.loaded, this.loading, o.metadata.uid!);
        this.pq.add(keyOf(o));
      }
      // Forklift drops a deleted Provider's inventory collector (kubev2v/forklift:
      // pkg/controller/provider/controller.go, Reconcile on NotFound: r.container.Delete); so does the sim.
      else if (t === 'DELETED') this.forget(this.loaded, this.loading, o.metadata.uid!);
      all();
    });
    inf.host.on((t, o) => {
      // HostPredicate (pkg/controller/host/predicate.go at both tags): the same generation filter.
      if (t === 'ADDED' || (t === 'MODIFIED' && specChanged(o))) this.hq.add(`Host|${keyOf(o)}`);
    });
    inf.nmap.on((t, o) => {
      if (t !== 'DELETED') this.mq.add(`NetworkMap|${keyOf(o)}`);
      for (const p of inf.plan!.list()) this.planq.add(`Plan|${keyOf(p)}`);
    });
    inf.smap.on((t, o) => {
      if (t !== 'DELETED') this.mq.add(`StorageMap|${keyOf(o)}`);
      for (const p of inf.plan!.list()) this.planq.add(`Plan|${keyOf(p)}`);
    });
    inf.plan.on((t, o) => {
      if (t === 'DELETED') this.planDeleted(o).catch((e) => console.error(`[sim] plan GC: ${(e as Error).message}`));
      // PlanPredicate (kubev2v/forklift@v2.11.5 and @v2.12.5:pkg/controller/plan/predicate.go): a create
      // reconciles, an update only when status.observedGeneration < generation. The Plan's own status writes
      // (a running import's progress among them) and label or annotation changes reconcile nothing: a pass
      // on each of its own writes re-wrote the latest progress, a loop of status writes as fast as the API
      // server took them (~30 a second per running Plan).
      else if (t === 'ADDED' || specChanged(o)) this.planq.add(`Plan|${keyOf(o)}`);
    });
    inf.migration.on((t, o) => {
      if (t === 'DELETED') this.migrationDeleted(o);
      else this.migq.add(keyOf(o));
    });
    // The Secret watch (controller.go at both tags: libref.TypedHandler[*v1.Secret](&api.Provider{}), the
    // same for Host): any change of a referenced Secret — data, labels or annotations — reconciles the
    // Providers and Hosts naming it, and a Provider whose Secret's resourceVersion moved re-tests and
    // reloads (updateContainer, secretChanged).
    ctx.inf.secret.on((_t, s) => {
      const names = (ref: Ref): boolean => ref?.name === s.metadata.name && ref?.namespace === s.metadata.namespace;
      for (const p of inf.provider!.list()) if (names(p.spec?.secret)) this.pq.add(keyOf(p));
      for (const h of inf.host!.list()) if (names(h.spec?.secret)) this.hq.add(`Host|${keyOf(h)}`);
    });
    for (const i of [inf.provider, inf.host, inf.nmap, inf.smap, inf.plan, inf.migration]) i.start();
    await Promise.all([inf.provider, inf.host, inf.nmap, inf.smap, inf.plan, inf.migration].map((i) => i.synced));
  }

  private queueOf(i: Informer): Queue {
    return i.res.kind === 'Host' ? this.hq : i.res.kind === 'Plan' ? this.planq : this.mq;
  }

  stop(): void {
    for (const q of this.queues) q.stop();
    for (const r of this.runs.values()) r.abort.abort();
    if (this.flushTimer) clearTimeout(this.flushTimer);
    const inf = this.ctx.inf;
    for (const i of [inf.provider, inf.host, inf.nmap, inf.smap, inf.plan, inf.migration]) i?.stop();
  }

  // ---------------------------------------------------------------- helpers

  /**
   * A connection flap: vCenter goes down, every Provider on it is re-tested (Critical ConnectionTestFailed
   * written), and after `holdMs` it comes back and they are re-tested again (Ready). Forklift re-tests a
   * Provider on each reconcile, so a short outage shows as exactly this pair of status writes.
   */
  async flapConnection(world: World, holdMs: number): Promise<void> {
    const keys = (this.ctx.inf.provider?.list() ?? []).filter((p) => this.worldOf(p) === world).map((p) => keyOf(p));
    world.connectionDown = true;
    try {
      await Promise.all(keys.map((k) => this.reconcileProvider(k)));
      if (holdMs > 0) await sleep(this.ctx, holdMs);
    } finally {
      world.connectionDown = false;
    }
    await Promise.all(keys.map((k) => this.reconcileProvider(k)));
  }

  worldOf(p: Obj | undefined): World | undefined {
    if (!p?.spec?.url) return undefined;
    return this.ctx.worlds.find((w) => sameUrl(w.url, p.spec.url));
  }

  providerByUid(uid: string): Obj | undefined {
    return this.ctx.inf.provider?.list().find((p) => p.metadata.uid === uid);
  }

  inventoryLoaded(p: Obj): boolean {
    return this.loaded.has(p.metadata.uid!);
  }

  private async writeStatus(res: typeof R.Provider, o: Obj, status: Record<string, unknown>): Promise<void> {
    const next = { ...status, conditions: stamp((status.conditions as Cond[]) ?? [], o.status?.conditions), observedGeneration: o.metadata.generation };
    const prev = { ...(o.status ?? {}) };
    const cmp = Object.fromEntries(Object.keys(next).map((k) => [k, prev[k]]));
    if (sameStatus(cmp, next)) return;
    try {
      await this.ctx.rest.patch(res, o.metadata.namespace, o.metadata.name, { status: next }, 'status');
    } catch (e) {
      if (!notFound(e)) throw e;
    }
  }

  /** A reference with an explicit namespace; Forklift reports NotSet/NotFound otherwise. */
  private resolve(i: Informer | undefined, ref: Ref): { obj?: Obj; reason?: 'NotSet' | 'NotFound' } {
    if (!ref?.name || !ref.namespace) return { reason: 'NotSet' };
    const obj = i?.get(ref.namespace, ref.name);
    return obj ? { obj } : { reason: 'NotFound' };
  }

  private isReady(o: Obj | undefined): boolean {
    return !!o?.status?.conditions?.some((c: Cond) => c.type === 'Ready' && c.status === 'True');
  }

  // ---------------------------------------------------------------- Provider

  private async reconcileProvider(key: string): Promise<void> {
    const [ns, name] = key.split('/') as [string, string];
    const p = this.ctx.inf.provider!.get(ns, name);
    if (!p || p.metadata.deletionTimestamp) return;
    const conds: Cond[] = [];
    let phase = 'Staging';
    let fingerprint: string | undefined = undefined;
    const type = p.spec?.type;
    const done = (): Promise<void> => this.writeStatus(R.Provider, p, { phase, conditions: conds, ...(fingerprint ? { fingerprint } : {}) });
    if (type === 'openshift') {
      // The destination "host" provider: empty url = this cluster.
      conds.push(cond('ConnectionTestSucceeded', 'Required', 'Tested', 'Connection test, succeeded.'));
      conds.push(cond('InventoryCreated', 'Required', 'Completed', 'The inventory has been loaded.'));
      conds.push(cond('Ready', 'Required', 'Completed', 'The provider is ready.'));
      phase = 'Ready';
      return done();
    }
    if (type !== 'vsphere') {
      conds.push(cond('ProviderTypeNotSupported', 'Critical', 'NotSupported', 'The provider type is not supported.'));
      phase = 'ValidationFailed';
      return done();
    }
    // validate (kubev2v/forklift@v2.11.5:pkg/controller/provider/validation.go): validateURL, validateSecret
    // (with validateConnectionStatus and the certificate fetch), testConnection, inventoryCreated.
    const url: string = p.spec?.url ?? '';
    if (!url) conds.push(cond('UrlNotValid', 'Critical', 'NotSet', 'The `url` is not valid.'));
    else if (!URL.canParse(url)) conds.push(cond('UrlNotValid', 'Critical', 'Malformed', `The \`url\` is malformed: parse "${url}": invalid URI for request`));
    if (conds.length) phase = 'ValidationFailed';
    const sref = p.spec?.secret as Ref;
    let data: Record<string, string> | undefined;
    if (!sref?.name || !sref.namespace) conds.push(cond('SecretNotValid', 'Critical', 'NotSet', 'The `secret` is not valid.'));
    else {
      const s = this.ctx.inf.secret.get(sref.namespace, sref.name);
      if (!s) conds.push(cond('SecretNotValid', 'Critical', 'NotFound', 'The `secret` is not valid.'));
      else data = secretData(s);
    }
    if (!data) {
      phase = 'ValidationFailed';
      return done();
    }
    const world = this.worldOf(p);
    // GetInsecureSkipVerifyFlag: strconv.ParseBool of the value, false when absent or unparsable.
    const insecure = ['1', 't', 'T', 'true', 'TRUE', 'True'].includes(data.insecureSkipVerify ?? '');
    // v2.11.5 reads the CA from `cacert` only (pkg/lib/util/util.go tlsConfig); v2.12.5 from `ca.crt`, then
    // `cacert` (forklift@v2.12.5:pkg/lib/util/util.go GetCACert), and names `ca.crt` when both are missing.
    const v212 = is212(this.ctx);
    const ca = v212 ? data['ca.crt'] || data.cacert : data.cacert;
    const missing = ['user', 'password'].filter((k) => !(k in data));
    if (!insecure && !ca) missing.push(v212 ? 'ca.crt' : 'cacert');
    else {
      // validateConnectionStatus, then the certificate fetch (util.GetTlsCertificate) for the fingerprint.
      let certErr: string | undefined;
      if (insecure) conds.push(cond('ConnectionInsecure', 'Warn', 'SkipTLSVerification', 'TLS is susceptible to machine-in-the-middle attacks when certificate verification is skipped.'));
      else if (parsePEMBundle(ca!).length === 0) certErr = 'failed to parse the specified certificate'; // a thumbprint, say
      if (!certErr && !world) certErr = `dial tcp: lookup ${URL.canParse(url) ? new URL(url).hostname : url}: no such host`;
      if (certErr) {
        conds.push(cond('ConnectionTestFailed', 'Critical', 'Tested', certErr));
        phase = 'ConnectionFailed';
      } else fingerprint = world!.fixture.thumbprint;
    }
    if (missing.length) {
      conds.push(cond('SecretNotValid', 'Critical', 'DataErr', 'The `secret` is not valid.', missing));
      phase = 'ValidationFailed';
    }
    if (blocking(conds)) return done();
    if (world!.connectionDown || world!.packetsDropped) {
      // Forklift re-tests the connection on every Provider reconcile; a refused dial is ConnectionTestFailed
      // (kubev2v/forklift@v2.11.5:pkg/controller/provider/validation.go, GetTlsCertificate failing); a dial
      // whose packets are dropped fails the same way once it times out.
      const why = world!.packetsDropped ? 'i/o timeout' : 'connect: connection refused';
      conds.push(cond('ConnectionTestFailed', 'Critical', 'Tested', `Could not connect to the ESXi/vCenter server: dial tcp ${new URL(url).hostname}:443: ${why}`));
      phase = 'ConnectionFailed';
      return done();
    }
    // testConnection: vCenter's answer. 401/400 → ConnectionAuthFailed (Forklift stops retrying); else failed.
    if (!bundleVerifiesOrInsecure(insecure, ca, world!.fixture.certPEM)) {
      conds.push(cond('ConnectionTestFailed', 'Critical', 'Tested', `Connection test, failed: Post "${url}": tls: failed to verify certificate: x509: certificate signed by unknown authority`));
      phase = 'ConnectionFailed';
      return done();
    }
    if (data.user !== world!.fixture.user || data.password !== world!.fixture.password) {
      conds.push(cond('ConnectionAuthFailed', 'Critical', 'Tested', 'Connection auth failed, error: ServerFaultCode: Cannot complete login due to an incorrect user name or password.'));
      phase = 'ConnectionFailed';
      return done();
    }
    conds.push(cond('ConnectionTestSucceeded', 'Required', 'Tested', 'Connection test, succeeded.'));
    const lkey = p.metadata.uid!;
    if (!this.loaded.has(lkey)) {
      conds.push(cond('LoadInventory', 'Advisory', 'Started', 'Loading the inventory.'));
      if (!this.loading.has(lkey)) {
        this.loading.add(lkey);
        later(this.ctx, this.ctx.timings.loadInventoryMs, () => {
          this.loaded.add(lkey);
          this.pq.add(key);
        });
      }
      return done();
    }
    conds.push(cond('InventoryCreated', 'Required', 'Completed', 'The inventory has been loaded.'));
    conds.push(cond('Validated', 'Advisory', 'Completed', 'Validation has been completed.'));
    conds.push(cond('Ready', 'Required', 'Completed', 'The provider is ready.'));
    phase = 'Ready';
    return done();
  }

  // ---------------------------------------------------------------- Host

  private async reconcileHost(k: string): Promise<void> {
    const [ns, name] = k.slice('Host|'.length).split('/') as [string, string];
    const h = this.ctx.inf.host!.get(ns, name);
    if (!h || h.metadata.deletionTimestamp) return;
    // validate (kubev2v/forklift@v2.11.5:pkg/controller/host/validation.go); Ready (host/controller.go) needs no
    // blocker and ConnectionTestSucceeded; a failed test is retried only every 15 min upstream.
    const conds: Cond[] = [];
    const pr = this.resolve(this.ctx.inf.provider, h.spec?.provider);
    const world = this.worldOf(pr.obj);
    if (pr.reason) conds.push(cond('RefNotValid', 'Critical', pr.reason, 'The provider reference is not valid.'));
    else if (pr.obj!.metadata.namespace !== ns) conds.push(cond('RefNotValid', 'Critical', 'NotValid', 'The host must be in the namespace of its provider.'));
    const hf = world?.host(h.spec?.id);
    if (!conds.length && !h.spec?.id) conds.push(cond('RefNotValid', 'Critical', 'NotSet', 'The `id` is not valid.'));
    if (!conds.length && (!world || !hf)) conds.push(cond('RefNotValid', 'Critical', 'NotFound', 'Referenced host not found.'));
    const ip: string = h.spec?.ipAddress ?? '';
    if (!ipaddr.isValid(ip)) conds.push(cond('IpNotValid', 'Critical', ip ? 'Malformed' : 'NotSet', 'The `ipAddress` is not valid.'));
    const sr = this.resolve(this.ctx.inf.secret, h.spec?.secret);
    const data = secretData(sr.obj);
    if (sr.reason) conds.push(cond('SecretNotValid', 'Critical', sr.reason, 'The secret is not valid.'));
    else {
      const missing = ['user', 'password'].filter((x) => !data[x]);
      if (missing.length) conds.push(cond('SecretNotValid', 'Critical', 'DataErr', 'The secret is not valid.', missing));
    }
    if (!blocking(conds) && hf && world) {
      // validation.go at both tags: from the inventory's host, both Critical (the Host is never Ready then).
      if (hf.inMaintenance) conds.push(cond('InMaintenance', 'Critical', 'StateEvaluated', 'Host is in maintenance mode.'));
      if (hf.status !== 'green') conds.push(cond('NotHealthy', 'Critical', 'StateEvaluated', "Host status not 'green'."));
      // The connection is tested either way; Ready needs no blocker (controller.go at both tags).
      const stateBlocks = blocking(conds);
      if (!world.reachable(hf.id, ip)) conds.push(cond('ConnectionTestFailed', 'Critical', 'Tested', `Could not connect to the ESXi host: dial tcp ${ip}:443: connect: no route to host`));
      else if (data.user !== hf.user || data.password !== hf.password) conds.push(cond('ConnectionTestFailed', 'Critical', 'Tested', 'Could not connect to the ESXi host: incorrect user name or password.'));
      else {
        conds.push(cond('ConnectionTestSucceeded', 'Required', 'Tested', 'Connection test, succeeded.'));
        if (!stateBlocks) conds.push(cond('Ready', 'Required', 'Completed', 'The host is ready.'));
      }
    }
    await this.writeStatus(R.Host, h, { conditions: conds });
  }

  // ---------------------------------------------------------------- maps

  private mapConds(m: Obj): { conds: Cond[]; world?: World } {
    const conds: Cond[] = [];
    const src = this.resolve(this.ctx.inf.provider, m.spec?.provider?.source);
    const dst = this.resolve(this.ctx.inf.provider, m.spec?.provider?.destination);
    if (src.reason) conds.push(cond('SourceProviderNotValid', 'Critical', src.reason, 'The source provider is not valid.'));
    else if (!this.isReady(src.obj)) conds.push(cond('SourceProviderNotReady', 'Critical', 'NotReady', 'The source provider is not ready.'));
    if (dst.reason) conds.push(cond('DestinationProviderNotValid', 'Critical', dst.reason, 'The destination provider is not valid.'));
    else if (!this.isReady(dst.obj)) conds.push(cond('DestinationProviderNotReady', 'Critical', 'NotReady', 'The destination provider is not ready.'));
    return { conds, world: this.worldOf(src.obj) };
  }

  private async reconcileMap(k: string): Promise<void> {
    const [kind, rest] = k.split('|') as [string, string];
    const [ns, name] = rest.split('/') as [string, string];
    const storage = kind === 'StorageMap';
    const m = (storage ? this.ctx.inf.smap : this.ctx.inf.nmap)!.get(ns, name);
    if (!m || m.metadata.deletionTimestamp) return;
    const { conds, world } = this.mapConds(m);
    if (!blocking(conds) && world) {
      const known = storage ? world.fixture.datastores : world.fixture.networks;
      const unknown = ((m.spec?.map ?? []) as Array<{ source?: { id?: string; name?: string } }>)
        .map((e) => e.source?.id ?? e.source?.name ?? '')
        .filter((ref) => !known.some((x) => x.id === ref || x.name === ref));
      // A source the inventory does not know (pkg/controller/map/{network,storage}/validation.go): Critical at
      // v2.11.5 — the map never becomes Ready — and only Warn at v2.12.5. Items are ref.String().
      const category = is212(this.ctx) ? 'Warn' : 'Critical';
      if (unknown.length) conds.push(cond(storage ? 'SourceStorageNotValid' : 'SourceNetworkNotValid', category, 'NotFound', `Source ${storage ? 'storage' : 'network'} not found.`, unknown.map((id) => refString({ id, name: '' }))));
    }
    if (!blocking(conds)) conds.push(cond('Ready', 'Required', 'Completed', 'The map is ready.'));
    await this.writeStatus(storage ? R.StorageMap : R.NetworkMap, m, { conditions: conds });
  }

  // ---------------------------------------------------------------- Plan

  private findVM(world: World, ref: { id?: string; name?: string }): VMFixture | undefined {
    return world.fixture.vms.find((v) => (ref.id && v.id === ref.id) || (!ref.id && ref.name && v.name === ref.name));
  }

  /**
   * Plan validation (kubev2v/forklift@v2.11.5:pkg/controller/plan/validation.go): references with their
   * namespaces (NotSet/NotFound/NotReady), then per VM from the inventory (VMNotFound, networks/storage mapped,
   * one pod NIC at most, GuestToolsIssue — plan/adapter/vsphere/validator.go), the VDDK image
   * (VDDKInitImageUnavailable, ValidatingVDDK while the check Job runs); Ready when nothing blocks.
   */
  private async reconcilePlan(k: string): Promise<void> {
    const key = k.slice('Plan|'.length);
    const [ns, name] = key.split('/') as [string, string];
    const plan = this.ctx.inf.plan!.get(ns, name);
    if (!plan || plan.metadata.deletionTimestamp) return;
    // controller.go Reconcile at both tags: an archived Plan with its Archived condition is not reconciled.
    if (plan.spec?.archived === true && (plan.status?.conditions ?? []).some((c: Cond) => c.type === 'Archived')) return;
    const conds: Cond[] = [];
    const spec = plan.spec ?? {};
    const src = this.resolve(this.ctx.inf.provider, spec.provider?.source);
    const dst = this.resolve(this.ctx.inf.provider, spec.provider?.destination);
    if (src.reason) conds.push(cond('SourceProviderNotValid', 'Critical', src.reason, 'The source provider is not valid.'));
    else if (!this.isReady(src.obj)) conds.push(cond('SourceProviderNotReady', 'Critical', 'NotReady', 'The source provider is not ready.'));
    if (dst.reason) conds.push(cond('DestinationProviderNotValid', 'Critical', dst.reason, 'The destination provider is not valid.'));
    else if (!this.isReady(dst.obj)) conds.push(cond('DestinationProviderNotReady', 'Critical', 'NotReady', 'The destination provider is not ready.'));
    const nm = this.resolve(this.ctx.inf.nmap, spec.map?.network);
    const sm = this.resolve(this.ctx.inf.smap, spec.map?.storage);
    if (nm.reason) conds.push(cond('NetworkMapNotValid', 'Critical', nm.reason, 'Map.Network is not valid.'));
    else if (!this.isReady(nm.obj)) conds.push(cond('NetworkMapNotReady', 'Critical', 'NotReady', 'Map.Network does not have Ready condition.'));
    if (sm.reason) conds.push(cond('StorageMapNotValid', 'Critical', sm.reason, 'Map.Storage is not valid.'));
    else if (!this.isReady(sm.obj)) conds.push(cond('StorageMapNotReady', 'Critical', 'NotReady', 'Map.Storage does not have Ready condition.'));
    if (!spec.targetNamespace) conds.push(cond('NamespaceNotValid', 'Critical', 'NotSet', 'Target namespace is not valid.'));
    const world = this.worldOf(src.obj);
    const refs = (spec.vms ?? []) as Array<{ id?: string; name?: string }>;
    if (world && !src.reason) {
      const notFound: string[] = [];
      const netUnmapped: string[] = [];
      const stoUnmapped: string[] = [];
      const multiPod: string[] = [];
      const dupNad: string[] = [];
      const toolsIssue: string[] = [];
      // Warm Plans (Plan.IsWarm: spec.warm || spec.type == warm, pkg/apis/forklift/v1beta1/plan.go at v2.11.5).
      const warm = spec.warm === true || spec.type === 'warm';
      const missingCbt: string[] = [];
      const hasSnapshots: string[] = [];
      const nmEntries = (nm.obj?.spec?.map ?? []) as Array<{ source?: { id?: string; name?: string }; destination?: { type?: string } }>;
      const smEntries = (sm.obj?.spec?.map ?? []) as Array<{ source?: { id?: string; name?: string } }>;
      const matches = (e: { source?: { id?: string; name?: string } }, x: { id: string; name: string }): boolean => e.source?.id === x.id || (!e.source?.id && e.source?.name === x.name);
      // validateVM returns at once while the Plan is Executing (validation.go at v2.11.5): a running warm
      // import's own snapshot must not read as a pre-existing one.
      const active = this.runs.get(key);
      const executing = !!active && !active.result && !active.frozen;
      for (const r of executing ? [] : refs) {
        const vm = this.findVM(world, r);
        if (!vm) {
          notFound.push(refString({ id: r.id ?? '', name: r.name ?? '' }));
          continue;
        }
        // The inventory lookup fills the ref's id and name (web/vsphere/client.go Finder.VM): items name both.
        const label = refString(vm);
        // Validator.GuestToolsInstalled (plan/adapter/vsphere/validator.go at v2.11.5): a powered-on VM whose
        // Tools status is unknown or toolsNotInstalled, or whose Tools are guestToolsNotRunning, is blocked.
        if (vm.powerState === 'poweredOn' && (['', 'null', '<nil>', 'toolsNotInstalled'].includes(vm.toolsStatus) || vm.toolsRunningStatus === 'guestToolsNotRunning')) toolsIssue.push(label);
        if (warm) {
          // validation.go at v2.11.5 (validate, "Warm migration."): Validator.ChangeTrackingEnabled reads the
          // VM's changeTrackingEnabled, Validator.HasSnapshot its snapshot ref (vsphere/validator.go). (Shared
          // disks, which SharedDisks refuses on a warm Plan under a per-VM condition type, are not played.)
          if (!vm.changeTrackingEnabled) missingCbt.push(label);
          if (vm.snapshot) hasSnapshots.push(label);
        }
        const nets = world.fixture.networks.filter((n) => vm.nics.some((c) => c.network === n.id));
        if (nm.obj && nets.some((n) => !nmEntries.some((e) => matches(e, n)))) netUnmapped.push(label);
        if (nm.obj && nets.filter((n) => nmEntries.some((e) => matches(e, n) && e.destination?.type === 'pod')).length > 1) multiPod.push(label);
        // adapter/base/network.go ValidateNetworkDuplicates (both tags): per NIC, two on one namespace/name of Multus.
        const nads = vm.nics.map((c) => nmEntries.find((e) => matches(e, world.fixture.networks.find((n) => n.id === c.network) ?? { id: c.network, name: '' }))?.destination as { type?: string; namespace?: string; name?: string } | undefined).filter((d) => d?.type === 'multus').map((d) => `${d!.namespace}/${d!.name}`);
        if (nm.obj && new Set(nads).size < nads.length) dupNad.push(label);
        const dss = world.fixture.datastores.filter((d) => vm.disks.some((x) => x.datastore === d.id));
        if (sm.obj && dss.some((d) => !smEntries.some((e) => matches(e, d)))) stoUnmapped.push(label);
      }
      if (notFound.length) conds.push(cond('VMNotFound', 'Critical', 'NotFound', 'VM not found.', notFound));
      if (netUnmapped.length) conds.push(cond('VMNetworksNotMapped', 'Critical', 'NotValid', 'VM has unmapped networks.', netUnmapped));
      if (multiPod.length) conds.push(cond('VMMultiplePodNetworkMappings', 'Critical', 'NotValid', 'VM has more than one interface mapped to the pod network.', multiPod));
      if (dupNad.length) conds.push(cond('VMDuplicateNADMappings', 'Critical', 'NotValid', 'Multiple VM NICs use the same Multus NAD name (OVN-Kubernetes uses NAD names as map keys).', dupNad));
      if (stoUnmapped.length) conds.push(cond('VMStorageNotMapped', 'Critical', 'NotValid', 'VM has unmapped storage.', stoUnmapped));
      if (toolsIssue.length) conds.push(cond('GuestToolsIssue', 'Critical', 'NotValid', GUEST_TOOLS_MESSAGE, toolsIssue));
      // The warm conditions of validation.go at v2.11.5 (missingCbtForWarm, vmHasSnapshotsForWarm), Critical.
      if (missingCbt.length) {
        conds.push(cond('VMMissingChangedBlockTracking', 'Critical', 'MissingChangedBlockTracking', 'Changed Block Tracking (CBT) has not been enabled on some VM. This feature is a prerequisite for VM warm migration.', missingCbt));
      }
      if (hasSnapshots.length) conds.push(cond('VMHasSnapshots', 'Critical', 'NotValid', 'VM has pre-existing snapshots which are incompatible with warm migration', hasSnapshots));
      const vddk: string | undefined = src.obj?.spec?.settings?.vddkInitImage;
      if (spec.skipGuestConversion === true && !vddk) {
        conds.push(cond('VDDKInitImageUnavailable', 'Critical', 'NotSet', 'VDDK init image is not set on the source provider; it is required when skipGuestConversion is set.'));
      } else if (vddk && !blocking(conds)) {
        const vkey = `${plan.metadata.uid}/${vddk}`;
        if (!this.vddkChecked.has(vkey)) {
          conds.push(cond('ValidatingVDDK', 'Advisory', 'Started', 'Validating the VDDK init image.'));
          if (!this.vddkChecking.has(vkey)) {
            this.vddkChecking.add(vkey);
            later(this.ctx, this.ctx.timings.validatingVddkMs, () => {
              this.vddkChecked.add(vkey);
              this.planq.add(k);
            });
          }
        }
      }
    }
    if (!refs.length) conds.push(cond('VMNotValid', 'Critical', 'NotSet', 'The plan lists no VMs.'));
    // Archive (controller.go Reconcile → archive at both tags): once validation ran, spec.archived cleans up
    // every VM of the last run (migration.go Archive → cleanup) and sets Archived; Ready is never set then.
    if (spec.archived === true) {
      await this.archive(plan);
      conds.push(cond('Archived', 'Advisory', 'UserRequested', 'The migration plan has been archived.'));
    }
    if (!blocking(conds) && !conds.some((c) => c.type === 'ValidatingVDDK' || c.type === 'Archived')) conds.push(cond('Ready', 'Required', 'Completed', 'The migration plan is ready.'));
    this.planValidation.set(key, conds);
    this.noteBlockers(key, conds);
    const running = this.runs.get(key);
    if (running && !running.result && !running.frozen && (src.reason || dst.reason)) this.freeze(running);
    // execute (controller.go): with no blocker, an active run's snapshot is matched against what it runs on.
    if (running && !running.result && !running.frozen && !blocking(conds) && this.snapshotMismatch(running, plan)) this.cancelModified(running);
    if (running && !running.result && blocking(conds)) await this.failOnBlocker(running);
    await this.writePlan(key);
    if (this.isReadyConds(conds)) for (const m of this.ctx.inf.migration!.list(ns)) if (m.spec?.plan?.name === name) this.migq.add(keyOf(m));
  }

  /** Drops `key` (or, with `prefix`, every key starting with it) from a finished and an in-progress set. */
  private forget(done: Set<string>, doing: Set<string>, key: string, prefix = false): void {
    for (const set of [done, doing]) {
      if (!prefix) set.delete(key);
      else for (const k of set) if (k.startsWith(key)) set.delete(k);
    }
  }

  /** A namespace is gone, and with it its pods and their logs. */
  namespaceGone(ns: string): void {
    for (const k of this.podLogs.keys()) if (k.startsWith(`${ns}/`)) this.podLogs.delete(k);
  }

  /** Sizes of what the simulated Forklift holds in memory (the soak benchmark checks they return to baseline). */
  memory(): Record<string, number> {
    return {
      loaded: this.loaded.size + this.loading.size,
      vddkChecked: this.vddkChecked.size + this.vddkChecking.size,
      planValidation: this.planValidation.size,
      blockerSince: this.blockerSince.size,
      slots: this.slots.size,
      runs: this.runs.size,
      podLogs: this.podLogs.size,
      writeChains: this.writeChains.size,
      planRedo: this.planRedo.size,
      dirty: this.dirty.size,
    };
  }

  /**
   * scheduler.go schedulable at both tags: true when the VMs in flight on `host` of source Provider
   * `provider` leave room for `disks` more (MAX_VM_INFLIGHT, here timings.maxVmInflight), or when the host
   * is idle.
   */
  private schedulable(provider: string, host: string, disks: number): boolean {
    let inflight = 0;
    for (const s of this.slots.values()) if (s.provider === provider && s.host === host) inflight += s.disks;
    return schedulableOnHost(inflight, disks, Math.max(1, this.ctx.timings.maxVmInflight));
  }

  private isReadyConds(cs: Cond[]): boolean {
    return cs.some((c) => c.type === 'Ready');
  }

  /**
   * A Provider deleted under a running Plan (kubev2v/forklift@v2.11.5:pkg/controller/plan/controller.go execute):
   * validation now finds SourceProviderNotValid/DestinationProviderNotValid (NotFound, Critical), and execute
   * returns before touching the run whenever the Plan has a blocker — so nothing advances, cancels, fails or
   * completes it: the VMs' pipelines stay where they were, the Migration gets no terminal condition, and
   * Executing drops off the Plan (conditions are re-staged and execute no longer sets it). (CDI would go on
   * importing underneath; here the transfer stops with the run.) A second Migration of the Plan waits forever.
   */
  private freeze(run: Run): void {
    run.frozen = true;
    run.abort.abort();
  }

  /** What a run's snapshot records of one object (SnapshotRef.With: uid and generation). */
  private snapshotOf(plan: Obj): Run['snapshot'] {
    const inf = this.ctx.inf;
    const spec = plan.spec ?? {};
    const ref = (i: Informer | undefined, r?: { name?: string; namespace?: string }): { uid: string; generation: number } => {
      const o = r?.name && r.namespace ? i?.get(r.namespace, r.name) : undefined;
      return { uid: o?.metadata.uid ?? '', generation: o?.metadata.generation ?? 0 };
    };
    return {
      plan: { uid: plan.metadata.uid ?? '', generation: plan.metadata.generation ?? 0 },
      source: ref(inf.provider, spec.provider?.source),
      destination: ref(inf.provider, spec.provider?.destination),
      network: ref(inf.nmap, spec.map?.network),
      storage: ref(inf.smap, spec.map?.storage),
    };
  }

  /**
   * matchSnapshot (pkg/controller/plan/controller.go at both tags) with SnapshotRef.Match
   * (pkg/apis/forklift/v1beta1/plan/snapshot.go): at v2.11.5 uid AND generation of the Plan, both Providers
   * and both maps; from v2.12.0 uid only. So at v2.11.5 any spec change of one of them (a new vddkInitImage,
   * an edited url, spec.archived on the Plan) cancels the running import.
   */
  private snapshotMismatch(run: Run, plan: Obj): boolean {
    const now = this.snapshotOf(plan);
    return Object.entries(run.snapshot).some(([k, was]) => {
      const cur = now[k]!;
      if (!cur.uid) return false; // gone: validation's NotFound blocks first (freeze)
      return cur.uid !== was.uid || (!is212(this.ctx) && cur.generation !== was.generation);
    });
  }

  /**
   * The snapshot no longer matches: the active snapshot is Canceled (reason Modified, "The migration has been
   * canceled."), every VM not Succeeded/Failed gets the same condition, and Migration.Cancel cleans them up
   * (controller.go execute, migration.go Cancel → cleanup).
   */
  private cancelModified(run: Run): void {
    run.cancelReason = 'Modified';
    run.abort.abort();
  }

  /** Records when each blocker of a Plan appeared, and asks for a pass once the oldest one's grace is over. */
  private noteBlockers(key: string, conds: Cond[]): void {
    const prev = this.blockerSince.get(key) ?? new Map<string, number>();
    const next = new Map<string, number>();
    for (const c of conds) if (c.category === 'Critical' || c.category === 'Error') next.set(c.type, prev.get(c.type) ?? Date.now());
    if (next.size) this.blockerSince.set(key, next);
    else this.blockerSince.delete(key);
    const run = this.runs.get(key);
    if (!is212(this.ctx) || !run || run.result) return;
    for (const [t, since] of next) if (!prev.has(t)) later(this.ctx, Math.max(0, since + this.ctx.timings.blockerGraceMs - Date.now()) + 1, () => this.planq.add(`Plan|${key}`));
  }

  /**
   * v2.12.5 only: failExecutingMigrationOnBlocker (kubev2v/forklift@v2.12.5:pkg/controller/plan/controller.go,
   * called from execute whenever the Plan has a blocker): once a Critical or Error condition is older than the
   * grace period (BLOCKER_GRACE_PERIOD_MINUTES, 5), the executing snapshot and every VM not yet
   * Succeeded/Failed/Canceled end Failed, "The migration has FAILED due to a validation blocker: <messages>",
   * the message also added to the VM's errors; started steps are marked completed. Nothing is cleaned up: the
   * DataVolumes, claims and the VDDK Secret stay. v2.11.5 has no such path: the run freezes (holdWhileBlocked).
   */
  private async failOnBlocker(run: Run): Promise<void> {
    if (!is212(this.ctx) || run.result) return;
    const since = this.blockerSince.get(run.planKey);
    const grace = this.ctx.timings.blockerGraceMs;
    const old = (this.planValidation.get(run.planKey) ?? []).filter((c) => (c.category === 'Critical' || c.category === 'Error') && Date.now() - (since?.get(c.type) ?? Date.now()) >= grace);
    if (!old.length) return;
    const message = `The migration has FAILED due to a validation blocker: ${old.map((c) => c.message || `${c.type} (category=${c.category}, reason=${c.reason ?? ''})`).join('; ')}`;
    run.blockerFailure = message;
    run.frozen = true;
    run.abort.abort();
    const now = new Date().toISOString();
    for (const vm of run.vms) {
      if (vm.conditions.some((c) => ['Succeeded', 'Failed', 'Canceled'].includes(c.type))) continue;
      vm.conditions = stamp([{ type: 'Failed', status: 'True', category: 'Advisory', message, durable: true }], undefined);
      vm.error = { phase: vm.phase, reasons: [...(vm.error?.reasons ?? []), message] };
      vm.phase = 'Completed';
      vm.completed = now;
      for (const step of vm.pipeline) if (step.started) {
        step.phase = 'Completed';
        step.completed ??= now;
      }
    }
    run.result = 'Failed';
    run.completed = now;
    await this.finish(run);
  }

  /**
   * The VDDK importer's Secret (pkg/controller/plan/kubevirt.go DataVolumes → ensureSecret/secret, at both
   * tags): one per VM in the target namespace, generateName `<plan>-<vmID>-`, labelled with the VM's labels
   * plus resource=vm-config and isDV=true, no owner reference. Its data is the vCenter account, or the ESXi
   * host's own when a Ready Host of the VM's host exists (adapter/vsphere/builder.go Secret: accessKeyId,
   * secretKey, cacert). ensureSecret lists by those labels first and updates the one it finds.
   */
  private async ensureVddkSecret(plan: Obj, src: Obj, vm: VMFixture, labels: Record<string, string>, signal: AbortSignal): Promise<Obj> {
    const ctx = this.ctx;
    const tns: string = plan.spec.targetNamespace;
    const want = { ...labels, resource: 'vm-config', isDV: 'true' };
    const ps = secretData(ctx.inf.secret.get(src.spec?.secret?.namespace ?? '', src.spec?.secret?.name ?? ''));
    const host = ctx.inf.host!.list(src.metadata.namespace).find((h) => h.spec?.id === vm.host && h.spec?.provider?.name === src.metadata.name && this.isReady(h));
    const hs = host ? secretData(ctx.inf.secret.get(host.spec?.secret?.namespace ?? '', host.spec?.secret?.name ?? '')) : undefined;
    const b64 = (v: string): string => Buffer.from(v, 'utf8').toString('base64');
    const data: Record<string, string> = { accessKeyId: b64((hs ?? ps).user ?? ''), secretKey: b64((hs ?? ps).password ?? '') };
    if (ps.cacert !== undefined) data.cacert = b64(ps.cacert);
    return await redoOnApiError(ctx, signal, `VDDK Secret of ${vm.id}`, async () => {
      const found = (await ctx.rest.list(R.Secret, tns)).items.find((o) => Object.entries(want).every(([k, v]) => o.metadata.labels?.[k] === v));
      if (found) return await ctx.rest.patch(R.Secret, tns, found.metadata.name, { data });
      return await ctx.rest.create(R.Secret, { metadata: { generateName: `${plan.metadata.name}-${vm.id}-`, namespace: tns, labels: want }, type: 'Opaque', data });
    });
  }

  /**
   * The Secret part of migration.go cleanup (DeleteSecret: every Secret of the target namespace labelled with
   * the Plan's uid, the VM's id and resource=vm-config, whatever the Migration), as Cancel, Archive and a
   * re-run's Started phase call it at both tags and v2.12.5 also after a VM's success.
   */
  private async deleteVddkSecrets(plan: Obj, vmId: string): Promise<void> {
    const tns: string = plan.spec?.targetNamespace ?? '';
    if (!tns) return;
    for (const o of (await this.ctx.rest.list(R.Secret, tns)).items) {
      const l = o.metadata.labels ?? {};
      if (l.plan === plan.metadata.uid && l.vmID === vmId && l.resource === 'vm-config') await this.ctx.rest.del(R.Secret, tns, o.metadata.name).catch(() => false);
    }
  }

  /**
   * Migration.Archive (migration.go at both tags): cleanup of every VM of the Plan's status — its VDDK Secret
   * always; its VirtualMachine and DataVolumes too when it did not succeed and deleteVmOnFailMigration is
   * set — then the VM is marked complete. A failed archive is not retried (best effort), but Archived is
   * set regardless.
   */
  private async archive(plan: Obj): Promise<void> {
    const tns: string = plan.spec?.targetNamespace ?? '';
    for (const vm of (plan.status?.migration?.vms ?? []) as VMState[]) {
      await this.deleteVddkSecrets(plan, vm.id).catch(() => undefined);
      const succeeded = (vm.conditions ?? []).some((c) => c.type === 'Succeeded');
      if (!succeeded && plan.spec?.deleteVmOnFailMigration !== false && tns) {
        for (const dv of (await this.ctx.rest.list(R.DataVolume, tns)).items) {
          if (dv.metadata.labels?.plan === plan.metadata.uid && dv.metadata.labels?.vmID === vm.id) await this.ctx.rest.del(R.DataVolume, tns, dv.metadata.name).catch(() => false);
        }
      }
    }
  }

  private async planDeleted(plan: Obj): Promise<void> {
    const key = keyOf(plan);
    this.planValidation.delete(key);
    this.blockerSince.delete(key);
    // The sim's own bookkeeping for the Plan goes with it (not a simulated behaviour: no API object changes).
    this.writeChains.delete(key);
    this.forget(this.vddkChecked, this.vddkChecking, `${plan.metadata.uid}/`, true);
    const run = this.runs.get(key);
    run?.abort.abort();
    if (run?.frozen) this.runs.delete(key);
    // v2.12.5 only: cleanupOrphanedResources (forklift@v2.12.5:pkg/controller/plan/controller.go) deletes every
    // claim and DataVolume labelled plan-name/plan-namespace that no VirtualMachine owns. v2.11.5 deletes nothing.
    // It lists them with the manager's cached client (deleteOrphanedResources, r.List), so a claim detached a
    // moment before the Plan went may still be seen VirtualMachine-owned, and kept: the sim reads its cache too.
    if (!is212(this.ctx)) return;
    for (const [i, res] of [[this.ctx.inf.dv, R.DataVolume], [this.ctx.inf.pvc, R.PVC]] as const) {
      for (const o of i.list()) {
        if (o.metadata.labels?.['plan-name'] !== plan.metadata.name || o.metadata.labels?.['plan-namespace'] !== plan.metadata.namespace) continue;
        if ((o.metadata.ownerReferences ?? []).some((r) => r.kind === 'VirtualMachine')) continue;
        await this.ctx.rest.del(res, o.metadata.namespace, o.metadata.name).catch(() => false);
      }
    }
    // …and every Secret so labelled, the VDDK Secret among them (deleteOrphanedResources, no VM-owned check),
    // listed from the API server: a Secret written a moment ago may not be in this process's cache yet.
    const tns: string = plan.spec?.targetNamespace ?? '';
    for (const o of tns ? (await this.ctx.rest.list(R.Secret, tns)).items : []) {
      if (o.metadata.labels?.['plan-name'] !== plan.metadata.name || o.metadata.labels?.['plan-namespace'] !== plan.metadata.namespace) continue;
      await this.ctx.rest.del(R.Secret, o.metadata.namespace, o.metadata.name).catch(() => false);
    }
  }

  /**
   * Writes validation + runtime state of a plan; serialized per plan. True once written (or nothing to write).
   * A write the API server refused or cut off is redone on a later pass (SlowReQ), computed afresh from the
   * state then: Forklift's Reconcile returns the failed updatePlanStatus as its error and is requeued
   * (kubev2v/forklift@v2.11.5:pkg/controller/plan/controller.go execute, updatePlanStatus;
   * pkg/controller/base/controller.go Ended), so a Plan never stays at what it showed before (ValidatingVDDK,
   * say) because one write was lost.
   */
  private writePlan(key: string): Promise<boolean> {
    const prev = this.writeChains.get(key) ?? Promise.resolve(true);
    const attempt = async (): Promise<boolean> => {
      // Another writer (a user editing the Plan, the API server's own bookkeeping) raced us: read again.
      for (let i = 0; ; i++) {
        try {
          await this.doWritePlan(key);
          return true;
        } catch (e) {
          if (!conflict(e) || i >= 4) throw e;
        }
      }
    };
    const next = prev.then(attempt).catch((e) => {
      if (this.ctx.stopping) return false;
      console.error(`[sim] plan status ${key}: ${(e as Error).message}; redone in ${SLOW_REQ_MS} ms`);
      if (!this.planRedo.has(key)) {
        this.planRedo.add(key);
        later(this.ctx, SLOW_REQ_MS, () => {
          this.planRedo.delete(key);
          void this.writePlan(key);
        });
      }
      return false;
    });
    this.writeChains.set(key, next);
    return next;
  }

  private async doWritePlan(key: string): Promise<void> {
    if (this.ctx.stopping) return;
    const [ns, name] = key.split('/') as [string, string];
    if (!this.ctx.inf.plan!.get(ns, name)) return;
    // Decide from the freshest object, not the informer's copy: a stale copy would drop the durable
    // Succeeded/Failed condition of the last run (as real Forklift never does).
    const plan = await this.ctx.rest.get(R.Plan, ns, name);
    if (!plan) return;
    const run = this.runs.get(key);
    const conds = [...(this.planValidation.get(key) ?? [])];
    const prevMig = plan.status?.migration ?? {};
    let migration = prevMig;
    // Terminal conditions of the last run stay on the plan (durable) until a new run starts.
    const prevTerminal = ((plan.status?.conditions ?? []) as Cond[]).filter((c) => ['Succeeded', 'Failed', 'Canceled'].includes(c.type));
    if (run) {
      migration = {
        ...prevMig,
        started: run.started,
        ...(run.completed ? { completed: run.completed } : {}),
        vms: run.vms,
        history: this.history(prevMig.history, run, plan),
      };
      if (run.result) conds.push(this.terminal(run, 'plan'));
      else if (!run.frozen) conds.push(cond('Executing', 'Advisory', 'Started', 'The plan is EXECUTING.'));
    } else conds.push(...prevTerminal.map((c) => ({ ...c, durable: true })));
    const next = { conditions: stamp(conds, plan.status?.conditions), observedGeneration: plan.metadata.generation, migration };
    if (sameStatus({ conditions: plan.status?.conditions, observedGeneration: plan.status?.observedGeneration, migration: plan.status?.migration }, next)) return;
    // Read-modify-write on the fresh object (replace carries its resourceVersion: a concurrent writer
    // makes this fail with a conflict and the write is retried, never silently merged).
    plan.status = { ...(plan.status ?? {}), ...next };
    await this.ctx.rest.replace(R.Plan, plan, 'status');
  }

  private terminal(run: Run, what: 'plan' | 'migration'): Cond {
    const subject = what === 'plan' ? 'The plan execution has' : 'The migration has';
    if (run.result === 'Succeeded') return { ...cond('Succeeded', 'Advisory', 'Completed', `${subject} SUCCEEDED.`), durable: true };
    if (run.result === 'Failed') return { ...cond('Failed', 'Advisory', 'Completed', run.blockerFailure ?? `${subject} FAILED.`), durable: true };
    if (run.cancelReason) return { ...cond('Canceled', 'Advisory', run.cancelReason, 'The migration has been canceled.'), durable: true };
    return { ...cond('Canceled', 'Advisory', run.canceledByDelete ? 'Deleted' : 'UserRequested', `${subject} been CANCELED.`), durable: true };
  }

  /**
   * One snapshot per Migration, as Forklift's newSnapshot writes it (kubev2v/forklift@v2.11.5:
   * pkg/controller/plan/controller.go newSnapshot; plan/snapshot.go): the plan, the migration, both providers
   * and both maps, each as {namespace, name, uid, generation} (all required by the CRD), plus conditions.
   */
  private history(prev: unknown, run: Run, plan: Obj): unknown[] {
    const h = ((prev ?? []) as Array<Record<string, unknown> & { migration?: { uid?: string } }>).filter((x) => x.migration?.uid !== run.migration.metadata.uid);
    const snap = (o: Obj | undefined, ref?: { name?: string; namespace?: string }): Record<string, unknown> => ({
      namespace: o?.metadata.namespace ?? ref?.namespace ?? '',
      name: o?.metadata.name ?? ref?.name ?? '',
      uid: o?.metadata.uid ?? '',
      generation: o?.metadata.generation ?? 0,
    });
    const spec = plan.spec ?? {};
    const get = (i: Informer | undefined, ref?: { name?: string; namespace?: string }): Obj | undefined => (ref?.name && ref.namespace ? i?.get(ref.namespace, ref.name) : undefined);
    const inf = this.ctx.inf;
    h.push({
      plan: snap(plan),
      migration: snap(run.migration),
      provider: { source: snap(get(inf.provider, spec.provider?.source), spec.provider?.source), destination: snap(get(inf.provider, spec.provider?.destination), spec.provider?.destination) },
      map: { network: snap(get(inf.nmap, spec.map?.network), spec.map?.network), storage: snap(get(inf.smap, spec.map?.storage), spec.map?.storage) },
      conditions: stamp(run.result ? [this.terminal(run, 'plan')] : [cond('Executing', 'Advisory', 'Started', 'The plan is EXECUTING.')], undefined),
    });
    return h;
  }

  // ---------------------------------------------------------------- Migration

  private async writeMigration(run: Run, ended: boolean): Promise<void> {
    const m = this.ctx.inf.migration!.get(run.migration.metadata.namespace, run.migration.metadata.name);
    if (!m || m.metadata.uid !== run.migration.metadata.uid) return;
    const conds = [ended && run.result ? this.terminal(run, 'migration') : cond('Executing', 'Advisory', 'Started', 'The migration is EXECUTING.')];
    await this.writeStatus(R.Migration, m, { conditions: conds, started: run.started, ...(ended && run.completed ? { completed: run.completed } : {}), vms: run.vms });
  }

  /** A change of phase, step or verdict: the run's status is written within a tick. */
  private markDirty(run: Run): void {
    this.dirty.add(keyOf(run.migration));
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      const keys = [...this.dirty];
      this.dirty.clear();
      for (const k of keys) {
        const r = [...this.runs.values()].find((x) => keyOf(x.migration) === k);
        if (!r) continue;
        r.flushedAt = Date.now();
        if (r.progressTimer) {
          clearTimeout(r.progressTimer);
          this.ctx.timers.delete(r.progressTimer);
          r.progressTimer = undefined;
        }
        void this.flush(r);
      }
    }, this.ctx.timings.tickMs);
  }

  /**
   * Progress alone (bytes moved, no phase changed): written with the next status write, and at most once
   * every PROGRESS_WRITE_MS per Migration. Forklift writes a running Migration's status once per pass, and
   * re-polls it every 3 s (kubev2v/forklift@v2.11.5:pkg/controller/plan/migration.go, Run: PollReQ); a write
   * per tick per disk would flood the API server with a campaign's worth of Migrations.
   */
  private markProgress(run: Run): void {
    const k = keyOf(run.migration);
    if (this.dirty.has(k) || run.progressTimer) return;
    const wait = Math.max(this.ctx.timings.tickMs, (run.flushedAt ?? 0) + PROGRESS_WRITE_MS - Date.now());
    const t = setTimeout(() => {
      this.ctx.timers.delete(t);
      run.progressTimer = undefined;
      if (!this.ctx.stopping) this.markDirty(run);
    }, wait);
    this.ctx.timers.add(t);
    run.progressTimer = t;
  }

  /** A running Migration's status written; one that was not taken is redone after SlowReQ (see writePlan). */
  private async flush(run: Run): Promise<void> {
    if (!(await this.flushOnce(run)) && !this.ctx.stopping) later(this.ctx, SLOW_REQ_MS, () => this.markDirty(run));
  }

  /** True when both the Plan's and the Migration's status are written. */
  private async flushOnce(run: Run): Promise<boolean> {
    if (this.ctx.stopping) return false;
    // Plan first: whoever sees the Migration finished must find the Plan's history already written. The
    // result is taken before the Plan write is queued: a write queued before the run ended may land after
    // it ended, and its Migration write must not then announce an end its Plan write did not carry.
    const ended = run.result !== undefined;
    if (!(await this.writePlan(run.planKey))) return false;
    return await this.writeMigration(run, ended).then(
      () => true,
      (e) => {
        if (!this.ctx.stopping) console.error(`[sim] migration status: ${(e as Error).message}; redone in ${SLOW_REQ_MS} ms`);
        return false;
      },
    );
  }

  private async reconcileMigration(key: string): Promise<void> {
    const [ns, name] = key.split('/') as [string, string];
    const m = this.ctx.inf.migration!.get(ns, name);
    if (!m || m.metadata.deletionTimestamp) return;
    const active = [...this.runs.values()].find((r) => r.migration.metadata.uid === m.metadata.uid);
    if (active) {
      // spec.cancel: cancel the listed VMs of the running migration.
      for (const c of (m.spec?.cancel ?? []) as Array<{ id?: string }>) if (c.id) active.cancelVM.get(c.id)?.abort();
      return;
    }
    if (m.status?.completed || (m.status?.conditions ?? []).some((c: Cond) => ['Succeeded', 'Failed', 'Canceled'].includes(c.type))) return;
    const pr = this.resolve(this.ctx.inf.plan, m.spec?.plan);
    if (pr.reason) {
      await this.writeStatus(R.Migration, m, { conditions: [cond('PlanNotValid', 'Critical', pr.reason, 'The plan is not valid.')] });
      return;
    }
    const plan = pr.obj!;
    const planKey = keyOf(plan);
    if (!this.isReadyConds(this.planValidation.get(planKey) ?? [])) {
      await this.writeStatus(R.Migration, m, { conditions: [cond('PlanNotReady', 'Critical', 'NotReady', 'The plan is not ready.')] });
      return;
    }
    if (this.runs.has(planKey)) return; // another migration of this plan is running; wait for it
    const now = new Date().toISOString();
    const run: Run = { planKey, migration: m, started: now, vms: [], abort: new AbortController(), cancelVM: new Map(), snapshot: this.snapshotOf(plan) };
    const hist = (plan.status?.migration?.history ?? []) as Array<{ migration?: { uid?: string }; conditions?: Cond[] }>;
    // This very Migration's snapshot ended: its run is over and only its own terminal status write has not
    // reached the cache yet (the Plan's, written first, has). It is not run again: the retry trap below is
    // for a new Migration of an ended Plan. Upstream, a Succeeded Plan is not reconciled at all and a
    // Migration is pending only until its status is terminal (kubev2v/forklift@v2.11.5 and v2.12.5:
    // pkg/controller/plan/controller.go Reconcile "Skipping reconcile of succeeded plan", pendingMigrations);
    // whether a Failed Plan's controller can pick the same Migration again in that cache window upstream is
    // not verified. The sim does not, so a failed VM's result is never overwritten.
    const own = hist.find((h) => h.migration?.uid === m.metadata.uid);
    if (own?.conditions?.some((c) => ['Succeeded', 'Failed', 'Canceled'].includes(c.type))) return;
    const prevTerminal = ((plan.status?.conditions ?? []) as Cond[]).some((c) => c.type === 'Succeeded' || c.type === 'Failed');
    this.runs.set(planKey, run);
    if (hist.length && prevTerminal) {
      // The retry trap: VMs of a plan with history are never migrated again; the run "succeeds" creating nothing
      // (validation.go skips VMs that already succeeded; controller.go does not reconcile a Succeeded Plan).
      run.vms = ((plan.status?.migration?.vms ?? []) as VMState[]).map((v) => ({ ...v }));
      run.result = 'Succeeded';
      run.completed = new Date().toISOString();
      await this.finish(run);
      return;
    }
    this.execute(run, plan).catch(async (e) => {
      if (this.ctx.stopping) return;
      console.error(`[sim] migration ${key}: ${(e as Error).message}`);
      run.result = 'Failed';
      run.completed = new Date().toISOString();
      await this.finish(run).catch(() => undefined);
    });
  }

  private migrationDeleted(m: Obj): void {
    const run = [...this.runs.values()].find((r) => r.migration.metadata.uid === m.metadata.uid);
    if (run && !run.result) {
      run.canceledByDelete = true;
      run.abort.abort();
    }
  }

  private async finish(run: Run): Promise<void> {
    // The run's end is written before the run is let go: once it is gone from `runs`, a redone Plan write
    // would no longer know the result. Forklift likewise redoes a pass until its status write is taken.
    while (!(await this.flushOnce(run))) {
      if (this.ctx.stopping) return;
      await sleep(this.ctx, SLOW_REQ_MS);
    }
    this.runs.delete(run.planKey);
    // Another Migration of the same plan may be waiting.
    const [ns, name] = run.planKey.split('/') as [string, string];
    for (const m of this.ctx.inf.migration!.list(ns)) if (m.spec?.plan?.name === name && m.metadata.uid !== run.migration.metadata.uid) this.migq.add(keyOf(m));
  }

  private async execute(run: Run, plan: Obj): Promise<void> {
    const src = this.ctx.inf.provider!.get(plan.spec.provider.source.namespace, plan.spec.provider.source.name)!;
    const world = this.worldOf(src)!;
    const vms = ((plan.spec.vms ?? []) as Array<{ id?: string; name?: string }>).map((r) => this.findVM(world, r)!);
    for (const vm of vms) {
      const mb = (d: DiskFixture): number => Math.ceil(d.capacity / 2 ** 20);
      const total = vm.disks.reduce((a, d) => a + mb(d), 0);
      const diskStep = (name: string, description: string): StepState => ({
        name,
        description,
        phase: 'Pending',
        progress: { total, completed: 0 },
        annotations: { unit: 'MB' },
        tasks: vm.disks.map((d) => ({ name: d.file, phase: 'Pending', progress: { total: mb(d), completed: 0 }, annotations: { unit: 'MB' } })),
      });
      const init: StepState = { name: 'Initialize', description: 'Initialize migration.', phase: 'Pending', progress: { total: 0, completed: 0 } };
      const create: StepState = { name: 'VirtualMachineCreation', description: 'Create VM.', phase: 'Pending', progress: { total: 1, completed: 0 } };
      run.vms.push({
        id: vm.id,
        name: vm.name,
        phase: 'Started',
        conditions: [],
        // The steps of the cold itinerary's phases (pkg/controller/plan/migrator/base/migrator.go, Pipeline and
        // coldItinerary): with guest conversion on vSphere, virt-v2v copies the disks itself (VirtV2vDiskCopy:
        // AllocateDisks → DiskAllocation, CreateGuestConversionPod/ConvertGuest → ImageConversion,
        // CopyDisksVirtV2V → DiskTransferV2v); without it CDI copies them (CopyDisks → DiskTransfer).
        pipeline: isWarm(plan)
          ? // The warm itinerary's steps (base/migrator.go Pipeline: CopyDisks → DiskTransfer, Finalize → Cutover
            // "Finalize disk transfer.", whose Phase starts unset); a warm run records its precopies from the start
            // (base/migrator.go: `status.Warm = &plan.Warm{}` for a warm Plan).
            [init, diskStep('DiskTransfer', 'Transfer disks.'), { ...diskStep('Cutover', 'Finalize disk transfer.'), phase: 'Pending' }, create]
          : converts(plan)
            ? [init, diskStep('DiskAllocation', 'Allocate disks.'), { name: 'ImageConversion', description: 'Convert image to kubevirt.', phase: 'Pending', progress: { total: 1, completed: 0 } }, diskStep('DiskTransferV2v', 'Copy disks.'), create]
            : [init, diskStep(this.ctx.transferStepName, 'Transfer disks.'), create],
        ...(isWarm(plan) ? { warm: { successes: 0, failures: 0, consecutiveFailures: 0, precopies: [] } } : {}),
      });
    }
    this.markDirty(run);
    // The vSphere scheduler (pkg/controller/plan/scheduler/vsphere/scheduler.go at both tags): a VM starts once
    // the untransferred disks of the VMs running on its ESXi host — across every Plan of the same source
    // Provider — plus its own fit MAX_VM_INFLIGHT (default 20, pkg/settings/migration.go), or when its host
    // is idle (a VM with more disks than the limit runs alone). Until then it is Pending.
    const pending = cond('Pending', 'Advisory', 'Pending', 'The VM migration is PENDING.');
    for (const st of run.vms) st.conditions = stamp([pending], undefined);
    await Promise.all(vms.map(async (vm, i) => {
      const st = run.vms[i]!;
      const slot = `${run.migration.metadata.uid}/${vm.id}`;
      try {
        while (!this.schedulable(src.metadata.uid!, vm.host, vm.disks.length)) {
          if (run.frozen || run.cancelReason || run.abort.signal.aborted) return;
          await sleep(this.ctx, this.ctx.timings.tickMs, run.abort.signal);
        }
      } catch {
        return;
      }
      if (run.frozen || run.cancelReason || run.abort.signal.aborted) return;
      this.slots.set(slot, { provider: src.metadata.uid!, host: vm.host, disks: vm.disks.length });
      st.conditions = [];
      this.markDirty(run);
      try {
        if (isWarm(plan)) await this.migrateVMWarm(run, plan, src, world, vm, st);
        else await this.migrateVM(run, plan, src, world, vm, st);
      } finally {
        this.slots.delete(slot);
      }
    }));
    // VMs still waiting for a slot when the run ended were canceled with it (migration.go Cancel).
    if (!this.ctx.stopping && !run.frozen && run.abort.signal.aborted) {
      for (const v of run.vms) if (v.conditions.some((c) => c.type === 'Pending')) v.conditions = stamp([run.cancelReason ? { ...cond('Canceled', 'Advisory', run.cancelReason, 'The migration has been canceled.'), durable: true } : cond('Canceled', 'Advisory', run.canceledByDelete ? 'Deleted' : 'UserRequested', 'The VM migration has been CANCELED.')], undefined);
    }
    if (this.ctx.stopping || run.frozen) return;
    // A VM a snapshot mismatch canceled before its worker reached it (controller.go: the snapshot's Canceled
    // condition is copied to every VM not Succeeded/Failed).
    if (run.cancelReason) for (const v of run.vms) if (!v.conditions.some((c) => ['Succeeded', 'Failed', 'Canceled'].includes(c.type))) v.conditions = stamp([{ ...cond('Canceled', 'Advisory', run.cancelReason, 'The migration has been canceled.'), durable: true }], undefined);
    const results = run.vms.map((v) => v.conditions.find((c) => ['Succeeded', 'Failed', 'Canceled'].includes(c.type))?.type);
    run.result = run.cancelReason || run.canceledByDelete || results.every((r) => r === 'Canceled') ? 'Canceled' : results.includes('Failed') ? 'Failed' : 'Succeeded';
    run.completed = new Date().toISOString();
    await this.finish(run);
  }

  /**
   * What every itinerary starts a VM with: its cancel signal (the run's, or a cancel of this VM alone),
   * the target namespace, and vmLabels (pkg/controller/plan/kubevirt.go): plan, migration, vmID; v2.12.5
   * adds plan-name, plan-namespace.
   */
  private beginVM(run: Run, plan: Obj, vm: VMFixture): { signal: AbortSignal; tns: string; labels: Record<string, string> } {
    const vmAbort = new AbortController();
    run.cancelVM.set(vm.id, vmAbort);
    return {
      signal: AbortSignal.any([run.abort.signal, vmAbort.signal]),
      tns: plan.spec.targetNamespace as string,
      labels: {
        plan: plan.metadata.uid!,
        migration: run.migration.metadata.uid!,
        vmID: vm.id,
        ...(is212(this.ctx) ? { 'plan-name': plan.metadata.name, 'plan-namespace': plan.metadata.namespace! } : {}),
      },
    };
  }

  /**
   * One VM along the cold itinerary for a CDI disk copy (pkg/controller/plan/migrator/base/migrator.go
   * coldItinerary; phases in pkg/controller/plan/migration.go): StorePowerState → PowerOffSource →
   * WaitForPowerOff → CreateDataVolumes (VDDK source, one per disk) → CopyDisks (DiskTransfer step, progress
   * in MB per disk task) → CreateVM (VirtualMachineCreation step) → Completed.
   */
  private async migrateVM(run: Run, plan: Obj, src: Obj, world: World, vm: VMFixture, st: VMState): Promise<void> {
    const ctx = this.ctx;
    const { signal, tns, labels } = this.beginVM(run, plan, vm);
    const convert = converts(plan);
    const init = st.pipeline[0]!;
    const xfer = st.pipeline[1]!;
    const create = st.pipeline[st.pipeline.length - 1]!;
    const now = (): string => new Date().toISOString();
    const phase = async (p: string): Promise<void> => {
      await this.holdWhileBlocked(run, signal);
      st.phase = p;
      this.markDirty(run);
      await sleep(ctx, ctx.timings.stepMs, signal);
    };
    const dvs: Obj[] = [];
    let step: StepState = init;
    try {
      st.started = now();
      init.phase = 'Running';
      init.started = now();
      // PhaseStarted → cleanup (migration.go at both tags): what an earlier run of this VM left goes first.
      await this.deleteVddkSecrets(plan, vm.id);
      await phase('StorePowerState');
      st.restorePowerState = vm.powerState === 'poweredOn' ? 'On' : 'Off';
      await phase('PowerOffSource');
      vm.powerState = 'poweredOff';
      await phase('WaitForPowerOff');
      init.phase = 'Completed';
      init.completed = now();
      await phase('CreateDataVolumes');
      dvs.push(...(await this.createDataVolumes(plan, src, world, vm, labels, convert, signal)));
      const vddk: string = src.spec?.settings?.vddkInitImage ?? '';
      const hostRef = world.host(vm.host)!;
      let claims: Obj[];
      if (convert) {
        claims = await this.convertAndCopy(run, plan, world, vm, st, dvs, labels, signal, phase, (s) => (step = s));
      } else {
      step = xfer;
      xfer.phase = 'Running';
      xfer.started = now();
      await phase('CopyDisks');
      // Claims exist (CDI creates them) and are bound before any byte moves.
      claims = await Promise.all(dvs.map((dv) => ctx.inf.pvc.waitUntil(() => {
        const c = ctx.inf.pvc.get(tns, dv.metadata.name);
        return c?.status?.phase === 'Bound' ? c : undefined;
      }, signal)));
      if (vm.faults.awaitingVddk || !vddk) {
        // CDI waits for a VDDK image that is not configured: nothing ever moves
        // (containerized-data-importer@v1.64.0:pkg/controller/import-controller.go, reason AwaitingVDDK).
        for (const dv of dvs) {
          await this.patchDV(dv, {
            phase: 'ImportScheduled',
            progress: 'N/A',
            conditions: [{ type: 'Running', status: 'False', reason: 'AwaitingVDDK', message: VDDK_WAITING_MESSAGE }],
          });
        }
        await new Promise((_r, rej) => signal.addEventListener('abort', () => rej(new Error('aborted')), { once: true }));
      }
      // Disk traffic goes to a Ready Host override of this host in the provider's namespace, else to the
      // advertised address (the vSphere builder's VDDK URL, pkg/controller/plan/adapter/vsphere/builder.go).
      const override = ctx.inf.host!.list(src.metadata.namespace).find((h) => h.spec?.id === vm.host && h.spec?.provider?.name === src.metadata.name && this.isReady(h));
      const address: string = override?.spec?.ipAddress ?? hostRef.address;
      if (!world.reachable(vm.host, address)) {
        for (const dv of dvs) await this.patchDV(dv, { phase: 'ImportInProgress', progress: '0.00%' });
        const deadline = Date.now() + ctx.timings.unreachableFailMs;
        let n = 0;
        while (Date.now() < deadline) {
          for (const c of claims) await emitEvent(ctx, c, 'Warning', 'ErrImportFailed', `Unable to connect to vddk data source: VixDiskLib_Open [${address}] ${vm.disks[0]!.file}: The server refused connection (attempt ${n + 1})`, 'cdi-importer');
          n++;
          await sleep(ctx, Math.max(ctx.timings.unreachableFailMs / 3, ctx.timings.tickMs), signal);
        }
        throw Object.assign(new Error(NBD_ERROR), { forklift: true });
      }
      await Promise.all(vm.disks.map((d, i) => this.transferDisk(run, world, vm, d, dvs[i]!, claims[i]!, xfer, i, signal)));
      xfer.phase = 'Completed';
      xfer.completed = now();
      }
      step = create;
      await this.createVMStep(run, plan, vm, st, create, tns, labels, claims, dvs, phase, signal);
    } catch (e) {
      if (ctx.stopping || run.frozen) return;
      step.phase = step.phase === 'Pending' ? 'Pending' : 'Completed';
      await this.endVM(run, plan, vm, st, step, e, { tns, dvs, signal, errorPhase: st.phase });
    } finally {
      run.cancelVM.delete(vm.id);
    }
  }

  /**
   * The CreateVM phase and the VM's success, where both itineraries end (base/migrator.go: the
   * VirtualMachineCreation step): EnsureVM, then the DataVolumes' removal (createVMPhase), then Completed
   * with the Succeeded condition.
   */
  private async createVMStep(
    run: Run,
    plan: Obj,
    vm: VMFixture,
    st: VMState,
    create: StepState,
    tns: string,
    labels: Record<string, string>,
    claims: Obj[],
    dvs: Obj[],
    phase: (name: string) => Promise<void>,
    signal: AbortSignal,
  ): Promise<void> {
    const now = (): string => new Date().toISOString();
    create.phase = 'Running';
    create.started = now();
    await phase('CreateVM');
    await this.createVMPhase(run, plan, vm, st, tns, labels, claims, dvs, signal);
    create.phase = 'Completed';
    create.progress.completed = 1;
    create.completed = now();
    st.phase = 'Completed';
    st.completed = now();
    st.conditions = stamp([cond('Succeeded', 'Advisory', 'Completed', 'The VM migration has SUCCEEDED.')], undefined);
    // v2.12.5 cleans up after a VM's success (migration.go, the Succeeded branch: cleanup(vm, …, false)), the
    // VDDK Secret with it; v2.11.5 does not (it stays until the Plan is archived or runs again).
    if (is212(this.ctx)) await this.deleteVddkSecrets(plan, vm.id).catch(() => undefined);
    this.markDirty(run);
  }

  /**
   * A VM whose itinerary threw: Canceled when its signal was aborted (a cancel, the Migration deleted),
   * else Failed with the error recorded on the step and on the VM under `errorPhase` (plan/vm.go AddError,
   * ReflectPipeline). `beforeCleanup` runs first (the warm run's last snapshot removal). A canceled VM's VDDK
   * Secret goes; its DataVolumes, and a failed VM's, only with deleteVmOnFailMigration.
   */
  private async endVM(
    run: Run,
    plan: Obj,
    vm: VMFixture,
    st: VMState,
    step: StepState,
    e: unknown,
    o: { tns: string; dvs: Obj[]; signal: AbortSignal; errorPhase: string; quiet?: (msg: string) => boolean; beforeCleanup?: () => void },
  ): Promise<void> {
    const canceled = o.signal.aborted;
    st.completed = new Date().toISOString();
    if (canceled) {
      st.phase = 'Canceled';
      st.conditions = stamp([run.cancelReason ? { ...cond('Canceled', 'Advisory', run.cancelReason, 'The migration has been canceled.'), durable: true } : cond('Canceled', 'Advisory', run.canceledByDelete ? 'Deleted' : 'UserRequested', 'The VM migration has been CANCELED.')], undefined);
    } else {
      const msg = (e as Error).message;
      if (!(e as { forklift?: boolean }).forklift && !o.quiet?.(msg)) console.error(`[sim] migrate ${vm.id}: ${msg}`);
      step.error = { phase: o.errorPhase, reasons: [msg] };
      st.error = { phase: st.phase, reasons: [msg] };
      st.phase = 'Completed';
      st.conditions = stamp([cond('Failed', 'Advisory', 'Completed', 'The VM migration has FAILED.')], undefined);
    }
    o.beforeCleanup?.();
    // Migration.Cancel → cleanup (migration.go at both tags): a canceled VM's VDDK Secret goes. A failed VM's
    // stays until the Plan is archived, runs again or (v2.12.5) is deleted.
    if (canceled) await this.deleteVddkSecrets(plan, vm.id).catch(() => undefined);
    // cleanup deletes the VM's DataVolumes (and their claims) only with deleteVmOnFailMigration, canceled or
    // not (migration.go cleanup at both tags). Upstream does it for a failed VM only at the next cleanup
    // (archive, re-run); the sim does it at once.
    if (plan.spec.deleteVmOnFailMigration !== false) {
      for (const dv of o.dvs) {
        await this.ctx.rest.del(R.DataVolume, o.tns, dv.metadata.name).catch(() => false);
        await this.ctx.rest.del(R.PVC, o.tns, dv.metadata.name).catch(() => false);
      }
    }
    this.markDirty(run);
  }

  /**
   * One VM along the warm itinerary (kubev2v/forklift@v2.11.5:pkg/controller/plan/migrator/base/migrator.go
   * warmItinerary; each phase as pkg/controller/plan/migration.go executes it):
   *   Started → CreateInitialSnapshot → WaitForInitialSnapshot → StoreInitialSnapshotDeltas → CreateDataVolumes
   *   → [CopyDisks → CopyingPaused → RemovePreviousSnapshot → WaitForPreviousSnapshotRemoval → CreateSnapshot
   *      → WaitForSnapshot → StoreSnapshotDeltas → AddCheckpoint → CopyDisks ...]   (the precopy loop)
   *   → StorePowerState → PowerOffSource → WaitForPowerOff → RemovePenultimateSnapshot → WaitFor… →
   *   CreateFinalSnapshot → WaitForFinalSnapshot → AddFinalCheckpoint → Finalize → RemoveFinalSnapshot →
   *   WaitForFinalSnapshotRemoval → CreateVM → Completed.
   * The source keeps running until PowerOffSource. The first CopyDisks moves each disk in full, every later
   * one the blocks the guest changed since the previous snapshot, and Finalize the last of them. A VDDK copy
   * only (a warm Plan with guest conversion, which converts in place after Finalize, is not played).
   */
  private async migrateVMWarm(run: Run, plan: Obj, src: Obj, world: World, vm: VMFixture, st: VMState): Promise<void> {
    const ctx = this.ctx;
    const { signal, tns, labels } = this.beginVM(run, plan, vm);
    const [init, xfer, cut, create] = st.pipeline as [StepState, StepState, StepState, StepState];
    const warm = st.warm!;
    const now = (): string => new Date().toISOString();
    const phase = async (p: string): Promise<void> => {
      await this.holdWhileBlocked(run, signal);
      st.phase = p;
      this.markDirty(run);
      await sleep(ctx, ctx.timings.stepMs, signal);
    };
    const last = (): Precopy => warm.precopies[warm.precopies.length - 1]!;
    // When the guest's writes since the last snapshot started counting (the snapshot the next copy reads from).
    let changedSince = Date.now();
    let delta: number[] = [];
    const dvs: Obj[] = [];
    let claims: Obj[] = [];
    let step: StepState = init;
    /** CreateSnapshot / CreateInitialSnapshot / CreateFinalSnapshot, then its WaitFor… phase. */
    const snapshot = async (create: string, wait: string): Promise<void> => {
      await phase(create);
      // vCenter's refusal is the step's error (migration.go: `step.AddError(err.Error())`), which fails the VM.
      const made = world.createSnapshot(vm.id);
      warm.precopies.push({ start: now(), createTaskId: made.task });
      // resetPrecopyTasks (migration.go): the transfer tasks start over, annotated with the precopy number.
      for (const t of xfer.tasks ?? []) Object.assign(t, { phase: 'Pending', started: undefined, completed: undefined, progress: { ...t.progress, completed: 0 }, annotations: { ...t.annotations, Precopy: String(warm.precopies.length) } });
      xfer.completed = undefined;
      await phase(wait);
      // CheckSnapshotReady (vsphere/client.go): the task's result is the snapshot's id.
      last().snapshot = made.snapshot;
    };
    /** StoreSnapshotDeltas: the change ids of each disk at the snapshot (vsphere/client.go GetSnapshotDeltas). */
    const deltas = async (p: string): Promise<void> => {
      await phase(p);
      last().deltas = vm.disks.map((d, i) => ({ disk: d.file, deltaId: `52 ${vm.uuid.slice(0, 8)} ${i}/${warm.precopies.length}` }));
    };
    /** RemovePreviousSnapshot / …Penultimate… / …Final…, with its wait: the last precopy's snapshot goes. */
    const removeSnapshot = async (remove: string, wait: string): Promise<void> => {
      await phase(remove);
      const p = last();
      if (p.snapshot) p.removeTaskId = world.removeSnapshot(vm.id, p.snapshot);
      await phase(wait);
    };
    /** AddCheckpoint / AddFinalCheckpoint: vsphere/client.go SetCheckpoints appends {current, previous} to each DataVolume. */
    const checkpoint = async (p: string, final: boolean): Promise<void> => {
      await phase(p);
      const n = warm.precopies.length;
      const current = last().snapshot ?? '';
      const previous = n >= 2 ? new Map((warm.precopies[n - 2]!.deltas ?? []).map((d) => [d.disk, d.deltaId])) : new Map<string, string>();
      for (const [i, dv] of dvs.entries()) {
        const fresh = ctx.inf.dv.get(tns, dv.metadata.name) ?? dv;
        const cps = ((fresh.spec?.checkpoints ?? []) as Array<{ previous: string; current: string }>).filter((c) => c.current !== current);
        const cp = { previous: previous.get(vm.disks[i]!.file) ?? '', current };
        await ctx.rest.patch(R.DataVolume, tns, dv.metadata.name, { spec: { checkpoints: [...cps, cp], finalCheckpoint: final } });
        // CDI's DataVolume controller carries the next checkpoint to the claim (datavolume/import-controller.go updateAnnotations).
        await ctx.rest.patch(R.PVC, tns, dv.metadata.name, { metadata: { annotations: { [ANN_CURRENT_CHECKPOINT]: cp.current, [ANN_PREVIOUS_CHECKPOINT]: cp.previous, [ANN_FINAL_CHECKPOINT]: String(final) } } }).catch(() => undefined);
      }
    };
    try {
      st.started = now();
      init.phase = 'Running';
      init.started = now();
      await this.deleteVddkSecrets(plan, vm.id);
      // Precopying from a running source: its power state is left alone until the cutover.
      await snapshot('CreateInitialSnapshot', 'WaitForInitialSnapshot');
      changedSince = Date.now();
      await deltas('StoreInitialSnapshotDeltas');
      await phase('CreateDataVolumes');
      dvs.push(...(await this.createDataVolumes(plan, src, world, vm, labels, false, signal)));
      init.phase = 'Completed';
      init.completed = now();
      step = xfer;
      xfer.phase = 'Running';
      xfer.started = now();
      claims = await Promise.all(dvs.map((dv) => ctx.inf.pvc.waitUntil(() => {
        const c = ctx.inf.pvc.get(tns, dv.metadata.name);
        return c?.status?.phase === 'Bound' ? c : undefined;
      }, signal)));
      for (let full = true; ; full = false) {
        // CopyDisks: the first precopy copies each disk whole, later ones what changed since the previous snapshot.
        await phase('CopyDisks');
        xfer.phase = 'Running';
        const bytes = full ? vm.disks.map((d) => d.capacity) : delta;
        await this.copyStage(run, world, vm, st, dvs, claims, xfer, bytes, last().snapshot ?? '', false, signal);
        // migration.go, PhaseCopyDisks once the step completed: the precopy's end, the next one's time.
        const end = new Date();
        last().end = end.toISOString();
        warm.nextPrecopyAt = new Date(end.getTime() + ctx.timings.precopyIntervalMs).toISOString();
        warm.successes++;
        xfer.phase = 'Completed';
        xfer.completed = now();
        await phase('CopyingPaused');
        // CopyingPaused: the cutover once Migration.spec.cutover is not after now; else the next precopy once due.
        let cutover = false;
        for (;;) {
          const at = this.cutoverOf(run);
          if (at !== undefined && at <= Date.now()) {
            cutover = true;
            break;
          }
          if (Date.parse(warm.nextPrecopyAt) <= Date.now()) break;
          await sleep(ctx, ctx.timings.tickMs, signal);
        }
        if (cutover) break;
        await removeSnapshot('RemovePreviousSnapshot', 'WaitForPreviousSnapshotRemoval');
        await snapshot('CreateSnapshot', 'WaitForSnapshot');
        const taken = Date.now();
        await deltas('StoreSnapshotDeltas');
        await checkpoint('AddCheckpoint', false);
        // The next copy reads the blocks changed between the previous snapshot and this one; the guest's
        // later writes go to the next.
        delta = vm.disks.map((d) => this.changedBytes(vm, d, changedSince, taken));
        changedSince = taken;
      }
      // Cutover (CopyingPaused sets the phase directly: the DiskTransfer step stays as the last precopy left it).
      step = cut;
      await phase('StorePowerState');
      st.restorePowerState = vm.powerState === 'poweredOn' ? 'On' : 'Off';
      await phase('PowerOffSource');
      vm.powerState = 'poweredOff';
      const poweredOff = Date.now();
      await phase('WaitForPowerOff');
      await removeSnapshot('RemovePenultimateSnapshot', 'WaitForPenultimateSnapshotRemoval');
      await snapshot('CreateFinalSnapshot', 'WaitForFinalSnapshot');
      await checkpoint('AddFinalCheckpoint', true);
      // Finalize (updateCopyProgress on the Cutover step): the guest's last writes, up to the power-off.
      await phase('Finalize');
      cut.phase = 'Running';
      cut.started = now();
      const final = vm.disks.map((d) => this.changedBytes(vm, d, changedSince, poweredOff));
      await this.copyStage(run, world, vm, st, dvs, claims, cut, final, last().snapshot ?? '', true, signal);
      await removeSnapshot('RemoveFinalSnapshot', 'WaitForFinalSnapshotRemoval');
      cut.phase = 'Completed';
      cut.completed = now();
      step = create;
      await this.createVMStep(run, plan, vm, st, create, tns, labels, claims, dvs, phase, signal);
    } catch (e) {
      if (ctx.stopping || run.frozen) return;
      await this.endVM(run, plan, vm, st, step, e, {
        tns,
        dvs,
        signal,
        // step.AddError; ReflectPipeline copies it to the VM's error under the phase it happened in (plan/vm.go AddError).
        errorPhase: step.phase,
        quiet: (msg) => msg === NO_PERMISSION,
        // A failed warm run cannot reach its snapshot removal phases: Forklift removes the last snapshot here
        // (migration.go, removeLastWarmSnapshot) so none is left orphaned on the source.
        beforeCleanup: () => {
          const p = warm.precopies[warm.precopies.length - 1];
          if (p?.snapshot && world.liveSnapshots(vm.id).includes(p.snapshot)) p.removeTaskId = world.removeSnapshot(vm.id, p.snapshot);
        },
      });
    } finally {
      run.cancelVM.delete(vm.id);
    }
  }

  /**
   * The bytes of disk `d` the running guest changed since `since` (up to `until`, default now): the VM's
   * change rate per precopy interval, pro rata, never more than the disk.
   */
  private changedBytes(vm: VMFixture, d: DiskFixture, since: number, until = Date.now()): number {
    const intervals = Math.max(0, until - since) / Math.max(1, this.ctx.timings.precopyIntervalMs);
    return Math.min(d.capacity, Math.round(d.capacity * vm.changePerInterval * intervals));
  }

  /** The Migration's spec.cutover as Forklift reads it (epoch ms), from the freshest copy the informer has. */
  private cutoverOf(run: Run): number | undefined {
    const m = this.ctx.inf.migration!.get(run.migration.metadata.namespace, run.migration.metadata.name);
    const t = m?.spec?.cutover ? Date.parse(m.spec.cutover) : NaN;
    return Number.isFinite(t) ? t : undefined;
  }

  /**
   * One stage of a multi-stage CDI import (containerized-data-importer@v1.64.0: a VDDK importer per checkpoint,
   * reading the blocks changed between the previous and the current snapshot), as Forklift follows it
   * (kubev2v/forklift@v2.11.5:pkg/controller/plan/migration.go updateCopyProgress): each disk's task shows the
   * DataVolume's percentage of its size; a stage ends with the DataVolume Paused and the claim annotated
   * `storage.checkpoint.copied.<snapshot>` (datavolume/import-controller.go, UpdatesMultistageImportSucceeded), or,
   * for the final checkpoint, Succeeded. An importer that fails is restarted by CDI; Forklift copies its restart
   * count to warm.failures and fails the task past IMPORTER_RETRY restarts (restartLimitExceeded, with the
   * importer's termination message).
   */
  private async copyStage(run: Run, world: World, vm: VMFixture, st: VMState, dvs: Obj[], claims: Obj[], step: StepState, bytes: number[], snapshot: string, final: boolean, signal: AbortSignal): Promise<void> {
    const ctx = this.ctx;
    const warm = st.warm!;
    const precopy = warm.precopies.length;
    const fault = vm.faults.precopyImporterFailures;
    // A new importer pod per stage: Forklift reads its restart count (0 for a fresh pod) once it runs.
    warm.failures = 0;
    await Promise.all(vm.disks.map(async (d, i) => {
      const task = step.tasks![i]!;
      const dv = dvs[i]!;
      task.phase = 'Running';
      task.started = new Date().toISOString();
      task.completed = undefined;
      task.progress.completed = 0;
      let restarts = 0;
      for (let attempt = 0; ; attempt++) {
        await this.patchDV(dv, { phase: 'ImportInProgress', progress: '0.00%', restartCount: restarts, conditions: [{ type: 'Running', status: 'True', reason: 'Pod is running' }] });
        const failing = i === 0 && fault?.precopy === precopy && restarts < fault.restarts;
        // Each stage's importer opens its own NFC stream on the VM's host (see transferDisk, openStream).
        const stream = `${++this.streamSeq}/${vm.id}/${d.file}@${snapshot}`;
        const opened = world.esxi.start(vm.host, stream, bytes[i]!, Date.now(), d.file);
        let broke: string | undefined = opened.ok ? undefined : opened.error;
        let shownAt = Date.now();
        try {
          while (!broke) {
            await sleep(ctx, ctx.timings.tickMs, signal);
            if (blocking(this.planValidation.get(run.planKey) ?? [])) {
              world.esxi.hold(stream, true, Date.now());
              await this.holdWhileBlocked(run, signal);
              world.esxi.hold(stream, false, Date.now());
            }
            const t = Date.now();
            const copied = world.esxi.complete(stream, t);
            const pct = copied || bytes[i]! <= 0 ? 1 : Math.min(1, world.esxi.bytesDone(stream, t) / bytes[i]!);
            if (failing && pct >= 0.5) {
              broke = `Unable to transfer source data to target: nbdkit: vddk: VixDiskLib_Read: ${d.file}: NBD_ERR_INSUFFICIENT_RESOURCES (precopy ${precopy}, snapshot ${snapshot})`;
              break;
            }
            task.progress.completed = Math.floor(pct * task.progress.total);
            step.progress.completed = step.tasks!.reduce((a, x) => a + x.progress.completed, 0);
            if (copied) break;
            this.markProgress(run);
            if (t - shownAt >= PROGRESS_WRITE_MS) {
              shownAt = t;
              await this.patchDV(dv, { phase: 'ImportInProgress', progress: `${(pct * 100).toFixed(2)}%` });
            }
          }
        } finally {
          world.esxi.finish(stream, Date.now());
        }
        if (!broke) break;
        // The importer exits with an error; CDI restarts it (the pod's RestartCount, mirrored on the DataVolume).
        restarts++;
        warm.failures = restarts;
        const msg = broke;
        await this.patchDV(dv, { phase: 'ImportInProgress', restartCount: restarts, conditions: [{ type: 'Running', status: 'False', reason: 'Error', message: msg }] });
        for (const c of claims.slice(0, 1)) await emitEvent(ctx, c, 'Warning', 'Error', `Importer pod failed: ${msg}`, 'cdi-importer');
        this.markDirty(run);
        if (restarts > IMPORTER_RETRY) {
          task.error = { phase: 'Running', reasons: [msg] };
          throw Object.assign(new Error(msg), { forklift: true });
        }
        // A refused open: the next start waits out the importer's restart back-off.
        if (!opened.ok) await sleep(ctx, ctx.timings.importerRestartMs, signal);
      }
      task.progress.completed = task.progress.total;
      task.phase = 'Completed';
      task.completed = new Date().toISOString();
      step.progress.completed = step.tasks!.reduce((a, x) => a + x.progress.completed, 0);
      const claim = claims[i]!;
      if (final) {
        const pvName: string = claim.spec?.volumeName ?? ctx.inf.pvc.get(claim.metadata.namespace, claim.metadata.name)?.spec?.volumeName;
        await ctx.rest.patch(R.PV, undefined, pvName, {
          metadata: { annotations: { [CONTENT_ANNOTATION]: contentIdentity(world.url, vm.id, d), [SOURCE_ANNOTATION]: `${world.url}#${vm.id}/${d.file}` } },
        });
        await this.patchDV(dv, { phase: 'Succeeded', progress: '100.0%', conditions: [{ type: 'Ready', status: 'True', reason: 'Completed' }, { type: 'Bound', status: 'True', reason: 'Bound' }] });
      } else {
        await ctx.rest.patch(R.PVC, claim.metadata.namespace, claim.metadata.name, { metadata: { annotations: { [`${ANN_CHECKPOINTS_COPIED}.${snapshot}`]: 'true' } } }).catch(() => undefined);
        await this.patchDV(dv, { phase: 'Paused', progress: '100.0%', conditions: [{ type: 'Running', status: 'False', reason: 'Paused' }] });
      }
      this.markDirty(run);
    }));
  }

  /**
   * CreateDataVolumes (pkg/controller/plan/kubevirt.go EnsureDataVolumes, vsphere/builder.go DataVolumes): one
   * DataVolume per disk, a VDDK source (or blank for virt-v2v), storage from the StorageMap.
   */
  private async createDataVolumes(plan: Obj, src: Obj, world: World, vm: VMFixture, labels: Record<string, string>, convert: boolean, signal: AbortSignal): Promise<Obj[]> {
    const ctx = this.ctx;
    const tns: string = plan.spec.targetNamespace;
    const dvs: Obj[] = [];
    const smEntries = (ctx.inf.smap!.get(plan.spec.map.storage.namespace, plan.spec.map.storage.name)?.spec?.map ?? []) as Array<{ source?: { id?: string; name?: string }; destination?: { storageClass?: string; volumeMode?: string; accessMode?: string } }>;
    const vddk: string = src.spec?.settings?.vddkInitImage ?? '';
    const secret = await this.ensureVddkSecret(plan, src, vm, labels, signal);
    for (const d of vm.disks) {
      const ds = world.fixture.datastores.find((x) => x.id === d.datastore)!;
      const dest = smEntries.find((e) => e.source?.id === ds.id || (!e.source?.id && e.source?.name === ds.name))?.destination ?? {};
      // EnsureDataVolumes (kubev2v/forklift@v2.11.5:pkg/controller/plan/kubevirt.go): the VM's DataVolumes are
      // listed by its labels first and one is created only for a disk that has none (isDataVolumeExistsInList,
      // by the disk's backing file on vSphere) — so a step redone after an API server outage, or a Migration
      // whose run is picked up again, never leaves a second DataVolume for a disk.
      // The list is redone with the create (redoOnApiError): a create whose answer was lost is found by it.
      const dv = await redoOnApiError(ctx, signal, `create DataVolume of ${vm.id} ${d.file}`, async () => (await ctx.rest.list(R.DataVolume, tns)).items.find(
        (o) => !o.metadata.deletionTimestamp && o.metadata.labels?.migration === labels.migration && o.metadata.labels?.vmID === vm.id && o.metadata.annotations?.['forklift.konveyor.io/disk-source'] === d.file,
      ) ?? await ctx.rest.create(R.DataVolume, {
        metadata: {
          generateName: `${plan.metadata.name}-${vm.id}-`,
          namespace: tns,
          labels,
          annotations: { 'forklift.konveyor.io/disk-source': d.file, 'cdi.kubevirt.io/storage.bind.immediate.requested': 'true' },
        },
        spec: {
          // With guest conversion virt-v2v does the copying into blank DataVolumes (vsphere/builder.go
          // DataVolumes: `Let virt-v2v do the copying`); otherwise CDI copies over VDDK.
          source: convert
            ? { blank: {} }
            : {
                vddk: {
                  backingFile: d.file,
                  url: src.spec.url,
                  uuid: vm.uuid,
                  thumbprint: world.fixture.thumbprint,
                  secretRef: secret.metadata.name,
                  initImageURL: vddk,
                },
              },
          storage: {
            ...(dest.storageClass ? { storageClassName: dest.storageClass } : {}),
            ...(dest.volumeMode ? { volumeMode: dest.volumeMode } : {}),
            accessModes: [dest.accessMode ?? 'ReadWriteOnce'],
            resources: { requests: { storage: String(d.capacity) } },
          },
        },
      }));
      dvs.push(dv);
    }
    return dvs;
  }

  /**
   * A running Plan that gains a blocker condition (its source Provider deleted: SourceProviderNotValid)
   * makes no further progress: Forklift's plan reconciler returns from execute() before running the
   * migration while the Plan has a blocker, and only re-queues slowly
   * (kubev2v/forklift@v2.11.5:pkg/controller/plan/controller.go, execute; pkg/controller/plan/validation.go,
   * validate). Nothing fails or is cleaned up: the transfer simply hangs. True when it had to wait.
   */
  private async holdWhileBlocked(run: Run, signal: AbortSignal): Promise<boolean> {
    let held = false;
    while (blocking(this.planValidation.get(run.planKey) ?? [])) {
      held = true;
      await sleep(this.ctx, this.ctx.timings.tickMs, signal);
    }
    return held;
  }

  /**
   * CDI's status write of a DataVolume. CDI's controllers are controller-runtime reconcilers too: a write the
   * API server did not take is redone on the requeued pass (containerized-data-importer@v1.64.0:
   * pkg/controller/datavolume/controller-base.go: reconcile returns the error of its sync, whose updateStatus
   * writes the DataVolume's status). A merge patch of the same fields, so redoing one whose answer was lost
   * changes nothing.
   */
  private async patchDV(dv: Obj, status: Record<string, unknown>, signal?: AbortSignal): Promise<void> {
    await redoOnApiError(this.ctx, signal, `DataVolume ${dv.metadata.name} status`, () => this.ctx.rest.patch(R.DataVolume, dv.metadata.namespace, dv.metadata.name, { status }, 'status')).catch((e) => {
      if (!notFound(e)) throw e;
    });
  }

  /**
   * The guest-conversion part of the cold itinerary on vSphere, where virt-v2v copies as it converts
   * (pkg/controller/plan/migrator/base/migrator.go coldItinerary with VirtV2vDiskCopy and RequiresConversion;
   * phases in pkg/controller/plan/migration.go):
   * - AllocateDisks (DiskAllocation): the blank DataVolumes' claims bind; CDI has nothing to import.
   * - CreateGuestConversionPod (ImageConversion): one virt-v2v pod per VM in the target namespace, named
   *   `<plan>-<vm id>-` + suffix, labelled plan/migration/vmID + app=virt-v2v, the claims mounted, seccomp
   *   RuntimeDefault off OpenShift (plan/kubevirt.go EnsureVirtV2vPod, getVirtV2vPod, conversionLabels).
   * - ConvertGuest (ImageConversion): the pod runs; a pod that ends Failed completes the step with
   *   "Guest conversion failed. See pod logs for details." and a pod that is gone with "Guest conversion
   *   pod not found" (migration.go updateConversionProgress). Its log is what tells the causes apart.
   * - CopyDisksVirtV2V (DiskTransferV2v): per-disk progress from the pod's monitor; ImageConversion
   *   completes once bytes move (updateConversionProgressV2vMonitor); the pod ends Succeeded.
   * The pod is left in place (Forklift removes it in cleanup, on the next run or when the plan is archived:
   * migration.go cleanup, DeleteGuestConversionPod); the claims stay for CreateVM, as on the CDI path.
   */
  private async convertAndCopy(
    run: Run,
    plan: Obj,
    world: World,
    vm: VMFixture,
    st: VMState,
    dvs: Obj[],
    labels: Record<string, string>,
    signal: AbortSignal,
    phase: (p: string) => Promise<void>,
    setStep: (s: StepState) => void,
  ): Promise<Obj[]> {
    const ctx = this.ctx;
    const tns: string = plan.spec.targetNamespace;
    const now = (): string => new Date().toISOString();
    const [, alloc, conv, copy] = st.pipeline as [StepState, StepState, StepState, StepState, StepState];
    setStep(alloc);
    alloc.phase = 'Running';
    alloc.started = now();
    await phase('AllocateDisks');
    const claims = await Promise.all(dvs.map((dv) => ctx.inf.pvc.waitUntil(() => {
      const c = ctx.inf.pvc.get(tns, dv.metadata.name);
      return c?.status?.phase === 'Bound' ? c : undefined;
    }, signal)));
    for (const t of alloc.tasks ?? []) Object.assign(t, { phase: 'Completed', progress: { ...t.progress, completed: t.progress.total } });
    alloc.progress.completed = alloc.progress.total;
    alloc.phase = 'Completed';
    alloc.completed = now();

    setStep(conv);
    conv.phase = 'Running';
    conv.started = now();
    await phase('CreateGuestConversionPod');
    const pod = await this.createConversionPod(plan, vm, tns, labels, claims, signal);
    await phase('ConvertGuest');
    await this.podStatus(pod, { phase: 'Running', podIP: '10.244.0.10', containerStatuses: [{ name: 'virt-v2v', ready: true, restartCount: 0, image: VIRT_V2V_IMAGE, imageID: '', state: { running: { startedAt: now() } } }] });
    const failure = vm.faults.conversionFailure;
    if (failure) {
      this.podLogs.set(`${tns}/${pod.metadata.name}`, conversionLog(failure, vm));
      await this.podStatus(pod, {
        phase: 'Failed',
        containerStatuses: [{ name: 'virt-v2v', ready: false, restartCount: 0, image: VIRT_V2V_IMAGE, imageID: '', state: { terminated: { exitCode: 1, reason: 'Error', startedAt: conv.started, finishedAt: now() } } }],
      });
      throw Object.assign(new Error(GUEST_CONVERSION_FAILED), { forklift: true });
    }
    this.podLogs.set(`${tns}/${pod.metadata.name}`, conversionLog(undefined, vm));
    await sleep(ctx, ctx.timings.stepMs, signal);
    conv.progress.completed = 1;
    conv.phase = 'Completed';
    conv.completed = now();

    setStep(copy);
    copy.phase = 'Running';
    copy.started = now();
    await phase('CopyDisksVirtV2V');
    try {
      await Promise.all(vm.disks.map((d, i) => this.transferDisk(run, world, vm, d, dvs[i]!, claims[i]!, copy, i, signal, true)));
    } catch (e) {
      if (!(e as { vddkOpen?: boolean }).vddkOpen) throw e;
      // nbdkit's VDDK plugin in the pod could not open a disk on the host: virt-v2v exits, the pod (restartPolicy
      // Never) ends Failed, and Forklift says only GUEST_CONVERSION_FAILED (migration.go updateConversionProgress).
      this.podLogs.set(`${tns}/${pod.metadata.name}`, `${conversionLog(undefined, vm)}${(e as Error).message}\nvirt-v2v: error: nbdkit failed to start\n`);
      await this.podStatus(pod, {
        phase: 'Failed',
        containerStatuses: [{ name: 'virt-v2v', ready: false, restartCount: 0, image: VIRT_V2V_IMAGE, imageID: '', state: { terminated: { exitCode: 1, reason: 'Error', startedAt: conv.started, finishedAt: now() } } }],
      });
      throw Object.assign(new Error(GUEST_CONVERSION_FAILED), { forklift: true });
    }
    await this.podStatus(pod, {
      phase: 'Succeeded',
      containerStatuses: [{ name: 'virt-v2v', ready: false, restartCount: 0, image: VIRT_V2V_IMAGE, imageID: '', state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: conv.started, finishedAt: now() } } }],
    });
    copy.phase = 'Completed';
    copy.completed = now();
    return claims;
  }

  /** What the virt-v2v pod of `namespace/name` logged (the sim keeps it: no kubelet runs here). */
  conversionPodLog(namespace: string, name: string): string | undefined {
    return this.podLogs.get(`${namespace}/${name}`);
  }

  private async createConversionPod(plan: Obj, vm: VMFixture, tns: string, labels: Record<string, string>, claims: Obj[], signal: AbortSignal): Promise<Obj> {
    const body = {
      metadata: { generateName: `${plan.metadata.name}-${vm.id}-`, namespace: tns, labels: { ...labels, app: 'virt-v2v' } },
      spec: {
        restartPolicy: 'Never',
        // No token: nothing in the sim reads the API from inside the pod (and the test cluster mints none).
        automountServiceAccountToken: false,
        securityContext: { fsGroup: 107, runAsUser: 107, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [
          {
            name: 'virt-v2v',
            image: VIRT_V2V_IMAGE,
            ports: [{ name: 'metrics', containerPort: 2112, protocol: 'TCP' }],
            securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
            volumeMounts: claims.map((_c, i) => ({ name: `vol-${i}`, mountPath: `/mnt/disks/disk${i}` })),
          },
        ],
        volumes: claims.map((c, i) => ({ name: `vol-${i}`, persistentVolumeClaim: { claimName: c.metadata.name } })),
      },
    };
    // A new namespace's default ServiceAccount comes from kube-controller-manager a moment after the
    // namespace: the ServiceAccount admission refuses a pod until then. Forklift retries on its next pass.
    for (;;) {
      try {
        return await this.ctx.rest.create(R.Pod, body);
      } catch (e) {
        if (!(e instanceof HttpError) || !/service ?account/i.test(e.message)) throw e;
        await sleep(this.ctx, this.ctx.timings.tickMs, signal);
      }
    }
  }

  private async podStatus(pod: Obj, status: Record<string, unknown>): Promise<void> {
    await this.ctx.rest.patch(R.Pod, pod.metadata.namespace, pod.metadata.name, { status }, 'status').catch((e) => {
      if (!notFound(e)) throw e;
    });
  }

  /**
   * One disk's copy by CDI's VDDK importer (containerized-data-importer@v1.64.0:pkg/importer/vddk-datasource_amd64.go),
   * or by virt-v2v's nbdkit: an NFC stream opened on the VM's ESXi host (openStream) for as long as the
   * copy lasts, its bytes moving at the host's shared rate (World.esxi, test/sim/esxi.ts), closed when the
   * copy ends, fails, or the VM is canceled or its Migration deleted (the abort rejects the loop's sleep).
   * A run Forklift holds (a blocker) holds the stream too: it keeps its connection and moves nothing.
   */
  private async transferDisk(run: Run, world: World, vm: VMFixture, d: DiskFixture, dv: Obj, claim: Obj, xfer: StepState, i: number, signal: AbortSignal, v2v = false): Promise<void> {
    const ctx = this.ctx;
    // virt-v2v writes the claim itself: the blank DataVolume stays Succeeded and shows no import progress
    // (progress is read from the pod's v2v monitor instead: plan/migration.go updateConversionProgressV2vMonitor).
    const patchDV: (o: Obj, st: Record<string, unknown>) => Promise<void> = v2v ? async () => undefined : (o, st) => this.patchDV(o, st, signal);
    const task = xfer.tasks![i]!;
    task.phase = 'Running';
    task.started = new Date().toISOString();
    const totalMB = task.progress.total;
    const failAt = vm.faults.failTransferAtPercent;
    const stallAt = vm.faults.stallTransferAtPercent;
    const esxi = world.esxi;
    await patchDV(dv, { phase: 'ImportInProgress', progress: '0.00%' });
    const stream = await this.openStream(world, vm, d, totalMB * MiB, dv, claim, task, signal, v2v);
    let froze = false;
    let shownAt = Date.now();
    const show = (done: number): void => {
      task.progress.completed = Math.floor(done);
      xfer.progress.completed = xfer.tasks!.reduce((a, x) => a + x.progress.completed, 0);
    };
    try {
      for (;;) {
        await sleep(ctx, ctx.timings.tickMs, signal);
        if (blocking(this.planValidation.get(run.planKey) ?? [])) {
          esxi.hold(stream, true, Date.now());
          await this.holdWhileBlocked(run, signal);
          esxi.hold(stream, false, Date.now());
        }
        const t = Date.now();
        const copied = esxi.complete(stream, t);
        let done = copied ? totalMB : Math.min(totalMB, esxi.bytesDone(stream, t) / MiB);
        let pct = totalMB > 0 ? (done / totalMB) * 100 : 100;
        if (failAt !== undefined && pct >= failAt) {
          task.progress.completed = Math.floor((failAt / 100) * totalMB);
          const msg = `Unable to transfer source data to target: nbdkit: vddk: VixDiskLib_Read: ${d.file}: Unknown error at ${failAt}%`;
          task.error = { phase: 'Running', reasons: [msg] };
          await patchDV(dv, { phase: 'Failed', progress: `${failAt.toFixed(2)}%` });
          throw Object.assign(new Error(msg), { forklift: true });
        }
        if (stallAt !== undefined && pct >= stallAt) {
          // A VDDK read that hangs keeps its NFC connection: the stream is held, not closed.
          esxi.hold(stream, true, t);
          show((stallAt / 100) * totalMB);
          this.markDirty(run);
          await patchDV(dv, { phase: 'ImportInProgress', progress: `${stallAt.toFixed(2)}%` });
          // Hangs until the run (or this VM) is canceled: sleep rejects on abort.
          for (;;) await sleep(ctx, 60_000, signal);
        }
        if (vm.faults.conversionFreeze && pct >= 99.92 && !froze) {
          // CDI runs qemu-img convert from scratch to the target: progress sits at 99.92% for a while.
          froze = true;
          esxi.hold(stream, true, t);
          done = totalMB * 0.9992;
          pct = 99.92;
          show(done);
          this.markDirty(run);
          await patchDV(dv, { phase: 'ImportInProgress', progress: '99.92%' });
          await sleep(ctx, ctx.timings.conversionMs, signal);
          esxi.hold(stream, false, Date.now());
          continue;
        }
        show(done);
        if (copied) break;
        this.markProgress(run);
        if (t - shownAt >= PROGRESS_WRITE_MS) {
          shownAt = t;
          await patchDV(dv, { phase: 'ImportInProgress', progress: `${pct.toFixed(2)}%` });
        }
      }
    } finally {
      // VixDiskLib_Close: the connection goes back to the host, copied, failed or canceled.
      esxi.finish(stream, Date.now());
    }
    // The data is on the PV now: record the content identity of the source disk on it.
    const pvName: string = claim.spec?.volumeName ?? ctx.inf.pvc.get(claim.metadata.namespace, claim.metadata.name)?.spec?.volumeName;
    await redoOnApiError(ctx, signal, `PersistentVolume ${pvName} content`, () => ctx.rest.patch(R.PV, undefined, pvName, {
      metadata: { annotations: { [CONTENT_ANNOTATION]: contentIdentity(world.url, vm.id, d), [SOURCE_ANNOTATION]: `${world.url}#${vm.id}/${d.file}` } },
    }));
    await patchDV(dv, { phase: 'Succeeded', progress: '100.0%', conditions: [{ type: 'Ready', status: 'True', reason: 'Completed' }, { type: 'Bound', status: 'True', reason: 'Bound' }] });
    task.phase = 'Completed';
    task.completed = new Date().toISOString();
    this.markDirty(run);
  }

  /**
   * VixDiskLib_Open of one disk on its VM's ESXi host: an NFC stream of the host's (World.esxi), or, past
   * the host's ceiling, VDDK's error (vddkOpenFailure, test/sim/esxi.ts). Returns the stream's id.
   *
   * A refused open ends CDI's importer: createVddkDataSource fails and the importer exits writing
   * "Unable to connect to vddk data source: <error>" as its termination message
   * (containerized-data-importer@v1.64.0:cmd/cdi-importer/importer.go newDataSource,
   * errorCannotConnectDataSource). The pod restarts (restartPolicy OnFailure); CDI's import controller copies
   * the restart count and the message onto the claim (pkg/controller/util.go setAnnotationsFromPodWithPrefix:
   * `cdi.kubevirt.io/storage.condition.running` "false", `.reason` Error, `.message`;
   * `cdi.kubevirt.io/storage.pod.restarts`), emits ErrImportFailed with the message on it
   * (pkg/controller/import-controller.go), and the DataVolume shows them: phase ImportInProgress, Running
   * False (pkg/controller/datavolume/conditions.go updateRunningCondition), `restartCount`
   * (datavolume/controller-base.go). Each restart opens again: a connection freed meanwhile lets it through.
   * Forklift gives up once the importer restarted more than IMPORTER_RETRY times: the disk's task gets the
   * termination message as its error, the step and the VM fail with it (kubev2v/forklift@v2.11.5 and
   * @v2.12.5:pkg/controller/plan/migration.go updateCopyProgress, restartLimitExceeded, terminationMessage;
   * the VM ends through the pipeline's errors, ReflectTasks / ReflectPipeline).
   *
   * virt-v2v (v2v) opens the disks through nbdkit's VDDK plugin in its pod, restartPolicy Never: one refused
   * open fails the conversion (convertAndCopy turns it into the failed pod).
   */
  private async openStream(world: World, vm: VMFixture, d: DiskFixture, bytes: number, dv: Obj, claim: Obj, task: NonNullable<StepState['tasks']>[number], signal: AbortSignal, v2v: boolean): Promise<string> {
    const ctx = this.ctx;
    const id = `${++this.streamSeq}/${vm.id}/${d.file}`;
    const ns = claim.metadata.namespace ?? dv.metadata.namespace ?? '';
    const annotateClaim = (a: Record<string, string>): Promise<void> =>
      ctx.rest.patch(R.PVC, ns, claim.metadata.name, { metadata: { annotations: a } }).then(() => undefined, (e) => {
        if (!notFound(e)) throw e;
      });
    for (let restarts = 0; ; ) {
      const r = world.esxi.start(vm.host, id, bytes, Date.now(), d.file);
      if (r.ok) {
        if (restarts > 0) {
          await annotateClaim({ [ANN_RUNNING]: 'true', [`${ANN_RUNNING}.reason`]: 'Pod is running', [`${ANN_RUNNING}.message`]: '' });
          await this.patchDV(dv, { phase: 'ImportInProgress', restartCount: restarts, conditions: [{ type: 'Running', status: 'True', reason: 'Pod is running' }] }, signal);
        }
        return id;
      }
      if (v2v) throw Object.assign(new Error(r.error), { forklift: true, vddkOpen: true });
      restarts++;
      await annotateClaim({ [ANN_RUNNING]: 'false', [`${ANN_RUNNING}.reason`]: 'Error', [`${ANN_RUNNING}.message`]: r.error, [ANN_POD_RESTARTS]: String(restarts) });
      await this.patchDV(dv, { phase: 'ImportInProgress', restartCount: restarts, conditions: [{ type: 'Running', status: 'False', reason: 'Error', message: r.error }] }, signal);
      await emitEvent(ctx, claim, 'Warning', 'ErrImportFailed', r.error, 'import-controller');
      if (restarts > IMPORTER_RETRY) {
        task.error = { phase: 'Running', reasons: [r.error] };
        throw Object.assign(new Error(r.error), { forklift: true });
      }
      await sleep(ctx, ctx.timings.importerRestartMs, signal);
    }
  }

  /**
   * Forklift's vSphere builder (mapNetworks): one network + interface per source NIC, in NIC order, named
   * net-<n> over the NICs kept; the NetworkMap decides each — pod (masquerade), multus (bridge,
   * networkName <namespace>/<name>) — and a NIC mapped to `ignored` (or not at all) is left out. MACs kept.
   */
  private vmNetworks(plan: Obj, vm: VMFixture): { networks: Array<Record<string, unknown>>; interfaces: Array<Record<string, unknown>> } {
    const ref = plan.spec?.map?.network ?? {};
    const entries = ((this.ctx.inf.nmap?.get(ref.namespace ?? plan.metadata.namespace, ref.name ?? '')?.spec?.map ?? []) as Array<{
      source?: { id?: string; name?: string };
      destination?: { type?: string; namespace?: string; name?: string };
    }>);
    const networks: Array<Record<string, unknown>> = [];
    const interfaces: Array<Record<string, unknown>> = [];
    for (const nic of vm.nics) {
      // By id: what the controller's NetworkMap carries (a name-only entry would need the inventory).
      const d = entries.find((e) => e.source?.id === nic.network)?.destination;
      if (!d || d.type === 'ignored') continue;
      const name = `net-${networks.length}`;
      if (d.type === 'multus') {
        networks.push({ name, multus: { networkName: `${d.namespace ?? plan.metadata.namespace}/${d.name}` } });
        interfaces.push({ name, macAddress: nic.mac, model: 'virtio', bridge: {} });
      } else {
        networks.push({ name, pod: {} });
        interfaces.push({ name, macAddress: nic.mac, model: 'virtio', masquerade: {} });
      }
    }
    return { networks, interfaces };
  }

  /** The CreateVM phase (plan/migration.go PhaseCreateVM at v2.11.5): EnsureVM, claims handed to the VM, DataVolumes removed. */
  private async createVMPhase(run: Run, plan: Obj, vm: VMFixture, st: VMState, tns: string, labels: Record<string, string>, claims: Obj[], dvs: Obj[], signal: AbortSignal): Promise<void> {
    const ctx = this.ctx;
    const target = await redoOnApiError(ctx, signal, `create VirtualMachine of ${vm.id}`, () => this.createVM(run, plan, vm, st, tns, labels, claims));
    // EnsureVM (pkg/controller/plan/kubevirt.go at v2.11.5): each claim's owner references are REPLACED by one
    // to the VirtualMachine (vmOwnerReference: controller false, blockOwnerDeletion true); then the CreateVM
    // phase deletes the DataVolumes ("Removing unnecessary DataVolumes", plan/migration.go). Both are
    // redone as they are after a failed pass: the same patch, and a delete of what may already be gone.
    for (const c of claims) {
      await redoOnApiError(ctx, signal, `claim ${c.metadata.name} owner`, () => ctx.rest.patch(R.PVC, tns, c.metadata.name, {
        metadata: { ownerReferences: [{ apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', name: target.metadata.name, uid: target.metadata.uid!, blockOwnerDeletion: true, controller: false }] },
      }));
    }
    for (const dv of dvs) await redoOnApiError(ctx, signal, `delete DataVolume ${dv.metadata.name}`, () => ctx.rest.del(R.DataVolume, tns, dv.metadata.name));
  }

  /**
   * The VirtualMachine the vSphere builder writes (pkg/controller/plan/adapter/vsphere/builder.go
   * VirtualMachine: CPU topology, memory, firmware/bootloader, disks in source order, networks) and EnsureVM
   * creates (plan/kubevirt.go); targetPowerState off → runStrategy Halted.
   */
  private async createVM(run: Run, plan: Obj, vm: VMFixture, st: VMState, tns: string, labels: Record<string, string>, claims: Obj[]): Promise<Obj> {
    const name = vm.name.toLowerCase().replace(/[^a-z0-9-]/g, '-').replace(/^-+|-+$/g, '').slice(0, 63) || vm.id;
    st.newName = name;
    const tps = plan.spec.targetPowerState;
    const on = tps === 'on' || (tps !== 'off' && st.restorePowerState === 'On');
    const sockets = Math.max(1, Math.floor(vm.cpuCount / Math.max(1, vm.coresPerSocket)));
    const nets = this.vmNetworks(plan, vm);
    const body = {
      metadata: { name, namespace: tns, labels: { ...labels, app: name }, annotations: { 'forklift.konveyor.io/source-vm-id': vm.id } },
      spec: {
        runStrategy: on ? 'Always' : 'Halted',
        template: {
          metadata: { labels: { ...labels } },
          spec: {
            domain: {
              cpu: { cores: vm.coresPerSocket, sockets, threads: 1 },
              memory: { guest: `${vm.memoryMB}Mi` },
              firmware: {
                serial: vm.uuid,
                bootloader: vm.firmware === 'efi' ? { efi: { secureBoot: vm.secureBoot } } : { bios: {} },
              },
              features: vm.secureBoot ? { smm: { enabled: true } } : {},
              devices: {
                disks: claims.map((_c, i) => ({ name: `vol-${i}`, disk: { bus: 'virtio' }, ...(i === 0 ? { bootOrder: 1 } : {}) })),
                interfaces: nets.interfaces,
              },
            },
            networks: nets.networks,
            volumes: claims.map((c, i) => ({ name: `vol-${i}`, persistentVolumeClaim: { claimName: c.metadata.name } })),
          },
        },
      },
    };
    // EnsureVM lists the VM's VirtualMachines by its labels and creates one only when there is none
    // (kubev2v/forklift@v2.11.5:pkg/controller/plan/kubevirt.go EnsureVM): a create redone after its answer was
    // lost finds the first one.
    const existing = (await this.ctx.rest.list(R.VirtualMachine, tns)).items.find(
      (o) => o.metadata.labels?.migration === labels.migration && o.metadata.labels?.vmID === vm.id && o.metadata.labels?.plan === labels.plan,
    );
    return existing ?? await this.ctx.rest.create(R.VirtualMachine, body);
  }
}

/**
 * Forklift's requeue after a failed pass: Reconcile hands every error to base.Reconciler.Ended, which turns it
 * into RequeueAfter = SlowReQ, 3 s, whatever the error (kubev2v/forklift@v2.11.5:pkg/controller/base/
 * controller.go Ended, SlowReQ; pkg/controller/plan/controller.go Reconcile's deferred Ended).
 */
export const SLOW_REQ_MS = 3_000;

/**
 * At most one progress-only status write per Migration, and one progress write per DataVolume, in this
 * time: a tick's worth of writes per disk (every 100 ms) floods the API server as soon as a few dozen
 * disks move at once. Upstream is slower still — Forklift polls a running Migration every 3 s
 * (kubev2v/forklift@v2.11.5:pkg/controller/plan/migration.go PollReQ), CDI refreshes a DataVolume's
 * progress every 2 s (containerized-data-importer@v1.64.0:pkg/controller/datavolume/controller-base.go
 * reconcileProgressUpdate) — 1 s keeps the few-second transfers of the tests visible as they move.
 */
export const PROGRESS_WRITE_MS = 1_000;

/**
 * An API error that says the server was not there to judge the request — no answer at all (refused, reset,
 * "socket hang up", timed out), 429, 503, 504, or a 500 from the server's own plumbing (a webhook it could not
 * call, etcd, "server is starting"), a bare 404 (a path not served yet) — rather than a verdict on it (403,
 * a NotFound Status, 422, a 500 from a webhook's answer). For a write, its outcome is unknown: it may have
 * been applied.
 */
export function apiUnavailable(e: unknown): boolean {
  if (!(e instanceof HttpError)) return false;
  if (e.code === 0 || e.code === 429 || e.code === 503 || e.code === 504) return true;
  // A bare 404: the path not served yet (a kube-apiserver just restarted, its CRD informer not synced).
  if (notServed(e)) return true;
  return e.code === 500 && /failed calling webhook|etcdserver|server is starting|Timeout: request did not complete/.test(e.message);
}

/**
 * One step of a VM's itinerary redone after an API error, as Forklift redoes it. Forklift records what a pass
 * did only in the Plan status it writes when the pass ends (pkg/controller/plan/controller.go execute: the
 * deferred updatePlanStatus). A step whose create or update fails because the API server is away does add a
 * step error (pkg/controller/plan/migration.go execute, e.g. PhaseCreateDataVolumes / PhaseCreateVM:
 * `step.AddError(err.Error())`), but the status write carrying it fails too while the server is away, so the
 * error is never stored: the pass ends in an error, is requeued after SlowReQ, and the next pass re-reads the
 * Plan and redoes the phase it was stored in. Each step is Ensure*-style — it lists what exists before it
 * creates (pkg/controller/plan/kubevirt.go EnsureDataVolumes, EnsureVM) — so a write whose answer was lost
 * is found by reading, never made twice. `step` must therefore read before it writes. Only errors Forklift
 * itself declares a VM's failure (a verdict on the request; the simulated vCenter and CDI faults) fail the VM.
 */
async function redoOnApiError<T>(ctx: Ctx, signal: AbortSignal | undefined, what: string, step: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await step();
    } catch (e) {
      if (!apiUnavailable(e) || signal?.aborted || ctx.stopping) throw e;
      console.error(`[sim] ${what}: ${(e as Error).message}; redone in ${SLOW_REQ_MS} ms`);
      await sleep(ctx, SLOW_REQ_MS, signal);
    }
  }
}

function bundleVerifiesOrInsecure(insecure: boolean, ca: string | undefined, certPEM: string): boolean {
  return insecure || (!!ca && bundleVerifies(ca, certPEM));
}

/** ref.Ref.String() (kubev2v/forklift@v2.11.5:pkg/apis/forklift/v1beta1/ref/ref.go): how Plan condition items name VMs. */
export function refString(r: { id: string; name: string }): string {
  return ` id:${r.id} name:'${r.name}' `;
}

/** The GuestToolsIssue message (pkg/controller/plan/validation.go, same text at v2.11.5 and v2.12.5). */
export const GUEST_TOOLS_MESSAGE =
  'VMware Tools issues detected. This may impact migration performance, guest OS detection, and network configuration. Ensure VMware Tools are properly installed and running before migration. If this is an encrypted VM, please turn the VM off manually before migration.';

/** CDI's message while no VDDK image is known (containerized-data-importer@v1.64.0:pkg/controller/import-controller.go). */
export const VDDK_WAITING_MESSAGE = 'waiting for v2v-vmware configmap or cdi.kubevirt.io/storage.pod.vddk.initimageurl annotation for VDDK image';

export const CONTENT_ANNOTATION = 'sim.cozystack.io/content-sha256';
export const SOURCE_ANNOTATION = 'sim.cozystack.io/source-disk';

/** Plan.IsWarm (kubev2v/forklift@v2.11.5:pkg/apis/forklift/v1beta1/plan.go): spec.warm or spec.type warm. */
function isWarm(plan: Obj): boolean {
  return plan.spec?.warm === true || plan.spec?.type === 'warm';
}

/** Forklift's IMPORTER_RETRY (default 3, kubev2v/forklift@v2.11.5:pkg/settings/migration.go): importer restarts it tolerates. */
export const IMPORTER_RETRY = 3;

/** CDI's claim annotations of its importer's state (containerized-data-importer@v1.64.0:pkg/controller/common/util.go AnnRunningCondition, AnnPodRestarts). */
const ANN_RUNNING = 'cdi.kubevirt.io/storage.condition.running';
const ANN_POD_RESTARTS = 'cdi.kubevirt.io/storage.pod.restarts';

/** CDI's annotations of a multi-stage import (containerized-data-importer@v1.64.0:pkg/controller/common/util.go). */
export const ANN_CHECKPOINTS_COPIED = 'cdi.kubevirt.io/storage.checkpoint.copied';
const ANN_CURRENT_CHECKPOINT = 'cdi.kubevirt.io/storage.checkpoint.current';
const ANN_PREVIOUS_CHECKPOINT = 'cdi.kubevirt.io/storage.checkpoint.previous';
const ANN_FINAL_CHECKPOINT = 'cdi.kubevirt.io/storage.checkpoint.final';

/** A Plan that converts its guests (skipGuestConversion false; a vSphere source always requires conversion). */
function converts(plan: Obj): boolean {
  return plan.spec?.skipGuestConversion === false;
}

/** The conversion image Forklift v2.11 runs (its VIRT_V2V_IMAGE setting; a reference only, nothing pulls it here). */
export const VIRT_V2V_IMAGE = 'quay.io/kubev2v/forklift-virt-v2v:release-v2.11';

/** Forklift's words when the virt-v2v pod fails (kubev2v/forklift@v2.11.5:pkg/controller/plan/migration.go, updateConversionProgress). */
export const GUEST_CONVERSION_FAILED = 'Guest conversion failed. See pod logs for details.';

/**
 * The tail of the virt-v2v pod's log for each failure. The seccomp text is what users report from Forklift's
 * conversion pod under a runtime-default profile (kubev2v/forklift#4491; passt needs unshare(CLONE_NEWUSER),
 * kubev2v/forklift#1445 and #8242); the other two are virt-v2v's own errors when inspection finds no
 * convertible OS and when nbdkit's VDDK plugin cannot open a disk.
 */
export function conversionLog(failure: ConversionFailure | undefined, vm: VMFixture): string {
  const opening = `[   0.0] Setting up the source: -i libvirt -ic vpx://vcenter/${vm.name} -it vddk ${vm.name}`;
  switch (failure) {
    case 'seccomp':
      return `${opening}\n[   9.1] Opening the source\nvirt-v2v: error: libguestfs error: could not create appliance through libvirt.\nOriginal error from libvirt: internal error: Child process (passt --one-off) unexpected exit status 1: Couldn't create user namespace: Operation not permitted\n`;
    case 'unsupportedGuest':
      return `${opening}\n[   9.1] Opening the source\n[  14.6] Inspecting the source\nvirt-v2v: error: inspection could not detect the source guest (or physical machine).\n`;
    case 'diskNotFound': {
      const d = vm.disks[vm.disks.length - 1];
      return `${opening}\nnbdkit: vddk[1]: error: VixDiskLib_Open: ${d?.file ?? ''}: The system cannot find the file specified\nvirt-v2v: error: nbdkit failed to start\n`;
    }
    default:
      return `${opening}\n[   9.1] Opening the source\n[  14.6] Inspecting the source\n[  30.2] Converting ${vm.name} to run on KVM\nvirt-v2v: The QEMU Guest Agent will be installed for this guest at first boot.\n[  41.0] Copying disk 1/${vm.disks.length}\n`;
  }
}
