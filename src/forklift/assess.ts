// The readiness assessment of a source VM: the facts an importer needs, Forklift's concerns, ours, and a
// verdict. Pure: a VM record of Forklift's inventory in, plain data out.
//
// Forklift's inventory serves, per VM, the facts (kubev2v/forklift@v2.11.5:pkg/controller/provider/web/vsphere/vm.go,
// VM: powerState, firmware, secureBoot, guestId, toolsStatus, toolsRunningStatus, changeTrackingEnabled,
// disks[] with bus/mode/rdm/shared, nics[]) and the `concerns` its policy agent computed from them
// (kubev2v/forklift@v2.11.5:validation/policies/io/konveyor/forklift/vmware/*.rego; each concern is
// {id, category, label, assessment}, pkg/controller/provider/model/base/model.go Concern). The policy
// agent validates a VM asynchronously (revisionValidated lags revision), so the Critical facts it knows
// of (RDM, independent disks) are also derived here from the facts, in Forklift's own words, and never
// counted twice.
import { efiProfileFor } from '../cozystack/platform.ts';
import type { SourceInventoryDisk, SourceInventorySummary, SourceInventoryVM, VMConcern, VMVerdict } from '../api/types.ts';

/** A VM record of Forklift's inventory (`/providers/vsphere/<uid>/vms/<id>` or `vms?detail=4`), read loosely. */
export interface InventoryVMRecord {
  id?: unknown;
  name?: unknown;
  path?: unknown;
  powerState?: unknown;
  firmware?: unknown;
  secureBoot?: unknown;
  guestId?: unknown;
  guestName?: unknown;
  toolsStatus?: unknown;
  toolsRunningStatus?: unknown;
  changeTrackingEnabled?: unknown;
  disks?: unknown;
  nics?: unknown;
  concerns?: unknown;
  [k: string]: unknown;
}

export type Facts = Omit<SourceInventoryVM, 'id' | 'name' | 'path' | 'verdict' | 'concerns'>;

const CATEGORIES = ['Critical', 'Warning', 'Information'] as const;

function str(x: unknown): string | undefined {
  return typeof x === 'string' ? x : undefined;
}
function obj(x: unknown): Record<string, unknown> | undefined {
  return x && typeof x === 'object' && !Array.isArray(x) ? (x as Record<string, unknown>) : undefined;
}
function arr(x: unknown): unknown[] {
  return Array.isArray(x) ? x : [];
}

/** The guest OS family from vSphere's guest id (or the guest name when the id is absent). Pure. */
export function osFamily(guestId: string | undefined, guestName?: string): 'windows' | 'linux' | 'other' | undefined {
  const s = (guestId || guestName || '').toLowerCase();
  if (!s) return undefined;
  // vSphere guest ids: windows2019srv_64Guest, win2000ServGuest, winNetStandardGuest, winLonghorn64Guest, …
  if (/^win|windows/.test(s)) return 'windows';
  if (/linux|rhel|centos|ubuntu|debian|sles|suse|fedora|asianux|photon|coreos|mandr|redhat|rocky|alma|oracle/.test(s)) return 'linux';
  return 'other';
}

/** VMware Tools as Forklift's GuestToolsInstalled reads them (pkg/controller/plan/adapter/vsphere/validator.go). Pure. */
export function toolsState(toolsStatus: string | undefined, toolsRunningStatus: string | undefined): NonNullable<Facts['tools']> {
  if (toolsStatus === 'toolsNotInstalled') return 'notInstalled';
  if (toolsRunningStatus === 'guestToolsNotRunning') return 'notRunning';
  // isUnknownToolsStatus: "", "null", "<nil>" (validator.go).
  if (!toolsStatus || toolsStatus === 'null' || toolsStatus === '<nil>') return 'unknown';
  // Installed and not reported as stopped: what Forklift lets through.
  return 'running';
}

/** The facts of a VM, compact (they are published in the source's status for every VM). Pure. */
export function vmFacts(vm: InventoryVMRecord): Facts {
  const guestId = str(vm.guestId);
  const os = osFamily(guestId, str(vm.guestName));
  const firmware = vm.firmware === 'efi' ? 'efi' : vm.firmware === 'bios' ? 'bios' : undefined;
  const disks: SourceInventoryDisk[] = arr(vm.disks).map((d) => {
    const o = obj(d) ?? {};
    const mode = str(o.mode);
    const bus = str(o.bus);
    return { capacity: Number(o.capacity) || 0, ...(bus ? { bus } : {}), ...(mode ? { mode } : {}), ...(o.rdm === true ? { rdm: true } : {}), ...(o.shared === true ? { shared: true } : {}) };
  });
  const nics = arr(vm.nics)
    .map((n) => str(obj(obj(n)?.network)?.id))
    .filter((x): x is string => !!x)
    .map((network) => ({ network }));
  const power = str(vm.powerState);
  // Bounded like the CRD's maxLength: a host id is host-N; anything longer is not one.
  const host = str(vm.host);
  return {
    ...(host && host.length <= 64 ? { host } : {}),
    ...(power ? { power } : {}),
    ...(os ? { os } : {}),
    ...(guestId ? { guestId } : {}),
    ...(firmware ? { firmware } : {}),
    ...(firmware === 'efi' && vm.secureBoot === true ? { secureBoot: true } : {}),
    tools: toolsState(str(vm.toolsStatus), str(vm.toolsRunningStatus)),
    cbt: vm.changeTrackingEnabled === true,
    disks,
    nics,
  };
}

