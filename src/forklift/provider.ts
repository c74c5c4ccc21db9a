// Pure renders of the Forklift objects behind one VMImportSource: the projected credentials Secret, the
// source (vsphere) and destination (openshift = this cluster) Providers, and a Host + Secret per
// spec.hosts[] entry. Plain JSON (docs/forklift-contract.md): no typed model that could drop fields.
import { createHash } from 'node:crypto';
import {
  COZY_MANAGED_BY_VALUE,
  FORKLIFT_LABEL_PROVIDER_TYPE,
  FORKLIFT_LABEL_RESOURCE,
  FORKLIFT_LABEL_RESOURCE_TYPE,
  LABEL_COZY_MANAGED_BY,
  LABEL_HOST_ID,
  LABEL_MANAGED_BY,
  LABEL_SOURCE,
  LABEL_SOURCE_UID,
  MANAGED_BY_VALUE,
  LABEL_SOURCE_NAMESPACE,
  MAX_CHILD_NAME,
} from '../api/labels.ts';
import { API_VERSION, KIND_SOURCE, type OwnerReference, type SourceHost, type TLSCredentials, type VMImportSource } from '../api/types.ts';
import type { KubeObject } from '../runtime/kube.ts';
import { projectedSecretName } from './names.ts';

export const FORKLIFT_API_VERSION = 'forklift.konveyor.io/v1beta1';

/**
 * Annotation on the projected credentials Secret asking Forklift for a re-test (its value: when). Forklift
 * reconciles a Provider only on a spec change (pkg/controller/provider/predicate.go, both tags: an update
 * counts when status.observedGeneration < generation; an annotation on the Provider is filtered out) or a
 * change of the Secret it references (controller.go: the Secret watch; updateContainer re-tests when the
 * Secret's resourceVersion moved). After ConnectionAuthFailed it does not requeue at all, and a sealed
 * password projects to the same bytes every time: so the re-test is asked for through the Secret.
 */
export const ANNOTATION_RETEST = 'forklift.cozystack.io/retest-requested-at';

/**
 * A DNS-1123 label built from parts; longer than 63 → truncated with an 8-hex hash of the full name, so
 * two long source names never collide and the result stays a valid label value. Pure, deterministic.
 */
export function childName(...parts: string[]): string {
  const full = parts
    .join('-')
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
  if (full.length <= MAX_CHILD_NAME) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 8);
  return `${full.slice(0, MAX_CHILD_NAME - 9).replace(/-+$/, '')}-${hash}`;
}

export function sourceProviderName(source: string): string {
  return childName('vmimport', source);
}
export function destinationProviderName(source: string): string {
  return childName('vmimport', source, 'destination');
}
export function hostObjectName(source: string, hostId: string): string {
  return childName('vmimport', source, hostId);
}
/**
 * The name projected Secrets had before they were derived from the source's UID (namespace, name and a
 * 32-bit hash, cut to 63 characters: a tenant could search for a source name mapping onto another
 * tenant's Secret). Read only to clean up a Secret of this very source left under it.
 */
export function legacyProjectedSecretName(namespace: string, source: string, hostId?: string): string {
  const h = createHash('sha256').update(JSON.stringify([namespace, source, hostId ?? null])).digest('hex').slice(0, 8);
  return childName('vmimport', namespace, source, ...(hostId ? [hostId] : []), h);
}
/**
 * A projected Secret lives in the controller's namespace, not the tenant's (Forklift reads a Provider's
 * and a Host's Secret at spec.secret.namespace, so it need not sit beside them; docs/security.md), named
 * after the source's UID (src/forklift/names.ts).
 */
export function credentialsSecretName(src: VMImportSource): string {
  return projectedSecretName(src.metadata.uid!);
}
export function hostSecretName(src: VMImportSource, hostId: string): string {
  return projectedSecretName(src.metadata.uid!, hostId);
}

export function sourceOwnerRef(src: VMImportSource): OwnerReference {
  return { apiVersion: API_VERSION, kind: KIND_SOURCE, name: src.metadata.name!, uid: src.metadata.uid!, controller: true, blockOwnerDeletion: true };
}

/** Labels on every child of a source: ours, plus the source's name and UID (pruning by UID). */
export function sourceLabels(src: VMImportSource): Record<string, string> {
  return { [LABEL_MANAGED_BY]: MANAGED_BY_VALUE, [LABEL_SOURCE]: src.metadata.name!, [LABEL_SOURCE_UID]: src.metadata.uid! };
}

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

