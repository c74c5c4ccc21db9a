// The ValidatingWebhookConfiguration (and the small MutatingWebhookConfiguration) that route our two
// kinds to the admission server. The chart renders the same objects; tests install them with a URL.
import { GROUP, VERSION, PLURAL_SOURCE, PLURAL_TASK } from '../api/types.ts';
import { isNotFound, type KubeClient, type KubeObject } from '../runtime/kube.ts';
import { MUTATING_WEBHOOK_GVR, VALIDATING_WEBHOOK_GVR } from './certs.ts';

export const PATHS = {
  validateSource: '/validate-vmimportsource',
  validateTask: '/validate-vmimporttask',
  /**
   * Mutating webhooks run BEFORE the CRD's schema validation, validating ones after it. The CRD's
   * caCert pattern (-----BEGIN CERTIFICATE-----) and url pattern (^https://) would otherwise answer a
   * pasted thumbprint or an http:// URL with a bare regex; this endpoint denies those with the real
   * message first. It never patches.
   */
  earlySource: '/mutate-vmimportsource',
  /** The same for tasks: duplicate VM ids get our message, not the schema's "Duplicate value: map[…]". */
  earlyTask: '/mutate-vmimporttask',
} as const;

export const DEFAULT_NAMES = { validating: 'migration-controller-validating', mutating: 'migration-controller-early' } as const;

export type ClientConfigTarget = { url: string } | { service: { namespace: string; name: string; port?: number } };

export interface WebhookConfigOptions {
  /** Base URL (https://127.0.0.1:port) or a Service; paths are appended. */
  target: ClientConfigTarget;
  /** PEM bundle; omitted when something else injects it (cert-manager's cainjector, SelfManagedCerts). */
  caBundlePEM?: string;
  names?: { validating?: string; mutating?: string };
  /** Restrict to namespaces matching this selector (tests scope the webhook to their own namespaces). */
  namespaceSelector?: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
  /** The API server's wait for an answer; the contract is 5 s. */
  timeoutSeconds?: number;
  labels?: Record<string, string>;
}

function clientConfig(t: ClientConfigTarget, path: string, caBundlePEM?: string): Record<string, unknown> {
  const cc: Record<string, unknown> =
    'url' in t ? { url: `${t.url.replace(/\/$/, '')}${path}` } : { service: { namespace: t.service.namespace, name: t.service.name, port: t.service.port ?? 443, path } };
  if (caBundlePEM) cc.caBundle = Buffer.from(caBundlePEM, 'utf8').toString('base64');
  return cc;
}

function hook(name: string, plural: string, path: string, o: WebhookConfigOptions): Record<string, unknown> {
  return {
    name,
    admissionReviewVersions: ['v1'],
    clientConfig: clientConfig(o.target, path, o.caBundlePEM),
    rules: [{ apiGroups: [GROUP], apiVersions: [VERSION], operations: ['CREATE', 'UPDATE'], resources: [plural], scope: 'Namespaced' }],
    // Fail closed: an object admitted without these checks is exactly the late, obscure failure the
    // webhook exists to prevent.
    failurePolicy: 'Fail',
    sideEffects: 'None',
    timeoutSeconds: o.timeoutSeconds ?? 5,
    matchPolicy: 'Equivalent',
    ...(o.namespaceSelector ? { namespaceSelector: o.namespaceSelector } : {}),
  };
}

export function buildWebhookConfigurations(o: WebhookConfigOptions): { validating: KubeObject; mutating: KubeObject } {
  const labels = { 'app.kubernetes.io/name': 'migration-controller', 'app.kubernetes.io/component': 'webhook', ...(o.labels ?? {}) };
  return {
    validating: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: o.names?.validating ?? DEFAULT_NAMES.validating, labels },
      webhooks: [hook(`vmimportsource.${GROUP}`, PLURAL_SOURCE, PATHS.validateSource, o), hook(`vmimporttask.${GROUP}`, PLURAL_TASK, PATHS.validateTask, o)],
    },
    mutating: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: o.names?.mutating ?? DEFAULT_NAMES.mutating, labels },
      webhooks: [
        { ...hook(`early.vmimportsource.${GROUP}`, PLURAL_SOURCE, PATHS.earlySource, o), reinvocationPolicy: 'Never' },
        { ...hook(`early.vmimporttask.${GROUP}`, PLURAL_TASK, PATHS.earlyTask, o), reinvocationPolicy: 'Never' },
      ],
    },
  };
}

/** Creates or replaces both configurations (idempotent). */
export async function installWebhookConfigurations(client: KubeClient, o: WebhookConfigOptions): Promise<{ validating: string; mutating: string }> {
  const { validating, mutating } = buildWebhookConfigurations(o);
  for (const [gvr, obj] of [
    [VALIDATING_WEBHOOK_GVR, validating],
    [MUTATING_WEBHOOK_GVR, mutating],
  ] as const) {
    const name = obj.metadata!.name!;
    const cur = await client.get<KubeObject>(gvr, undefined, name);
    if (!cur) await client.create(gvr, obj);
    else await client.replace(gvr, { ...obj, metadata: { ...obj.metadata, resourceVersion: cur.metadata?.resourceVersion } });
  }
  return { validating: validating.metadata!.name!, mutating: mutating.metadata!.name! };
}

export async function uninstallWebhookConfigurations(client: KubeClient, names: { validating: string; mutating: string }): Promise<void> {
  for (const [gvr, name] of [
    [VALIDATING_WEBHOOK_GVR, names.validating],
    [MUTATING_WEBHOOK_GVR, names.mutating],
  ] as const) {
    try {
      await client.delete(gvr, undefined, name);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}
