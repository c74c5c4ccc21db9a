// The transfer budget in the task reconciler (admission.ts): the VMs it counts from the tasks' statuses and
// Migrations, its passes over a cache of tasks of two tenants, and a new leader that rebuilds the budget
// from the checkpoints an old one recorded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { VMImportTask, VMStatus } from '../../api/types.ts';
import { migrationName, planName } from '../../forklift/names.ts';
import { GVRs, type GVR } from '../../runtime/gvr.ts';
import type { KubeObject } from '../../runtime/kube.ts';
import type { Cache, ReconcileContext } from '../../runtime/reconciler.ts';
import { TransferAdmission, campaignVMs, freesSlots, placementOf, queuedOnSameHost, type AdmissionIO } from './admission.ts';
import { admissionHooks } from './admission-hooks.ts';

const VC = '4c4c4544-0000-4000-8000-00000000beef';
const T0 = Date.parse('2026-01-01T00:00:00Z');
const G = 1024 ** 3;

type Task = VMImportTask & KubeObject;

function mkTask(ns: string, name: string, n: number, created = T0): Task {
  const uid = `uid-${ns}-${name}`;
  return {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { namespace: ns, name, uid, creationTimestamp: new Date(created).toISOString() },
    spec: { sourceRef: { name: 'vc' }, vms: Array.from({ length: n }, (_, i) => ({ id: `vm-${ns}-${i}` })) },
    status: { vms: Array.from({ length: n }, (_, i) => ({ id: `vm-${ns}-${i}`, name: `vm-${ns}-${i}`, phase: 'Validating' as const, plan: planName(name, uid, `vm-${ns}-${i}`) })) },
  } as unknown as Task;
}

class MapCache implements Cache {
  readonly objs = new Map<string, KubeObject>();
  get(namespace: string | undefined, name: string): KubeObject | undefined {
    return this.objs.get(`${namespace ?? ''}/${name}`);
  }
  list(namespace?: string): KubeObject[] {
    return [...this.objs.values()].filter((o) => !namespace || o.metadata?.namespace === namespace);
  }
  hasSynced(): boolean {
    return true;
  }
  put(o: KubeObject): void {
    this.objs.set(`${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`, structuredClone(o));
  }
}

function world(): { ctx: ReconcileContext; tasks: MapCache; plans: MapCache; migrations: MapCache } {
  const tasks = new MapCache();
  const plans = new MapCache();
  const migrations = new MapCache();
  const caches = new Map<GVR, MapCache>([
    [GVRs.VMImportTask, tasks],
    [GVRs.Plan, plans],
    [GVRs.Migration, migrations],
  ]);
  const ctx = { cache: (g: GVR) => caches.get(g), now: () => new Date(T0 + 60_000), log: pino({ level: 'silent' }) } as unknown as ReconcileContext;
  return { ctx, tasks, plans, migrations };
}

const readyPlans = (plans: MapCache, t: Task): void => {
  for (const v of t.status!.vms!) plans.put({ metadata: { namespace: t.metadata.namespace, name: v.plan }, status: { conditions: [{ type: 'Ready', status: 'True', category: 'Required' }] } } as KubeObject);
};

const inventory: AdmissionIO['inventory'] = {
  getVM: (_uid, id) => Promise.resolve({ id, host: 'host-7', disks: [{ capacity: 8 * G }] }),
  listHosts: () => Promise.resolve([{ id: 'host-7', name: 'esx07.example.internal' }]),
  listNetworks: () => Promise.resolve([]),
  get: <T>() => Promise.resolve({ instanceUuid: VC.toUpperCase() } as T),
};
const source = { status: { provider: { uid: 'provider-1' } } } as never;

/** One reconciler pass's admission for a task: what it records lands in the task cache, as the API server's would. */
async function pass(adm: TransferAdmission, w: ReturnType<typeof world>, t: Task): Promise<{ vms: VMStatus[]; slots: Map<string, unknown>; recorded: VMStatus[][] }> {
  const recorded: VMStatus[][] = [];
  const r = await adm.pass(w.ctx, t, t.status!.vms!, source, {
    inventory,
    record: (vms) => {
      recorded.push(structuredClone(vms));
      t.status = { ...t.status, vms };
      w.tasks.put(t);
      return Promise.resolve();
    },
  });
  t.status = { ...t.status, vms: r.vms.map((v) => (r.slots.get(v.id) && !(r.slots.get(v.id) as { admitted: boolean }).admitted ? { ...v, phase: 'Queued' as const } : v)) };
  w.tasks.put(t);
  return { ...r, recorded };
}

