// A task asking for guest conversion, end to end through the controller (real API server + simulator):
// the converted VM arrives with virtio buses on the volumes virt-v2v filled, and a failed conversion ends
// with a message that sends the tenant to the conversion pod's log.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CONTENT_ANNOTATION, contentIdentity, vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-convert.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.41' }],
  vms: [
    { id: 'vm-1', name: 'app01', firmware: 'efi', secureBoot: false, disks: [{ capacityGiB: 8 }, { capacityGiB: 4 }] },
    { id: 'vm-2', name: 'sandboxed01', disks: [{ capacityGiB: 4 }], faults: { conversionFailure: 'seccomp' } },
  ],
});

let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'conv-fast', reclaimPolicy: 'Delete' }], sim: { mbPerSecond: 8192 }, controller: { extra: { guestConversion: true } } });
  c = booted.c;
});

after(async () => {
  await booted?.shutdown();
});

async function importConverted(prefix: string, vmId: string): Promise<{ ns: string; task: VMImportTask }> {
  const ns = await freshNamespace(prefix);
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  await c.create(GVRs.VMImportTask, {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name: 't', namespace: ns },
    spec: { sourceRef: { name: 'vc' }, storageClass: 'conv-fast', guestConversion: true, vms: [{ id: vmId, name: 'app' }] },
  } as KubeObject);
  const task = await waitFor('the task to end', async () => {
    const t = (await c.get(GVRs.VMImportTask, ns, 't')) as unknown as VMImportTask | undefined;
    return t?.status?.completedAt ? t : undefined;
  }, { timeoutMs: 90_000 });
  return { ns, task };
}

test('a converted two-disk VM arrives as a Halted VMInstance with every disk on virtio, on the volumes virt-v2v filled', async () => {
  const { ns, task } = await importConverted('conv-ok', 'vm-1');
  const v = task.status!.vms![0]!;
  assert.equal(v.phase, 'Succeeded', JSON.stringify(v));
  const vmi = await c.get(GVRs.VMInstance, ns, 'app');
  const spec = vmi!.spec as Record<string, unknown>;
  assert.equal(spec.runStrategy, 'Halted');
  assert.deepEqual(spec.disks, [{ name: 'app-disk-0', bus: 'virtio' }, { name: 'app-disk-1', bus: 'virtio' }]);
  assert.deepEqual(spec.firmware, { bootloader: 'uefi', secureBoot: false });
  for (let i = 0; i < 2; i++) {
    const claim = await c.get(GVRs.PersistentVolumeClaim, ns, `vm-disk-app-disk-${i}`);
    const pv = await c.get(GVRs.PersistentVolume, undefined, (claim!.spec as { volumeName: string }).volumeName);
    assert.equal(pv!.metadata?.annotations?.[CONTENT_ANNOTATION], contentIdentity(URL_VC, 'vm-1', booted.sim.world(URL_VC).vm('vm-1')!.disks[i]!), `disk ${i}: the content virt-v2v wrote`);
  }
});

test('a conversion the node\'s seccomp profile denies fails the VM with a message pointing at the conversion pod\'s log, keeping Forklift\'s words', async () => {
  const { task } = await importConverted('conv-seccomp', 'vm-2');
  const v = task.status!.vms![0]!;
  assert.equal(v.phase, 'Failed');
  assert.equal(v.reason, 'TransferFailed');
  assert.match(v.message!, /^guest conversion \(virt-v2v\) failed; the log of the conversion pod \(label app=virt-v2v/);
  assert.match(v.message!, /seccomp profile \(tell the platform administrator\)/);
  assert.match(v.message!, /Forklift said: .*Guest conversion failed\. See pod logs for details\./);
});
