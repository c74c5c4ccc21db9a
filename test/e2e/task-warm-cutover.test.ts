// Warm imports end to end through the controller (real API server + the simulator's Forklift v2.11.5 warm
// pipeline): precopies while the source runs, then the cutover — at a time set in the future, or now by the
// documented `kubectl patch` — and a Ready, Halted VMInstance on the volumes Forklift filled. And the faults
// a warm run meets, each ending as a named failure or a recovered precopy.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CONTENT_ANNOTATION, contentIdentity, vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask, VMImportTaskSpec } from '../../src/api/types.ts';
import { freshNamespace, kubectl, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-warm-cutover.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.42' }],
  vms: [
    { id: 'vm-1', name: 'db01', changeTrackingEnabled: true, changePerInterval: 0.05, disks: [{ capacityGiB: 2 }, { capacityGiB: 1 }] },
    { id: 'vm-2', name: 'db02', changeTrackingEnabled: true, changePerInterval: 0.05, disks: [{ capacityGiB: 2 }, { capacityGiB: 1 }] },
    { id: 'vm-3', name: 'nopriv01', changeTrackingEnabled: true, faults: { snapshotDeniedAt: 2 }, disks: [{ capacityGiB: 1 }] },
    { id: 'vm-4', name: 'flaky01', changeTrackingEnabled: true, changePerInterval: 0.5, faults: { precopyImporterFailures: { precopy: 2, restarts: 1 } }, disks: [{ capacityGiB: 1 }] },
    { id: 'vm-5', name: 'broken01', changeTrackingEnabled: true, changePerInterval: 0.5, faults: { precopyImporterFailures: { precopy: 2, restarts: 4 } }, disks: [{ capacityGiB: 1 }] },
    // Every precopy copies the whole 16 GiB disk (about 8 s here): long enough to set the cutover mid-copy.
    { id: 'vm-6', name: 'midcopy01', changeTrackingEnabled: true, changePerInterval: 1, disks: [{ capacityGiB: 16 }] },
  ],
});

let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'warmc-fast', reclaimPolicy: 'Delete' }], sim: { mbPerSecond: 2048, timings: { precopyIntervalMs: 1500 } } });
  ({ c } = booted);
});

after(async () => {
  await booted?.shutdown();
});

type VMStat = NonNullable<NonNullable<VMImportTask['status']>['vms']>[number];
const seconds = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** A warm task of one VM, created once its source is Connected; `spec` is read at that moment (a cutover
 *  time computed from it is counted from the task's creation, not from a source's connection under load). */
async function warmTask(prefix: string, vm: string, spec: () => Partial<VMImportTaskSpec> = () => ({})): Promise<string> {
  const ns = await freshNamespace(prefix);
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 't', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'warmc-fast', mode: 'warm', vms: [{ id: vm, name: 'app' }], ...spec() } } as KubeObject);
  return ns;
}

async function vmWhen(ns: string, what: string, ok: (v: VMStat) => boolean, timeoutMs = 90_000): Promise<VMStat> {
  let seen: VMStat | undefined;
  try {
    return await waitFor(what, async () => {
      seen = ((await c.get(GVRs.VMImportTask, ns, 't')) as unknown as VMImportTask | undefined)?.status?.vms?.[0];
      return seen && ok(seen) ? seen : undefined;
    }, { timeoutMs });
  } catch (e) {
    throw new Error(`${(e as Error).message}; last seen: ${JSON.stringify(seen)}`, { cause: e });
  }
}

async function events(ns: string, reason: string): Promise<Array<{ type?: string; message?: string }>> {
  return ((await c.list(GVRs.Event, ns)).items as Array<KubeObject & { reason?: string; type?: string; message?: string; involvedObject?: { kind?: string } }>).filter((e) => e.reason === reason && e.involvedObject?.kind === 'VMImportTask');
}

