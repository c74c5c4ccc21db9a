// The HTTPS servers of the simulator: Forklift's inventory service and the admission webhook that plays the
// create-time checks of Cozystack's aggregated API (name limits) and of CDI (claim adoption).
import { createHash } from 'node:crypto';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CA, bundleVerifies, makeCA, makeServingCert } from './certs.ts';
import { type Ctx, sleep } from './context.ts';
import type { Forklift } from './forklift.ts';
import { type Obj, R } from './rest.ts';
import { POPULATED_FOR, ALLOW_ADOPTION } from './storage.ts';
import { planMutation } from './plan-mutator.ts';
import { lineageMutation, lineageWebhook } from './lineage.ts';
import { OWNER_LABEL, PROCESS_OWNER } from './scope.ts';

/**
 * Forklift's inventory and webhook servers are Go net/http servers without an IdleTimeout: an idle
 * keep-alive connection stays open until the client closes it (net/http Server.IdleTimeout: "If zero,
 * the value of ReadTimeout is used", both unset in kubev2v/forklift@v2.11.5:pkg/forklift-api/api.go
 * serveWebhooks, and gin's RunTLS in pkg/lib/inventory/web/web.go for the inventory). Node closes
 * idle connections after 5 s by default, which races the API server's client (it reuses idle
 * connections for 90 s) into "failed calling webhook …: EOF" — a fault the real servers never show.
 */
const GO_SERVER_IDLE_MS = 10 * 60_000;
import { type World, sameUrl } from './world.ts';
import { SCSI_CONTROLLER_KEY, forkliftConcerns } from './concerns.ts';

async function listen(server: https.Server): Promise<number> {
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  return (server.address() as AddressInfo).port;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((res, rej) => {
    let b = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (b += c));
    req.on('end', () => res(b));
    req.on('error', rej);
  });
}

