// The simulator's warm pipeline (Forklift v2.11.5's warm itinerary over CDI's multi-stage import), through
// hand-written Forklift objects (no controller): precopies while the source runs, each from a new vCenter
// snapshot with the previous one removed, DataVolume checkpoints, the cutover Migration.spec.cutover asks for,
// and the faults a warm run meets (a snapshot vCenter refuses, an importer that fails and is restarted, one
// that fails past IMPORTER_RETRY, a cutover asked for while a precopy runs).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootSim, type BootedSim } from './fixtures.ts';
import { vcenter } from '../sim/index.ts';
import { ANN_CHECKPOINTS_COPIED, IMPORTER_RETRY } from '../sim/forklift.ts';
import { NO_PERMISSION } from '../sim/world.ts';
import { R, type Obj, condition, createMigration, createPlan, forkliftSetup, listIn } from '../sim/testing.ts';

const URL_W = 'https://vcenter-warm-pipeline.example.com/sdk';
const world = vcenter({
  url: URL_W,
  vms: [
    { id: 'vm-1', name: 'wp01', changeTrackingEnabled: true, changePerInterval: 0.1, disks: [{ capacityGiB: 1 }, { capacityGiB: 0.5 }] },
    { id: 'vm-2', name: 'wp02', changeTrackingEnabled: true, faults: { snapshotDeniedAt: 2 }, disks: [{ capacityGiB: 0.5 }] },
    { id: 'vm-3', name: 'wp03', changeTrackingEnabled: true, changePerInterval: 0.5, faults: { precopyImporterFailures: { precopy: 2, restarts: 1 } }, disks: [{ capacityGiB: 1 }] },
    { id: 'vm-4', name: 'wp04', changeTrackingEnabled: true, changePerInterval: 0.5, faults: { precopyImporterFailures: { precopy: 2, restarts: IMPORTER_RETRY + 1 } }, disks: [{ capacityGiB: 1 }] },
    // Every interval rewrites the whole disk: each precopy takes as long as the first (about 8 s at 1 GiB/s).
    { id: 'vm-5', name: 'wp05', changeTrackingEnabled: true, changePerInterval: 1, disks: [{ capacityGiB: 8 }] },
  ],
});

let booted: BootedSim;
let ns: string;

before(async () => {
  booted = await bootSim({ worlds: [world], storageClasses: [{ name: 'simwp-fast', reclaimPolicy: 'Delete' }], sim: { mbPerSecond: 1024, timings: { precopyIntervalMs: 600 } } });
  ns = await freshNamespace('sim-warm-pipe');
  await forkliftSetup(booted.rest, ns, world, { storageClass: 'simwp-fast' });
  for (const [res, name] of [[R.Provider, 'vsphere'], [R.Provider, 'host'], [R.NetworkMap, 'net'], [R.StorageMap, 'sto']] as const) {
    await waitFor(`${res.kind} ${name} Ready`, async () => condition(await booted.rest.get(res, ns, name), 'Ready'));
  }
});

after(async () => {
  await booted?.shutdown();
});

interface WarmVM {
  id: string;
  phase: string;
  error?: { phase: string; reasons: string[] };
  conditions?: Array<{ type: string }>;
  pipeline: Array<{ name: string; phase?: string; started?: string; completed?: string; error?: { reasons: string[] }; tasks?: Array<{ error?: { reasons: string[] } }> }>;
  warm?: { successes: number; failures: number; consecutiveFailures: number; nextPrecopyAt?: string; precopies?: Array<{ start?: string; end?: string; snapshot?: string; deltas?: Array<{ disk: string; deltaId: string }> }> };
}

async function start(name: string, vm: string): Promise<Obj> {
  const plan = await createPlan(booted.rest, ns, name, [{ id: vm }], { type: 'warm' });
  await waitFor(`Plan ${name} Ready`, async () => condition(await booted.rest.get(R.Plan, ns, name), 'Ready'));
  return await createMigration(booted.rest, plan);
}

async function vmOf(mig: Obj): Promise<WarmVM | undefined> {
  return ((await booted.rest.get(R.Migration, ns, mig.metadata.name))?.status?.vms as WarmVM[] | undefined)?.[0];
}

