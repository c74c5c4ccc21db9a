// The copy-free handoff over the real API server, PV binder and garbage collector (test/e2e/env).
// reconcileHandoff is driven directly in a loop, the way the task reconciler drives it: each call
// observes afresh and takes one step; the loop persists the returned disk evidence (the "status") and
// plays CDI's adoption of a populated claim. A "crash" is a step whose returned evidence is thrown away
// (the status write never happened) followed by a fresh context.
//
// The finished Forklift transfer is built by hand: per disk a PersistentVolume (with a content marker)
// bound by the real binder to a transfer claim owned by Forklift's VirtualMachine and by a leftover
// DataVolume, and the VirtualMachine whose volumes give the disk order.
import { test, before, after, describe } from 'node:test';
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomBytes, randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { adminKubeConfig, testEnv, freshNamespace, REPO_ROOT, waitFor, ControlPlane, kubeConfigFor, installOurCRDs } from './env/index.ts';
import { KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { ReconcileContext } from '../../src/runtime/reconciler.ts';
import type { TaskVM, VMImportTask, VMStatus } from '../../src/api/types.ts';
import { API_VERSION, KIND_TASK } from '../../src/api/types.ts';
import { CDI_POPULATED_FOR, LABEL_DISK_INDEX, LABEL_TASK_UID, LABEL_VM_ID, ANNOTATION_ORIGINAL_RECLAIM_POLICY } from '../../src/api/labels.ts';
import { TaskReason } from '../../src/api/conditions.ts';
import { type Sim, CONTENT_ANNOTATION, createStorageClass, startSim, vcenter } from '../sim/index.ts';
import { R, Rest, condition, createMigration, createPlan, forkliftSetup } from '../sim/testing.ts';
import { installStandInCRDs } from './fixtures.ts';
import { DISK_STEPS, HANDOFF_STEPS, Step, handoffHooks, reconcileHandoff, type HandoffOutcome, type StepName } from '../../src/controllers/handoff/index.ts';
import { ENV_KILL_AFTER_STEP } from './kill-after-step.ts';

const CONTENT = 'e2e.cozystack.io/content';

let client: KubeClient;

before(async () => {
  client = new KubeClient(await adminKubeConfig());
  await installStandInCRDs(client);
});
after(() => client?.close());

function ctxFor(c: KubeClient): ReconcileContext {
  return {
    client: c,
    cache: () => undefined,
    installed: () => true,
    log: pino({ level: 'silent' }),
    events: { event: () => undefined },
    now: () => new Date(),
  };
}

interface DiskSpec {
  size?: string;
  volumeMode?: 'Block' | 'Filesystem';
  accessModes?: string[];
}

interface WorldOptions {
  disks: DiskSpec[];
  reclaimPolicy?: 'Delete' | 'Retain';
  cpu?: { cores: number; sockets: number };
  memory?: string;
  firmware?: 'bios' | { secureBoot?: boolean };
  /** A DataVolume left behind that still owns the transfer claim (default true: exercises that step). */
  leftoverDataVolume?: boolean;
  vm?: Partial<TaskVM>;
  vmName?: string;
  /** An existing namespace (the private control plane); default a fresh one on the shared one. */
  ns?: string;
}

interface World {
  ns: string;
  className: string;
  task: VMImportTask;
  spec: TaskVM;
  vmName: string;
  scaffoldName: string;
  pvs: Array<{ name: string; uid: string; content: string }>;
  transferClaims: string[];
  status: VMStatus;
  /** Annotation on each PV that identifies its content. */
  contentKey: string;
}

const rand = (): string => randomBytes(3).toString('hex');

/** A finished Forklift cold transfer of one VM, as it leaves the target namespace. */
async function transferredVM(o: WorldOptions): Promise<World> {
  const ns = o.ns ?? (await freshNamespace('handoff'));
  const className = `handoff-${rand()}`;
  await client.create(GVRs.StorageClass, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: className, labels: { e2e: 'true' } },
    provisioner: 'kubernetes.io/no-provisioner',
    volumeBindingMode: 'Immediate',
    reclaimPolicy: o.reclaimPolicy ?? 'Delete',
  } as KubeObject);
  const vmId = `vm-${1000 + Math.floor(Math.random() * 9000)}`;
  const vmName = o.vmName ?? `web-${rand()}`;
  // Forklift names its VirtualMachine after the source VM, made a valid object name.
  const scaffoldName = vmName.toLowerCase();
  const labels = { vmID: vmId, plan: randomUUID(), migration: randomUUID() };
  const claimNames = o.disks.map(() => `plan-${vmId}-${rand()}`);
  const bootloader = o.firmware === undefined || o.firmware === 'bios' ? { bios: {} } : { efi: o.firmware.secureBoot === undefined ? {} : { secureBoot: o.firmware.secureBoot } };
  const vm = await client.create(GVRs.VirtualMachine, {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name: scaffoldName, namespace: ns, labels },
    spec: {
      running: false,
      template: {
        spec: {
          domain: {
            cpu: o.cpu ?? { cores: 2, sockets: 1 },
            memory: { guest: o.memory ?? '4Gi' },
            firmware: { bootloader },
            devices: { disks: claimNames.map((_, i) => ({ name: `vol-${i}`, disk: { bus: 'virtio' } })) },
          },
          volumes: claimNames.map((claimName, i) => ({ name: `vol-${i}`, persistentVolumeClaim: { claimName } })),
        },
      },
    },
  } as KubeObject);

  const pvs: World['pvs'] = [];
  for (const [i, d] of o.disks.entries()) {
    const content = randomBytes(8).toString('hex');
    const size = d.size ?? `${i + 1}Gi`;
    const accessModes = d.accessModes ?? ['ReadWriteOnce'];
    const pv = await client.create(GVRs.PersistentVolume, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: `pvc-${randomUUID()}`, labels: { e2e: 'true' }, annotations: { [CONTENT]: content } },
      spec: {
        capacity: { storage: size },
        accessModes,
        volumeMode: d.volumeMode ?? 'Filesystem',
        persistentVolumeReclaimPolicy: o.reclaimPolicy ?? 'Delete',
        storageClassName: className,
        hostPath: { path: `/tmp/handoff-e2e/${ns}/${i}` },
      },
    } as KubeObject);
    pvs.push({ name: pv.metadata!.name!, uid: pv.metadata!.uid!, content });
    const owners: NonNullable<KubeObject['metadata']>['ownerReferences'] = [
      { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', name: scaffoldName, uid: vm.metadata!.uid!, blockOwnerDeletion: true },
    ];
    if (o.leftoverDataVolume !== false) {
      const dv = await client.create(GVRs.DataVolume, {
        apiVersion: 'cdi.kubevirt.io/v1beta1',
        kind: 'DataVolume',
        metadata: { name: claimNames[i], namespace: ns, labels },
        spec: { source: { vddk: { url: 'https://vcenter.example/sdk' } }, storage: { resources: { requests: { storage: size } }, storageClassName: className } },
      } as KubeObject);
      owners.push({ apiVersion: 'cdi.kubevirt.io/v1beta1', kind: 'DataVolume', name: claimNames[i]!, uid: dv.metadata!.uid!, controller: true, blockOwnerDeletion: true });
    }
    await client.create(GVRs.PersistentVolumeClaim, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: claimNames[i], namespace: ns, labels, ownerReferences: owners },
      spec: {
        volumeName: pv.metadata!.name,
        storageClassName: className,
        accessModes,
        volumeMode: d.volumeMode ?? 'Filesystem',
        resources: { requests: { storage: size } },
      },
    } as KubeObject);
  }
  for (const c of claimNames) {
    await waitFor(`transfer claim ${c} Bound`, async () => (await client.get(GVRs.PersistentVolumeClaim, ns, c))?.status?.['phase' as never] === 'Bound');
  }
  const spec: TaskVM = { id: vmId, name: vmName, ...o.vm };
  const task: VMImportTask = {
    apiVersion: API_VERSION,
    kind: KIND_TASK,
    metadata: { name: `import-${rand()}`, namespace: ns, uid: randomUUID() },
    spec: { sourceRef: { name: 'vcenter' }, vms: [spec], storageClass: className },
  };
  return { ns, className, task, spec, vmName, scaffoldName, pvs, transferClaims: claimNames, status: { id: vmId, name: vmName, phase: 'Creating' }, contentKey: CONTENT };
}

