// A fault-injecting HTTPS proxy between a client and the real API server (node:https; never a mock of the
// API server: every request it does not fail is answered by the real one). It injects, per request:
// an error answer (500, 429 with Retry-After, 409 on writes) instead of forwarding, a connection reset in
// the middle of the real response, a latency spike before forwarding; and it cuts every watch stream after
// a while. Counters say what was injected.
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { makeCA, makeServingCert } from '../../sim/certs.ts';

export interface FaultRates {
  /** Share of non-watch requests answered with an error instead of being forwarded. */
  error: number;
  /** Share of forwarded non-watch requests whose connection is reset mid-response. */
  reset: number;
  /** Share of requests delayed by `latencyMs` before being forwarded. */
  latency: number;
  latencyMs: number;
  /** Every watch stream is cut after this long (0: never). */
  watchCutMs: number;
}

export const DEFAULT_RATES: FaultRates = { error: 0.05, reset: 0.02, latency: 0.02, latencyMs: 2_000, watchCutMs: 20_000 };
/** Nothing injected: the proxy only forwards (the fault-free run a faulty one is compared with). */
export const NO_FAULTS: FaultRates = { error: 0, reset: 0, latency: 0, latencyMs: 0, watchCutMs: 0 };

/**
 * A watch the API server can no longer serve from the client's resourceVersion (etcd compacted past it, or
 * a restarted API server's watch cache starts later) answers 200 and then one ERROR event carrying a Status
 * with code 410 ("too old resource version", the API conventions' "410 Gone" for watches); a list or get
 * from a compacted resourceVersion answers 410 outright. The proxy counts both as it forwards them.
 */
const GONE_IN_WATCH = /"type":"ERROR".{0,200}"code":410/s;

export interface FaultProxy {
  url: string;
  /** CA of the proxy's serving certificate (the client's kubeconfig trusts it). */
  caPEM: string;
  counts: Record<string, number>;
  /**
   * What the proxy saw of the API server, not injected by it: `upstreamError:<code>` (a request it could not
   * forward: the server down) and `upstreamAborted` (a response the server broke off, passed on as such).
   */
  observed: Record<string, number>;
  /** Requests received (the client's requests, injected answers included). */
  requests: number;
  /** Method, URL (path and query) and arrival time (performance.now()) of every request received, in order (the last 2,000). */
  log: Array<{ method: string; url: string; at: number }>;
  /**
   * Plays API Priority and Fairness shedding load: beyond `qps` requests a second (bursts of `burst`),
   * non-watch requests are answered 429 with Retry-After 1, as kube-apiserver answers a request its
   * priority level has no seat or queue room for (counted as `apf429`). undefined: no limit.
   */
  setServerLimit(limit: { qps: number; burst: number } | undefined): void;
  /**
   * Answers every request `fn` picks (method, path, query) with the answer it gives instead of forwarding
   * it (counted as `intercepted:<code>`), until set to undefined: a fault that lasts, such as an API server
   * whose etcd was restored and which calls every resourceVersion handed out before "too large". `text`
   * instead of `status` answers a plain-text body (kube-apiserver's bare "404 page not found" for a path it
   * does not serve yet).
   */
  setInterceptor(fn: ((r: { method: string; path: string; query: string; watch: boolean }) => Intercepted | undefined) | undefined): void;
  /** Ends every watch stream open now (an API server restarting under its watches). */
  cutWatches(): number;
  /** Changes the rates from now on (a fault-free phase and a faulty phase through the same proxy). */
  setRates(r: FaultRates): void;
  /**
   * Answers the next `times` requests matching `method` and `path` with `code` instead of forwarding them
   * (counted as `targeted:<code>`), whatever the rates: one chosen write failed, deterministically.
   */
  failNext(rule: TargetedFault): void;
  close(): Promise<void>;
}

/** An interceptor's answer: a Status (JSON), or a plain-text body. */
export type Intercepted = { code: number; status: Record<string, unknown>; asWatchEvent?: boolean } | { code: number; text: string };

/** kube-apiserver's answer for a path it does not serve (Go net/http NotFound): no Status body. */
export const BARE_404: Intercepted = { code: 404, text: '404 page not found\n' };

export interface TargetedFault {
  method: string;
  path: RegExp;
  code: 409 | 500 | 429 | 504;
  /** How many matching requests are failed (default 1). */
  times?: number;
  /** Only requests whose query string matches (e.g. /watch=true/, /resourceVersion=\d+/). */
  query?: RegExp;
  /** The Status answered (default: the code's usual one). */
  status?: Record<string, unknown>;
  /**
   * Answered as a watch is when it fails after it started: 200, then one ERROR event carrying the Status
   * (how kube-apiserver reports a watch it cannot serve from the asked resourceVersion).
   */
  asWatchEvent?: boolean;
}