function json(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

export async function closeServer(s: https.Server): Promise<void> {
  s.closeAllConnections();
  await new Promise<void>((res) => s.close(() => res()));
}

// ------------------------------------------------------------------ inventory

export const INVENTORY_SECRET = 'forklift-inventory-serving-cert';
/** DefaultAuth.TTL (kubev2v/forklift@v2.11.5 and v2.12.5:pkg/controller/provider/web/base/auth.go). */
export const AUTH_TTL_MS = 10_000;

export class Inventory {
  private readonly ctx: Ctx;
  private readonly forklift: () => Forklift | undefined;
  private readonly server: https.Server;
  private ca: CA;
  private publishedCA: string;
  /** Auth.cache: when each token last passed for a Provider (key token/namespace/name), kept for AUTH_TTL_MS. */
  private readonly permitted = new Map<string, number>();
  url = '';

  constructor(ctx: Ctx, forklift: () => Forklift | undefined) {
    this.ctx = ctx;
    this.forklift = forklift;
    this.ca = makeCA('forklift-inventory CA');
    this.publishedCA = this.ca.certPEM;
    const ns = ctx.forkliftNamespace;
    const cert = makeServingCert(this.ca, 'forklift-inventory', { ips: ['127.0.0.1'], dns: ['localhost', 'forklift-inventory', `forklift-inventory.${ns}.svc`, `forklift-inventory.${ns}.svc.cluster.local`] });
    this.server = https.createServer({ key: cert.keyPEM, cert: cert.certPEM }, (req, res) => {
      this.handle(req, res).catch((e) => json(res, 500, { error: (e as Error).message }));
    });
    this.server.keepAliveTimeout = GO_SERVER_IDLE_MS;
  }

  get caPEM(): string {
    return this.publishedCA;
  }

  async start(): Promise<void> {
    const port = await listen(this.server);
    this.url = `https://127.0.0.1:${port}`;
    await this.publish();
  }

  private async publish(): Promise<void> {
    const ns = this.ctx.forkliftNamespace;
    const data = { 'ca.crt': Buffer.from(this.publishedCA).toString('base64') };
    const cur = await this.ctx.rest.get(R.Secret, ns, INVENTORY_SECRET);
    if (cur) await this.ctx.rest.replace(R.Secret, { ...cur, data });
    else await this.ctx.rest.create(R.Secret, { metadata: { name: INVENTORY_SECRET, namespace: ns, labels: { 'sim.cozystack.io/inventory': 'true' } }, type: 'Opaque', data });
  }

  /**
   * Fault: Forklift rotated its serving certificate without restarting: the published CA (Secret) no longer
   * validates what the service serves. `false` restores the matching CA.
   */
  async setCertMismatch(on: boolean): Promise<void> {
    this.publishedCA = on ? makeCA('forklift-inventory CA (rotated)').certPEM : this.ca.certPEM;
    await this.publish();
  }

  async stop(): Promise<void> {
    await closeServer(this.server);
  }

  /**
   * Auth.Permit (kubev2v/forklift@v2.11.5 and v2.12.5:pkg/controller/provider/web/base/auth.go): the bearer
   * token must pass a TokenReview (else 401), and its user may `get` the Provider in its namespace by a
   * SubjectAccessReview (else 403). A pass is cached for DefaultAuth's TTL, 10 s, per token and Provider
   * (key token/namespace/name): within it the same token is let through with no review, even if its RBAC
   * was revoked meanwhile. Refusals are not cached; expired entries are pruned on every call.
   */
  private async authorize(req: IncomingMessage, p: Obj): Promise<number> {
    const now = Date.now();
    for (const [k, t] of this.permitted) if (now - t > AUTH_TTL_MS) this.permitted.delete(k);
    const m = /^Bearer\s+(\S+)$/.exec(req.headers.authorization ?? '');
    if (!m) return 401;
    const key = `${m[1]}/${p.metadata.namespace ?? ''}/${p.metadata.name ?? ''}`;
    if (this.permitted.has(key)) return 200;
    const tr = await this.ctx.rest.post(R.TokenReview, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: m[1] } });
    if (tr.status?.authenticated !== true) return 401;
    const u = tr.status.user ?? {};
    const review = await this.ctx.rest.post(R.SubjectAccessReview, {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: { resourceAttributes: { group: 'forklift.konveyor.io', resource: 'providers', namespace: p.metadata.namespace, name: p.metadata.name, verb: 'get' }, user: u.username, groups: u.groups, uid: u.uid, extra: u.extra },
    });
    if (review.status?.allowed !== true) return 403;
    this.permitted.set(key, Date.now());
    return 200;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', 'https://x');
    const detail = Number(u.searchParams.get('detail') ?? '0') > 0 || u.searchParams.get('detail') === 'all';
    const m = /^\/providers\/vsphere\/([^/]+)(?:\/(vms|hosts|networks|datastores)(?:\/([^/]+))?)?\/?$/.exec(u.pathname);
    if (!m) return json(res, 404, { error: 'not found' });
    // Handler.Prepare (web/base/handler.go): the provider first (unknown UID → 404), then parity (an inventory
    // still loading → 206 Partial Content), then authorization (401/403).
    const fk = this.forklift();
    const p = fk?.providerByUid(m[1]!);
    const world = fk?.worldOf(p);
    if (!p || !world) return json(res, 404, { error: 'provider not found' });
    if (!fk!.inventoryLoaded(p)) return json(res, 206, m[2] && !m[3] ? [] : {});
    const allowed = await this.authorize(req, p);
    if (allowed !== 200) return json(res, allowed, { error: allowed === 401 ? 'Unauthorized' : 'Forbidden' });
    // web/vsphere/provider.go Provider (v2.11.5): the vCenter's About — instanceUuid, apiVersion, product —
    // beside the Provider: one vCenter, one instanceUuid, whichever Provider (and URL spelling) asks.
    if (!m[2]) return json(res, 200, { uid: p.metadata.uid, name: p.metadata.name, namespace: p.metadata.namespace, type: 'vsphere', object: p, apiVersion: '8.0.3', product: 'VMware VirtualCenter Server', instanceUuid: vcenterInstanceUuid(world) });
    const all = collection(world, m[2]);
    if (m[3]) {
      const one = all.find((x) => x.id === m[3]);
      return one ? json(res, 200, one) : json(res, 404, { error: `${m[2]} ${m[3]} not found` });
    }
    return json(res, 200, detail ? all : all.map((x) => ({ id: x.id, parent: x.parent, path: x.path, revision: x.revision, name: x.name, selfLink: x.selfLink })));
  }
}

