// Forklift's Plan mutator (kubev2v/forklift@v2.11.5 and @v2.12.5, the same code at both tags:
// pkg/forklift-api/webhooks/mutating-webhook/mutators/plan-mutator.go, registered for Plan CREATE and UPDATE by
// operator/roles/forkliftcontroller/templates/api/mutatingwebhookconfiguration-plans.yml.j2, failurePolicy Fail).
//
// setTransferNetworkIfNotSet: a Plan without spec.transferNetwork whose destination Provider carries the
// annotation forklift.konveyor.io/defaultTransferNetwork naming a NetworkAttachmentDefinition that exists gets
// that attachment as its transfer network, and patchPayload replaces all of /spec with the Go-marshalled
// api.PlanSpec: every `omitempty` field at its zero value is gone, so each explicit `false` is dropped and the
// CRD's defaults (`kubebuilder:default:=true` on deleteVmOnFailMigration, useCompatibilityMode,
// preserveStaticIPs, migrateSharedDisks, runPreflightInspection) come back true.
// Not played: the populatorLabels annotation it adds on CREATE (metadata only; nothing of ours reads it).
import type { Ctx } from './context.ts';
import { type Obj, R, notFound } from './rest.ts';

export const DEFAULT_TRANSFER_NETWORK = 'forklift.konveyor.io/defaultTransferNetwork';

/** PlanSpec fields without `omitempty` (pkg/apis/forklift/v1beta1/plan.go): kept even at their zero value. */
const REQUIRED = new Set(['targetNamespace', 'provider', 'map', 'vms']);

const zero = (v: unknown): boolean =>
  v === false || v === '' || v === null || v === undefined || v === 0 || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0);

/**
 * What json.Marshal(api.PlanSpec) writes for `spec` as the API server decoded it: top-level omitempty fields
 * at their zero value dropped. Nested values lose their false/empty leaves the same way (the nested Go types'
 * fields are omitempty too, but for structs, which Go never omits; none of those changes what is compared). Pure.
 */
export function goMarshalPlanSpec(spec: Record<string, unknown>): Record<string, unknown> {
  const nested = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(nested);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== false && x !== '' && x !== null).map(([k, x]) => [k, nested(x)]));
    return v;
  };
  return Object.fromEntries(Object.entries(spec).filter(([k, v]) => REQUIRED.has(k) || !zero(v)).map(([k, v]) => [k, nested(v)]));
}

/**
 * ocp.GetNetworkNameAndNamespace (pkg/lib/client/openshift/util.go): `namespace/name` (the first two parts of a
 * split on "/"), or a bare name in the Plan's target namespace.
 */
export function transferNetworkRef(annotation: string, targetNamespace: string): { namespace: string; name: string } {
  if (!annotation.includes('/')) return { namespace: targetNamespace, name: annotation };
  const [namespace = '', name = ''] = annotation.split('/');
  return { namespace, name };
}

/**
 * The mutator's verdict on `plan`: a JSON patch replacing /spec, undefined when it changes nothing, or an error
 * text (a destination Provider that cannot be read refuses the Plan: util.ToAdmissionResponseError).
 * The NetworkAttachmentDefinition is looked up in this cluster: our destination is the host Provider
 * (IsHost: the local client); a remote destination's cluster is not played.
 */
export async function planMutation(ctx: Ctx, plan: Obj): Promise<{ patch?: unknown[]; error?: string }> {
  const spec = (plan.spec ?? {}) as Record<string, unknown>;
  if (spec.transferNetwork) return {};
  const dest = (spec.provider as { destination?: { name?: string; namespace?: string } } | undefined)?.destination;
  const provider = dest?.name && dest.namespace ? await ctx.rest.get(R.Provider, dest.namespace, dest.name) : undefined;
  if (!provider) return { error: `providers.forklift.konveyor.io "${dest?.name ?? ''}" not found` };
  const network = provider.metadata.annotations?.[DEFAULT_TRANSFER_NETWORK];
  if (!network) return {};
  const key = transferNetworkRef(network, String(spec.targetNamespace ?? ''));
  try {
    if (!(await ctx.rest.get(R.NetworkAttachmentDefinition, key.namespace, key.name))) return {};
  } catch (e) {
    if (notFound(e)) return {};
    return { error: (e as Error).message };
  }
  return { patch: [{ op: 'replace', path: '/spec', value: { ...goMarshalPlanSpec(spec), transferNetwork: key } }] };
}
