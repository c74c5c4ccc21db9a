// The admission server: HTTPS (node:https), AdmissionReview admission.k8s.io/v1, stateless (safe with
// several replicas). Every answer to a POST on a review path is a well-formed AdmissionReview with HTTP
// 200 — garbage in gets a denial with a message, never a 5xx, a hang or a crash.
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import type { KubeClient } from '../runtime/kube.ts';
import { GROUP, KIND_SOURCE, KIND_TASK, PLURAL_SOURCE, PLURAL_TASK } from '../api/types.ts';
import { boundProblems } from './bounds.ts';
import { sourceSchemaProblems, taskSchemaProblems } from '../api/models.ts';
import { ServiceCIDRResolver } from '../preflight/cidr.ts';
import type { CertSource } from './certs.ts';
import type { KeyringSource } from '../credentials/keyring.ts';
import { sealSourcePasswords, sealedKidsIn } from './seal-source.ts';
import { SARAccessChecker, type AccessChecker } from './access.ts';
import { EMPTY_POLICY, type EgressPolicy } from '../preflight/egress.ts';
import { secretRefsToCheck } from './validate-source.ts';
import { PATHS } from './config.ts';
import { FactsGatherer, withTimeout } from './facts.ts';
import { asObject, asString } from './fields.ts';
import { buildResponse, parseReview, verdict, type AdmissionRequest, type AdmissionReview, type Verdict } from './review.ts';
import { sourceNeedsServiceCIDR, sourceURLChanged, urlEditRefusal, validateSource } from './validate-source.ts';
import { DEFAULT_PLATFORM, deniedOn, validateTask, type InventoryReader, type TaskPlatform } from './validate-task.ts';

/**
 * An AdmissionReview carries the object and the old object (each up to the API server's 3 MiB request
 * limit) plus envelope; anything larger is not from the API server and is refused without buffering it.
 */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;
/** Answer before the API server's own 5 s timeout turns our silence into a bare "context deadline exceeded". */
export const HANDLER_DEADLINE_MS = 4000;
/**
 * How long the server waits, before it listens, for its reviewer to load the key ring and the Service
 * CIDR (Reviewer.warm). Loaded by the first source review instead, they cost it up to three round trips
 * to the API server (the key ring's Secret read, created, read again when another replica created it
 * first) plus the CIDR probe; on a loaded control plane that review ran past the API server's 5 s
 * timeout and the tenant's first source was refused with "context deadline exceeded". Bounded, so an
 * API server that cannot answer now delays the webhook by this much and no more.
 */
export const WEBHOOK_WARMUP_MS = 10_000;

export interface WebhookServerOptions {
  port: number;
  host?: string;
  client: KubeClient;
  certs: CertSource;
  /** Key ring sealing inline passwords on the mutating path (required: a password is never stored in plain text). */
  keyring: KeyringSource;
  /** The platform's egress policy for sources (default: the built-in denials only). */
  egress?: EgressPolicy;
  /**
   * Who may call: when set, every review must come over a connection whose client certificate chains to
   * `caPEM` (and, when `names` is non-empty, whose subject CN or a DNS SAN is one of them): the API
   * server's, as its admission configuration presents it (docs/security.md). Any other caller gets 401
   * and no AdmissionReview: no facts, no sealed value, no verdict.
   */
  clientAuth?: ClientAuth;
  /** Judges the request's user (SubjectAccessReview by default). */
  access?: AccessChecker;
  inventory?: InventoryReader;
  /** Platform opt-ins (guest conversion); default none. */
  platform?: TaskPlatform;
  /** Service CIDR(s) from configuration (comma-separated); otherwise discovered. */
  serviceCIDR?: string;
  /** Namespace for the Service-CIDR probe; default the request's namespace. */
  probeNamespace?: string;
  /** Bound on each cluster/inventory read (default 1500 ms). */
  readTimeoutMs?: number;
  /** TTL of cached cluster reads (default 5 s). */
  cacheTtlMs?: number;
  logger?: Logger;
  /** Called after each review (metrics, benchmarks). */
  observe?: (path: string, allowed: boolean, ms: number) => void;
}

export interface ClientAuth {
  caPEM: string;
  names?: string[];
}

/** Whether the connection's client certificate is the configured caller's. */
export function verifiedCaller(socket: TLSSocket, auth: ClientAuth): boolean {
  if (!socket.authorized) return false;
  const peer = socket.getPeerCertificate();
  if (!peer || !peer.subject) return false;
  if (!auth.names?.length) return true;
  const cn = peer.subject.CN;
  const sans = (peer.subjectaltname ?? '')
    .split(/,\s*/)
    .filter((n) => n.startsWith('DNS:'))
    .map((n) => n.slice(4));
  return [...(Array.isArray(cn) ? cn : cn ? [cn] : []), ...sans].some((n) => auth.names!.includes(n));
}

