// Pure rendering of a per-VM Forklift Plan, and reading its verdict. Forklift only ever writes
// `status: "True"` conditions; "not ready" is the absence of Ready plus some blocker (docs/forklift-contract.md).
import type { VMImportTask } from '../api/types.ts';
import { LABEL_VM_ID } from '../api/labels.ts';
import type { KubeObject } from '../runtime/kube.ts';
import { importMode } from './warm.ts';
import { FORKLIFT_API_VERSION, taskLabels, taskOwnerReference, type ProviderRefs, type Ref } from './maps.ts';
import { planName } from './names.ts';

export interface PlanInput {
  task: VMImportTask;
  vmId: string;
  providers: ProviderRefs;
  networkMap: Ref;
  storageMap: Ref;
  /** preserveStaticIPs (preserveStaticIPsFor); false when absent. */
  staticIPs?: boolean;
}

/**
 * Whether a Plan keeps the guests' static IPs: only with guest conversion (virt-v2v writes them into the
 * guest: kubev2v/forklift@v2.11.5:pkg/controller/plan/adapter/vsphere/builder.go PodEnvironment) and only when
 * every network of the task maps to Multus. A NIC on the pod network gets its address from the pod network,
 * and the vSphere address written into the guest leaves it unreachable there (Forklift only warns,
 * NetMapPreservingIPsOnPodNetwork). The task's NetworkMap covers all its VMs, so one VM on the pod network
 * turns it off for the task. Without conversion nothing reads the field. Pure.
 */
export function preserveStaticIPsFor(convert: boolean, networkMap: KubeObject | undefined): boolean {
  const entries = ((networkMap as { spec?: { map?: Array<{ destination?: { type?: string } }> } } | undefined)?.spec?.map ?? []);
  return convert && entries.length > 0 && entries.every((e) => e.destination?.type === 'multus');
}

/**
 * The Plan's preserveStaticIPs: the task's spec.preserveStaticIPs when it converts and says, else `rule`
 * (preserveStaticIPsFor, from its NetworkMap). Without conversion always false: nothing reads it. Pure.
 */
export function staticIPsOf(task: VMImportTask, rule: boolean | undefined): boolean {
  if (task.spec.guestConversion !== true) return false;
  return typeof task.spec.preserveStaticIPs === 'boolean' ? task.spec.preserveStaticIPs : rule === true;
}

export function renderPlan(input: PlanInput): KubeObject {
  const { task, vmId } = input;
  const ns = task.metadata.namespace ?? '';
  const convert = task.spec.guestConversion === true;
  return {
    apiVersion: FORKLIFT_API_VERSION,
    kind: 'Plan',
    metadata: {
      name: planName(task.metadata.name ?? '', task.metadata.uid ?? '', vmId),
      namespace: ns,
      labels: { ...taskLabels(task), [LABEL_VM_ID]: vmId },
      ownerReferences: [taskOwnerReference(task)],
    },
    // Written as plain JSON with every boolean explicit: typed clients drop `false`, and Forklift then
    // applies its own default (true) — deleteVmOnFailMigration=true deletes a failed VM's disks (2.12+).
    spec: {
      provider: {
        source: { name: input.providers.source.name, namespace: input.providers.source.namespace },
        destination: { name: input.providers.destination.name, namespace: input.providers.destination.namespace },
      },
      map: {
        network: { name: input.networkMap.name, namespace: input.networkMap.namespace },
        storage: { name: input.storageMap.name, namespace: input.storageMap.namespace },
      },
      targetNamespace: ns,
      // A warm plan precopies with changed block tracking until the Migration's cutover
      // (kubev2v/forklift@v2.11.5:pkg/apis/forklift/v1beta1/plan.go, Type supersedes Warm; IsWarm reads either).
      type: importMode(task) === 'warm' ? 'warm' : 'cold',
      // Forklift before 2.8 reads `warm` instead of `type`.
      warm: importMode(task) === 'warm',
      // Raw VDDK copy by default: no virt-v2v, so nothing on the transfer path needs privileges. With
      // spec.guestConversion (a platform opt-in, docs/conversion.md) virt-v2v copies and converts the guest
      // itself: a cold vSphere plan with migrateSharedDisks and conversion takes the v2v transfer path
      // (kubev2v/forklift@v2.11.5:pkg/apis/forklift/v1beta1/plan.go, ShouldUseV2vForTransfer).
      skipGuestConversion: !convert,
      // The scaffolding VM must never boot: a second copy of a live production VM on the network.
      targetPowerState: 'off',
      // A failed VM keeps its disks for diagnosis; we clean up ourselves on task deletion.
      deleteVmOnFailMigration: false,
      // Default-true booleans, written explicitly (see above). preserveStaticIPs acts only through virt-v2v,
      // and only for guests whose VMware Tools report their IPs (the inventory's guest networks): others
      // get Forklift's VMMissingGuestIPs warning (kubev2v/forklift@v2.11.5:
      // pkg/controller/plan/adapter/vsphere/builder.go PodEnvironment, validator.go StaticIPs). Set only when
      // every NIC maps to Multus (preserveStaticIPsFor), unless the task chooses (spec.preserveStaticIPs).
      preserveStaticIPs: staticIPsOf(task, input.staticIPs),
      migrateSharedDisks: true,
      // Unconverted guests have no virtio drivers: SATA disks / e1000e NICs. A converted guest has them,
      // and Forklift ignores this field then (virtio always; plan.go UseCompatibilityMode): false says so.
      useCompatibilityMode: !convert,
      // The preflight inspection runs virt-v2v (libguestfs) before a warm copy; this controller runs cold
      // plans, where Forklift never inspects (plan.go ShouldRunPreflightInspection).
      runPreflightInspection: false,
      vms: [{ id: vmId }],
    },
  };
}