/** Forklift's concerns as its inventory served them (malformed entries dropped). Pure. */
export function forkliftConcerns(vm: InventoryVMRecord): VMConcern[] {
  const out: VMConcern[] = [];
  for (const c of arr(vm.concerns)) {
    const o = obj(c);
    const category = CATEGORIES.find((x) => x === o?.category);
    const label = str(o?.label);
    if (!o || !category || !label) continue;
    const id = str(o.id);
    out.push({ ...(id ? { id } : {}), category, label, assessment: str(o.assessment) ?? '' });
  }
  return out;
}

// Forklift's own words for the Critical disk concerns it computes, re-derived from the facts while its
// policy agent has not validated the VM's current revision.
/** kubev2v/forklift@v2.11.5:validation/policies/io/konveyor/forklift/vmware/rdm_disk.rego */
export const FORKLIFT_RDM: VMConcern = {
  id: 'vmware.disk.rdm.detected',
  category: 'Critical',
  label: 'Raw Device Mapped disk detected',
  assessment: 'RDM disks are not currently supported by Migration Toolkit for Virtualization. The VM cannot be migrated unless the RDM disks are removed. You can reattach them to the VM after migration.',
};
/** kubev2v/forklift@v2.11.5:validation/policies/io/konveyor/forklift/vmware/disk_mode.rego */
export const FORKLIFT_INDEPENDENT: VMConcern = {
  id: 'vmware.disk_mode.independent',
  category: 'Critical',
  label: 'Independent disk detected',
  assessment: "Independent disks cannot be transferred using recent versions of VDDK. The VM cannot be migrated unless disks are changed to 'Dependent' mode in VMware.",
};

/** Ids of our own concerns (docs/assessment.md). */
export const OwnConcern = {
  SharedDisk: 'cozystack.disk.shared',
  ToolsNotRunning: 'cozystack.tools.not_running',
  UEFI: 'cozystack.firmware.efi',
  SecureBoot: 'cozystack.firmware.secure_boot',
  BeyondSATA: 'cozystack.disk.beyond_sata',
} as const;

/**
 * Disks an import without guest conversion attaches on SATA (src/cozystack/render.ts SATA_PORTS: q35's AHCI
 * controller has six ports); the rest go on virtio, which a guest copied as it is may have no driver for.
 */
const SATA_PORTS = 6;

/** The controller's own concerns: what stops or changes an import here beyond Forklift's policies. Pure. */
export function ownConcerns(f: Facts): VMConcern[] {
  const out: VMConcern[] = [];
  const disks = f.disks ?? [];
  if (disks.some((d) => d.shared)) {
    // Forklift migrates a shared disk with one VM only and skips it on the others (pkg/controller/plan/adapter/vsphere/validator.go,
    // findSharedDisksVms; Plan spec.migrateSharedDisks); the handoff gives each disk's volume to exactly one VMInstance.
    out.push({
      id: OwnConcern.SharedDisk,
      category: 'Critical',
      label: 'Shared disk detected',
      assessment: 'A disk of this VM is shared with other VMs (multi-writer). An import hands each disk over to one VMInstance, so the VM cannot be imported with it.',
    });
  }
  if (f.power === 'poweredOn' && f.tools !== 'running') {
    // Forklift ≥ 2.11 refuses the Plan (GuestToolsIssue, Critical): kubev2v/forklift@v2.11.5:pkg/controller/plan/adapter/vsphere/validator.go GuestToolsInstalled.
    out.push({
      id: OwnConcern.ToolsNotRunning,
      category: 'Critical',
      label: 'VMware Tools not running on a powered-on VM',
      assessment: `The VM is powered on and its VMware Tools are ${f.tools === 'notInstalled' ? 'not installed' : f.tools === 'notRunning' ? 'not running' : 'not reported'}: Forklift refuses to migrate it (GuestToolsIssue), since it cannot shut the guest down cleanly.`,
    });
  }
  if (f.firmware === 'efi') {
    out.push({
      id: OwnConcern.UEFI,
      category: 'Warning',
      label: 'UEFI firmware',
      assessment: uefiAssessment(f),
    });
  }
  if (f.firmware === 'efi' && f.secureBoot) {
    out.push({
      id: OwnConcern.SecureBoot,
      category: 'Warning',
      label: 'UEFI with Secure Boot',
      assessment: "The VM starts with Secure Boot on and the firmware's default keys; its own Secure Boot variables (NVRAM) are not carried over, so a boot loader signed with a custom key does not start.",
    });
  }
  if (disks.length > SATA_PORTS) {
    out.push({
      id: OwnConcern.BeyondSATA,
      category: 'Warning',
      label: `More than ${SATA_PORTS} disks`,
      assessment: `Disks after the ${SATA_PORTS}th are attached on virtio: a guest copied without conversion sees them only if it has virtio drivers (Linux does; Windows needs virtio-win).`,
    });
  }
  return out;
}