/** A simulated vCenter's instance UUID (about.instanceUuid): fixed by its world, not by a Provider's URL. */
export function vcenterInstanceUuid(world: World): string {
  return createHash('sha256').update(`vcenter:${world.fixture.datacenter}:${world.fixture.hosts.map((h) => h.id).join(',')}:${world.url.toLowerCase()}`).digest('hex').replace(/^(.{8})(.{4})(.{4})(.{4})(.{12}).*/, '$1-$2-$3-$4-$5');
}

type Item = { id: string; name: string; path: string; parent: unknown; revision: number; selfLink: string; [k: string]: unknown };

/** The inventory model (kubev2v/forklift pkg/controller/provider/web/vsphere) answered from the fixture. */
export function collection(world: World, kind: string): Item[] {
  const f = world.fixture;
  const dc = f.datacenter;
  const base = (id: string, name: string, path: string, parentKind: string, parentId: string): Item => ({
    id,
    parent: { kind: parentKind, id: parentId },
    path,
    revision: 1,
    name,
    selfLink: `providers/vsphere/${kind}/${id}`,
  });
  const vcenterIp = new URL(f.url).hostname;
  if (kind === 'vms') {
    return f.vms.map((v) => ({
      ...base(v.id, v.name, v.path, 'Folder', 'group-v4'),
      uuid: v.uuid,
      firmware: v.firmware,
      secureBoot: v.secureBoot,
      powerState: v.powerState,
      // pkg/controller/provider/web/vsphere/vm.go at v2.11.5: toolsStatus, toolsRunningStatus (collected from
      // guest.toolsStatus / guest.toolsRunningStatus, provider/container/vsphere/collector.go).
      toolsStatus: v.toolsStatus,
      toolsRunningStatus: v.toolsRunningStatus,
      connectionState: 'connected',
      isTemplate: false,
      cpuCount: v.cpuCount,
      coresPerSocket: v.coresPerSocket,
      memoryMB: v.memoryMB,
      guestId: v.guestId,
      guestName: v.guestId,
      hostName: v.hostName,
      ipAddress: v.guestIPs[0] ?? '',
      changeTrackingEnabled: v.changeTrackingEnabled,
      // vm.go at v2.11.5: snapshot, a Ref that is empty without snapshots and {kind: VirtualMachineSnapshot, id}
      // with them (collector.go, property `snapshot`).
      snapshot: v.snapshot ? { kind: 'VirtualMachineSnapshot', id: v.snapshot } : { kind: '', id: '' },
      tpmEnabled: v.tpmEnabled,
      devices: v.devices.map((kind) => ({ kind })),
      // model/vsphere/model.go GuestNetwork: one per guest IP Tools report.
      guestNetworks: v.guestIPs.map((ip, i) => ({ device: String(4000 + i), mac: v.nics[i]?.mac ?? '', ip, origin: 'manual', prefix: 24, dns: [], network: v.nics[i]?.network ?? '' })),
      storageUsed: v.disks.reduce((a, d) => a + d.capacity, 0),
      // model/vsphere/model.go Disk: key, unitNumber, controllerKey, file, datastore, capacity, shared, rdm, bus, mode, changeTrackingEnabled.
      disks: v.disks.map((d, i) => ({
        key: d.key,
        unitNumber: i,
        controllerKey: SCSI_CONTROLLER_KEY,
        file: d.file,
        datastore: { kind: 'Datastore', id: d.datastore },
        capacity: d.capacity,
        shared: d.shared,
        rdm: d.rdm,
        mode: d.mode,
        bus: 'scsi',
        changeTrackingEnabled: d.changeTrackingEnabled,
      })),
      networks: [...new Set(v.nics.map((n) => n.network))].map((id) => ({ kind: 'Network', id })),
      nics: v.nics.map((n, i) => ({ mac: n.mac, network: { kind: 'Network', id: n.network }, order: i })),
      host: v.host,
      // The policy agent's verdicts on this revision (web/vsphere/vm.go VM1.Concerns), computed as the
      // validation policies compute them (concerns.ts).
      revisionValidated: 1,
      concerns: forkliftConcerns(v),
    }));
  }
  if (kind === 'hosts') {
    return f.hosts.map((h) => ({
      ...base(h.id, h.address, `/${dc}/host/cluster1/${h.address}`, 'Cluster', 'domain-c1'),
      cluster: 'domain-c1',
      status: h.status,
      inMaintenance: h.inMaintenance,
      managementServerIp: vcenterIp,
      productName: 'VMware ESXi',
      productVersion: '8.0.2',
      networkAdapters: [h.address, ...h.otherAddresses].map((ip, i) => ({ name: i === 0 ? 'Management Network' : `vmk${i}`, ipAddress: ip, subnetMask: '255.255.255.0', mtu: 1500, linkSpeed: 10000 })),
      datastores: f.datastores.map((d) => ({ kind: 'Datastore', id: d.id })),
      networks: f.networks.map((n) => ({ kind: 'Network', id: n.id })),
      vms: f.vms.filter((v) => v.host === h.id).map((v) => ({ kind: 'VM', id: v.id })),
    }));
  }
  if (kind === 'networks') return f.networks.map((n) => ({ ...base(n.id, n.name, `/${dc}/network/${n.name}`, 'Folder', 'group-n1'), variant: 'Standard' }));
  return f.datastores.map((d) => ({ ...base(d.id, d.name, `/${dc}/datastore/${d.name}`, 'Folder', 'group-s1'), type: 'VMFS', capacity: 4 * 1024 ** 4, free: 2 * 1024 ** 4, maintenance: 'normal' }));
}

