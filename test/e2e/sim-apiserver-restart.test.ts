// The simulated Forklift across a kube-apiserver restart, as Forklift's controllers behave: a reconcile that
// fails because the server is down is requeued and redoes its step when the server is back, and its steps are
// Ensure* (kubev2v/forklift@v2.11.5:pkg/controller/plan/kubevirt.go EnsureDataVolumes lists the VM's
// DataVolumes by label before creating one). So a Migration running through a restart ends Succeeded with one
// DataVolume — one claim — per disk; the restart neither fails the VM nor leaves a second copy behind.
// Runs on a PRIVATE control plane, since the shared one cannot be restarted under other files.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ControlPlane, waitFor } from './env/index.ts';
import { createStorageClass, startSim, vcenter, type Sim } from '../sim/index.ts';
import { R, Rest, condition, createMigration, createPlan, forkliftSetup, type Obj } from '../sim/testing.ts';

const world = vcenter({
  url: 'https://vcenter-restart-sim.example.com/sdk',
  hosts: [{ id: 'host-1', address: '192.0.2.81' }],
  vms: [{ id: 'vm-1', name: 'twodisk', disks: [{ capacityGiB: 2 }, { capacityGiB: 2 }] }],
});
const NS = 'sim-restart';

let cp: ControlPlane;
let sim: Sim;
let rest: Rest;

before(async () => {
  cp = await ControlPlane.start({ auditLog: false, quiet: true });
  await createStorageClass(cp.kubeconfigPath, { name: 'sim-restart', reclaimPolicy: 'Delete' });
  // 64 MB/s: the two 2 GiB disks take about a minute, so the restart lands in the middle of the copy.
  sim = await startSim({ kubeconfigPath: cp.kubeconfigPath, worlds: [world], mbPerSecond: 64 });
  rest = new Rest(cp.kubeconfigPath);
});

after(async () => {
  await sim?.stop();
  rest?.close();
  await cp?.stop();
});

test('a Migration running while kube-apiserver restarts ends Succeeded with exactly one DataVolume and one claim per disk', { timeout: 300_000 }, async () => {
  await rest.create(R.Namespace, { metadata: { name: NS } });
  await forkliftSetup(rest, NS, world, { storageClass: 'sim-restart' });
  await waitFor('Providers and maps Ready', async () => {
    for (const [res, name] of [[R.Provider, 'vsphere'], [R.Provider, 'host'], [R.NetworkMap, 'net'], [R.StorageMap, 'sto']] as const) {
      if (!condition(await rest.get(res, NS, name), 'Ready')) return false;
    }
    return true;
  }, { timeoutMs: 60_000 });
  const plan = await createPlan(rest, NS, 'p', [{ id: 'vm-1' }]);
  await waitFor('Plan Ready', async () => condition(await rest.get(R.Plan, NS, 'p'), 'Ready'), { timeoutMs: 60_000 });
  const mig = await createMigration(rest, plan);

  // Every DataVolume that ever exists in the namespace (polled; the restart makes some polls fail).
  const seen = new Set<string>();
  let polling = true;
  const poll = (async () => {
    while (polling) {
      try {
        for (const dv of (await rest.list(R.DataVolume, NS)).items) seen.add(dv.metadata.name);
      } catch {
        /* the API server restarting */
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  try {
    await waitFor('the disks copying', async () => {
      const p = await rest.get(R.Plan, NS, 'p');
      const step = p?.status?.migration?.vms?.[0]?.pipeline?.find((s: { name: string }) => s.name === 'DiskTransfer');
      return step?.phase === 'Running' && step.progress.completed > 0 ? step : undefined;
    }, { timeoutMs: 60_000 });
    await cp.restartApiServer();
    const done = await waitFor('the Migration ended', async () => {
      const m = await rest.get(R.Migration, NS, mig.metadata.name).catch(() => undefined);
      return condition(m, 'Succeeded') || condition(m, 'Failed') ? m : undefined;
    }, { timeoutMs: 200_000 });
    assert.ok(condition(done as Obj, 'Succeeded'), `the Migration Succeeded: ${JSON.stringify((done as Obj).status?.conditions)}`);
  } finally {
    polling = false;
    await poll;
  }
  assert.equal(seen.size, 2, `one DataVolume per disk was ever created: ${[...seen].join(', ')}`);
  const claims = (await rest.list(R.PVC, NS)).items;
  assert.equal(claims.length, 2, `one claim per disk is left, owned by the VM: ${claims.map((c) => c.metadata.name).join(', ')}`);
});
