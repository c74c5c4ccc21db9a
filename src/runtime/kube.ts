// A thin REST client for plain-JSON Kubernetes objects. client-node supplies configuration and
// authentication (KubeConfig.applyToHTTPSOptions); requests go over one keep-alive https.Agent.
// Every object is plain JSON: Forklift, CDI, KubeVirt and Cozystack kinds have no generated types here,
// and round-tripping through a typed model would drop fields we do not know (docs/forklift-contract.md).
import https from 'node:https';
import http from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import type { GVR } from './gvr.ts';
import { currentRequestPriority, type TokenBucket } from './ratelimit.ts';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }>;
    finalizers?: string[];
    deletionTimestamp?: string;
    creationTimestamp?: string;
    generateName?: string;
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

export interface KubeList<T> {
  items: T[];
  metadata: { resourceVersion?: string; continue?: string };
}

/**
 * The API server answered, and not with success: the HTTP code and the Status it sent (API conventions:
 * `reason` is the machine-readable StatusReason, `details` the StatusDetails with its causes).
 */
export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details: unknown;
  /** The answer's Retry-After, in seconds, when it had one. */
  readonly retryAfterSeconds: number | undefined;
  constructor(code: number, reason: string, message: string, details?: unknown, retryAfterSeconds?: number) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.reason = reason;
    this.details = details;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** No answer: the connection failed or broke off (code 0). */
export class ConnectionError extends ApiError {
  constructor(message: string) {
    super(0, 'ConnectionError', message);
    this.name = 'ConnectionError';
  }
}

/** No answer within the request's deadline (or cancelled by abortInFlight): never retried, the bounds must hold. */
export class DeadlineError extends ConnectionError {
  constructor(message: string) {
    super(message);
    this.name = 'DeadlineError';
  }
}

/**
 * The object is gone: a 404 whose Status says NotFound, as kube-apiserver and every aggregated server built
 * on k8s.io/apiserver answer for an object they serve the kind of but do not have (k8s.io/apimachinery
 * pkg/api/errors NewNotFound; `details` names the object). A bare 404 is not this (see isNotServed).
 */
export function isNotFound(e: unknown): boolean {
  return e instanceof ApiError && e.code === 404 && e.reason === 'NotFound';
}
/**
 * The path is not served: a 404 without a NotFound Status (plain text "404 page not found"). Either the
 * kind is not installed (no CRD, no aggregated API), or the server is not ready to serve it yet: a
 * kube-apiserver that has just restarted answers custom-resource paths so until its CRD informer has
 * synced, and kube-aggregator does for a group version whose APIService is not registered yet. It says
 * nothing about any object: one read as "absent" on such an answer could be taken for deleted, and an
 * irreversible step (failing a VM OutputDeleted, re-creating an output) decided on it. Only a caller that
 * also knows the kind is not installed (ctx.installed) may take it as "nothing of this kind exists".
 */
export function isNotServed(e: unknown): boolean {
  return e instanceof ApiError && e.code === 404 && e.reason !== 'NotFound';
}
export function isConflict(e: unknown): boolean {
  return e instanceof ApiError && e.code === 409 && e.reason === 'Conflict';
}
export function isAlreadyExists(e: unknown): boolean {
  return e instanceof ApiError && e.code === 409 && e.reason === 'AlreadyExists';
}
export function isGone(e: unknown): boolean {
  return e instanceof ApiError && e.code === 410;
}
/** The resourceVersion asked for is older than what the server keeps (client-go's isExpiredError: 410 Gone or reason Expired). */
export function isExpired(e: unknown): boolean {
  return e instanceof ApiError && (e.code === 410 || e.reason === 'Expired');
}
/**
 * The resourceVersion asked for is newer than the server has (an etcd restored from a backup, an HA API
 * server behind the others): a 504 Timeout whose Status carries the cause ResourceVersionTooLarge, or on
 * API servers before 1.18.5 only the message "Too large resource version" (k8s.io/client-go
 * tools/cache/reflector.go isTooLargeResourceVersionError; k8s.io/apiserver storage/errors.go
 * NewTooLargeResourceVersionError). Retrying the same resourceVersion cannot succeed.
 */
