// VMImportSource reconciler (thin): read the source, project its credentials, drive Forklift's Providers
// and Hosts, mirror Forklift's verdict into status, publish the VM inventory for pickers, clean up on delete.
import { CONDITION_READY, SourceReason } from '../../api/conditions.ts';
import {
  ANNOTATION_INVENTORY_TRUNCATED,
  FINALIZER,
  LABEL_HOST_ID,
  LABEL_MANAGED_BY,
  LABEL_SOURCE,
  LABEL_SOURCE_UID,
  MANAGED_BY_VALUE,
  inventoryConfigMapName,
} from '../../api/labels.ts';
import { API_VERSION, KIND_SOURCE, type TLSCredentials, type VMImportSource, type VMImportTask } from '../../api/types.ts';
import type { ControllerConfig } from '../../config.ts';
import { forkliftTooOldMessage, missingPlanFields } from '../../forklift/features.ts';
import { InventoryError, pickerList, statusInventory, type InventoryClient } from '../../forklift/inventory.ts';
import { defaultInventoryClient, inventoryCA } from '../../forklift/inventory-client.ts';
import { inventoryEntry } from '../../forklift/assess.ts';
import {
  ANNOTATION_RETEST,
  DEFAULT_TRANSFER_NETWORK_ANNOTATION,
  credentialsSecretName,
  destinationProviderName,
  hostObjectName,
  hostSecretName,
  legacyProjectedSecretName,
  renderCredentialsSecret,
  renderDestinationProvider,
  renderHost,
  renderHostSecret,
  renderSourceProvider,
  sourceOwnerRef,
  sourceProviderName,
  sourceLabels,
  type SecretObject,
} from '../../forklift/provider.ts';
import { Expectations } from '../../runtime/expectations.ts';
import { GVRs, type GVR } from '../../runtime/gvr.ts';
import { ApiError, isNotFound, isNotServed, type KubeClient, type KubeObject } from '../../runtime/kube.ts';
import type { ObjectKey, ReconcileContext, Reconciler, Result, Watch } from '../../runtime/reconciler.ts';
import { getCondition, patchStatus, setCondition } from '../../runtime/status.ts';
import { heldBack, recordRejection, withRetryNote } from './credentials.ts';
import { OwnershipConflict, ensureOwned, ownedBy } from './ownership.ts';
import { holdMayEnd, tasksHoldingSource } from './inuse.ts';
import { holdProviderSpec, specFieldsChanged } from './hold.ts';
import { retestDue } from './retest.ts';
import { PROVIDER_SECRET_WRITE_DEADLINE_MS, WebhookTimeoutBackoff, isWebhookTimeout, webhookTimeoutMessage } from './webhook-timeout.ts';
import { deriveSourceStatus, type SourceObservation } from './status.ts';
import type { KeyringSource } from '../../credentials/keyring.ts';
import type { SourceReadiness } from '../../telemetry/metrics.ts';
import { SealError, isSealed, sealedKid, unseal, type SealBinding } from '../../credentials/seal.ts';
import { lookup } from 'node:dns/promises';
import { ServiceCIDRResolver } from '../../preflight/cidr.ts';
import { checkAddress, checkName, isIPLiteral, notAllowedMessage, urlDestination, type ClusterNetworks } from '../../preflight/egress.ts';
import { apiServerAddresses, listNodeNetworks } from '../../preflight/podcidr.ts';

export const SOURCE_CONTROLLER = 'vmimportsource';


/**
 * The inventory ConfigMap holds at most this many VMs: a ConfigMap is limited to 1 MiB, and 5000 entries
 * of id/name/path stay well under it even with long folder paths.
 */
export const INVENTORY_CAP = 5000;
/**
 * The inventory in the source's status holds at most this many VMs and this many bytes of JSON: every
 * status write and watch event carries the whole object, which etcd caps at 1.5 MiB. Each entry carries
 * the VM's readiness facts and concerns (about 0.3–1.5 KiB, Forklift's assessment texts being the bulk),
 * so 384 KiB holds a few hundred assessed VMs and leaves the object well under etcd's cap. Beyond it,
 * `truncated` is true, and `total` and the verdict summary still count them all.
 */
export const STATUS_INVENTORY_MAX_VMS = 500;
export const STATUS_INVENTORY_MAX_BYTES = 384 * 1024;
/** Key of the VM list in the inventory ConfigMap (JSON array of {id, name, path}). */
export const INVENTORY_KEY = 'vms.json';
// While Forklift has not decided (Connecting), look again every 30 s in case an event was missed; once
// Ready, refresh the published inventory every 5 min (vCenter changes are not watched).
const REQUEUE_PENDING_MS = 30_000;
const REQUEUE_READY_MS = 5 * 60_000;
// A foreign Secret going away or vCenter accepting the credentials again produces no event we watch
// (foreign Secrets are outside our label-selected Secret watch): look again every 10 s.
const REQUEUE_GATE_MS = 10_000;
// AddressNotAllowed is re-judged as often: a DNS answer that changes back (or a policy change) is seen;
// NameConflict too: the object in the way (another source's, or one still being deleted) may go.
// AuthenticationFailed from a refused Secret is not among them: see credentials.ts (retried on a spec
// change or at status.credentialsRejected.retryAfter).
const GATES_TO_RETRY: ReadonlySet<string> = new Set([SourceReason.CredentialsMissing, SourceReason.HostUnreachable, SourceReason.AddressNotAllowed, SourceReason.NameConflict]);
/** Never requeue sooner than this for a held-back refusal (clock skew between replicas). */
const MIN_HELD_REQUEUE_MS = 1_000;
// An upgrade of Forklift replaces its Plan CRD, which no watch of ours reports to a source: look again
// every 15 s (one GET of one CRD), so a source gated on ForkliftTooOld connects soon after the upgrade.
const REQUEUE_FORKLIFT_TOO_OLD_MS = 15_000;
/** The nodes' pod CIDRs and addresses change when nodes join: a minute is fresh enough and keeps a node list off every reconcile. */
const POD_CIDR_TTL_MS = 60_000;
// The inventory could not be read (still loading, stale certificate): try again soon.
const REQUEUE_INVENTORY_RETRY_MS = 5_000;
// A deleting source held by tasks: a finishing task's event ends the wait; this only covers a missed one.
const REQUEUE_DELETION_HELD_MS = 30_000;

