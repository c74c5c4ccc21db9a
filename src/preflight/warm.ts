// Warm-import preflight: the facts of Forklift's inventory VM that make a warm (changed-block-tracking)
// transfer impossible, refused before any Forklift object exists, in Forklift's own words plus ours.
// Pure. Upstream (kubev2v/forklift@v2.11.5):
// - pkg/controller/provider/web/vsphere/vm.go: the VM resource (`changeTrackingEnabled`, `snapshot`, `disks`)
// - pkg/controller/provider/model/vsphere/model.go: Disk (`rdm`, `mode`, `shared`, `changeTrackingEnabled`,
//   `bus`, `controllerKey`, `unitNumber`)
// - pkg/controller/plan/validation.go: the Plan conditions VMMissingChangedBlockTracking and VMHasSnapshots
//   (Critical: a warm Plan carrying them never runs)
// - pkg/controller/plan/adapter/vsphere/validator.go: ChangeTrackingEnabled, HasSnapshot, SharedDisks
// - validation/policies/io/konveyor/forklift/vmware/{changed_block_tracking,changed_block_tracking_per_disk,
//   snapshot,rdm_disk,disk_mode}.rego: the inventory concerns.
import { TaskReason } from '../api/conditions.ts';

export interface WarmDiskLike {
  file?: string;
  rdm?: boolean;
  /** persistent, independent_persistent, independent_nonpersistent, … (vSphere diskMode). */
  mode?: string;
  shared?: boolean;
  changeTrackingEnabled?: boolean;
  bus?: string;
  controllerKey?: number;
  unitNumber?: number;
}

export interface WarmVMLike {
  name?: string;
  changeTrackingEnabled?: boolean;
  /** The VM's current snapshot: `{kind: 'VirtualMachineSnapshot', id: 'snapshot-N'}`, or empty. */
  snapshot?: { kind?: string; id?: string };
  disks?: WarmDiskLike[];
}

export interface WarmBlocker {
  reason: typeof TaskReason.ChangeTrackingDisabled | typeof TaskReason.SnapshotsPresent | typeof TaskReason.DiskNotWarmCapable;
  message: string;
}

const COLD_INSTEAD = 'or import it cold (a new task without spec.mode: warm)';

/**
 * The device key Forklift's per-disk CBT concern names (`scsi0:1`): bus, controller index (controllerKey
 * modulo 100, as changed_block_tracking_per_disk.rego computes it) and unit number.
 */
export function diskDeviceKey(d: WarmDiskLike): string | undefined {
  if (!d.bus || d.controllerKey === undefined || d.unitNumber === undefined) return undefined;
  return `${d.bus}${d.controllerKey - Math.floor(d.controllerKey / 100) * 100}:${d.unitNumber}`;
}

function fileName(d: WarmDiskLike, i: number): string {
  return d.file ? `"${d.file}"` : `disk ${i}`;
}

/**
 * Why this VM cannot be imported warm, first blocker first (CBT, snapshots, disks), or an empty list.
 * Absent facts are not guessed: only `false` (as Forklift's inventory serves it) blocks on CBT.
 */
export function warmBlockers(vm: WarmVMLike): WarmBlocker[] {
  const out: WarmBlocker[] = [];
  const name = vm.name ? `"${vm.name}"` : 'the VM';
  const disks = vm.disks ?? [];

  const offDisks = disks.map((d, i) => ({ d, i })).filter(({ d }) => d.changeTrackingEnabled === false);
  if (vm.changeTrackingEnabled === false || (offDisks.length > 0 && vm.changeTrackingEnabled !== undefined)) {
    const keys = offDisks.map(({ d, i }) => diskDeviceKey(d) ?? `disk ${i}`);
    const perDisk = (keys.length ? keys : ['scsi0:0']).map((k) => `-e ${k}.ctkEnabled=TRUE`).join(' ');
    const forklift =
      vm.changeTrackingEnabled === false
        ? 'Changed Block Tracking (CBT) has not been enabled on some VM. This feature is a prerequisite for VM warm migration.'
        : `${keys.map((k) => `Disk - ${k} does not have CBT enabled`).join('; ')}: Changed Block Tracking (CBT) has not been enabled for this device. This feature is a prerequisite for VM warm migration.`;
    out.push({
      reason: TaskReason.ChangeTrackingDisabled,
      message:
        `changed block tracking (CBT) is not enabled on VM ${name}${keys.length ? ` (disks ${keys.join(', ')})` : ''}, and a warm import copies only the blocks CBT reports changed. ` +
        `Enable it in vSphere: set the VM's advanced parameters ctkEnabled=TRUE and <disk>.ctkEnabled=TRUE for every disk ` +
        `(govc vm.change -vm ${name} -e ctkEnabled=TRUE ${perDisk}), then power-cycle the VM or create and delete a snapshot so it takes effect; ` +
        `once the source's inventory shows it, create a new task, ${COLD_INSTEAD}. Forklift says: ${forklift}`,
    });
  }

  if (vm.snapshot?.id || vm.snapshot?.kind === 'VirtualMachineSnapshot') {
    out.push({
      reason: TaskReason.SnapshotsPresent,
      message:
        `VM ${name} has snapshots (current ${vm.snapshot.id ? `"${vm.snapshot.id}"` : 'snapshot'}); a warm import takes and removes its own snapshots each precopy and cannot start from a VM that already has some. ` +
        `Consolidate or delete the VM's snapshots in vSphere (Snapshots > Delete all), then create a new task, ${COLD_INSTEAD}. ` +
        'Forklift says: VM has pre-existing snapshots which are incompatible with warm migration.',
    });
  }

  const rdm = disks.map((d, i) => ({ d, i })).filter(({ d }) => d.rdm);
  const independent = disks.map((d, i) => ({ d, i })).filter(({ d }) => d.mode === 'independent_persistent' || d.mode === 'independent_nonpersistent');
  const shared = disks.map((d, i) => ({ d, i })).filter(({ d }) => d.shared);
  const parts: string[] = [];
  const said: string[] = [];
  if (rdm.length) {
    parts.push(`raw device mappings (${rdm.map(({ d, i }) => fileName(d, i)).join(', ')}): remove them before the import and reattach the devices afterwards`);
    said.push('Raw Device Mapped disk detected: RDM disks are not currently supported by Migration Toolkit for Virtualization. The VM cannot be migrated unless the RDM disks are removed. You can reattach them to the VM after migration.');
  }
  if (independent.length) {
    parts.push(`independent disks (${independent.map(({ d, i }) => `${fileName(d, i)} ${d.mode}`).join(', ')}), which snapshots leave out: change them to Dependent mode with the VM powered off`);
    said.push("Independent disk detected: Independent disks cannot be transferred using recent versions of VDDK. The VM cannot be migrated unless disks are changed to 'Dependent' mode in VMware.");
  }
  if (shared.length) {
    parts.push(`shared (multi-writer) disks (${shared.map(({ d, i }) => fileName(d, i)).join(', ')}): import this VM cold`);
    said.push('The shared disks cannot be used with warm migration');
  }
  if (parts.length) {
    out.push({
      reason: TaskReason.DiskNotWarmCapable,
      message: `VM ${name} has disks a warm import cannot copy: ${parts.join('; ')}; then create a new task. Forklift says: ${said.join(' ')}`,
    });
  }
  return out;
}

/** One failure for the VM: the first blocker's reason, every blocker's message. */
export function warmVerdict(vm: WarmVMLike): WarmBlocker | undefined {
  const b = warmBlockers(vm);
  if (!b.length) return undefined;
  return { reason: b[0]!.reason, message: b.map((x) => x.message).join(' Also: ') };
}
