// /healthz (the process answers), /readyz (caches of required kinds synced; leader or standby), /metrics.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface HealthSources {
  ready: () => boolean;
  /** 'leader' | 'standby' | 'disabled' (+ ', webhook serving') — reported on /readyz; a standby is ready too. */
  role: () => string;
  registry: Registry;
  /** When set, /metrics answers only a request it allows (its Authorization header); others get 401. */
  authorizeMetrics?: (authorization: string | undefined) => Promise<boolean>;
}

/**
 * Whether a replica is Ready: its caches are synced and, unless the webhook is off, its admission webhook
 * serves. Every replica, leader or standby, serves the webhook, and the webhook Service routes the API
 * server's calls to Ready replicas only; with the webhook failing closed, a replica counted Ready before
 * it serves would refuse tenants' creates.
 */
export function replicaReady(o: { webhookRequired: boolean; webhookServing: boolean; cachesSynced: boolean }): boolean {
  return (!o.webhookRequired || o.webhookServing) && o.cachesSynced;
}

export interface HealthServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function startHealthServer(port: number, src: HealthSources, host = '0.0.0.0'): Promise<HealthServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz' || path === '/livez') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
      return;
    }
    if (path === '/readyz') {
      const ok = src.ready();
      res.writeHead(ok ? 200 : 503, { 'Content-Type': 'text/plain' }).end(ok ? `ok (${src.role()})` : `not ready (${src.role()}): webhook or caches not up yet`);
      return;
    }
    if (path === '/metrics') {
      void (src.authorizeMetrics ? src.authorizeMetrics(req.headers.authorization) : Promise.resolve(true))
        .then(async (allowed) => {
          if (!allowed) return void res.writeHead(401, { 'Content-Type': 'text/plain' }).end('scrape with a bearer token allowed to get /metrics');
          const body = await src.registry.metrics();
          res.writeHead(200, { 'Content-Type': src.registry.contentType }).end(body);
        })
        .catch((e: Error) => res.writeHead(500).end(e.message));
      return;
    }
    res.writeHead(404).end('not found');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  const shownHost = host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    url: `http://${shownHost}:${actual}`,
    port: actual,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
