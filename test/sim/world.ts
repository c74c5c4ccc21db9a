// The simulated vSphere world: a declarative fixture (one per vCenter) and the live model the sim mutates.
import { createHash } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import { makeCA, makeServingCert, sha1Thumbprint } from './certs.ts';
import { EsxiHosts, type HostStats } from './esxi.ts';

export interface HostFixture {
  /** vSphere moref, `host-N`. */
  id: string;
  /** The address vCenter advertises for the host (inventory `name`); disk traffic goes here by default. */
  address: string;
  /** Whether the advertised address is reachable from the cluster. Default true (never inside the Service CIDR). */
  reachable: boolean;
  /** Other addresses of the host that ARE reachable (what a Host override may name). */
  otherAddresses: string[];
  /** The host's own root credentials (for a Forklift Host's Secret). */
  user: string;
  password: string;
  inMaintenance: boolean;
  /** vCenter's overall status of the host (HostSystem.overallStatus); anything but green is NotHealthy. */
  status: 'green' | 'yellow' | 'red' | 'gray';
  /**
   * The host's NFC bandwidth, shared equally by the disk transfers open on it (bytes per second,
   * test/sim/esxi.ts). Absent: unlimited, each transfer moving at its own bound alone (today's speed).
   */
  bandwidthBytesPerSecond?: number;
  /** What one transfer moves at most on its own (bytes per second). Absent: the sim's `mbPerSecond`. */
  perStreamBytesPerSecond?: number;
  /**
   * NFC connections the host serves at once (test/sim/esxi.ts NFC_CONNECTION_CEILING, 48 by default): past
   * it VixDiskLib_Open fails and CDI's importer exits with vddkOpenFailure()'s text.
   */
  nfcCeiling?: number;
}

export interface DiskFixture {
  key: number;
  /** Backing file, `[datastore1] web01/web01.vmdk`. */
  file: string;
  /** Datastore id (`datastore-N`). */
  datastore: string;
  capacity: number;
  /** vSphere disk mode (persistent, independent_persistent, independent_nonpersistent). */
  mode: string;
  /** Raw Device Mapping. */
  rdm: boolean;
  /** Shared with other VMs (multi-writer sharing). */
  shared: boolean;
  /** Per-disk Changed Block Tracking (default: the VM's). */
  changeTrackingEnabled: boolean;
}

export interface NicFixture {
  mac: string;
  /** Network id (`network-N`). */
  network: string;
}

export interface VMFaults {
  /** The transfer fails once it reaches this percentage (0–100). */
  failTransferAtPercent?: number;
  /** DataVolume progress freezes at 99.92% for `timings.conversionMs` before completing (CDI qemu-img convert). */
  conversionFreeze?: boolean;
  /** DataVolumes of this VM stay `AwaitingVDDK` forever. */
  awaitingVddk?: boolean;
  /** The transfer stops moving at this percentage (0–100) and never resumes, without an error (a VDDK
   *  connection that hangs mid-read); only a cancel ends it. */
  stallTransferAtPercent?: number;
  /**
   * Guest conversion (a Plan with skipGuestConversion false) fails in Forklift's ImageConversion step, the
   * virt-v2v pod ending Failed with this cause in its log: `seccomp` (the node's seccomp profile denies
   * passt its user namespace), `unsupportedGuest` (inspection finds no operating system virt-v2v can
   * convert), `diskNotFound` (a disk's VMDK is missing on its datastore when virt-v2v opens it).
   */
  conversionFailure?: ConversionFailure;
  /**
   * Warm: vCenter refuses the n-th snapshot this VM's import asks for (1 = the initial snapshot, 2 = the
   * first precopy's, ...) with its NoPermission fault: an account without VirtualMachine.State.CreateSnapshot.
   */
  snapshotDeniedAt?: number;
  /**
   * Warm: the CDI importer of the given precopy (1 = the initial full copy) fails `restarts` times before it
   * copies; CDI restarts it each time. Past Forklift's IMPORTER_RETRY (3) restarts the VM fails.
   */
  precopyImporterFailures?: { precopy: number; restarts: number };
}

export type ConversionFailure = 'seccomp' | 'unsupportedGuest' | 'diskNotFound';

