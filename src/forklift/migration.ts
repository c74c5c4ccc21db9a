// Pure rendering of a Migration and reading one VM's run from a Plan's (or Migration's) status.
import type { VMImportTask } from '../api/types.ts';
import { LABEL_VM_ID } from '../api/labels.ts';
import type { KubeObject } from '../runtime/kube.ts';
import { FORKLIFT_API_VERSION, taskLabels } from './maps.ts';
import { migrationName } from './names.ts';
import { importMode, taskCutover } from './warm.ts';

/** Owned by its Plan (docs/forklift-contract.md): deleting the Plan takes the Migration with it. */
export function renderMigration(task: VMImportTask, vmId: string, plan: KubeObject): KubeObject {
  const md = plan.metadata ?? {};
  // A warm run's cutover (kubev2v/forklift@v2.11.5:pkg/apis/forklift/v1beta1/migration.go, spec.cutover).
  const cutover = importMode(task) === 'warm' ? taskCutover(task) : undefined;
  return {
    apiVersion: FORKLIFT_API_VERSION,
    kind: 'Migration',
    metadata: {
      name: migrationName(task.metadata.name ?? '', task.metadata.uid ?? '', vmId),
      namespace: md.namespace,
      labels: { ...taskLabels(task), [LABEL_VM_ID]: vmId },
      ownerReferences: [{ apiVersion: FORKLIFT_API_VERSION, kind: 'Plan', name: md.name ?? '', uid: md.uid ?? '', controller: true }],
    },
    spec: { plan: { name: md.name, namespace: md.namespace, uid: md.uid }, ...(cutover ? { cutover } : {}) },
  };
}

export interface PipelineStep {
  name: string;
  phase?: string;
  started?: string;
  completed?: string;
  /** MB as Forklift annotates it (annotations.unit: MB). */
  total?: number;
  completedUnits?: number;
  unit?: string;
  error?: { phase?: string; reasons?: string[] };
}

export interface VMMigration {
  id: string;
  phase?: string;
  started?: string;
  completed?: string;
  pipeline: PipelineStep[];
  /** Reasons of the VM's error and of any failed step/task, in order, de-duplicated. */
  errors: string[];
  /** The itinerary phase the VM's error was raised in (plan/vm.go AddError: `Error{Phase: r.Phase}`). */
  errorPhase?: string;
  succeeded: boolean;
  failed: boolean;
  canceled: boolean;
  /** Queued behind Forklift's in-flight limit (QUEUED_MESSAGE). */
  pending: boolean;
  transfer?: { totalBytes: number; doneBytes: number; phase?: string; started?: string; completed?: string };
  /** A warm run's precopy record (plan.VMStatus.warm), when Forklift has written one. */
  warm?: WarmRun;
}

/** kubev2v/forklift@v2.11.5:pkg/apis/forklift/v1beta1/plan/vm.go (Warm, Precopy). */
export interface WarmRun {
  successes: number;
  failures: number;
  consecutiveFailures: number;
  nextPrecopyAt?: string;
  precopies: Array<{ start?: string; end?: string; snapshot?: string }>;
}

/** Forklift's pipeline unit "MB" is MiB (it divides bytes by 1024*1024). */
export const MB = 1024 * 1024;

interface RawStep {
  name?: string;
  phase?: string;
  started?: string;
  completed?: string;
  progress?: { total?: number; completed?: number };
  annotations?: Record<string, string>;
  error?: { phase?: string; reasons?: string[] };
  tasks?: RawStep[];
}

interface RawVM {
  id?: string;
  phase?: string;
  started?: string;
  completed?: string;
  error?: { phase?: string; reasons?: string[] };
  conditions?: Array<{ type?: string; status?: string }>;
  pipeline?: RawStep[];
  warm?: { successes?: number; failures?: number; consecutiveFailures?: number; nextPrecopyAt?: string; precopies?: Array<{ start?: string; end?: string; snapshot?: string }> };
}

function vmsOf(obj: KubeObject | undefined): RawVM[] {
  const st = (obj?.status ?? {}) as { migration?: { vms?: unknown }; vms?: unknown };
  const a = st.migration?.vms ?? st.vms;
  return Array.isArray(a) ? (a as RawVM[]) : [];
}

