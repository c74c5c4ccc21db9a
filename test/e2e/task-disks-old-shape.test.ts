// A task an earlier version of this controller wrote holds the handoff's per-disk evidence as objects in
// status.vms[].disks, where Cozystack's console reads VMDisk names. This version reads either shape
// (src/api/disks.ts): a handoff interrupted under the earlier version resumes at its checkpoint, its
// evidence carried over to status.vms[].diskHandoffs, and `disks` ends as the VMDisk names; a finished
// task of the earlier version is rewritten once the same way. The earlier version is played by writing
// its shape into the status (the status subresource, as its status writes did) while no controller runs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createStorageClass, startSim, type Sim } from '../sim/index.ts';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { isAlreadyExists, type KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import type { ManagerOptions } from '../../src/runtime/manager.ts';
import { parseConfig } from '../../src/config.ts';
import { runController, type RunningController } from '../../src/app.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import type { DiskStatus, VMImportTask, VMStatus } from '../../src/api/types.ts';
import { Step, handoffHooks } from '../../src/controllers/handoff/index.ts';
import { freshNamespace, installOurCRDs, testEnv, waitFor } from './env/index.ts';
import { VDDK_IMAGE } from './fixtures.ts';
import { adminClient, createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-old-shape.example.com/sdk';
const CLASS = 'old-shape';
const VM = 'legacy01';
const NAMES = [`${VM}-disk-0`, `${VM}-disk-1`];
const world = vcenter({ url: URL_VC, hosts: [{ id: 'host-1', address: '192.0.2.41' }], vms: [{ id: 'vm-1', name: VM, disks: [{ capacityGiB: 1 }, { capacityGiB: 1 }] }] });

let sim: Sim;
let c: KubeClient;
let kubeconfigPath: string;

before(async () => {
  const env = await testEnv();
  kubeconfigPath = env.admin.kubeconfigPath;
  await installOurCRDs();
  await createStorageClass(kubeconfigPath, { name: CLASS, reclaimPolicy: 'Delete' });
  sim = await startSim({ kubeconfigPath, worlds: [world] });
  c = await adminClient();
});

after(async () => {
  handoffHooks.afterStep = undefined;
  await sim?.stop();
  c?.close();
});

/** An in-process controller, and the kill of a process: from `kill()` on, nothing it sends reaches the API server. */
async function controller(): Promise<{ ctl: RunningController; kill: () => void }> {
  const cfg = { ...parseConfig(['--kubeconfig', kubeconfigPath, '--leader-elect=false', '--health-port', '0', '--metrics-port', '0', '--webhook-port', '0', '--inventory-url', sim.inventory.url], {}), vddkImage: VDDK_IMAGE };
  await c.create(GVRs.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: cfg.podNamespace } } as KubeObject).catch((e: unknown) => {
    if (!isAlreadyExists(e)) throw e;
  });
  const ctl = await runController(cfg, { logger: createLogger({ level: process.env.MC_LOG_LEVEL ?? 'warn' }) });
  // The reconcilers' client, which the manager keeps private (as handoff-crash-suite.ts reaches it).
  const client = (ctl.manager as unknown as { o: ManagerOptions }).o.client;
  return {
    ctl,
    kill: () => {
      client.setFence(() => 'killed mid-handoff');
      client.abortInFlight();
    },
  };
}

const getTask = async (ns: string): Promise<VMImportTask & KubeObject> => (await c.get(GVRs.VMImportTask, ns, 'import')) as unknown as VMImportTask & KubeObject;

/** Writes `vm` as an earlier version stored it: the evidence as objects in `disks`, no diskHandoffs. */
async function writeEarlierShape(ns: string, vm: VMStatus): Promise<void> {
  const { diskHandoffs, ...rest } = vm;
  assert.ok(diskHandoffs?.length, `the VM has evidence to write: ${JSON.stringify(vm)}`);
  const earlier = { ...rest, disks: diskHandoffs };
  await c.patch(GVRs.VMImportTask, ns, 'import', { status: { vms: [earlier] } }, 'merge', { subresource: 'status' });
  const stored = (await getTask(ns)).status!.vms![0]!;
  assert.deepEqual(stored.disks, diskHandoffs, 'the API server accepts and keeps the earlier shape');
  assert.equal(stored.diskHandoffs, undefined);
}

/** The namespace's volumes, name → UID. */
async function volumesOf(ns: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const pv of (await c.list(GVRs.PersistentVolume)).items) {
    if ((pv.spec as { claimRef?: { namespace?: string } } | undefined)?.claimRef?.namespace === ns) out.set(pv.metadata!.name!, pv.metadata!.uid!);
  }
  return out;
}

