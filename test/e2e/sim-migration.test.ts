// The simulator's "done when": a vCenter in a few lines, a full cold raw-copy migration of a multi-disk VM
// through hand-written Plan/Migration objects (no controller), and exactly what Forklift leaves behind.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootSim, type BootedSim } from './fixtures.ts';
import { type Sim, CONTENT_ANNOTATION, contentIdentity, vcenter } from '../sim/index.ts';
import type { Rest} from '../sim/testing.ts';
import { R, type Obj, condition, createMigration, createPlan, forkliftSetup, goodSecretData, listIn, vsphereProvider, vsphereSecret } from '../sim/testing.ts';

const URL_A = 'https://vcenter-a.example.com/sdk';
const world = vcenter({
  url: URL_A,
  hosts: [{ id: 'host-1', address: '192.0.2.11' }],
  datastores: ['ds-fast', 'ds-slow'],
  vms: [
    { id: 'vm-1', name: 'web01', cpuCount: 4, coresPerSocket: 2, memoryMB: 8192, firmware: 'efi', secureBoot: true, disks: [{ capacityGiB: 16 }, { capacityGiB: 8, datastore: 'ds-slow' }] },
    { id: 'vm-2', name: 'big01', disks: [{ capacityGiB: 4096 }] },
  ],
});