export interface SourceReconcilerDeps {
  /** Builds the inventory client (tests inject one). */
  inventory?: (ctx: ReconcileContext) => InventoryClient;
  /** Each source's readiness, published per namespace (`migration_controller_sources`; the chart's SourceLostReadiness alert). */
  sourceReady?: Pick<SourceReadiness, 'set' | 'remove'>;
  /** Opens sealed passwords (enc:v2:…, and enc:v1:… of earlier versions) to project Forklift's Secrets. */
  keyring?: KeyringSource;
  /** Resolves a host name to its addresses (default: the system resolver, as Forklift's pods resolve). */
  resolve?: (host: string) => Promise<string[]>;
}

function mapToSource(o: KubeObject): ObjectKey[] {
  const ns = o.metadata?.namespace ?? '';
  const byLabel = o.metadata?.labels?.[LABEL_SOURCE];
  if (byLabel) return [{ namespace: ns, name: byLabel }];
  const owner = o.metadata?.ownerReferences?.find((r) => r.kind === KIND_SOURCE && r.apiVersion === API_VERSION);
  return owner ? [{ namespace: ns, name: owner.name }] : [];
}

function errMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** What materialise observed and wrote, and its gate verdict: merged into the pass's observation. */
type Materialised = Pick<SourceObservation, 'gate' | 'provider' | 'hosts' | 'credentialsRejected' | 'retryAfterMs' | 'providerUpdatePending'>;

/** What one pass works with: the injected dependencies and what this reconciler keeps between passes. */
type SourcePass = SourceReconcilerDeps & {
  networks: ClusterNetworkSource;
  /** Sources whose credentials Secret write timed out in Forklift's webhook (webhook-timeout.ts). */
  webhookTimeouts: WebhookTimeoutBackoff;
};