export function isTooLargeResourceVersion(e: unknown): boolean {
  if (!(e instanceof ApiError)) return false;
  const causes = (e.details as { causes?: Array<{ reason?: string; type?: string }> } | undefined)?.causes ?? [];
  if (causes.some((c) => c.reason === 'ResourceVersionTooLarge' || c.type === 'ResourceVersionTooLarge')) return true;
  return (e.code === 504 || e.reason === 'Timeout') && /too large resource version/i.test(e.message);
}
export function isTooManyRequests(e: unknown): boolean {
  return e instanceof ApiError && e.code === 429;
}

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: 'NotOlderThan' | 'Exact';
  /** See RequestOptions.probe. */
  probe?: boolean;
}

/** How one request is handled here (not sent). */
export interface RequestOptions {
  /**
   * The request asks whether the kind is served at all (a kind discovery does not report installed, a
   * discovery document): a bare 404 is its answer, given at once instead of being retried.
   */
  probe?: boolean;
}

export type PatchType = 'merge' | 'json' | 'apply' | 'strategic';
const PATCH_CONTENT_TYPE: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  apply: 'application/apply-patch+yaml',
  strategic: 'application/strategic-merge-patch+json',
};

export interface RequestObserver {
  (verb: string, gvr: GVR | undefined, code: number, ms: number): void;
}

export interface KubeClientOptions {
  /** Field manager stamped on every write. */
  fieldManager?: string;
  /**
   * Per-request deadline: the whole request, connection to last byte (not only socket idleness). A request
   * never hangs longer, so a reconcile — and a lease renewal — always ends in bounded time.
   */
  timeoutMs?: number;
  /** Called after every request (metrics, benchmarks). */
  observe?: RequestObserver;
  /** Identifies the client in the API server's audit log. */
  userAgent?: string;
  /** Called with each Warning header value of a response (admission warnings: RFC 7234 `299 - "text"`). */
  onWarning?: (header: string) => void;
  /** Client-side rate limit (every attempt and watch open takes a token); none when undefined. */
  limiter?: TokenBucket;
  /** Called with the ms a request waited for the limiter (only when it had to wait). */
  onThrottled?: (ms: number) => void;
}

/** Retries of one request (client-go retries up to 10 times; 3 keep a refused call well inside its deadline). */
export const MAX_RETRIES = 3;
/** A Retry-After longer than this is not waited out here: the caller's backoff takes over. */
const MAX_RETRY_AFTER_MS = 5_000;

/** What a failed attempt calls for: give the caller the typed error, or send again after a backoff. */
export type Verdict = { kind: 'terminal' } | { kind: 'retry'; afterMs: number };
const TERMINAL: Verdict = { kind: 'terminal' };

/**
 * Classifies a failed attempt of `method` (the `attempt`-th, from 0). Pure but for the jitter. Retried, as
 * client-go's REST client does (k8s.io/client-go rest/request.go: a response with Retry-After is retried
 * after that delay whatever the verb, and a GET whose connection broke is retried): 429 (any verb: the API
 * server refuses it before handling it), and for GET also 5xx, a broken connection and a bare 404 (a path
 * not served yet: isNotServed), with the same backoff. Terminal: every other answer (a NotFound Status
 * among them: the object is gone); a write answered 5xx, a bare 404 or cut off (it may have been applied,
 * or the caller decides); a fenced write; a request past its deadline or cancelled; a resourceVersion too
 * large (the same one cannot succeed); a Retry-After longer than MAX_RETRY_AFTER_MS (the caller's own
 * backoff is the better wait). A read still answered a bare 404 after its retries reaches the caller as
 * that ApiError, which is not isNotFound: the caller fails and its reconcile is retried with backoff.
 */
