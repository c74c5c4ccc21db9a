// The Handoff object against an in-memory API (every read live: no caches): the order of its writes
// around a create (the checkpoint recorded first, put back when the create fails), and what a VM whose
// output was deleted leaves behind (its volume on Retain, the claim out of custody, the scaffolding VM
// gone so the VM can be imported again). The whole recipe against the real API server, the PV binder and
// the simulated CDI is test/e2e/handoff-checkpoints.test.ts and handoff-output-deleted.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { ANNOTATION_BIND_REQUESTED, CDI_POPULATED_FOR, CLAIM_FINALIZER, LABEL_TASK_UID, LABEL_VM_ID } from '../../api/labels.ts';
import { TaskReason } from '../../api/conditions.ts';
import type { DiskStatus, TaskVM, VMImportTask, VMStatus } from '../../api/types.ts';
import { markerLabels, renderHandoffDataVolume, renderTargetClaim, volumeFacts } from '../../cozystack/render.ts';
import { GVRs, type GVR } from '../../runtime/gvr.ts';
import { ApiError, type KubeClient, type KubeObject } from '../../runtime/kube.ts';
import type { Cache, ReconcileContext } from '../../runtime/reconciler.ts';
import { Handoff, handoffHooks, type HandoffInput, type HandoffOutcome } from './index.ts';
import { HANDOFF_STEPS, Step, pendingCheckpoint, type StepName } from './steps.ts';

const NS = 'tenant';
const TASK: VMImportTask = { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'import', namespace: NS, uid: 'task-uid' }, spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1', name: 'db' }] } };
const SPEC: TaskVM = { id: 'vm-1', name: 'db' };
const MARKERS = { taskUid: 'task-uid', taskName: 'import', vmId: 'vm-1' };

type Call = { verb: string; kind: string; name: string; body?: unknown };

/** Objects by kind/namespace/name, with resourceVersion and UID preconditions as the API server checks them. */
class FakeAPI {
  readonly objects = new Map<string, KubeObject>();
  readonly calls: Call[] = [];
  private rv = 100;
  /** Answers the next create of this kind with this error. */
  failCreate?: { kind: string; error: Error };

  key(gvr: GVR, ns: string | undefined, name: string): string {
    return `${gvr.kind}/${gvr.namespaced ? (ns ?? '') : ''}/${name}`;
  }

  put(gvr: GVR, o: KubeObject): KubeObject {
    const stored = structuredClone(o);
    stored.metadata = { ...stored.metadata, resourceVersion: String(++this.rv), uid: stored.metadata?.uid ?? `${gvr.kind}-${this.rv}` };
    this.objects.set(this.key(gvr, stored.metadata.namespace, stored.metadata.name!), stored);
    return structuredClone(stored);
  }

  find(gvr: GVR, ns: string | undefined, name: string): KubeObject | undefined {
    return this.objects.get(this.key(gvr, ns, name));
  }

  client(): KubeClient {
    return fakeClient(this);
  }

  /** Deletion as the API server and the garbage collector do it: finalizers hold, dependents follow or are orphaned. */
  remove(gvr: GVR, cur: KubeObject, propagation?: string): void {
    if ((cur.metadata?.finalizers ?? []).length) {
      if (!cur.metadata?.deletionTimestamp) this.put(gvr, { ...cur, metadata: { ...cur.metadata, deletionTimestamp: 'now' } });
      return;
    }
    this.objects.delete(this.key(gvr, cur.metadata?.namespace, cur.metadata!.name!));
    this.deleted.push(`${gvr.kind}/${cur.metadata!.name}`);
    for (const [k, o] of [...this.objects]) {
      const refs = o.metadata?.ownerReferences ?? [];
      if (!refs.some((r) => r.uid === cur.metadata?.uid)) continue;
      if (propagation === 'Orphan') {
        o.metadata!.ownerReferences = refs.filter((r) => r.uid !== cur.metadata?.uid);
      } else {
        const kind = k.split('/')[0]!;
        this.remove(Object.values(GVRs).find((g) => g.kind === kind)!, o);
      }
    }
  }

