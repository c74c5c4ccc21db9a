// Cozystack's lineage webhook, and the Flux origin labels it follows (SimOptions.lineage).
//
// A Cozystack platform labels every Pod, Secret, Service, PersistentVolumeClaim and Ingress of a tenant
// namespace with the application that owns it (cozystack/cozystack@v1.6.2:
// packages/system/lineage-controller-webhook/templates/mutatingwebhookconfiguration.yaml — CREATE and
// UPDATE, failurePolicy Fail, outside namespaces labelled cozystack.io/system=true and kube-system/default,
// only objects not yet labelled internal.cozystack.io/managed-by-cozystack). The webhook
// (internal/lineagecontrollerwebhook/webhook.go Handle) walks the object's owners (pkg/lineage/lineage.go
// WalkOwnershipGraph): through every ownerReference; an object without owners that carries Flux's
// `helm.toolkit.fluxcd.io/name` label leads to that HelmRelease, which the ApplicationDefinitions' release
// prefixes map to an application (vm-disk-<name> → VMDisk <name>, vm-instance-<name> → VMInstance
// <name>: packages/system/vm-disk-rd/cozyrds/vm-disk.yaml, vm-instance-rd/cozyrds/vm-instance.yaml). An
// object that reaches one gets computeLabels' labels; one that reaches none is admitted unchanged (and
// asked again on its next write). An error computing them refuses the write (admission.Errored 500).
//
// What the simulator plays of it: the walk over the kinds it keeps in its caches (claims, DataVolumes,
// VirtualMachines; an owner of another kind is skipped, as the webhook skips an owner it cannot fetch —
// none of the others here leads to an application), the HelmRelease of each application the simulated
// Cozystack installed (it has no HelmRelease objects: a release exists while its application does), and
// the origin labels Flux's helm-controller puts on every object of a release, which the simulated charts
// then carry. `down` plays the webhook's Service without endpoints: the API server cannot call it and,
// under failurePolicy Fail, refuses the write.
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import type { Ctx } from './context.ts';
import { type Obj, R } from './rest.ts';

export const FLUX_NAME_LABEL = 'helm.toolkit.fluxcd.io/name';
export const FLUX_NAMESPACE_LABEL = 'helm.toolkit.fluxcd.io/namespace';
export const MANAGED_LABEL = 'internal.cozystack.io/managed-by-cozystack';
export const APP_GROUP_LABEL = 'apps.cozystack.io/application.group';
export const APP_KIND_LABEL = 'apps.cozystack.io/application.kind';
export const APP_NAME_LABEL = 'apps.cozystack.io/application.name';
export const TENANT_RESOURCE_LABEL = 'internal.cozystack.io/tenantresource';

/** Flux's origin labels on an object of release `release` in `ns` (fluxcd/helm-controller's post-renderer). */
export function fluxOriginLabels(release: string, ns: string): Record<string, string> {
  return { [FLUX_NAME_LABEL]: release, [FLUX_NAMESPACE_LABEL]: ns };
}

/** The webhook's rules, selectors and policy as the chart registers them, for the simulator's configuration. */
export function lineageWebhook(clientConfig: unknown, namespaceOwner: { key: string; value: string }): Record<string, unknown> {
  return {
    name: 'lineage.cozystack.io',
    admissionReviewVersions: ['v1'],
    sideEffects: 'None',
    clientConfig,
    rules: [
      { operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods', 'secrets', 'services', 'persistentvolumeclaims'] },
      { operations: ['CREATE', 'UPDATE'], apiGroups: ['networking.k8s.io'], apiVersions: ['v1'], resources: ['ingresses'] },
    ],
    failurePolicy: 'Fail',
    // The chart's selector, and one term more: only this simulator's namespaces (test/sim/scope.ts), so a
    // simulator that died without removing its configuration blocks no other file's writes.
    namespaceSelector: {
      matchExpressions: [
        { key: 'cozystack.io/system', operator: 'NotIn', values: ['true'] },
        { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'default'] },
        { key: namespaceOwner.key, operator: 'In', values: [namespaceOwner.value] },
      ],
    },
    objectSelector: { matchExpressions: [{ key: MANAGED_LABEL, operator: 'DoesNotExist' }] },
    timeoutSeconds: 10,
  };
}

type AppRef = { group: string; kind: string; name: string };

/** The application a HelmRelease of the simulated Cozystack stands for, while that application exists. */
function releaseApp(ctx: Ctx, ns: string, release: string): AppRef | undefined {
  for (const [prefix, kind, inf] of [
    ['vm-disk-', 'VMDisk', ctx.inf.vmdisk],
    ['vm-instance-', 'VMInstance', ctx.inf.vminstance],
  ] as const) {
    if (release.startsWith(prefix) && inf?.get(ns, release.slice(prefix.length))) return { group: 'apps.cozystack.io', kind, name: release.slice(prefix.length) };
  }
  return undefined;
}

/** WalkOwnershipGraph over the cached kinds: the applications the object descends from, first found first. */
async function walk(ctx: Ctx, o: Obj, ns: string, visited: Set<string>): Promise<AppRef[]> {
  const id = `${o.kind ?? ''}/${o.metadata.name}`;
  if (visited.has(id)) return [];
  visited.add(id);
  const owners = o.metadata.ownerReferences ?? [];
  const out: AppRef[] = [];
  for (const ref of owners) {
    const res = ref.kind === 'DataVolume' ? R.DataVolume : ref.kind === 'PersistentVolumeClaim' ? R.PVC : ref.kind === 'VirtualMachine' ? R.VirtualMachine : undefined;
    if (!res) continue;
    const inf = res === R.DataVolume ? ctx.inf.dv : res === R.PVC ? ctx.inf.pvc : ctx.inf.vm;
    // The webhook reads live; the cache first, then the API server (an owner created a moment ago).
    const owner = inf?.get(ns, ref.name) ?? (await ctx.rest.get(res, ns, ref.name));
    if (owner) out.push(...(await walk(ctx, { ...owner, kind: owner.kind ?? ref.kind }, ns, visited)));
  }
  // An object with owners is not owned by an application directly.
  if (owners.length) return out;
  const release = o.metadata.labels?.[FLUX_NAME_LABEL];
  const app = release ? releaseApp(ctx, ns, release) : undefined;
  return app ? [app] : [];
}

export type LineageVerdict = { down: true } | { patch?: Operation[] };

/**
 * The webhook's answer for `obj` in `ns`: down, or the JSON patch of computeLabels' labels (none when the
 * object reaches no application). A PersistentVolumeClaim, Pod or Service matches no ApplicationDefinition
 * resource selector (getResourceSelectors names Secrets, Services and Ingresses; none of the simulated
 * applications lists one), so tenantresource is "false".
 */
export async function lineageMutation(ctx: Ctx, obj: Obj, ns: string, down: boolean): Promise<LineageVerdict> {
  if (down) return { down: true };
  const apps = await walk(ctx, obj, ns, new Set());
  const app = apps[0];
  if (!app) return {};
  const labels: Record<string, string> = { [MANAGED_LABEL]: 'true', [APP_GROUP_LABEL]: app.group, [APP_KIND_LABEL]: app.kind, [APP_NAME_LABEL]: app.name, [TENANT_RESOURCE_LABEL]: 'false' };
  // admission.PatchResponseFromRaw: the difference between the object as sent and as mutated.
  const mutated = { ...obj, metadata: { ...obj.metadata, labels: { ...(obj.metadata.labels ?? {}), ...labels } } };
  return { patch: fastJsonPatch.compare(obj, mutated) };
}
