// VMImportTask end to end on the real API server with the simulated vCenter/Forklift/CDI/Cozystack:
// the happy path to Ready=True, a failing VM beside a succeeding sibling, and deletion mid-transfer.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask, VMImportTaskSpec } from '../../src/api/types.ts';
import { freshNamespace, kubectl, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-task.example.com/sdk';
const GiB = 2 ** 30;
const world = vcenter({
  url: URL_VC,
  hosts: [
    { id: 'host-1', address: '192.0.2.10' },
    // reachable: false — the address vCenter advertises is outside the Service CIDR but unroutable.
    { id: 'host-2', address: '192.0.2.20', reachable: false },
  ],
  datastores: ['ds-fast', 'ds-slow'],
  networks: ['VM Network', 'backup'],
  vms: [
    { id: 'vm-1', name: 'web01', disks: [{ capacityGiB: 16 }] },
    { id: 'vm-2', name: 'DB 01', firmware: 'efi', disks: [{ capacityGiB: 8 }, { capacityGiB: 4, datastore: 'ds-slow' }, { capacityGiB: 2 }] },
    { id: 'vm-3', name: 'lost01', host: 'host-2', disks: [{ capacityGiB: 4 }] },
    // 4 TiB at 16 GiB/s ≈ 4 min: a transfer that is certainly still running when the test deletes its task.
    { id: 'vm-4', name: 'huge01', disks: [{ capacityGiB: 4096 }] },
    { id: 'vm-5', name: 'other01', disks: [{ capacityGiB: 4096 }] },
    { id: 'vm-6', name: 'twonic01', disks: [{ capacityGiB: 2 }], nics: [{ network: 'backup', mac: '00:50:56:aa:00:01' }, { network: 'VM Network', mac: '00:50:56:aa:00:02' }] },
  ],
});

let booted: BootedWorld;
let ctl: BootedWorld['ctl'];
let c: KubeClient;

before(async () => {
  booted = await bootWorld({
    worlds: [world],
    storageClasses: [{ name: 'task-fast', reclaimPolicy: 'Delete' }],
    sim: { timings: { unreachableFailMs: 1500 } },
  });
  ({ ctl, c } = booted);
});

after(async () => {
  await booted?.shutdown();
});

async function readySource(ns: string): Promise<void> {
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
}

async function createTask(ns: string, name: string, spec: Partial<VMImportTaskSpec> & { vms: VMImportTaskSpec['vms'] }): Promise<VMImportTask> {
  return (await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name, namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'task-fast', ...spec } } as KubeObject)) as unknown as VMImportTask;
}

async function getTask(ns: string, name: string): Promise<VMImportTask | undefined> {
  return (await c.get(GVRs.VMImportTask, ns, name)) as unknown as VMImportTask | undefined;
}

const cond = (t: VMImportTask | undefined, type: string) => t?.status?.conditions?.find((x) => x.type === type);

async function forkliftObjects(ns: string): Promise<string[]> {
  const out: string[] = [];
  for (const gvr of [GVRs.NetworkMap, GVRs.StorageMap, GVRs.Plan, GVRs.Migration, GVRs.DataVolume, GVRs.PersistentVolumeClaim, GVRs.VirtualMachine]) {
    for (const o of (await c.list(gvr, ns)).items) out.push(`${gvr.kind}/${o.metadata?.name}`);
  }
  return out;
}