const MANAGED_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}`;

/**
 * The VMImportSource reconciler: its dependencies injected, what it remembers held by the object, so that
 * a reconciler made again (a restart in the same process) starts with nothing of the old one's.
 */
export class SourceReconciler implements Reconciler {
  readonly name = SOURCE_CONTROLLER;
  readonly faultConditions = true;
  readonly primary = GVRs.VMImportSource;
  readonly watches: Watch[] = [
    { gvr: GVRs.Provider, map: mapToSource, labelSelector: MANAGED_SELECTOR },
    { gvr: GVRs.Host, map: mapToSource, labelSelector: MANAGED_SELECTOR },
    // No watch on Secrets: the controller may not list or watch them (least privilege: a namespace's
    // Secrets are not ours to read). Ours are found by their deterministic names.
    // Tasks, only for the events that can end a deleting source's wait for them (inuse.ts).
    {
      gvr: GVRs.VMImportTask,
      map: (o) => {
        const t = o as unknown as VMImportTask;
        return holdMayEnd(t) && t.spec?.sourceRef?.name ? [{ namespace: o.metadata?.namespace ?? '', name: t.spec.sourceRef.name }] : [];
      },
    },
  ];
  private readonly cfg: ControllerConfig;
  private readonly deps: SourceReconcilerDeps;
  /**
   * This reconciler's writes of sources (status, finalizer): the cache is read for a source only once it
   * shows the last one. Without it, a Provider that flaps Critical and back within the few milliseconds
   * before our own ConnectionFailed write reaches the cache compares "Connected" against the cached
   * pre-fault copy, skips the write, and leaves the source reporting the fault until its 5-minute resync.
   */
  private readonly ownWrites = new Expectations();
  private readonly webhookTimeouts = new WebhookTimeoutBackoff();
  private networks: ClusterNetworkSource | undefined;

  constructor(cfg: ControllerConfig, deps: SourceReconcilerDeps = {}) {
    this.cfg = cfg;
    this.deps = deps;
  }

  async reconcile(key: ObjectKey, ctx: ReconcileContext): Promise<Result> {
    const pass: SourcePass = { ...this.deps, networks: (this.networks ??= clusterNetworks(this.cfg, ctx.client)), webhookTimeouts: this.webhookTimeouts };
    return await reconcileSource(this.cfg, pass, key, ctx, this.ownWrites);
  }

  memory(): Record<string, number> {
    return { webhookTimeouts: this.webhookTimeouts.size, sourceExpectations: this.ownWrites.size() };
  }
}

export function sourceReconciler(cfg: ControllerConfig, deps: SourceReconcilerDeps = {}): Reconciler {
  return new SourceReconciler(cfg, deps);
}

/**
 * The tasks still importing over source `name` (inuse.ts), read live as the deletion's hold reads them: a
 * cache behind a just-created task would let a Provider update cancel its first run.
 */
async function tasksImportingOver(ctx: ReconcileContext, ns: string, name: string): Promise<string[]> {
  const tasks = (await ctx.client.list<KubeObject>(GVRs.VMImportTask, ns)).items as unknown as VMImportTask[];
  const plans = ctx.installed(GVRs.Plan) ? (await ctx.client.list(GVRs.Plan, ns, { labelSelector: `${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}` })).items : [];
  return tasksHoldingSource(name, tasks, plans);
}

/**
 * Creates `desired` or brings the existing object in line with it, only when the existing object is
 * this source's (its owner label, which every render carries): ownership.ts.
 */
async function ensure(ctx: ReconcileContext, gvr: GVR, desired: KubeObject, cached: KubeObject | undefined, o: { timeoutMs?: number } = {}): Promise<KubeObject> {
  return await ensureOwned(ctx, gvr, desired, cached, desired.metadata?.labels?.[LABEL_SOURCE_UID] ?? '', o);
}

/**
 * An admission webhook's refusal (the API server words it `admission webhook "<name>" denied the
 * request: <message>`), as opposed to an RBAC 403 of the controller itself.
 */
export function isWebhookDenial(e: unknown, code: number): e is ApiError {
  return e instanceof ApiError && e.code === code && /admission webhook .* denied the request/i.test(e.message);
}

/**
 * Forklift's Secret webhook refusing a provider Secret whose connection test vCenter answered 401/400:
 * 403 "Invalid credentials" (kubev2v/forklift@v2.11.5:pkg/forklift-api/webhooks/validating-webhook/admitters/secret-admitter.go,
 * validateProviderSecret). Other connection-test failures (DNS, TLS) are admitted and reported later on
 * the Provider's conditions.
 */
export function isWebhookAuthRejection(e: unknown): e is ApiError {
  return isWebhookDenial(e, 403) && /invalid credentials/i.test(e.message);
}

function secretsOf(src: VMImportSource): string[] {
  return [src.spec.credentials?.password, ...(src.spec.hosts ?? []).map((h) => h.credentials?.password)].filter((p): p is string => !!p);
}

/** `text` with every non-empty secret replaced: an engine's message must never carry a password. Pure. */
export function redact(text: string, secrets: Array<string | undefined>): string {
  let out = text;
  for (const s of secrets) if (s) out = out.split(s).join('***');
  return out;
}

async function reconcileSource(cfg: ControllerConfig, deps: SourcePass, key: ObjectKey, ctx: ReconcileContext, ownWrites: Expectations): Promise<Result> {
  // From the informer cache, never behind our own last write (see ownWrites).
  const src = (await ownWrites.get(ctx, GVRs.VMImportSource, key.namespace, key.name)) as unknown as VMImportSource | undefined;
  if (!src || src.metadata.deletionTimestamp) deps.sourceReady?.remove({ namespace: key.namespace, source: key.name });
  if (!src) {
    ownWrites.forget(GVRs.VMImportSource, key.namespace, key.name);
    return {};
  }
  if (src.metadata.deletionTimestamp) {
    deps.webhookTimeouts.clear(src.metadata.uid!);
    return await finalize(cfg, src, ctx);
  }
  if (!src.metadata.finalizers?.includes(FINALIZER)) {
    ownWrites.wrote(
      GVRs.VMImportSource,
      await ctx.client.patch<KubeObject>(GVRs.VMImportSource, key.namespace, key.name, {
        metadata: { finalizers: [...(src.metadata.finalizers ?? []), FINALIZER], resourceVersion: src.metadata.resourceVersion },
      }),
    );
    // The update event brings the source back with the finalizer.
    return {};
  }

  const obs: SourceObservation = { source: src, now: ctx.now() };
  let result: Result = {};
  const materialised = await materialise(cfg, deps, src, ctx, obs.now).catch((e: unknown): Materialised => {
    // A child's name is taken by an object that is not this source's: that object was left as it is.
    if (e instanceof OwnershipConflict) return { gate: { reason: SourceReason.NameConflict, message: e.message } };
    throw e;
  });
  Object.assign(obs, materialised);
  if (obs.gate && obs.credentialsRejected) {
    result = { requeueAfterMs: Math.max(MIN_HELD_REQUEUE_MS, Date.parse(obs.credentialsRejected.retryAfter) - obs.now.getTime()) };
  } else if (obs.gate && obs.retryAfterMs !== undefined) {
    result = { requeueAfterMs: Math.max(MIN_HELD_REQUEUE_MS, obs.retryAfterMs) };
  } else if (obs.gate && GATES_TO_RETRY.has(obs.gate.reason)) {
    result = { requeueAfterMs: REQUEUE_GATE_MS };
  } else if (obs.gate?.reason === SourceReason.ForkliftTooOld) {
    result = { requeueAfterMs: REQUEUE_FORKLIFT_TOO_OLD_MS };
  } else if (!obs.gate) {
    const st = deriveSourceStatus(obs);
    if (getCondition(st.conditions, CONDITION_READY)?.status === 'True') {
      const published = await publishInventory(cfg, deps, src, ctx, obs);
      result = { requeueAfterMs: published ? REQUEUE_READY_MS : REQUEUE_INVENTORY_RETRY_MS };
    } else {
      result = { requeueAfterMs: REQUEUE_PENDING_MS };
    }
  }
  ownWrites.wrote(GVRs.VMImportSource, await writeStatus(src, ctx, obs, deps));
  // Forklift's inventory failing (not loading: refusing, unreachable, a stale certificate) is a fault of
  // this source, written once its status is: thrown, the manager retries with backoff and, within one
  // backoff step, sets Degraded (InventoryUnavailable, what fails and since when), cleared by the first
  // pass that reads it again (src/runtime/faults.ts). Returned quietly, only an Event said so.
  if (obs.inventoryFault) throw obs.inventoryFault;
  return result;
}

/**
 * Materialises Secret, Providers, Hosts. Returns what it observed and wrote: the source Provider and Hosts,
 * and a gate verdict (with its retry facts) when something prevents going on.
 */
async function materialise(cfg: ControllerConfig, deps: SourcePass, stored: VMImportSource, ctx: ReconcileContext, now: Date): Promise<Materialised> {
  const src = stored;
  const out: Materialised = {};
  const gated = (gate: NonNullable<Materialised['gate']>): Materialised => ({ ...out, gate });
  if (!cfg.vddkImage) {
    return gated({
      reason: SourceReason.VDDKNotConfigured,
      message: 'No VDDK image is configured for this platform (the migration-controller chart value vddkImage): vSphere imports are unavailable. Nothing was created for this source; ask the platform operator to configure one.',
    });
  }
  if (!ctx.installed(GVRs.Provider) || !ctx.installed(GVRs.Host)) {
    return gated({ reason: SourceReason.ForkliftNotInstalled, message: 'Konveyor Forklift (forklift.konveyor.io Provider/Host) is not installed in this cluster; the source will connect by itself once it is.' });
  }
  // Feature detection before anything is materialised: a Forklift whose Plan lacks a field we rely on would
  // prune it silently and run the Plan on its own default (a scaffolding VM that boots, say).
  // Read from discovery's cache of the Plan CRD (its spec's field names only): the whole CRD is hundreds of
  // kilobytes (kubev2v/forklift v2.11.5 and v2.12.5 operator/config/crd/bases/forklift.konveyor.io_plans.yaml,
  // 228 and 236 KB of YAML), and every pass of every source would read it from the API server.
  const missing = ctx.installed(GVRs.Plan) ? missingPlanFields(ctx.definition(GVRs.Plan)) : undefined;
  if (missing?.length) return gated({ reason: SourceReason.ForkliftTooOld, message: forkliftTooOldMessage(missing) });
  const providers = ctx.cache(GVRs.Provider);
  const hostsCache = ctx.cache(GVRs.Host);
  if (!providers || !hostsCache) {
    // Installed, cache still filling: the manager requeues every subscriber once it has synced.
    return gated({ reason: SourceReason.Connecting, message: 'Waiting for the Forklift caches to sync.' });
  }
  const ns = src.metadata.namespace!;
  const name = src.metadata.name!;

  // 0a. Where Forklift would connect, judged afresh on every pass (names resolved again): a destination
  // the egress policy denies gets nothing created, and what an earlier pass created is withdrawn, so
  // Forklift neither carries the credentials there nor reports back what it found.
  const denied = await checkDestinations(cfg, deps, src, ctx);
  if (denied) {
    await withdraw(cfg, src, ctx);
    return gated(denied);
  }

  // 0b. Credentials of this very spec were refused, and the backoff is not over: write nothing (every
  //     Secret write is a login attempt), keep saying why.
  const held = heldBack(src, now);
  const prevReady = getCondition(src.status?.conditions, CONDITION_READY);
  if (held && prevReady?.reason === SourceReason.AuthenticationFailed) {
    out.credentialsRejected = held;
    return gated({ reason: SourceReason.AuthenticationFailed, message: prevReady.message });
  }

  // 0c. The passwords in plain text, in memory only: the Forklift Secrets below are their one destination.
  const opened = await openCredentials(deps, stored, ctx);
  if ('gate' in opened) return gated(opened.gate);
  const plain = opened.source;
  const refused = (message: string): NonNullable<Materialised['gate']> => {
    out.credentialsRejected = recordRejection(src, now);
    return { reason: SourceReason.AuthenticationFailed, message: withRetryNote(redact(message, secretsOf(plain)), out.credentialsRejected) };
  };

  // 1. The credentials Secret, in the controller's own namespace: no tenant can create, read or replace
  // it there, and the controller needs no access to Secrets in tenant namespaces.
  const secretsNs = cfg.podNamespace;
  // The last write of this spec's Secret timed out in Forklift's webhook: wait before the next (webhook-timeout.ts).
  const timedOut = deps.webhookTimeouts.held(src.metadata.uid!, src.metadata.generation ?? 0, now);
  if (timedOut) {
    out.retryAfterMs = timedOut.retryAfterMs;
    return gated({ reason: SourceReason.ConnectionFailed, message: timedOut.message });
  }
  const existing = await ctx.client.get<SecretObject>(GVRs.Secret, secretsNs, credentialsSecretName(src));
  let secret: KubeObject;
  try {
    // Each write is a login in Forklift's webhook: its deadline outlasts the webhook's timeout, so a stalled
    // login reads as the API server's verdict, not as our client giving up first (webhook-timeout.ts).
    const deadline = { timeoutMs: PROVIDER_SECRET_WRITE_DEADLINE_MS };
    secret = await ensure(ctx, GVRs.Secret, renderCredentialsSecret(plain, secretsNs), existing, deadline);
    // After ConnectionAuthFailed Forklift re-tests only on a change of this Secret (retest.ts).
    const retest = retestDue(providers.get(ns, sourceProviderName(name)), secret, now);
    if (retest) secret = await ctx.client.patch<KubeObject>(GVRs.Secret, secretsNs, secret.metadata!.name!, { metadata: { annotations: { [ANNOTATION_RETEST]: retest } } }, 'merge', deadline);
    deps.webhookTimeouts.clear(src.metadata.uid!);
  } catch (e) {
    if (isWebhookTimeout(e)) {
      const host = URL.canParse(src.spec.url) ? new URL(src.spec.url).host : src.spec.url.slice(0, 253);
      const t = deps.webhookTimeouts.record(src.metadata.uid!, src.metadata.generation ?? 0, now, (at) => webhookTimeoutMessage(host, at, redact(e.message, secretsOf(plain))));
      out.retryAfterMs = t.retryAfterMs;
      return gated({ reason: SourceReason.ConnectionFailed, message: t.message });
    }
    if (isWebhookAuthRejection(e)) {
      const sso = src.spec.credentials.username.includes('@') ? '' : ` The username "${src.spec.credentials.username}" has no SSO domain: vCenter wants user@vsphere.local.`;
      return gated(refused(`vCenter rejected the credentials.${sso} Forklift refused the credentials Secret: ${e.message}`));
    }
    throw e;
  }

  // 2. Providers. The source Provider's spec waits while tasks import over it (hold.ts): at v2.11.5 a new
  // generation cancels their runs.
  const currentProvider = providers.get(ns, sourceProviderName(name));
  const desiredProvider = renderSourceProvider(src, cfg.vddkImage, secretsNs);
  const holders = specFieldsChanged((desiredProvider as { spec?: unknown }).spec, (currentProvider as { spec?: unknown } | undefined)?.spec).length && currentProvider ? await tasksImportingOver(ctx, ns, name) : [];
  const providerWrite = holdProviderSpec(desiredProvider, currentProvider, () => holders);
  if (providerWrite.pending) out.providerUpdatePending = providerWrite.pending;
  out.provider = await ensure(ctx, GVRs.Provider, providerWrite.write, currentProvider);
  await dropReplacedSecret(ctx, secretsNs, currentProvider, out.provider, src.metadata.uid!);
  const destination = await ensure(ctx, GVRs.Provider, renderDestinationProvider(src), providers.get(ns, destinationProviderName(name)));
  // Never on our destination Provider: with it, Forklift's Plan mutator rewrites every Plan's spec without
  // its false values (provider.ts DEFAULT_TRANSFER_NETWORK_ANNOTATION); whoever added it, it goes.
  if (destination.metadata?.annotations?.[DEFAULT_TRANSFER_NETWORK_ANNOTATION] !== undefined) {
    ctx.log.info({ provider: destination.metadata?.name }, 'removing the defaultTransferNetwork annotation from the destination Provider');
    await ctx.client.patch(GVRs.Provider, ns, destinationProviderName(name), { metadata: { annotations: { [DEFAULT_TRANSFER_NETWORK_ANNOTATION]: null } } });
  }
  // Report what the cache says (status written by Forklift), falling back to what we just wrote.
  out.provider = providers.get(ns, sourceProviderName(name)) ?? out.provider;

  // 3. Host Secrets, then Hosts, one per spec.hosts[] entry — once the Provider is Ready: Forklift's
  // Secret webhook tests a host Secret's login only when the Provider it names has its inventory loaded
  // (it looks the host up there), and admits it untested before. Written earlier, a wrong ESXi password
  // would only show later on the Host, tested again and again by Forklift.
  const providerReady = ((out.provider?.status as { conditions?: Array<{ type?: string; status?: string }> } | undefined)?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  for (const h of providerReady ? (plain.spec.hosts ?? []) : []) {
    const desired = renderHostSecret(plain, h, secretsNs);
    const cur = await ctx.client.get<SecretObject>(GVRs.Secret, secretsNs, desired.metadata!.name!);
    try {
      await ensure(ctx, GVRs.Secret, desired, cur);
    } catch (e) {
      // Forklift logs in to https://<address>/sdk with the host's credentials at the Secret's create or
      // update and refuses it (403) with the login or connection error.
      if (isWebhookDenial(e, 403) && /incorrect user name or password/i.test(e.message)) {
        return gated(refused(`The ESXi host ${h.id} (${h.address}) rejected its credentials (spec.hosts[].credentials). Forklift refused its Secret: ${e.message}`));
      }
      if (isWebhookDenial(e, 403)) {
        return gated({
          reason: SourceReason.HostUnreachable,
          message: redact(`The ESXi host ${h.id} (${h.address}): Forklift could not connect to it with its credentials and refused its Secret: ${e.message}`, secretsOf(plain)),
        });
      }
      throw e;
    }
  }

  out.hosts = {};
  const wanted = new Set<string>();
  for (const h of src.spec.hosts ?? []) {
    const hn = hostObjectName(name, h.id);
    wanted.add(hn);
    if (!providerReady) {
      out.hosts[h.id] = hostsCache.get(ns, hn);
      continue;
    }
    const before = hostsCache.get(ns, hn);
    const written = await ensure(ctx, GVRs.Host, renderHost(src, h, secretsNs), before);
    await dropReplacedSecret(ctx, secretsNs, before, written, src.metadata.uid!);
    const cached = hostsCache.get(ns, hn);
    out.hosts[h.id] = cached && cached.metadata?.resourceVersion === written.metadata?.resourceVersion ? cached : written;
  }

  // 4. Prune hosts removed from the spec: only objects carrying THIS source's UID.
  // The Host's Secret goes first: a crash in between leaves the Host, which the next pass prunes again.
  const mine = { [LABEL_SOURCE_UID]: src.metadata.uid! };
  for (const h of hostsCache.list(ns, mine)) {
    if (!wanted.has(h.metadata!.name!)) {
      ctx.log.info({ host: h.metadata?.name }, 'pruning a Host no longer in spec.hosts');
      const hostId = h.metadata?.labels?.[LABEL_HOST_ID];
      if (hostId) await deleteOwnSecret(ctx, secretsNs, hostSecretName(src, hostId), src.metadata.uid!);
      await ctx.client.delete(GVRs.Host, ns, h.metadata!.name!, { uid: h.metadata?.uid });
    }
  }
  return out;
}

/**
 * The source with every password in plain text, in memory only: sealed values opened, secretRef values
 * read from the tenant's Secret (a plain-text password, written while no webhook sealed it, passes as it
 * is). A password that cannot be had gates the source; the message names the field, the key id or the
 * Secret, never a value.
 */
async function openCredentials(deps: SourceReconcilerDeps, src: VMImportSource, ctx: ReconcileContext): Promise<{ source: VMImportSource } | { gate: NonNullable<SourceObservation['gate']> }> {
  const out = structuredClone(src);
  const ns = src.metadata.namespace!;
  // A sealed password opens only for the endpoint it was sealed for (src/credentials/seal.ts).
  const fields: Array<{ field: string; cred: TLSCredentials; binding: SealBinding }> = [{ field: 'spec.credentials', cred: out.spec.credentials, binding: { namespace: ns, url: src.spec.url } }];
  (out.spec.hosts ?? []).forEach((h, i) => fields.push({ field: `spec.hosts[${i}].credentials`, cred: h.credentials, binding: { namespace: ns, url: src.spec.url, address: h.address } }));
  const gate = (message: string) => ({ gate: { reason: SourceReason.CredentialsMissing, message } });
  for (const { field, cred, binding } of fields) {
    if (cred.secretRef) {
      const key = cred.secretRef.key ?? 'password';
      let s: SecretObject | undefined;
      try {
        s = await ctx.client.get<SecretObject>(GVRs.Secret, ns, cred.secretRef.name);
      } catch (e) {
        if (e instanceof ApiError && e.code === 403) return gate(`${field}.secretRef: the controller may not read Secrets in this namespace (this platform does not enable secretRef; write the password inline instead).`);
        throw e;
      }
      const v = s?.data?.[key];
      if (!s) return gate(`${field}.secretRef: the Secret ${cred.secretRef.name} does not exist in this namespace.`);
      if (!v) return gate(`${field}.secretRef: the Secret ${cred.secretRef.name} has no key ${key}.`);
      cred.password = Buffer.from(v, 'base64').toString('utf8');
      delete cred.secretRef;
      continue;
    }
    const sealed = cred.password;
    if (!isSealed(sealed)) continue;
    const unreadable = (why: string) => gate(`${field}.password is sealed but cannot be opened: ${why}. Write the password again in plain text; it is sealed on admission.`);
    if (!deps.keyring) return unreadable('this controller has no credentials key ring');
    try {
      let ring = await deps.keyring.get();
      const kid = sealedKid(sealed);
      if (kid && !ring.keys.has(kid)) ring = await deps.keyring.get({ fresh: true });
      cred.password = unseal(ring, sealed, binding);
    } catch (e) {
      return unreadable(e instanceof SealError ? e.message : `the key ring could not be read (${errMessage(e).slice(0, 200)})`);
    }
  }
  return { source: out };
}

interface ClusterNetworkSource {
  get(): Promise<ClusterNetworks>;
}

/**
 * The Service CIDR (probed in the controller's namespace only), the nodes' pod CIDRs and own addresses,
 * and the API server's endpoints, read from the cluster and kept a minute.
 */
function clusterNetworks(cfg: ControllerConfig, client: KubeClient): ClusterNetworkSource {
  const cidr = new ServiceCIDRResolver(client, { override: cfg.serviceCIDR });
  let nodes: { at: number; value: { podCIDRs: string[]; nodeAddresses: string[]; apiServerAddresses: string[] } } | undefined;
  return {
    async get() {
      const [svc, live] = await Promise.all([
        cidr.resolve(cfg.podNamespace).catch(() => undefined),
        (async () => {
          if (nodes && Date.now() - nodes.at < POD_CIDR_TTL_MS) return nodes.value;
          const [n, api] = await Promise.all([listNodeNetworks(client), apiServerAddresses(client)]);
          nodes = { at: Date.now(), value: { ...n, apiServerAddresses: api } };
          return nodes.value;
        })(),
      ]);
      return { serviceCIDRs: svc?.cidrs ?? [], ...live };
    },
  };
}

async function systemResolve(host: string): Promise<string[]> {
  return (await lookup(host, { all: true })).map((a) => a.address);
}

/**
 * The first destination (spec.url's host, each host override's address) the egress policy denies, as a
 * gate naming the field, the address and the rule. Names are resolved; a name that does not resolve
 * here passes (Forklift cannot reach it either, and its error says only that).
 */
async function checkDestinations(cfg: ControllerConfig, deps: SourcePass, src: VMImportSource, ctx: ReconcileContext): Promise<SourceObservation['gate']> {
  const gate = (message: string) => ({ reason: SourceReason.AddressNotAllowed, message });
  // A URL whose destination cannot be judged (this parser cannot read it, or reads another host than
  // Forklift's would) is not allowed: urlDestination.
  const dest = urlDestination(src.spec.url);
  if ('error' in dest) return gate(`spec.url ${dest.error}, so its destination cannot be checked against the platform's egress policy; write it as https://<host>/sdk`);
  const urlHost = dest.host;
  const targets = [{ field: 'spec.url', host: urlHost }, ...(src.spec.hosts ?? []).map((h, i) => ({ field: `spec.hosts[${i}].address`, host: h.address.trim() }))];
  const cluster = await deps.networks.get();
  for (const t of targets) {
    if (isIPLiteral(t.host)) {
      const v = checkAddress(t.host, cfg.egress, cluster);
      if (!v.allowed) return gate(notAllowedMessage(t.field, t.host, v.rule));
      continue;
    }
    const n = checkName(t.host, cfg.egress);
    if (!n.allowed) return gate(notAllowedMessage(t.field, t.host, n.rule));
    let addresses: string[];
    try {
      addresses = await (deps.resolve ?? systemResolve)(t.host);
    } catch (e) {
      ctx.log.debug({ host: t.host, err: errMessage(e) }, 'destination does not resolve');
      continue;
    }
    for (const a of addresses) {
      const v = checkAddress(a, cfg.egress, cluster);
      if (!v.allowed) return gate(notAllowedMessage(t.field, a, v.rule, t.host));
    }
  }
  return undefined;
}

