// What the platform's vm-instance chart carries of an imported VM, on a platform whose chart is
// Cozystack v1.6.2's: its `vm-instance` ApplicationDefinition states a values schema without `firmware`
// and without a MAC value (cozystack/cozystack@v1.6.2:packages/system/vm-instance-rd/cozyrds/vm-instance.yaml;
// served by test/sim/cozystack.ts). An EFI guest would start with BIOS there: it gets the EFI instance
// profile of its OS family instead, and its status says so; every NIC's source MAC and new one are
// listed, with what else the chart drops.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { freshNamespace, kubectl } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-shape.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.10' }],
  vms: [
    { id: 'vm-1', name: 'efi01', firmware: 'efi', secureBoot: false, guestId: 'rhel9_64Guest', disks: [{ capacityGiB: 2 }], nics: [{ network: 'network-1', mac: '00:50:56:aa:10:01' }] },
    { id: 'vm-2', name: 'bsd01', firmware: 'efi', secureBoot: false, guestId: 'freebsd13_64Guest', disks: [{ capacityGiB: 2 }] },
  ],
});

let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'shape-fast', reclaimPolicy: 'Delete' }], sim: { vmInstanceChart: 'v1.6.2' } });
  c = booted.c;
});

after(async () => {
  await booted?.shutdown();
});

async function importVMs(ns: string): Promise<VMImportTask> {
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  await c.create(GVRs.VMImportTask, {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name: 'import', namespace: ns },
    spec: { sourceRef: { name: 'vc' }, storageClass: 'shape-fast', vms: [{ id: 'vm-1' }, { id: 'vm-2' }] },
  } as KubeObject);
  const wait = await kubectl(['wait', '--for=condition=Finished', '-n', ns, 'vmimporttask/import', '--timeout=180s'], { timeoutMs: 190_000 });
  const t = (await c.get(GVRs.VMImportTask, ns, 'import')) as unknown as VMImportTask;
  assert.equal(wait.code, 0, `kubectl wait: ${wait.stderr} — status: ${JSON.stringify(t.status, null, 1)}`);
  return t;
}

let task: VMImportTask | undefined;
let ns = '';
async function imported(): Promise<VMImportTask> {
  if (!task) {
    ns = await freshNamespace('shape');
    task = await importVMs(ns);
  }
  return task;
}

test('an EFI Linux guest imported onto a chart without a firmware value ends on the EFI profile linux.efi, and its status says so', async () => {
  const t = await imported();
  const vm = t.status?.vms?.find((v) => v.id === 'vm-1');
  assert.equal(vm?.phase, 'Succeeded', JSON.stringify(vm));
  assert.equal(vm.shape?.instanceProfile, 'linux.efi');
  assert.match(vm.shape?.firmware ?? '', /the source boots with UEFI and the platform's vm-instance takes no firmware value: instance profile linux\.efi makes it boot with UEFI/);
  const vmi = (await c.get(GVRs.VMInstance, ns, 'efi01'))!;
  const spec = vmi.spec as { instanceProfile?: string; firmware?: unknown };
  assert.equal(spec.instanceProfile, 'linux.efi');
  assert.equal(spec.firmware, undefined, 'no value the chart would ignore');
  // The chart renders the profile as the VirtualMachine's preference (vm.yaml), which sets EFI.
  const rendered = (await c.get(GVRs.VirtualMachine, ns, 'vm-instance-efi01'))!;
  assert.deepEqual((rendered.spec as { preference?: unknown }).preference, { kind: 'VirtualMachineClusterPreference', name: 'linux.efi' });
});

test('each NIC is listed with its source MAC and the new one (assigned at first start), and what the chart drops is listed', async () => {
  const t = await imported();
  const vm = t.status?.vms?.find((v) => v.id === 'vm-1');
  assert.deepEqual(vm?.shape?.nics, [{ index: 0, network: 'pod', sourceMAC: '00:50:56:aa:10:01', kept: false }]);
  const notCarried = vm?.shape?.notCarried ?? [];
  assert.ok(notCarried.some((n) => /^the MAC address of NIC 0 \(pod, 00:50:56:aa:10:01\)/.test(n)), notCarried.join('; '));
  assert.ok(notCarried.some((n) => n.startsWith('firmware.serial ')), notCarried.join('; '));
});

test('an EFI guest of an OS no Cozystack EFI profile serves is imported, and its status says it will not boot and why', async () => {
  const t = await imported();
  const vm = t.status?.vms?.find((v) => v.id === 'vm-2');
  assert.equal(vm?.phase, 'Succeeded', JSON.stringify(vm));
  assert.equal(vm.shape?.instanceProfile, undefined);
  assert.match(vm.shape?.firmware ?? '', /^will not boot: the source boots with UEFI, the platform's vm-instance takes no firmware value \(it would start with BIOS\), and the guest's operating system is neither Linux nor Windows/);
  assert.match(vm.shape?.firmware ?? '', /name an EFI instanceProfile for this VM in the task/);
});
