// Pure readers of the KubeVirt VirtualMachine Forklift built for a migrated VM (the "scaffolding" VM).
// It is the only record of the source VM's shape on the cluster: disk order, CPU topology, memory and
// firmware (docs/cozystack-contract.md, "KubeVirt"; docs/forklift-contract.md, "What the copy leaves behind"). Plain JSON in, plain
// data out: KubeVirt may be older or newer than we expect, so every field is read defensively.
import type { KubeObject } from '../runtime/kube.ts';

export interface ScaffoldingDisk {
  /** Index in source order (the VM's volume order). */
  index: number;
  /** The volume's name inside the VM spec. */
  volume: string;
  /** The transferred claim that holds the disk (persistentVolumeClaim.claimName or dataVolume.name). */
  claimName: string;
}

export interface Firmware {
  bootloader: 'uefi' | 'bios';
  secureBoot?: boolean;
}

export interface ScaffoldingShape {
  disks: ScaffoldingDisk[];
  cpu?: { cores: number; sockets: number; threads: number };
  /** Memory quantity exactly as the VM states it (domain.memory.guest, else resources.requests.memory). */
  memory?: string;
  firmware?: Firmware;
  /**
   * The Multus NetworkAttachmentDefinitions the VM's NICs are on, in NIC order, once each, by name in the
   * VM's own namespace. The pod network is not listed: every VMInstance has it as its default interface.
   */
  networks: string[];
  /** Attachments in another namespace: a VMInstance cannot attach them (its chart uses its own namespace). */
  foreignNetworks: string[];
  /** Each NIC in source order: `pod` or the Multus attachment's name, and the source MAC Forklift set. */
  nics?: Array<{ network: string; macAddress?: string }>;
  /** domain.firmware.serial: the source's system serial (Forklift: getSystemSerial). */
  serial?: string;
  /** domain.clock.timezone: the ESXi host's timezone (Forklift: mapClock). */
  timezone?: string;
  /** A persistent TPM (Forklift sets one for a source with a vTPM). */
  tpm?: boolean;
  /** A tablet input device (Forklift adds one to every VM). */
  tablet?: boolean;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);
const posInt = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined);

function templateSpec(vm: KubeObject): Obj | undefined {
  return obj(obj(obj(vm.spec)?.template)?.spec);
}

/**
 * The VM's disks in source order. Forklift writes one volume per source disk, in the source VM's disk
 * order; a volume that is neither a claim nor a DataVolume (cloud-init, container disk) is not a disk of
 * the source and is skipped. A DataVolume volume names its claim: CDI names the claim after the DataVolume.
 */
export function readScaffoldingDisks(vm: KubeObject): ScaffoldingDisk[] {
  const out: ScaffoldingDisk[] = [];
  for (const v of arr(templateSpec(vm)?.volumes)) {
    const vol = obj(v);
    if (!vol) continue;
    const claimName = str(obj(vol.persistentVolumeClaim)?.claimName) ?? str(obj(vol.dataVolume)?.name);
    if (!claimName) continue;
    out.push({ index: out.length, volume: str(vol.name) ?? claimName, claimName });
  }
  return out;
}