/** Removes the Providers, Hosts and projected Secrets of a source whose destination is no longer allowed. */
async function withdraw(cfg: ControllerConfig, src: VMImportSource, ctx: ReconcileContext): Promise<void> {
  const ns = src.metadata.namespace!;
  const uid = src.metadata.uid!;
  const hostIds = new Set((src.spec.hosts ?? []).map((h) => h.id));
  for (const gvr of [GVRs.Host, GVRs.Provider]) {
    const cache = ctx.cache(gvr);
    for (const o of cache?.list(ns, { [LABEL_SOURCE_UID]: uid }) ?? []) {
      const hostId = o.metadata?.labels?.[LABEL_HOST_ID];
      if (hostId) hostIds.add(hostId);
      ctx.log.info({ kind: gvr.kind, object: o.metadata?.name }, 'withdrawing: the destination is not allowed');
      try {
        await ctx.client.delete(gvr, ns, o.metadata!.name!, { uid: o.metadata?.uid });
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
  }
  for (const id of hostIds) await deleteOwnSecret(ctx, cfg.podNamespace, hostSecretName(src, id), uid);
  await deleteOwnSecret(ctx, cfg.podNamespace, credentialsSecretName(src), uid);
  await deleteLegacySecrets(ctx, cfg.podNamespace, src, hostIds);
}

/** Publishes the inventory ConfigMap; false when the inventory could not be read (retry soon). */
async function publishInventory(cfg: ControllerConfig, deps: SourceReconcilerDeps, src: VMImportSource, ctx: ReconcileContext, obs: SourceObservation): Promise<boolean> {
  const uid = obs.provider?.metadata?.uid;
  if (!uid) return false;
  const inv = deps.inventory ? deps.inventory(ctx) : defaultInventoryClient(cfg, ctx.client);
  let vms;
  try {
    // What is published for pickers is verified against the CA Forklift publishes now (one Secret read
    // per publication, every few minutes per source): a rotation is reported here at once, while the
    // task reconciler and the webhook use the CA cached by resourceVersion.
    if (!deps.inventory) await inventoryCA(cfg, ctx.client).refresh();
    // The full records (facts and Forklift's concerns) in one request, for the assessment.
    vms = await inv.listVMsDetailed(uid);
  } catch (e) {
    // Not a verdict on the source (Forklift says it is connected); tell the tenant and the operator.
    if (e instanceof InventoryError && e.code === 'Loading') return false;
    const msg = e instanceof InventoryError ? e.message : errMessage(e);
    ctx.log.warn({ err: msg }, 'could not read the Forklift inventory');
    ctx.events.event(src as unknown as KubeObject, 'Warning', 'InventoryUnavailable', msg);
    obs.inventoryFault = e;
    return false;
  }
  const list = pickerList(vms, INVENTORY_CAP);
  obs.inventory = statusInventory(vms, STATUS_INVENTORY_MAX_VMS, STATUS_INVENTORY_MAX_BYTES, inventoryEntry);
  const ns = src.metadata.namespace!;
  const desired: KubeObject & { data: Record<string, string> } = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: inventoryConfigMapName(src.metadata.name!),
      namespace: ns,
      labels: sourceLabels(src),
      annotations: { [ANNOTATION_INVENTORY_TRUNCATED]: list.truncated ? `true (${list.items.length} of ${list.total})` : 'false' },
      ownerReferences: [sourceOwnerRef(src)],
    },
    data: { [INVENTORY_KEY]: JSON.stringify(list.items) },
  };
  const cur = await ctx.client.get(GVRs.ConfigMap, ns, desired.metadata!.name!);
  if (cur && cur.metadata?.labels?.[LABEL_SOURCE_UID] !== src.metadata.uid && cur.metadata?.labels?.[LABEL_MANAGED_BY] !== MANAGED_BY_VALUE) {
    ctx.events.event(src as unknown as KubeObject, 'Warning', 'InventoryNotPublished', `ConfigMap ${desired.metadata!.name} exists and is not managed by the migration controller; not overwritten.`);
    return true;
  }
  try {
    await ensure(ctx, GVRs.ConfigMap, desired, cur);
  } catch (e) {
    if (!(e instanceof OwnershipConflict)) throw e;
    ctx.events.event(src as unknown as KubeObject, 'Warning', 'InventoryNotPublished', e.message);
    return true;
  }
  obs.vmCount = list.total;
  return true;
}

