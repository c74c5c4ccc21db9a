// Warm-import preflight on the real API server with the simulator: a VM that Forklift would refuse to copy
// warm (CBT off, pre-existing snapshots, RDM / independent disks) fails before any Forklift object exists,
// with our fix and Forklift's own words; the same VM passes a cold task's preflight, and a CBT-enabled
// VM passes a warm one's.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask, VMImportTaskSpec } from '../../src/api/types.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-warm-preflight.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  vms: [
    { id: 'vm-1', name: 'noctk01', disks: [{ capacityGiB: 1 }] },
    { id: 'vm-2', name: 'snap01', changeTrackingEnabled: true, snapshot: 'snapshot-12', disks: [{ capacityGiB: 1 }] },
    { id: 'vm-3', name: 'rdm01', changeTrackingEnabled: true, disks: [{ capacityGiB: 1 }, { capacityGiB: 1, rdm: true }, { capacityGiB: 1, mode: 'independent_persistent' }] },
    { id: 'vm-4', name: 'erp01', changeTrackingEnabled: true, disks: [{ capacityGiB: 1 }, { capacityGiB: 1 }] },
  ],
});

let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'wpf-fast' }] });
  c = booted.c;
});

after(async () => {
  await booted?.shutdown();
});

async function readyNamespace(prefix: string): Promise<string> {
  const ns = await freshNamespace(prefix);
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  return ns;
}

async function createTask(ns: string, spec: Partial<VMImportTaskSpec> & { vms: VMImportTaskSpec['vms'] }): Promise<void> {
  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 't', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'wpf-fast', ...spec } } as KubeObject);
}

const getTask = async (ns: string) => (await c.get(GVRs.VMImportTask, ns, 't')) as unknown as VMImportTask | undefined;

async function forkliftObjects(ns: string): Promise<string[]> {
  const out: string[] = [];
  for (const gvr of [GVRs.NetworkMap, GVRs.StorageMap, GVRs.Plan, GVRs.Migration, GVRs.DataVolume]) {
    for (const o of (await c.list(gvr, ns)).items) out.push(`${gvr.kind}/${o.metadata?.name}`);
  }
  return out;
}

/** A warm task for `vmId` ends Failed with `reason` (on the VM and on Ready), and nothing of Forklift's exists. */
async function assertRefusedWarm(prefix: string, vmId: string, reason: string, message: RegExp): Promise<void> {
  const ns = await readyNamespace(prefix);
  await createTask(ns, { mode: 'warm', vms: [{ id: vmId }] });
  const t = await waitFor('the task to end', async () => {
    const x = await getTask(ns);
    return x?.status?.completedAt ? x : undefined;
  }, { timeoutMs: 60_000 });
  assert.equal(t.status?.phase, 'Failed');
  const vm = t.status?.vms?.[0];
  assert.equal(vm?.reason, reason, vm?.message);
  assert.match(vm?.message ?? '', message);
  assert.equal(t.status?.conditions?.find((x) => x.type === 'Ready')?.reason, reason);
  assert.deepEqual(await forkliftObjects(ns), []);
}

test('a warm task for a VM without changed block tracking fails with ChangeTrackingDisabled before any Forklift object exists, with the fix and Forklift\'s words', async () => {
  await assertRefusedWarm(
    'wpf-ctk',
    'vm-1',
    'ChangeTrackingDisabled',
    /CBT\) is not enabled on VM "noctk01" \(disks scsi0:0\).*ctkEnabled=TRUE.*or import it cold.*Forklift says: Changed Block Tracking \(CBT\) has not been enabled on some VM/,
  );
});

test('a warm task for a VM with snapshots fails with SnapshotsPresent before any Forklift object exists', async () => {
  await assertRefusedWarm('wpf-snap', 'vm-2', 'SnapshotsPresent', /VM "snap01" has snapshots \(current "snapshot-12"\).*Forklift says: VM has pre-existing snapshots which are incompatible with warm migration\./);
});

// RDM and independent disks are Critical for any import in Forklift's policies (rdm_disk.rego,
// disk_mode.rego at kubev2v/forklift@v2.11.5:validation/policies/io/konveyor/forklift/vmware/), so the readiness assessment blocks the VM before the warm checks run.
test('a warm task for a VM with an RDM and an independent disk fails as Blocked, in Forklift\'s words for both disks, before any Forklift object exists', async () => {
  await assertRefusedWarm('wpf-rdm', 'vm-3', 'VMBlocked', /VM rdm01 cannot be imported: Independent disk detected \(Critical, Forklift\).*Raw Device Mapped disk detected \(Critical, Forklift\)/);
});

test('the warm checks apply to warm tasks only: a cold task passes preflight for the VM without CBT, and a warm one for a CBT-enabled two-disk VM', async () => {
  const cases: Array<[string, Partial<VMImportTaskSpec> & { vms: VMImportTaskSpec['vms'] }]> = [
    ['wpf-cold', { vms: [{ id: 'vm-1' }] }],
    ['wpf-ok', { mode: 'warm', vms: [{ id: 'vm-4' }] }],
  ];
  for (const [prefix, spec] of cases) {
    const ns = await readyNamespace(prefix);
    await createTask(ns, spec);
    // Preflight passed once the VM names its Forklift Plan and that Plan exists.
    const plan = await waitFor(`${prefix}: the VM to pass preflight`, async () => {
      const vm = (await getTask(ns))?.status?.vms?.[0];
      assert.notEqual(vm?.phase, 'Failed', `${vm?.reason}: ${vm?.message}`);
      return vm?.plan && (await c.get(GVRs.Plan, ns, vm.plan)) ? vm.plan : undefined;
    }, { timeoutMs: 60_000 });
    assert.ok(plan);
  }
});
