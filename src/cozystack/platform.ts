// What the platform's vm-instance chart can carry of an imported VM's shape, and what to do where it
// cannot. Pure: the ApplicationDefinition and the Forklift-built VM in, decisions out.
//
// Cozystack v1.6.0–v1.6.2's vm-instance chart renders only `firmware.uuid` (its own stable UUID), interfaces
// `bridge: {}` without `macAddress`, no clock, no TPM and no input devices
// (cozystack/cozystack@v1.6.2:packages/apps/vm-instance/templates/vm.yaml); a firmware value exists only
// in PR #3002. What the chart takes is read from the platform itself — the `vm-instance`
// ApplicationDefinition's values schema (cozystack/cozystack@v1.6.2:packages/system/vm-instance-rd/
// cozyrds/vm-instance.yaml, spec.application.openAPISchema) — never from a version number.
import type { ShapeStatus, SourceInventoryVM, VMImportSource } from '../api/types.ts';
import type { GVR } from '../runtime/gvr.ts';
import type { KubeObject } from '../runtime/kube.ts';
import type { ScaffoldingShape } from './kubevirt.ts';

/**
 * Cozystack's ApplicationDefinition (cluster-scoped; cozystack/cozystack@v1.6.2:
 * packages/system/application-definition-crd/definition/cozystack.io_applicationdefinitions.yaml). The
 * one named `vm-instance` (packages/system/vm-instance-rd/cozyrds/vm-instance.yaml) states the values the
 * VMInstance's chart takes.
 */
export const APPLICATION_DEFINITION: GVR = { group: 'cozystack.io', version: 'v1alpha1', plural: 'applicationdefinitions', kind: 'ApplicationDefinition', namespaced: false, optional: true };
export const VM_INSTANCE_DEFINITION = 'vm-instance';

export interface VMInstanceCapabilities {
  /** The values schema has `firmware`: the VMInstance can ask for UEFI. */
  firmware: boolean;
  /** The values schema has `networks[].macAddress`: a NIC can keep its MAC. */
  macAddress: boolean;
}

/** What v1.6.0–v1.6.2 take: neither. The assumption when the ApplicationDefinition cannot be read. */
export const BASELINE_CAPABILITIES: VMInstanceCapabilities = { firmware: false, macAddress: false };

/**
 * The ApplicationDefinition's schema is platform-written, not tenant input, but a schema this large is
 * no vm-instance schema (v1.6.2's is about 9 KB): reading stops rather than parsing it.
 */
const MAX_SCHEMA_BYTES = 1 << 20;

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined);

/** The capabilities the `vm-instance` ApplicationDefinition's values schema declares; undefined when it states no schema. */
export function vmInstanceCapabilities(appDef: KubeObject | undefined): VMInstanceCapabilities | undefined {
  const raw = obj(obj(appDef?.spec)?.application)?.openAPISchema;
  let schema: Obj | undefined;
  if (typeof raw === 'string') {
    if (raw.length > MAX_SCHEMA_BYTES) return undefined;
    try {
      schema = obj(JSON.parse(raw));
    } catch {
      return undefined;
    }
  } else schema = obj(raw);
  const props = obj(schema?.properties);
  if (!props) return undefined;
  const nicProps = obj(obj(obj(props.networks)?.items)?.properties);
  return { firmware: props.firmware !== undefined, macAddress: nicProps?.macAddress !== undefined };
}

export type OSFamily = 'windows' | 'linux' | 'other';

/**
 * The EFI instance profiles (VirtualMachineClusterPreferences) Cozystack v1.6.2 ships, by what they set
 * (cozystack/cozystack@v1.6.2:packages/system/kubevirt-instancetypes/templates/preferences.yaml):
 * linux.efi (EFI, Secure Boot off), rhel.9 (EFI, Secure Boot on, SMM); windows.2k19 / windows.2k22
 * (EFI, Secure Boot, SMM; the latter a persistent TPM), with SATA disks and e1000e NICs preferred, and
 * their .virtio twins for guests that have virtio drivers.
 */
export const EFI_PROFILES = {
  linux: 'linux.efi',
  linuxSecureBoot: 'rhel.9',
  windows: 'windows.2k19',
  windowsTPM: 'windows.2k22',
} as const;

export interface GuestFacts {
  /** From the inventory's guestId (src/forklift/assess.ts, osFamily); undefined when unknown. */
  os?: OSFamily;
  /** virt-v2v installed virtio drivers (spec.guestConversion). */
  converted?: boolean;
}

/** The EFI profile for a guest, or why none fits. */
export function efiProfileFor(shape: Pick<ScaffoldingShape, 'firmware' | 'tpm'>, guest: GuestFacts): { profile: string } | { none: string } {
  const secureBoot = shape.firmware?.secureBoot === true;
  if (guest.os === 'linux') return { profile: secureBoot ? EFI_PROFILES.linuxSecureBoot : EFI_PROFILES.linux };
  if (guest.os === 'windows') {
    // Windows' boot manager is signed by Microsoft: a Secure Boot profile starts it whether or not the
    // source had Secure Boot on. A source with a vTPM (Windows 11, BitLocker) gets the TPM profile.
    const base = shape.tpm ? EFI_PROFILES.windowsTPM : EFI_PROFILES.windows;
    return { profile: guest.converted ? `${base}.virtio` : base };
  }
  return {
    none:
      guest.os === undefined
        ? "the guest's operating system is not known (its source's inventory lists no guest id for this VM), so no EFI instance profile can be chosen"
        : "the guest's operating system is neither Linux nor Windows, and Cozystack ships EFI instance profiles for those only",
  };
}

