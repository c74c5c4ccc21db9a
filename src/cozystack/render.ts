// Pure renders of everything the copy-free handoff creates (docs/cozystack-contract.md, "The copy-free
// handoff" and "VMDisk and VMInstance"): the target claim, the DataVolume the VMDisk chart adopts, the VMDisk and the
// Halted VMInstance, plus the output markers that tell ours from someone else's.
import {
  ANNOTATION_HELM_RELEASE_NAME,
  ANNOTATION_HELM_RELEASE_NAMESPACE,
  ANNOTATION_VMDISK_OPTICAL,
  CDI_POPULATED_FOR,
  COZY_USER_LABEL_PREFIX,
  HELM_MANAGED_BY_VALUE,
  LABEL_DISK_INDEX,
  LABEL_HELM_INSTANCE,
  LABEL_MANAGED_BY,
  LABEL_TASK,
  LABEL_TASK_UID,
  LABEL_VM_ID,
  MANAGED_BY_VALUE,
  vmDiskClaimName,
} from '../api/labels.ts';
import type { TaskVM } from '../api/types.ts';
import type { KubeObject } from '../runtime/kube.ts';
import type { Firmware, ScaffoldingShape } from './kubevirt.ts';
import type { ShapeCarriage } from './platform.ts';

/** Identifies the task and source VM an output belongs to. */
export interface OutputMarkers {
  taskUid: string;
  taskName: string;
  vmId: string;
}

export function markerLabels(m: OutputMarkers, diskIndex?: number): Record<string, string> {
  const l: Record<string, string> = { [LABEL_TASK]: m.taskName, [LABEL_TASK_UID]: m.taskUid, [LABEL_VM_ID]: m.vmId };
  if (diskIndex !== undefined) l[LABEL_DISK_INDEX] = String(diskIndex);
  return l;
}

function label(o: KubeObject, key: string): string | undefined {
  const l = o.metadata?.labels ?? {};
  // Cozystack's aggregated API hands user labels back prefixed; accept both spellings.
  return l[key] ?? l[COZY_USER_LABEL_PREFIX + key];
}

/** True when `o` carries this task's and this VM's markers (the output is ours to continue). */
export function hasOutputMarkers(o: KubeObject, m: Pick<OutputMarkers, 'taskUid' | 'vmId'>): boolean {
  return label(o, LABEL_TASK_UID) === m.taskUid && label(o, LABEL_VM_ID) === m.vmId;
}

/** The disk index an output is marked with, if any. */
export function markedDiskIndex(o: KubeObject): number | undefined {
  const v = label(o, LABEL_DISK_INDEX);
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
}

export interface VolumeFacts {
  name: string;
  storageClassName: string;
  volumeMode: string;
  accessModes: string[];
  /** The PV's capacity quantity, verbatim. */
  capacity: string;
}

type Obj = Record<string, unknown>;

/** Reads what the target claim and DataVolume copy from a PersistentVolume. */
export function volumeFacts(pv: KubeObject): VolumeFacts | undefined {
  const spec = (pv.spec ?? {}) as Obj;
  const capacity = ((spec.capacity ?? {}) as Obj).storage;
  const name = pv.metadata?.name;
  if (!name || (typeof capacity !== 'string' && typeof capacity !== 'number')) return undefined;
  return {
    name,
    storageClassName: typeof spec.storageClassName === 'string' ? spec.storageClassName : '',
    // Kubernetes defaults a PV's volumeMode to Filesystem.
    volumeMode: typeof spec.volumeMode === 'string' && spec.volumeMode ? spec.volumeMode : 'Filesystem',
    accessModes: Array.isArray(spec.accessModes) ? (spec.accessModes as string[]) : [],
    capacity: String(capacity),
  };
}