export interface VMFixture {
  id: string;
  name: string;
  path: string;
  uuid: string;
  powerState: 'poweredOn' | 'poweredOff';
  cpuCount: number;
  coresPerSocket: number;
  memoryMB: number;
  firmware: 'bios' | 'efi';
  secureBoot: boolean;
  host: string;
  /**
   * VMware Tools as vCenter reports them (guest.toolsStatus / guest.toolsRunningStatus, what Forklift's inventory
   * serves as toolsStatus / toolsRunningStatus): toolsOk/guestToolsRunning by default; '' = not reported.
   */
  toolsStatus: string;
  toolsRunningStatus: string;
  /** vSphere guest id (default rhel9_64Guest, a guest Forklift's vm_os policy supports). */
  guestId: string;
  /** Changed Block Tracking on the VM (default false, vSphere's own default). */
  changeTrackingEnabled: boolean;
  /** Guest host name as VMware Tools report it ('' when the VM is off or Tools do not run). */
  hostName: string;
  /** Guest IPs as VMware Tools report them (none when the VM is off or Tools do not run). */
  guestIPs: string[];
  tpmEnabled: boolean;
  /** Virtual device kinds (VirtualUSBController, VirtualPCIPassthrough, VirtualSriovEthernetCard, ...). */
  devices: string[];
  disks: DiskFixture[];
  nics: NicFixture[];
  faults: VMFaults;
  /** The VM's current snapshot id (snapshot-N) when it has snapshots; '' when none. */
  snapshot: string;
  /**
   * Warm: the share of each disk the running guest rewrites per precopy interval (0-1, default 0.02). A
   * precopy, and the final copy at cutover, move the blocks changed since the previous snapshot.
   */
  changePerInterval: number;
}

export interface WorldFixture {
  /** Provider spec.url that selects this world (`https://vcenter.example.com/sdk`). */
  url: string;
  /** Accepted credentials (user carries the SSO domain). */
  user: string;
  password: string;
  /** PEM CA that signed the vCenter certificate: what a tenant puts in caCert. */
  caPEM: string;
  /** The vCenter's serving certificate (PEM). */
  certPEM: string;
  /** A CA that did NOT sign the vCenter certificate (x509 failures). */
  wrongCaPEM: string;
  /** SHA-1 thumbprint of the vCenter certificate (`AA:BB:…`), what Forklift ≤2.5 wanted. */
  thumbprint: string;
  datacenter: string;
  hosts: HostFixture[];
  datastores: Array<{ id: string; name: string }>;
  networks: Array<{ id: string; name: string }>;
  vms: VMFixture[];
}

export interface VCenterSpec {
  url: string;
  user?: string;
  password?: string;
  datacenter?: string;
  hosts?: Array<Partial<HostFixture> & { id: string; address: string }>;
  /** Names (ids become `datastore-N`) or explicit {id, name}. Default one: `datastore1`. */
  datastores?: Array<string | { id: string; name: string }>;
  /** Names (ids become `network-N`) or explicit {id, name}. Default one: `VM Network`. */
  networks?: Array<string | { id: string; name: string }>;
  vms?: Array<{
    id: string;
    name: string;
    path?: string;
    powerState?: 'poweredOn' | 'poweredOff';
    cpuCount?: number;
    coresPerSocket?: number;
    memoryMB?: number;
    firmware?: 'bios' | 'efi';
    secureBoot?: boolean;
    /** Host id; default the first host. */
    host?: string;
    /** Default toolsOk / guestToolsRunning; e.g. toolsNotInstalled, or guestToolsNotRunning. */
    toolsStatus?: string;
    toolsRunningStatus?: string;
    /** Default rhel9_64Guest. */
    guestId?: string;
    /** Default false (vSphere's default): Forklift's inventory then raises its CBT Warning. */
    changeTrackingEnabled?: boolean;
    /** Default the VM name while it runs with Tools, else ''. */
    hostName?: string;
    /** Default one 198.51.100.x address per NIC while it runs with Tools, else none. */
    guestIPs?: string[];
    tpmEnabled?: boolean;
    devices?: string[];
    /** Disks by size; datastore by id or name (default the first); file generated unless given. */
    disks?: Array<{ capacityGiB?: number; capacity?: number; datastore?: string; file?: string; mode?: string; rdm?: boolean; shared?: boolean; changeTrackingEnabled?: boolean }>;
    /** A pre-existing snapshot id (snapshot-N); default none. */
    snapshot?: string;
    /** Warm: the share of each disk rewritten per precopy interval (default 0.02). */
    changePerInterval?: number;
    /** NICs by network id or name. */
    nics?: Array<{ network: string; mac?: string }>;
    faults?: VMFaults;
  }>;
}

