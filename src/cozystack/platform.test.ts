import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BASELINE_CAPABILITIES, carryShape, efiProfileFor, guestFactsFrom, shapeStatus, vmInstanceCapabilities, type VMInstanceCapabilities } from './platform.ts';
import { readScaffoldingShape } from './kubevirt.ts';
import { renderVMInstance } from './render.ts';
import type { KubeObject } from '../runtime/kube.ts';

// The top-level properties and the networks item of v1.6.2's vm-instance values schema
// (cozystack/cozystack@v1.6.2:packages/system/vm-instance-rd/cozyrds/vm-instance.yaml), descriptions dropped.
const V162_PROPS = ['external', 'externalMethod', 'externalPorts', 'externalAllowICMP', 'runStrategy', 'instanceType', 'instanceProfile', 'disks', 'subnets', 'gpus', 'cpuModel', 'resources', 'sshKeys', 'cloudInit', 'cloudInitSeed'];
function appDef(extra: Record<string, unknown> = {}, nic: Record<string, unknown> = {}): KubeObject {
  const properties: Record<string, unknown> = Object.fromEntries(V162_PROPS.map((p) => [p, { type: 'string' }]));
  properties.networks = { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, ...nic } } };
  Object.assign(properties, extra);
  return { apiVersion: 'cozystack.io/v1alpha1', kind: 'ApplicationDefinition', metadata: { name: 'vm-instance' }, spec: { application: { kind: 'VMInstance', openAPISchema: JSON.stringify({ title: 'Chart Values', type: 'object', properties }) } } };
}

test("the platform's capabilities are read from the vm-instance ApplicationDefinition's values schema: v1.6.2 takes neither firmware nor a MAC", () => {
  assert.deepEqual(vmInstanceCapabilities(appDef()), { firmware: false, macAddress: false });
  assert.deepEqual(vmInstanceCapabilities(appDef({ firmware: { type: 'object' } })), { firmware: true, macAddress: false });
  assert.deepEqual(vmInstanceCapabilities(appDef({}, { macAddress: { type: 'string' } })), { firmware: false, macAddress: true });
  assert.equal(vmInstanceCapabilities(undefined), undefined);
  assert.equal(vmInstanceCapabilities({ metadata: { name: 'vm-instance' }, spec: { application: { openAPISchema: '{not json' } } }), undefined);
  assert.equal(vmInstanceCapabilities({ metadata: { name: 'vm-instance' }, spec: { application: { openAPISchema: 'x'.repeat((1 << 20) + 1) } } }), undefined, 'an oversized schema is not parsed');
});

function scaffold(domain: Record<string, unknown>, networks: unknown[] = []): KubeObject {
  return { metadata: { name: 'vm', namespace: 'tenant-a' }, spec: { template: { spec: { domain, networks, volumes: [{ name: 'd0', persistentVolumeClaim: { claimName: 'c0' } }] } } } };
}
const EFI = { firmware: { bootloader: { efi: { secureBoot: false } }, serial: '4230-1234' }, cpu: { cores: 2 }, memory: { guest: '4Gi' } };

test('an EFI profile is chosen by OS family, Secure Boot, TPM and drivers; none for an unknown or other OS', () => {
  const shape = (o: { secureBoot?: boolean; tpm?: boolean }) => ({ firmware: { bootloader: 'uefi' as const, secureBoot: o.secureBoot ?? false }, tpm: o.tpm });
  assert.deepEqual(efiProfileFor(shape({}), { os: 'linux' }), { profile: 'linux.efi' });
  assert.deepEqual(efiProfileFor(shape({ secureBoot: true }), { os: 'linux' }), { profile: 'rhel.9' });
  assert.deepEqual(efiProfileFor(shape({}), { os: 'windows' }), { profile: 'windows.2k19' });
  assert.deepEqual(efiProfileFor(shape({ tpm: true }), { os: 'windows' }), { profile: 'windows.2k22' });
  assert.deepEqual(efiProfileFor(shape({ tpm: true }), { os: 'windows', converted: true }), { profile: 'windows.2k22.virtio' });
  assert.ok('none' in efiProfileFor(shape({}), { os: 'other' }));
  assert.ok('none' in efiProfileFor(shape({}), {}));
});

