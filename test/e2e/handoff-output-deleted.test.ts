// A deleted output is the tenant's decision, and the data waits for them. The tenant (a cleanup script, a
// GitOps prune) deletes one of the handoff's outputs — the claim vm-disk-…, its DataVolume, or the VMDisk —
// the moment a watch shows a point of the handoff reached: the output's own creation, or a later output's
// creation, the volume settled, the VMInstance created. Every run ends either with the volume the
// transfer filled intact (same object, same content) on Retain, the VM Failed with OutputDeleted naming
// what was deleted, no VMInstance made over it and nothing empty re-created in its place. (Outputs
// complete and the VM Succeeded is the other safe end, for a delete after the import completed; a delete
// before that cannot end there without the output made again.) Never with the volume deleted or replaced
// by an empty one.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CONTENT_ANNOTATION, contentIdentity, vcenter } from '../sim/index.ts';
import { GVRs, type GVR } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import { Informer } from '../../src/runtime/informer.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { ANNOTATION_HANDOFF, ANNOTATION_KEEP_VOLUMES, HANDOFF_SETTLED } from '../../src/api/labels.ts';
import { TaskReason } from '../../src/api/conditions.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';
import { handoffHooks } from '../../src/controllers/handoff/index.ts';
import { Step, type StepName } from '../../src/controllers/handoff/steps.ts';

const URL_VC = 'https://vcenter-output-deleted.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.31' }],
  vms: [{ id: 'vm-1', name: 'db01', disks: [{ capacityGiB: 2 }] }],
});
const VM = 'db';
const DISK = `${VM}-disk-0`;
const CLAIM = `vm-disk-${DISK}`;

let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'deleted-outputs', reclaimPolicy: 'Delete' }] });
  ({ c } = booted);
});

after(async () => {
  await booted?.shutdown();
});

type Output = 'claim' | 'datavolume' | 'vmdisk';
type Point = 'claim' | 'datavolume' | 'vmdisk' | 'settled' | 'vminstance';

const OUTPUTS: Record<Output, { gvr: GVR; name: string; kind: string }> = {
  claim: { gvr: GVRs.PersistentVolumeClaim, name: CLAIM, kind: 'PersistentVolumeClaim' },
  datavolume: { gvr: GVRs.DataVolume, name: CLAIM, kind: 'DataVolume' },
  vmdisk: { gvr: GVRs.VMDisk, name: DISK, kind: 'VMDisk' },
};
/** The handoff step that makes each point's object (or, for settled, the volume's settled mark). */
const MADE_BY: Record<Point, StepName> = { claim: Step.CreateClaim, datavolume: Step.CreateDataVolume, vmdisk: Step.CreateVMDisk, settled: Step.SettleVolume, vminstance: Step.CreateVMInstance };
/** How long the handoff waits at its step for the tenant's delete to be sent and answered (a watch event missed). */
const HOLD_AT_POINT_MS = 15_000;

/** The points of the handoff, in its order; an output is deleted at its own creation and at every later point. */
const POINTS: readonly Point[] = ['claim', 'datavolume', 'vmdisk', 'settled', 'vminstance'];

/**
 * Informers on everything the run watches in `ns`: each point is an event (an object ADDED, the volume's
 * settled annotation), and the volumes the namespace's claims were ever bound to are collected, so a
 * volume deleted or an empty one provisioned in between cannot hide between two polls.
 */