/**
 * What a UEFI guest gets: the firmware where the platform's vm-instance takes it, else the EFI instance
 * profile of its OS family (src/cozystack/platform.ts, efiProfileFor, as the handoff chooses it), or the
 * verdict that it will not boot there.
 */
function uefiAssessment(f: Facts): string {
  const p = efiProfileFor({ firmware: { bootloader: 'uefi', secureBoot: f.secureBoot === true } }, { ...(f.os ? { os: f.os } : {}) });
  const without =
    'profile' in p
      ? `on a Cozystack whose vm-instance chart has no firmware value (v1.6.0–v1.6.2) the VMInstance gets the EFI instance profile ${p.profile} instead, unless the task names one, and its status says so`
      : `on a Cozystack whose vm-instance chart has no firmware value (v1.6.0–v1.6.2) it will not boot: it starts with BIOS, and ${p.none}`;
  return `The VM boots with UEFI. The imported VMInstance asks for UEFI where the platform takes a firmware value; ${without}.`;
}

const RANK: Record<VMConcern['category'], number> = { Critical: 0, Warning: 1, Information: 2 };

/** Forklift's concerns, then ours and the re-derived Forklift ones it has not computed yet; Critical first. Pure. */
export function vmConcerns(vm: InventoryVMRecord, f: Facts = vmFacts(vm)): VMConcern[] {
  const fk = forkliftConcerns(vm);
  const ids = new Set(fk.map((c) => c.id).filter((x) => !!x));
  const derived: VMConcern[] = [];
  const disks = f.disks ?? [];
  if (disks.some((d) => d.rdm)) derived.push(FORKLIFT_RDM);
  if (disks.some((d) => d.mode === 'independent_persistent' || d.mode === 'independent_nonpersistent')) derived.push(FORKLIFT_INDEPENDENT);
  const all = [...fk, ...[...derived, ...ownConcerns(f)].filter((c) => !ids.has(c.id))];
  return all.map((c, i) => ({ c, i })).sort((a, b) => RANK[a.c.category] - RANK[b.c.category] || a.i - b.i).map((x) => x.c);
}

/** Critical → Blocked, Warning → ReadyWithWarnings, otherwise Ready. Pure. */
export function verdictOf(concerns: readonly VMConcern[]): VMVerdict {
  if (concerns.some((c) => c.category === 'Critical')) return 'Blocked';
  if (concerns.some((c) => c.category === 'Warning')) return 'ReadyWithWarnings';
  return 'Ready';
}

export interface Assessment {
  facts: Facts;
  verdict: VMVerdict;
  concerns: VMConcern[];
}

/** Facts, concerns and verdict of one inventory VM. Pure. */
export function assessVM(vm: InventoryVMRecord): Assessment {
  const facts = vmFacts(vm);
  const concerns = vmConcerns(vm, facts);
  return { facts, verdict: verdictOf(concerns), concerns };
}

/** The published entry of a VM: id/name/path, facts, verdict, concerns. Pure. */
export function inventoryEntry(vm: InventoryVMRecord): SourceInventoryVM {
  const a = assessVM(vm);
  // The CRD bounds these lists (a status write beyond them is refused whole); the verdict is taken
  // before the cut, Critical concerns come first.
  const facts = { ...a.facts, disks: a.facts.disks?.slice(0, MAX_DISKS), nics: a.facts.nics?.slice(0, MAX_NICS) };
  return { id: String(vm.id ?? ''), name: String(vm.name ?? ''), path: String(vm.path ?? ''), ...facts, verdict: a.verdict, concerns: a.concerns.slice(0, MAX_CONCERNS) };
}

/** The CRD's maxItems of an inventory entry's disks, nics and concerns (crds/forklift.cozystack.io_vmimportsources.yaml). */
export const MAX_DISKS = 256;
export const MAX_NICS = 64;
export const MAX_CONCERNS = 64;