/** 16384 MiB/s: the sim's default `mbPerSecond` (a 16 GiB disk in about a second). */
const DEFAULT_STREAM_BYTES_PER_SECOND = 16384 * 2 ** 20;

export const SERVICE_CIDR = '10.96.0.0/12';

export function inServiceCIDR(ip: string): boolean {
  try {
    return ipaddr.parse(ip).match(ipaddr.parseCIDR(SERVICE_CIDR));
  } catch {
    return false;
  }
}

/** Builds a world fixture from a few lines; generates the TLS CA, certificate, wrong CA and thumbprint. */
export function vcenter(s: VCenterSpec): WorldFixture {
  const host = new URL(s.url).hostname;
  const ca = makeCA(`${host} CA`);
  const cert = makeServingCert(ca, host, /^[\d.]+$/.test(host) ? { ips: [host] } : { dns: [host] });
  const wrong = makeCA('some other CA');
  const named = (xs: Array<string | { id: string; name: string }> | undefined, dflt: string, prefix: string) =>
    (xs ?? [dflt]).map((x, i) => (typeof x === 'string' ? { id: `${prefix}-${i + 1}`, name: x } : x));
  const datastores = named(s.datastores, 'datastore1', 'datastore');
  const networks = named(s.networks, 'VM Network', 'network');
  const hosts: HostFixture[] = (s.hosts ?? [{ id: 'host-1', address: '192.0.2.10' }]).map((h) => ({
    reachable: !inServiceCIDR(h.address),
    otherAddresses: [],
    user: 'root',
    password: `esxi-${h.id}`,
    inMaintenance: false,
    status: 'green' as const,
    ...h,
  }));
  const byIdOrName = <T extends { id: string; name: string }>(xs: T[], ref: string | undefined, what: string): T => {
    const f = ref === undefined ? xs[0] : xs.find((x) => x.id === ref || x.name === ref);
    if (!f) throw new Error(`fixture: unknown ${what} ${ref}`);
    return f;
  };
  let mac = 0;
  let guestIP = 0;
  const vms: VMFixture[] = (s.vms ?? []).map((v) => {
    const powerState = v.powerState ?? 'poweredOn';
    const toolsStatus = v.toolsStatus ?? 'toolsOk';
    const toolsRunningStatus = v.toolsRunningStatus ?? 'guestToolsRunning';
    // What VMware Tools report of the guest (hostName, guestNetworks) exists only while they run.
    const guestKnown = powerState === 'poweredOn' && toolsRunningStatus === 'guestToolsRunning';
    const cbt = v.changeTrackingEnabled ?? false;
    return {
    id: v.id,
    name: v.name,
    path: v.path ?? `/${s.datacenter ?? 'dc1'}/vm/${v.name}`,
    uuid: createHash('sha256').update(`${s.url}/${v.id}`).digest('hex').replace(/^(.{8})(.{4})(.{4})(.{4})(.{12}).*/, '$1-$2-$3-$4-$5'),
    powerState,
    cpuCount: v.cpuCount ?? 2,
    coresPerSocket: v.coresPerSocket ?? 1,
    memoryMB: v.memoryMB ?? 2048,
    firmware: v.firmware ?? 'bios',
    secureBoot: v.secureBoot ?? false,
    host: v.host ?? hosts[0]!.id,
    toolsStatus,
    toolsRunningStatus,
    guestId: v.guestId ?? 'rhel9_64Guest',
    changeTrackingEnabled: cbt,
    hostName: v.hostName ?? (guestKnown ? v.name : ''),
    guestIPs: v.guestIPs ?? (guestKnown ? (v.nics ?? [{}]).map(() => `198.51.100.${(guestIP++ % 250) + 1}`) : []),
    tpmEnabled: v.tpmEnabled ?? false,
    devices: v.devices ?? [],
    disks: (v.disks ?? [{ capacityGiB: 16 }]).map((d, i) => {
      const ds = byIdOrName(datastores, d.datastore, 'datastore');
      return {
        key: 2000 + i,
        file: d.file ?? `[${ds.name}] ${v.name}/${v.name}${i ? `_${i}` : ''}.vmdk`,
        datastore: ds.id,
        capacity: d.capacity ?? Math.round((d.capacityGiB ?? 16) * 1024 ** 3),
        mode: d.mode ?? 'persistent',
        rdm: d.rdm ?? false,
        shared: d.shared ?? false,
        changeTrackingEnabled: d.changeTrackingEnabled ?? cbt,
      };
    }),
    nics: (v.nics ?? [{ network: networks[0]!.id }]).map((n) => ({
      network: byIdOrName(networks, n.network, 'network').id,
      mac: n.mac ?? `00:50:56:00:${(mac >> 8).toString(16).padStart(2, '0')}:${(mac++ & 255).toString(16).padStart(2, '0')}`,
    })),
    faults: v.faults ?? {},
    snapshot: v.snapshot ?? '',
    changePerInterval: v.changePerInterval ?? 0.02,
    };
  });
  for (const v of vms) if (!hosts.some((h) => h.id === v.host)) throw new Error(`fixture: VM ${v.id} on unknown host ${v.host}`);
  return {
    url: s.url,
    user: s.user ?? 'mtv@vsphere.local',
    password: s.password ?? 'vcenter-password',
    caPEM: ca.certPEM,
    certPEM: cert.certPEM,
    wrongCaPEM: wrong.certPEM,
    thumbprint: sha1Thumbprint(cert.certPEM),
    datacenter: s.datacenter ?? 'dc1',
    hosts,
    datastores,
    networks,
    vms,
  };
}