function watchRun(ns: string, point: Point, onPoint: () => void): { volumes: Map<string, string>; deletedVolumes: string[]; stop: () => Promise<void>; synced: Promise<void> } {
  const volumes = new Map<string, string>();
  const deletedVolumes: string[] = [];
  let fired = false;
  const fire = (): void => {
    if (fired) return;
    fired = true;
    onPoint();
  };
  const informers: Informer[] = [];
  const pv = new Informer(c, GVRs.PersistentVolume);
  const notePV = (o: KubeObject): void => {
    const ref = (o.spec as { claimRef?: { namespace?: string } } | undefined)?.claimRef;
    if (ref?.namespace === ns && !volumes.has(o.metadata!.name!)) volumes.set(o.metadata!.name!, o.metadata!.uid!);
    if (point === 'settled' && volumes.has(o.metadata!.name!) && o.metadata?.annotations?.[ANNOTATION_HANDOFF] === HANDOFF_SETTLED) fire();
  };
  pv.addHandlers({ add: notePV, update: (_old, o) => notePV(o), delete: (o) => volumes.has(o.metadata!.name!) && deletedVolumes.push(o.metadata!.name!) });
  informers.push(pv);
  const on = (gvr: GVR, name: string): void => {
    const inf = new Informer(c, gvr, { namespace: ns });
    inf.addHandlers({ add: (o) => o.metadata?.name === name && fire() });
    informers.push(inf);
  };
  if (point === 'claim') on(GVRs.PersistentVolumeClaim, CLAIM);
  if (point === 'datavolume') on(GVRs.DataVolume, CLAIM);
  if (point === 'vmdisk') on(GVRs.VMDisk, DISK);
  if (point === 'vminstance') on(GVRs.VMInstance, VM);
  for (const i of informers) i.start();
  return {
    volumes,
    deletedVolumes,
    synced: Promise.all(informers.map((i) => i.waitForSync())).then(() => undefined),
    stop: async () => {
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}

const vmOf = (t: VMImportTask | undefined) => t?.status?.vms?.[0];

interface DeletedRun {
  ns: string;
  task: VMImportTask;
  run: ReturnType<typeof watchRun>;
  deletedUID: string | undefined;
}

/** One import of the one-disk VM, the output deleted the moment the watch shows the point; returns once the VM ended. */
async function importDeletingAt(output: Output, point: Point, annotations?: Record<string, string>): Promise<DeletedRun> {
  const ns = await freshNamespace(`del-${output}-${point}`.slice(0, 20));
  const target = OUTPUTS[output];
  let deletion: Promise<boolean> | undefined;
  const result: Partial<DeletedRun> = { ns };
  // "As soon as it is created" is before the handoff's next step: the in-process controller's handoff
  // waits at the step that made the point until the tenant's delete, sent on the watch event, is answered.
  // Without the wait, a loaded machine lets the next step (a VMDisk, whose chart renders a DataVolume
  // again) run before the delete lands, which is a different story from the one this file tells.
  let seen: () => void = () => undefined;
  const pointSeen = new Promise<void>((resolve) => (seen = resolve));
  let held = false;
  handoffHooks.afterStep = async (step) => {
    if (held || step !== MADE_BY[point]) return;
    held = true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([pointSeen.then(() => deletion), new Promise((resolve) => (timer = setTimeout(resolve, HOLD_AT_POINT_MS)))]);
    clearTimeout(timer);
  };
  const run = watchRun(ns, point, () => {
    deletion = (async () => {
      // The tenant's delete, sent the moment the watch shows the point; the object's UID is taken
      // from the same read, so a later object of that name can be told from the deleted one.
      const cur = await c.get(target.gvr, ns, target.name);
      result.deletedUID = cur?.metadata?.uid;
      return cur ? await c.delete(target.gvr, ns, target.name) : false;
    })();
    seen();
  });
  result.run = run;
  try {
    await run.synced;
    await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
    await waitForReason(c, ns, 'vc', 'Connected');
    await c.create(GVRs.VMImportTask, {
      apiVersion: 'forklift.cozystack.io/v1alpha1',
      kind: 'VMImportTask',
      metadata: { name: 'import', namespace: ns, ...(annotations ? { annotations } : {}) },
      spec: { sourceRef: { name: 'vc' }, storageClass: 'deleted-outputs', vms: [{ id: 'vm-1', name: VM }] },
    } as KubeObject);
    result.task = await waitFor(
      'the VM to end',
      async () => {
        const t = (await c.get(GVRs.VMImportTask, ns, 'import')) as unknown as VMImportTask | undefined;
        const p = vmOf(t)?.phase;
        return p === 'Succeeded' || p === 'Failed' ? t : undefined;
      },
      { timeoutMs: 120_000 },
    );
    assert.ok(deletion, `the point ${point} was reached`);
    assert.equal(await deletion, true, `the ${target.kind} was deleted at ${point}`);
    return result as DeletedRun;
  } catch (e) {
    await run.stop();
    throw e;
  } finally {
    handoffHooks.afterStep = undefined;
  }
}

for (const output of Object.keys(OUTPUTS) as Output[]) {
  for (const point of POINTS.slice(POINTS.indexOf(output))) {
    test(`the ${OUTPUTS[output].kind} deleted as soon as ${point === output ? 'it is created' : point === 'settled' ? 'the volume is settled' : `the ${point} is created`} leaves the volume intact and Retain, the VM Failed with OutputDeleted and nothing made again`, async () => {
      const target = OUTPUTS[output];
      const { ns, task, run, deletedUID } = await importDeletingAt(output, point);
      try {
        const vm = vmOf(task)!;
        // The volume the transfer filled: one, never deleted, never joined by another (an empty one).
        assert.equal(run.volumes.size, 1, `one volume only: ${JSON.stringify([...run.volumes.keys()])}`);
        assert.deepEqual(run.deletedVolumes, [], 'no volume was deleted');
        const [pvName, pvUID] = [...run.volumes.entries()][0]!;
        const pv = await c.get(GVRs.PersistentVolume, undefined, pvName);
        assert.equal(pv?.metadata?.uid, pvUID, 'the very volume the transfer filled');
        assert.equal(pv?.metadata?.annotations?.[CONTENT_ANNOTATION], contentIdentity(URL_VC, 'vm-1', world.vms[0]!.disks[0]!), 'its content');
        // Deleted before the VM completed, the output cannot be complete unless it was made again: the VM fails.
        assert.equal(vm.phase, 'Failed', `${vm.phase}: ${vm.message}`);
        assert.equal(vm.reason, TaskReason.OutputDeleted, vm.message);
        assert.match(vm.message ?? '', /(PersistentVolumeClaim|DataVolume|VMDisk) \S+ was (being )?deleted/);
        assert.match(vm.message ?? '', new RegExp(`PersistentVolume ${pvName} \\(disk 0, [^)]+\\) is kept with reclaim policy Retain, held by this task: deleting the task releases it`));
        assert.equal((pv?.spec as { persistentVolumeReclaimPolicy?: string }).persistentVolumeReclaimPolicy, 'Retain', 'the volume stays Retain');
        const held = task.status?.heldVolumes ?? [];
        assert.deepEqual(held.map((h) => [h.name, h.vm, h.disk]), [[pvName, 'vm-1', 0]], 'the task lists the volume it holds');
        assert.ok((held[0]?.capacityBytes ?? 0) >= 2 * 2 ** 30, `with its size (${held[0]?.capacityBytes})`);
        // The deleted output is not made again (the same UID may linger while it terminates).
        const again = await waitFor(`the deleted ${target.kind} to be gone`, async () => {
          const cur = await c.get(target.gvr, ns, target.name);
          return !cur || cur.metadata?.uid !== deletedUID ? { cur } : undefined;
        });
        assert.equal(again.cur, undefined, `the deleted ${target.kind} was re-created`);
        if (point !== 'vminstance') assert.equal(await c.get(GVRs.VMInstance, ns, VM), undefined, 'no VMInstance over a missing disk');
      } finally {
        await run.stop();
      }
    });
  }
}

test('deleting the task of a VM failed in the handoff releases its volume under the class’s Delete policy: no Released volume is left', async () => {
  const { ns, run } = await importDeletingAt('vmdisk', 'vmdisk');
  try {
    const [pvName] = [...run.volumes.keys()];
    await c.delete(GVRs.VMImportTask, ns, 'import');
    await waitFor('the task to be gone', async () => ((await c.get(GVRs.VMImportTask, ns, 'import')) ? undefined : true), { timeoutMs: 60_000 });
    await waitFor(`volume ${pvName} to be deleted under Delete`, async () => ((await c.get(GVRs.PersistentVolume, undefined, pvName!)) ? undefined : true), { timeoutMs: 60_000 });
    assert.deepEqual(run.deletedVolumes, [pvName], 'the volume went only once the task was deleted');
  } finally {
    await run.stop();
  }
});

test(`a task annotated ${ANNOTATION_KEEP_VOLUMES}=true keeps the volumes of its failed VMs on Retain after it is deleted, for an admin`, async () => {
  const { ns, run } = await importDeletingAt('vmdisk', 'vmdisk', { [ANNOTATION_KEEP_VOLUMES]: 'true' });
  try {
    const [pvName] = [...run.volumes.keys()];
    await c.delete(GVRs.VMImportTask, ns, 'import');
    await waitFor('the task to be gone', async () => ((await c.get(GVRs.VMImportTask, ns, 'import')) ? undefined : true), { timeoutMs: 60_000 });
    const pv = await c.get(GVRs.PersistentVolume, undefined, pvName!);
    assert.equal((pv?.spec as { persistentVolumeReclaimPolicy?: string } | undefined)?.persistentVolumeReclaimPolicy, 'Retain');
    assert.deepEqual(run.deletedVolumes, []);
  } finally {
    await run.stop();
  }
});

test('a VM whose import failed in the handoff imports again with a new task in the same namespace, the first task still holding its volume', async () => {
  const { ns, run } = await importDeletingAt('vmdisk', 'vmdisk');
  try {
    const [firstPV] = [...run.volumes.keys()];
    await c.create(GVRs.VMImportTask, {
      apiVersion: 'forklift.cozystack.io/v1alpha1',
      kind: 'VMImportTask',
      metadata: { name: 'again', namespace: ns },
      spec: { sourceRef: { name: 'vc' }, storageClass: 'deleted-outputs', vms: [{ id: 'vm-1', name: VM }] },
    } as KubeObject);
    const again = await waitFor(
      'the second import to end',
      async () => {
        const t = (await c.get(GVRs.VMImportTask, ns, 'again')) as unknown as VMImportTask | undefined;
        const p = vmOf(t)?.phase;
        return p === 'Succeeded' || p === 'Failed' ? t : undefined;
      },
      { timeoutMs: 120_000 },
    );
    const vm = vmOf(again)!;
    assert.equal(vm.phase, 'Succeeded', `${vm.reason}: ${vm.message}`);
    assert.ok(await c.get(GVRs.VMInstance, ns, VM), 'the VMInstance of the second import');
    assert.ok(await c.get(GVRs.VMDisk, ns, DISK), 'its VMDisk');
    const held = await c.get(GVRs.PersistentVolume, undefined, firstPV!);
    assert.equal((held?.spec as { persistentVolumeReclaimPolicy?: string } | undefined)?.persistentVolumeReclaimPolicy, 'Retain', 'the first import’s volume is still held');
  } finally {
    await run.stop();
  }
});
