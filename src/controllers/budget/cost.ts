// What a VM that holds a slot still costs its ESXi host, read from its entry in the Migration's
// status.vms[] (plain Forklift JSON): the disks whose transfer has not completed, and each disk's bytes
// left. It follows Forklift's own cost() (kubev2v/forklift v2.11.5 and v2.12.5
// pkg/controller/plan/scheduler/vsphere/scheduler.go): nothing once the VM is past the copy, else its
// disks less those whose transfer task is Completed. Two departures, both for the NFC connections the
// budget protects: a guest-converting (virt-v2v) transfer costs its disks, not Forklift's flat 1
// (virt-v2v opens one VDDK connection per disk all the same), and only the steps that move bytes count
// a disk as finished (v2.12.5 also counts DiskAllocation, which opens nothing on the host).

/** Itinerary phases with every disk copied (scheduler.go cost(): CreateVM, PostHook, Completed; a cold
 *  raw copy also CopyingPaused, ConvertGuest, CreateGuestConversionPod). */
const PAST_COPY: ReadonlySet<string> = new Set(['CreateVM', 'PostHook', 'Completed', 'CopyingPaused', 'ConvertGuest', 'CreateGuestConversionPod']);

/** The pipeline steps that move a disk's bytes over NFC: DiskTransfer (VDDK via CDI), DiskTransferV2v (v2.12 virt-v2v). */
const TRANSFER_STEPS: ReadonlySet<string> = new Set(['DiskTransfer', 'DiskTransferV2v']);

/** Forklift's pipeline unit "MB" is MiB (it divides bytes by 1024*1024). */
const MIB = 1024 * 1024;

/** The parts of a Migration's status.vms[] entry this reads (forklift.konveyor.io/v1beta1 plan.VMStatus). */
export interface ForkliftVMStatus {
  phase?: string;
  pipeline?: Array<{ name?: string; tasks?: Array<{ phase?: string; progress?: { total?: number; completed?: number } }> }>;
}

export interface SlotCost {
  /** Disks still open or to be opened (CampaignVM.disksRemaining). */
  disksRemaining: number;
  /** Each disk's bytes left, in the pipeline's order (CampaignVM.disksLeft); absent when Forklift reports no disk tasks yet. */
  disksLeft?: number[];
}

/** A holder's cost from its Migration's VM status; `disks` is the VM's disk count (the inventory's). */
export function slotCost(vm: ForkliftVMStatus | undefined, disks: number): SlotCost {
  if (!vm) return { disksRemaining: disks };
  if (vm.phase && PAST_COPY.has(vm.phase)) return { disksRemaining: 0, disksLeft: [] };
  const step = (vm.pipeline ?? []).find((s) => s.name !== undefined && TRANSFER_STEPS.has(s.name));
  const tasks = step?.tasks ?? [];
  if (!tasks.length) return { disksRemaining: disks };
  const done = tasks.filter((t) => t.phase === 'Completed').length;
  const disksLeft = tasks.map((t) => (t.phase === 'Completed' ? 0 : Math.max(0, (t.progress?.total ?? 0) - (t.progress?.completed ?? 0)) * MIB));
  return { disksRemaining: Math.max(0, Math.min(disks, disks - done)), disksLeft };
}