/** The VM imported: Ready, a Halted VMInstance on the very volumes Forklift filled, the source off, no snapshot left. */
async function assertImported(ns: string, vmId: string, v: VMStat): Promise<void> {
  assert.equal(v.phase, 'Succeeded', JSON.stringify(v));
  const task = (await c.get(GVRs.VMImportTask, ns, 't')) as unknown as VMImportTask;
  assert.equal(task.status?.conditions?.find((x) => x.type === 'Ready')?.status, 'True');
  const vmi = await c.get(GVRs.VMInstance, ns, 'app');
  assert.equal((vmi!.spec as { runStrategy?: string }).runStrategy, 'Halted');
  const w = booted.sim.world(URL_VC);
  for (let i = 0; i < w.vm(vmId)!.disks.length; i++) {
    const claim = await c.get(GVRs.PersistentVolumeClaim, ns, `vm-disk-app-disk-${i}`);
    const pv = await c.get(GVRs.PersistentVolume, undefined, (claim!.spec as { volumeName: string }).volumeName);
    assert.equal(pv!.metadata?.annotations?.[CONTENT_ANNOTATION], contentIdentity(URL_VC, vmId, w.vm(vmId)!.disks[i]!), `disk ${i}: on the volume the warm copy filled`);
  }
  assert.equal(w.vm(vmId)!.powerState, 'poweredOff');
  assert.deepEqual(w.liveSnapshots(vmId), [], 'every snapshot of the warm run was removed');
  assert.ok(v.downtimeSeconds !== undefined && v.downtimeSeconds >= 0, 'downtime measured from the power-off');
  assert.ok(v.timestamps?.sourcePoweredOff && Date.parse(v.timestamps.sourcePoweredOff) >= Date.parse(v.timestamps.started!));
}

test('a two-disk VM imported warm with a cutover set in the future precopies while the source runs, cuts over at that time, and ends Ready as a Halted VMInstance on the volumes Forklift filled', async () => {
  let cutover = '';
  const ns = await warmTask('warmc-future', 'vm-1', () => ({ cutover: (cutover = seconds(Date.now() + 25_000)) }));
  const pre = await vmWhen(ns, 'precopies counted before the cutover', (v) => v.phase === 'Precopying' && (v.warm?.precopies ?? 0) > 0);
  assert.equal(booted.sim.world(URL_VC).vm('vm-1')!.powerState, 'poweredOn', 'the source runs while it precopies');
  assert.ok(pre.warm?.nextPrecopyAt, 'the next precopy time is shown');
  assert.ok(pre.warm?.lastPrecopySeconds !== undefined, 'the last precopy’s duration is shown');
  assert.equal(pre.warm?.cutoverAt, cutover);
  assert.ok(Date.now() < Date.parse(cutover), 'precopies were seen before the cutover time');
  const end = await vmWhen(ns, 'the VM imported', (v) => v.phase === 'Succeeded' || v.phase === 'Failed', 120_000);
  await assertImported(ns, 'vm-1', end);
  assert.ok(Date.parse(end.timestamps!.sourcePoweredOff!) >= Date.parse(cutover) - 1000, 'the source went off at the cutover, not before');
  assert.ok((await events(ns, 'Precopied')).length > 0);
  assert.ok((await events(ns, 'CutoverStarted')).length > 0);
});

test('a two-disk VM imported warm without a cutover precopies until the documented kubectl patch sets it to now, then ends Ready as a Halted VMInstance on the volumes Forklift filled', async () => {
  const ns = await warmTask('warmc-patch', 'vm-2');
  await vmWhen(ns, 'two precopies, waiting for spec.cutover', (v) => v.phase === 'Precopying' && (v.warm?.precopies ?? 0) >= 2 && /waiting for spec\.cutover/.test(v.message ?? ''));
  assert.equal(booted.sim.world(URL_VC).vm('vm-2')!.powerState, 'poweredOn');
  const r = await kubectl(['-n', ns, 'patch', 'vmimporttask', 't', '--type', 'merge', '-p', `{"spec":{"cutover":"${seconds(Date.now())}"}}`]);
  assert.equal(r.code, 0, r.stderr);
  const end = await vmWhen(ns, 'the VM imported', (v) => v.phase === 'Succeeded' || v.phase === 'Failed', 120_000);
  await assertImported(ns, 'vm-2', end);
  assert.ok((end.warm?.precopies ?? 0) >= 2);
});

test('a snapshot vCenter refuses during the precopies fails the VM SnapshotFailed, naming the warm-only vCenter privileges and keeping vCenter’s words', async () => {
  const ns = await warmTask('warmc-nopriv', 'vm-3');
  const v = await vmWhen(ns, 'the VM failed', (x) => x.phase === 'Failed');
  assert.equal(v.reason, 'SnapshotFailed', JSON.stringify(v));
  assert.match(v.message ?? '', /VirtualMachine\.State\.CreateSnapshot/);
  assert.match(v.message ?? '', /Permission to perform this operation was denied/);
  assert.equal(booted.sim.world(URL_VC).vm('vm-3')!.powerState, 'poweredOn', 'the source was never stopped');
  assert.deepEqual(booted.sim.world(URL_VC).liveSnapshots('vm-3'), []);
});

