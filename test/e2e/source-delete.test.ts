// Deleting a VMImportSource while a task imports over it: the source waits (finalizer, Ready=False
// Deleting) with its Providers in place until the task ends, then goes. Forklift stops driving a Plan
// whose source Provider is gone, so removing it early would strand the running import.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, getSource, readyOf, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-delete.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.10' }],
  // 24 GiB at 1 GiB/s: long enough to delete the source while bytes move.
  vms: [{ id: 'vm-1', name: 'busy01', disks: [{ capacityGiB: 24 }] }],
});

let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'delete-fast', reclaimPolicy: 'Delete' }], sim: { mbPerSecond: 1024 } });
  ({ c } = booted);
});

after(async () => {
  await booted?.shutdown();
});

const getTask = async (ns: string, name: string) => (await c.get(GVRs.VMImportTask, ns, name)) as unknown as VMImportTask | undefined;

test('deleting a source mid-transfer waits for the task: its Providers stay, the import completes, then the source and its Providers go', async () => {
  const ns = await freshNamespace('src-del');
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'busy', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'delete-fast', vms: [{ id: 'vm-1' }] } } as KubeObject);
  await waitFor('bytes moving', async () => {
    const v = (await getTask(ns, 'busy'))?.status?.vms?.[0];
    return v?.phase === 'Transferring' && (v.bytesDone ?? 0) > 0 ? true : undefined;
  }, { timeoutMs: 60_000 });

  await c.delete(GVRs.VMImportSource, ns, 'vc');
  const held = await waitForReason(c, ns, 'vc', 'Deleting');
  assert.ok(held.metadata.deletionTimestamp);
  assert.match(readyOf(held)!.message, /still importing over this source: busy/);
  assert.equal((await c.list(GVRs.Provider, ns)).items.length, 2, 'both Providers stay while the task runs');

  const t = await waitFor('the task to end', async () => {
    const x = await getTask(ns, 'busy');
    return x?.status?.completedAt ? x : undefined;
  }, { timeoutMs: 120_000 });
  assert.equal(t.status?.vms?.[0]?.phase, 'Succeeded', JSON.stringify(t.status?.vms?.[0]));
  assert.ok(await c.get(GVRs.VMInstance, ns, 'busy01'));

  await waitFor('the source to go', async () => ((await getSource(c, ns, 'vc')) ? undefined : true), { timeoutMs: 60_000 });
  assert.equal((await c.list(GVRs.Provider, ns)).items.length, 0);
});

test('a task still waiting for a source that is not Ready does not hold its deletion', async () => {
  const ns = await freshNamespace('src-del');
  // Wrong CA: the source never becomes Ready, so the task waits SourceNotReady and builds nothing.
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.wrongCaPEM } });
  await waitForReason(c, ns, 'vc', 'InvalidCACertificate');
  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'waiting', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'delete-fast', vms: [{ id: 'vm-1' }] } } as KubeObject);
  await waitFor('the task to wait for the source', async () => ((await getTask(ns, 'waiting'))?.status?.conditions?.find((x) => x.type === 'Ready')?.reason === 'SourceNotReady' ? true : undefined));
  await c.delete(GVRs.VMImportSource, ns, 'vc');
  await waitFor('the source to go', async () => ((await getSource(c, ns, 'vc')) ? undefined : true), { timeoutMs: 60_000 });
  await waitFor('the task to report the source missing', async () => ((await getTask(ns, 'waiting'))?.status?.conditions?.find((x) => x.type === 'Ready')?.reason === 'SourceNotFound' ? true : undefined), { timeoutMs: 60_000 });
});