const admitted = (vms: readonly VMStatus[]): string[] => vms.filter((v) => v.transferSlot?.admittedAt).map((v) => v.id);

test('a VM’s place is its host by inventory id and its disks’ sizes, on the vCenter named by its instance UUID', () => {
  assert.deepEqual(placementOf({ id: 'vm-1', host: { id: 'host-3' }, disks: [{ capacity: G }, { capacity: 2 * G }] }, VC, [{ id: 'host-3', name: 'esx03' }]), { vcenter: VC, host: 'host-3', hostName: 'esx03', disks: 2, diskBytes: [G, 2 * G] });
});

test('two tenants’ tasks share one host’s budget: the first takes what fits, the second waits Queued with its host and the disks ahead, never the other tenant’s names', async () => {
  const w = world();
  const adm = new TransferAdmission({ enabled: true, maxDisksPerHost: 2 });
  const a = mkTask('tenant-a', 'big', 5);
  const b = mkTask('tenant-b', 'small', 1, T0 + 1000);
  for (const t of [a, b]) {
    readyPlans(w.plans, t);
    w.tasks.put(t);
  }
  const ra = await pass(adm, w, a);
  assert.deepEqual(admitted(ra.vms), ['vm-tenant-a-0', 'vm-tenant-a-1']);
  assert.equal(ra.recorded.length, 1, 'one status write records the places and checkpoints');
  assert.deepEqual(admitted(ra.recorded[0]!), ['vm-tenant-a-0', 'vm-tenant-a-1'], 'the checkpoint is in the written status');
  assert.equal(ra.vms[0]!.transferSlot?.vcenter, VC, 'the vCenter by its instance UUID');
  const rb = await pass(adm, w, b);
  assert.deepEqual(admitted(rb.vms), []);
  const q = rb.slots.get('vm-tenant-b-0') as { admitted: false; message: string };
  assert.equal(q.admitted, false);
  assert.equal(q.message, 'Waiting for 1 disk of transfer slots on ESXi host esx07.example.internal, which transfers 2 disks of its budget of 2: 0 disks ahead of it in this namespace, 0 disks in total.');
  assert.doesNotMatch(q.message, /tenant-a|big|vm-tenant-a/);
  // Tenant A's third VM waits behind the small tenant's one.
  const again = await pass(adm, w, a);
  assert.match((again.slots.get('vm-tenant-a-2') as { message: string }).message, /0 disks ahead of it in this namespace, 1 disk in total/);
});

test('a slot freed by a copied VM goes to the other tenant’s 1-VM task before the big task’s next VM', async () => {
  const w = world();
  const adm = new TransferAdmission({ enabled: true, maxDisksPerHost: 2 });
  const a = mkTask('tenant-a', 'big', 10);
  const b = mkTask('tenant-b', 'small', 1, T0 + 1000);
  for (const t of [a, b]) {
    readyPlans(w.plans, t);
    w.tasks.put(t);
  }
  await pass(adm, w, a);
  await pass(adm, w, b);
  // A's first VM is copied: its slot is free.
  a.status!.vms![0] = { ...a.status!.vms![0]!, phase: 'Creating', timestamps: { started: '2026-01-01T00:00:30Z', transferred: '2026-01-01T00:01:00Z' } };
  w.tasks.put(a);
  const ra = await pass(adm, w, a);
  assert.deepEqual(admitted(ra.vms), ['vm-tenant-a-0', 'vm-tenant-a-1'], 'the big task takes nothing more');
  const rb = await pass(adm, w, b);
  assert.deepEqual(admitted(rb.vms), ['vm-tenant-b-0']);
});

test('a Queued VM admitted to a freed slot no longer reads as waiting in the checkpoint that records it, before its Migration exists', async () => {
  const w = world();
  const adm = new TransferAdmission({ enabled: true, maxDisksPerHost: 1 });
  const a = mkTask('tenant-a', 'big', 2);
  readyPlans(w.plans, a);
  w.tasks.put(a);
  const first = await pass(adm, w, a);
  const waiting = first.slots.get('vm-tenant-a-1') as { admitted: false; message: string };
  a.status!.vms![1] = { ...a.status!.vms![1]!, reason: 'Queued', message: waiting.message };
  assert.match(a.status!.vms![1]!.message ?? '', / ahead of it /);
  // The first VM is copied: its slot is free for the second.
  a.status!.vms![0] = { ...a.status!.vms![0]!, phase: 'Creating', timestamps: { started: '2026-01-01T00:00:30Z', transferred: '2026-01-01T00:01:00Z' } };
  w.tasks.put(a);
  const next = await pass(adm, w, a);
  const recorded = next.recorded[0]!.find((v) => v.id === 'vm-tenant-a-1')!;
  assert.ok(recorded.transferSlot?.admittedAt, 'the checkpoint is recorded');
  assert.equal(recorded.phase, 'Queued', 'its phase turns when the Migration exists');
  assert.equal(recorded.message, 'Admitted to a transfer slot on ESXi host esx07.example.internal; its Forklift Migration is created next');
});