  /** A terminating object whose last finalizer went is deleted. */
  finish(gvr: GVR, o: KubeObject): void {
    if (o.metadata?.deletionTimestamp && !(o.metadata.finalizers ?? []).length) this.remove(gvr, o);
  }

  /** Everything deleted, as kind/name. */
  readonly deleted: string[] = [];
}

/** A JSON merge patch (RFC 7386). */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = target && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function fakeClient(self: FakeAPI): KubeClient {
  {
    const matches = (o: KubeObject, selector: string | undefined): boolean =>
      !selector || selector.split(',').every((kv) => { const [k, v] = kv.split('='); return o.metadata?.labels?.[k!] === v; });
    const list = async (gvr: GVR, ns?: string, o: { labelSelector?: string } = {}) => ({
      items: [...self.objects.entries()].filter(([k, x]) => k.startsWith(`${gvr.kind}/`) && (!ns || x.metadata?.namespace === ns) && matches(x, o.labelSelector)).map(([, x]) => structuredClone(x)),
    });
    return {
      get: async (gvr: GVR, ns: string | undefined, name: string) => {
        const o = self.find(gvr, ns, name);
        return o ? structuredClone(o) : undefined;
      },
      list,
      listAll: list,
      create: async (gvr: GVR, obj: KubeObject) => {
        self.calls.push({ verb: 'create', kind: gvr.kind, name: obj.metadata!.name! });
        if (self.failCreate?.kind === gvr.kind) {
          const e = self.failCreate.error;
          self.failCreate = undefined;
          throw e;
        }
        if (self.find(gvr, obj.metadata?.namespace, obj.metadata!.name!)) throw new ApiError(409, 'AlreadyExists', 'already exists');
        return self.put(gvr, obj);
      },
      patch: async (gvr: GVR, ns: string | undefined, name: string, body: { metadata?: Record<string, unknown>; spec?: Record<string, unknown> }) => {
        self.calls.push({ verb: 'patch', kind: gvr.kind, name, body });
        const cur = self.find(gvr, ns, name);
        if (!cur) throw new ApiError(404, 'NotFound', 'not found');
        const rv = body.metadata?.resourceVersion;
        if (rv && rv !== cur.metadata?.resourceVersion) throw new ApiError(409, 'Conflict', 'the object has been modified');
        const next = mergePatch(cur, body) as KubeObject;
        next.metadata = { ...next.metadata, resourceVersion: cur.metadata?.resourceVersion };
        const written = self.put(gvr, next);
        self.finish(gvr, written);
        return written;
      },
      delete: async (gvr: GVR, ns: string | undefined, name: string, o: { uid?: string; propagationPolicy?: string } = {}) => {
        self.calls.push({ verb: 'delete', kind: gvr.kind, name });
        const cur = self.find(gvr, ns, name);
        if (!cur) return false;
        if (o.uid && o.uid !== cur.metadata?.uid) throw new ApiError(409, 'Conflict', 'uid precondition');
        self.remove(gvr, cur, o.propagationPolicy);
        return true;
      },
    } as unknown as KubeClient;
  }
}