/**
 * kube-apiserver's answer to a list or watch at a resourceVersion newer than it has (an etcd restored from
 * a backup; an HA API server behind the others): k8s.io/apiserver pkg/storage/errors.go
 * NewTooLargeResourceVersionError, a 504 Timeout with the cause ResourceVersionTooLarge.
 */
export const TOO_LARGE_RESOURCE_VERSION: Record<string, unknown> = {
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message: 'Timeout: Too large resource version: 900099999, current: 1234 (injected)',
  reason: 'Timeout',
  details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 },
  code: 504,
};

function status(code: number, reason: string, message: string): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });
}

export async function startFaultProxy(upstream: string, upstreamCA: string, initialRates: FaultRates = DEFAULT_RATES, rnd: () => number = Math.random): Promise<FaultProxy> {
  let rates = initialRates;
  const ca = makeCA('fault-proxy CA');
  const serving = makeServingCert(ca, 'fault-proxy', { ips: ['127.0.0.1'], dns: ['localhost'] });
  const target = new URL(upstream);
  const agent = new https.Agent({ keepAlive: true, ca: upstreamCA, maxSockets: 256 });
  const counts: Record<string, number> = {};
  const count = (k: string): void => {
    counts[k] = (counts[k] ?? 0) + 1;
  };
  const observed: Record<string, number> = {};
  const see = (k: string): void => {
    observed[k] = (observed[k] ?? 0) + 1;
  };
  const open = new Set<Duplex>();
  let requests = 0;
  const targeted: Array<TargetedFault & { times: number }> = [];
  const log: Array<{ method: string; url: string; at: number }> = [];
  let interceptor: Parameters<FaultProxy['setInterceptor']>[0];
  const watchSockets = new Set<Duplex>();
  let serverLimit: { qps: number; burst: number; tokens: number; at: number } | undefined;
  /** A seat for one request under the server limit (a token bucket), or false: shed with 429. */
  const seat = (): boolean => {
    if (!serverLimit) return true;
    const now = performance.now();
    serverLimit.tokens = Math.min(serverLimit.burst, serverLimit.tokens + ((now - serverLimit.at) / 1000) * serverLimit.qps);
    serverLimit.at = now;
    if (serverLimit.tokens < 1) return false;
    serverLimit.tokens -= 1;
    return true;
  };
  const errorAnswer = (res: ServerResponse, k: string): void => {
    if (k === '429') {
      res.writeHead(429, { 'Content-Type': 'application/json', 'Retry-After': '1' });
      res.end(status(429, 'TooManyRequests', 'the server has received too many requests and has asked us to try again later (injected)'));
    } else if (k === '504') {
      res.writeHead(504, { 'Content-Type': 'application/json' });
      res.end(status(504, 'Timeout', 'Timeout: request did not complete within the allotted timeout (injected)'));
    } else if (k === '409') {
      res.writeHead(409, { 'Content-Type': 'application/json' });
      res.end(status(409, 'Conflict', 'Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again (injected)'));
    } else {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(status(500, 'InternalError', 'Internal error occurred: injected'));
    }
  };

  const forward = (req: IncomingMessage, res: ServerResponse, o: { reset: boolean; cutMs: number; watch: boolean }): void => {
    /** The stream is being ended from this side (a watch cut, the client gone), not by the API server. */
    let endedHere = false;
    res.once('close', () => (endedHere = true));
    const up = https.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host }, agent },
      (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        // Headers go out at once, as kube-apiserver sends them (it flushes a watch's headers before its first
        // event) and as a load balancer passes them on. Node holds them until the first body byte otherwise:
        // a watch on a quiet kind then looks, to the client, like a connection that never answered, and a
        // watch cut turns into "socket hang up" instead of the end of a stream.
        res.flushHeaders();
        if (o.reset) {
          // Headers and the first bytes go out, then the connection dies under the client.
          ur.once('data', (chunk: Buffer) => {
            res.write(chunk.subarray(0, Math.max(1, chunk.length >> 1)));
            ur.destroy();
            res.socket?.destroy();
          });
          return;
        }
        if (o.watch) {
          if (ur.statusCode === 410) count('gone410');
          else ur.on('data', (chunk: Buffer) => {
            if (chunk.includes('"code":410') && GONE_IN_WATCH.test(chunk.toString('utf8'))) count('gone410');
          });
        } else if (ur.statusCode === 410) {
          count('gone410');
        }
        ur.pipe(res);
        // An upstream response that breaks off (kube-apiserver stopped or restarted under an open watch or a
        // list) must break off downstream too, as a TCP or HTTP load balancer does: pipe() ends `res` only on
        // the upstream's clean end, so without this the client's stream stays open, silent, forever.
        ur.once('close', () => {
          if (!ur.complete && !endedHere) {
            see('upstreamAborted');
            res.destroy();
          }
        });
        if (o.cutMs > 0) {
          const t = setTimeout(() => {
            endedHere = true;
            count('watchCut');
            ur.destroy();
            res.socket?.destroy();
          }, o.cutMs);
          ur.once('close', () => clearTimeout(t));
          res.once('close', () => clearTimeout(t));
        }
      },
    );
    up.on('error', (e: NodeJS.ErrnoException) => {
      // The API server unreachable (restarting): the client's connection is closed, as a load balancer does.
      see(`upstreamError:${e.code ?? 'other'}`);
      res.socket?.destroy();
    });
    res.on('close', () => up.destroy());
    req.pipe(up);
  };

  const server = https.createServer({ key: serving.keyPEM, cert: serving.certPEM }, (req, res) => {
    requests++;
    log.push({ method: req.method ?? '', url: req.url ?? '', at: performance.now() });
    if (log.length > 2_000) log.shift();
    const watch = /[?&]watch=(true|1)/.test(req.url ?? '');
    const write = req.method !== 'GET';
    const [reqPath, reqQuery = ''] = (req.url ?? '').split('?');
    const rule = targeted.find((t) => t.times > 0 && t.method === req.method && t.path.test(reqPath!) && (!t.query || t.query.test(reqQuery)));
    const caught = interceptor?.({ method: req.method ?? '', path: reqPath!, query: reqQuery, watch });
    if (caught) {
      count(`intercepted:${caught.code}`);
      req.resume();
      if ('text' in caught) {
        res.writeHead(caught.code, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
        res.end(caught.text);
      } else if (caught.asWatchEvent) {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(`${JSON.stringify({ type: 'ERROR', object: caught.status })}\n`);
      } else {
        res.writeHead(caught.code, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(caught.status));
      }
      return;
    }
    if (watch && req.socket) {
      const sock = req.socket;
      watchSockets.add(sock);
      res.once('close', () => watchSockets.delete(sock));
    }
    if (rule) {
      rule.times--;
      count(`targeted:${rule.code}`);
      req.resume();
      if (rule.asWatchEvent) {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(`${JSON.stringify({ type: 'ERROR', object: rule.status ?? JSON.parse(status(rule.code, 'InternalError', 'injected')) })}\n`);
      } else if (rule.status) {
        res.writeHead(rule.code, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(rule.status));
      } else {
        errorAnswer(res, String(rule.code));
      }
      return;
    }
    const go = (): void => {
      if (!watch && !seat()) {
        count('apf429');
        req.resume();
        res.writeHead(429, { 'Content-Type': 'application/json', 'Retry-After': '1' });
        res.end(status(429, 'TooManyRequests', 'Too many requests, please try again later. (injected: priority level at its limit)'));
        return;
      }
      if (!watch && rnd() < rates.error) {
        const kinds = write ? ['500', '429', '409'] : ['500', '429'];
        const k = kinds[Math.floor(rnd() * kinds.length)]!;
        count(k);
        req.resume();
        errorAnswer(res, k);
        return;
      }
      const reset = !watch && rnd() < rates.reset;
      if (reset) count('reset');
      forward(req, res, { reset, cutMs: watch ? rates.watchCutMs : 0, watch });
    };
    if (rnd() < rates.latency) {
      count('latency');
      setTimeout(go, rates.latencyMs);
    } else {
      go();
    }
  });
  server.on('connection', (s) => {
    open.add(s);
    s.on('close', () => open.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    caPEM: ca.certPEM,
    counts,
    observed,
    get requests() {
      return requests;
    },
    log,
    setInterceptor(fn) {
      interceptor = fn;
    },
    cutWatches() {
      const n = watchSockets.size;
      for (const sock of watchSockets) sock.destroy();
      watchSockets.clear();
      count('watchCut');
      return n;
    },
    setServerLimit(l) {
      serverLimit = l ? { ...l, tokens: l.burst, at: performance.now() } : undefined;
    },
    setRates(r: FaultRates) {
      rates = r;
    },
    failNext(rule: TargetedFault) {
      targeted.push({ times: 1, ...rule });
    },
    close: async () => {
      for (const s of open) s.destroy();
      agent.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
