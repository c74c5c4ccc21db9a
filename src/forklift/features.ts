// Feature detection instead of version guessing: the installed Plan CRD's schema says which Plan fields this
// Forklift knows. A field it lacks is pruned by the API server without a word, and Forklift then runs the
// Plan on its own default — without `targetPowerState` a duplicate of a production VM could boot. Pure.
import type { KubeObject } from '../runtime/kube.ts';

/**
 * The Plan fields every Plan the controller renders depends on (src/forklift/plan.ts): the raw VDDK copy
 * (skipGuestConversion), the scaffolding VM never booting (targetPowerState), SATA/e1000e for unconverted
 * guests (useCompatibilityMode) and a failed VM's disks kept (deleteVmOnFailMigration).
 */
export const REQUIRED_PLAN_FIELDS = ['targetPowerState', 'skipGuestConversion', 'useCompatibilityMode', 'deleteVmOnFailMigration'] as const;

/**
 * The first Forklift release line whose Plan CRD has all of REQUIRED_PLAN_FIELDS: kubev2v/forklift v2.9.x has
 * only skipGuestConversion (v2.9.0) and useCompatibilityMode (v2.9.1); targetPowerState (commit 7d005af) and
 * deleteVmOnFailMigration (commit 63fead4) are in operator/config/crd/bases/forklift.konveyor.io_plans.yaml of
 * every v2.10.x tag from v2.10.4 on, and of v2.11.x/v2.12.x.
 */
export const MIN_FORKLIFT_VERSION = '2.10';

interface CRDVersion {
  name?: string;
  served?: boolean;
  schema?: { openAPIV3Schema?: { properties?: { spec?: { properties?: Record<string, unknown>; 'x-kubernetes-preserve-unknown-fields'?: boolean } } } };
}

/**
 * The REQUIRED_PLAN_FIELDS the installed Plan CRD (version v1beta1) does not declare. An empty list when all
 * are there, or when the spec keeps unknown fields (nothing is pruned then, and the schema cannot tell the
 * version); undefined when the CRD or its v1beta1 version is absent.
 */
export function missingPlanFields(crd: KubeObject | undefined): string[] | undefined {
  const versions = ((crd?.spec as { versions?: CRDVersion[] } | undefined)?.versions ?? []).filter((v) => v.name === 'v1beta1' && v.served !== false);
  const v = versions[0];
  if (!v) return undefined;
  const spec = v.schema?.openAPIV3Schema?.properties?.spec;
  if (!spec?.properties || spec['x-kubernetes-preserve-unknown-fields'] === true) return [];
  return REQUIRED_PLAN_FIELDS.filter((f) => !(f in spec.properties!));
}

/** The source's Ready=False message for a Forklift whose Plan lacks `missing`. */
export function forkliftTooOldMessage(missing: string[]): string {
  return (
    `The installed Forklift is too old: its Plan (forklift.konveyor.io/v1beta1) has no ${missing.join(', ')}. ` +
    `Imports need Forklift ${MIN_FORKLIFT_VERSION} or later; no Plan is created until Forklift is upgraded (the source reconnects by itself).`
  );
}