describe('simulated Forklift: cold raw-copy migration', () => {
  let sim: Sim;
  let rest: Rest;
  let booted: BootedSim;
  before(async () => {
    // 8 GiB/s: the two-disk VM takes about 3 s, long enough to observe progress.
    booted = await bootSim({ worlds: [world], storageClasses: [{ name: 'sim-fast', reclaimPolicy: 'Delete' }], sim: { mbPerSecond: 8192, timings: { maxVmInflight: 1 } } });
    ({ sim, rest } = booted);
  });
  after(async () => {
    await booted?.shutdown();
  });

  const ready = async (res: typeof R.Provider, ns: string, name: string): Promise<Obj> =>
    await waitFor(`${res.kind} ${name} Ready`, async () => {
      const o = await rest.get(res, ns, name);
      return condition(o, 'Ready') ? o : undefined;
    });

  test('a two-disk VM migrates and leaves a Halted VirtualMachine owning one filled claim per disk, and no DataVolumes', async () => {
    const ns = await freshNamespace('sim-mig');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-fast', volumeMode: 'Block', accessMode: 'ReadWriteOnce' });
    await ready(R.Provider, ns, 'vsphere');
    await ready(R.Provider, ns, 'host');
    await ready(R.NetworkMap, ns, 'net');
    await ready(R.StorageMap, ns, 'sto');
    const plan = await createPlan(rest, ns, 'p1', [{ id: 'vm-1' }]);
    await ready(R.Plan, ns, 'p1');
    assert.equal(sim.world(URL_A).vm('vm-1')!.powerState, 'poweredOn');
    const mig = await createMigration(rest, plan);

    // Progress is reported in MB per disk task while DiskTransfer runs.
    const running = await waitFor('DiskTransfer progress', async () => {
      const p = await rest.get(R.Plan, ns, 'p1');
      const step = p?.status?.migration?.vms?.[0]?.pipeline?.find((s: { name: string }) => s.name === 'DiskTransfer');
      return step?.phase === 'Running' && step.progress.completed > 0 && step.progress.completed < step.progress.total ? step : undefined;
    });
    assert.equal(running.annotations.unit, 'MB');
    assert.deepEqual(running.tasks.map((t: { name: string }) => t.name), ['[ds-fast] web01/web01.vmdk', '[ds-slow] web01/web01_1.vmdk']);
    assert.equal(running.progress.total, 16 * 1024 + 8 * 1024);
    assert.equal(sim.world(URL_A).vm('vm-1')!.powerState, 'poweredOff', 'the source VM is powered off before the copy');

    const done = await waitFor('Migration Succeeded', async () => {
      const m = await rest.get(R.Migration, ns, mig.metadata.name);
      return condition(m, 'Succeeded') || condition(m, 'Failed') ? m : undefined;
    }, { timeoutMs: 60_000 });
    assert.ok(condition(done, 'Succeeded'), JSON.stringify(done.status));
    assert.equal(condition(done, 'Succeeded')!.category, 'Advisory');
    const p = (await rest.get(R.Plan, ns, 'p1'))!;
    assert.ok(condition(p, 'Succeeded'));
    assert.ok((p.status.conditions as Array<{ status: string }>).every((c) => c.status === 'True'), 'Forklift only writes status True');
    const vmStatus = p.status.migration.vms[0];
    assert.equal(vmStatus.phase, 'Completed');
    assert.deepEqual(vmStatus.pipeline.map((s: { name: string; phase: string }) => `${s.name}:${s.phase}`), ['Initialize:Completed', 'DiskTransfer:Completed', 'VirtualMachineCreation:Completed']);
    const xfer = vmStatus.pipeline[1];
    assert.equal(xfer.progress.completed, xfer.progress.total);
    assert.ok(vmStatus.conditions.some((c: { type: string }) => c.type === 'Succeeded'));

    // What Forklift leaves behind.
    assert.deepEqual(await listIn(rest, R.DataVolume, ns), [], 'DataVolumes are deleted');
    const vms = await listIn(rest, R.VirtualMachine, ns);
    assert.equal(vms.length, 1);
    const vm = vms[0]!;
    assert.equal(vm.metadata.labels!.plan, plan.metadata.uid);
    assert.equal(vm.metadata.labels!.migration, mig.metadata.uid);
    assert.equal(vm.metadata.labels!.vmID, 'vm-1');
    assert.equal(vm.spec.runStrategy, 'Halted');
    await waitFor('KubeVirt reports the VM Stopped', async () => (await rest.get(R.VirtualMachine, ns, vm.metadata.name))?.status?.printableStatus === 'Stopped');
    const dom = vm.spec.template.spec.domain;
    assert.deepEqual(dom.cpu, { cores: 2, sockets: 2, threads: 1 });
    assert.equal(dom.memory.guest, '8192Mi');
    assert.deepEqual(dom.firmware.bootloader, { efi: { secureBoot: true } });
    const claimNames: string[] = vm.spec.template.spec.volumes.map((v: { persistentVolumeClaim: { claimName: string } }) => v.persistentVolumeClaim.claimName);
    assert.equal(claimNames.length, 2);
    const claims = await listIn(rest, R.PVC, ns);
    assert.deepEqual(claims.map((c) => c.metadata.name).sort(), [...claimNames].sort());
    const w = sim.world(URL_A).vm('vm-1')!;
    for (const [i, name] of claimNames.entries()) {
      const c = claims.find((x) => x.metadata.name === name)!;
      assert.match(name, /^p1-vm-1-/);
      assert.equal(c.metadata.labels!.plan, plan.metadata.uid);
      assert.equal(c.metadata.labels!.migration, mig.metadata.uid);
      assert.equal(c.metadata.labels!.vmID, 'vm-1');
      assert.deepEqual(c.metadata.ownerReferences!.map((r) => `${r.kind}/${r.name}/${r.uid}`), [`VirtualMachine/${vm.metadata.name}/${vm.metadata.uid}`]);
      // Forklift's vmOwnerReference: not the controller, and blocking the VM's foreground deletion.
      assert.equal(c.metadata.ownerReferences![0]!.controller, false);
      assert.equal(c.metadata.ownerReferences![0]!.blockOwnerDeletion, true);
      assert.equal(c.metadata.labels!['plan-name'], undefined, 'v2.11.5 has no plan-name label');
      assert.equal(c.status.phase, 'Bound');
      const pv = (await rest.get(R.PV, undefined, c.spec.volumeName))!;
      assert.equal(pv.spec.storageClassName, 'sim-fast');
      assert.equal(pv.spec.persistentVolumeReclaimPolicy, 'Delete');
      assert.equal(pv.spec.volumeMode, 'Block');
      assert.deepEqual(pv.spec.accessModes, ['ReadWriteOnce']);
      assert.equal(pv.spec.claimRef.uid, c.metadata.uid);
      assert.equal(pv.metadata.annotations![CONTENT_ANNOTATION], contentIdentity(URL_A, 'vm-1', w.disks[i]!), `disk ${i} content on its PV, in disk order`);
    }
  });

  test('a second Migration of a Plan with history reports Succeeded and creates nothing (the retry trap)', async () => {
    const ns = await freshNamespace('sim-trap');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-fast' });
    await ready(R.StorageMap, ns, 'sto');
    // The first run really migrates the VM.
    const plan = await createPlan(rest, ns, 'p', [{ id: 'vm-1' }]);
    await ready(R.Plan, ns, 'p');
    const first = await createMigration(rest, plan, 'first');
    await waitFor('first run done', async () => {
      const m = await rest.get(R.Migration, ns, first.metadata.name);
      return condition(m, 'Succeeded');
    }, { timeoutMs: 60_000 });
    const before = { vms: (await listIn(rest, R.VirtualMachine, ns)).length, claims: (await listIn(rest, R.PVC, ns)).length };
    const second = await createMigration(rest, plan, 'second');
    const m = await waitFor('second run done', async () => {
      const x = await rest.get(R.Migration, ns, second.metadata.name);
      return condition(x, 'Succeeded') || condition(x, 'Failed') ? x : undefined;
    });
    assert.ok(condition(m, 'Succeeded'));
    assert.equal((await listIn(rest, R.VirtualMachine, ns)).length, before.vms);
    assert.equal((await listIn(rest, R.PVC, ns)).length, before.claims);
    assert.equal(((await rest.get(R.Plan, ns, 'p'))!.status.migration.history as unknown[]).length, 2);
  });

  test('deleting the active Migration cancels the run and removes its DataVolumes and claims', async () => {
    const ns = await freshNamespace('sim-cancel');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-fast' });
    await ready(R.StorageMap, ns, 'sto');
    const plan = await createPlan(rest, ns, 'p', [{ id: 'vm-2' }]);
    await ready(R.Plan, ns, 'p');
    const mig = await createMigration(rest, plan);
    await waitFor('transfer under way', async () => {
      const p = await rest.get(R.Plan, ns, 'p');
      return p?.status?.migration?.vms?.[0]?.pipeline?.[1]?.progress?.completed > 0;
    });
    assert.equal((await listIn(rest, R.DataVolume, ns)).length, 1);
    await rest.del(R.Migration, ns, mig.metadata.name);
    const p = await waitFor('Plan Canceled', async () => {
      const x = await rest.get(R.Plan, ns, 'p');
      return condition(x, 'Canceled') ? x : undefined;
    });
    assert.equal(condition(p, 'Canceled')!.reason, 'Deleted');
    assert.ok(p.status.migration.vms[0].conditions.some((c: { type: string }) => c.type === 'Canceled'));
    await waitFor('DataVolumes and claims removed', async () => (await listIn(rest, R.DataVolume, ns)).length === 0 && (await listIn(rest, R.PVC, ns)).length === 0);
    assert.equal((await listIn(rest, R.VirtualMachine, ns)).length, 0);
  });

  test('VMs beyond the in-flight limit wait as Pending; listing a VM in spec.cancel cancels that VM only', async () => {
    const ns = await freshNamespace('sim-cancel');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-fast' });
    await ready(R.StorageMap, ns, 'sto');
    const plan = await createPlan(rest, ns, 'p', [{ id: 'vm-1' }, { id: 'vm-2' }]);
    await ready(R.Plan, ns, 'p');
    const mig = await createMigration(rest, plan);
    const pending = await waitFor('vm-1 transferring while vm-2 waits', async () => {
      const m = await rest.get(R.Migration, ns, mig.metadata.name);
      const [a, b] = (m?.status?.vms ?? []) as Array<{ pipeline: Array<{ progress: { completed: number } }>; conditions: Array<{ type: string }> }>;
      return a && b && a.pipeline[1]!.progress.completed > 0 ? b : undefined;
    });
    assert.deepEqual(pending.conditions.map((c) => c.type), ['Pending']);
    await waitFor('vm-2 transferring', async () => {
      const m = await rest.get(R.Migration, ns, mig.metadata.name);
      return m?.status?.vms?.find((v: { id: string }) => v.id === 'vm-2')?.pipeline?.[1]?.progress?.completed > 0;
    });
    await rest.patch(R.Migration, ns, mig.metadata.name, { spec: { cancel: [{ id: 'vm-2' }] } });
    const m = await waitFor('Migration finished', async () => {
      const x = await rest.get(R.Migration, ns, mig.metadata.name);
      return condition(x, 'Succeeded') || condition(x, 'Failed') || condition(x, 'Canceled') ? x : undefined;
    }, { timeoutMs: 60_000 });
    const byId = (id: string): { conditions: Array<{ type: string }> } => m.status.vms.find((v: { id: string }) => v.id === id);
    assert.ok(byId('vm-1').conditions.some((c) => c.type === 'Succeeded'));
    assert.ok(byId('vm-2').conditions.some((c) => c.type === 'Canceled'));
    const vms = await listIn(rest, R.VirtualMachine, ns);
    assert.deepEqual(vms.map((v) => v.metadata.labels!.vmID), ['vm-1']);
  });

  test('at Forklift 2.11 deleting a Plan leaves the claims its run produced', async () => {
    const ns = await freshNamespace('sim-plangc');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-fast' });
    await ready(R.StorageMap, ns, 'sto');
    const plan = await createPlan(rest, ns, 'p', [{ id: 'vm-1' }]);
    await ready(R.Plan, ns, 'p');
    const mig = await createMigration(rest, plan);
    await waitFor('Migration Succeeded', async () => condition(await rest.get(R.Migration, ns, mig.metadata.name), 'Succeeded'), { timeoutMs: 60_000 });
    const claims = await listIn(rest, R.PVC, ns);
    for (const c of claims) await rest.patch(R.PVC, ns, c.metadata.name, { metadata: { ownerReferences: null } });
    await rest.del(R.Plan, ns, 'p');
    await waitFor('Plan gone', async () => !(await rest.get(R.Plan, ns, 'p')));
    // The sim's Plan-deletion handler has run once the Plan is gone from its informer; nothing is deleted.
    await waitFor('Migration garbage-collected with its Plan', async () => !(await rest.get(R.Migration, ns, mig.metadata.name)));
    assert.deepEqual((await listIn(rest, R.PVC, ns)).map((c) => c.metadata.name).sort(), claims.map((c) => c.metadata.name).sort());
  });

  test('a Provider deleted under a running Plan freezes the run: SourceProviderNotValid, no Executing, no verdict, no further progress', async () => {
    const ns = await freshNamespace('sim-provgone');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-fast' });
    await ready(R.StorageMap, ns, 'sto');
    const plan = await createPlan(rest, ns, 'p', [{ id: 'vm-2' }]);
    await ready(R.Plan, ns, 'p');
    const mig = await createMigration(rest, plan);
    await waitFor('transfer under way', async () => (await rest.get(R.Plan, ns, 'p'))?.status?.migration?.vms?.[0]?.pipeline?.[1]?.progress?.completed > 0);
    await rest.del(R.Provider, ns, 'vsphere');
    const p = await waitFor('Plan blocked on its missing source Provider', async () => {
      const x = await rest.get(R.Plan, ns, 'p');
      return condition(x, 'SourceProviderNotValid') && !condition(x, 'Executing') ? x : undefined;
    });
    assert.equal(condition(p, 'SourceProviderNotValid')!.reason, 'NotFound');
    assert.equal(condition(p, 'SourceProviderNotValid')!.category, 'Critical');
    const frozen = p.status.migration.vms[0].pipeline[1].progress.completed;
    // A witness: a new Provider loads its inventory over several transfer ticks; an unfrozen run would have
    // written progress meanwhile.
    await vsphereSecret(rest, ns, 'witness', goodSecretData(world));
    await vsphereProvider(rest, ns, 'witness', URL_A, 'witness');
    await ready(R.Provider, ns, 'witness');
    const again = (await rest.get(R.Plan, ns, 'p'))!;
    for (const x of [again, await rest.get(R.Migration, ns, mig.metadata.name)]) {
      for (const t of ['Succeeded', 'Failed', 'Canceled']) assert.equal(condition(x, t), undefined, `${x?.kind} has no ${t}`);
    }
    assert.equal(again.status.migration.vms[0].pipeline[1].progress.completed, frozen, 'no progress after the Provider went');
    assert.equal((await listIn(rest, R.DataVolume, ns)).length, 1, 'nothing cleaned up: the DataVolume stays');
  });
});