/**
 * Cozystack's part, where the simulator does not run: each VMDisk's and VMInstance's Helm release deploys,
 * reported as the aggregated API does (Ready/Released copied from the HelmRelease,
 * cozystack/cozystack@v1.6.2:pkg/registry/apps/application/rest.go).
 */
async function playReleases(ns: string): Promise<void> {
  const ready = [{ type: 'Ready', status: 'True', reason: 'InstallSucceeded', message: 'Helm install succeeded', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }];
  for (const gvr of [GVRs.VMDisk, GVRs.VMInstance]) {
    for (const o of (await client.list(gvr, ns)).items) {
      if (((o.status as { conditions?: Array<{ type?: string; status?: string }> } | undefined)?.conditions ?? []).some((x) => x.type === 'Ready' && x.status === 'True')) continue;
      await client.patch(gvr, ns, o.metadata!.name!, { status: { conditions: ready } }, 'merge', { subresource: 'status' }).catch(() => undefined);
    }
  }
}

/** CDI's part: a DataVolume named like a claim annotated populatedFor=<it> adopts the claim (no import). */
async function playCDI(ns: string): Promise<void> {
  const dvs = (await client.list(GVRs.DataVolume, ns)).items;
  for (const dv of dvs) {
    const name = dv.metadata!.name!;
    const claim = await client.get(GVRs.PersistentVolumeClaim, ns, name);
    if (!claim || claim.metadata?.annotations?.[CDI_POPULATED_FOR] !== name) continue;
    if ((claim.metadata?.ownerReferences ?? []).some((r) => r.uid === dv.metadata?.uid)) continue;
    await client.patch(GVRs.PersistentVolumeClaim, ns, name, {
      metadata: {
        resourceVersion: claim.metadata?.resourceVersion,
        ownerReferences: [
          ...(claim.metadata?.ownerReferences ?? []),
          { apiVersion: 'cdi.kubevirt.io/v1beta1', kind: 'DataVolume', name, uid: dv.metadata!.uid!, controller: true, blockOwnerDeletion: true },
        ],
      },
    }).catch(() => undefined);
    await client.patch(GVRs.DataVolume, ns, name, { status: { phase: 'Succeeded', progress: '100.0%' } }, 'merge', { subresource: 'status' }).catch(() => undefined);
  }
}

