// The VMImportTask objects `create` and `retry` write, and the decisions behind them: network mappings
// from the command line, cutover times, which failed VMs a retry takes and the retry's name. Pure.
import { API_VERSION, KIND_TASK, type TaskNetworkMapping, type TaskVM, type VMImportSourceStatus, type VMImportTask, type VMStatus } from '../api/types.ts';
import { TaskReason } from '../api/conditions.ts';
import { ANNOTATION_RETRY_OF, MAX_CHILD_NAME } from '../api/labels.ts';

export interface CreateOptions {
  name: string;
  namespace: string;
  source: string;
  vms: TaskVM[];
  storageClass?: string;
  networks?: TaskNetworkMapping[];
  warm?: boolean;
  cutover?: string;
  conversion?: boolean;
  annotations?: Record<string, string>;
}

export function buildTask(o: CreateOptions): VMImportTask {
  return {
    apiVersion: API_VERSION,
    kind: KIND_TASK,
    metadata: { name: o.name, namespace: o.namespace, ...(o.annotations ? { annotations: o.annotations } : {}) },
    spec: {
      sourceRef: { name: o.source },
      vms: o.vms,
      ...(o.storageClass ? { storageClass: o.storageClass } : {}),
      ...(o.networks?.length ? { networks: o.networks } : {}),
      ...(o.warm ? { mode: 'warm' as const } : {}),
      ...(o.cutover ? { cutover: o.cutover } : {}),
      ...(o.conversion ? { guestConversion: true } : {}),
    },
  };
}

/** `SRC=multus:NAD` or `SRC=pod` → a network mapping; a string saying what is wrong otherwise. */
export function parseNetwork(arg: string): TaskNetworkMapping | string {
  const eq = arg.indexOf('=');
  if (eq <= 0) return `--network ${arg}: expected SRC=multus:NAD or SRC=pod`;
  const source = arg.slice(0, eq);
  const target = arg.slice(eq + 1);
  if (target === 'pod') return { source, type: 'pod' };
  const m = /^multus:(.+)$/.exec(target);
  if (!m) return `--network ${arg}: the target must be pod or multus:NAD (a NetworkAttachmentDefinition in the task's namespace)`;
  return { source, type: 'multus', name: m[1]! };
}

/** RFC 3339 in seconds, as the task's cutover is written (`2026-12-03T22:00:00Z`). */
export function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A cutover argument: "now", or an RFC 3339 time; a string saying what is wrong otherwise. */
export function parseCutover(arg: string, now: number): { at: string } | string {
  if (arg === 'now') return { at: rfc3339(now) };
  // Bounded before parsing; the CRD's own pattern is the authority, this only catches typos early.
  if (arg.length > 40 || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(arg) || !Number.isFinite(Date.parse(arg))) {
    return `"${arg}" is not an RFC 3339 time (2026-12-03T22:00:00Z) nor "now"`;
  }
  return { at: arg };
}

/** The task's end, either way: Finished=True (or completedAt on a controller that predates it). */
export function finished(task: Pick<VMImportTask, 'status'>): boolean {
  return task.status?.conditions?.some((c) => c.type === 'Finished' && c.status === 'True') === true || !!task.status?.completedAt;
}

/** Every VM of the task succeeded (as the status reports each VM the spec names). */
export function allSucceeded(task: Pick<VMImportTask, 'spec' | 'status'>): boolean {
  const vms = task.status?.vms ?? [];
  return task.spec.vms.every((s) => vms.find((v) => v.id === s.id)?.phase === 'Succeeded');
}

// ---------------------------------------------------------------------------------------------------
// retry
// ---------------------------------------------------------------------------------------------------

/**
 * Failures a new task with the same spec cannot get past: it would fail the same way, so `retry` leaves
 * the VM out and says what to change. (Reasons: src/api/conditions.ts; fixes: README, troubleshooting.)
 * VMBlocked and VMNotFound are re-checked against the source's current inventory: fixed in vSphere since,
 * the VM is retried.
 */