describe('simulated Forklift 2.12', () => {
  let rest: Rest;
  let booted: BootedSim;
  before(async () => {
    booted = await bootSim({ worlds: [world], storageClasses: [{ name: 'sim-fast', reclaimPolicy: 'Delete' }], sim: { mbPerSecond: 8192, forkliftVersion: 'v2.12.5' } });
    ({ rest } = booted);
  });
  after(async () => {
    await booted?.shutdown();
  });

  const ready = async (res: typeof R.Provider, ns: string, name: string): Promise<Obj> =>
    await waitFor(`${res.kind} ${name} Ready`, async () => {
      const o = await rest.get(res, ns, name);
      return condition(o, 'Ready') ? o : undefined;
    });

  test('deleting a Plan garbage-collects its plan-name-labelled claims that no VirtualMachine owns', async () => {
    const ns = await freshNamespace('sim-plangc');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-fast' });
    await ready(R.StorageMap, ns, 'sto');
    const plan = await createPlan(rest, ns, 'p', [{ id: 'vm-1' }]);
    await ready(R.Plan, ns, 'p');
    const mig = await createMigration(rest, plan);
    await waitFor('Migration Succeeded', async () => condition(await rest.get(R.Migration, ns, mig.metadata.name), 'Succeeded'), { timeoutMs: 60_000 });
    const claims = await listIn(rest, R.PVC, ns);
    for (const c of claims) assert.deepEqual([c.metadata.labels!['plan-name'], c.metadata.labels!['plan-namespace']], ['p', ns]);
    // Detach one claim from the VM (as a handoff would), keep the other owned.
    const [free, owned] = claims as [Obj, Obj];
    await rest.patch(R.PVC, ns, free.metadata.name, { metadata: { ownerReferences: null } });
    // Forklift lists the claims from its cache when the Plan goes: the detached claim must be seen so there.
    await waitFor('the detached claim unowned in the sim cache', async () => !(booted.sim.cached('pvc', ns, free.metadata.name)?.metadata.ownerReferences ?? []).length);
    await rest.del(R.Plan, ns, 'p');
    await waitFor('unowned labelled claim deleted', async () => !(await rest.get(R.PVC, ns, free.metadata.name)));
    assert.ok(await rest.get(R.PVC, ns, owned.metadata.name), 'a claim owned by the VirtualMachine stays');
  });

  test('a map naming a source id the inventory does not know only warns, and is Ready', async () => {
    const ns = await freshNamespace('sim-maps');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-fast' });
    await rest.create(R.NetworkMap, {
      metadata: { name: 'typo', namespace: ns },
      spec: { provider: { source: { name: 'vsphere', namespace: ns }, destination: { name: 'host', namespace: ns } }, map: [{ source: { id: 'network-404' }, destination: { type: 'pod' } }] },
    });
    const m = await ready(R.NetworkMap, ns, 'typo');
    assert.equal(condition(m, 'SourceNetworkNotValid')!.category, 'Warn');
  });

  test('Forklift 2.12 reads the CA from ca.crt', async () => {
    const ns = await freshNamespace('sim-prov');
    const { cacert: _omit, ...secret } = goodSecretData(world);
    await vsphereSecret(rest, ns, 's', secret);
    await vsphereProvider(rest, ns, 'vs', URL_A, 's');
    await ready(R.Provider, ns, 'vs');
  });
});