test('two VMs, one with three disks, are imported to Ready=True with per-VM progress, timestamps and downtime', async () => {
  const ns = await freshNamespace('task-ok');
  await readySource(ns);
  await createTask(ns, 'import', { vms: [{ id: 'vm-1', name: 'web-01' }, { id: 'vm-2' }] });

  const wait = await kubectl(['wait', '--for=condition=Ready', '-n', ns, 'vmimporttask/import', '--timeout=120s'], { timeoutMs: 130_000 });
  const t = (await getTask(ns, 'import'))!;
  assert.equal(wait.code, 0, `kubectl wait failed: ${wait.stderr} — status: ${JSON.stringify(t.status, null, 1)}`);
  assert.equal(t.status?.phase, 'Succeeded');
  assert.equal(t.status?.storageClass, 'task-fast');
  assert.equal(cond(t, 'Validated')?.status, 'True');
  assert.equal(cond(t, 'Transferred')?.status, 'True');
  assert.equal(cond(t, 'Ready')?.observedGeneration, t.metadata.generation);
  assert.ok(t.status?.startedAt && t.status?.completedAt);
  assert.equal(t.status?.progress, 100);

  const [a, b] = [t.status!.vms!.find((v) => v.id === 'vm-1')!, t.status!.vms!.find((v) => v.id === 'vm-2')!];
  assert.equal(a.name, 'web-01');
  // the default name is the source name sanitised to a DNS-1035 label
  assert.equal(b.name, 'db-01');
  for (const v of [a, b]) {
    assert.equal(v.phase, 'Succeeded', JSON.stringify(v));
    assert.equal(v.vmInstance, v.name);
    assert.equal(v.progress, 100);
    assert.ok(v.bytesTotal && v.bytesTotal > 0);
    assert.equal(v.bytesDone, v.bytesTotal);
    const ts = v.timestamps!;
    assert.ok(ts.started && ts.sourcePoweredOff && ts.transferred && ts.completed, JSON.stringify(ts));
    assert.ok(Date.parse(ts.started!) <= Date.parse(ts.sourcePoweredOff!));
    assert.ok(Date.parse(ts.sourcePoweredOff!) <= Date.parse(ts.transferred!));
    assert.ok(Date.parse(ts.transferred!) <= Date.parse(ts.completed!));
    assert.equal(typeof v.downtimeSeconds, 'number');
  }
  assert.equal(b.bytesTotal, 14 * GiB);
  assert.deepEqual(b.diskHandoffs?.map((d) => [d.vmDisk, d.handoff]), [['db-01-disk-0', 'done'], ['db-01-disk-1', 'done'], ['db-01-disk-2', 'done']]);
  // the outputs exist, named as the status says
  assert.ok(await c.get(GVRs.VMInstance, ns, 'web-01'));
  assert.ok(await c.get(GVRs.VMInstance, ns, 'db-01'));
  // What Cozystack's console reads as the VM's disks (links to /console/vmdisks/<name>): the names of
  // the VMDisks that exist, in source order, as the tenant reads them with kubectl.
  const listed = await kubectl(['get', 'vmimporttask', 'import', '-n', ns, '-o', 'jsonpath={.status.vms[1].disks}']);
  assert.equal(listed.code, 0, listed.stderr);
  assert.deepEqual(JSON.parse(listed.stdout), ['db-01-disk-0', 'db-01-disk-1', 'db-01-disk-2']);
  assert.deepEqual(a.disks, ['web-01-disk-0']);
  for (const name of [...a.disks!, ...b.disks!]) assert.ok(await c.get(GVRs.VMDisk, ns, name), `VMDisk ${name} listed in status.vms[].disks exists`);

  // Events for the tenant
  const events = (await c.list(GVRs.Event, ns)).items as Array<KubeObject & { reason?: string; involvedObject?: { name?: string } }>;
  assert.equal(events.filter((e) => e.reason === 'Imported' && e.involvedObject?.name === 'import').length, 2);

  // A terminal task is a record: nothing more is written to it. Poke it (an update wakes the controller),
  // wait until the controller has reconciled it again, and check that it wrote nothing.
  const reconciles = async (): Promise<number> => {
    const text = await (await fetch(ctl.metricsURL)).text();
    const m = /^migration_controller_reconcile_total\{controller="vmimporttask",result="success"\} (\d+)/m.exec(text);
    return m ? Number(m[1]) : 0;
  };
  const idle = async (): Promise<boolean> => /^migration_controller_workqueue_depth\{name="vmimporttask"\} 0$/m.test(await (await fetch(ctl.metricsURL)).text());
  const before = await reconciles();
  const poked = await c.patch<VMImportTask & KubeObject>(GVRs.VMImportTask, ns, 'import', { metadata: { annotations: { 'e2e.test/poke': '1' } } });
  await waitFor('the controller to reconcile the finished task again', async () => (await reconciles()) > before && (await idle()));
  assert.equal((await getTask(ns, 'import'))!.metadata.resourceVersion, poked.metadata.resourceVersion, 'the controller wrote to a finished task');

  // Deleting the finished task removes its scaffolding only: the imported VMs and disks stay, and so do
  // their claims and volumes (same objects, still Bound to each other).
  type Claim = KubeObject & { spec?: { volumeName?: string }; status?: { phase?: string } };
  const volumesBefore = new Map<string, { claimUID: string; pv: string; pvUID: string }>();
  for (const name of b.disks!) {
    const claim = (await c.get<Claim>(GVRs.PersistentVolumeClaim, ns, `vm-disk-${name}`))!;
    const pv = (await c.get(GVRs.PersistentVolume, undefined, claim.spec!.volumeName!))!;
    volumesBefore.set(name, { claimUID: claim.metadata!.uid!, pv: pv.metadata!.name!, pvUID: pv.metadata!.uid! });
  }
  // A sentinel owned by the task tells when the garbage collector has processed the task's deletion.
  const task = (await getTask(ns, 'import'))!;
  await c.create(GVRs.ConfigMap, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'gc-sentinel', namespace: ns, ownerReferences: [{ apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', name: 'import', uid: task.metadata.uid! }] } });
  await c.delete(GVRs.VMImportTask, ns, 'import');
  await waitFor('the finished task to be gone', async () => !(await getTask(ns, 'import')), { timeoutMs: 30_000 });
  await waitFor("the garbage collector to process the task's dependents", async () => !(await c.get(GVRs.ConfigMap, ns, 'gc-sentinel')), { timeoutMs: 60_000 });
  for (const [disk, was] of volumesBefore) {
    const claim = await c.get<Claim>(GVRs.PersistentVolumeClaim, ns, `vm-disk-${disk}`);
    const pv = await c.get<KubeObject & { status?: { phase?: string } }>(GVRs.PersistentVolume, undefined, was.pv);
    assert.equal(claim?.metadata?.uid, was.claimUID, `the claim of ${disk} was replaced or removed with the task`);
    assert.equal(claim?.status?.phase, 'Bound');
    assert.equal(pv?.metadata?.uid, was.pvUID, `the volume of ${disk} was replaced or removed with the task`);
    assert.equal(pv?.status?.phase, 'Bound');
  }
  const scaffolding = (await forkliftObjects(ns)).filter((x) => /^(NetworkMap|StorageMap|Plan|Migration)\//.test(x));
  assert.deepEqual(scaffolding, []);
  for (const n of ['web-01', 'db-01']) assert.ok(await c.get(GVRs.VMInstance, ns, n), `VMInstance ${n} was removed with the task`);
  for (const name of b.disks!) assert.ok(await c.get(GVRs.VMDisk, ns, name), `VMDisk ${name} was removed with the task`);

});

test('a NIC mapped to a Multus attachment reaches the VMInstance as its network; the pod NIC is its default interface', async () => {
  const ns = await freshNamespace('task-nets');
  await readySource(ns);
  await createTask(ns, 'nets', { vms: [{ id: 'vm-6' }], networks: [{ source: 'backup', type: 'multus', name: 'backup-net' }] });
  // Forklift builds its VM from the NetworkMap: look at it before the handoff deletes it.
  const scaffold = await waitFor('Forklift to build the VM', async () => (await c.list(GVRs.VirtualMachine, ns)).items[0], { timeoutMs: 60_000 });
  const tmpl = (scaffold.spec as { template: { spec: { networks: unknown[] } } }).template.spec;
  assert.deepEqual(tmpl.networks, [
    { name: 'net-0', multus: { networkName: `${ns}/backup-net` } },
    { name: 'net-1', pod: {} },
  ]);
  const wait = await kubectl(['wait', '--for=condition=Ready', '-n', ns, 'vmimporttask/nets', '--timeout=90s'], { timeoutMs: 100_000 });
  assert.equal(wait.code, 0, `kubectl wait failed: ${wait.stderr} — status: ${JSON.stringify((await getTask(ns, 'nets'))?.status, null, 1)}`);
  const vmi = (await c.get(GVRs.VMInstance, ns, 'twonic01'))!;
  assert.deepEqual((vmi.spec as { networks?: unknown }).networks, [{ name: 'backup-net' }]);
});

test('a VM whose ESXi host cannot be reached fails with HostUnreachable while its sibling is imported', async () => {
  const ns = await freshNamespace('task-part');
  await readySource(ns);
  await createTask(ns, 'mixed', { vms: [{ id: 'vm-1' }, { id: 'vm-3' }] });
  const t = await waitFor('the task to end', async () => {
    const x = await getTask(ns, 'mixed');
    return x?.status?.completedAt ? x : undefined;
  }, { timeoutMs: 120_000 });
  const ok = t.status!.vms!.find((v) => v.id === 'vm-1')!;
  const bad = t.status!.vms!.find((v) => v.id === 'vm-3')!;
  assert.equal(ok.phase, 'Succeeded', JSON.stringify(ok));
  assert.equal(bad.phase, 'Failed');
  assert.equal(bad.reason, 'HostUnreachable');
  assert.match(bad.message!, /host-2 at 192\.0\.2\.20/);
  assert.match(bad.message!, /spec\.hosts\[\]/);
  assert.match(bad.message!, /nbd_connect_uri: the server has no export named ''/);
  assert.equal(t.status?.phase, 'Failed');
  const ready = cond(t, 'Ready')!;
  assert.equal(ready.status, 'False');
  assert.equal(ready.reason, 'PartiallyFailed');
  assert.match(ready.message, /lost01.*HostUnreachable/);
  const events = (await c.list(GVRs.Event, ns)).items as Array<KubeObject & { reason?: string; message?: string }>;
  assert.ok(events.some((e) => e.reason === 'ImportFailed' && /vm-3/.test(e.message ?? '')));
});

test('deleting a task mid-transfer leaves no Forklift object, DataVolume or transfer claim, and touches nothing of another task', async () => {
  const ns = await freshNamespace('task-del');
  await readySource(ns);
  await createTask(ns, 'doomed', { vms: [{ id: 'vm-4' }] });
  await createTask(ns, 'bystander', { vms: [{ id: 'vm-5' }] });
  for (const name of ['doomed', 'bystander']) {
    await waitFor(`${name} transferring with bytes moving`, async () => {
      const t = await getTask(ns, name);
      const v = t?.status?.vms?.[0];
      return v?.phase === 'Transferring' && (v.bytesDone ?? 0) > 0 ? t : undefined;
    }, { timeoutMs: 60_000 });
  }
  const doomed = (await getTask(ns, 'doomed'))!;
  const bystanderBefore = await forkliftObjects(ns).then((xs) => xs.filter((x) => !x.includes(doomed.status!.vms![0]!.plan!) && !x.includes('doomed')));
  // progress is live: rate and ETA from successive observations
  const live = await waitFor('a rate and an ETA', async () => {
    const v = (await getTask(ns, 'doomed'))?.status?.vms?.[0];
    return v?.bytesPerSecond && v.etaSeconds !== undefined ? v : undefined;
  });
  assert.ok(live.bytesPerSecond! > 0);

  await c.delete(GVRs.VMImportTask, ns, 'doomed');
  await waitFor('the task to be gone', async () => !(await getTask(ns, 'doomed')), { timeoutMs: 60_000 });
  const planName = doomed.status!.vms![0]!.plan!;
  const planUID = doomed.metadata.uid!;
  const left = await waitFor('nothing of the deleted task left', async () => {
    const all = await forkliftObjects(ns);
    const mine = all.filter((x) => x.includes(planName) || x.includes('doomed'));
    return mine.length === 0 ? all : undefined;
  }, { timeoutMs: 30_000 }).catch(async (e) => {
    throw new Error(`${(e as Error).message}: ${(await forkliftObjects(ns)).join(', ')} (task uid ${planUID})`);
  });
  // the other task's objects are all still there, and it keeps transferring
  for (const o of bystanderBefore) if (!o.startsWith('DataVolume/') && !o.startsWith('PersistentVolumeClaim/')) assert.ok(left.includes(o), `${o} of the other task was removed`);
  const other = (await getTask(ns, 'bystander'))!;
  assert.equal(other.status?.vms?.[0]?.phase, 'Transferring');
  const otherClaims = (await c.list(GVRs.PersistentVolumeClaim, ns)).items;
  assert.ok(otherClaims.length >= 1, 'the other task lost its transfer claim');
  await c.delete(GVRs.VMImportTask, ns, 'bystander');
  await waitFor('the other task to be gone too', async () => !(await getTask(ns, 'bystander')), { timeoutMs: 60_000 });
});