class SimulatedCrash extends Error {}

// The longest pause of runHandoff's loop while a pass changes nothing (see there).
const WAITING_PAUSE_MAX_MS = 200;

interface RunOptions {
  /** Crash right after this step's API write (for this disk; any disk when omitted), once. */
  crashAfter?: { step: StepName; disk?: number };
  /** Overall deadline of the loop. */
  deadlineMs?: number;
  client?: KubeClient;
  /** Play CDI's adoption in the loop (default true; false when the simulator plays it). */
  cdi?: boolean;
  /** Called after every call (measurements). */
  onOutcome?: (o: HandoffOutcome, iteration: number) => void | Promise<void>;
}

interface RunResult {
  outcome: HandoffOutcome;
  steps: Array<{ step: StepName; disk: number | undefined }>;
  crashed: boolean;
}

/** Drives the handoff to done/failed the way the task reconciler would, persisting evidence in w.status. */
async function runHandoff(w: World, o: RunOptions = {}): Promise<RunResult> {
  const c = o.client ?? client;
  const steps: RunResult['steps'] = [];
  let crashed = false;
  handoffHooks.afterStep = (step, disk) => {
    steps.push({ step, disk });
    if (!crashed && o.crashAfter && o.crashAfter.step === step && (o.crashAfter.disk === undefined || o.crashAfter.disk === disk)) {
      crashed = true;
      throw new SimulatedCrash(`crash after ${step}:${disk}`);
    }
  };
  const deadline = Date.now() + (o.deadlineMs ?? 60_000);
  let pause = 10;
  let last = '';
  try {
    for (let i = 0; ; i++) {
      if (Date.now() > deadline) throw new Error(`handoff did not finish; status ${JSON.stringify(w.status)}`);
      const forkliftVM = await c.get(GVRs.VirtualMachine, w.ns, w.scaffoldName);
      const transferClaims = (await c.list(GVRs.PersistentVolumeClaim, w.ns, { labelSelector: `vmID=${w.spec.id}` })).items;
      let outcome: HandoffOutcome;
      try {
        // A fresh context per call: nothing survives in memory between steps but what the API holds and
        // what the caller persisted.
        // `record`: the task's status write before a create (it survives a crash after the create).
        const record = async (disks: HandoffOutcome['disks'], vmInstance?: string): Promise<void> => {
          w.status = { ...w.status, diskHandoffs: disks, ...(vmInstance ? { vmInstance } : {}) };
        };
        outcome = await reconcileHandoff(ctxFor(c), { task: w.task, spec: w.spec, vmName: w.vmName, status: w.status, className: w.className, forkliftVM, transferClaims, record });
      } catch (e) {
        if (e instanceof SimulatedCrash) continue; // the status write of this call never happened
        throw e;
      }
      w.status = { ...w.status, diskHandoffs: outcome.disks, ...(outcome.vmInstance ? { vmInstance: outcome.vmInstance } : {}) };
      await o.onOutcome?.(outcome, i);
      if (outcome.state !== 'progress') return { outcome, steps, crashed };
      if (o.cdi !== false) {
        await playCDI(w.ns);
        await playReleases(w.ns);
      }
      // The controller's requeue, shortened: the loop polls faster than the real safety net — right away
      // (10 ms) after a step, backing off to 200 ms while nothing changes (waiting on the PV binder or
      // CDI): each pass is about ten requests, and at a constant 10 ms the waits made this file one of the
      // suite's heaviest loads on its API server.
      const seen = JSON.stringify(outcome);
      pause = seen === last ? Math.min(WAITING_PAUSE_MAX_MS, pause * 1.5) : Math.min(outcome.requeueAfterMs ?? 10, 10);
      last = seen;
      await new Promise((r) => setTimeout(r, pause));
    }
  } finally {
    handoffHooks.afterStep = undefined;
  }
}

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
  const w = await transferredVM({ disks: [{ size: '2Gi' }] });
  const r = await runHandoff(w);
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  assert.equal(r.outcome.vmInstance, w.vmName);
  await assertHandedOff(w, 'Delete');
  assert.deepEqual(r.outcome.disks.map((d) => [d.index, d.vmDisk, d.volumeName, d.handoff, d.capacityBytes]), [[0, `${w.vmName}-disk-0`, w.pvs[0]!.name, 'done', 2 * 2 ** 30]]);
  const pv = await get(GVRs.PersistentVolume, undefined, w.pvs[0]!.name);
  assert.equal(pv?.metadata?.annotations?.[ANNOTATION_ORIGINAL_RECLAIM_POLICY], 'Delete', 'the volume records its policy before the handoff');
  assert.deepEqual([...new Set(r.steps.map((s) => s.step))], [...HANDOFF_STEPS].filter((s) => s !== Step.RequestBind || r.steps.some((x) => x.step === s)), 'steps ran in the declared order');
});

