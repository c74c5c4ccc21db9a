// Outputs labelled like another task's: a tenant (or anyone who may create claims, DataVolumes or
// VMDisks in the namespace) stamps the labels the controller puts on a task's outputs (src/api/labels.ts)
// on objects of its own. The finished task's status, its VMDisks, VMInstance, volumes and claims stay
// exactly as they were once the controller has reconciled the task with the decoys in its caches.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { LABEL_DISK_INDEX, LABEL_MANAGED_BY, LABEL_TASK, LABEL_TASK_UID, LABEL_VM_ID, MANAGED_BY_VALUE } from '../../src/api/labels.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-decoys.example.com/sdk';
const world = vcenter({ url: URL_VC, hosts: [{ id: 'host-1', address: '192.0.2.20' }], vms: [{ id: 'vm-1', name: 'target01', disks: [{ capacityGiB: 1 }] }] });
const SC = 'decoy-fast';

let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: SC, reclaimPolicy: 'Delete' }], sim: { instanceTypes: ['u1.medium'] } });
  ({ c } = booted);
});

after(async () => {
  await booted?.shutdown();
});

/** The sum of the task controller's reconciles, from the controller's own metrics. */
async function taskReconciles(): Promise<number> {
  const text = await (await fetch(booted.ctl.metricsURL)).text();
  let n = 0;
  for (const m of text.matchAll(/^migration_controller_reconcile_total\{[^}]*controller="vmimporttask"[^}]*\} (\d+(?:\.\d+)?)$/gm)) n += Number(m[1]);
  return n;
}

/** What a user observes of the task and its outputs (identity and content, not bookkeeping). */
async function observe(ns: string, task: VMImportTask): Promise<unknown> {
  const t = (await c.get(GVRs.VMImportTask, ns, task.metadata.name!)) as unknown as VMImportTask;
  const vms = t.status?.vms ?? [];
  const disks = vms.flatMap((v) => v.diskHandoffs ?? []);
  const one = async (gvr: typeof GVRs.VMDisk, name: string | undefined, namespace?: string) => {
    const o = name ? await c.get<KubeObject & { spec?: unknown }>(gvr, namespace, name) : undefined;
    return o ? { name, uid: o.metadata?.uid, resourceVersion: o.metadata?.resourceVersion, labels: o.metadata?.labels, spec: o.spec } : undefined;
  };
  return {
    status: { phase: t.status?.phase, completedAt: t.status?.completedAt, vms, conditions: t.status?.conditions },
    vmDisks: await Promise.all(disks.map((d) => one(GVRs.VMDisk, d.vmDisk, ns))),
    volumes: await Promise.all(disks.map((d) => one(GVRs.PersistentVolume, d.volumeName))),
    instances: await Promise.all(vms.map((v) => one(GVRs.VMInstance, v.vmInstance ?? v.name, ns))),
  };
}

test("objects a tenant labels like another task's outputs (claims, DataVolumes, VMDisks) change nothing in that task: its status, outputs and handoff stay as they were", async () => {
  const ns = await freshNamespace('decoys');
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  await c.create(GVRs.VMImportTask, {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name: 'victim', namespace: ns },
    spec: { sourceRef: { name: 'vc' }, storageClass: SC, vms: [{ id: 'vm-1', instanceType: 'u1.medium' }] },
  } as KubeObject);
  const task = await waitFor('the task to end', async () => {
    const x = (await c.get(GVRs.VMImportTask, ns, 'victim')) as unknown as VMImportTask | undefined;
    return x?.status?.completedAt ? x : undefined;
  }, { timeoutMs: 120_000 });
  assert.equal(task.status?.vms?.[0]?.phase, 'Succeeded', JSON.stringify(task.status));
  const disk = task.status!.vms![0]!.diskHandoffs![0]!;
  assert.ok(disk.volumeName, 'the disk records the volume its transfer filled');
  const before = (await observe(ns, task)) as { vmDisks: unknown[]; volumes: unknown[]; instances: unknown[] };
  for (const k of ['vmDisks', 'volumes', 'instances'] as const) assert.ok(before[k].length > 0 && before[k].every(Boolean), `every output is observed (${k})`);

  const labels = { [LABEL_MANAGED_BY]: MANAGED_BY_VALUE, [LABEL_TASK]: 'victim', [LABEL_TASK_UID]: task.metadata.uid!, [LABEL_VM_ID]: 'vm-1', [LABEL_DISK_INDEX]: '0' };
  const realDisk = await c.get<KubeObject & { spec?: unknown }>(GVRs.VMDisk, ns, disk.vmDisk);
  await c.create(GVRs.PersistentVolumeClaim, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'decoy-claim', namespace: ns, labels }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: SC, resources: { requests: { storage: '1Gi' } } } } as KubeObject);
  await c.create(GVRs.DataVolume, { apiVersion: 'cdi.kubevirt.io/v1beta1', kind: 'DataVolume', metadata: { name: 'decoy-dv', namespace: ns, labels }, spec: { source: { blank: {} }, storage: { storageClassName: SC, resources: { requests: { storage: '1Gi' } } } } } as KubeObject);
  await c.create(GVRs.VMDisk, { apiVersion: 'apps.cozystack.io/v1alpha1', kind: 'VMDisk', metadata: { name: 'decoy-disk', namespace: ns, labels }, spec: realDisk?.spec } as KubeObject);

  // The controller has seen them: the decoys' labels name the task, so their events wake it; a harmless
  // annotation on the task then guarantees a reconcile after all of them, counted in its metrics.
  for (const round of ['1', '2']) {
    const seen = await taskReconciles();
    await c.patch(GVRs.VMImportTask, ns, 'victim', { metadata: { annotations: { 'e2e.example/poke': round } } }, 'merge');
    await waitFor(`a task reconcile after the decoys (round ${round})`, async () => (await taskReconciles()) > seen, { timeoutMs: 30_000 });
  }

  const after = await observe(ns, task);
  assert.deepEqual(after, before);
  // The decoys are left as their author made them: not adopted, not deleted.
  const claim = await c.get<KubeObject>(GVRs.PersistentVolumeClaim, ns, 'decoy-claim');
  assert.ok(claim && !claim.metadata?.ownerReferences?.length, 'the decoy claim is neither adopted nor deleted');
  assert.ok(await c.get(GVRs.VMDisk, ns, 'decoy-disk'), 'the decoy VMDisk is not deleted');
});