export function classifyFailure(method: string, e: unknown, attempt: number, o: RequestOptions = {}): Verdict {
  if (attempt >= MAX_RETRIES) return TERMINAL;
  if (!(e instanceof ApiError) || e instanceof FencedError || e instanceof DeadlineError) return TERMINAL;
  if (isTooLargeResourceVersion(e)) return TERMINAL;
  // 100 ms, 200 ms, 400 ms with up to 50% jitter, so replicas refused together do not return together.
  const backoff = 100 * 2 ** attempt * (1 + Math.random() / 2);
  if (e.code === 429) {
    const ms = e.retryAfterSeconds !== undefined ? e.retryAfterSeconds * 1000 : backoff;
    return ms <= MAX_RETRY_AFTER_MS ? { kind: 'retry', afterMs: Math.max(ms, backoff) } : TERMINAL;
  }
  if (method !== 'GET') return TERMINAL;
  if (e.code === 0 || (e.code >= 500 && e.code <= 504)) return { kind: 'retry', afterMs: backoff };
  // A GET answered a bare 404 is asked again, as a 5xx is: a kube-apiserver just restarted answers custom
  // resources so until its CRD informer syncs, and kube-aggregator an APIService not registered yet. Taken
  // at its word, an output of the handoff read so would be "deleted" and its VM failed OutputDeleted.
  // A probe (RequestOptions.probe) takes it as its answer.
  if (isNotServed(e) && !o.probe) return { kind: 'retry', afterMs: backoff };
  return TERMINAL;
}

/** The ApiError a non-2xx answer stands for (its Status, when the body is one). Pure. */
export function errorOfAnswer(status: number, text: string, retryAfter?: string): ApiError {
  let st: { reason?: string; message?: string; details?: unknown } = {};
  try {
    st = (text ? JSON.parse(text) : {}) ?? {};
  } catch {
    /* not JSON: a proxy's page */
  }
  const ra = retryAfter === undefined || retryAfter === '' ? NaN : Number(retryAfter);
  return new ApiError(status, st.reason ?? String(status), st.message ?? (text.slice(0, 500) || `HTTP ${status}`), st.details, Number.isFinite(ra) ? ra : undefined);
}

/** One attempt's answer, whatever its code. */
interface Answer {
  status: number;
  text: string;
  retryAfter?: string;
}

/** Methods that change something on the API server: refused while the client is fenced. */
const WRITE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** A write refused locally because this process may no longer act (it is not, or no longer surely, the leader). */
export class FencedError extends ApiError {
  constructor(why: string, method: string, path: string) {
    super(0, 'Fenced', `not sent: ${method} ${path}: ${why}`);
    this.name = 'FencedError';
  }
}

export function resourcePath(gvr: GVR, namespace?: string, name?: string, subresource?: string): string {
  const base = gvr.group ? `/apis/${gvr.group}/${gvr.version}` : `/api/${gvr.version}`;
  const ns = gvr.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  const n = name ? `/${encodeURIComponent(name)}` : '';
  const sub = subresource ? `/${subresource}` : '';
  return `${base}${ns}/${gvr.plural}${n}${sub}`;
}

export class KubeClient {
  readonly kc: KubeConfig;
  readonly server: string;
  private readonly opts: KubeClientOptions;
  private agent: https.Agent | http.Agent | undefined;
  private baseOpts: https.RequestOptions | undefined;
  /** Says why writes must not be sent now (leader election), or undefined when they may. */
  private fence: (() => string | undefined) | undefined;
  /** Aborts every request in flight (a lost lease cancels the work it was doing). */
  private inflight = new AbortController();
  /** TLS sockets whose handshake completed: a request on one is sent at once. */
  private readonly ready = new WeakSet<object>();

  constructor(kc: KubeConfig, opts: KubeClientOptions = {}) {
    this.kc = kc;
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    this.server = cluster.server.replace(/\/$/, '');
    this.opts = { fieldManager: 'migration-controller', timeoutMs: 30_000, ...opts };
  }

  private async requestOptions(): Promise<https.RequestOptions> {
    // Re-applied per request: token files (projected ServiceAccount tokens) rotate.
    const o: https.RequestOptions = {};
    await this.kc.applyToHTTPSOptions(o);
    if (!this.agent) {
      const isHttps = this.server.startsWith('https:');
      this.agent = isHttps
        ? new https.Agent({ keepAlive: true, maxSockets: 64, ca: o.ca, cert: o.cert, key: o.key, rejectUnauthorized: o.rejectUnauthorized })
        : new http.Agent({ keepAlive: true, maxSockets: 64 });
    }
    this.baseOpts = o;
    return o;
  }

  /**
   * Fencing: `fence` is asked right before each write goes on the wire (after the connection is up, so a
   * process frozen while connecting cannot send a write decided before it froze); a reason refuses it.
   */
  setFence(fence: (() => string | undefined) | undefined): void {
    this.fence = fence;
  }