export interface ForkliftCondition {
  type: string;
  status?: string;
  reason?: string;
  category?: string;
  message?: string;
  suggestion?: string;
  items?: string[];
  lastTransitionTime?: string;
}

export function conditionsOf(obj: KubeObject | undefined): ForkliftCondition[] {
  const c = (obj?.status as { conditions?: unknown } | undefined)?.conditions;
  return Array.isArray(c) ? (c as ForkliftCondition[]).filter((x) => x && typeof x.type === 'string' && x.status !== 'False') : [];
}

export interface PlanVerdict {
  /** Forklift's Ready condition is present. */
  ready: boolean;
  /** Critical/Error conditions: they block the Plan. */
  blockers: ForkliftCondition[];
  /** Advisory terminal/progress conditions. */
  executing: boolean;
  succeeded: boolean;
  failed: boolean;
  canceled: boolean;
  /** Blockers as one message, Forklift's words and items verbatim. */
  message?: string;
}

export function describeCondition(c: ForkliftCondition): string {
  let s = `${c.type}: ${c.message ?? c.reason ?? ''}`.trim();
  if (c.items && c.items.length) s += ` [${c.items.join(', ')}]`;
  if (c.suggestion) s += ` (${c.suggestion})`;
  return s;
}

export function readPlanVerdict(plan: KubeObject | undefined): PlanVerdict {
  const conds = conditionsOf(plan);
  const has = (t: string): boolean => conds.some((c) => c.type === t);
  const blockers = conds.filter((c) => c.category === 'Critical' || c.category === 'Error');
  return {
    ready: has('Ready'),
    blockers,
    executing: has('Executing'),
    succeeded: has('Succeeded'),
    failed: has('Failed'),
    canceled: has('Canceled'),
    message: blockers.length ? blockers.map(describeCondition).join('; ') : undefined,
  };
}

/**
 * Where the Plan as stored differs from the Plan as rendered: every leaf of the rendered spec (dotted path,
 * array items by index) whose stored value is missing or different. Fields the API server or Forklift added
 * (defaults of fields we do not write) do not count. Pure. Two ways this is not empty on a real cluster:
 * Forklift's Plan mutator replaced /spec with a Go-marshalled copy that omits every false value, and the CRD
 * defaults turned them true — it does so whenever the destination Provider carries
 * forklift.konveyor.io/defaultTransferNetwork (kubev2v/forklift@v2.11.5 and @v2.12.5:
 * pkg/forklift-api/webhooks/mutating-webhook/mutators/plan-mutator.go setTransferNetworkIfNotSet,
 * patchPayload); or a Forklift whose CRD lacks a field pruned it (the ForkliftTooOld case, here per Plan).
 */
export function planDrift(rendered: KubeObject, stored: KubeObject | undefined): string[] {
  const out: string[] = [];
  const walk = (want: unknown, got: unknown, path: string): void => {
    if (want !== null && typeof want === 'object') {
      if (got === null || typeof got !== 'object' || Array.isArray(want) !== Array.isArray(got)) {
        out.push(path);
        return;
      }
      const w = want as Record<string, unknown>;
      const g = got as Record<string, unknown>;
      for (const k of Object.keys(w)) walk(w[k], g[k], `${path}.${k}`);
      if (Array.isArray(want) && (got as unknown[]).length !== want.length) out.push(`${path}.length`);
      return;
    }
    if (want !== got) out.push(path);
  };
  walk((rendered as { spec?: unknown }).spec, (stored as { spec?: unknown } | undefined)?.spec, 'spec');
  return out;
}

/** The failure message for a Plan stored otherwise than rendered (planDrift's paths, values shown). */
export function planDriftMessage(paths: string[], rendered: KubeObject, stored: KubeObject | undefined): string {
  const get = (o: unknown, path: string): unknown => path.split('.').slice(1).reduce<unknown>((x, k) => (x && typeof x === 'object' ? (x as Record<string, unknown>)[k] : undefined), (o as { spec?: unknown } | undefined)?.spec);
  const shown = paths.slice(0, 8).map((p) => `${p}: written ${JSON.stringify(get(rendered, p)) ?? 'absent'}, stored ${JSON.stringify(get(stored, p)) ?? 'absent'}`);
  return `Forklift stored the migration Plan otherwise than it was written (${shown.join('; ')}${paths.length > 8 ? `; and ${paths.length - 8} more` : ''}), so no migration was started: a default turned true (deleteVmOnFailMigration deletes a failed VM's disks, preserveStaticIPs writes the source's IPs into the guest). Forklift's Plan mutator does this when the destination Provider carries the annotation forklift.konveyor.io/defaultTransferNetwork, and an older Forklift drops fields it does not know; ask the platform operator to remove the annotation or upgrade Forklift, then create a new task`;
}
