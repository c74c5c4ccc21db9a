// The Handoff object against an in-memory API (every read live: no caches): the order of its writes
// around a create (the checkpoint recorded first, put back when the create fails), and what a VM whose
// output was deleted leaves behind (its volume on Retain, the claim out of custody, the scaffolding VM
// gone so the VM can be imported again). The whole recipe against the real API server, the PV binder and
// the simulated CDI is test/e2e/handoff-checkpoints.test.ts and handoff-output-deleted.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { CDI_POPULATED_FOR, CLAIM_FINALIZER, LABEL_TASK_UID, LABEL_VM_ID } from '../../api/labels.ts';
import { TaskReason } from '../../api/conditions.ts';
import type { DiskStatus, TaskVM, VMImportTask } from '../../api/types.ts';
import { markerLabels, renderHandoffDataVolume, renderTargetClaim, volumeFacts } from '../../cozystack/render.ts';
import { GVRs, type GVR } from '../../runtime/gvr.ts';
import { ApiError, type KubeClient, type KubeObject } from '../../runtime/kube.ts';
import type { ReconcileContext } from '../../runtime/reconciler.ts';
import { Handoff, type HandoffInput } from './index.ts';
import { Step } from './steps.ts';

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
        const { resourceVersion, ...meta } = body.metadata ?? {};
        if (resourceVersion && resourceVersion !== cur.metadata?.resourceVersion) throw new ApiError(409, 'Conflict', 'the object has been modified');
        const next = { ...cur, metadata: { ...cur.metadata, ...meta } as KubeObject['metadata'], ...(body.spec ? { spec: { ...(cur.spec as object), ...body.spec } } : {}) };
        return self.put(gvr, next);
      },
      delete: async (gvr: GVR, ns: string | undefined, name: string, o: { uid?: string } = {}) => {
        self.calls.push({ verb: 'delete', kind: gvr.kind, name });
        const cur = self.find(gvr, ns, name);
        if (!cur) return false;
        if (o.uid && o.uid !== cur.metadata?.uid) throw new ApiError(409, 'Conflict', 'uid precondition');
        self.objects.delete(self.key(gvr, ns, name));
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
  const status = { id: 'vm-1', name: 'db', phase: 'Creating' as const, disks: [{ index: 0, vmDisk: 'db-disk-0', volumeName: 'pv-1', transferClaim: 'plan-db-0', handoff: Step.CreateDataVolume }] };
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
  return { client: api.client(), cache: () => undefined, installed: () => true, log: pino({ level: 'silent' }), events: { event() {} } as unknown as ReconcileContext['events'], now: () => new Date('2026-12-03T12:00:00Z') };
}

test('the VMDisk’s checkpoint is in the task’s status before the VMDisk is created', async () => {
  const { api, input } = worldBeforeVMDisk();
  const out = await new Handoff().reconcile(ctxOf(api), input());
  assert.equal(out.step, Step.CreateVMDisk, out.message);
  const order = api.calls.filter((c) => c.verb === 'record' || (c.verb === 'create' && c.kind === 'VMDisk')).map((c) => `${c.verb} ${c.name}`);
  assert.deepEqual(order, [`record ${Step.CreateVMDisk}`, 'create db-disk-0']);
  assert.equal(out.disks[0]!.handoff, Step.CreateVMDisk);
});

test('a create that answers an error puts the checkpoint back, so that the next pass makes the output instead of calling it deleted', async () => {
  const { api, input, recorded } = worldBeforeVMDisk();
  api.failCreate = { kind: 'VMDisk', error: new ApiError(503, 'ServiceUnavailable', 'the aggregated API is unavailable') };
  await assert.rejects(new Handoff().reconcile(ctxOf(api), input()), /unavailable/);
  assert.deepEqual(recorded.map((d) => d[0]!.handoff), [Step.CreateVMDisk, Step.CreateDataVolume]);
});

test('a VMDisk deleted after its create was recorded fails the VM with OutputDeleted; the volume stays Retain in the task’s custody, the claim leaves the handoff’s finalizer and the scaffolding VM goes', async () => {
  const { api, input } = worldBeforeVMDisk();
  const recordedStatus = { ...input().status, disks: [{ ...input().status.disks![0]!, handoff: Step.CreateVMDisk }] };
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
  assert.deepEqual(api.find(GVRs.PersistentVolumeClaim, NS, 'vm-disk-db-disk-0')!.metadata!.finalizers, [], 'the claim may go: its volume is Retain');
  assert.equal(api.find(GVRs.VirtualMachine, NS, 'db'), undefined, 'the scaffolding VM is gone: the VM can be imported again');
  assert.ok(!api.calls.some((c) => c.verb === 'create'), 'nothing is re-created');
});

test('a settled volume whose claim is being deleted goes back on Retain before the claim leaves custody', async () => {
  const { api, input } = worldBeforeVMDisk();
  api.put(GVRs.VMDisk, { apiVersion: 'apps.cozystack.io/v1alpha1', kind: 'VMDisk', metadata: { name: 'db-disk-0', namespace: NS, labels: markerLabels(MARKERS, 0) } } as KubeObject);
  const pv = api.find(GVRs.PersistentVolume, undefined, 'pv-1')!;
  (pv.spec as Record<string, unknown>).persistentVolumeReclaimPolicy = 'Delete';
  pv.metadata!.annotations = { 'forklift.cozystack.io/handoff': 'settled' };
  api.find(GVRs.PersistentVolumeClaim, NS, 'vm-disk-db-disk-0')!.metadata!.deletionTimestamp = '2026-12-03T11:59:59Z';
  const status = { ...input().status, disks: [{ ...input().status.disks![0]!, handoff: 'done' }] };
  const out = await new Handoff().reconcile(ctxOf(api), input({ status }));
  assert.equal(out.reason, TaskReason.OutputDeleted, out.message);
  const writes = api.calls.filter((c) => c.verb === 'patch').map((c) => `${c.kind} ${c.name}`);
  assert.deepEqual(writes.slice(0, 2), ['PersistentVolume pv-1', 'PersistentVolumeClaim vm-disk-db-disk-0'], 'Retain first, then the finalizer goes');
  assert.equal((api.find(GVRs.PersistentVolume, undefined, 'pv-1')!.spec as { persistentVolumeReclaimPolicy?: string }).persistentVolumeReclaimPolicy, 'Retain');
  assert.equal(api.find(GVRs.VMDisk, NS, 'db-disk-0'), undefined, 'a VMDisk of ours over a claim gone would get an empty DataVolume from its chart: it goes');
  void LABEL_TASK_UID;
  void LABEL_VM_ID;
});