  /** Cancels every request in flight (they fail with ConnectionError); later requests are unaffected. */
  abortInFlight(): void {
    this.inflight.abort();
    this.inflight = new AbortController();
  }

  /**
   * Waits for the client-side limiter's token (none configured: at once), in the turn of the work's
   * priority (withRequestPriority); a cancel of in-flight work ends the wait.
   */
  private async throttle(signal: AbortSignal): Promise<void> {
    const limiter = this.opts.limiter;
    if (!limiter) return;
    let ms: number;
    try {
      ms = await limiter.wait(signal, currentRequestPriority());
    } catch {
      throw new DeadlineError('cancelled while waiting for the client-side rate limiter');
    }
    if (ms > 0) this.opts.onThrottled?.(ms);
  }

  /**
   * A request: resolves the parsed JSON body or throws a typed error (ApiError: the server answered;
   * ConnectionError / DeadlineError: it did not; FencedError: not sent). Three parts: `send` makes one
   * attempt, `classifyFailure` says whether its failure is terminal or worth a retry after a backoff, and
   * this loop retries — so one refused read among the dozens of a reconcile pass does not fail the pass
   * (under a few percent of such answers, a pass of a multi-VM task otherwise almost never completes and
   * its backoff climbs to the cap). Each attempt first takes a token from the client-side limiter.
   */
  async request<T>(method: string, path: string, body?: unknown, contentType = 'application/json', gvr?: GVR, timeoutMs?: number, o: RequestOptions = {}): Promise<T> {
    const inflight = this.inflight.signal;
    const budget = timeoutMs ?? this.opts.timeoutMs!;
    let deadline = 0;
    for (let attempt = 0; ; attempt++) {
      let err: unknown;
      try {
        const t0 = Date.now();
        // Read once: a first attempt gets its whole budget on the wire (and says so when it times out).
        if (attempt === 0) deadline = t0 + budget;
        await this.throttle(inflight);
        // The deadline bounds the wire, not the wait for a turn: a queue behind the limiter must not time
        // out requests that were never sent (client-go waits for its token before the request's timeout runs).
        const sent = Date.now();
        deadline += sent - t0;
        const answer = await this.send(method, path, body, contentType, gvr, Math.max(1, deadline - sent));
        if (answer.status >= 200 && answer.status < 300) return parseBody(answer.text) as T;
        err = errorOfAnswer(answer.status, answer.text, answer.retryAfter);
      } catch (e) {
        err = e;
      }
      const v = inflight.aborted ? TERMINAL : classifyFailure(method, err, attempt, o);
      if (v.kind === 'terminal' || Date.now() + v.afterMs >= deadline) throw err;
      await new Promise((r) => setTimeout(r, v.afterMs));
      if (inflight.aborted) throw err;
    }
  }

