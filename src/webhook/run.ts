// The admission webhook as part of the controller process (ControllerConfig.webhookMode). Stateless:
// every replica serves it, leader or not.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ControllerConfig } from '../config.ts';
import { defaultInventoryClient } from '../forklift/inventory-client.ts';
import type { KubeClient } from '../runtime/kube.ts';
import { FileCerts, SelfManagedCerts, StaticCerts, generateCA, generateServingCert, type CertSource } from './certs.ts';
import { installWebhookConfigurations, uninstallWebhookConfigurations } from './config.ts';
import { startWebhookServer } from './server.ts';
import type { KeyringSource } from '../credentials/keyring.ts';

export interface ControllerWebhook {
  /** Base URL the webhook serves (https://host:port). */
  url: string;
  stop(): Promise<void>;
}

/** Local certificates live a day: a local run (demo, tests) never outlives them. */
const LOCAL_CERT_VALIDITY_MS = 24 * 3600_000;

export async function startControllerWebhook(cfg: ControllerConfig, client: KubeClient, log: Logger, keyring: KeyringSource): Promise<ControllerWebhook | undefined> {
  if (cfg.webhookMode === 'off') return undefined;
  const names = { validating: cfg.webhookValidatingConfiguration, mutating: cfg.webhookMutatingConfiguration };
  let certs: CertSource;
  let localCA: string | undefined;
  if (cfg.webhookMode === 'certManager') {
    certs = new FileCerts({ certFile: join(cfg.webhookCertDir, 'tls.crt'), keyFile: join(cfg.webhookCertDir, 'tls.key'), logger: log });
  } else if (cfg.webhookMode === 'selfManaged') {
    certs = new SelfManagedCerts({
      client,
      namespace: cfg.podNamespace,
      secretName: cfg.webhookSecretName,
      serviceName: cfg.webhookServiceName,
      validatingWebhookConfigurations: [names.validating],
      mutatingWebhookConfigurations: [names.mutating],
      logger: log,
    });
  } else {
    const ca = generateCA({ commonName: 'migration-controller local webhook CA', validityMs: LOCAL_CERT_VALIDITY_MS });
    const serving = generateServingCert(ca, { commonName: '127.0.0.1', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], validityMs: LOCAL_CERT_VALIDITY_MS });
    certs = new StaticCerts({ cert: serving.certPEM, key: serving.keyPEM });
    localCA = ca.certPEM;
  }
  // The API server's client CA, read at start: after that CA rotates, restart the replicas
  // (docs/security.md).
  const clientAuth = cfg.webhookClientCAFile ? { caPEM: readFileSync(cfg.webhookClientCAFile, 'utf8'), names: cfg.webhookClientNames } : undefined;
  const server = await startWebhookServer({
    port: cfg.webhookPort,
    clientAuth,
    host: cfg.webhookMode === 'local' ? '127.0.0.1' : undefined,
    client,
    certs,
    keyring,
    egress: cfg.egress,
    inventory: defaultInventoryClient(cfg, client),
    serviceCIDR: cfg.serviceCIDR,
    platform: { guestConversion: cfg.guestConversion },
    probeNamespace: cfg.podNamespace,
    logger: log,
  });
  const url = `https://${cfg.webhookMode === 'local' ? '127.0.0.1' : 'localhost'}:${server.port}`;
  if (cfg.webhookMode === 'local') {
    await installWebhookConfigurations(client, { target: { url }, caBundlePEM: localCA, names });
  }
  log.info({ mode: cfg.webhookMode, url }, 'admission webhook serving');
  return {
    url,
    async stop() {
      if (cfg.webhookMode === 'local') await uninstallWebhookConfigurations(client, names).catch(() => undefined);
      await server.close();
    },
  };
}
