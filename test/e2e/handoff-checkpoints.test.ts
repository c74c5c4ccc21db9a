// The copy-free handoff over the real API server, PV binder and garbage collector (test/e2e/env), driven
// step by step over a finished Forklift transfer built by hand (handoff-world.ts: the world, the loop
// that plays the task reconciler and CDI, and the crashes), and over transfers the simulated Forklift ran.
import { test, before, after, describe } from 'node:test';
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomUUID } from 'node:crypto';
import { adminKubeConfig, testEnv, freshNamespace, REPO_ROOT, waitFor } from './env/index.ts';
import { KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { TaskVM } from '../../src/api/types.ts';
import { API_VERSION, KIND_TASK } from '../../src/api/types.ts';
import { LABEL_DISK_INDEX, LABEL_TASK_UID, LABEL_VM_ID, ANNOTATION_ORIGINAL_RECLAIM_POLICY } from '../../src/api/labels.ts';
import { TaskReason } from '../../src/api/conditions.ts';
import { type Sim, CONTENT_ANNOTATION, createStorageClass, startSim, vcenter } from '../sim/index.ts';
import { R, Rest, condition, createMigration, createPlan, forkliftSetup } from '../sim/testing.ts';
import { installStandInCRDs } from './fixtures.ts';
import { DISK_STEPS, HANDOFF_STEPS, Step } from '../../src/controllers/handoff/index.ts';
import { ENV_KILL_AFTER_STEP } from './kill-after-step.ts';
import { type KillPoint, type World, playCDI, pointName, rand, runHandoff, transferredVM } from './handoff-world.ts';

let client: KubeClient;

before(async () => {
  client = new KubeClient(await adminKubeConfig());
  await installStandInCRDs(client);
});
after(() => client?.close());

const get = (gvr: (typeof GVRs)[keyof typeof GVRs], ns: string | undefined, name: string): Promise<KubeObject | undefined> => client.get(gvr, ns, name);
const S = (o: KubeObject | undefined): Record<string, unknown> => ((o?.spec ?? {}) as Record<string, unknown>);
const St = (o: KubeObject | undefined): Record<string, unknown> => ((o?.status ?? {}) as Record<string, unknown>);

/** What a user observes after a finished handoff; the data (same PV, same content) survived. */
async function assertHandedOff(w: World, expectPolicy: 'Delete' | 'Retain'): Promise<void> {
  for (const [i, p] of w.pvs.entries()) {
    const disk = `${w.vmName}-disk-${i}`;
    const claimName = `vm-disk-${disk}`;
    const pv = await get(GVRs.PersistentVolume, undefined, p.name);
    assert.ok(pv, `PV ${p.name} of disk ${i} still exists`);
    assert.equal(pv.metadata?.uid, p.uid, 'same PersistentVolume object');
    assert.equal(pv.metadata?.annotations?.[w.contentKey], p.content, 'same content');
    assert.equal(St(pv).phase, 'Bound', `PV of disk ${i} Bound`);
    assert.equal(S(pv).persistentVolumeReclaimPolicy, expectPolicy, `PV of disk ${i} has the class's reclaim policy`);
    assert.equal(pv.metadata?.labels?.[LABEL_DISK_INDEX], String(i));
    const claim = await get(GVRs.PersistentVolumeClaim, w.ns, claimName);
    assert.ok(claim, `claim ${claimName} exists`);
    assert.equal(St(claim).phase, 'Bound');
    assert.equal(S(claim).volumeName, p.name);
    const ref = S(pv).claimRef as { name: string; uid: string };
    assert.equal(ref.name, claimName);
    assert.equal(ref.uid, claim.metadata?.uid);
    const dv = await get(GVRs.DataVolume, w.ns, claimName);
    assert.ok(dv, `DataVolume ${claimName} exists`);
    assert.deepEqual(claim.metadata?.ownerReferences?.map((r) => [r.kind, r.uid, r.controller]), [['DataVolume', dv.metadata?.uid, true]], 'the DataVolume is the claim’s sole owner');
    assert.equal(dv.metadata?.labels?.['app.kubernetes.io/managed-by'], 'Helm');
    assert.equal(dv.metadata?.labels?.['app.kubernetes.io/instance'], claimName);
    assert.equal(dv.metadata?.annotations?.['meta.helm.sh/release-name'], claimName);
    assert.equal(dv.metadata?.annotations?.['meta.helm.sh/release-namespace'], w.ns);
    assert.equal(dv.metadata?.annotations?.['vm-disk.cozystack.io/optical'], 'false');
    const vmDisk = await get(GVRs.VMDisk, w.ns, disk);
    assert.ok(vmDisk, `VMDisk ${disk} exists`);
    assert.equal(vmDisk.metadata?.ownerReferences, undefined, 'VMDisk has no ownerReference');
    assert.deepEqual(S(vmDisk), { storage: (S(pv).capacity as { storage: string }).storage, storageClass: w.className, optical: false });
    assert.equal(await get(GVRs.PersistentVolumeClaim, w.ns, w.transferClaims[i]!), undefined, `transfer claim of disk ${i} gone`);
    assert.equal(await get(GVRs.DataVolume, w.ns, w.transferClaims[i]!), undefined, `transfer DataVolume of disk ${i} gone`);
  }
  // Exactly one output of each kind per disk, and nothing Released.
  const sel = { labelSelector: `${LABEL_TASK_UID}=${w.task.metadata.uid},${LABEL_VM_ID}=${w.spec.id}` };
  assert.equal((await client.list(GVRs.PersistentVolumeClaim, w.ns, sel)).items.length, w.pvs.length);
  assert.equal((await client.list(GVRs.DataVolume, w.ns, sel)).items.length, w.pvs.length);
  assert.equal((await client.list(GVRs.VMDisk, w.ns, sel)).items.length, w.pvs.length);
  assert.equal((await client.list(GVRs.VMInstance, w.ns, sel)).items.length, 1);
  assert.equal((await client.list(GVRs.PersistentVolumeClaim, w.ns)).items.length, w.pvs.length, 'no other claim in the namespace');
  const pvs = (await client.list(GVRs.PersistentVolume, undefined, sel)).items;
  assert.deepEqual(pvs.map((p) => St(p).phase).filter((ph) => ph !== 'Bound'), [], 'no Released volume');
  assert.equal(await get(GVRs.VirtualMachine, w.ns, w.scaffoldName), undefined, 'scaffolding VirtualMachine deleted');
  const vmi = await get(GVRs.VMInstance, w.ns, w.vmName);
  assert.ok(vmi, 'VMInstance exists');
  assert.equal(S(vmi).runStrategy, 'Halted');
  assert.deepEqual(
    (S(vmi).disks as Array<{ name: string }>).map((d) => d.name),
    w.pvs.map((_, i) => `${w.vmName}-disk-${i}`),
    'disks in source order',
  );
}

// ---------------------------------------------------------------------------------------------------

test('a one-disk VM becomes a VMDisk on the same volume and a Halted VMInstance, with the class’s Delete policy restored', async () => {
  const w = await transferredVM(client, { disks: [{ size: '2Gi' }] });
  const r = await runHandoff(client, w);
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  assert.equal(r.outcome.vmInstance, w.vmName);
  await assertHandedOff(w, 'Delete');
  assert.deepEqual(r.outcome.disks.map((d) => [d.index, d.vmDisk, d.volumeName, d.handoff, d.capacityBytes]), [[0, `${w.vmName}-disk-0`, w.pvs[0]!.name, 'done', 2 * 2 ** 30]]);
  const pv = await get(GVRs.PersistentVolume, undefined, w.pvs[0]!.name);
  assert.equal(pv?.metadata?.annotations?.[ANNOTATION_ORIGINAL_RECLAIM_POLICY], 'Delete', 'the volume records its policy before the handoff');
  assert.deepEqual([...new Set(r.steps.map((s) => s.step))], [...HANDOFF_STEPS].filter((s) => s !== Step.RequestBind || r.steps.some((x) => x.step === s)), 'steps ran in the declared order');
});

test('a three-disk VM hands off every disk, Block and Filesystem, ReadWriteMany kept', async () => {
  const w = await transferredVM(client, {
    disks: [{ volumeMode: 'Block' }, { volumeMode: 'Filesystem', accessModes: ['ReadWriteMany'] }, { volumeMode: 'Block', accessModes: ['ReadWriteMany'] }],
  });
  const r = await runHandoff(client, w);
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  await assertHandedOff(w, 'Delete');
  for (const [i, mode, access] of [
    [0, 'Block', ['ReadWriteOnce']],
    [1, 'Filesystem', ['ReadWriteMany']],
    [2, 'Block', ['ReadWriteMany']],
  ] as const) {
    const claim = await get(GVRs.PersistentVolumeClaim, w.ns, `vm-disk-${w.vmName}-disk-${i}`);
    assert.equal(S(claim).volumeMode, mode, `claim ${i} volumeMode copied from the PV`);
    assert.deepEqual(S(claim).accessModes, access, `claim ${i} accessModes copied from the PV`);
    const dv = await get(GVRs.DataVolume, w.ns, `vm-disk-${w.vmName}-disk-${i}`);
    assert.equal((S(dv).storage as { volumeMode: string }).volumeMode, mode);
  }
});

test('a class with reclaimPolicy Retain leaves the volume on Retain after the handoff', async () => {
  const w = await transferredVM(client, { disks: [{}], reclaimPolicy: 'Retain' });
  const r = await runHandoff(client, w);
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  await assertHandedOff(w, 'Retain');
});

test('a class deleted mid-import settles the volume on Delete', async () => {
  const w = await transferredVM(client, { disks: [{}], reclaimPolicy: 'Retain' });
  const r = await runHandoff(client, w, {
    onOutcome: async (o) => {
      if (o.disks[0]?.handoff === Step.CreateVMDisk) await client.delete(GVRs.StorageClass, undefined, w.className);
    },
  });
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  assert.equal(await get(GVRs.StorageClass, undefined, w.className), undefined);
  await assertHandedOff(w, 'Delete');
});

test('a VM with 8 disks gets the first six on sata and the rest on virtio, resources carried from the Forklift VM', async () => {
  const w = await transferredVM(client, { disks: Array.from({ length: 8 }, () => ({ size: '1Gi' })), leftoverDataVolume: false, cpu: { cores: 4, sockets: 2 }, memory: '12Gi' });
  const r = await runHandoff(client, w, { deadlineMs: 120_000 });
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  await assertHandedOff(w, 'Delete');
  const vmi = await get(GVRs.VMInstance, w.ns, w.vmName);
  assert.deepEqual(
    (S(vmi).disks as Array<{ bus: string }>).map((d) => d.bus),
    ['sata', 'sata', 'sata', 'sata', 'sata', 'sata', 'virtio', 'virtio'],
  );
  assert.deepEqual(S(vmi).resources, { cpu: 4, sockets: 2, memory: '12Gi' });
  assert.equal(S(vmi).instanceType, '', 'no instance type: the chart default must not size the VM');
  assert.deepEqual(S(vmi).firmware, { bootloader: 'bios' });
});

test('UEFI with secure boot is carried to the VMInstance; an instanceType from the task replaces the carried resources', async () => {
  const w = await transferredVM(client, { disks: [{}], firmware: { secureBoot: true }, vm: { instanceType: 'u1.large', instanceProfile: 'windows' } });
  const r = await runHandoff(client, w);
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  const vmi = await get(GVRs.VMInstance, w.ns, w.vmName);
  assert.deepEqual(S(vmi).firmware, { bootloader: 'uefi', secureBoot: true });
  assert.equal(S(vmi).instanceType, 'u1.large');
  assert.equal(S(vmi).instanceProfile, 'windows');
  assert.equal(S(vmi).resources, undefined);
});

test('an output name taken by a foreign VMDisk fails the VM with OutputExists before any volume is touched, and the foreign VMDisk stays', async () => {
  const w = await transferredVM(client, { disks: [{}, {}] });
  const foreign = await client.create(GVRs.VMDisk, {
    apiVersion: 'apps.cozystack.io/v1alpha1',
    kind: 'VMDisk',
    metadata: { name: `${w.vmName}-disk-1`, namespace: w.ns },
    spec: { storage: '5Gi', storageClass: 'other', optical: false },
  } as KubeObject);
  const r = await runHandoff(client, w);
  assert.equal(r.outcome.state, 'failed');
  assert.equal(r.outcome.reason, TaskReason.OutputExists);
  assert.match(r.outcome.message ?? '', /VMDisk .*-disk-1 already exists/);
  assert.deepEqual(r.steps, [], 'no step ran');
  const still = await get(GVRs.VMDisk, w.ns, `${w.vmName}-disk-1`);
  assert.equal(still?.metadata?.uid, foreign.metadata?.uid);
  assert.deepEqual(S(still), { storage: '5Gi', storageClass: 'other', optical: false }, 'never overwritten');
  for (const p of w.pvs) {
    const pv = await get(GVRs.PersistentVolume, undefined, p.name);
    assert.equal(pv?.metadata?.labels?.[LABEL_TASK_UID], undefined, 'the volume was not touched');
  }
});

test('an output the API server refuses fails the VM with its message instead of retrying', async () => {
  // An upper-case VM name is not a valid object name: the claim create is refused (422).
  const w = await transferredVM(client, { disks: [{}], vmName: `Web-${rand()}` });
  const r = await runHandoff(client, w);
  assert.equal(r.outcome.state, 'failed');
  assert.equal(r.outcome.reason, TaskReason.OutputRejected);
  assert.match(r.outcome.message ?? '', /refused PersistentVolumeClaim vm-disk-Web-.*-disk-0/);
  // The data is safe: the volume is Retain and still bound to the transfer claim.
  const pv = await get(GVRs.PersistentVolume, undefined, w.pvs[0]!.name);
  assert.equal(S(pv).persistentVolumeReclaimPolicy, 'Retain');
  assert.equal(St(pv).phase, 'Bound');
});

test('a VMDisk deleted right after the handoff creates it leaves the volume on Retain, the VM not Succeeded and no VMInstance', async () => {
  const w = await transferredVM(client, { disks: [{}, {}] });
  let deleted = false;
  const r = await runHandoff(client, w, {
    onOutcome: async (o) => {
      if (!deleted && o.message === `disk 0: ${Step.CreateVMDisk}`) {
        deleted = await client.delete(GVRs.VMDisk, w.ns, `${w.vmName}-disk-0`);
      }
    },
  });
  assert.ok(deleted, 'the VMDisk was deleted right after its creation');
  assert.equal(r.outcome.state, 'failed', r.outcome.message);
  assert.equal(r.outcome.reason, TaskReason.OutputDeleted);
  assert.match(r.outcome.message ?? '', new RegExp(`VMDisk ${w.vmName}-disk-0 was deleted`));
  assert.ok(!r.steps.some((s) => s.step === Step.SettleVolume), 'nothing was settled');
  assert.equal(await get(GVRs.VMDisk, w.ns, `${w.vmName}-disk-0`), undefined, 'the deleted VMDisk is not recreated');
  const pv = await get(GVRs.PersistentVolume, undefined, w.pvs[0]!.name);
  assert.equal(pv?.metadata?.uid, w.pvs[0]!.uid, 'the volume still exists');
  assert.equal(S(pv).persistentVolumeReclaimPolicy, 'Retain', 'the volume stays on Retain');
  assert.equal(await get(GVRs.VMInstance, w.ns, w.vmName), undefined, 'no VMInstance');
});

// Crash safety: a crash right after every step's API write (and in the middle of the multi-disk loop);
// the status write of that call is lost, the next call starts from a fresh context. One import per VM
// shape walks all of its kill points, each crash followed by fresh contexts that carry on from what the
// API server holds: a kill point that duplicated or lost anything leaves it so to the end (no later
// step deletes an extra output or makes a lost one), where the import is checked whole.
const killWalks: Array<{ disks: number; points: KillPoint[] }> = [
  { disks: 1, points: HANDOFF_STEPS.map((step) => ({ step, ...(DISK_STEPS.includes(step) ? { disk: 0 } : {}) })) },
  {
    disks: 2,
    points: [
      { step: Step.SettleVolume, disk: 0 },
      { step: Step.RetainVolume, disk: 1 },
      { step: Step.RebindVolume, disk: 1 },
      { step: Step.CreateVMInstance },
    ],
  },
];

for (const walk of killWalks) {
  test(`a crash right after each of ${walk.points.map(pointName).join(', ')} (${walk.disks} disk${walk.disks > 1 ? 's' : ''}, one import) loses and duplicates nothing`, async () => {
    const w = await transferredVM(client, { disks: Array.from({ length: walk.disks }, () => ({})) });
    const r = await runHandoff(client, w, { crashAfter: walk.points });
    assert.equal(r.outcome.state, 'done', r.outcome.message);
    // A claim bound by the binder's 1 s periodic resync before our bind request is the only way a step
    // can be skipped; every other kill point must have been reached.
    const reached = r.crashed.map(pointName);
    assert.deepEqual(walk.points.map(pointName).filter((p) => !reached.includes(p) && !p.startsWith(`${Step.RequestBind}:`)), [], `kill points reached: ${reached.join(', ')}`);
    await assertHandedOff(w, 'Delete');
  });
}

test('a process preloaded with a kill point SIGKILLs itself right after that step’s write, and a restart finishes the handoff', async () => {
  const w = await transferredVM(client, { disks: [{}, {}] });
  // A separate process drives the handoff the way the controller would, with the kill hook set.
  const child = `
    import * as k8s from '@kubernetes/client-node';
    import { pino } from 'pino';
    import { KubeClient } from ${JSON.stringify(join(REPO_ROOT, 'src/runtime/kube.ts'))};
    import { GVRs } from ${JSON.stringify(join(REPO_ROOT, 'src/runtime/gvr.ts'))};
    import { reconcileHandoff } from ${JSON.stringify(join(REPO_ROOT, 'src/controllers/handoff/index.ts'))};
    const w = JSON.parse(process.env.HANDOFF_WORLD);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(process.env.HANDOFF_KUBECONFIG);
    const client = new KubeClient(kc);
    const ctx = { client, cache: () => undefined, installed: () => true, log: pino({ level: 'silent' }), events: { event() {} }, now: () => new Date() };
    let status = w.status;
    for (let i = 0; i < 1000; i++) {
      const forkliftVM = await client.get(GVRs.VirtualMachine, w.ns, w.scaffoldName);
      const record = async (disks) => { status = { ...status, diskHandoffs: disks }; };
      const o = await reconcileHandoff(ctx, { task: w.task, spec: w.spec, vmName: w.vmName, status, className: w.className, forkliftVM, transferClaims: [], record });
      status = { ...status, diskHandoffs: o.disks };
      if (o.state !== 'progress') { console.log('finished without being killed: ' + o.state); process.exit(3); }
      await new Promise((r) => setTimeout(r, 10));
    }
    process.exit(4);
  `;
  const env = await testEnv();
  // CDI's part runs here while the child works (the child only runs the controller's code).
  let childRunning = true;
  const cdi = (async () => {
    while (childRunning) {
      await playCDI(client, w.ns);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
    const p = spawn(process.execPath, ['--import', pathToFileURL(join(REPO_ROOT, 'test/e2e/kill-after-step.ts')).href, '--input-type=module-typescript', '-e', child], {
      cwd: REPO_ROOT,
      env: { ...process.env, [ENV_KILL_AFTER_STEP]: `${Step.CreateClaim}:1`, HANDOFF_WORLD: JSON.stringify(w), HANDOFF_KUBECONFIG: env.admin.kubeconfigPath },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    p.stdout.on('data', (c: Buffer) => (stderr += c.toString()));
    p.on('exit', (code, signal) => resolve({ code, signal, stderr }));
  });
  childRunning = false;
  await cdi;
  assert.equal(exit.signal, 'SIGKILL', `killed by its own hook (exit ${exit.code}): ${exit.stderr.slice(-2000)}`);
  // Killed right after disk 1's claim was created: disk 0 finished, disk 1 has its claim and nothing after.
  assert.ok(await get(GVRs.VMDisk, w.ns, `${w.vmName}-disk-0`), 'disk 0 was finished before the kill');
  assert.ok(await get(GVRs.PersistentVolumeClaim, w.ns, `vm-disk-${w.vmName}-disk-1`), 'the killing step’s write happened');
  assert.ok(await get(GVRs.PersistentVolumeClaim, w.ns, w.transferClaims[1]!), 'the next step did not');
  // The child's evidence died with it; the restarted controller starts from the old status.
  const r = await runHandoff(client, w);
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  await assertHandedOff(w, 'Delete');
});

// ---------------------------------------------------------------------------------------------------
// Over a transfer the simulated Forklift really ran (Plan + Migration written by hand), with the
// simulator playing CDI (adoption), the provisioner (a Released volume under Delete is really deleted)
// and Cozystack's aggregated API (name limits; VMDisk → DataVolume rendering that keeps ours).

const SIM_URL = 'https://vcenter-handoff.example.com/sdk';
const simWorld = vcenter({
  url: SIM_URL,
  hosts: [{ id: 'host-1', address: '192.0.2.21' }],
  vms: [
    { id: 'vm-1', name: 'db01', cpuCount: 4, coresPerSocket: 2, memoryMB: 8192, firmware: 'efi', secureBoot: true, disks: [{ capacityGiB: 16 }, { capacityGiB: 8 }, { capacityGiB: 4 }] },
    { id: 'vm-2', name: 'app01', disks: [{ capacityGiB: 2 }] },
  ],
});

describe('the handoff of a transfer the simulated Forklift ran', () => {
  let sim: Sim;
  let rest: Rest;
  const simClass = `handoff-sim-${rand()}`;
  before(async () => {
    const env = await testEnv();
    await createStorageClass(env.admin.kubeconfigPath, { name: simClass, reclaimPolicy: 'Delete' });
    sim = await startSim({ kubeconfigPath: env.admin.kubeconfigPath, worlds: [simWorld] });
    rest = new Rest(env.admin.kubeconfigPath);
    // startSim re-applied the stand-in CRDs its own way; make sure their schemas keep unknown fields.
    await installStandInCRDs(client);
  });
  after(async () => {
    await sim?.stop();
    rest?.close();
    await client.delete(GVRs.StorageClass, undefined, simClass);
  });

  /** Runs a Plan + Migration for one VM and returns the World Forklift left behind. */
  async function migrated(vmId: string, vmName: string, o: { volumeMode?: string } = {}): Promise<World> {
    const ns = await freshNamespace('handoff-sim');
    await forkliftSetup(rest, ns, simWorld, { storageClass: simClass, ...(o.volumeMode ? { volumeMode: o.volumeMode } : {}) });
    await waitFor('StorageMap Ready', async () => condition(await rest.get(R.StorageMap, ns, 'sto'), 'Ready'));
    await waitFor('Providers Ready', async () => condition(await rest.get(R.Provider, ns, 'vsphere'), 'Ready') && condition(await rest.get(R.Provider, ns, 'host'), 'Ready'));
    const plan = await createPlan(rest, ns, 'p', [{ id: vmId }]);
    await waitFor('Plan Ready', async () => condition(await rest.get(R.Plan, ns, 'p'), 'Ready'));
    const mig = await createMigration(rest, plan);
    const done = await waitFor('Migration finished', async () => {
      const m = await rest.get(R.Migration, ns, mig.metadata.name);
      return condition(m, 'Succeeded') || condition(m, 'Failed') ? m : undefined;
    }, { timeoutMs: 60_000 });
    assert.ok(condition(done, 'Succeeded'), JSON.stringify(done.status));
    const vm = (await client.list(GVRs.VirtualMachine, ns, { labelSelector: `vmID=${vmId}` })).items[0]!;
    const volumes = ((vm.spec as { template: { spec: { volumes: Array<{ persistentVolumeClaim: { claimName: string } }> } } }).template.spec.volumes).map((v) => v.persistentVolumeClaim.claimName);
    const pvs: World['pvs'] = [];
    for (const c of volumes) {
      const claim = await get(GVRs.PersistentVolumeClaim, ns, c);
      const pv = (await get(GVRs.PersistentVolume, undefined, S(claim).volumeName as string))!;
      pvs.push({ name: pv.metadata!.name!, uid: pv.metadata!.uid!, content: pv.metadata!.annotations![CONTENT_ANNOTATION]! });
    }
    const spec: TaskVM = { id: vmId, name: vmName };
    return {
      ns,
      className: simClass,
      task: { apiVersion: API_VERSION, kind: KIND_TASK, metadata: { name: 'import', namespace: ns, uid: randomUUID() }, spec: { sourceRef: { name: 'vcenter' }, vms: [spec], storageClass: simClass } },
      spec,
      vmName,
      scaffoldName: vm.metadata!.name!,
      pvs,
      transferClaims: volumes,
      status: { id: vmId, name: vmName, phase: 'Creating' },
      contentKey: CONTENT_ANNOTATION,
    };
  }

  test('a three-disk UEFI VM Forklift transferred becomes three VMDisks on the very volumes it filled and a Halted VMInstance', async () => {
    const w = await migrated('vm-1', 'db', { volumeMode: 'Block' });
    const r = await runHandoff(client, w, { cdi: false });
    assert.equal(r.outcome.state, 'done', r.outcome.message);
    await assertHandedOff(w, 'Delete');
    const vmi = await get(GVRs.VMInstance, w.ns, 'db');
    assert.deepEqual(S(vmi).resources, { cpu: 2, sockets: 2, memory: '8192Mi' });
    assert.deepEqual(S(vmi).firmware, { bootloader: 'uefi', secureBoot: true });
    for (const i of [0, 1, 2]) {
      const dv = await get(GVRs.DataVolume, w.ns, `vm-disk-db-disk-${i}`);
      assert.equal(St(dv).phase, 'Succeeded', 'CDI adopted the claim instead of importing');
    }
  });

  test('a crash after the rebind over a real transfer still ends with the transferred data on the new claim', async () => {
    const w = await migrated('vm-2', 'app');
    const r = await runHandoff(client, w, { cdi: false, crashAfter: [{ step: Step.RebindVolume, disk: 0 }] });
    assert.equal(r.outcome.state, 'done', r.outcome.message);
    assert.deepEqual(r.crashed.map(pointName), [`${Step.RebindVolume}:0`], 'the crash happened');
    await assertHandedOff(w, 'Delete');
  });

  test('a VMDisk name over the aggregated API’s limit fails the VM with the API’s message, once, without a retry loop', async () => {
    const long = `a${'b'.repeat(38)}`; // 39 characters: "<name>-disk-0" is 46 > 45
    const w = await migrated('vm-2', long);
    let calls = 0;
    const r = await runHandoff(client, w, { cdi: false, onOutcome: () => void calls++ });
    assert.equal(r.outcome.state, 'failed');
    assert.equal(r.outcome.reason, TaskReason.OutputRejected);
    assert.match(r.outcome.message ?? '', /refused VMDisk .*must be no more than 45 characters/);
    // The volume is safe: bound to the new claim, Retain, same object.
    const pv = await get(GVRs.PersistentVolume, undefined, w.pvs[0]!.name);
    assert.equal(pv?.metadata?.uid, w.pvs[0]!.uid);
    assert.equal(S(pv).persistentVolumeReclaimPolicy, 'Retain');
    assert.equal(St(pv).phase, 'Bound');
    assert.ok(calls < 30, `no retry loop (${calls} calls)`);
  });
});