// ------------------------------------------------------------------ admission webhook

/** Helm release name limit minus the chart prefix (`vm-disk-`, `vm-instance-`). */
export const NAME_LIMITS: Record<string, number> = { VMDisk: 45, VMInstance: 41 };
const DNS1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

export function appNameError(kind: string, name: string): string | undefined {
  const limit = NAME_LIMITS[kind];
  if (limit === undefined) return undefined;
  const why: string[] = [];
  if (!DNS1035.test(name)) why.push("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')");
  if (name.length > limit) why.push(`must be no more than ${limit} characters (the Helm release name ${kind === 'VMDisk' ? 'vm-disk-' : 'vm-instance-'}${name} exceeds 53)`);
  return why.length ? `${kind}.apps.cozystack.io "${name}" is invalid: metadata.name: Invalid value: "${name}": ${why.join('; ')}` : undefined;
}

interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** Provider.IsHost (kubev2v/forklift@v2.11.5:pkg/apis/forklift/v1beta1/provider.go): openshift with an empty url. */
function isHostProvider(p: Obj): boolean {
  return p.spec?.type === 'openshift' && !p.spec?.url;
}

/**
 * ProviderAdmitter.validateSdkEndpointType (kubev2v/forklift@v2.11.5:pkg/forklift-api/webhooks/validating-webhook/
 * admitters/provider-admitter.go): a vSphere Provider's settings.sdkEndpoint, when set, is vcenter or esxi.
 */
export function providerAdmission(p: Obj): string | undefined {
  const endpoint = p.spec?.settings?.sdkEndpoint;
  if (p.spec?.type === 'vsphere' && endpoint !== undefined && endpoint !== 'vcenter' && endpoint !== 'esxi') return 'vSphere provider is set with an invalid SDK endpoint type';
  return undefined;
}

type SecretLike = { metadata?: { labels?: Record<string, string> }; data?: Record<string, string>; stringData?: Record<string, string> };
type Deny = { code: number; reason: string; message: string };
/** The Secret webhook's login hangs (see World.packetsDropped): no answer before the API server gives up. */
const STALL = Symbol('stall');
/** Forklift's webhookutils.ToAdmissionResponseError: 400 with the error's text. */
const bad = (message: string): Deny => ({ code: 400, reason: 'BadRequest', message });

export class Webhook {
  private readonly ctx: Ctx;
  private readonly server: https.Server;
  private readonly ca: CA;
  readonly configName: string;
  private port = 0;

  private readonly forklift: () => Forklift | undefined;

