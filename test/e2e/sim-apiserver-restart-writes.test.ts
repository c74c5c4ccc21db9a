// The simulated Forklift's writes cut off by kube-apiserver restarts. Forklift records what a pass did only
// in the Plan status it writes at the end of that pass; while the API server is away that write fails too, so
// the pass is requeued (base.SlowReQ) and its phase redone from the stored status, each step Ensure*-style
// (kubev2v/forklift@v2.11.5: pkg/controller/plan/controller.go Reconcile/execute, pkg/controller/base/
// controller.go Ended, pkg/controller/plan/kubevirt.go EnsureDataVolumes/EnsureVM). So VMs whose
// DataVolumes, VirtualMachines, claim owners and DataVolume status are being written while the server
// restarts end Succeeded, with exactly one DataVolume and claim per disk and one VirtualMachine per VM.
// Each restart is a crash: kube-apiserver stops answering (SIGSTOP) with the simulator's requests in flight, is
// killed and started again, so every request it held breaks off (`socket hang up`) with its outcome unknown.
// Runs on a PRIVATE control plane, since the shared one cannot be restarted under other files.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ControlPlane, waitFor } from './env/index.ts';
import { createStorageClass, startSim, vcenter, type Sim } from '../sim/index.ts';
import { R, Rest, condition, createMigration, createPlan, forkliftSetup, type Obj } from '../sim/testing.ts';

const VMS = 6;
const world = vcenter({
  url: 'https://vcenter-restart-writes.example.com/sdk',
  hosts: [{ id: 'host-1', address: '192.0.2.82' }],
  vms: Array.from({ length: VMS }, (_, i) => ({ id: `vm-${i + 1}`, name: `writer-${i + 1}`, disks: [{ capacityGiB: 1 }, { capacityGiB: 1 }] })),
});
const NS = 'sim-restart-writes';

let cp: ControlPlane;
let sim: Sim;
let rest: Rest;

before(async () => {
  cp = await ControlPlane.start({ auditLog: false, quiet: true });
  await createStorageClass(cp.kubeconfigPath, { name: 'sim-restart-writes', reclaimPolicy: 'Delete' });
  // Two VMs at a time at 256 MiB/s (a 1 GiB disk in ~4 s): the six VMs' DataVolumes and VirtualMachines are
  // created over a window long enough for three restarts to land among them, with the running transfers
  // writing their DataVolumes' progress every tick all along.
  sim = await startSim({ kubeconfigPath: cp.kubeconfigPath, worlds: [world], mbPerSecond: 256, timings: { maxVmInflight: 2 } });
  rest = new Rest(cp.kubeconfigPath);
});

/** Frozen for 1.5 s (the fault's length: long enough for the running steps' next writes to be in flight), killed, restarted. */
async function crashApiServer(): Promise<void> {
  const pid = cp.info.pids['kube-apiserver'];
  assert.ok(pid, 'the control plane ran kube-apiserver');
  process.kill(pid, 'SIGSTOP');
  try {
    await new Promise((r) => setTimeout(r, 1_500));
  } finally {
    process.kill(pid, 'SIGKILL');
  }
  await cp.restartApiServer();
}

/** Each VM's pipeline phase and step states in the Plan, and the namespace's DataVolumes and claims. */
async function whereVMsAre(): Promise<string> {
  const out: string[] = [];
  try {
    const p = await rest.get(R.Plan, NS, 'p');
    out.push(`Plan conditions: ${((p?.status?.conditions ?? []) as Array<{ type: string }>).map((c) => c.type).join(', ')}`);
    for (const v of (p?.status?.migration?.vms ?? []) as Array<{ id: string; phase?: string; error?: unknown; pipeline?: Array<{ name: string; phase?: string }> }>) {
      out.push(`  ${v.id}: ${v.phase ?? '—'} [${(v.pipeline ?? []).map((s) => `${s.name}=${s.phase ?? '—'}`).join(' ')}]${v.error ? ` error ${JSON.stringify(v.error)}` : ''}`);
    }
    for (const o of (await rest.list(R.DataVolume, NS)).items) out.push(`  DataVolume ${o.metadata.name}: ${o.status?.phase ?? '—'}`);
    for (const o of (await rest.list(R.PVC, NS)).items) out.push(`  claim ${o.metadata.name}: ${o.status?.phase ?? '—'}`);
  } catch (e) {
    out.push(`(could not read: ${(e as Error).message})`);
  }
  return out.join('\n');
}

