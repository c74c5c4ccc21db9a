// Helpers for tests that play a Forklift user by hand against the simulator (no controller involved).
import type { Rest} from './rest.ts';
import { type Obj, R, type Res } from './rest.ts';
import type { WorldFixture } from './world.ts';

export { R, Rest, type Obj, type Res } from './rest.ts';

/** Forklift condition of `type` on an object (Forklift only writes status "True"). */
export function condition(o: Obj | undefined, type: string): { type: string; status: string; reason?: string; category?: string; message?: string; items?: string[] } | undefined {
  return (o?.status?.conditions ?? []).find((c: { type: string }) => c.type === type);
}

export const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** Labels that make Forklift's Secret webhook test the credentials (403 "Invalid credentials" on a 401). */
export const FORKLIFT_SECRET_LABELS = { createdForResourceType: 'providers', createdForProviderType: 'vsphere' };

/** The Secret a Forklift user writes for a vSphere Provider (both CA keys, as the contract recommends). */
export async function vsphereSecret(rest: Rest, ns: string, name: string, data: Record<string, string>, labels: Record<string, string> = {}): Promise<Obj> {
  return await rest.create(R.Secret, {
    metadata: { name, namespace: ns, labels },
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  });
}

export function goodSecretData(w: WorldFixture): Record<string, string> {
  return { user: w.user, password: w.password, cacert: w.caPEM, 'ca.crt': w.caPEM, url: w.url, insecureSkipVerify: 'false' };
}

export async function vsphereProvider(rest: Rest, ns: string, name: string, url: string, secret: string, vddkInitImage?: string): Promise<Obj> {
  return await rest.create(R.Provider, {
    metadata: { name, namespace: ns },
    spec: { type: 'vsphere', url, secret: { name: secret, namespace: ns }, settings: { sdkEndpoint: 'vcenter', ...(vddkInitImage ? { vddkInitImage } : {}) } },
  });
}

export async function hostProvider(rest: Rest, ns: string, name = 'host'): Promise<Obj> {
  return await rest.create(R.Provider, { metadata: { name, namespace: ns }, spec: { type: 'openshift', url: '', secret: {} } });
}

export interface UserSetup {
  source: Obj;
  destination: Obj;
  networkMap: Obj;
  storageMap: Obj;
}

/**
 * Everything a Forklift user writes before a Plan: Secret, source (vsphere, with a VDDK image) and destination
 * (openshift) Providers, a NetworkMap (every network → pod) and a StorageMap (every datastore → `storageClass`).
 */
export async function forkliftSetup(rest: Rest, ns: string, w: WorldFixture, o: { storageClass: string; volumeMode?: string; accessMode?: string; vddkInitImage?: string | null }): Promise<UserSetup> {
  await vsphereSecret(rest, ns, 'vsphere-creds', goodSecretData(w));
  const source = await vsphereProvider(rest, ns, 'vsphere', w.url, 'vsphere-creds', o.vddkInitImage === null ? undefined : (o.vddkInitImage ?? 'registry.example.com/vddk:8.0.3'));
  const destination = await hostProvider(rest, ns);
  const provider = { source: { name: 'vsphere', namespace: ns }, destination: { name: 'host', namespace: ns } };
  const networkMap = await rest.create(R.NetworkMap, {
    metadata: { name: 'net', namespace: ns },
    spec: { provider, map: w.networks.slice(0, 1).map((n) => ({ source: { id: n.id }, destination: { type: 'pod' } })).concat(w.networks.slice(1).map((n) => ({ source: { id: n.id }, destination: { type: 'ignored' } }))) },
  });
  const storageMap = await rest.create(R.StorageMap, {
    metadata: { name: 'sto', namespace: ns },
    spec: {
      provider,
      map: w.datastores.map((d) => ({ source: { id: d.id }, destination: { storageClass: o.storageClass, ...(o.volumeMode ? { volumeMode: o.volumeMode } : {}), accessMode: o.accessMode ?? 'ReadWriteOnce' } })),
    },
  });
  return { source, destination, networkMap, storageMap };
}

export async function createPlan(rest: Rest, ns: string, name: string, vms: Array<{ id?: string; name?: string }>, extra: Record<string, unknown> = {}): Promise<Obj> {
  return await rest.create(R.Plan, {
    metadata: { name, namespace: ns },
    spec: {
      provider: { source: { name: 'vsphere', namespace: ns }, destination: { name: 'host', namespace: ns } },
      map: { network: { name: 'net', namespace: ns }, storage: { name: 'sto', namespace: ns } },
      targetNamespace: ns,
      type: 'cold',
      warm: false,
      skipGuestConversion: true,
      targetPowerState: 'off',
      preserveStaticIPs: false,
      migrateSharedDisks: true,
      deleteVmOnFailMigration: true,
      vms,
      ...extra,
    },
  });
}

export async function createMigration(rest: Rest, plan: Obj, name = `${plan.metadata.name}-run`): Promise<Obj> {
  return await rest.create(R.Migration, {
    metadata: {
      name,
      namespace: plan.metadata.namespace,
      ownerReferences: [{ apiVersion: 'forklift.konveyor.io/v1beta1', kind: 'Plan', name: plan.metadata.name, uid: plan.metadata.uid! }],
    },
    spec: { plan: { name: plan.metadata.name, namespace: plan.metadata.namespace, uid: plan.metadata.uid } },
  });
}

export async function listIn(rest: Rest, res: Res, ns: string): Promise<Obj[]> {
  return (await rest.list(res, ns)).items;
}

/** Warning events whose involved object is `name` (kind `kind`) in `ns`. */
export async function eventsFor(rest: Rest, ns: string, kind: string, name: string): Promise<Obj[]> {
  return (await listIn(rest, R.Event, ns)).filter((e) => e.involvedObject?.kind === kind && e.involvedObject?.name === name);
}