async function until(mig: Obj, what: string, ok: (v: WarmVM) => boolean, timeoutMs = 60_000): Promise<WarmVM> {
  let seen: WarmVM | undefined;
  try {
    return await waitFor(what, async () => {
      seen = await vmOf(mig);
      return seen && ok(seen) ? seen : undefined;
    }, { timeoutMs });
  } catch (e) {
    // Where the run stood: the phase, its warm record and the pipeline.
    throw new Error(`${(e as Error).message}; last seen: ${JSON.stringify({ phase: seen?.phase, warm: seen?.warm, error: seen?.error, pipeline: seen?.pipeline.map((p) => `${p.name}:${p.phase}`) })}`, { cause: e });
  }
}

const done = (v: WarmVM): boolean => !!v.conditions?.some((c) => ['Succeeded', 'Failed', 'Canceled'].includes(c.type));

async function cutNow(mig: Obj): Promise<void> {
  await booted.rest.patch(R.Migration, ns, mig.metadata.name, { spec: { cutover: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') } });
}

test('a warm run precopies while the source runs — each precopy from a new snapshot, the previous one removed, the DataVolumes checkpointed and paused — until Migration.spec.cutover, then powers the source off, copies the final delta and succeeds with no snapshot left', async () => {
  const w = booted.sim.world(URL_W);
  const mig = await start('wp-ok', 'vm-1');
  const mid = await until(mig, 'two precopies done', (v) => (v.warm?.successes ?? 0) >= 2 && v.phase === 'CopyingPaused');
  assert.equal(w.vm('vm-1')!.powerState, 'poweredOn', 'the source runs while it precopies');
  assert.equal(mid.warm!.consecutiveFailures, 0);
  assert.ok(mid.warm!.nextPrecopyAt && Date.parse(mid.warm!.nextPrecopyAt) > Date.parse(mid.warm!.precopies![1]!.end!), 'the next precopy is one interval after the last');
  const [p1, p2] = mid.warm!.precopies!;
  assert.ok(p1!.snapshot && p2!.snapshot && p1!.snapshot !== p2!.snapshot, JSON.stringify(mid.warm));
  assert.equal(p1!.deltas?.length, 2, 'one change id per disk');
  assert.ok(!w.liveSnapshots('vm-1').includes(p1!.snapshot!), 'the first precopy’s snapshot was removed before the second was taken');
  const dvs = (await listIn(booted.rest, R.DataVolume, ns)).filter((d) => d.metadata.labels?.migration === mig.metadata.uid);
  assert.equal(dvs.length, 2);
  // The run goes on meanwhile: read its record after the DataVolumes, so it covers every checkpoint on them.
  const now = (await vmOf(mig))!.warm!.precopies!;
  for (const dv of dvs) {
    assert.ok(['Paused', 'ImportInProgress'].includes(dv.status?.phase), `a multi-stage import pauses between checkpoints (${dv.status?.phase})`);
    const cps = dv.spec.checkpoints as Array<{ previous: string; current: string }>;
    assert.ok(cps.length >= 1);
    for (const cp of cps) {
      // Each checkpoint: the precopy's snapshot, read from the change id of the one before it (SetCheckpoints).
      const k = now.findIndex((p) => p.snapshot === cp.current);
      assert.ok(k >= 1, `checkpoint ${cp.current} is a precopy's snapshot`);
      assert.equal(cp.previous, now[k - 1]!.deltas!.find((d) => d.disk === dv.spec.source.vddk.backingFile)?.deltaId);
    }
    assert.equal(dv.spec.finalCheckpoint, false);
    const pvc = await booted.rest.get(R.PVC, ns, dv.metadata.name);
    assert.ok(pvc?.metadata.annotations?.[`${ANN_CHECKPOINTS_COPIED}.${p2!.snapshot}`], 'CDI recorded the second precopy’s checkpoint as copied');
  }
  const xfer = mid.pipeline.find((s) => s.name === 'DiskTransfer')!;
  assert.equal(xfer.phase, 'Completed');

  await cutNow(mig);
  const end = await until(mig, 'the run ended', done);
  assert.ok(end.conditions!.some((c) => c.type === 'Succeeded'), JSON.stringify(end));
  assert.equal(w.vm('vm-1')!.powerState, 'poweredOff');
  assert.deepEqual(w.liveSnapshots('vm-1'), [], 'every snapshot Forklift took was removed');
  const cut = end.pipeline.find((s) => s.name === 'Cutover')!;
  assert.equal(cut.phase, 'Completed');
  assert.ok(end.warm!.precopies!.length >= 3, 'the precopies and the final snapshot');
  assert.equal(end.warm!.precopies!.at(-1)!.end, undefined, 'the final copy is not a precopy: no end recorded');
  const pvs = (await listIn(booted.rest, R.PV, '')).filter((p) => p.spec?.claimRef?.namespace === ns && p.metadata.annotations?.['sim.cozystack.io/source-disk']?.includes('#vm-1/'));
  assert.equal(pvs.length, 2, 'both disks landed on their volumes');
});

test('a snapshot vCenter refuses during the precopies fails the VM in CreateSnapshot with vCenter’s NoPermission words, and the last snapshot is removed', async () => {
  const w = booted.sim.world(URL_W);
  const mig = await start('wp-denied', 'vm-2');
  const end = await until(mig, 'the run ended', done);
  assert.ok(end.conditions!.some((c) => c.type === 'Failed'), JSON.stringify(end));
  assert.deepEqual(end.error, { phase: 'CreateSnapshot', reasons: [NO_PERMISSION] });
  assert.equal(end.warm!.successes, 1, 'the first precopy had completed');
  assert.deepEqual(w.liveSnapshots('vm-2'), [], 'the failed run left no snapshot behind');
  assert.equal(w.vm('vm-2')!.powerState, 'poweredOn', 'a failed precopy never powered the source off');
});

test('an importer that fails during a precopy is restarted by CDI: warm.failures counts its restarts, the precopy completes and the next one starts from a fresh importer', async () => {
  const mig = await start('wp-retry', 'vm-3');
  const failing = await until(mig, 'the second precopy’s importer restarted', (v) => (v.warm?.failures ?? 0) === 1);
  assert.equal(failing.warm!.successes, 1);
  const dv = (await listIn(booted.rest, R.DataVolume, ns)).find((d) => d.metadata.labels?.migration === mig.metadata.uid);
  assert.equal(dv?.status?.restartCount, 1);
  const later = await until(mig, 'two more precopies done after the retry', (v) => (v.warm?.successes ?? 0) >= 3 && v.warm?.failures === 0);
  assert.ok(!later.conditions?.some((c) => c.type === 'Failed'));
  await cutNow(mig);
  const end = await until(mig, 'the run ended', done);
  assert.ok(end.conditions!.some((c) => c.type === 'Succeeded'), JSON.stringify(end));
});

test('an importer that fails more often than Forklift’s IMPORTER_RETRY fails the VM with the importer’s termination message', async () => {
  const w = booted.sim.world(URL_W);
  const mig = await start('wp-retry-limit', 'vm-4');
  const end = await until(mig, 'the run ended', done);
  assert.ok(end.conditions!.some((c) => c.type === 'Failed'), JSON.stringify(end));
  assert.equal(end.warm!.failures, IMPORTER_RETRY + 1);
  assert.equal(end.error?.phase, 'CopyDisks');
  assert.match(end.error?.reasons[0] ?? '', /VixDiskLib_Read/);
  assert.deepEqual(w.liveSnapshots('vm-4'), []);
});

test('a cutover asked for while a precopy copies lets that precopy finish, then cuts over without another precopy', async () => {
  const w = booted.sim.world(URL_W);
  const mig = await start('wp-midcopy', 'vm-5');
  await until(mig, 'the second precopy copying', (v) => v.phase === 'CopyDisks' && v.warm?.successes === 1 && (v.warm.precopies?.length ?? 0) === 2);
  await cutNow(mig);
  const at = await vmOf(mig);
  assert.ok(at?.phase === 'CopyDisks' && at.warm?.successes === 1, `the cutover was set while the second precopy copied: ${JSON.stringify(at?.phase)}`);
  assert.equal(w.vm('vm-5')!.powerState, 'poweredOn');
  const end = await until(mig, 'the run ended', done, 90_000);
  assert.ok(end.conditions!.some((c) => c.type === 'Succeeded'), JSON.stringify(end));
  assert.equal(end.warm!.successes, 2, 'the running precopy finished, and no further one started');
  assert.ok(end.warm!.precopies![1]!.end, 'the second precopy has its end');
  assert.equal(end.warm!.precopies!.length, 3, 'two precopies and the final snapshot');
});