  constructor(ctx: Ctx, forklift: () => Forklift | undefined = () => undefined) {
    this.ctx = ctx;
    this.forklift = forklift;
    this.ca = makeCA('sim-webhook CA');
    const cert = makeServingCert(this.ca, '127.0.0.1', { ips: ['127.0.0.1'] });
    this.server = https.createServer({ key: cert.keyPEM, cert: cert.certPEM }, (req, res) => {
      this.handle(req, res).catch((e) => json(res, 500, { error: (e as Error).message }));
    });
    this.server.keepAliveTimeout = GO_SERVER_IDLE_MS;
    this.configName = `sim-cozystack-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  }

  async start(): Promise<void> {
    this.port = await listen(this.server);
    // Remove configurations left by sims of processes that died without stop(): their Fail policy would block creates.
    for (const res of [R.ValidatingWebhookConfiguration, R.MutatingWebhookConfiguration]) {
      for (const c of (await this.ctx.rest.list(res)).items) {
        const pid = Number(c.metadata.labels?.['sim.cozystack.io/pid']);
        if (!pid || pid === process.pid) continue;
        let alive = true;
        try {
          process.kill(pid, 0);
        } catch {
          alive = false;
        }
        if (!alive) await this.ctx.rest.del(res, undefined, c.metadata.name);
      }
    }
    const clientConfig = (path: string) => ({ url: `https://127.0.0.1:${this.port}${path}`, caBundle: Buffer.from(this.ca.certPEM).toString('base64') });
    // 10 s: the API's default timeout, which the real webhooks keep.
    const common = { sideEffects: 'None', admissionReviewVersions: ['v1'], failurePolicy: 'Fail', timeoutSeconds: 10, matchPolicy: 'Equivalent' };
    await this.ctx.rest.create(R.ValidatingWebhookConfiguration, {
      metadata: { name: this.configName, labels: { 'sim.cozystack.io/webhook': 'true', 'sim.cozystack.io/pid': String(process.pid) } },
      webhooks: [
        { name: 'validate.apps.cozystack.io', clientConfig: clientConfig('/apps'), rules: [{ apiGroups: ['apps.cozystack.io'], apiVersions: ['*'], operations: ['CREATE'], resources: ['vmdisks', 'vminstances'] }], ...common },
        {
          // Forklift's Secret webhook: every Secret carrying the label createdForResourceType, on create and
          // update (kubev2v/forklift@v2.11.5:operator/roles/forkliftcontroller/templates/api/validatingwebhookconfiguration-secrets.yml.j2).
          name: 'secrets.forklift.konveyor',
          clientConfig: clientConfig('/secrets'),
          rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['secrets'] }],
          objectSelector: { matchExpressions: [{ key: 'createdForResourceType', operator: 'Exists' }] },
          ...common,
          timeoutSeconds: this.ctx.timings.secretWebhookTimeoutSeconds,
        },
        { name: 'datavolume-validate.cdi.kubevirt.io', clientConfig: clientConfig('/datavolumes'), rules: [{ apiGroups: ['cdi.kubevirt.io'], apiVersions: ['*'], operations: ['CREATE'], resources: ['datavolumes'] }], ...common },
        // Forklift's validating webhooks for its own kinds, as its operator registers them
        // (kubev2v/forklift@v2.11.5:operator/roles/forkliftcontroller/templates/api/validatingwebhookconfiguration-
        // {providers,plans,migrations}.yml.j2): CREATE and UPDATE, every object, 30 s.
        ...(['providers', 'plans', 'migrations'] as const).map((res) => ({
          name: `${res}.forklift.konveyor`,
          clientConfig: clientConfig(`/${res}`),
          rules: [{ apiGroups: ['forklift.konveyor.io'], apiVersions: ['v1beta1'], operations: ['CREATE', 'UPDATE'], resources: [res] }],
          ...common,
          timeoutSeconds: 30,
        })),
      ],
    });
    // Forklift's Plan mutator (test/sim/plan-mutator.ts), as its operator registers it
    // (operator/roles/forkliftcontroller/templates/api/mutatingwebhookconfiguration-plans.yml.j2 at both tags).
    await this.ctx.rest.create(R.MutatingWebhookConfiguration, {
      metadata: { name: this.configName, labels: { 'sim.cozystack.io/webhook': 'true', 'sim.cozystack.io/pid': String(process.pid) } },
      webhooks: [
        {
          name: 'plans.forklift.konveyor',
          clientConfig: clientConfig('/plan-mutate'),
          rules: [{ apiGroups: ['forklift.konveyor.io'], apiVersions: ['v1beta1'], operations: ['CREATE', 'UPDATE'], resources: ['plans'] }],
          ...common,
          timeoutSeconds: 30,
          reinvocationPolicy: 'Never',
        },
        ...(this.ctx.lineage ? [lineageWebhook(clientConfig('/lineage'), { key: OWNER_LABEL, value: PROCESS_OWNER })] : []),
      ],
    });
  }

  async stop(): Promise<void> {
    await this.ctx.rest.del(R.MutatingWebhookConfiguration, undefined, this.configName).catch(() => false);
    await this.ctx.rest.del(R.ValidatingWebhookConfiguration, undefined, this.configName).catch(() => false);
    await closeServer(this.server);
  }

  /**
   * util.PermitUser (kubev2v/forklift@v2.11.5:pkg/forklift-api/webhooks/util/util.go): a SubjectAccessReview
   * for the requesting user; refused → "Action is forbidden: …" with the review's reason.
   */
  private async permit(user: UserInfo, group: string, resource: string, name: string, ns: string, verb: string): Promise<string | undefined> {
    const review = await this.ctx.rest.post(R.SubjectAccessReview, {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: { resourceAttributes: { group, resource, namespace: ns, name, verb }, user: user.username, groups: user.groups, uid: user.uid, extra: user.extra },
    });
    if (review.status?.allowed === true) return undefined;
    const named = name ? `${resource}/${name}` : resource;
    return `Action is forbidden: User "${user.username ?? ''}" cannot ${verb} resource "${named}" in API group "${group}" in the namespace "${ns}": ${review.status?.reason ?? ''}`;
  }

  /** Live GET as Forklift's cached client would answer it; the not-found text is controller-runtime's. */
  private async getRef(res: typeof R.Provider, ref: { name?: string; namespace?: string } | undefined): Promise<{ obj?: Obj; err?: string }> {
    // A reference without a namespace finds nothing in Forklift's cache (keys are namespace/name).
    const obj = ref?.name && ref.namespace ? await this.ctx.rest.get(res, ref.namespace, ref.name) : undefined;
    return obj ? { obj } : { err: `${res.plural}.${res.group} "${ref?.name ?? ''}" not found` };
  }

  /**
   * PlanAdmitter.Admit (kubev2v/forklift@v2.11.5:pkg/forklift-api/webhooks/validating-webhook/admitters/
   * plan-admitter.go): the source Provider must exist (unless the Plan is archived) and the user may get it;
   * the destination Provider must exist and the user may get it; for the host destination (openshift, empty
   * url) the user may create kubevirt.io virtualmachines in targetNamespace. (validateStorage only concerns
   * non-vSphere sources; warm/LUKS checks do not apply to a cold vSphere Plan.)
   */
  private async planAdmission(plan: Obj, user: UserInfo): Promise<string | undefined> {
    const spec = plan.spec ?? {};
    const src = await this.getRef(R.Provider, spec.provider?.source);
    if (!src.obj) return spec.archived ? undefined : src.err;
    const deny1 = await this.permit(user, 'forklift.konveyor.io', 'providers', src.obj.metadata.name, src.obj.metadata.namespace!, 'get');
    if (deny1) return deny1;
    const dst = await this.getRef(R.Provider, spec.provider?.destination);
    if (!dst.obj) return dst.err;
    const deny2 = await this.permit(user, 'forklift.konveyor.io', 'providers', dst.obj.metadata.name, dst.obj.metadata.namespace!, 'get');
    if (deny2) return deny2;
    if (isHostProvider(dst.obj)) return await this.permit(user, 'kubevirt.io', 'virtualmachines', '', spec.targetNamespace ?? '', 'create');
    return undefined;
  }

  /**
   * MigrationAdmitter.Admit (…/admitters/migration-admitter.go at v2.11.5): its Plan and the Plan's destination
   * Provider must exist; for the host destination the user may create virtualmachines in the target namespace.
   */
  private async migrationAdmission(m: Obj, user: UserInfo): Promise<string | undefined> {
    const plan = await this.getRef(R.Plan, m.spec?.plan);
    if (!plan.obj) return plan.err;
    const dst = await this.getRef(R.Provider, plan.obj.spec?.provider?.destination);
    if (!dst.obj) return dst.err;
    if (isHostProvider(dst.obj)) return await this.permit(user, 'kubevirt.io', 'virtualmachines', '', plan.obj.spec?.targetNamespace ?? '', 'create');
    return undefined;
  }

  /**
   * Holds the review unanswered until the API server hangs up (its timeoutSeconds ran out: it fails the write
   * "failed calling webhook … context deadline exceeded", failurePolicy Fail), then lets Forklift's login give
   * up a moment later, "Connection test failed, yet passing", an answer nobody reads any more.
   */
  private async stall(res: ServerResponse, uid: string): Promise<void> {
    const hungUp = new AbortController();
    res.once('close', () => hungUp.abort());
    await sleep(this.ctx, this.ctx.timings.secretWebhookTimeoutSeconds * 1000 + 1000, hungUp.signal).catch(() => undefined);
    if (!res.writableEnded && !res.destroyed) json(res, 200, { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true } });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const review = JSON.parse(await readBody(req)) as { request: { uid: string; kind: { kind: string }; namespace?: string; object: { metadata?: { name?: string; annotations?: Record<string, string> } }; dryRun?: boolean; userInfo?: UserInfo } };
    const rq = review.request;
    const name = rq.object.metadata?.name ?? '';
    let deny: { code: number; reason: string; message: string } | undefined;
    const route = new URL(req.url ?? '/', 'https://x').pathname;
    if (route === '/apps') {
      const err = appNameError(rq.kind.kind, name);
      if (err) deny = { code: 422, reason: 'Invalid', message: err };
    } else if (route === '/datavolumes' && name && rq.namespace) {
      // From the sim's claim cache when it holds the claim; asked of the API server otherwise (a claim
      // created a moment ago must still be seen). A busy API server then answers fewer of these calls.
      const pvc = this.ctx.inf.pvc.get(rq.namespace, name) ?? (await this.ctx.rest.get(R.PVC, rq.namespace, name));
      const adopt = pvc && (pvc.metadata.annotations?.[POPULATED_FOR] === name || rq.object.metadata?.annotations?.[ALLOW_ADOPTION] === 'true');
      if (pvc && !adopt) deny = { code: 403, reason: 'Forbidden', message: ` Destination PVC ${rq.namespace}/${name} already exists` };
    }
    if (route === '/providers' || route === '/plans' || route === '/migrations') {
      const why = route === '/providers' ? providerAdmission(rq.object as Obj) : route === '/plans' ? await this.planAdmission(rq.object as Obj, rq.userInfo ?? {}) : await this.migrationAdmission(rq.object as Obj, rq.userInfo ?? {});
      // util.ToAdmissionResponseError: every refusal of these admitters is a 400 with the error's text.
      if (why) deny = { code: 400, reason: 'BadRequest', message: why };
    }
    if (route === '/plan-mutate') {
      // Forklift not installed yet: its webhook is not deployed either.
      const m = this.forklift() ? await planMutation(this.ctx, rq.object as Obj) : {};
      json(res, 200, {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        response: {
          uid: rq.uid,
          allowed: !m.error,
          ...(m.error ? { status: { code: 400, reason: 'BadRequest', message: m.error } } : {}),
          ...(m.patch ? { patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(m.patch)).toString('base64') } : {}),
        },
      });
      return;
    }
    if (route === '/lineage') {
      const m = await lineageMutation(this.ctx, { ...(rq.object as Obj), kind: rq.kind.kind }, rq.namespace ?? '', this.ctx.lineage?.down ?? false);
      // Down: no endpoint answers, and the API server reports the call failed (failurePolicy Fail refuses the write).
      if ('down' in m) return void req.socket.destroy();
      json(res, 200, {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        response: { uid: rq.uid, allowed: true, ...(m.patch?.length ? { patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(m.patch)).toString('base64') } : {}) },
      });
      return;
    }
    if (route === '/secrets') {
      const verdict = this.admitSecret(rq.namespace ?? '', rq.object as SecretLike);
      if (verdict === STALL) {
        await this.stall(res, rq.uid);
        return;
      }
      deny = verdict;
    }
    json(res, 200, {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: rq.uid, allowed: !deny, ...(deny ? { status: { code: deny.code, reason: deny.reason, message: deny.message } } : {}) },
    });
  }

  /**
   * Forklift's Secret admitter (kubev2v/forklift@v2.11.5:pkg/forklift-api/webhooks/validating-webhook/admitters/secret-admitter.go),
   * by the value of createdForResourceType:
   * - `providers`: no createdForProviderType → 400; `insecure` true with a `cacert` → 400; else the
   *   provider connection test (…/controller/provider/container/vsphere/collector.go, Test/connect): only a
   *   login vCenter answers "incorrect user name or password" (401) refuses the Secret, 403 "Invalid
   *   credentials"; an unknown host name or a certificate that does not verify is admitted.
   * - `hosts`: no createdForResource → 400; no `user` → 400; the Provider named by data `provider` (same
   *   namespace) missing, its inventory not loaded or the host id not in it → admitted untested; else a
   *   login at https://<data ip>/sdk (…/controller/plan/adapter/vsphere/host.go, TestConnection): its
   *   error refuses the Secret with 403 and the error's text.
   * - anything else: admitted.
   */
  private admitSecret(ns: string, obj: SecretLike): Deny | typeof STALL | undefined {
    // Forklift not installed yet: its webhook is not deployed either.
    if (!this.forklift()) return undefined;
    const labels = obj.metadata?.labels ?? {};
    const data: Record<string, string> = { ...Object.fromEntries(Object.entries(obj.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')])), ...(obj.stringData ?? {}) };
    const type = labels.createdForResourceType;
    if (type === 'providers') {
      const insecureRaw = data.insecure;
      if (insecureRaw !== undefined && !/^(1|t|T|TRUE|true|True|0|f|F|FALSE|false|False)$/.test(insecureRaw)) return bad("invalid value for 'insecure' field");
      if (data.cacert !== undefined && /^(1|t|T|TRUE|true|True)$/.test(insecureRaw ?? '')) return bad('received a request to add insecure provider with a CA certificate');
      if (!labels.createdForProviderType) return bad("provider secret is labeled with 'createdForResourceType' but without 'createdForProviderType'");
      if (labels.createdForProviderType !== 'vsphere') return undefined;
      const world = data.url ? this.ctx.worlds.find((w) => sameUrl(w.url, data.url!)) : undefined;
      if (!world) return undefined; // dial error: "Connection test failed, yet passing"
      world.secretWebhookLogins++;
      // collector.Test under its 30 s ConnectionTimeout: a dial whose packets are dropped hangs, and the API
      // server, which called the webhook first with the same 30 s, gives up before the login does.
      if (world.packetsDropped) return STALL;
      const insecure = data.insecureSkipVerify === 'true';
      const ca = data['ca.crt'] ?? data.cacert;
      if (!insecure && (!ca || !bundleVerifies(ca, world.fixture.certPEM))) return undefined; // TLS error: passing
      if (data.user !== world.fixture.user || data.password !== world.fixture.password) {
        world.loginFailed('vcenter');
        return { code: 403, reason: 'Forbidden', message: 'Invalid credentials' };
      }
      return undefined;
    }
    if (type === 'hosts') {
      const hostId = labels.createdForResource;
      if (hostId === undefined) return bad("host secret is labeled with 'createdForResourceType' but without 'createdForResource'");
      if (data.user === undefined) return bad('missing credentials on Host secret');
      const provider = data.provider ? this.ctx.inf.provider?.get(ns, data.provider) : undefined;
      const f = this.forklift();
      if (!provider || !f || !f.inventoryLoaded(provider)) return undefined; // "Couldn't test connection to the host, yet passing"
      const world = f.worldOf(provider);
      const host = world?.host(hostId);
      if (!world || !host) return undefined;
      const ip = data.ip ?? '';
      if (!world.reachable(host.id, ip)) return { code: 403, reason: 'Forbidden', message: `Post "https://${ip}/sdk": dial tcp ${ip}:443: connect: no route to host` };
      if (data.user !== host.user || data.password !== host.password) {
        world.loginFailed(host.id);
        return { code: 403, reason: 'Forbidden', message: 'ServerFaultCode: Cannot complete login due to an incorrect user name or password.' };
      }
      return undefined;
    }
    return undefined;
  }
}