test('a precopy whose copy fails once and succeeds on Forklift’s retry keeps the task Precopying with a PrecopyRetrying warning Event, and the precopies go on', async () => {
  const ns = await warmTask('warmc-flaky', 'vm-4');
  const retrying = await vmWhen(ns, 'the retry shown', (v) => v.reason === 'PrecopyRetrying');
  assert.equal(retrying.phase, 'Precopying');
  await waitFor('a PrecopyRetrying warning Event', async () => (await events(ns, 'PrecopyRetrying')).find((e) => e.type === 'Warning'), { timeoutMs: 30_000 });
  const recovered = await vmWhen(ns, 'precopies past the retried one', (v) => v.reason === 'Precopying' && (v.warm?.precopies ?? 0) >= 3);
  assert.equal(recovered.phase, 'Precopying');
  const r = await kubectl(['-n', ns, 'patch', 'vmimporttask', 't', '--type', 'merge', '-p', `{"spec":{"cutover":"${seconds(Date.now())}"}}`]);
  assert.equal(r.code, 0, r.stderr);
  const end = await vmWhen(ns, 'the VM imported', (v) => v.phase === 'Succeeded' || v.phase === 'Failed', 120_000);
  assert.equal(end.phase, 'Succeeded', JSON.stringify(end));
});

test('a precopy that fails more often than Forklift’s importer retry limit fails the VM PrecopyFailed, with Forklift’s words', async () => {
  const ns = await warmTask('warmc-broken', 'vm-5');
  const v = await vmWhen(ns, 'the VM failed', (x) => x.phase === 'Failed');
  assert.equal(v.reason, 'PrecopyFailed', JSON.stringify(v));
  assert.match(v.message ?? '', /IMPORTER_RETRY/);
  assert.match(v.message ?? '', /Forklift said: .*VixDiskLib_Read/);
  assert.deepEqual(booted.sim.world(URL_VC).liveSnapshots('vm-5'), []);
});

test('a cutover set on the task while a precopy copies lets that precopy finish, then cuts over: the VM ends Ready, every precopy Forklift started complete', async () => {
  const ns = await warmTask('warmc-mid', 'vm-6');
  type Precopy = { start?: string; end?: string };
  const forkliftVM = async (): Promise<{ phase?: string; warm?: { successes?: number; precopies?: Precopy[] } } | undefined> => {
    const migs = (await c.list(GVRs.Migration, ns)).items as Array<KubeObject & { status?: { vms?: Array<{ phase?: string; warm?: { successes?: number; precopies?: Precopy[] } }> } }>;
    return migs[0]?.status?.vms?.[0];
  };
  // Forklift's second precopy copying (the first is the full copy): its record has a start and no end yet.
  const copying = await waitFor('a precopy after the full copy, copying', async () => {
    const v = await forkliftVM();
    const pre = v?.warm?.precopies ?? [];
    return v?.phase === 'CopyDisks' && (v.warm?.successes ?? 0) >= 1 && pre.length >= 2 && !pre[pre.length - 1]!.end ? pre.length : undefined;
  }, { timeoutMs: 90_000 });
  const setAt = Date.now();
  await c.patch(GVRs.VMImportTask, ns, 't', { spec: { cutover: seconds(setAt) } });
  // Read on the Migration while it is there: the ended task's Plan is retired (archived, then deleted, and
  // its Migration with it) as soon as the task ends.
  const ended = await waitFor('the precopy copying at the cutover finished', async () => (await forkliftVM())?.warm?.precopies?.[copying - 1]?.end, { timeoutMs: 120_000 });
  const end = await vmWhen(ns, 'the VM imported', (v) => v.phase === 'Succeeded' || v.phase === 'Failed', 120_000);
  await assertImported(ns, 'vm-6', end);
  assert.ok(Date.parse(ended) > setAt, `the cutover was set while precopy ${copying} still copied (it ended ${ended}, the cutover was set at ${new Date(setAt).toISOString()})`);
  assert.ok((end.warm?.precopies ?? 0) >= copying - 1, 'the task counts the precopies Forklift completed');
});