  /**
   * One attempt on the wire. Resolves the answer whatever its HTTP code; rejects only when there is none:
   * FencedError (a write refused before it was sent), DeadlineError (past `timeoutMs`, or cancelled by
   * abortInFlight), ConnectionError (refused, reset, cut off).
   */
  private async send(method: string, path: string, body: unknown, contentType: string, gvr: GVR | undefined, timeoutMs: number): Promise<Answer> {
    const write = WRITE_METHODS.has(method);
    const why = write ? this.fence?.() : undefined;
    if (why) {
      this.opts.observe?.(method, gvr, 0, 0);
      throw new FencedError(why, method, path);
    }
    const base = await this.requestOptions();
    const url = new URL(this.server + path);
    const t0 = performance.now();
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const headers: Record<string, string> = {
      ...((base.headers as Record<string, string>) ?? {}),
      Accept: 'application/json',
      'User-Agent': this.opts.userAgent ?? 'migration-controller',
    };
    if (payload !== undefined) {
      headers['Content-Type'] = contentType;
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    const mod = url.protocol === 'https:' ? https : http;
    const deadlineMs = timeoutMs;
    // The deadline and the in-flight cancel are wired by hand and undone when the request ends. A signal
    // combined by AbortSignal.timeout/any and handed to http.request outlives the request instead: the
    // timeout's timer cannot be cleared, and Node keeps a combined signal with an abort listener in a global
    // set until its timer fires — at a hundred requests a second, thousands of timers, signals and their
    // registry cells alive at any moment, for the whole 30 s deadline of each (seen in heap snapshots of the
    // soak benchmark, bench/heapdiff.ts).
    const inflight = this.inflight.signal;
    let timedOut = false;
    let cancelled = false;
    let cancel: () => void = () => undefined;
    const deadlineTimer = setTimeout(() => {
      timedOut = true;
      cancel();
    }, deadlineMs);
    const timeoutText = `request timed out after ${deadlineMs} ms: ${method} ${path}`;
    const answer = await new Promise<Answer>((resolve, reject) => {
      const req = mod.request(
        url,
        { method, headers, agent: this.agent, ca: base.ca, cert: base.cert, key: base.key, rejectUnauthorized: base.rejectUnauthorized, timeout: deadlineMs },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), retryAfter: res.headers['retry-after'] }));
          if (this.opts.onWarning) for (const w of res.headersDistinct.warning ?? []) this.opts.onWarning(w);
          res.on('error', reject);
        },
      );
      cancel = () => req.destroy(Object.assign(new Error('The operation was aborted'), { name: 'AbortError' }));
      const onAbort = (): void => {
        cancelled = true;
        cancel();
      };
      if (inflight.aborted) onAbort();
      else inflight.addEventListener('abort', onAbort, { once: true });
      req.once('close', () => inflight.removeEventListener('abort', onAbort));
      req.on('timeout', () => {
        timedOut = true;
        req.destroy(new Error(timeoutText));
      });
      req.on('error', reject);
      // Nothing is sent until the connection is up (headers go with the first write): a write is checked
      // against the fence at that moment, not when it was decided.
      const go = (): void => {
        const late = write ? this.fence?.() : undefined;
        if (late) {
          req.destroy(new FencedError(late, method, path));
          return;
        }
        if (payload !== undefined) req.write(payload);
        req.end();
      };
      req.once('socket', (sock) => {
        const tls = url.protocol === 'https:';
        if (tls ? this.ready.has(sock) : !sock.connecting) return go();
        sock.once(tls ? 'secureConnect' : 'connect', () => {
          if (tls) this.ready.add(sock);
          go();
        });
      });
    })
      .finally(() => clearTimeout(deadlineTimer))
      .catch((e: Error) => {
        this.opts.observe?.(method, gvr, 0, performance.now() - t0);
        if (e instanceof FencedError) throw e;
        if (timedOut) throw new DeadlineError(timeoutText);
        if (cancelled) throw new DeadlineError(`cancelled: ${method} ${path}: ${e.message}`);
        throw new ConnectionError(e.message);
      });
    this.opts.observe?.(method, gvr, answer.status, performance.now() - t0);
    return answer;
  }

  /**
   * The object, or undefined when the API server says it is gone (isNotFound). A path not served
   * (isNotServed: the kind not installed, or the server not ready for it) throws after the retries: it is
   * not an answer about the object.
   */
  async get<T extends KubeObject>(gvr: GVR, namespace: string | undefined, name: string, o: RequestOptions = {}): Promise<T | undefined> {
    try {
      return await this.request<T>('GET', resourcePath(gvr, namespace, name), undefined, undefined, gvr, undefined, o);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  async list<T extends KubeObject>(gvr: GVR, namespace?: string, o: ListOptions = {}): Promise<KubeList<T>> {
    const q = new URLSearchParams();
    if (o.labelSelector) q.set('labelSelector', o.labelSelector);
    if (o.fieldSelector) q.set('fieldSelector', o.fieldSelector);
    if (o.limit) q.set('limit', String(o.limit));
    if (o.continue) q.set('continue', o.continue);
    if (o.resourceVersion !== undefined) q.set('resourceVersion', o.resourceVersion);
    if (o.resourceVersionMatch) q.set('resourceVersionMatch', o.resourceVersionMatch);
    const qs = q.toString();
    return await this.request<KubeList<T>>('GET', resourcePath(gvr, namespace) + (qs ? `?${qs}` : ''), undefined, undefined, gvr, undefined, { probe: o.probe });
  }

  /**
   * Lists every page. `resourceVersion` chooses where the list is served from, as client-go's reflector
   * does (k8s.io/client-go tools/cache/reflector.go, ListAndWatch and relistResourceVersion):
   * - '' (or undefined): a consistent read from etcd, in pages of 500;
   * - '0': any version, served from the API server's watch cache (which ignores `limit` there; without a
   *   watch cache the pages come from etcd);
   * - a resourceVersion: not older than it (resourceVersionMatch=NotOlderThan), without a limit so the
   *   watch cache can serve it — a paginated list with a resourceVersion always goes to etcd.
   * A continuation page carries no resourceVersion (the API server refuses one beside `continue`).
   */
  async listAll<T extends KubeObject>(gvr: GVR, namespace?: string, o: { labelSelector?: string; fieldSelector?: string; resourceVersion?: string; pageSize?: number; transform?: (o: T) => T } = {}): Promise<KubeList<T>> {
    const items: T[] = [];
    let cont: string | undefined;
    let rv: string | undefined;
    const limit = o.pageSize ?? 500;
    const exact = o.resourceVersion !== undefined && o.resourceVersion !== '' && o.resourceVersion !== '0';
    const first: ListOptions = {
      labelSelector: o.labelSelector,
      fieldSelector: o.fieldSelector,
      ...(o.resourceVersion ? { resourceVersion: o.resourceVersion, resourceVersionMatch: 'NotOlderThan' as const } : {}),
      ...(exact ? {} : { limit }),
    };
    do {
      const page = await this.list<T>(gvr, namespace, cont ? { labelSelector: o.labelSelector, fieldSelector: o.fieldSelector, limit, continue: cont } : first);
      for (const it of page.items) items.push(o.transform ? o.transform(it) : it);
      cont = page.metadata.continue || undefined;
      rv = page.metadata.resourceVersion;
    } while (cont);
    return { items, metadata: { resourceVersion: rv } };
  }

  /** `timeoutMs`: this write's own deadline instead of the client's (a write an admission webhook may hold long). */
  async create<T extends KubeObject = KubeObject>(gvr: GVR, obj: KubeObject, o: { dryRun?: boolean; timeoutMs?: number } = {}): Promise<T> {
    const ns = obj.metadata?.namespace;
    const q = new URLSearchParams({ fieldManager: this.opts.fieldManager! });
    if (o.dryRun) q.set('dryRun', 'All');
    return await this.request<T>('POST', `${resourcePath(gvr, ns)}?${q}`, { ...obj, apiVersion: obj.apiVersion ?? gvrApiVersion(gvr), kind: obj.kind ?? gvr.kind }, undefined, gvr, o.timeoutMs);
  }

  /** Full update with optimistic concurrency (metadata.resourceVersion); `timeoutMs` as for create. */
  async replace<T extends KubeObject = KubeObject>(gvr: GVR, obj: KubeObject, subresource?: string, o: { timeoutMs?: number } = {}): Promise<T> {
    const q = new URLSearchParams({ fieldManager: this.opts.fieldManager! });
    return await this.request<T>('PUT', `${resourcePath(gvr, obj.metadata?.namespace, obj.metadata?.name, subresource)}?${q}`, obj, undefined, gvr, o.timeoutMs);
  }

  async patch<T extends KubeObject>(
    gvr: GVR,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    type: PatchType = 'merge',
    o: { subresource?: 'status'; force?: boolean; fieldManager?: string; timeoutMs?: number; dryRun?: boolean } = {},
  ): Promise<T> {
    const q = new URLSearchParams({ fieldManager: o.fieldManager ?? this.opts.fieldManager! });
    if (type === 'apply' && o.force) q.set('force', 'true');
    if (o.dryRun) q.set('dryRun', 'All');
    return await this.request<T>('PATCH', `${resourcePath(gvr, namespace, name, o.subresource)}?${q}`, patch, PATCH_CONTENT_TYPE[type], gvr, o.timeoutMs);
  }

  /** Deletes; resolves false when the object was already gone. */
  async delete(
    gvr: GVR,
    namespace: string | undefined,
    name: string,
    o: { propagationPolicy?: 'Foreground' | 'Background' | 'Orphan'; uid?: string; resourceVersion?: string } = {},
  ): Promise<boolean> {
    const body: Record<string, unknown> = { kind: 'DeleteOptions', apiVersion: 'v1' };
    if (o.propagationPolicy) body.propagationPolicy = o.propagationPolicy;
    if (o.uid || o.resourceVersion) body.preconditions = { ...(o.uid ? { uid: o.uid } : {}), ...(o.resourceVersion ? { resourceVersion: o.resourceVersion } : {}) };
    try {
      await this.request('DELETE', resourcePath(gvr, namespace, name), body, undefined, gvr);
      return true;
    } catch (e) {
      if (isNotFound(e)) return false;
      throw e;
    }
  }

  /**
   * Opens a watch stream; calls onEvent per event line. Resolves when the stream ends (server timeout or
   * abort); rejects with a typed error on an HTTP error or an ERROR event (410 Gone → ApiError 410; a
   * resourceVersion too large → isTooLargeResourceVersion), with ConnectionError when it cannot connect.
   */
  async watch(
    gvr: GVR,
    namespace: string | undefined,
    o: { resourceVersion?: string; labelSelector?: string; timeoutSeconds?: number; allowBookmarks?: boolean },
    onEvent: (type: string, obj: KubeObject) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    await this.throttle(signal ?? this.inflight.signal).catch(() => undefined);
    if (signal?.aborted) return;
    const base = await this.requestOptions();
    const q = new URLSearchParams({ watch: 'true' });
    if (o.resourceVersion) q.set('resourceVersion', o.resourceVersion);
    if (o.labelSelector) q.set('labelSelector', o.labelSelector);
    if (o.timeoutSeconds) q.set('timeoutSeconds', String(o.timeoutSeconds));
    if (o.allowBookmarks !== false) q.set('allowWatchBookmarks', 'true');
    const url = new URL(`${this.server}${resourcePath(gvr, namespace)}?${q}`);
    const mod = url.protocol === 'https:' ? https : http;
    this.opts.observe?.('WATCH', gvr, 200, 0);
    await new Promise<void>((resolve, reject) => {
      const req = mod.request(
        url,
        { method: 'GET', headers: { ...((base.headers as Record<string, string>) ?? {}), Accept: 'application/json', 'User-Agent': this.opts.userAgent ?? 'migration-controller' }, ca: base.ca, cert: base.cert, key: base.key, rejectUnauthorized: base.rejectUnauthorized, signal },
        (res) => {
          if ((res.statusCode ?? 0) >= 300) {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (text += c));
            res.on('end', () => reject(errorOfAnswer(res.statusCode ?? 0, text, res.headers['retry-after'])));
            // Broken off mid-body: without an 'error' listener the response would never settle.
            res.on('error', (e) => reject(e));
            return;
          }
          // One event is one line, and a large one (a 200-VM task's status) arrives in many chunks: each
          // chunk is searched for the line's end on its own, and the parts are joined once the line is
          // whole, so an event costs time linear in its size however it was split.
          let parts: string[] = [];
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            let from = 0;
            let i: number;
            while ((i = chunk.indexOf('\n', from)) >= 0) {
              parts.push(chunk.slice(from, i));
              from = i + 1;
              const line = parts.join('').trim();
              parts = [];
              if (!line) continue;
              let ev: { type: string; object: KubeObject };
              try {
                ev = JSON.parse(line);
              } catch {
                continue;
              }
              if (ev.type === 'ERROR') {
                const st = ev.object as unknown as { code?: number; reason?: string; message?: string; details?: unknown };
                req.destroy();
                reject(new ApiError(st.code ?? 500, st.reason ?? 'WatchError', st.message ?? 'watch error', st.details));
                return;
              }
              onEvent(ev.type, ev.object);
            }
            if (from < chunk.length) parts.push(chunk.slice(from));
          });
          res.on('end', () => resolve());
          res.on('error', (e) => reject(e));
          res.on('aborted', () => resolve());
        },
      );
      req.on('error', (e) => {
        if ((e as { name?: string }).name === 'AbortError') resolve();
        else reject(new ConnectionError(e.message));
      });
      req.end();
    });
  }

  /** Closes pooled connections. */
  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }
}

function parseBody(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

export function gvrApiVersion(gvr: GVR): string {
  return gvr.group ? `${gvr.group}/${gvr.version}` : gvr.version;
}