/** The live model of one vCenter: mutable (power state, faults) and read by tests for assertions. */
export class World {
  readonly fixture: WorldFixture;
  /**
   * Fault: vCenter refuses connections (an outage, a firewall change). Forklift's next connection test of
   * a Provider on this vCenter fails (ConnectionTestFailed, phase ConnectionFailed) until it is cleared.
   */
  connectionDown = false;
  /**
   * Fault: packets to vCenter are dropped (a firewall that drops rather than refuses, a missing route): a
   * connection hangs instead of failing. Forklift's Secret webhook then stalls on the login until the API
   * server gives up on it (`timings.secretWebhookTimeoutSeconds`), and the Provider's connection test fails
   * with an i/o timeout, until it is cleared.
   */
  packetsDropped = false;
  /** Logins Forklift's Secret webhook attempted at this vCenter, one per create/update of a provider Secret. */
  secretWebhookLogins = 0;
  /**
   * Failed logins Forklift made with wrong credentials, keyed `vcenter` or by host id: a real vCenter or
   * ESXi host locks the account out after a few of them, so tests count them.
   */
  readonly failedLogins: Record<string, number> = {};
  /** Snapshot tasks vCenter ran for warm imports, in order (tests check every snapshot is removed again). */
  readonly snapshotLog: Array<{ vm: string; op: 'create' | 'remove'; snapshot: string }> = [];
  private snapshotSeq = 0;
  private taskSeq = 0;
  /**
   * The ESXi hosts' NFC service as the disk transfers meet it: each disk copy opens a stream on its VM's
   * host, shares the host's bandwidth and fails past its ceiling (test/sim/esxi.ts, played by forklift.ts).
   */
  readonly esxi: EsxiHosts;
  /** `streamBytesPerSecond`: a transfer's own bound where its host names none (the sim's mbPerSecond). */
  constructor(f: WorldFixture, o: { streamBytesPerSecond?: number } = {}) {
    this.fixture = structuredClone(f);
    const stream = o.streamBytesPerSecond ?? DEFAULT_STREAM_BYTES_PER_SECOND;
    this.esxi = new EsxiHosts(
      this.fixture.hosts.map((h) => ({
        id: h.id,
        bandwidthBytesPerSecond: h.bandwidthBytesPerSecond ?? Infinity,
        perStreamBytesPerSecond: h.perStreamBytesPerSecond ?? stream,
        ...(h.nfcCeiling !== undefined ? { connectionCeiling: h.nfcCeiling } : {}),
      })),
      Date.now(),
    );
  }
  /** The most disk transfers that were open at once on the host (its NFC streams), since the sim started. */
  peakTransfers(hostId: string): number {
    return this.esxiStats().find((s) => s.id === hostId)?.peak ?? 0;
  }
  /** Per host: its ceiling, bandwidth, peak of open transfers, opens refused, transfers started, bytes moved. */
  esxiStats(): HostStats[] {
    return this.esxi.stats();
  }
  get url(): string {
    return this.fixture.url;
  }
  vm(id: string): VMFixture | undefined {
    return this.fixture.vms.find((v) => v.id === id);
  }
  host(id: string): HostFixture | undefined {
    return this.fixture.hosts.find((h) => h.id === id);
  }
  /** Counts one failed login (see failedLogins). */
  loginFailed(target: string): void {
    this.failedLogins[target] = (this.failedLogins[target] ?? 0) + 1;
  }
  /**
   * VirtualMachine.CreateSnapshot_Task as vCenter answers Forklift's call (quiesce false, memory false:
   * kubev2v/forklift@v2.11.5:pkg/controller/plan/adapter/vsphere/client.go CreateSnapshot): a task id, the
   * snapshot it makes becoming the VM's current one; or the NoPermission fault for the faulted attempt.
   */
  createSnapshot(vmId: string): { snapshot: string; task: string } {
    const vm = this.vm(vmId)!;
    const n = this.snapshotLog.filter((e) => e.vm === vmId && e.op === 'create').length + 1;
    if (vm.faults.snapshotDeniedAt === n) throw new Error(NO_PERMISSION);
    const snapshot = `snapshot-${++this.snapshotSeq}`;
    this.snapshotLog.push({ vm: vmId, op: 'create', snapshot });
    vm.snapshot = snapshot;
    return { snapshot, task: `task-${++this.taskSeq}` };
  }
  /** VirtualMachineSnapshot.RemoveSnapshot_Task (children false): the VM keeps no snapshot once its last is gone. */
  removeSnapshot(vmId: string, snapshot: string): string {
    const vm = this.vm(vmId)!;
    this.snapshotLog.push({ vm: vmId, op: 'remove', snapshot });
    if (vm.snapshot === snapshot) vm.snapshot = '';
    return `task-${++this.taskSeq}`;
  }
  /** Snapshots of the VM created and not yet removed. */
  liveSnapshots(vmId: string): string[] {
    const log = this.snapshotLog.filter((e) => e.vm === vmId);
    return log.filter((e) => e.op === 'create' && !log.some((r) => r.op === 'remove' && r.snapshot === e.snapshot)).map((e) => e.snapshot);
  }
  /** Whether disk traffic to `address` (of host `hostId`) reaches it. */
  reachable(hostId: string, address: string): boolean {
    const h = this.host(hostId);
    if (!h || inServiceCIDR(address)) return false;
    return (address === h.address && h.reachable) || h.otherAddresses.includes(address);
  }
}

/**
 * vCenter's NoPermission fault as govmomi reports it (vim25 soap fault "ServerFaultCode: " + the fault's
 * localized message) for a call the session's privileges do not allow.
 */
export const NO_PERMISSION = 'ServerFaultCode: Permission to perform this operation was denied.';

/** The content identity of a source disk: what a filled PV carries so tests can prove nothing was lost or copied. */
export function contentIdentity(url: string, vmId: string, d: DiskFixture): string {
  return createHash('sha256').update(`${url}\n${vmId}\n${d.file}\n${d.capacity}`).digest('hex');
}

/** Same URL modulo a trailing slash and letter case of the host. */
export function sameUrl(a: string, b: string): boolean {
  try {
    const x = new URL(a);
    const y = new URL(b);
    return x.protocol === y.protocol && x.host.toLowerCase() === y.host.toLowerCase() && x.pathname.replace(/\/$/, '') === y.pathname.replace(/\/$/, '');
  } catch {
    return a === b;
  }
}
