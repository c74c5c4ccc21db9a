// Runs the admission server against a real API server for e2e tests, benchmarks and the demo: a
// certificate for 127.0.0.1, both webhook configurations pointing at https://127.0.0.1:<port>, scoped
// to namespaces carrying one label so other tests sharing the control plane are not affected.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { KubeClient } from '../runtime/kube.ts';
import { StaticCerts, generateCA, generateServingCert, type CertSource } from './certs.ts';
import { installWebhookConfigurations, uninstallWebhookConfigurations } from './config.ts';
import { startWebhookServer, type ClientAuth, type WebhookServer } from './server.ts';
import type { InventoryReader, TaskPlatform } from './validate-task.ts';
import { StaticKeyring, type KeyringSource } from '../credentials/keyring.ts';
import type { EgressPolicy } from '../preflight/egress.ts';

export interface TestWebhook {
  server: WebhookServer;
  url: string;
  caPEM: string;
  names: { validating: string; mutating: string };
  /** Namespaces labelled `<selector.key>=<selector.value>` are judged by this webhook. */
  selector: { key: string; value: string };
  stop(): Promise<void>;
}

export function testWebhookNames(id: string): { validating: string; mutating: string } {
  return { validating: `mc-e2e-validating-${id}`, mutating: `mc-e2e-early-${id}` };
}

export async function startTestWebhook(o: {
  client: KubeClient;
  inventory?: InventoryReader;
  /** Platform opt-ins (default none), as the controller's configuration gives them. */
  platform?: TaskPlatform;
  /** Key ring sealing passwords (default: a fresh in-memory key). */
  keyring?: KeyringSource;
  egress?: EgressPolicy;
  serviceCIDR?: string;
  certs?: CertSource;
  /** PEM the API server trusts; required with `certs`. */
  caPEM?: string;
  /** Skip installing the configurations (SelfManagedCerts installs its own bundle). */
  install?: boolean;
  logger?: Logger;
  readTimeoutMs?: number;
  cacheTtlMs?: number;
  port?: number;
  /** Suffix of the configuration names and the namespace label value (default random). */
  id?: string;
  /** Answer only callers presenting this CA's client certificate (the API server's). */
  clientAuth?: ClientAuth;
}): Promise<TestWebhook> {
  let certs = o.certs;
  let caPEM = o.caPEM ?? '';
  if (!certs) {
    const ca = generateCA({ commonName: 'e2e webhook CA', validityMs: 86_400_000 });
    const s = generateServingCert(ca, { commonName: '127.0.0.1', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], validityMs: 86_400_000 });
    certs = new StaticCerts({ cert: s.certPEM, key: s.keyPEM });
    caPEM = ca.certPEM;
  }
  const server = await startWebhookServer({
    port: o.port ?? 0,
    host: '127.0.0.1',
    client: o.client,
    certs,
    keyring: o.keyring ?? new StaticKeyring(),
    egress: o.egress,
    inventory: o.inventory,
    platform: o.platform,
    serviceCIDR: o.serviceCIDR,
    logger: o.logger,
    readTimeoutMs: o.readTimeoutMs,
    cacheTtlMs: o.cacheTtlMs,
    clientAuth: o.clientAuth,
  });
  const id = o.id ?? randomBytes(3).toString('hex');
  const selector = { key: 'webhook-e2e', value: id };
  const url = `https://127.0.0.1:${server.port}`;
  const names = testWebhookNames(id);
  if (o.install !== false) {
    await installWebhookConfigurations(o.client, { target: { url }, caBundlePEM: caPEM || undefined, names, namespaceSelector: { matchLabels: { [selector.key]: selector.value } } });
  }
  return {
    server,
    url,
    caPEM,
    names,
    selector,
    async stop() {
      await uninstallWebhookConfigurations(o.client, names);
      await server.close();
    },
  };
}