/** Secret `data` for a TLS credential (vSphere Provider or Host). Pure. */
export function credentialData(c: TLSCredentials, url?: string): Record<string, string> {
  const d: Record<string, string> = { user: b64(c.username), password: b64(c.password ?? ''), insecureSkipVerify: b64(c.insecureSkipVerify ? 'true' : 'false') };
  if (c.caCert) {
    // Forklift ≤2.11 reads `cacert`, 2.12+ `ca.crt`: write both.
    d.cacert = b64(c.caCert);
    d['ca.crt'] = b64(c.caCert);
  }
  if (url) d.url = b64(url);
  return d;
}

export interface SecretObject extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

/**
 * Labels of a projected Secret. No owner reference: owners cannot cross namespaces, so the source's
 * finalizer deletes it (found by these labels and its deterministic name).
 */
function projectedLabels(src: VMImportSource): Record<string, string> {
  return { ...sourceLabels(src), [LABEL_SOURCE_NAMESPACE]: src.metadata.namespace!, [LABEL_COZY_MANAGED_BY]: COZY_MANAGED_BY_VALUE };
}

/** The vCenter credentials Secret, in `secretsNamespace` (the controller's own). */
export function renderCredentialsSecret(src: VMImportSource, secretsNamespace: string): SecretObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: credentialsSecretName(src),
      namespace: secretsNamespace,
      labels: {
        ...projectedLabels(src),
        [FORKLIFT_LABEL_RESOURCE_TYPE]: 'providers',
        [FORKLIFT_LABEL_PROVIDER_TYPE]: 'vsphere',
      },
    },
    type: 'Opaque',
    data: credentialData(src.spec.credentials, src.spec.url),
  };
}

/**
 * The Secret of one ESXi host override, as Forklift's Secret webhooks want it
 * (kubev2v/forklift@v2.11.5:pkg/forklift-api/webhooks/validating-webhook/admitters/secret-admitter.go,
 * validateHostSecret/testConnectionToHost):
 * - label `createdForResource` = the host's inventory id: without it the Secret create is refused (400);
 * - data `user` (refused without it) and `password`: the ESXi account;
 * - data `provider` = the source Provider's name and `ip` = the address: the webhook looks that Provider up
 *   in the Secret's own namespace and, when it finds it loaded, logs in at https://<ip>/sdk and refuses the
 *   Secret (403, the login error) when that fails. Our Secrets live in the controller's namespace
 *   (docs/security.md), where no Provider is found: the test is skipped there, the Secret admitted, and a
 *   refused ESXi login surfaces through the Host's connection test instead.
 * `insecureSkipVerify` is always written: without it the mutating webhook reads the Provider's Secret
 * (…/mutating-webhook/mutators/secret-mutator.go, mutateHostSecret) and refuses the Secret while the
 * Provider does not exist.
 */
export function renderHostSecret(src: VMImportSource, h: SourceHost, secretsNamespace: string): SecretObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: hostSecretName(src, h.id),
      namespace: secretsNamespace,
      labels: {
        ...projectedLabels(src),
        [LABEL_HOST_ID]: h.id,
        [FORKLIFT_LABEL_RESOURCE_TYPE]: 'hosts',
        [FORKLIFT_LABEL_RESOURCE]: h.id,
        [FORKLIFT_LABEL_PROVIDER_TYPE]: 'vsphere',
      },
    },
    type: 'Opaque',
    data: { ...credentialData(h.credentials), provider: b64(sourceProviderName(src.metadata.name!)), ip: b64(h.address) },
  };
}

export function renderSourceProvider(src: VMImportSource, vddkImage: string, secretsNamespace: string): KubeObject {
  const ns = src.metadata.namespace!;
  return {
    apiVersion: FORKLIFT_API_VERSION,
    kind: 'Provider',
    metadata: {
      name: sourceProviderName(src.metadata.name!),
      namespace: ns,
      labels: sourceLabels(src),
      ownerReferences: [sourceOwnerRef(src)],
    },
    spec: {
      type: 'vsphere',
      url: src.spec.url,
      // Forklift reads it at this namespace (forklift@v2.11.5:pkg/controller/provider/validation.go
      // validateSecret, pkg/controller/plan/context/migration.go Source.build).
      secret: { name: credentialsSecretName(src), namespace: secretsNamespace },
      settings: { vddkInitImage: vddkImage, sdkEndpoint: 'vcenter' },
    },
  };
}