test('a three-disk VM hands off every disk, Block and Filesystem, ReadWriteMany kept', async () => {
  const w = await transferredVM({
    disks: [{ volumeMode: 'Block' }, { volumeMode: 'Filesystem', accessModes: ['ReadWriteMany'] }, { volumeMode: 'Block', accessModes: ['ReadWriteMany'] }],
  });
  const r = await runHandoff(w);
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
  const w = await transferredVM({ disks: [{}], reclaimPolicy: 'Retain' });
  const r = await runHandoff(w);
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  await assertHandedOff(w, 'Retain');
});

test('a class deleted mid-import settles the volume on Delete', async () => {
  const w = await transferredVM({ disks: [{}], reclaimPolicy: 'Retain' });
  const r = await runHandoff(w, {
    onOutcome: async (o) => {
      if (o.disks[0]?.handoff === Step.CreateVMDisk) await client.delete(GVRs.StorageClass, undefined, w.className);
    },
  });
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  assert.equal(await get(GVRs.StorageClass, undefined, w.className), undefined);
  await assertHandedOff(w, 'Delete');
});

test('a VM with 8 disks gets the first six on sata and the rest on virtio, resources carried from the Forklift VM', async () => {
  const w = await transferredVM({ disks: Array.from({ length: 8 }, () => ({ size: '1Gi' })), leftoverDataVolume: false, cpu: { cores: 4, sockets: 2 }, memory: '12Gi' });
  const r = await runHandoff(w, { deadlineMs: 120_000 });
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
  const w = await transferredVM({ disks: [{}], firmware: { secureBoot: true }, vm: { instanceType: 'u1.large', instanceProfile: 'windows' } });
  const r = await runHandoff(w);
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  const vmi = await get(GVRs.VMInstance, w.ns, w.vmName);
  assert.deepEqual(S(vmi).firmware, { bootloader: 'uefi', secureBoot: true });
  assert.equal(S(vmi).instanceType, 'u1.large');
  assert.equal(S(vmi).instanceProfile, 'windows');
  assert.equal(S(vmi).resources, undefined);
});