/** A one-disk VM whose handoff has reached create-datavolume: the next step is the VMDisk. */
function worldBeforeVMDisk(): { api: FakeAPI; input: (over?: Partial<HandoffInput>) => HandoffInput; recorded: DiskStatus[][] } {
  const api = new FakeAPI();
  api.put(GVRs.StorageClass, { metadata: { name: 'fast' }, reclaimPolicy: 'Delete' } as KubeObject);
  const pv = api.put(GVRs.PersistentVolume, {
    metadata: { name: 'pv-1', labels: markerLabels(MARKERS, 0) },
    spec: { capacity: { storage: '2Gi' }, storageClassName: 'fast', accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', claimRef: { name: 'vm-disk-db-disk-0', namespace: NS, uid: 'claim-uid' } },
    status: { phase: 'Bound' },
  });
  const facts = volumeFacts(pv)!;
  const dv = api.put(GVRs.DataVolume, renderHandoffDataVolume({ namespace: NS, diskName: 'db-disk-0', diskIndex: 0, volume: facts, markers: MARKERS }));
  const claim = renderTargetClaim({ namespace: NS, diskName: 'db-disk-0', diskIndex: 0, volume: facts, markers: MARKERS });
  claim.metadata = { ...claim.metadata, uid: 'claim-uid', finalizers: [CLAIM_FINALIZER], annotations: { [CDI_POPULATED_FOR]: 'vm-disk-db-disk-0' }, ownerReferences: [{ apiVersion: 'cdi.kubevirt.io/v1beta1', kind: 'DataVolume', name: 'vm-disk-db-disk-0', uid: dv.metadata!.uid!, controller: true }] };
  claim.status = { phase: 'Bound' };
  api.put(GVRs.PersistentVolumeClaim, claim);
  const vm = api.put(GVRs.VirtualMachine, { metadata: { name: 'db', namespace: NS }, spec: { template: { spec: { volumes: [{ name: 'vol-0', persistentVolumeClaim: { claimName: 'plan-db-0' } }] } } } } as KubeObject);
  const recorded: DiskStatus[][] = [];
  const status = { id: 'vm-1', name: 'db', phase: 'Creating' as const, disks: ['db-disk-0'], diskHandoffs: [{ index: 0, vmDisk: 'db-disk-0', volumeName: 'pv-1', transferClaim: 'plan-db-0', handoff: Step.CreateDataVolume }] };
  const input = (over: Partial<HandoffInput> = {}): HandoffInput => ({
    task: TASK,
    spec: SPEC,
    vmName: 'db',
    status,
    className: 'fast',
    forkliftVM: api.find(GVRs.VirtualMachine, NS, 'db') ?? undefined,
    transferClaims: [],
    record: async (disks) => {
      api.calls.push({ verb: 'record', kind: 'VMImportTask', name: disks.map((d) => d.handoff).join(',') });
      recorded.push(disks);
    },
    ...over,
  });
  void vm;
  return { api, input, recorded };
}

function ctxOf(api: FakeAPI): ReconcileContext {
  return { client: api.client(), cache: () => undefined, installed: () => true, definition: () => undefined, log: pino({ level: 'silent' }), events: { event() {} } as unknown as ReconcileContext['events'], now: () => new Date('2026-12-03T12:00:00Z') };
}

test('the VMDisk’s create is announced in the task’s status before the VMDisk is created, and confirmed once it was', async () => {
  const { api, input } = worldBeforeVMDisk();
  const out = await new Handoff().reconcile(ctxOf(api), input());
  assert.equal(out.step, Step.CreateVMDisk, out.message);
  const order = api.calls.filter((c) => c.verb === 'record' || (c.verb === 'create' && c.kind === 'VMDisk')).map((c) => `${c.verb} ${c.name}`);
  assert.deepEqual(order, [`record ${pendingCheckpoint(Step.CreateVMDisk)}`, 'create db-disk-0']);
  assert.equal(out.disks[0]!.handoff, Step.CreateVMDisk);
});

test('a VMDisk announced but missing is made, not called deleted: its create may never have happened', async () => {
  const { api, input } = worldBeforeVMDisk();
  const announced = { ...input().status, diskHandoffs: [{ ...input().status.diskHandoffs![0]!, handoff: pendingCheckpoint(Step.CreateVMDisk) }] };
  const out = await new Handoff().reconcile(ctxOf(api), input({ status: announced }));
  assert.equal(out.state, 'progress', out.message);
  assert.equal(out.step, Step.CreateVMDisk);
  assert.ok(api.find(GVRs.VMDisk, NS, 'db-disk-0'), 'the VMDisk exists');
});

test('a status an earlier version wrote, its evidence as objects in disks, resumes the handoff at its checkpoint: the announced VMDisk is made, nothing before it redone, the evidence carried on', async () => {
  const { api, input } = worldBeforeVMDisk();
  const { diskHandoffs, ...rest } = input().status;
  const legacy = { ...rest, disks: [{ ...diskHandoffs![0]!, handoff: pendingCheckpoint(Step.CreateVMDisk) }] as unknown as string[] };
  const out = await new Handoff().reconcile(ctxOf(api), input({ status: legacy }));
  assert.equal(out.state, 'progress', out.message);
  assert.equal(out.step, Step.CreateVMDisk);
  assert.deepEqual(api.calls.filter((c) => c.verb === 'create').map((c) => `${c.kind} ${c.name}`), ['VMDisk db-disk-0'], 'only the step after the checkpoint runs');
  assert.deepEqual(out.disks.map((d) => [d.vmDisk, d.volumeName, d.transferClaim, d.handoff]), [['db-disk-0', 'pv-1', 'plan-db-0', Step.CreateVMDisk]]);
});

test('a create that answers an error puts the checkpoint back, so that the next pass makes the output instead of calling it deleted', async () => {
  const { api, input, recorded } = worldBeforeVMDisk();
  api.failCreate = { kind: 'VMDisk', error: new ApiError(503, 'ServiceUnavailable', 'the aggregated API is unavailable') };
  await assert.rejects(new Handoff().reconcile(ctxOf(api), input()), /unavailable/);
  assert.deepEqual(recorded.map((d) => d[0]!.handoff), [pendingCheckpoint(Step.CreateVMDisk), Step.CreateDataVolume]);
});

test('a VMDisk deleted after its create was recorded fails the VM with OutputDeleted; the volume stays Retain in the task’s custody, the claim leaves the handoff’s finalizer and the scaffolding VM goes', async () => {
  const { api, input } = worldBeforeVMDisk();
  const recordedStatus = { ...input().status, diskHandoffs: [{ ...input().status.diskHandoffs![0]!, handoff: Step.CreateVMDisk }] };
  // The tenant deleted the VMDisk; its chart's uninstall took the DataVolume, and the garbage collector
  // started deleting the claim (held by the finalizer).
  api.objects.delete(`DataVolume/${NS}/vm-disk-db-disk-0`);
  const claim = api.find(GVRs.PersistentVolumeClaim, NS, 'vm-disk-db-disk-0')!;
  claim.metadata!.deletionTimestamp = '2026-12-03T11:59:59Z';
  const out = await new Handoff().reconcile(ctxOf(api), input({ status: recordedStatus }));
  assert.equal(out.state, 'failed');
  assert.equal(out.reason, TaskReason.OutputDeleted);
  assert.match(out.message ?? '', /^PersistentVolumeClaim vm-disk-db-disk-0 was being deleted .*; the VM is not finished and no VMInstance is created over it\. PersistentVolume pv-1 \(disk 0, 2Gi\) is kept with reclaim policy Retain, held by this task: deleting the task releases it under its storage class's reclaim policy, unless the task is annotated forklift\.cozystack\.io\/keep-volumes=true$/);
  const pv = api.find(GVRs.PersistentVolume, undefined, 'pv-1')!;
  assert.equal((pv.spec as { persistentVolumeReclaimPolicy?: string }).persistentVolumeReclaimPolicy, 'Retain');
  assert.equal(api.find(GVRs.PersistentVolumeClaim, NS, 'vm-disk-db-disk-0'), undefined, 'out of custody, the terminating claim went: its volume is Retain');
  assert.equal(api.find(GVRs.VirtualMachine, NS, 'db'), undefined, 'the scaffolding VM is gone: the VM can be imported again');
  assert.ok(!api.calls.some((c) => c.verb === 'create'), 'nothing is re-created');
});

/** A context whose caches hold `api` as it was when this was called (a stale view of every kind). */
function ctxWithCachesOf(api: FakeAPI): ReconcileContext & { gets: string[] } {
  const snapshot = new Map([...api.objects].map(([k, o]) => [k, structuredClone(o)]));
  const gets: string[] = [];
  const cacheOf = (gvr: GVR): Cache => ({
    get: (ns, name) => {
      const o = snapshot.get(api.key(gvr, ns, name));
      return o ? structuredClone(o) : undefined;
    },
    list: (ns, labels) =>
      [...snapshot.entries()]
        .filter(([k, o]) => k.startsWith(`${gvr.kind}/`) && (!ns || o.metadata?.namespace === ns) && Object.entries(labels ?? {}).every(([l, v]) => o.metadata?.labels?.[l] === v))
        .map(([, o]) => structuredClone(o)),
    hasSynced: () => true,
  });
  const base = ctxOf(api);
  const client = base.client;
  const counted = new Proxy(client, {
    get: (target, prop, receiver) => {
      if (prop !== 'get') return Reflect.get(target, prop, receiver);
      return async (gvr: GVR, ns: string | undefined, name: string) => {
        gets.push(`${gvr.kind} ${name}`);
        return await client.get(gvr, ns, name);
      };
    },
  });
  return { ...base, client: counted, cache: cacheOf as ReconcileContext['cache'], gets };
}

test('a claim its cache shows whole but the API server shows being deleted gets no DataVolume: the step reads what its precondition names from the server, and only that', async () => {
  const { api, input } = worldBeforeVMDisk();
  // The disk one step before its DataVolume: the claim Bound, its bind requested, no DataVolume yet.
  api.objects.delete(`DataVolume/${NS}/vm-disk-db-disk-0`);
  const claim = api.find(GVRs.PersistentVolumeClaim, NS, 'vm-disk-db-disk-0')!;
  claim.metadata!.ownerReferences = [];
  claim.metadata!.annotations = { ...claim.metadata!.annotations, [ANNOTATION_BIND_REQUESTED]: 'true' };
  const status = { ...input().status, diskHandoffs: [{ ...input().status.diskHandoffs![0]!, handoff: Step.RequestBind }] };
  // The same world, as the caches hold it, decides the DataVolume.
  const fresh = ctxWithCachesOf(api);
  const made = await new Handoff().reconcile(fresh, input({ status }));
  assert.equal(made.step, Step.CreateDataVolume, made.message);
  assert.ok(!fresh.gets.some((g) => g.startsWith('PersistentVolume ') || g.startsWith('VirtualMachine ')), `the volume and the VM stand as cached: ${fresh.gets.join(', ')}`);
  assert.ok(fresh.gets.includes('PersistentVolumeClaim vm-disk-db-disk-0'), `the claim is read from the server: ${fresh.gets.join(', ')}`);
  // Again, with the claim being deleted on the server after the caches last saw it.
  api.objects.delete(`DataVolume/${NS}/vm-disk-db-disk-0`);
  api.calls.length = 0;
  const stale = ctxWithCachesOf(api);
  api.find(GVRs.PersistentVolumeClaim, NS, 'vm-disk-db-disk-0')!.metadata!.deletionTimestamp = '2026-12-03T11:59:59Z';
  const out = await new Handoff().reconcile(stale, input({ status }));
  assert.notEqual(out.step, Step.CreateDataVolume, out.message);
  assert.ok(!api.calls.some((c) => c.verb === 'create' && c.kind === 'DataVolume'), 'no DataVolume over a claim being deleted (CDI would provision an empty volume in its place)');
});

test('a settled volume whose claim is being deleted goes back on Retain before the claim leaves custody', async () => {
  const { api, input } = worldBeforeVMDisk();
  api.put(GVRs.VMDisk, { apiVersion: 'apps.cozystack.io/v1alpha1', kind: 'VMDisk', metadata: { name: 'db-disk-0', namespace: NS, labels: markerLabels(MARKERS, 0) } } as KubeObject);
  const pv = api.find(GVRs.PersistentVolume, undefined, 'pv-1')!;
  (pv.spec as Record<string, unknown>).persistentVolumeReclaimPolicy = 'Delete';
  pv.metadata!.annotations = { 'forklift.cozystack.io/handoff': 'settled' };
  api.find(GVRs.PersistentVolumeClaim, NS, 'vm-disk-db-disk-0')!.metadata!.deletionTimestamp = '2026-12-03T11:59:59Z';
  const status = { ...input().status, diskHandoffs: [{ ...input().status.diskHandoffs![0]!, handoff: 'done' }] };
  const out = await new Handoff().reconcile(ctxOf(api), input({ status }));
  assert.equal(out.reason, TaskReason.OutputDeleted, out.message);
  const writes = api.calls.filter((c) => c.verb === 'patch').map((c) => `${c.kind} ${c.name}`);
  assert.deepEqual(writes.slice(0, 2), ['PersistentVolume pv-1', 'PersistentVolumeClaim vm-disk-db-disk-0'], 'Retain first, then the finalizer goes');
  assert.equal((api.find(GVRs.PersistentVolume, undefined, 'pv-1')!.spec as { persistentVolumeReclaimPolicy?: string }).persistentVolumeReclaimPolicy, 'Retain');
  assert.equal(api.find(GVRs.VMDisk, NS, 'db-disk-0'), undefined, 'a VMDisk of ours over a claim gone would get an empty DataVolume from its chart: it goes');
  void LABEL_TASK_UID;
  void LABEL_VM_ID;
});

// ---------------------------------------------------------------------------------------------------
// The whole recipe on the in-memory API, with the rest of the cluster played between passes: the PV
// binder (a claimRef whose claim exists binds; one whose claim is gone is Released; a claim is marked
// Bound once its bind is requested), the provisioner (a Released volume under Delete is deleted), CDI
// (a DataVolume adopts the claim populated for it) and Cozystack (releases deploy).

class SimulatedCrash extends Error {}

function transferredWorld(): FakeAPI {
  const api = new FakeAPI();
  api.put(GVRs.StorageClass, { metadata: { name: 'fast' }, reclaimPolicy: 'Delete' } as KubeObject);
  const vm = api.put(GVRs.VirtualMachine, {
    metadata: { name: 'db', namespace: NS },
    spec: { template: { spec: { domain: { cpu: { cores: 2, sockets: 1 }, memory: { guest: '2Gi' } }, volumes: [{ name: 'vol-0', persistentVolumeClaim: { claimName: 'plan-db-0' } }] } } },
  } as KubeObject);
  const dv = api.put(GVRs.DataVolume, { metadata: { name: 'plan-db-0', namespace: NS, labels: { vmID: 'vm-1' } } } as KubeObject);
  const claim = api.put(GVRs.PersistentVolumeClaim, {
    metadata: {
      name: 'plan-db-0',
      namespace: NS,
      labels: { vmID: 'vm-1' },
      ownerReferences: [
        { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', name: 'db', uid: vm.metadata!.uid! },
        { apiVersion: 'cdi.kubevirt.io/v1beta1', kind: 'DataVolume', name: 'plan-db-0', uid: dv.metadata!.uid!, controller: true },
      ],
    },
    spec: { volumeName: 'pv-1', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '2Gi' } } },
    status: { phase: 'Bound' },
  } as KubeObject);
  api.put(GVRs.PersistentVolume, {
    metadata: { name: 'pv-1', uid: 'pv-uid', annotations: { content: 'the-disk' } },
    spec: { capacity: { storage: '2Gi' }, storageClassName: 'fast', accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Delete', claimRef: { kind: 'PersistentVolumeClaim', name: 'plan-db-0', namespace: NS, uid: claim.metadata!.uid } },
    status: { phase: 'Bound' },
  } as KubeObject);
  return api;
}

/** One move of the rest of the cluster, everything it can do at once. */
function cluster(api: FakeAPI): void {
  for (const pv of [...api.objects.values()].filter((o) => o.metadata?.name?.startsWith('pv-'))) {
    const spec = pv.spec as { claimRef?: { name?: string; uid?: string }; persistentVolumeReclaimPolicy?: string };
    const claim = spec.claimRef?.name ? api.find(GVRs.PersistentVolumeClaim, NS, spec.claimRef.name) : undefined;
    const bound = !!claim && (!spec.claimRef?.uid || claim.metadata?.uid === spec.claimRef.uid);
    pv.status = { phase: bound ? 'Bound' : 'Released' };
    if (!bound && spec.persistentVolumeReclaimPolicy === 'Delete') api.remove(GVRs.PersistentVolume, pv);
    if (bound && claim!.metadata?.annotations?.[ANNOTATION_BIND_REQUESTED] && (claim!.spec as { volumeName?: string }).volumeName === pv.metadata?.name) claim!.status = { phase: 'Bound' };
  }
  for (const dv of [...api.objects.values()].filter((o) => o.metadata?.name?.startsWith('vm-disk-') && api.find(GVRs.DataVolume, NS, o.metadata.name) === o)) {
    const claim = api.find(GVRs.PersistentVolumeClaim, NS, dv.metadata!.name!);
    if (claim?.metadata && claim.metadata.annotations?.[CDI_POPULATED_FOR] === dv.metadata!.name && !(claim.metadata.ownerReferences ?? []).length) {
      claim.metadata.ownerReferences = [{ apiVersion: 'cdi.kubevirt.io/v1beta1', kind: 'DataVolume', name: dv.metadata!.name!, uid: dv.metadata!.uid!, controller: true }];
    }
  }
  for (const gvr of [GVRs.VMDisk, GVRs.VMInstance]) {
    for (const o of api.objects.values()) if (api.find(gvr, NS, o.metadata!.name!) === o) o.status = { conditions: [{ type: 'Ready', status: 'True', reason: 'InstallSucceeded' }] };
  }
}

/** Drives a fresh Handoff per pass (nothing survives in memory) to its verdict; `crashAfter` throws right after that step's write, once. */
async function runToVerdict(api: FakeAPI, crashAfter?: StepName): Promise<{ outcome: HandoffOutcome; steps: StepName[]; crashed: boolean; byCall: StepName[][] }> {
  let status: VMStatus = { id: 'vm-1', name: 'db', phase: 'Creating' };
  const steps: StepName[] = [];
  /** The steps each call of the Handoff took. */
  const byCall: StepName[][] = [];
  let crashed = false;
  handoffHooks.afterStep = (step) => {
    steps.push(step);
    byCall.at(-1)!.push(step);
    if (step === crashAfter && !crashed) {
      crashed = true;
      throw new SimulatedCrash(step);
    }
  };
  try {
    for (let i = 0; i < 200; i++) {
      const input: HandoffInput = {
        task: TASK,
        spec: SPEC,
        vmName: 'db',
        status,
        className: 'fast',
        forkliftVM: api.find(GVRs.VirtualMachine, NS, 'db'),
        transferClaims: [],
        record: async (disks, vmInstance) => {
          status = { ...status, diskHandoffs: disks, ...(vmInstance ? { vmInstance } : {}) };
        },
      };
      let outcome: HandoffOutcome;
      byCall.push([]);
      try {
        outcome = await new Handoff().reconcile(ctxOf(api), input);
      } catch (e) {
        if (!(e instanceof SimulatedCrash)) throw e;
        cluster(api);
        continue; // the status write of this pass never happened; what `record` wrote stays
      }
      status = { ...status, diskHandoffs: outcome.disks, ...(outcome.vmInstance ? { vmInstance: outcome.vmInstance } : {}) };
      if (outcome.state !== 'progress') return { outcome, steps, crashed, byCall };
      cluster(api);
    }
    throw new Error(`no verdict: ${JSON.stringify(status)}`);
  } finally {
    handoffHooks.afterStep = undefined;
  }
}

function assertHandedOff(api: FakeAPI): void {
  const pv = api.find(GVRs.PersistentVolume, undefined, 'pv-1');
  assert.equal(pv?.metadata?.uid, 'pv-uid', 'the very volume the transfer filled');
  assert.equal((pv!.spec as { persistentVolumeReclaimPolicy?: string }).persistentVolumeReclaimPolicy, 'Delete', 'the class’s policy once everything holds it');
  assert.equal((pv!.status as { phase?: string } | undefined)?.phase, 'Bound');
  const claim = api.find(GVRs.PersistentVolumeClaim, NS, 'vm-disk-db-disk-0');
  assert.equal((pv!.spec as { claimRef?: { uid?: string } }).claimRef?.uid, claim?.metadata?.uid, 'bound to the target claim by UID');
  assert.deepEqual(claim?.metadata?.finalizers ?? [], [], 'the claim left the handoff’s custody');
  assert.ok(api.find(GVRs.DataVolume, NS, 'vm-disk-db-disk-0') && api.find(GVRs.VMDisk, NS, 'db-disk-0') && api.find(GVRs.VMInstance, NS, 'db'), 'every output');
  assert.equal(api.find(GVRs.PersistentVolumeClaim, NS, 'plan-db-0'), undefined, 'the transfer claim is gone');
  assert.equal(api.find(GVRs.VirtualMachine, NS, 'db'), undefined, 'the scaffolding VM is gone');
  assert.ok(!api.deleted.some((d) => d.startsWith('PersistentVolume/')), 'no volume was ever deleted');
}

test('the recipe runs every step in the declared order and ends with the volume handed over, the claims out of custody', async () => {
  const api = transferredWorld();
  const r = await runToVerdict(api);
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  assert.deepEqual(r.steps, HANDOFF_STEPS);
  assertHandedOff(api);
  const creates = api.calls.filter((c) => c.verb === 'create').map((c) => c.kind);
  assert.deepEqual(creates, ['PersistentVolumeClaim', 'DataVolume', 'VMDisk', 'VMInstance'], 'each output made once');
});

test('once every release deployed, the scaffolding VM goes and the claims leave custody in the same call, which ends the VM', async () => {
  const api = transferredWorld();
  const r = await runToVerdict(api);
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  // Every other step is a call of its own (its evidence is recorded before the next is decided).
  assert.deepEqual(r.byCall.filter((c) => c.length), [...HANDOFF_STEPS.slice(0, -2).map((s) => [s]), [Step.DeleteScaffoldingVM, Step.ReleaseClaims]]);
  assert.equal(r.outcome.step, Step.ReleaseClaims);
  assertHandedOff(api);
});

test('a scaffolding VM its finalizer holds after the delete is going, which is enough: the claims leave custody in the same call', async () => {
  const api = transferredWorld();
  // KubeVirt's finalizer on its VirtualMachines (kubevirt/kubevirt@v1.8.4
  // staging/src/kubevirt.io/api/core/v1/types.go, VirtualMachineControllerFinalizer) keeps a deleted VM
  // readable, with a deletionTimestamp, until its controller has let it go.
  const vm = api.find(GVRs.VirtualMachine, NS, 'db')!;
  vm.metadata!.finalizers = ['kubevirt.io/virtualMachineControllerFinalize'];
  const r = await runToVerdict(api);
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  assert.deepEqual(r.byCall.filter((c) => c.length).at(-1), [Step.DeleteScaffoldingVM, Step.ReleaseClaims], 'a VM being deleted is enough: the release follows in the same call');
  assert.ok(api.find(GVRs.VirtualMachine, NS, 'db')?.metadata?.deletionTimestamp, 'the scaffolding VM is going');
});

for (const step of HANDOFF_STEPS) {
  test(`a crash right after ${step} (its status write lost) loses and duplicates nothing`, async () => {
    const api = transferredWorld();
    const r = await runToVerdict(api, step);
    assert.ok(r.crashed, `the kill point ${step} was reached`);
    assert.equal(r.outcome.state, 'done', r.outcome.message);
    assertHandedOff(api);
    const creates = api.calls.filter((c) => c.verb === 'create').map((c) => c.kind);
    assert.deepEqual([...new Set(creates)], ['PersistentVolumeClaim', 'DataVolume', 'VMDisk', 'VMInstance']);
  });
}