/** VMs per verdict. Pure. */
export function summarise(verdicts: Iterable<VMVerdict | undefined>): SourceInventorySummary {
  const s: SourceInventorySummary = { ready: 0, readyWithWarnings: 0, blocked: 0 };
  for (const v of verdicts) {
    if (v === 'Ready') s.ready++;
    else if (v === 'ReadyWithWarnings') s.readyWithWarnings++;
    else if (v === 'Blocked') s.blocked++;
  }
  return s;
}

/** Concerns that only matter to warm imports (Changed Block Tracking): a cold import does not use CBT. */
const WARM_ONLY = new Set(['vmware.changed_block_tracking.disabled', 'vmware.changed_block_tracking.disk.disabled']);

/** The concerns that matter to an import in `mode` (cold unless said). Pure. */
export function concernsFor(concerns: readonly VMConcern[], mode: string | undefined): VMConcern[] {
  return mode === 'warm' ? [...concerns] : concerns.filter((c) => !c.id || !WARM_ONLY.has(c.id));
}

/** What the tenant does about a concern, by id (docs/assessment.md says more). */
const FIXES: Record<string, string> = {
  'vmware.disk.rdm.detected': 'remove the RDM disk from the VM in vSphere (copy its data to a virtual disk if it must come along) and import again',
  'vmware.disk_mode.independent': "switch the disk to Dependent mode in vSphere (Edit Settings → disk → Mode; the VM must be off) and import again",
  'vmware.datastore.missing': 'move the disk onto a datastore (Storage vMotion) and import again',
  'vmware.disk.capacity.invalid': "fix or remove the disk whose size vCenter reports as zero and import again",
  'vmware.passthrough_device.detected': 'remove the PCI passthrough device from the VM in vSphere and import again',
  'vmware.guestDisks.freespace': 'free space on that guest filesystem and import again',
  'vmware.changed_block_tracking.disabled': 'enable CBT on the VM (ctkEnabled = TRUE) before a warm import; a cold import does not need it',
  'vmware.changed_block_tracking.disk.disabled': 'enable CBT on the disk before a warm import; a cold import does not need it',
  'vmware.os.unsupported': 'check that the guest has the drivers it needs: an import copies it as it is, without conversion',
  'vmware.vm_missing_ip.detected': 'note the guest IPs before the import: a guest copied as it is keeps its own network configuration, which the new NIC may not match',
  'vmware.hostname.empty': 'set the guest host name before the import if it matters',
  'vmware.hostname.default': 'set the guest host name before the import if it matters',
  'vmware.vm.name.invalid': 'set spec.vms[].name in the task to the name the VMInstance should have',
  'vmware.tpm.detected': 'move anything sealed to the TPM (BitLocker keys, LUKS with TPM) to a recovery key before the import',
  'vmware.cpu_memory.hotplug.enabled': 'nothing: size the VMInstance with spec.vms[].instanceType if needed',
  'vmware.usb_controller.detected': 'nothing to do before the import; USB devices are not carried over',
  'vmware.device.sriov.detected': 'nothing to do before the import; attach a secondary network to the VMInstance afterwards',
  'vmware.cpu_affinity.detected': 'nothing to do; affinity is not carried over',
  'vmware.numa_affinity.detected': 'nothing to do; NUMA affinity is not carried over',
  'vmware.host_affinity.detected': 'nothing to do; host affinity is not carried over',
  [OwnConcern.SharedDisk]: 'detach the shared disk from this VM in vSphere (or turn off its multi-writer sharing) and import again; carry its data over separately',
  [OwnConcern.ToolsNotRunning]: 'start VMware Tools in the guest, or shut the guest down, and import again',
  [OwnConcern.UEFI]: 'where the platform has no firmware value and the guest is neither Linux nor Windows, name an EFI instanceProfile for the VM in the task',
  [OwnConcern.SecureBoot]: 'if the guest boots with a custom-signed loader, turn Secure Boot off in the guest before the import',
  [OwnConcern.BeyondSATA]: 'install the virtio drivers in the guest before the import (Windows: virtio-win), or move data off the extra disks',
};

/** The fix for a concern (undefined: none known). Pure. */
export function concernFix(c: VMConcern): string | undefined {
  return c.id ? FIXES[c.id] : undefined;
}

/** One sentence for a concern: Forklift's (or our) label and assessment, then the fix. Pure. */
export function concernSentence(c: VMConcern): string {
  const who = c.id?.startsWith('vmware.') ? 'Forklift' : 'migration-controller';
  const fix = concernFix(c);
  return `${c.label} (${c.category}, ${who}): ${c.assessment.trim()}${fix ? ` Fix: ${fix}.` : ''}`;
}