export interface NICReport {
  /** Position in source NIC order. */
  index: number;
  /** pod, or the Multus attachment's name. */
  network: string;
  /** The source NIC's MAC as Forklift carried it onto its VM (builder.go, MacAddress: nic.MAC). */
  sourceMAC?: string;
  /** The MAC the VMInstance's NIC gets when known; absent: assigned when it first starts. */
  mac?: string;
  /** Whether the VMInstance keeps the source MAC. */
  kept: boolean;
}

export interface ShapeCarriage {
  /** Write `firmware` into the VMInstance (the platform takes it). */
  firmware: boolean;
  /** The instance profile to set when the task named none (an EFI profile standing in for firmware). */
  instanceProfile?: string;
  /** Why `instanceProfile` was chosen, for the VM's status and the admission warning. */
  profileReason?: string;
  /** Set when the VM will not boot: EFI, no firmware value, and no profile fits. */
  wontBoot?: string;
  /** Carry each NIC's source MAC into `networks[].macAddress`. */
  macAddress: boolean;
  nics: NICReport[];
  /** Parts of the source's shape the VMInstance cannot carry, one phrase each. */
  notCarried: string[];
}

/**
 * What of the Forklift-built VM's shape reaches the VMInstance on this platform, and what stands in for
 * what does not. `requestedProfile` is the task's instanceProfile: named, it wins and nothing is chosen.
 */
export function carryShape(shape: ScaffoldingShape, platform: VMInstanceCapabilities, guest: GuestFacts, requestedProfile?: string): ShapeCarriage {
  const out: ShapeCarriage = { firmware: platform.firmware, macAddress: platform.macAddress, nics: [], notCarried: [] };
  if (shape.firmware?.bootloader === 'uefi' && !platform.firmware) {
    if (requestedProfile) {
      out.profileReason = `the platform's vm-instance takes no firmware value; the task's instance profile ${requestedProfile} decides the firmware`;
    } else {
      const p = efiProfileFor(shape, guest);
      if ('profile' in p) {
        out.instanceProfile = p.profile;
        out.profileReason = `the source boots with UEFI and the platform's vm-instance takes no firmware value: instance profile ${p.profile} makes it boot with UEFI`;
      } else {
        out.wontBoot = `the source boots with UEFI, the platform's vm-instance takes no firmware value (it would start with BIOS), and ${p.none}; name an EFI instanceProfile for this VM in the task`;
      }
    }
  }
  // The VMInstance's first interface is the pod network's, which networks[] does not list, and each
  // attachment appears once: only the first NIC on each Multus attachment can keep its MAC.
  const seen = new Set<string>();
  out.nics = (shape.nics ?? []).map((n, index) => {
    const first = n.network !== 'pod' && !seen.has(n.network);
    seen.add(n.network);
    const kept = platform.macAddress && first && !!n.macAddress;
    return { index, network: n.network, ...(n.macAddress ? { sourceMAC: n.macAddress } : {}), ...(kept ? { mac: n.macAddress } : {}), kept };
  });
  const lost = out.nics.filter((n) => n.sourceMAC && !n.kept);
  if (lost.length) {
    out.notCarried.push(`the MAC address of ${lost.map((n) => `NIC ${n.index} (${n.network}, ${n.sourceMAC})`).join(', ')} (a new one is assigned when the VM first starts)`);
  }
  if (shape.serial) out.notCarried.push(`firmware.serial ${JSON.stringify(shape.serial)} (the source's system serial; the chart sets its own firmware UUID)`);
  if (shape.timezone) out.notCarried.push(`the clock's timezone ${JSON.stringify(shape.timezone)} (the guest's clock starts in UTC)`);
  if (shape.tpm && !(out.instanceProfile === EFI_PROFILES.windowsTPM || out.instanceProfile === `${EFI_PROFILES.windowsTPM}.virtio`)) {
    out.notCarried.push('the persistent TPM (BitLocker and Windows 11 need one)');
  } else if (shape.tpm) {
    out.notCarried.push("the TPM's contents (the profile gives a new, empty persistent TPM: BitLocker asks for its recovery key)");
  }
  if (shape.tablet) out.notCarried.push('the tablet input device (the mouse pointer is relative in a console)');
  return out;
}

/** The source VM's OS family as its source's inventory (status.inventory.vms) lists it; undefined when not listed. */
export function guestFactsFrom(source: Pick<VMImportSource, 'status'> | undefined, vmId: string, converted: boolean): GuestFacts {
  const vm: SourceInventoryVM | undefined = source?.status?.inventory?.vms?.find((v) => v.id === vmId);
  return { ...(vm?.os ? { os: vm.os } : {}), converted };
}

/** The VM status's account of a carriage (status.vms[].shape); undefined when there is nothing to say. */
export function shapeStatus(c: ShapeCarriage): ShapeStatus | undefined {
  const s: ShapeStatus = {
    ...(c.instanceProfile ? { instanceProfile: c.instanceProfile } : {}),
    ...(c.wontBoot ? { firmware: `will not boot: ${c.wontBoot}` } : c.profileReason ? { firmware: c.profileReason } : {}),
    ...(c.nics.length ? { nics: c.nics } : {}),
    ...(c.notCarried.length ? { notCarried: c.notCarried } : {}),
  };
  return Object.keys(s).length ? s : undefined;
}