export interface WebhookServer {
  port: number;
  close(): Promise<void>;
}

/**
 * A denial listing the object's schema violations (each naming its field), or undefined when it matches.
 * The early (mutating) pass runs before the API server's own schema validation, so without this a wrong
 * type in a field our rules do not read would reach the seal step or be judged by rules that assume it.
 */
function schemaVerdict(kind: string, problems: string[]): Verdict | undefined {
  if (!problems.length) return undefined;
  const shown = problems.slice(0, MAX_SCHEMA_PROBLEMS);
  const more = problems.length - shown.length;
  return verdict([...shown.map((p) => `${p} (the ${kind} schema)`), ...(more > 0 ? [`and ${more} more schema violation(s)`] : [])], []);
}
/** Longer than the API server's 90 s idle-connection timeout (see startWebhookServer). */
export const WEBHOOK_KEEPALIVE_MS = 120_000;

// A garbage object can break hundreds of rules; the tenant needs the first few, the response stays small.
const MAX_SCHEMA_PROBLEMS = 10;

export interface Reviewer {
  review(path: string, body: unknown): Promise<AdmissionReview>;
  /**
   * Loads what the first reviews would otherwise load on their own time: the credentials key ring (read,
   * or created on a new platform) and the Service CIDR of the probe namespace. Never fails: what cannot
   * be loaded now is loaded by the review that needs it.
   */
  warm(): Promise<void>;
}