/**
 * The claim the VMDisk chart expects (`vm-disk-<disk>`), pre-bound to the transferred volume.
 * volumeMode and accessModes are copied from the PV: pre-binding skips the binder's mode check, so a
 * mismatch would only show when a VM attaches the disk. storageClassName is always written (empty when
 * the PV has none): left out, the DefaultStorageClass admission would stamp the default class and the
 * binder would refuse the pre-bound volume for the class mismatch.
 */
export function renderTargetClaim(o: { namespace: string; diskName: string; diskIndex: number; volume: VolumeFacts; markers: OutputMarkers }): KubeObject {
  const name = vmDiskClaimName(o.diskName);
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name,
      namespace: o.namespace,
      labels: { [LABEL_MANAGED_BY]: MANAGED_BY_VALUE, ...markerLabels(o.markers, o.diskIndex) },
      // CDI adopts a claim annotated with the name of the DataVolume it belongs to, without importing.
      annotations: { [CDI_POPULATED_FOR]: name },
    },
    spec: {
      volumeName: o.volume.name,
      storageClassName: o.volume.storageClassName,
      volumeMode: o.volume.volumeMode,
      accessModes: [...o.volume.accessModes],
      resources: { requests: { storage: o.volume.capacity } },
    },
  };
}

/**
 * DataVolume `vm-disk-<disk>` with the Helm ownership metadata of release `vm-disk-<disk>`: the VMDisk
 * chart finds it, adopts it into its release and keeps its spec verbatim; CDI adopts the populated claim.
 * Our markers ride along as labels; managed-by must say Helm here or Helm refuses to adopt.
 */
export function renderHandoffDataVolume(o: { namespace: string; diskName: string; diskIndex: number; volume: VolumeFacts; markers: OutputMarkers }): KubeObject {
  const release = vmDiskClaimName(o.diskName);
  return {
    apiVersion: 'cdi.kubevirt.io/v1beta1',
    kind: 'DataVolume',
    metadata: {
      name: release,
      namespace: o.namespace,
      labels: { ...markerLabels(o.markers, o.diskIndex), [LABEL_MANAGED_BY]: HELM_MANAGED_BY_VALUE, [LABEL_HELM_INSTANCE]: release },
      annotations: {
        [ANNOTATION_HELM_RELEASE_NAME]: release,
        [ANNOTATION_HELM_RELEASE_NAMESPACE]: o.namespace,
        [ANNOTATION_VMDISK_OPTICAL]: 'false',
      },
    },
    spec: {
      contentType: 'kubevirt',
      source: { blank: {} },
      storage: {
        resources: { requests: { storage: o.volume.capacity } },
        storageClassName: o.volume.storageClassName,
        volumeMode: o.volume.volumeMode,
        accessModes: [...o.volume.accessModes],
      },
    },
  };
}

/** The VMDisk: blank source (the DataVolume already exists), not optical, no ownerReference. */
export function renderVMDisk(o: { namespace: string; diskName: string; diskIndex: number; volume: VolumeFacts; markers: OutputMarkers }): KubeObject {
  return {
    apiVersion: 'apps.cozystack.io/v1alpha1',
    kind: 'VMDisk',
    metadata: { name: o.diskName, namespace: o.namespace, labels: markerLabels(o.markers, o.diskIndex) },
    spec: { storage: o.volume.capacity, storageClass: o.volume.storageClassName, optical: false },
  };
}

/**
 * Guests imported without conversion have no virtio drivers and boot only from SATA; q35's AHCI
 * controller has six ports, so the first six disks go on sata and the rest on virtio.
 */
export const SATA_PORTS = 6;

export function diskBus(index: number): 'sata' | 'virtio' {
  return index < SATA_PORTS ? 'sata' : 'virtio';
}

/**
 * A converted guest (spec.guestConversion) has virtio drivers installed by virt-v2v, so every disk goes
 * on virtio. The VMInstance's disk `bus` is the only device setting the vm-instance chart takes
 * (cozystack/cozystack@v1.6.2:packages/apps/vm-instance/templates/vm.yaml); its interfaces carry no
 * model, so KubeVirt gives them virtio (kubevirt/kubevirt@v1.6.6:pkg/virt-launcher/virtwrap/converter/network.go,
 * GetInterfaceType).
 */