test('an output name taken by a foreign VMDisk fails the VM with OutputExists before any volume is touched, and the foreign VMDisk stays', async () => {
  const w = await transferredVM({ disks: [{}, {}] });
  const foreign = await client.create(GVRs.VMDisk, {
    apiVersion: 'apps.cozystack.io/v1alpha1',
    kind: 'VMDisk',
    metadata: { name: `${w.vmName}-disk-1`, namespace: w.ns },
    spec: { storage: '5Gi', storageClass: 'other', optical: false },
  } as KubeObject);
  const r = await runHandoff(w);
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
  const w = await transferredVM({ disks: [{}], vmName: `Web-${rand()}` });
  const r = await runHandoff(w);
  assert.equal(r.outcome.state, 'failed');
  assert.equal(r.outcome.reason, TaskReason.OutputRejected);
  assert.match(r.outcome.message ?? '', /refused PersistentVolumeClaim vm-disk-Web-.*-disk-0/);
  // The data is safe: the volume is Retain and still bound to the transfer claim.
  const pv = await get(GVRs.PersistentVolume, undefined, w.pvs[0]!.name);
  assert.equal(S(pv).persistentVolumeReclaimPolicy, 'Retain');
  assert.equal(St(pv).phase, 'Bound');
});

test('a VMDisk deleted right after the handoff creates it leaves the volume on Retain, the VM not Succeeded and no VMInstance', async () => {
  const w = await transferredVM({ disks: [{}, {}] });
  let deleted = false;
  const r = await runHandoff(w, {
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
// the status write of that call is lost, the next call starts from a fresh context.
const killPoints: Array<{ step: StepName; disk?: number; disks: number }> = [
  ...HANDOFF_STEPS.map((step) => ({ step, disk: DISK_STEPS.includes(step) ? 0 : undefined, disks: 1 })),
  { step: Step.SettleVolume, disk: 0, disks: 2 },
  { step: Step.RetainVolume, disk: 1, disks: 2 },
  { step: Step.RebindVolume, disk: 1, disks: 2 },
  { step: Step.CreateVMInstance, disks: 2 },
];

for (const kp of killPoints) {
  test(`a crash right after ${kp.step}${kp.disk !== undefined ? ` of disk ${kp.disk}` : ''} (${kp.disks} disk${kp.disks > 1 ? 's' : ''}) loses and duplicates nothing`, async () => {
    const w = await transferredVM({ disks: Array.from({ length: kp.disks }, () => ({})) });
    const r = await runHandoff(w, { crashAfter: { step: kp.step, disk: kp.disk } });
    assert.equal(r.outcome.state, 'done', r.outcome.message);
    // A claim bound by the binder's 1 s periodic resync before our bind request is the only way a step
    // can be skipped; every other kill point must have been reached.
    if (kp.step !== Step.RequestBind) assert.ok(r.crashed, `the kill point ${kp.step} was reached`);
    await assertHandedOff(w, 'Delete');
  });
}

test('the handoff lets the PV binder finish from watch events, not its 15 s periodic resync', { timeout: 180_000 }, async () => {
  const cp = await ControlPlane.start({ pvSyncPeriod: '15s', quiet: true });
  const own = new KubeClient(kubeConfigFor(cp.kubeconfigPath));
  try {
    await installStandInCRDs(own);
    // Ours too, as on any cluster the controller runs on: the handoff reads the task's source (a kind
    // not served is an error, not an absent source).
    await installOurCRDs(kubeConfigFor(cp.kubeconfigPath));
    const saved = client;
    client = own;
    try {
      await waitFor('default ServiceAccount', async () => await own.get({ group: '', version: 'v1', plural: 'serviceaccounts', kind: 'ServiceAccount', namespaced: true }, 'default', 'default'));
      const ns = `bind-${rand()}`;
      await own.create(GVRs.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } as KubeObject);
      // No leftover DataVolume: its orphaning deletion would wait for the garbage collector to discover
      // the just-installed CRD (up to 30 s), which is not what this test measures.
      const w = await transferredVM({ disks: [{ size: '1Gi' }], ns, leftoverDataVolume: false });
      let rebindAt = 0;
      let boundAt = 0;
      const r = await runHandoff(w, {
        client: own,
        deadlineMs: 120_000,
        onOutcome: async (o) => {
          if (o.disks[0]?.handoff === Step.RebindVolume && !rebindAt) rebindAt = performance.now();
          if (rebindAt && !boundAt) {
            const c = await own.get(GVRs.PersistentVolumeClaim, ns, `vm-disk-${w.vmName}-disk-0`);
            if (St(c).phase === 'Bound') boundAt = performance.now();
          }
        },
      });
      assert.equal(r.outcome.state, 'done', r.outcome.message);
      const handoffBind = boundAt - rebindAt;

      // The same rebind without the claim event, for comparison: the binder only gets to it on a resync.
      const w2 = await transferredVM({ disks: [{ size: '1Gi' }], ns, leftoverDataVolume: false });
      const pv = w2.pvs[0]!;
      await own.patch(GVRs.PersistentVolume, undefined, pv.name, { spec: { persistentVolumeReclaimPolicy: 'Retain' } });
      const claim = await own.create(GVRs.PersistentVolumeClaim, {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: `manual-${rand()}`, namespace: ns },
        spec: { volumeName: pv.name, storageClassName: w2.className, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      } as KubeObject);
      await own.delete(GVRs.PersistentVolumeClaim, ns, w2.transferClaims[0]!);
      await waitFor('PV Released', async () => St(await own.get(GVRs.PersistentVolume, undefined, pv.name)).phase === 'Released');
      const t0 = performance.now();
      await own.patch(GVRs.PersistentVolume, undefined, pv.name, {
        spec: { claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: claim.metadata!.name, uid: claim.metadata!.uid, resourceVersion: null } },
      });
      await waitFor('manual claim Bound', async () => St(await own.get(GVRs.PersistentVolumeClaim, ns, claim.metadata!.name!)).phase === 'Bound', { timeoutMs: 40_000 });
      const resyncBind = performance.now() - t0;
      console.log(`[handoff] bind latency with --pvclaimbinder-sync-period=15s: handoff ${handoffBind.toFixed(0)} ms (claimRef write → claim Bound); the same rebind without the claim event ${resyncBind.toFixed(0)} ms`);
      assert.ok(handoffBind > 0 && handoffBind < 3000, `the handoff's bind completes from events (took ${handoffBind.toFixed(0)} ms)`);
    } finally {
      client = saved;
    }
  } finally {
    own.close();
    await cp.stop();
  }
});


test('a process preloaded with a kill point SIGKILLs itself right after that step’s write, and a restart finishes the handoff', async () => {
  const w = await transferredVM({ disks: [{}, {}] });
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
      await playCDI(w.ns);
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
  const r = await runHandoff(w);
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
    const r = await runHandoff(w, { cdi: false });
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
    const r = await runHandoff(w, { cdi: false, crashAfter: { step: Step.RebindVolume, disk: 0 } });
    assert.equal(r.outcome.state, 'done', r.outcome.message);
    assert.ok(r.crashed);
    await assertHandedOff(w, 'Delete');
  });

  test('a VMDisk name over the aggregated API’s limit fails the VM with the API’s message, once, without a retry loop', async () => {
    const long = `a${'b'.repeat(38)}`; // 39 characters: "<name>-disk-0" is 46 > 45
    const w = await migrated('vm-2', long);
    let calls = 0;
    const r = await runHandoff(w, { cdi: false, onOutcome: () => void calls++ });
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