after(async () => {
  await sim?.stop();
  rest?.close();
  await cp?.stop();
});

test('VMs whose DataVolumes and VirtualMachines are being written while kube-apiserver crashes and restarts end Succeeded with exactly one DataVolume, claim and VirtualMachine each', { timeout: 400_000 }, async () => {
  await rest.create(R.Namespace, { metadata: { name: NS } });
  await forkliftSetup(rest, NS, world, { storageClass: 'sim-restart-writes' });
  await waitFor('Providers and maps Ready', async () => {
    for (const [res, name] of [[R.Provider, 'vsphere'], [R.Provider, 'host'], [R.NetworkMap, 'net'], [R.StorageMap, 'sto']] as const) {
      if (!condition(await rest.get(res, NS, name), 'Ready')) return false;
    }
    return true;
  }, { timeoutMs: 60_000 });
  const plan = await createPlan(rest, NS, 'p', world.vms.map((v) => ({ id: v.id })));
  await waitFor('Plan Ready', async () => condition(await rest.get(R.Plan, NS, 'p'), 'Ready'), { timeoutMs: 60_000 });

  // Every DataVolume and VirtualMachine that ever exists in the namespace, by UID (polled; the restarts make
  // some polls fail).
  const dvs = new Set<string>();
  let importing = false;
  const vms = new Set<string>();
  let polling = true;
  const poll = (async () => {
    while (polling) {
      try {
        for (const o of (await rest.list(R.DataVolume, NS)).items) {
          dvs.add(o.metadata.uid!);
          if (o.status?.phase === 'ImportInProgress') importing = true;
        }
        for (const o of (await rest.list(R.VirtualMachine, NS)).items) vms.add(o.metadata.uid!);
      } catch {
        /* the API server restarting */
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  let mig: Obj | undefined;
  try {
    mig = await createMigration(rest, plan);
    // Crashes while the first VMs' disks are copying (CDI writing their DataVolumes' progress every tick), when
    // the first VirtualMachine is created (its claims handed over, its DataVolumes removed, the next VMs'
    // DataVolumes created), and when the third is.
    await waitFor('the first disks copying', async () => importing, { timeoutMs: 60_000, intervalMs: 20 });
    await crashApiServer();
    await waitFor('the first VirtualMachine created', async () => vms.size >= 1, { timeoutMs: 120_000, intervalMs: 20 });
    await crashApiServer();
    await waitFor('the third VirtualMachine created', async () => vms.size >= 3, { timeoutMs: 120_000, intervalMs: 20 });
    await crashApiServer();
    const done = await waitFor('the Migration ended', async () => {
      const m = await rest.get(R.Migration, NS, mig!.metadata.name).catch(() => undefined);
      return condition(m, 'Succeeded') || condition(m, 'Failed') ? m : undefined;
    }, { timeoutMs: 240_000 }).catch(async (e: Error) => {
      // Where each VM stopped, so that a run that never ends says which step it hangs on.
      throw new Error(`${e.message}\n${await whereVMsAre()}`);
    });
    const p = await rest.get(R.Plan, NS, 'p');
    const failed = ((p?.status?.migration?.vms ?? []) as Array<{ id: string; error?: unknown }>).filter((v) => v.error).map((v) => `${v.id}: ${JSON.stringify(v.error)}`);
    assert.ok(condition(done as Obj, 'Succeeded'), `the Migration Succeeded: ${JSON.stringify((done as Obj).status?.conditions)}; failed VMs: ${failed.join('; ')}`);
  } finally {
    polling = false;
    await poll;
  }
  assert.equal(dvs.size, VMS * 2, `one DataVolume per disk was ever created (${dvs.size})`);
  assert.equal(vms.size, VMS, `one VirtualMachine per VM was ever created (${vms.size})`);
  const claims = (await rest.list(R.PVC, NS)).items;
  assert.equal(claims.length, VMS * 2, `one claim per disk is left: ${claims.map((c) => c.metadata.name).join(', ')}`);
  const owned = claims.filter((c) => (c.metadata.ownerReferences ?? []).some((o) => o.kind === 'VirtualMachine'));
  assert.equal(owned.length, VMS * 2, 'every claim is owned by its VirtualMachine');
  const stored = (await rest.list(R.VirtualMachine, NS)).items;
  assert.deepEqual(stored.map((v) => v.metadata.labels?.vmID).sort(), world.vms.map((v) => v.id).sort(), 'one VirtualMachine per source VM');
});