export function convertedDiskBus(index: number, converted: boolean): 'sata' | 'virtio' {
  return converted ? 'virtio' : diskBus(index);
}

export type RenderResult = { ok: true; object: KubeObject } | { ok: false; message: string };

/**
 * The VMInstance, created Halted: a copy of a live production VM must not boot by itself.
 * With an instanceType from the task the type sizes the VM; otherwise the Forklift-built VM's own CPU
 * topology and memory are carried as explicit resources (never a silent resize: a VM whose size cannot
 * be read fails instead of taking the chart's default type). Firmware is carried as stated.
 */
export function renderVMInstance(o: {
  namespace: string;
  name: string;
  vm: TaskVM;
  shape: ScaffoldingShape;
  diskNames: string[];
  markers: OutputMarkers;
  /** The guest was converted by virt-v2v (the task's spec.guestConversion): virtio buses. */
  converted?: boolean;
  /**
   * What the platform's vm-instance carries (src/cozystack/platform.ts, carryShape). Absent: a platform
   * taking every value written here (firmware as stated, no MACs), as before capabilities were read.
   */
  carriage?: ShapeCarriage;
}): RenderResult {
  const spec: Obj = {
    runStrategy: 'Halted',
    // Written explicitly: the chart's defaults (u1.medium, ubuntu) would otherwise size and profile the VM.
    instanceType: o.vm.instanceType ?? '',
    // The task's profile wins; else the EFI profile standing in for a firmware value the platform lacks.
    instanceProfile: o.vm.instanceProfile ?? o.carriage?.instanceProfile ?? '',
    disks: o.diskNames.map((name, i) => ({ name, bus: convertedDiskBus(i, o.converted === true) })),
  };
  if (!o.vm.instanceType) {
    const { cpu, memory } = o.shape;
    if (!cpu || !memory) {
      return {
        ok: false,
        message: `the Forklift-built VirtualMachine states no ${!cpu ? 'CPU topology' : 'memory'}; name an instanceType for VM ${o.vm.id} in the task`,
      };
    }
    // VMInstance has no threads field: threads fold into cores so the guest keeps its vCPU count.
    spec.resources = { cpu: cpu.cores * cpu.threads, sockets: cpu.sockets, memory };
  }
  // Only where the platform takes it: a chart without the value would ignore it silently.
  if (o.shape.firmware && (o.carriage?.firmware ?? true)) spec.firmware = renderFirmware(o.shape.firmware);
  if (o.shape.foreignNetworks?.length) {
    return {
      ok: false,
      message: `the Forklift-built VirtualMachine attaches ${o.shape.foreignNetworks.join(', ')} from another namespace; a VMInstance attaches NetworkAttachmentDefinitions of namespace ${o.namespace} only — map the network to one there and create a new task`,
    };
  }
  // The pod network is every VMInstance's default interface; Multus NICs follow it, in source order.
  // With a platform that takes networks[].macAddress, each attachment keeps its first NIC's source MAC.
  if (o.shape.networks?.length) {
    const macs = new Map((o.carriage?.nics ?? []).filter((n) => n.kept && n.mac).map((n) => [n.network, n.mac!]));
    spec.networks = o.shape.networks.map((name) => (macs.get(name) ? { name, macAddress: macs.get(name) } : { name }));
  }
  return {
    ok: true,
    object: {
      apiVersion: 'apps.cozystack.io/v1alpha1',
      kind: 'VMInstance',
      metadata: { name: o.name, namespace: o.namespace, labels: markerLabels(o.markers) },
      spec,
    },
  };
}

function renderFirmware(f: Firmware): Obj {
  return f.bootloader === 'uefi' ? { bootloader: 'uefi', secureBoot: f.secureBoot ?? false } : { bootloader: 'bios' };
}
