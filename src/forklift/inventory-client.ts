// The controller's client of Forklift's inventory service: its address and namespace from the config,
// the service's CA from the Secret Forklift's operator keeps (cached by resourceVersion, shared by every
// client built on one API client), and the controller's own bearer token, which the service checks.
import type https from 'node:https';
import type { ControllerConfig } from '../config.ts';
import { GVRs } from '../runtime/gvr.ts';
import type { KubeClient } from '../runtime/kube.ts';
import { CachedCA, InventoryClient } from './inventory.ts';
import type { SecretObject } from './provider.ts';

type InventoryConfig = Pick<ControllerConfig, 'inventoryURL' | 'forkliftNamespace' | 'inventoryCASecret'>;

/** The controller's own bearer token (kubeconfig token or in-cluster ServiceAccount token). */
export async function bearerToken(client: KubeClient): Promise<string | undefined> {
  const o: https.RequestOptions = {};
  await client.kc.applyToHTTPSOptions(o);
  const h = (o.headers ?? {}) as Record<string, string>;
  const auth = h.Authorization ?? h.authorization;
  return auth?.startsWith('Bearer ') ? auth.slice(7) : undefined;
}

// One cached inventory CA per client and Secret: reconcilers build an inventory client per pass, and
// the webhook one per process; all of them share the CA read.
const inventoryCAs = new WeakMap<KubeClient, Map<string, CachedCA>>();

/** The inventory CA of `cfg`, read through `client` and cached by the Secret's resourceVersion. */
export function inventoryCA(cfg: InventoryConfig, client: KubeClient): CachedCA {
  let byName = inventoryCAs.get(client);
  if (!byName) inventoryCAs.set(client, (byName = new Map()));
  const key = `${cfg.forkliftNamespace}/${cfg.inventoryCASecret}`;
  let ca = byName.get(key);
  if (!ca) {
    ca = new CachedCA({
      read: async () => {
        const s = await client.get<SecretObject>(GVRs.Secret, cfg.forkliftNamespace, cfg.inventoryCASecret);
        if (!s) return undefined;
        const d = s.data?.['ca.crt'];
        return { resourceVersion: s.metadata?.resourceVersion, pem: d ? Buffer.from(d, 'base64').toString('utf8') : undefined };
      },
    });
    byName.set(key, ca);
  }
  return ca;
}

/** An inventory client for `cfg`, authenticated as `client`'s identity. */
export function defaultInventoryClient(cfg: InventoryConfig, client: KubeClient): InventoryClient {
  const ca = inventoryCA(cfg, client);
  return new InventoryClient({
    baseURL: cfg.inventoryURL,
    forkliftNamespace: cfg.forkliftNamespace,
    ca: () => ca.get(),
    refreshCA: () => ca.refresh(),
    token: () => bearerToken(client),
  });
}
