// A finished Forklift cold transfer of one VM built by hand over the real API server, PV binder and
// garbage collector, and the loop that drives the copy-free handoff over it the way the task reconciler
// does (handoff-checkpoints.test.ts; the PV binder's test on a private plane, private-plane.test.ts).
// reconcileHandoff is called in a loop: each call observes afresh and takes one step; the loop persists
// the returned disk evidence (the "status") and plays CDI's adoption of a populated claim. A "crash" is a
// step whose returned evidence is thrown away (the status write never happened) followed by a fresh
// context.
//
// Per disk a PersistentVolume (with a content marker) bound by the real binder to a transfer claim owned
// by Forklift's VirtualMachine and by a leftover DataVolume, and the VirtualMachine whose volumes give the
// disk order.
import { randomBytes, randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { freshNamespace, waitFor } from './env/index.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { ReconcileContext } from '../../src/runtime/reconciler.ts';
import type { TaskVM, VMImportTask, VMStatus } from '../../src/api/types.ts';
import { API_VERSION, KIND_TASK } from '../../src/api/types.ts';
import { CDI_POPULATED_FOR } from '../../src/api/labels.ts';
import { handoffHooks, reconcileHandoff, type HandoffOutcome, type StepName } from '../../src/controllers/handoff/index.ts';

export const CONTENT = 'e2e.cozystack.io/content';

export function ctxFor(c: KubeClient): ReconcileContext {
  return {
    client: c,
    cache: () => undefined,
    installed: () => true,
    definition: () => undefined,
    log: pino({ level: 'silent' }),
    events: { event: () => undefined },
    now: () => new Date(),
  };
}

export interface DiskSpec {
  size?: string;
  volumeMode?: 'Block' | 'Filesystem';
  accessModes?: string[];
}

export interface WorldOptions {
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

export interface World {
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

export const rand = (): string => randomBytes(3).toString('hex');

/** A finished Forklift cold transfer of one VM, as it leaves the target namespace. */
export async function transferredVM(client: KubeClient, o: WorldOptions): Promise<World> {
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
export async function playReleases(client: KubeClient, ns: string): Promise<void> {
  const ready = [{ type: 'Ready', status: 'True', reason: 'InstallSucceeded', message: 'Helm install succeeded', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }];
  for (const gvr of [GVRs.VMDisk, GVRs.VMInstance]) {
    for (const o of (await client.list(gvr, ns)).items) {
      if (((o.status as { conditions?: Array<{ type?: string; status?: string }> } | undefined)?.conditions ?? []).some((x) => x.type === 'Ready' && x.status === 'True')) continue;
      await client.patch(gvr, ns, o.metadata!.name!, { status: { conditions: ready } }, 'merge', { subresource: 'status' }).catch(() => undefined);
    }
  }
}

/** CDI's part: a DataVolume named like a claim annotated populatedFor=<it> adopts the claim (no import). */
export async function playCDI(client: KubeClient, ns: string): Promise<void> {
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

export class SimulatedCrash extends Error {}

// The longest pause of runHandoff's loop while a pass changes nothing (see there).
const WAITING_PAUSE_MAX_MS = 200;

/** A kill point: right after this step's API write, for this disk (any disk when omitted). */
export interface KillPoint {
  step: StepName;
  disk?: number;
}

export const pointName = (p: KillPoint): string => `${p.step}${p.disk !== undefined ? `:${p.disk}` : ''}`;

export interface RunOptions {
  /** Crash right after each of these steps' API writes, once each, in whatever order the handoff reaches them. */
  crashAfter?: KillPoint[];
  /** Overall deadline of the loop. */
  deadlineMs?: number;
  /** Play CDI's adoption in the loop (default true; false when the simulator plays it). */
  cdi?: boolean;
  /** Called after every call (measurements). */
  onOutcome?: (o: HandoffOutcome, iteration: number) => void | Promise<void>;
}

export interface RunResult {
  outcome: HandoffOutcome;
  steps: Array<{ step: StepName; disk: number | undefined }>;
  /** The kill points a crash happened at, in order. */
  crashed: KillPoint[];
}

/** Drives the handoff to done/failed the way the task reconciler would, persisting evidence in w.status. */
export async function runHandoff(c: KubeClient, w: World, o: RunOptions = {}): Promise<RunResult> {
  const steps: RunResult['steps'] = [];
  const crashed: KillPoint[] = [];
  const pending = [...(o.crashAfter ?? [])];
  handoffHooks.afterStep = (step, disk) => {
    steps.push({ step, disk });
    const at = pending.findIndex((p) => p.step === step && (p.disk === undefined || p.disk === disk));
    if (at < 0) return;
    const [point] = pending.splice(at, 1) as [KillPoint];
    crashed.push(point);
    throw new SimulatedCrash(`crash after ${step}:${disk}`);
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
        await playCDI(c, w.ns);
        await playReleases(c, w.ns);
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