export const NOT_RETRYABLE: Readonly<Record<string, string>> = {
  [TaskReason.VMBlocked]: 'the VM is Blocked by its readiness assessment: fix the concern in vSphere (kubectl vmimport vms SOURCE --blocked says which), then retry',
  [TaskReason.VMNotFound]: 'the source does not see the VM: check its id, or wait for the inventory to show it, then retry',
  [TaskReason.OutputExists]: 'a VMInstance or VMDisk of that name already exists: delete it, or import the VM under another name (kubectl vmimport create with a new task)',
  [TaskReason.InvalidOutputName]: 'the output names do not fit Cozystack\'s limits: import the VM under a shorter name (spec.vms[].name) in a new task',
  [TaskReason.DiskNotWarmCapable]: 'a disk (RDM, independent or shared) cannot be precopied: import the VM cold in a new task',
};

export interface RetryDecision {
  vm: TaskVM;
  retry: boolean;
  /** Why it is left out (absent when retried). */
  why?: string;
}

export interface RetryFacts {
  /** Output objects (VMInstance, VMDisks) that exist now, per VM id. */
  outputs: ReadonlyMap<string, readonly string[]>;
  /** The source's current inventory (for Blocked / not-found VMs fixed since). */
  inventory?: VMImportSourceStatus['inventory'];
}

/** Which VMs of a finished task a retry takes, and why each other one is left out. Pure. */
export function planRetry(task: Pick<VMImportTask, 'spec' | 'status'>, facts: RetryFacts): RetryDecision[] {
  const status = new Map<string, VMStatus>((task.status?.vms ?? []).map((v) => [v.id, v]));
  return task.spec.vms.map((vm): RetryDecision => {
    const st = status.get(vm.id);
    const label = st?.name ?? vm.name ?? vm.id;
    if (!st || st.phase !== 'Failed') return { vm, retry: false, why: st?.phase === 'Succeeded' ? `${label} (${vm.id}) succeeded` : `${label} (${vm.id}) has not failed (${st?.phase ?? 'no status'})` };
    const outs = facts.outputs.get(vm.id) ?? [];
    if (outs.length) return { vm, retry: false, why: `${label} (${vm.id}) failed (${st.reason ?? 'Failed'}) but its outputs exist: ${outs.join(', ')}; a retry would fail with OutputExists: delete them first, then retry` };
    const fix = st.reason ? NOT_RETRYABLE[st.reason] : undefined;
    if (fix) {
      const now = facts.inventory?.vms.find((v) => v.id === vm.id);
      const fixedSince = (st.reason === TaskReason.VMBlocked && now && now.verdict !== 'Blocked') || (st.reason === TaskReason.VMNotFound && now);
      if (!fixedSince) return { vm, retry: false, why: `${label} (${vm.id}) failed with ${st.reason}, which a retry cannot fix: ${fix}` };
    }
    return { vm, retry: true };
  });
}

/** A task name, `-retry-N` suffix and all, within the name limit every child name is derived under. */
const RETRY_SUFFIX = /-retry-(\d{1,6})$/;

/**
 * The retry's name: `<task>-retry-1`, or the next number when the task is itself a retry
 * (`x-retry-1` → `x-retry-2`) or when a name is taken; the base is cut so the name stays within 63
 * characters (a DNS label, which every name derived from the task's must fit).
 */
export function retryName(old: string, taken: ReadonlySet<string>): string {
  const m = RETRY_SUFFIX.exec(old);
  const base = m ? old.slice(0, m.index) : old;
  for (let n = m ? Number(m[1]) + 1 : 1; ; n++) {
    const suffix = `-retry-${n}`;
    const name = `${base.slice(0, MAX_CHILD_NAME - suffix.length).replace(/[-.]+$/, '')}${suffix}`;
    if (!taken.has(name)) return name;
  }
}

/** The retry task of `old`: only `vms`, with the same options and a back-link; a past cutover is dropped. */
export function retryTask(old: VMImportTask, name: string, vms: TaskVM[], now: number): { task: VMImportTask; notes: string[] } {
  const notes: string[] = [];
  let cutover = old.spec.cutover;
  if (cutover && Date.parse(cutover) <= now) {
    notes.push(`the old cutover (${cutover}) has passed and is not carried over: set one with kubectl vmimport cutover ${name}`);
    cutover = undefined;
  }
  const task = buildTask({
    name,
    namespace: old.metadata.namespace!,
    source: old.spec.sourceRef.name,
    vms,
    storageClass: old.spec.storageClass,
    networks: old.spec.networks,
    warm: old.spec.mode === 'warm',
    cutover,
    conversion: old.spec.guestConversion,
    annotations: { [ANNOTATION_RETRY_OF]: old.metadata.name! },
  });
  return { task, notes };
}