test("a handoff interrupted under an earlier version, its evidence stored as objects in disks, resumes at its checkpoint: it finishes on the very volumes the evidence names, the evidence carried to diskHandoffs and the VMDisk names in disks", async () => {
  const ns = await freshNamespace('old-shape');
  // The first controller dies right after the first step on disk 1: disk 0's handoff is recorded, disk 1's begun.
  const first = await controller();
  let killed = false;
  handoffHooks.afterStep = (step, disk) => {
    if (killed || step !== Step.RetainVolume || disk !== 1) return;
    killed = true;
    first.kill();
    throw new Error('killed right after retain-volume of disk 1');
  };
  let firstStopped = false;
  let second: Awaited<ReturnType<typeof controller>> | undefined;
  let third: Awaited<ReturnType<typeof controller>> | undefined;
  try {
    await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
    await waitForReason(c, ns, 'vc', 'Connected', 120_000);
    await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'import', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: CLASS, vms: [{ id: 'vm-1' }] } } as KubeObject);
    await waitFor('the controller killed mid-handoff', async () => (killed ? true : undefined), { timeoutMs: 180_000, intervalMs: 50 });
    await first.ctl.stop();
    firstStopped = true;
    handoffHooks.afterStep = undefined;

    const mid = (await getTask(ns)).status!.vms![0]!;
    const evidence = mid.diskHandoffs ?? [];
    assert.equal(mid.phase, 'Creating', JSON.stringify(mid));
    assert.ok(evidence.some((d) => d.handoff) && !evidence.every((d) => d.handoff === 'done'), `mid-handoff: ${JSON.stringify(evidence)}`);
    assert.deepEqual(mid.disks, NAMES, 'this version names the VMDisks as soon as the handoff does');
    const volumes = await volumesOf(ns);
    await writeEarlierShape(ns, mid);

    second = await controller();
    const done = await waitFor('the task Succeeded', async () => {
      const t = await getTask(ns);
      return t.status?.phase === 'Succeeded' ? t : undefined;
    }, { timeoutMs: 180_000 });
    const v = done.status!.vms![0]!;
    assert.equal(v.phase, 'Succeeded', JSON.stringify(v));
    assert.deepEqual(v.disks, NAMES, "disks ends as the VMDisk names, in source order: what Cozystack's console links to");
    const after: DiskStatus[] = v.diskHandoffs ?? [];
    assert.deepEqual(after.map((d) => [d.index, d.vmDisk, d.handoff]), [[0, NAMES[0], 'done'], [1, NAMES[1], 'done']]);
    // The evidence of the earlier shape is what the handoff went on from: the volumes and claims it named.
    for (const d of evidence) {
      const a = after.find((x) => x.index === d.index)!;
      if (d.volumeName) assert.equal(a.volumeName, d.volumeName, `disk ${d.index}: the volume recorded before`);
      if (d.transferClaim) assert.equal(a.transferClaim, d.transferClaim, `disk ${d.index}: the transfer claim recorded before`);
      if (d.capacityBytes !== undefined) assert.equal(a.capacityBytes, d.capacityBytes, `disk ${d.index}: the capacity recorded before`);
    }
    for (const name of v.disks!) {
      assert.ok(await c.get(GVRs.VMDisk, ns, name), `VMDisk ${name} exists`);
      const claim = await c.get<KubeObject & { spec?: { volumeName?: string } }>(GVRs.PersistentVolumeClaim, ns, `vm-disk-${name}`);
      const pv = claim?.spec?.volumeName ?? '';
      assert.equal(volumes.get(pv), (await c.get(GVRs.PersistentVolume, undefined, pv))?.metadata?.uid, `${name} is bound to a volume the transfer filled, the same object`);
    }
    assert.deepEqual([...(await volumesOf(ns)).keys()].sort(), [...volumes.keys()].sort(), 'no volume was provisioned or lost after the interruption');

    // A finished task the earlier version wrote is rewritten once this version starts: names in disks, the
    // evidence in diskHandoffs. (Written while no controller runs: one running would rewrite it at once.)
    await second.ctl.stop();
    second = undefined;
    await writeEarlierShape(ns, v);
    third = await controller();
    const rewritten = await waitFor('the finished task rewritten in this shape', async () => {
      const x = (await getTask(ns)).status!.vms![0]!;
      return x.diskHandoffs ? x : undefined;
    }, { timeoutMs: 60_000 });
    assert.deepEqual(rewritten.disks, NAMES);
    assert.deepEqual(rewritten.diskHandoffs, after);
  } finally {
    handoffHooks.afterStep = undefined;
    if (!firstStopped) await first.ctl.stop();
    await second?.ctl.stop();
    await third?.ctl.stop();
  }
});