test('a new leader rebuilds the budget from the checkpoints an old one recorded, Migrations made or not, and admits nothing past it', async () => {
  const w = world();
  const a = mkTask('tenant-a', 'big', 4);
  const b = mkTask('tenant-b', 'small', 3, T0 + 1000);
  for (const t of [a, b]) {
    readyPlans(w.plans, t);
    w.tasks.put(t);
  }
  await pass(new TransferAdmission({ enabled: true, maxDisksPerHost: 3 }), w, a);
  assert.deepEqual(admitted(a.status!.vms!), ['vm-tenant-a-0', 'vm-tenant-a-1', 'vm-tenant-a-2']);
  // The old leader died after the checkpoint: one Migration made, two not.
  w.migrations.put({ metadata: { namespace: 'tenant-a', name: migrationName('big', a.metadata.uid!, 'vm-tenant-a-0') }, status: { vms: [{ id: 'vm-tenant-a-0', phase: 'CopyDisks' }] } } as KubeObject);
  const fresh = new TransferAdmission({ enabled: true, maxDisksPerHost: 3 });
  const rb = await pass(fresh, w, b);
  assert.deepEqual(admitted(rb.vms), []);
  const ra = await pass(fresh, w, a);
  assert.deepEqual(admitted(ra.vms), ['vm-tenant-a-0', 'vm-tenant-a-1', 'vm-tenant-a-2']);
  for (const id of ['vm-tenant-a-1', 'vm-tenant-a-2']) assert.deepEqual(ra.slots.get(id), { admitted: true }, 'its Migration is made now: the slot is its own');
  assert.equal((ra.slots.get('vm-tenant-a-3') as { admitted: boolean }).admitted, false);
});

test('the checkpoint is written before the kill point after it, and with the budget off nothing is recorded and every VM goes on', async () => {
  const w = world();
  const a = mkTask('tenant-a', 'big', 2);
  readyPlans(w.plans, a);
  w.tasks.put(a);
  const seen: string[][] = [];
  admissionHooks.afterRecord = (_uid, ids) => seen.push([...ids, ...admitted(w.tasks.get('tenant-a', 'big') ? ((w.tasks.get('tenant-a', 'big') as Task).status?.vms ?? []) : [])]);
  try {
    await pass(new TransferAdmission({ enabled: true, maxDisksPerHost: 1 }), w, a);
  } finally {
    delete admissionHooks.afterRecord;
  }
  assert.deepEqual(seen, [['vm-tenant-a-0', 'vm-tenant-a-0']], 'at the kill point the task’s stored status already holds the checkpoint');
  const off = world();
  const b = mkTask('tenant-b', 'small', 2);
  readyPlans(off.plans, b);
  const r = await pass(new TransferAdmission({ enabled: false, maxDisksPerHost: 1 }), off, b);
  assert.equal(r.slots.size, 0);
  assert.deepEqual(r.recorded, []);
});

