// The simulator's own tiny REST layer over the real API server (it must never import controller code).
// Plain JSON objects; an informer is list + watch (re-list on 410), with an in-memory cache and handlers.
import https from 'node:https';
import * as k8s from '@kubernetes/client-node';

export interface Obj {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    generateName?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: OwnerRef[];
    deletionTimestamp?: string;
    creationTimestamp?: string;
    [k: string]: unknown;
  };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  spec?: any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  status?: any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [k: string]: any;
}

export interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface Res {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

const r = (group: string, version: string, plural: string, kind: string, namespaced = true): Res => ({ group, version, plural, kind, namespaced });

export const R = {
  Namespace: r('', 'v1', 'namespaces', 'Namespace', false),
  Secret: r('', 'v1', 'secrets', 'Secret'),
  Event: r('', 'v1', 'events', 'Event'),
  PVC: r('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim'),
  Pod: r('', 'v1', 'pods', 'Pod'),
  PV: r('', 'v1', 'persistentvolumes', 'PersistentVolume', false),
  StorageClass: r('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', false),
  CRD: r('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false),
  TokenReview: r('authentication.k8s.io', 'v1', 'tokenreviews', 'TokenReview', false),
  SubjectAccessReview: r('authorization.k8s.io', 'v1', 'subjectaccessreviews', 'SubjectAccessReview', false),
  ValidatingWebhookConfiguration: r('admissionregistration.k8s.io', 'v1', 'validatingwebhookconfigurations', 'ValidatingWebhookConfiguration', false),
  MutatingWebhookConfiguration: r('admissionregistration.k8s.io', 'v1', 'mutatingwebhookconfigurations', 'MutatingWebhookConfiguration', false),
  NetworkAttachmentDefinition: r('k8s.cni.cncf.io', 'v1', 'network-attachment-definitions', 'NetworkAttachmentDefinition'),
  Provider: r('forklift.konveyor.io', 'v1beta1', 'providers', 'Provider'),
  Host: r('forklift.konveyor.io', 'v1beta1', 'hosts', 'Host'),
  NetworkMap: r('forklift.konveyor.io', 'v1beta1', 'networkmaps', 'NetworkMap'),
  StorageMap: r('forklift.konveyor.io', 'v1beta1', 'storagemaps', 'StorageMap'),
  Plan: r('forklift.konveyor.io', 'v1beta1', 'plans', 'Plan'),
  Migration: r('forklift.konveyor.io', 'v1beta1', 'migrations', 'Migration'),
  DataVolume: r('cdi.kubevirt.io', 'v1beta1', 'datavolumes', 'DataVolume'),
  VirtualMachine: r('kubevirt.io', 'v1', 'virtualmachines', 'VirtualMachine'),
  VMDisk: r('apps.cozystack.io', 'v1alpha1', 'vmdisks', 'VMDisk'),
  VMInstance: r('apps.cozystack.io', 'v1alpha1', 'vminstances', 'VMInstance'),
} as const;

export function apiVersionOf(res: Res): string {
  return res.group ? `${res.group}/${res.version}` : res.version;
}

export class HttpError extends Error {
  readonly code: number;
  readonly reason: string;
  constructor(code: number, reason: string, message: string) {
    super(message);
    this.code = code;
    this.reason = reason;
  }
}
/**
 * The object is gone: a 404 whose Status says NotFound (k8s.io/apimachinery pkg/api/errors NewNotFound), as
 * kube-apiserver and aggregated servers answer for an object they do not have. A bare 404 ("404 page not
 * found", no Status) is not: see notServed.
 */
export const notFound = (e: unknown): boolean => e instanceof HttpError && e.code === 404 && e.reason === 'NotFound';
/**
 * The path is not served: a bare 404. The kind is not installed (a CRD installed later in the file), or
 * the API server is not ready for it (a kube-apiserver just restarted answers custom resources so until
 * its CRD informer syncs). It says nothing about an object, so it is never read as "deleted".
 */
export const notServed = (e: unknown): boolean => e instanceof HttpError && e.code === 404 && e.reason !== 'NotFound';
export const conflict = (e: unknown): boolean => e instanceof HttpError && e.code === 409;

function path(res: Res, ns?: string, name?: string, sub?: string): string {
  const base = res.group ? `/apis/${res.group}/${res.version}` : `/api/${res.version}`;
  const n = res.namespaced && ns ? `/namespaces/${encodeURIComponent(ns)}` : '';
  return `${base}${n}/${res.plural}${name ? `/${encodeURIComponent(name)}` : ''}${sub ? `/${sub}` : ''}`;
}

export class Rest {
  readonly server: string;
  private readonly kc: k8s.KubeConfig;
  private readonly agent: https.Agent;
  private base: https.RequestOptions = {};
  private ready: Promise<void>;
  /** Per object path: the last write made to it, settled (see inOrder). */
  private readonly writes = new Map<string, Promise<void>>();

  constructor(kubeconfigPath: string) {
    this.kc = new k8s.KubeConfig();
    this.kc.loadFromFile(kubeconfigPath);
    this.server = this.kc.getCurrentCluster()!.server.replace(/\/$/, '');
    this.agent = new https.Agent({ keepAlive: true, maxSockets: 32 });
    this.ready = this.kc.applyToHTTPSOptions(this.base).then(() => undefined);
  }

  /**
   * While kube-apiserver is down (a restart), a request is tried again rather than failed: the Forklift, CDI
   * and KubeVirt controllers played here run on controller-runtime, whose reconcile fails on such an error, is
   * requeued with backoff and redoes its step once the server answers (kubev2v/forklift@v2.11.5:
   * pkg/controller/plan/controller.go Reconcile returns the error; its steps are Ensure* and re-read what
   * exists, e.g. EnsureDataVolumes in pkg/controller/plan/kubevirt.go). Retried: a connection refused or a
   * server still starting (nothing was done, so any verb), and a GET whose connection broke. A write whose
   * connection broke is not retried here (it may have been applied); callers that create by generateName look
   * before creating again.
   */
  private async send(method: string, p: string, body: unknown, contentType: string, signal?: AbortSignal, onLine?: (line: string) => void): Promise<unknown> {
    if (onLine) return await this.sendOnce(method, p, body, contentType, signal, onLine);
    // An API server restart here takes up to ~30 s on a loaded machine; 90 s bounds a server that is gone.
    const deadline = Date.now() + 90_000;
    for (let delay = 200; ; delay = Math.min(delay * 2, 2_000)) {
      try {
        return await this.sendOnce(method, p, body, contentType, signal);
      } catch (e) {
        // Refused before anything was done: no connection, or a server still starting (kube-apiserver answers
        // "server is starting" until its post-start hooks have run).
        const refused = e instanceof HttpError && ((e.code === 0 && /ECONNREFUSED/.test(e.message)) || /server is starting/.test(e.message));
        const brokenRead = e instanceof HttpError && e.code === 0 && method === 'GET' && /ECONNRESET|socket hang up/.test(e.message);
        if (!(refused || brokenRead) || signal?.aborted || Date.now() + delay > deadline) throw e;
        // Unref'd: a simulator being torn down with its API server never waits this out.
        await new Promise((r) => setTimeout(r, delay).unref());
      }
    }
  }

  private async sendOnce(method: string, p: string, body: unknown, contentType: string, signal?: AbortSignal, onLine?: (line: string) => void): Promise<unknown> {
    await this.ready;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { ...((this.base.headers as Record<string, string>) ?? {}), Accept: 'application/json', 'User-Agent': 'cozystack-sim' };
    if (payload !== undefined) {
      headers['Content-Type'] = contentType;
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    return await new Promise((resolve, reject) => {
      const req = https.request(
        this.server + p,
        { method, headers, agent: onLine ? undefined : this.agent, ca: this.base.ca, cert: this.base.cert, key: this.base.key, signal, timeout: onLine ? 0 : 30_000 },
        (res) => {
          const status = res.statusCode ?? 0;
          res.setEncoding('utf8');
          let text = '';
          if (onLine && status < 300) {
            res.on('data', (c: string) => {
              text += c;
              let i: number;
              while ((i = text.indexOf('\n')) >= 0) {
                const line = text.slice(0, i).trim();
                text = text.slice(i + 1);
                if (line) onLine(line);
              }
            });
            res.on('end', () => resolve(undefined));
            res.on('aborted', () => resolve(undefined));
            res.on('error', () => resolve(undefined));
            return;
          }
          res.on('data', (c: string) => (text += c));
          // A response the server breaks off after its headers (killed mid-answer) never ends: with no
          // 'error' listener Node's IncomingMessage only emits 'aborted' and 'close', and the request would
          // wait forever — a Plan status write stuck so, with every later write queued behind it.
          res.on('error', (e) => reject(new HttpError(0, 'ConnectionError', `socket hang up: ${e.message} (response of ${method} ${p} cut off)`)));
          res.on('close', () => {
            if (!res.complete) reject(new HttpError(0, 'ConnectionError', `socket hang up (response of ${method} ${p} cut off)`));
          });
          res.on('end', () => {
            let parsed: { reason?: string; message?: string } | undefined;
            try {
              parsed = text ? JSON.parse(text) : undefined;
            } catch {
              parsed = undefined;
            }
            if (status >= 200 && status < 300) resolve(parsed);
            else reject(new HttpError(status, parsed?.reason ?? String(status), parsed?.message ?? text.slice(0, 300)));
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`timeout ${method} ${p}`)));
      req.on('error', (e) => {
        if ((e as { name?: string }).name === 'AbortError') resolve(undefined);
        else reject(new HttpError(0, 'ConnectionError', e.message));
      });
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  async get(res: Res, ns: string | undefined, name: string): Promise<Obj | undefined> {
    try {
      return (await this.send('GET', path(res, ns, name), undefined, '')) as Obj;
    } catch (e) {
      if (notFound(e)) return undefined;
      throw e;
    }
  }
  async list(res: Res, ns?: string): Promise<{ items: Obj[]; metadata: { resourceVersion: string } }> {
    return (await this.send('GET', path(res, ns), undefined, '')) as { items: Obj[]; metadata: { resourceVersion: string } };
  }
  async create(res: Res, obj: Omit<Obj, 'metadata'> & { metadata: Partial<Obj['metadata']> }): Promise<Obj> {
    return (await this.send('POST', path(res, obj.metadata.namespace), { apiVersion: apiVersionOf(res), kind: res.kind, ...obj }, 'application/json')) as Obj;
  }
  async createDryRun(res: Res, obj: Omit<Obj, 'metadata'> & { metadata: Partial<Obj['metadata']> }): Promise<Obj> {
    return (await this.send('POST', `${path(res, obj.metadata.namespace)}?dryRun=All`, { apiVersion: apiVersionOf(res), kind: res.kind, ...obj }, 'application/json')) as Obj;
  }
  async replace(res: Res, obj: Obj, sub?: string): Promise<Obj> {
    const p = path(res, obj.metadata.namespace, obj.metadata.name, sub);
    return (await this.inOrder(p, () => this.send('PUT', p, obj, 'application/json'))) as Obj;
  }
  async patch(res: Res, ns: string | undefined, name: string, patch: unknown, sub?: 'status'): Promise<Obj> {
    const p = path(res, ns, name, sub);
    return (await this.inOrder(p, () => this.send('PATCH', p, patch, 'application/merge-patch+json'))) as Obj;
  }

  /**
   * Writes to one object (its path, status apart) are sent one at a time, in the order they were made.
   * The simulated controllers write a status from timers and from their main flow at once: sent side by
   * side, on separate connections, two writes could be applied in the other order under load, and a blind
   * status patch made while a run still copied landed after the one that finished it. The Migration then
   * read Succeeded and, a moment later, running in CopyDisks again for good: the task reported
   * "DiskTransfer (CopyDisks)" and never took the handoff's next step (handoff-crash-early, "kill point
   * request-bind:0 not reached in 5 min", a full-suite run). The controllers played here run on
   * controller-runtime, which never runs two reconciles of one object at once, so their writes to an object
   * never overlap.
   */
  private inOrder<T>(p: string, write: () => Promise<T>): Promise<T> {
    const next = (this.writes.get(p) ?? Promise.resolve()).then(write, write);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.writes.set(p, settled);
    void settled.then(() => {
      if (this.writes.get(p) === settled) this.writes.delete(p);
    });
    return next;
  }
  async del(res: Res, ns: string | undefined, name: string, opts: { uid?: string } = {}): Promise<boolean> {
    const body: Record<string, unknown> = { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' };
    if (opts.uid) body.preconditions = { uid: opts.uid };
    try {
      await this.send('DELETE', path(res, ns, name), body, 'application/json');
      return true;
    } catch (e) {
      if (notFound(e) || conflict(e)) return false;
      throw e;
    }
  }
  /** Generic POST (TokenReview, SubjectAccessReview). */
  async post(res: Res, body: unknown): Promise<Obj> {
    return (await this.send('POST', path(res), body, 'application/json')) as Obj;
  }
  watch(res: Res, rv: string, onEvent: (type: string, obj: Obj) => void, signal: AbortSignal): Promise<unknown> {
    const q = new URLSearchParams({ watch: 'true', resourceVersion: rv, allowWatchBookmarks: 'true', timeoutSeconds: '300' });
    return this.send('GET', `${path(res)}?${q}`, undefined, '', signal, (line) => {
      let ev: { type: string; object: Obj };
      try {
        ev = JSON.parse(line);
      } catch {
        return;
      }
      onEvent(ev.type, ev.object);
    });
  }
  close(): void {
    this.agent.destroy();
  }
}

export type Handler = (type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: Obj, old?: Obj) => void;

export const keyOf = (o: { metadata: { namespace?: string; name: string } }): string => (o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name);

/** List + watch of one resource cluster-wide, with a cache; handlers run on every change. */
export class Informer {
  readonly res: Res;
  readonly cache = new Map<string, Obj>();
  private readonly rest: Rest;
  private readonly handlers: Handler[] = [];
  private readonly abort = new AbortController();
  private waiters = new Set<() => void>();
  synced: Promise<void>;
  private resolveSynced!: () => void;
  private stopped = false;

  /** Objects this informer never caches nor reports (another process's namespaces: test/sim/scope.ts). */
  private readonly visible: (o: Obj) => boolean;

  constructor(rest: Rest, res: Res, visible: (o: Obj) => boolean = () => true) {
    this.rest = rest;
    this.res = res;
    this.visible = visible;
    this.synced = new Promise((r) => (this.resolveSynced = r));
  }

  on(h: Handler): this {
    this.handlers.push(h);
    return this;
  }

  start(): this {
    void this.run();
    return this;
  }

  private emit(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: Obj, old?: Obj): void {
    for (const h of this.handlers) {
      try {
        h(type, obj, old);
      } catch (e) {
        console.error(`[sim] handler for ${this.res.kind} failed:`, e);
      }
    }
    for (const w of [...this.waiters]) w();
  }

  private async run(): Promise<void> {
    let rv = '';
    while (!this.stopped) {
      try {
        if (!rv) {
          const l = await this.rest.list(this.res);
          const seen = new Set<string>();
          for (const o of l.items) {
            o.apiVersion = apiVersionOf(this.res);
            o.kind = this.res.kind;
            if (!this.visible(o)) continue;
            const k = keyOf(o);
            seen.add(k);
            const old = this.cache.get(k);
            this.cache.set(k, o);
            if (!old) this.emit('ADDED', o);
            else if (old.metadata.resourceVersion !== o.metadata.resourceVersion) this.emit('MODIFIED', o, old);
          }
          for (const [k, o] of [...this.cache]) {
            if (!seen.has(k)) {
              this.cache.delete(k);
              this.emit('DELETED', o);
            }
          }
          rv = l.metadata.resourceVersion;
          this.resolveSynced();
        }
        let gone = false;
        await this.rest.watch(this.res, rv, (type, o) => {
          if (type === 'BOOKMARK') {
            rv = o.metadata.resourceVersion ?? rv;
            return;
          }
          if (type === 'ERROR') {
            gone = true;
            return;
          }
          rv = o.metadata.resourceVersion ?? rv;
          const k = keyOf(o);
          const old = this.cache.get(k);
          if (!old && !this.visible(o)) return;
          if (type === 'DELETED') {
            this.cache.delete(k);
            this.emit('DELETED', o, old);
          } else {
            this.cache.set(k, o);
            this.emit(old ? 'MODIFIED' : 'ADDED', o, old);
          }
        }, this.abort.signal);
        if (gone) rv = '';
      } catch (e) {
        if (this.stopped) return;
        // A CRD missing or not served yet (a bare 404) or a transient error: retry shortly from a fresh list.
        if (!notServed(e)) console.error(`[sim] informer ${this.res.kind}: ${(e as Error).message}`);
        rv = '';
        await new Promise((r) => setTimeout(r, 300));
      }
    }
  }

  get(ns: string | undefined, name: string): Obj | undefined {
    return this.cache.get(ns ? `${ns}/${name}` : name);
  }
  list(ns?: string): Obj[] {
    return [...this.cache.values()].filter((o) => !ns || o.metadata.namespace === ns);
  }

  /** Resolves when `pred` holds on the cache (re-checked on every event), or rejects when `signal` aborts. */
  waitUntil<T>(pred: () => T | undefined | false | null, signal?: AbortSignal): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (signal?.aborted) {
          this.waiters.delete(check);
          reject(new Error('aborted'));
          return;
        }
        const v = pred();
        if (v) {
          this.waiters.delete(check);
          // The listener goes too: a signal that outlives the wait (a run's, combined by AbortSignal.any)
          // keeps every listener — and what its closure holds — for as long as it lives (Node keeps a
          // combined signal with an abort listener in a global set until the listener is removed).
          signal?.removeEventListener('abort', check);
          resolve(v);
        }
      };
      this.waiters.add(check);
      signal?.addEventListener('abort', check, { once: true });
      check();
    });
  }

  stop(): void {
    this.stopped = true;
    this.abort.abort();
    for (const w of [...this.waiters]) w();
    this.waiters.clear();
  }
}

/**
 * A deduplicating work queue: a key is never processed twice at once (one added while it runs is run
 * again after), and up to `concurrency` keys run side by side — as the real controllers' workers do. One
 * worker per queue made the simulated CDI the bottleneck of the 800-task benchmark: every DataVolume
 * progress update queued behind every other.
 */
export class Queue {
  private readonly pending = new Set<string>();
  private readonly active = new Set<string>();
  private readonly again = new Set<string>();
  private workers = 0;
  private readonly fn: (key: string) => Promise<void>;
  private readonly concurrency: number;
  private stopped = false;
  constructor(fn: (key: string) => Promise<void>, concurrency = 4) {
    this.fn = fn;
    this.concurrency = concurrency;
  }
  add(key: string): void {
    if (this.stopped) return;
    if (this.active.has(key)) {
      this.again.add(key);
      return;
    }
    this.pending.add(key);
    this.pump();
  }
  private pump(): void {
    while (!this.stopped && this.workers < this.concurrency && this.pending.size) {
      const k = this.pending.values().next().value as string;
      this.pending.delete(k);
      this.active.add(k);
      this.workers++;
      void this.run(k);
    }
  }
  private async run(k: string): Promise<void> {
    try {
      await this.fn(k);
    } catch (e) {
      if (!this.stopped) {
        console.error(`[sim] reconcile ${k}: ${(e as Error).message}`);
        // Conflicts and transient errors: try again shortly.
        const t = setTimeout(() => this.add(k), 200);
        t.unref();
      }
    } finally {
      this.active.delete(k);
      this.workers--;
      if (this.again.delete(k)) this.pending.add(k);
      this.pump();
    }
  }
  stop(): void {
    this.stopped = true;
    this.pending.clear();
    this.again.clear();
  }
}