/** Reads one VM's run from a Plan (`status.migration.vms[]`) or a Migration (`status.vms[]`). */
export function readVMMigration(obj: KubeObject | undefined, vmId: string): VMMigration | undefined {
  const vm = vmsOf(obj).find((v) => v.id === vmId);
  if (!vm) return undefined;
  const errors: string[] = [];
  const push = (rs: string[] | undefined): void => {
    for (const r of rs ?? []) if (r && !errors.includes(r)) errors.push(r);
  };
  push(vm.error?.reasons);
  const pipeline: PipelineStep[] = (vm.pipeline ?? []).map((s) => {
    push(s.error?.reasons);
    for (const t of s.tasks ?? []) push(t.error?.reasons);
    return {
      name: s.name ?? '',
      phase: s.phase,
      started: s.started,
      completed: s.completed,
      total: s.progress?.total,
      completedUnits: s.progress?.completed,
      unit: s.annotations?.unit,
      error: s.error,
    };
  });
  const conds = (vm.conditions ?? []).filter((c) => c.status !== 'False').map((c) => c.type);
  const dt = pipeline.find((s) => s.name === 'DiskTransfer');
  let transfer: VMMigration['transfer'];
  if (dt && dt.total !== undefined) {
    // Forklift annotates the unit "MB" and means MiB; a step without the annotation uses the same unit.
    const f = MB;
    transfer = { totalBytes: Math.round((dt.total ?? 0) * f), doneBytes: Math.round((dt.completedUnits ?? 0) * f), phase: dt.phase, started: dt.started, completed: dt.completed };
  }
  return {
    id: vmId,
    phase: vm.phase,
    started: vm.started,
    completed: vm.completed,
    pipeline,
    errors,
    errorPhase: vm.error?.phase,
    succeeded: conds.includes('Succeeded'),
    failed: conds.includes('Failed'),
    canceled: conds.includes('Canceled'),
    pending: conds.includes('Pending'),
    transfer,
    warm: vm.warm
      ? {
          successes: vm.warm.successes ?? 0,
          failures: vm.warm.failures ?? 0,
          consecutiveFailures: vm.warm.consecutiveFailures ?? 0,
          nextPrecopyAt: vm.warm.nextPrecopyAt,
          precopies: (vm.warm.precopies ?? []).map((p) => ({ start: p.start, end: p.end, snapshot: p.snapshot })),
        }
      : undefined,
  };
}

/** Cold raw-copy itinerary phases after which the source VM is powered off. */
const AFTER_POWER_OFF = ['CreateDataVolumes', 'CopyDisks', 'CopyingPaused', 'CreateVM', 'PostHook', 'Completed', 'ConvertGuest', 'CopyDisksVirtV2V', 'AllocateDisks', 'CreateGuestConversionPod', 'ConvertOpenstackSnapshot', 'WaitForDataVolumesStatus', 'WaitForPowerOn'];

export function sourcePoweredOff(m: VMMigration): boolean {
  if (m.phase && AFTER_POWER_OFF.includes(m.phase)) return true;
  const dt = m.pipeline.find((s) => s.name === 'DiskTransfer');
  return !!dt && (dt.phase === 'Running' || dt.phase === 'Completed' || !!dt.started);
}

export function transferDone(m: VMMigration): boolean {
  const dt = m.pipeline.find((s) => s.name === 'DiskTransfer');
  return dt?.phase === 'Completed' || m.succeeded;
}

/** The step currently running (or the last one reached). */
export function currentStep(m: VMMigration): string | undefined {
  const running = m.pipeline.find((s) => s.phase === 'Running');
  if (running) return running.name;
  const done = m.pipeline.filter((s) => s.phase === 'Completed');
  return done.length ? done[done.length - 1]!.name : undefined;
}


/**
 * What a VM queued by Forklift says. Forklift's limit counts untransferred disks per ESXi host, across the
 * Plans of one source Provider — not VMs (MAX_VM_INFLIGHT, default 20: kubev2v/forklift@v2.11.5 and
 * @v2.12.5:pkg/controller/plan/scheduler/vsphere/scheduler.go buildInFlight, cost, schedulable).
 */
export const QUEUED_MESSAGE = "waiting for a transfer slot on its ESXi host: Forklift copies at most 20 disks per ESXi host at once (its MAX_VM_INFLIGHT), counted across every task of this source";