/** The review logic without the transport (used by the server and directly by unit tests). */
export function createReviewer(o: Omit<WebhookServerOptions, 'port' | 'host' | 'certs'>): Reviewer {
  const cidr = new ServiceCIDRResolver(o.client, { override: o.serviceCIDR, timeoutMs: o.readTimeoutMs ?? 1500 });
  const access = o.access ?? new SARAccessChecker({ client: o.client, timeoutMs: o.readTimeoutMs ?? 1500 });
  const platform = o.platform ?? DEFAULT_PLATFORM;
  const gatherer = new FactsGatherer({ client: o.client, inventory: o.inventory, cidr, probeNamespace: o.probeNamespace, readTimeoutMs: o.readTimeoutMs, cacheTtlMs: o.cacheTtlMs });

  async function decide(path: string, req: AdmissionRequest): Promise<Verdict> {
    const isSourcePath = path === PATHS.validateSource || path === PATHS.earlySource;
    const expectKind = isSourcePath ? KIND_SOURCE : KIND_TASK;
    if (req.kind.group !== GROUP || req.kind.kind !== expectKind) {
      return verdict([`this endpoint admits ${GROUP} ${expectKind}, not ${req.kind.group || 'core'} ${req.kind.kind}`], []);
    }
    // Status writes and deletions are not ours to judge.
    if (req.subResource || req.operation === 'DELETE' || req.operation === 'CONNECT') return verdict([], []);
    // Sizes first, on every path: no rule below parses a string longer than the CRD allows it to be.
    const oversized = [...boundProblems(isSourcePath ? PLURAL_SOURCE : PLURAL_TASK, req.object), ...boundProblems(isSourcePath ? PLURAL_SOURCE : PLURAL_TASK, req.oldObject).map((p) => `oldObject ${p}`)];
    if (oversized.length) return verdict(oversized, []);
    const obj = asObject(req.object);
    const namespace = req.namespace || asString(asObject(obj?.metadata)?.namespace) || '';
    if (isSourcePath) {
      const need = req.operation === 'CREATE' || req.operation === 'UPDATE' ? sourceNeedsServiceCIDR(obj) : false;
      const { facts } = await gatherer.sourceFacts(namespace, need, o.egress ?? EMPTY_POLICY);
      const v = validateSource(req.operation, req.object, req.oldObject, facts);
      if (path !== PATHS.earlySource) {
        if (!v.allowed) return v;
        // A URL edit while tasks import over the source is refused (validate-source.ts urlEditRefusal).
        if (req.operation === 'UPDATE' && sourceURLChanged(req.object, req.oldObject)) {
          // Unreadable tasks admit the edit with a warning: the controller holds the Provider's spec anyway.
          const running = await gatherer.tasksImportingOver(namespace, asString(asObject(obj?.metadata)?.name) ?? '').catch(() => undefined);
          const refusal = running && urlEditRefusal(running);
          if (refusal) return verdict([refusal], v.warnings);
          if (!running) v.warnings.push('could not list the tasks importing over this source: a URL edit while they run is applied only once they end');
        }
        // A source may name only a Secret its author can read: the controller would otherwise carry a
        // Secret the tenant cannot see to an endpoint the tenant chose.
        const denied: string[] = [];
        for (const ref of secretRefsToCheck(req.object, req.oldObject)) {
          if (!(await access.allowed(req.userInfo, { namespace, verb: 'get', group: '', resource: 'secrets', name: ref.name }))) {
            denied.push(`${ref.field}.secretRef: you may not read the Secret ${JSON.stringify(ref.name)} in this namespace; a source may name only a Secret its author can read`);
          }
        }
        return denied.length ? verdict(denied, v.warnings) : v;
      }
      // The early (mutating) pass denies, or seals the passwords; its warnings would be shown twice.
      if (!v.allowed || (req.operation !== 'CREATE' && req.operation !== 'UPDATE')) return verdict(v.problems, []);
      // Our rules passed; the CRD's schema must too before a patch is computed on this object.
      const structural = schemaVerdict(KIND_SOURCE, sourceSchemaProblems(req.object));
      if (structural) return structural;
      let ring = await o.keyring.get();
      if (sealedKidsIn(req.object).some((k) => !ring.keys.has(k)) || sealedKidsIn(req.oldObject).some((k) => !ring.keys.has(k))) ring = await o.keyring.get({ fresh: true });
      const sealed = sealSourcePasswords(ring, namespace, req.object, req.oldObject);
      return { ...verdict(sealed.problems, []), patch: sealed.patch };
    }
    if (path === PATHS.earlyTask) {
      // Before the schema: structural problems only, denials only (the validating pass warns). Our own
      // rules speak first (their messages say what to do); what they do not cover, the CRD's schema does.
      const v = validateTask(req.operation, req.object, req.oldObject, undefined, platform);
      // A denial here ends the request before the validating pass, so its warnings (a name Cozystack's
      // own controller would have taken, say) are shown once, with it.
      if (!v.allowed) return v;
      if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return verdict(v.problems, []);
      return schemaVerdict(KIND_TASK, taskSchemaProblems(req.object)) ?? verdict([], []);
    }
    if (req.operation === 'UPDATE' || !obj) return validateTask(req.operation, req.object, req.oldObject, undefined, platform);
    // Facts about a namespace (its source's readiness, VM and disk counts, ESXi addresses, quotas) go
    // only to a user who may read its imports; anyone else gets the structural verdict alone.
    if (!(await access.allowed(req.userInfo, { namespace, verb: 'get', group: GROUP, resource: 'vmimportsources' }))) {
      const v = validateTask(req.operation, req.object, req.oldObject, undefined, platform);
      return verdict(v.problems, [...v.warnings, 'the checks against the cluster were skipped: the requesting user may not read VMImportSources in this namespace; the controller makes them before the import starts']);
    }
    let g = await gatherer.taskFacts(namespace, obj);
    let v = validateTask(req.operation, req.object, req.oldObject, g.facts, platform);
    if (!v.allowed && g.usedCache) {
      // Never deny on a stale view (a storage class or source created a second ago): re-read the cached
      // facts the denial rests on, and re-judge. The others are not read again (a denial for a missing
      // class costs one list of classes, not a read of the source and the quotas as well).
      const stale = deniedOn(req.operation, req.object, req.oldObject, g.facts, platform, v, g.cachedFacts);
      if (stale.size) {
        g = await gatherer.taskFacts(namespace, obj, stale);
        v = validateTask(req.operation, req.object, req.oldObject, g.facts, platform);
      }
    }
    return v;
  }

  return {
    async warm(): Promise<void> {
      await Promise.allSettled([o.keyring.get(), o.probeNamespace ? cidr.resolve(o.probeNamespace) : undefined]);
    },
    async review(path: string, body: unknown): Promise<AdmissionReview> {
      const parsed = parseReview(body);
      if (!parsed.ok) return buildResponse(parsed.apiVersion, parsed.uid, verdict([parsed.error], []));
      const { review } = parsed;
      const req = review.request;
      try {
        const v = await withTimeout(decide(path, req), HANDLER_DEADLINE_MS, 'admission checks');
        return buildResponse(review.apiVersion, req.uid, v);
      } catch (e) {
        o.logger?.error({ err: (e as Error).message, uid: req.uid, path }, 'admission review failed');
        return buildResponse(review.apiVersion, req.uid, verdict([`the admission checks could not complete (${(e as Error).message.slice(0, 200)}); try again`], []));
      }
    },
  };
}

