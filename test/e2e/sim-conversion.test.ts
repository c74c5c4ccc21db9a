// The simulator plays Forklift v2.11.5's guest-conversion itinerary on vSphere (virt-v2v copies while it
// converts) through hand-written Plan/Migration objects (no controller): the steps, the conversion pod, what
// it leaves behind, and its three failures — told apart only by the pod's log, as in Forklift.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootSim, type BootedSim } from './fixtures.ts';
import { type ConversionFailure, type Sim, CONTENT_ANNOTATION, GUEST_CONVERSION_FAILED, contentIdentity, vcenter } from '../sim/index.ts';
import type { Rest } from '../sim/testing.ts';
import { R, type Obj, condition, createMigration, createPlan, forkliftSetup, listIn } from '../sim/testing.ts';

const URL_C = 'https://vcenter-conv.example.com/sdk';
const FAILURES: Array<[ConversionFailure, RegExp]> = [
  ['seccomp', /passt.*Couldn't create user namespace: Operation not permitted/],
  ['unsupportedGuest', /inspection could not detect the source guest/],
  ['diskNotFound', /VixDiskLib_Open: \[datastore1\] bad-disk\/bad-disk_1\.vmdk: .*cannot find the file/],
];
const world = vcenter({
  url: URL_C,
  hosts: [{ id: 'host-1', address: '192.0.2.21' }],
  vms: [
    { id: 'vm-1', name: 'app01', firmware: 'bios', disks: [{ capacityGiB: 16 }, { capacityGiB: 8 }] },
    { id: 'vm-2', name: 'seccomp', disks: [{ capacityGiB: 4 }], faults: { conversionFailure: 'seccomp' } },
    { id: 'vm-3', name: 'unsupported', disks: [{ capacityGiB: 4 }], faults: { conversionFailure: 'unsupportedGuest' } },
    { id: 'vm-4', name: 'bad-disk', disks: [{ capacityGiB: 4 }, { capacityGiB: 4 }], faults: { conversionFailure: 'diskNotFound' } },
  ],
});

describe('simulated Forklift: guest conversion (virt-v2v)', () => {
  let sim: Sim;
  let rest: Rest;
  let booted: BootedSim;
  before(async () => {
    booted = await bootSim({ worlds: [world], storageClasses: [{ name: 'sim-conv', reclaimPolicy: 'Delete' }], sim: { mbPerSecond: 8192 } });
    ({ sim, rest } = booted);
  });
  after(async () => {
    await booted?.shutdown();
  });

  async function run(prefix: string, vmId: string): Promise<{ ns: string; plan: Obj; mig: Obj; done: Obj }> {
    const ns = await freshNamespace(prefix);
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-conv' });
    await waitFor('StorageMap Ready', async () => condition(await rest.get(R.StorageMap, ns, 'sto'), 'Ready'));
    const plan = await createPlan(rest, ns, 'p', [{ id: vmId }], { skipGuestConversion: false, preserveStaticIPs: true, deleteVmOnFailMigration: false });
    await waitFor('Plan Ready', async () => condition(await rest.get(R.Plan, ns, 'p'), 'Ready'));
    const mig = await createMigration(rest, plan);
    const done = await waitFor('Migration done', async () => {
      const m = await rest.get(R.Migration, ns, mig.metadata.name);
      return condition(m, 'Succeeded') || condition(m, 'Failed') ? m : undefined;
    }, { timeoutMs: 60_000 });
    return { ns, plan, mig, done };
  }

  test('a converted two-disk VM goes DiskAllocation → ImageConversion → DiskTransferV2v in a virt-v2v pod and leaves the VirtualMachine owning the filled claims', async () => {
    const { ns, plan, mig, done } = await run('sim-conv', 'vm-1');
    assert.ok(condition(done, 'Succeeded'), JSON.stringify(done.status));
    const vmStatus = (await rest.get(R.Plan, ns, 'p'))!.status.migration.vms[0];
    assert.deepEqual(vmStatus.pipeline.map((s: { name: string; phase: string }) => `${s.name}:${s.phase}`), [
      'Initialize:Completed',
      'DiskAllocation:Completed',
      'ImageConversion:Completed',
      'DiskTransferV2v:Completed',
      'VirtualMachineCreation:Completed',
    ]);
    const copy = vmStatus.pipeline[3];
    assert.equal(copy.progress.total, 16 * 1024 + 8 * 1024);
    assert.equal(copy.progress.completed, copy.progress.total);

    // The conversion pod: one, Forklift's labels, the restricted security context, the claims mounted; left Succeeded.
    const pods = await listIn(rest, R.Pod, ns);
    assert.equal(pods.length, 1);
    const pod = pods[0]!;
    assert.match(pod.metadata.name, /^p-vm-1-/);
    assert.deepEqual(pod.metadata.labels, { plan: plan.metadata.uid, migration: mig.metadata.uid, vmID: 'vm-1', app: 'virt-v2v' });
    assert.deepEqual(pod.spec.securityContext.seccompProfile, { type: 'RuntimeDefault' });
    assert.equal(pod.status.phase, 'Succeeded');
    assert.match(sim.conversionPodLog(ns, pod.metadata.name)!, /Converting app01 to run on KVM/);

    // What it leaves: no DataVolumes, the claims virt-v2v filled owned by the Halted VirtualMachine, on virtio.
    assert.deepEqual(await listIn(rest, R.DataVolume, ns), []);
    const [vm] = await listIn(rest, R.VirtualMachine, ns);
    assert.equal(vm!.spec.runStrategy, 'Halted');
    assert.deepEqual(vm!.spec.template.spec.domain.devices.disks.map((d: { disk: { bus: string } }) => d.disk.bus), ['virtio', 'virtio']);
    const claimNames: string[] = vm!.spec.template.spec.volumes.map((v: { persistentVolumeClaim: { claimName: string } }) => v.persistentVolumeClaim.claimName);
    assert.deepEqual(pod.spec.volumes.map((v: { persistentVolumeClaim: { claimName: string } }) => v.persistentVolumeClaim.claimName), claimNames);
    for (const [i, name] of claimNames.entries()) {
      const c = (await rest.get(R.PVC, ns, name))!;
      assert.equal(c.metadata.labels!.vmID, 'vm-1');
      assert.deepEqual(c.metadata.ownerReferences!.map((r) => `${r.kind}/${r.name}`), [`VirtualMachine/${vm!.metadata.name}`]);
      const pv = (await rest.get(R.PV, undefined, c.spec.volumeName))!;
      assert.equal(pv.metadata.annotations![CONTENT_ANNOTATION], contentIdentity(URL_C, 'vm-1', sim.world(URL_C).vm('vm-1')!.disks[i]!), `disk ${i} content on its PV`);
    }
  });

  for (const [failure, log] of FAILURES) {
    const vmId = world.vms.find((v) => v.faults.conversionFailure === failure)!.id;
    test(`a conversion failing on ${failure} fails the VM in ImageConversion with Forklift's words, the pod Failed and the cause in its log`, async () => {
      const { ns, done } = await run(`sim-conv-${failure.toLowerCase()}`, vmId);
      assert.ok(condition(done, 'Failed'), JSON.stringify(done.status));
      const vmStatus = (await rest.get(R.Plan, ns, 'p'))!.status.migration.vms[0];
      const conv = vmStatus.pipeline.find((s: { name: string }) => s.name === 'ImageConversion');
      assert.deepEqual(conv.error?.reasons, [GUEST_CONVERSION_FAILED]);
      assert.deepEqual(vmStatus.error?.reasons, [GUEST_CONVERSION_FAILED]);
      assert.equal(vmStatus.pipeline.find((s: { name: string }) => s.name === 'DiskTransferV2v').phase, 'Pending', 'no byte was copied');
      const [pod] = await listIn(rest, R.Pod, ns);
      assert.equal(pod!.status.phase, 'Failed');
      assert.match(sim.conversionPodLog(ns, pod!.metadata.name)!, log);
      // deleteVmOnFailMigration false: the allocated claims stay for diagnosis; no VirtualMachine was built.
      assert.equal((await listIn(rest, R.PVC, ns)).length, world.vms.find((v) => v.id === vmId)!.disks.length);
      assert.deepEqual(await listIn(rest, R.VirtualMachine, ns), []);
    });
  }
});