/** Writes the derived status when it differs; returns the object the API server answered with, if written. */
async function writeStatus(src: VMImportSource, ctx: ReconcileContext, obs: SourceObservation, deps: SourceReconcilerDeps): Promise<KubeObject | undefined> {
  const status = deriveSourceStatus(obs);
  const before = getCondition(src.status?.conditions, CONDITION_READY);
  const after = getCondition(status.conditions, CONDITION_READY)!;
  const wrote = await patchStatus(ctx.client, GVRs.VMImportSource, src as unknown as KubeObject, status);
  deps.sourceReady?.set({ namespace: src.metadata.namespace ?? '', source: src.metadata.name ?? '' }, after.status === 'True' ? 1 : 0);
  if (wrote && (before?.reason !== after.reason || before?.status !== after.status)) {
    ctx.events.event(src as unknown as KubeObject, after.status === 'True' ? 'Normal' : 'Warning', after.reason, after.message);
    ctx.log.info({ ready: after.status, reason: after.reason }, 'source readiness changed');
  }
  return wrote;
}

/**
 * Deletes a Secret by name when its owner label names this source; never a foreign one (a projected
 * Secret has no owner reference: owners cannot cross namespaces).
 */
async function deleteOwnSecret(ctx: ReconcileContext, ns: string, name: string, sourceUID: string): Promise<void> {
  const s = await ctx.client.get(GVRs.Secret, ns, name);
  if (!s || !ownedBy(s, sourceUID)) return;
  try {
    await ctx.client.delete(GVRs.Secret, ns, name, { uid: s.metadata?.uid });
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

/**
 * Once a Provider or Host of this source points at another Secret than before (an upgrade renamed the
 * projected Secrets), the one it pointed at goes, when it is this source's.
 */
async function dropReplacedSecret(ctx: ReconcileContext, ns: string, before: KubeObject | undefined, after: KubeObject, sourceUID: string): Promise<void> {
  const secretOf = (o: KubeObject | undefined) => (o as { spec?: { secret?: { name?: string; namespace?: string } } } | undefined)?.spec?.secret;
  const was = secretOf(before);
  const now = secretOf(after);
  if (was?.name && was.namespace === ns && was.name !== now?.name) await deleteOwnSecret(ctx, ns, was.name, sourceUID);
}

/** This source's projected Secrets under the names used before they were derived from its UID (upgrade). */
async function deleteLegacySecrets(ctx: ReconcileContext, ns: string, src: VMImportSource, hostIds: Iterable<string>): Promise<void> {
  const uid = src.metadata.uid!;
  for (const id of hostIds) await deleteOwnSecret(ctx, ns, legacyProjectedSecretName(src.metadata.namespace!, src.metadata.name!, id), uid);
  await deleteOwnSecret(ctx, ns, legacyProjectedSecretName(src.metadata.namespace!, src.metadata.name!), uid);
}

async function finalize(cfg: ControllerConfig, src: VMImportSource, ctx: ReconcileContext): Promise<Result> {
  if (!src.metadata.finalizers?.includes(FINALIZER)) return {};
  const ns = src.metadata.namespace!;
  const name = src.metadata.name!;
  const uid = src.metadata.uid!;
  const mine = (o: KubeObject | undefined): boolean => o?.metadata?.labels?.[LABEL_SOURCE_UID] === uid || !!o?.metadata?.ownerReferences?.some((r) => r.uid === uid);
  const sel = `${LABEL_SOURCE_UID}=${uid}`;
  // Tasks still importing over this source keep it (and its Providers): read live — deleting on a stale
  // read would strand a running Plan on a Provider that is gone.
  const tasks = (await ctx.client.list<KubeObject>(GVRs.VMImportTask, ns)).items as unknown as VMImportTask[];
  const plans = ctx.installed(GVRs.Plan) ? (await ctx.client.list(GVRs.Plan, ns, { labelSelector: `${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}` })).items : [];
  const holders = tasksHoldingSource(name, tasks, plans);
  if (holders.length) {
    const message = `Deletion waits for ${holders.length === 1 ? 'the task' : 'the tasks'} still importing over this source: ${holders.join(', ')}. The Forklift Providers stay until ${holders.length === 1 ? 'it ends' : 'they end'}; delete a task to cancel it.`;
    const conditions = setCondition(src.status?.conditions, { type: CONDITION_READY, status: 'False', reason: SourceReason.Deleting, message }, ctx.now(), src.metadata.generation);
    const before = getCondition(src.status?.conditions, CONDITION_READY);
    await patchStatus(ctx.client, GVRs.VMImportSource, src as unknown as KubeObject, { ...(src.status ?? {}), observedGeneration: src.metadata.generation, conditions });
    if (before?.reason !== SourceReason.Deleting || before.message !== message) ctx.events.event(src as unknown as KubeObject, 'Normal', 'DeletionWaitsForTasks', message);
    return { requeueAfterMs: REQUEUE_DELETION_HELD_MS };
  }
  // Host Secrets are named after the host ids: those in the spec and those of the Hosts still present.
  const hostIds = new Set((src.spec.hosts ?? []).map((h) => h.id));
  for (const gvr of [GVRs.Host, GVRs.Provider]) {
    if (!ctx.installed(gvr)) continue;
    try {
      const objs = await ctx.client.list(gvr, ns, { labelSelector: sel });
      for (const o of objs.items) {
        const hostId = o.metadata?.labels?.[LABEL_HOST_ID];
        if (gvr === GVRs.Host && hostId) hostIds.add(hostId);
        await ctx.client.delete(gvr, ns, o.metadata!.name!, { uid: o.metadata?.uid });
      }
    } catch (e) {
      // Only a kind uninstalled since discovery last said (its path not served, and discovery now agrees)
      // has nothing left to delete. Not served while still installed is an API server not ready for it
      // (restarting): read as "none", the finalizer would go and leave this source's Providers behind.
      if (!(isNotServed(e) && !ctx.installed(gvr))) throw e;
    }
  }
  // Projected Secrets (controller's namespace), by their deterministic names: the controller may not
  // list Secrets anywhere.
  const secretsNs = cfg.podNamespace;
  for (const id of hostIds) await deleteOwnSecret(ctx, secretsNs, hostSecretName(src, id), uid);
  await deleteOwnSecret(ctx, secretsNs, credentialsSecretName(src), uid);
  await deleteLegacySecrets(ctx, secretsNs, src, hostIds);
  for (const o of (await ctx.client.list(GVRs.ConfigMap, ns, { labelSelector: sel })).items) await ctx.client.delete(GVRs.ConfigMap, ns, o.metadata!.name!, { uid: o.metadata?.uid });
  // The inventory ConfigMap by name too, when ours (a label may have been edited away).
  const cm = await ctx.client.get(GVRs.ConfigMap, ns, inventoryConfigMapName(name));
  if (mine(cm)) await ctx.client.delete(GVRs.ConfigMap, ns, inventoryConfigMapName(name), { uid: cm!.metadata?.uid });
  ctx.events.event(src as unknown as KubeObject, 'Normal', SourceReason.Deleting, 'Removed the Forklift Providers, Hosts, Secrets and inventory ConfigMap of this source.');
  await ctx.client.patch(GVRs.VMImportSource, ns, name, {
    metadata: { finalizers: (src.metadata.finalizers ?? []).filter((f) => f !== FINALIZER), resourceVersion: src.metadata.resourceVersion },
  });
  return {};
}
