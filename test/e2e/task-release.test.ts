// A VM is imported only once Cozystack deployed its outputs: the VMDisks' and the VMInstance's Helm
// releases, as the aggregated API reports them (status.conditions Ready/Released copied from the
// HelmRelease). A chart that fails — an instanceType the cluster does not have — fails the VM with the
// chart's words, and Forklift's VirtualMachine is kept.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-release.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.10' }],
  vms: [
    { id: 'vm-1', name: 'good01', disks: [{ capacityGiB: 2 }] },
    { id: 'vm-2', name: 'huge01', disks: [{ capacityGiB: 2 }] },
  ],
});

let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'release-fast', reclaimPolicy: 'Delete' }], sim: { instanceTypes: ['u1.medium'] } });
  ({ c } = booted);
});

after(async () => {
  await booted?.shutdown();
});

const ready = (o: KubeObject | undefined) => ((o?.status as { conditions?: Array<{ type: string; status: string; message?: string }> } | undefined)?.conditions ?? []).find((x) => x.type === 'Ready');

test("a VM succeeds only with every VMDisk and its VMInstance deployed; a missing instanceType fails it with the chart's message and keeps Forklift's VM", async () => {
  const ns = await freshNamespace('release');
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  await c.create(GVRs.VMImportTask, {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name: 'sized', namespace: ns },
    spec: { sourceRef: { name: 'vc' }, storageClass: 'release-fast', vms: [{ id: 'vm-1', instanceType: 'u1.medium' }, { id: 'vm-2', instanceType: 'u1.huge' }] },
  } as KubeObject);
  const t = await waitFor('the task to end', async () => {
    const x = (await c.get(GVRs.VMImportTask, ns, 'sized')) as unknown as VMImportTask | undefined;
    return x?.status?.completedAt ? x : undefined;
  }, { timeoutMs: 120_000 });

  const good = t.status!.vms!.find((v) => v.id === 'vm-1')!;
  assert.equal(good.phase, 'Succeeded', JSON.stringify(good));
  assert.equal(ready(await c.get(GVRs.VMInstance, ns, 'good01'))?.status, 'True');
  assert.deepEqual(good.disks, ['good01-disk-0']);
  for (const name of good.disks ?? []) assert.equal(ready(await c.get(GVRs.VMDisk, ns, name))?.status, 'True', name);
  assert.equal(await c.get(GVRs.VirtualMachine, ns, 'good01'), undefined, "Forklift's VM of an imported VM is deleted");

  const bad = t.status!.vms!.find((v) => v.id === 'vm-2')!;
  assert.equal(bad.phase, 'Failed', JSON.stringify(bad));
  assert.equal(bad.reason, 'ReleaseFailed');
  assert.match(bad.message!, /VMInstance huge01/);
  assert.match(bad.message!, /Specified instanceType does not exist in the cluster: u1\.huge/);
  assert.ok(await c.get(GVRs.VirtualMachine, ns, 'huge01'), "Forklift's VM is kept while the VM's outputs failed");
  assert.equal(ready(await c.get(GVRs.VMInstance, ns, 'huge01'))?.status, 'False');
});