function readBody(req: IncomingMessage): Promise<{ text: string } | { tooLarge: true }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (c: Buffer) => {
      if (done) return;
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        done = true;
        req.resume();
        resolve({ tooLarge: true });
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (!done) resolve({ text: Buffer.concat(chunks).toString('utf8') });
    });
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown, contentType = 'application/json'): void {
  if (res.headersSent || res.destroyed) return;
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

export async function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  await opts.certs.start();
  const reviewer = createReviewer(opts);
  let warmTimer: NodeJS.Timeout | undefined;
  await Promise.race([reviewer.warm(), new Promise<void>((resolve) => (warmTimer = setTimeout(resolve, WEBHOOK_WARMUP_MS)))]);
  clearTimeout(warmTimer);
  const reviewPaths = new Set<string>(Object.values(PATHS));
  const initial = opts.certs.current();
  // The client certificate is asked for, not required at the handshake: the kubelet's probes of /healthz
  // present none. The review paths refuse a connection without the caller's certificate.
  const clientTLS = opts.clientAuth ? { requestCert: true, rejectUnauthorized: false, ca: opts.clientAuth.caPEM } : {};
  if (!opts.clientAuth) opts.logger?.warn('the admission webhook does not authenticate its callers (no client CA configured): only the NetworkPolicy keeps others from it; docs/security.md');
  const server = https.createServer({ cert: initial.cert, key: initial.key, minVersion: 'TLSv1.2', ...clientTLS }, (req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      if (req.method === 'GET' && (path === '/healthz' || path === '/readyz')) return send(res, 200, 'ok', 'text/plain');
      if (!reviewPaths.has(path)) return send(res, 404, 'not found', 'text/plain');
      if (opts.clientAuth && !verifiedCaller(req.socket as TLSSocket, opts.clientAuth)) {
        req.resume();
        return send(res, 401, "the admission webhook answers only the API server's client certificate", 'text/plain');
      }
      if (req.method !== 'POST') return send(res, 405, 'POST an AdmissionReview', 'text/plain');
      const t0 = performance.now();
      let out: AdmissionReview;
      try {
        const body = await readBody(req);
        if ('tooLarge' in body) {
          out = buildResponse('admission.k8s.io/v1', '', verdict([`malformed AdmissionReview: body larger than ${MAX_BODY_BYTES} bytes`], []));
        } else {
          let parsed: unknown;
          try {
            parsed = JSON.parse(body.text);
          } catch {
            parsed = undefined;
          }
          out = parsed === undefined ? buildResponse('admission.k8s.io/v1', '', verdict(['malformed AdmissionReview: the body is not JSON'], [])) : await reviewer.review(path, parsed);
        }
      } catch (e) {
        out = buildResponse('admission.k8s.io/v1', '', verdict([`malformed AdmissionReview: ${(e as Error).message.slice(0, 200)}`], []));
      }
      send(res, 200, out);
      const allowed = out.response?.allowed ?? false;
      opts.observe?.(path, allowed, performance.now() - t0);
      if (!allowed) opts.logger?.info({ path, uid: out.response?.uid, message: out.response?.status?.message }, 'admission denied');
    })().catch((e: unknown) => {
      opts.logger?.error({ err: (e as Error).message }, 'webhook handler crashed');
      send(res, 200, buildResponse('admission.k8s.io/v1', '', verdict(['internal error in the admission webhook; try again'], [])));
    });
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 15_000;
  // The API server's webhook client keeps an idle connection for 90 s (Go's http.Transport
  // IdleConnTimeout, set by k8s.io/apimachinery/pkg/util/net SetTransportDefaults). Node closes idle ones
  // after 5 s by default, so a review sent on a connection at the moment Node closes it fails with EOF —
  // "failed calling webhook …: EOF", a denied create under failurePolicy Fail. Holding idle connections
  // longer than the client does leaves the closing to the client, which never races its own request.
  server.keepAliveTimeout = WEBHOOK_KEEPALIVE_MS;
  server.on('clientError', (_e, socket) => socket.destroy());
  opts.certs.onChange((c) => {
    try {
      // New connections get the new certificate; open keep-alive connections finish on the old one.
      server.setSecureContext({ cert: c.cert, key: c.key, minVersion: 'TLSv1.2', ...(opts.clientAuth ? { ca: opts.clientAuth.caPEM } : {}) });
      opts.logger?.info('webhook serving certificate reloaded');
    } catch (e) {
      opts.logger?.error({ err: (e as Error).message }, 'could not load the new webhook certificate; keeping the old one');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        opts.certs.stop();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
