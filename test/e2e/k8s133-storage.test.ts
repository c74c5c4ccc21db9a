// Kubernetes 1.33's PV deletion protection, as the CSI provisioner plays it (test/sim/storage.ts,
// csiPVFinalizer; HonorPVReclaimPolicy is GA in 1.33, which Cozystack ≥ 1.5 requires): the provisioner
// keeps `external-provisioner.volume.kubernetes.io/finalizer` on its volumes while their reclaim policy
// is Delete and drops it the moment the policy is Retain. The handoff flips the policy of the very
// volume it hands over (Retain, then the class's Delete again), so each flip is answered by the
// provisioner's own write to the same PV; the import still ends copy-free on that volume, which carries
// the finalizer again, and a tenant deleting the VMDisk later gets the volume reclaimed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CSI_PV_FINALIZER, vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { freshNamespace, kubectl, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-k133.example.com/sdk';
const world = vcenter({ url: URL_VC, hosts: [{ id: 'host-1', address: '192.0.2.10' }], vms: [{ id: 'vm-1', name: 'web01', disks: [{ capacityGiB: 4 }] }] });

let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'k133-del', reclaimPolicy: 'Delete' }], sim: { csiPVFinalizer: true } });
  c = booted.c;
});

after(async () => {
  await booted?.shutdown();
});

type PV = KubeObject & { spec?: { persistentVolumeReclaimPolicy?: string }; status?: { phase?: string } };

test('with the CSI provisioner guarding its volumes, a VM is handed off copy-free and its volume ends on Delete with the finalizer back; deleting the disk reclaims it', async () => {
  const ns = await freshNamespace('k133');
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'import', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'k133-del', vms: [{ id: 'vm-1', name: 'web-01' }] } } as KubeObject);

  const wait = await kubectl(['wait', '--for=condition=Ready', '-n', ns, 'vmimporttask/import', '--timeout=120s'], { timeoutMs: 130_000 });
  const t = (await c.get(GVRs.VMImportTask, ns, 'import')) as unknown as VMImportTask;
  assert.equal(wait.code, 0, `${wait.stderr} — status: ${JSON.stringify(t.status)}`);
  const disk = t.status!.vms![0]!.diskHandoffs![0]!;
  assert.ok(disk.volumeName);

  // The volume Forklift filled is the VMDisk's, on the class's policy, guarded again by the provisioner.
  const pv = await waitFor('the handed-off volume guarded again', async () => {
    const v = (await c.get(GVRs.PersistentVolume, undefined, disk.volumeName!)) as PV | undefined;
    return v?.spec?.persistentVolumeReclaimPolicy === 'Delete' && (v.metadata?.finalizers ?? []).includes(CSI_PV_FINALIZER) ? v : undefined;
  });
  const claim = (await c.get(GVRs.PersistentVolumeClaim, ns, `vm-disk-${disk.vmDisk}`)) as (KubeObject & { spec?: { volumeName?: string } }) | undefined;
  assert.equal(claim?.spec?.volumeName, pv.metadata!.name, "the VMDisk's claim is bound to the very volume the transfer filled");

  // The tenant deletes the VM and its disk: the provisioner deletes the volume and releases its finalizer.
  await c.delete(GVRs.VMInstance, ns, 'web-01');
  await c.delete(GVRs.VMDisk, ns, disk.vmDisk);
  await waitFor('the volume reclaimed', async () => !(await c.get(GVRs.PersistentVolume, undefined, disk.volumeName!)), { timeoutMs: 60_000 });
});