test('a deleted task’s VMs that never started hold nothing; one whose copy is done holds nothing; one with a Migration holds its untransferred disks', () => {
  const t = mkTask('tenant-a', 'x', 3);
  const slot = { vcenter: VC, host: 'host-7', disks: 2, diskBytes: [G, G], admittedAt: '2026-01-01T00:00:00Z' };
  const vms: VMStatus[] = [
    { id: 'vm-tenant-a-0', name: 'a', phase: 'Transferring', transferSlot: slot, timestamps: { started: '2026-01-01T00:00:00Z' } },
    { id: 'vm-tenant-a-1', name: 'b', phase: 'Queued', transferSlot: { ...slot, admittedAt: undefined } },
    { id: 'vm-tenant-a-2', name: 'c', phase: 'Creating', transferSlot: slot, timestamps: { started: '2026-01-01T00:00:00Z', transferred: '2026-01-01T00:10:00Z' } },
  ];
  const mig = { status: { vms: [{ id: 'vm-tenant-a-0', phase: 'CopyDisks', pipeline: [{ name: 'DiskTransfer', tasks: [{ phase: 'Completed', progress: { total: 1024, completed: 1024 } }, { phase: 'Running', progress: { total: 1024, completed: 512 } }] }] }] } } as KubeObject;
  const out = campaignVMs(t, vms, VC, (id) => (id === 'vm-tenant-a-0' ? mig : undefined), () => true);
  assert.deepEqual(out.map((v) => [v.id, v.migration, v.finished, v.disksRemaining ?? v.disks, v.ready]), [
    ['vm-tenant-a-0', true, false, 1, false],
    ['vm-tenant-a-1', false, false, 2, true],
    ['vm-tenant-a-2', true, true, 2, false],
  ]);
  const deleted = campaignVMs({ ...t, metadata: { ...t.metadata, deletionTimestamp: '2026-01-01T01:00:00Z' } } as Task, vms, VC, () => mig, () => true);
  assert.deepEqual(deleted.map((v) => v.finished), [false, true, true]);
  assert.deepEqual(campaignVMs(t, vms, 'another-vcenter', () => undefined, () => true), []);
});

test('a Migration that freed slots wakes the tasks Queued on its host, and progress alone wakes nobody', () => {
  const slot = { vcenter: VC, host: 'host-7', disks: 1 };
  const own = { ...mkTask('tenant-a', 'big', 1), status: { vms: [{ id: 'vm-1', name: 'a', phase: 'Transferring', transferSlot: slot }] } } as unknown as Task;
  const waiting = { ...mkTask('tenant-b', 'small', 1), status: { vms: [{ id: 'vm-2', name: 'b', phase: 'Queued', transferSlot: slot }] } } as unknown as Task;
  const elsewhere = { ...mkTask('tenant-c', 'other', 1), status: { vms: [{ id: 'vm-3', name: 'c', phase: 'Queued', transferSlot: { ...slot, host: 'host-8' } }] } } as unknown as Task;
  const mig = (phase: string): KubeObject => ({ metadata: { namespace: 'tenant-a', labels: { task: 'big' } }, status: { vms: [{ id: 'vm-1', phase, pipeline: [{ name: 'DiskTransfer', tasks: [{ phase: 'Running', progress: { total: 10, completed: 5 } }] }] }] } }) as KubeObject;
  assert.equal(freesSlots(mig('CopyDisks')), false);
  assert.deepEqual(queuedOnSameHost(mig('CopyDisks'), [own, waiting, elsewhere], 'task'), []);
  assert.deepEqual(queuedOnSameHost(mig('CreateVM'), [own, waiting, elsewhere], 'task'), [{ namespace: 'tenant-b', name: 'small' }]);
});

test('with the budget on, a VM this pass did not admit gets no Migration even if its Plan turns ready right after: it waits for the next pass', async () => {
  const w = world();
  const a = mkTask('tenant-a', 'big', 2);
  // Only the first VM's Plan is ready when the admission pass looks.
  w.plans.put({ metadata: { namespace: 'tenant-a', name: a.status!.vms![0]!.plan }, status: { conditions: [{ type: 'Ready', status: 'True', category: 'Required' }] } } as KubeObject);
  w.tasks.put(a);
  const r = await pass(new TransferAdmission({ enabled: true, maxDisksPerHost: 5 }), w, a);
  assert.deepEqual(r.slots.get('vm-tenant-a-0'), { admitted: true });
  assert.equal((r.slots.get('vm-tenant-a-1') as { admitted: boolean } | undefined)?.admitted, false);
});

test('nothing the budget keeps outlives a source: the vCenter identity is read from the inventory by each pass that places VMs, and a task’s ETA goes with it', async () => {
  const w = world();
  const adm = new TransferAdmission({ enabled: true, maxDisksPerHost: 2 });
  let identityReads = 0;
  const counting: AdmissionIO['inventory'] = { ...inventory, get: <T>(path: string) => ((identityReads += 1), inventory.get!<T>(path)) };
  for (const name of ['one', 'two']) {
    const t = mkTask('tenant-a', name, 1);
    readyPlans(w.plans, t);
    w.tasks.put(t);
    const r = await adm.pass(w.ctx, t, t.status!.vms!, source, { inventory: counting, record: () => Promise.resolve() });
    assert.equal(r.vms[0]!.transferSlot?.vcenter, VC);
    adm.forget(t.metadata.uid);
  }
  assert.equal(identityReads, 2, 'one identity read per placing pass, none remembered');
  assert.deepEqual(adm.sizes(), { budgetETAs: 0 });
});