/** CPU, memory and firmware of the Forklift-built VM, exactly as stated (never defaulted to a size). */
export function readScaffoldingShape(vm: KubeObject): ScaffoldingShape {
  const domain = obj(templateSpec(vm)?.domain);
  const cpuSpec = obj(domain?.cpu);
  const cores = posInt(cpuSpec?.cores);
  const sockets = posInt(cpuSpec?.sockets);
  const threads = posInt(cpuSpec?.threads);
  const cpu = cores || sockets ? { cores: cores ?? 1, sockets: sockets ?? 1, threads: threads ?? 1 } : undefined;

  const memory =
    str(obj(domain?.memory)?.guest) ??
    str(obj(obj(domain?.resources)?.requests)?.memory) ??
    (typeof obj(obj(domain?.resources)?.requests)?.memory === 'number' ? String(obj(obj(domain?.resources)?.requests)?.memory) : undefined);

  const bootloader = obj(obj(domain?.firmware)?.bootloader);
  let firmware: Firmware | undefined;
  if (bootloader && obj(bootloader.efi)) {
    // KubeVirt's own default: an `efi` block without `secureBoot` boots with Secure Boot enabled.
    const sb = obj(bootloader.efi)!.secureBoot;
    firmware = { bootloader: 'uefi', secureBoot: typeof sb === 'boolean' ? sb : true };
  } else if (bootloader && obj(bootloader.bios)) {
    firmware = { bootloader: 'bios' };
  }
  // What Forklift carries of the source beyond disks, CPU and memory
  // (kubev2v/forklift@v2.11.5:pkg/controller/plan/adapter/vsphere/builder.go: the NICs' MacAddress,
  // Firmware.Serial, mapClock, the vTPM's TPMDevice{Persistent: true}, the tablet input).
  const devices = obj(domain?.devices);
  const serial = str(obj(domain?.firmware)?.serial);
  const timezone = str(obj(domain?.clock)?.timezone);
  const tpmSpec = obj(devices?.tpm);
  const tpm = tpmSpec !== undefined && tpmSpec.enabled !== false && tpmSpec.persistent === true;
  const tablet = arr(devices?.inputs).some((i) => obj(i)?.type === 'tablet');
  return {
    disks: readScaffoldingDisks(vm),
    cpu,
    memory,
    firmware,
    ...readScaffoldingNetworks(vm),
    nics: readScaffoldingNICs(vm),
    ...(serial ? { serial } : {}),
    ...(timezone ? { timezone } : {}),
    ...(tpm ? { tpm } : {}),
    ...(tablet ? { tablet } : {}),
  };
}

/**
 * Each NIC in source order: Forklift writes one `domain.devices.interfaces[]` entry per source NIC, named
 * as its `networks[]` entry, with the source MAC (builder.go, MacAddress: nic.MAC).
 */
export function readScaffoldingNICs(vm: KubeObject): Array<{ network: string; macAddress?: string }> {
  const spec = templateSpec(vm);
  const byName = new Map<string, string>();
  for (const n of arr(spec?.networks)) {
    const net = obj(n);
    const name = str(net?.name);
    if (!name) continue;
    const multus = str(obj(net?.multus)?.networkName);
    byName.set(name, multus ? multus.slice(multus.indexOf('/') + 1) : 'pod');
  }
  const out: Array<{ network: string; macAddress?: string }> = [];
  for (const i of arr(obj(obj(spec?.domain)?.devices)?.interfaces)) {
    const iface = obj(i);
    const name = str(iface?.name);
    if (!name) continue;
    const mac = str(iface?.macAddress);
    out.push({ network: byName.get(name) ?? 'pod', ...(mac ? { macAddress: mac } : {}) });
  }
  return out;
}

/**
 * Forklift writes one `spec.template.spec.networks[]` entry per mapped NIC, in source NIC order: `pod: {}`
 * or `multus: {networkName: <namespace>/<name>}` (a bare name is in the VM's namespace).
 */
export function readScaffoldingNetworks(vm: KubeObject): Pick<ScaffoldingShape, 'networks' | 'foreignNetworks'> {
  const ns = vm.metadata?.namespace ?? '';
  const networks: string[] = [];
  const foreignNetworks: string[] = [];
  for (const n of arr(templateSpec(vm)?.networks)) {
    const full = str(obj(obj(n)?.multus)?.networkName);
    if (!full) continue;
    const i = full.indexOf('/');
    const [nns, name] = i < 0 ? [ns, full] : [full.slice(0, i), full.slice(i + 1)];
    if (!name) continue;
    if (nns !== ns) {
      if (!foreignNetworks.includes(full)) foreignNetworks.push(full);
    } else if (!networks.includes(name)) {
      networks.push(name);
    }
  }
  return { networks, foreignNetworks };
}