test('an EFI VM imported on a platform without a firmware value ends on an EFI profile, written without firmware, and says why', () => {
  const shape = readScaffoldingShape(scaffold(EFI));
  const carriage = carryShape(shape, BASELINE_CAPABILITIES, { os: 'linux' });
  assert.equal(carriage.instanceProfile, 'linux.efi');
  assert.match(carriage.profileReason!, /the source boots with UEFI and the platform's vm-instance takes no firmware value: instance profile linux\.efi/);
  const r = renderVMInstance({ namespace: 'tenant-a', name: 'web', vm: { id: 'vm-1' }, shape, diskNames: ['web-disk-0'], markers: { taskUid: 'u', taskName: 't', vmId: 'vm-1' }, carriage });
  assert.ok(r.ok);
  assert.equal((r.object.spec as Record<string, unknown>).instanceProfile, 'linux.efi');
  assert.equal('firmware' in (r.object.spec as object), false, 'no value the chart would silently ignore');

  // The task's own profile wins, and nothing is chosen for it.
  const named = carryShape(shape, BASELINE_CAPABILITIES, { os: 'linux' }, 'fedora');
  assert.equal(named.instanceProfile, undefined);
  const r2 = renderVMInstance({ namespace: 'tenant-a', name: 'web', vm: { id: 'vm-1', instanceProfile: 'fedora' }, shape, diskNames: ['web-disk-0'], markers: { taskUid: 'u', taskName: 't', vmId: 'vm-1' }, carriage: named });
  assert.ok(r2.ok);
  assert.equal((r2.object.spec as Record<string, unknown>).instanceProfile, 'fedora');
});

test('on a platform with a firmware value the firmware is carried and no profile is chosen', () => {
  const shape = readScaffoldingShape(scaffold(EFI));
  const carriage = carryShape(shape, { firmware: true, macAddress: false }, { os: 'linux' });
  assert.equal(carriage.instanceProfile, undefined);
  const r = renderVMInstance({ namespace: 'tenant-a', name: 'web', vm: { id: 'vm-1' }, shape, diskNames: ['web-disk-0'], markers: { taskUid: 'u', taskName: 't', vmId: 'vm-1' }, carriage });
  assert.ok(r.ok);
  assert.deepEqual((r.object.spec as Record<string, unknown>).firmware, { bootloader: 'uefi', secureBoot: false });
});

test('an EFI VM of an unknown OS on a platform without firmware is said not to boot, and why', () => {
  const c = carryShape(readScaffoldingShape(scaffold(EFI)), BASELINE_CAPABILITIES, {});
  assert.match(c.wontBoot!, /would start with BIOS.*guest id.*name an EFI instanceProfile/);
});

const NICS = {
  ...EFI,
  devices: {
    interfaces: [
      { name: 'net-0', macAddress: '00:50:56:aa:00:01', masquerade: {} },
      { name: 'net-1', macAddress: '00:50:56:aa:00:02', bridge: {} },
    ],
    tpm: { persistent: true },
    inputs: [{ type: 'tablet', name: 'tablet', bus: 'usb' }],
  },
  clock: { timezone: 'Europe/Berlin' },
};
const NETS = [{ name: 'net-0', pod: {} }, { name: 'net-1', multus: { networkName: 'tenant-a/backup' } }];

test('each NIC is reported with its source MAC and the new one; a platform without macAddress keeps none', () => {
  const shape = readScaffoldingShape(scaffold(NICS, NETS));
  const c = carryShape(shape, BASELINE_CAPABILITIES, { os: 'windows' });
  assert.deepEqual(c.nics, [
    { index: 0, network: 'pod', sourceMAC: '00:50:56:aa:00:01', kept: false },
    { index: 1, network: 'backup', sourceMAC: '00:50:56:aa:00:02', kept: false },
  ]);
  assert.ok(c.notCarried.includes('the MAC address of NIC 0 (pod, 00:50:56:aa:00:01), NIC 1 (backup, 00:50:56:aa:00:02) (a new one is assigned when the VM first starts)'));
});

test('where the schema offers networks[].macAddress, a Multus NIC keeps its source MAC; the pod NIC, not listed in networks[], does not', () => {
  const shape = readScaffoldingShape(scaffold(NICS, NETS));
  const caps: VMInstanceCapabilities = { firmware: true, macAddress: true };
  const c = carryShape(shape, caps, { os: 'windows' });
  assert.deepEqual(c.nics.map((n) => [n.network, n.mac, n.kept]), [['pod', undefined, false], ['backup', '00:50:56:aa:00:02', true]]);
  const r = renderVMInstance({ namespace: 'tenant-a', name: 'web', vm: { id: 'vm-1' }, shape, diskNames: ['web-disk-0'], markers: { taskUid: 'u', taskName: 't', vmId: 'vm-1' }, carriage: c });
  assert.ok(r.ok);
  assert.deepEqual((r.object.spec as Record<string, unknown>).networks, [{ name: 'backup', macAddress: '00:50:56:aa:00:02' }]);
  assert.ok(c.notCarried.includes('the MAC address of NIC 0 (pod, 00:50:56:aa:00:01) (a new one is assigned when the VM first starts)'));
});

test('what the chart cannot carry is listed: firmware.serial, the timezone, the persistent TPM, the tablet', () => {
  const shape = readScaffoldingShape(scaffold(NICS, NETS));
  const c = carryShape(shape, { firmware: true, macAddress: true }, { os: 'windows' });
  assert.deepEqual(c.notCarried.slice(1), [
    'firmware.serial "4230-1234" (the source\'s system serial; the chart sets its own firmware UUID)',
    'the clock\'s timezone "Europe/Berlin" (the guest\'s clock starts in UTC)',
    'the persistent TPM (BitLocker and Windows 11 need one)',
    'the tablet input device (the mouse pointer is relative in a console)',
  ]);
  // Without a firmware value, the TPM profile gives a new TPM: what is lost is its contents.
  const viaProfile = carryShape(shape, BASELINE_CAPABILITIES, { os: 'windows' });
  assert.equal(viaProfile.instanceProfile, 'windows.2k22');
  assert.ok(viaProfile.notCarried.includes("the TPM's contents (the profile gives a new, empty persistent TPM: BitLocker asks for its recovery key)"));
});

test("the guest's OS family comes from its source's inventory; a VM the inventory does not list has none", () => {
  const source = { status: { inventory: { total: 1, listed: 1, truncated: false, vms: [{ id: 'vm-7', name: 'db', path: '/dc/vm/db', os: 'windows' as const }] } } };
  assert.deepEqual(guestFactsFrom(source as never, 'vm-7', true), { os: 'windows', converted: true });
  assert.deepEqual(guestFactsFrom(source as never, 'vm-8', false), { converted: false });
  assert.deepEqual(guestFactsFrom(undefined, 'vm-7', false), { converted: false });
});

test("the VM's status says which profile stands in for the firmware and why, each NIC's MACs, and what was not carried", () => {
  const shape = readScaffoldingShape(scaffold({ ...EFI, devices: { interfaces: [{ name: 'n0', macAddress: '00:50:56:aa:00:01' }] } }, [{ name: 'n0', pod: {} }]));
  const s = shapeStatus(carryShape(shape, BASELINE_CAPABILITIES, { os: 'linux' }))!;
  assert.equal(s.instanceProfile, 'linux.efi');
  assert.match(s.firmware!, /instance profile linux\.efi makes it boot with UEFI/);
  assert.deepEqual(s.nics, [{ index: 0, network: 'pod', sourceMAC: '00:50:56:aa:00:01', kept: false }]);
  assert.ok(s.notCarried!.some((n) => n.startsWith('firmware.serial "4230-1234"')));
  const none = shapeStatus(carryShape(shape, BASELINE_CAPABILITIES, {}))!;
  assert.equal(none.instanceProfile, undefined);
  assert.match(none.firmware!, /^will not boot: the source boots with UEFI/);
  assert.equal(shapeStatus(carryShape(readScaffoldingShape(scaffold({ cpu: { cores: 1 }, memory: { guest: '1Gi' } })), BASELINE_CAPABILITIES, {})), undefined, 'nothing to say');
});