/**
 * Forklift's Plan mutator, when the destination Provider carries this annotation, sets the Plan's
 * transferNetwork by replacing /spec with a Go-marshalled copy that omits every false value; the CRD then
 * defaults deleteVmOnFailMigration, useCompatibilityMode and preserveStaticIPs back to true
 * (kubev2v/forklift@v2.11.5 and @v2.12.5: pkg/forklift-api/webhooks/mutating-webhook/mutators/plan-mutator.go
 * setTransferNetworkIfNotSet, patchPayload). Our destination Provider never carries it.
 */
export const DEFAULT_TRANSFER_NETWORK_ANNOTATION = 'forklift.konveyor.io/defaultTransferNetwork';

export function renderDestinationProvider(src: VMImportSource): KubeObject {
  return {
    apiVersion: FORKLIFT_API_VERSION,
    kind: 'Provider',
    metadata: {
      name: destinationProviderName(src.metadata.name!),
      namespace: src.metadata.namespace,
      labels: sourceLabels(src),
      ownerReferences: [sourceOwnerRef(src)],
    },
    // An openshift Provider with an empty url is "this cluster" (Provider.IsHost, kubev2v/forklift@v2.11.5:
    // pkg/apis/forklift/v1beta1/provider.go). `secret` is still required by the CRD (ProviderSpec.Secret is an
    // ObjectReference without omitempty): an empty reference, which validateSecret skips for the host provider.
    spec: { type: 'openshift', url: '', secret: {} },
  };
}

export function renderHost(src: VMImportSource, h: SourceHost, secretsNamespace: string): KubeObject {
  const ns = src.metadata.namespace!;
  return {
    apiVersion: FORKLIFT_API_VERSION,
    kind: 'Host',
    metadata: {
      name: hostObjectName(src.metadata.name!, h.id),
      namespace: ns,
      labels: { ...sourceLabels(src), [LABEL_HOST_ID]: h.id },
      ownerReferences: [sourceOwnerRef(src)],
    },
    spec: {
      id: h.id,
      provider: { name: sourceProviderName(src.metadata.name!), namespace: ns },
      ipAddress: h.address,
      // forklift@v2.11.5:pkg/controller/host/validation.go validateSecret and
      // pkg/controller/plan/adapter/vsphere/builder.go hostSecret read it at this namespace.
      secret: { name: hostSecretName(src, h.id), namespace: secretsNamespace },
    },
  };
}

/** True when `actual` already carries everything `desired` says (labels, annotations, owners, spec/data). Pure. */
export function needsUpdate(desired: KubeObject & { spec?: unknown; data?: unknown; type?: unknown }, actual: KubeObject & { spec?: unknown; data?: unknown }): boolean {
  const dm = desired.metadata ?? {};
  const am = actual.metadata ?? {};
  for (const [k, v] of Object.entries(dm.labels ?? {})) if (am.labels?.[k] !== v) return true;
  for (const [k, v] of Object.entries(dm.annotations ?? {})) if (am.annotations?.[k] !== v) return true;
  if (dm.ownerReferences && JSON.stringify((am.ownerReferences ?? []).map((o) => o.uid)) !== JSON.stringify(dm.ownerReferences.map((o) => o.uid))) return true;
  if ('spec' in desired && JSON.stringify(sortKeys(desired.spec)) !== JSON.stringify(sortKeys(actual.spec))) return true;
  if ('data' in desired && JSON.stringify(sortKeys(desired.data ?? {})) !== JSON.stringify(sortKeys(actual.data ?? {}))) return true;
  return false;
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)).map(([k, x]) => [k, sortKeys(x)]));
  return v;
}

/** `actual` updated with `desired`'s labels, annotations, owner references and spec/data (keeps the rest). Pure. */
export function mergeDesired<T extends KubeObject>(desired: T, actual: T): T {
  const out = structuredClone(actual) as T & { spec?: unknown; data?: unknown };
  const md = out.metadata ?? (out.metadata = {});
  md.labels = { ...(md.labels ?? {}), ...(desired.metadata?.labels ?? {}) };
  if (desired.metadata?.annotations) md.annotations = { ...(md.annotations ?? {}), ...desired.metadata.annotations };
  // Our children have exactly one owner, the source: a child left by an earlier source of the same name
  // (other UID) is adopted, never left with two controller references (which the API server rejects).
  if (desired.metadata?.ownerReferences) md.ownerReferences = structuredClone(desired.metadata.ownerReferences);
  const d = desired as T & { spec?: unknown; data?: unknown };
  if ('spec' in d) out.spec = structuredClone(d.spec);
  if ('data' in d) out.data = structuredClone(d.data);
  return out;
}
