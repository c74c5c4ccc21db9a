// What the simulated Forklift does around a Plan, per version (test/sim/SIDE-EFFECTS.md): the VDDK
// importer's Secret and its cleanup, spec.archived, the snapshot match on a Provider's spec change, the
// v2.12.5 failure of a run that keeps a blocker, and the generation filter of Provider updates. Each
// behaviour runs under both Forklift versions, against hand-written Plans (no controller).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootSim, type BootedSim } from './fixtures.ts';
import { FORKLIFT_VERSIONS, type ForkliftVersion, vcenter } from '../sim/index.ts';
import type { Rest } from '../sim/testing.ts';
import { R, type Obj, b64, condition, createMigration, createPlan, forkliftSetup, listIn } from '../sim/testing.ts';

const URL_A = 'https://vcenter-side.example.com/sdk';
const world = vcenter({
  url: URL_A,
  user: 'mtv@vsphere.local',
  password: 'correct horse',
  hosts: [{ id: 'host-1', address: '192.0.2.11' }],
  vms: [
    { id: 'vm-1', name: 'small01', disks: [{ capacityGiB: 1 }] },
    // 64 GiB at 4 GiB/s: about 16 s of copy, long enough to change things under it.
    { id: 'vm-2', name: 'long01', disks: [{ capacityGiB: 64 }] },
  ],
});

/** The VDDK Secrets Forklift made for one VM of a Plan in the target namespace. */
async function vddkSecrets(rest: Rest, ns: string, plan: Obj, vmId: string): Promise<Obj[]> {
  return (await listIn(rest, R.Secret, ns)).filter((s) => s.metadata.labels?.plan === plan.metadata.uid && s.metadata.labels?.vmID === vmId && s.metadata.labels?.resource === 'vm-config');
}

function vmStatus(p: Obj | undefined, id: string): { conditions?: Array<{ type: string; reason?: string; message?: string }>; error?: { reasons: string[] } } | undefined {
  return (p?.status?.migration?.vms ?? []).find((v: { id: string }) => v.id === id);
}

function vmEnded(p: Obj | undefined, id: string): { type: string; reason?: string; message?: string } | undefined {
  return vmStatus(p, id)?.conditions?.find((c) => ['Succeeded', 'Failed', 'Canceled'].includes(c.type));
}

for (const version of FORKLIFT_VERSIONS) {
  const v212 = version === 'v2.12.5';
  describe(`simulated Forklift ${version}: side effects around a Plan`, () => {
    let rest: Rest;
    let booted: BootedSim;
    before(async () => {
      booted = await bootSim({
        worlds: [world],
        storageClasses: [{ name: 'sim-side', reclaimPolicy: 'Delete' }],
        sim: { forkliftVersion: version satisfies ForkliftVersion, mbPerSecond: 4096, timings: { blockerGraceMs: 1500 } },
      });
      rest = booted.rest;
    });
    after(async () => {
      await booted?.shutdown();
    });

    const ready = async (res: typeof R.Provider, ns: string, name: string): Promise<Obj> =>
      await waitFor(`${res.kind} ${name} Ready`, async () => {
        const o = await rest.get(res, ns, name);
        return condition(o, 'Ready') ? o : undefined;
      });
    const setup = async (prefix: string): Promise<string> => {
      const ns = await freshNamespace(prefix);
      await forkliftSetup(rest, ns, world, { storageClass: 'sim-side' });
      for (const [res, n] of [[R.Provider, 'vsphere'], [R.Provider, 'host'], [R.NetworkMap, 'net'], [R.StorageMap, 'sto']] as const) await ready(res, ns, n);
      return ns;
    };
    const planEnded = async (ns: string, name: string, vmId: string): Promise<Obj> =>
      await waitFor(`Plan ${name}: ${vmId} ended`, async () => {
        const p = await rest.get(R.Plan, ns, name);
        return vmEnded(p, vmId) ? p : undefined;
      }, { timeoutMs: 60_000 });
    const copying = async (ns: string, name: string): Promise<void> => {
      await waitFor(`Plan ${name} copying`, async () => {
        const p = await rest.get(R.Plan, ns, name);
        const step = p?.status?.migration?.vms?.[0]?.pipeline?.find((s: { name: string }) => s.name === 'DiskTransfer');
        return step?.progress?.completed > 0;
      });
    };

    test(`the VDDK Secret holds the vCenter account in the target namespace, with no owner; after a success ${v212 ? 'v2.12.5 deletes it' : 'v2.11.5 keeps it'}, and archiving the Plan removes it`, async () => {
      const ns = await setup('sim-se-ok');
      // The long VM: its Secret and DataVolumes are there to be seen while it copies.
      const plan = await createPlan(rest, ns, 'p1', [{ id: 'vm-2' }], { deleteVmOnFailMigration: false });
      await ready(R.Plan, ns, 'p1');
      await createMigration(rest, plan);
      const secret = await waitFor('the VDDK Secret', async () => (await vddkSecrets(rest, ns, plan, 'vm-2'))[0]);
      assert.match(secret.metadata.name, /^p1-vm-2-/);
      assert.equal(secret.metadata.ownerReferences, undefined);
      assert.equal(Buffer.from(secret.data.accessKeyId, 'base64').toString(), world.user);
      assert.equal(Buffer.from(secret.data.secretKey, 'base64').toString(), world.password);
      const dvs = await waitFor('the DataVolumes', async () => {
        const l = await listIn(rest, R.DataVolume, ns);
        return l.length ? l : undefined;
      });
      assert.ok(dvs.every((d) => d.spec.source.vddk.secretRef === secret.metadata.name), 'the DataVolumes read that Secret');
      const p = await planEnded(ns, 'p1', 'vm-2');
      assert.equal(vmEnded(p, 'vm-2')!.type, 'Succeeded');
      assert.equal((await vddkSecrets(rest, ns, plan, 'vm-2')).length, v212 ? 0 : 1);
      await rest.patch(R.Plan, ns, 'p1', { spec: { archived: true } });
      const archived = await waitFor('Plan Archived', async () => {
        const x = await rest.get(R.Plan, ns, 'p1');
        return condition(x, 'Archived') ? x : undefined;
      });
      assert.equal(condition(archived, 'Archived')!.category, 'Advisory');
      assert.equal(condition(archived, 'Ready'), undefined, 'an archived Plan is never Ready');
      assert.deepEqual(await vddkSecrets(rest, ns, plan, 'vm-2'), []);
      assert.equal((await listIn(rest, R.VirtualMachine, ns)).length, 1, 'archiving a succeeded VM keeps its VirtualMachine');
    });

    test(`a Plan deleted unarchived: ${v212 ? 'v2.12.5 deletes its VDDK Secret (orphan cleanup)' : 'v2.11.5 leaves its VDDK Secret behind for good'}`, async () => {
      const ns = await setup('sim-se-del');
      const plan = await createPlan(rest, ns, 'p2', [{ id: 'vm-1' }], { deleteVmOnFailMigration: false });
      await ready(R.Plan, ns, 'p2');
      await createMigration(rest, plan);
      await planEnded(ns, 'p2', 'vm-1');
      // v2.12.5 already removed it after the success: make the point on a Secret that is there.
      if (v212) await waitFor('no VDDK Secret after success', async () => (await vddkSecrets(rest, ns, plan, 'vm-1')).length === 0);
      const planted = v212
        ? await rest.create(R.Secret, { metadata: { generateName: 'p2-vm-1-', namespace: ns, labels: { plan: plan.metadata.uid!, vmID: 'vm-1', resource: 'vm-config', 'plan-name': 'p2', 'plan-namespace': ns } }, data: { secretKey: b64('x') } })
        : (await vddkSecrets(rest, ns, plan, 'vm-1'))[0]!;
      await rest.del(R.Plan, ns, 'p2');
      await waitFor('Plan gone', async () => !(await rest.get(R.Plan, ns, 'p2')));
      if (v212) await waitFor('orphan cleanup deletes the Secret', async () => !(await rest.get(R.Secret, ns, planted.metadata.name)));
      else {
        // An observation window, not synchronisation: v2.11.5 reacts to a Plan's deletion with nothing to
        // wait for; the sim's pass over the DELETED event takes milliseconds.
        await new Promise((r) => setTimeout(r, 1500));
        assert.ok(await rest.get(R.Secret, ns, planted.metadata.name), 'the Secret is still there');
      }
    });

    test('a canceled VM\'s VDDK Secret is deleted; its DataVolumes stay when deleteVmOnFailMigration is false', async () => {
      const ns = await setup('sim-se-cancel');
      const plan = await createPlan(rest, ns, 'p3', [{ id: 'vm-2' }], { deleteVmOnFailMigration: false });
      await ready(R.Plan, ns, 'p3');
      const mig = await createMigration(rest, plan);
      await copying(ns, 'p3');
      assert.equal((await vddkSecrets(rest, ns, plan, 'vm-2')).length, 1);
      await rest.patch(R.Migration, ns, mig.metadata.name, { spec: { cancel: [{ id: 'vm-2' }] } });
      const p = await planEnded(ns, 'p3', 'vm-2');
      assert.equal(vmEnded(p, 'vm-2')!.type, 'Canceled');
      assert.deepEqual(await vddkSecrets(rest, ns, plan, 'vm-2'), []);
      assert.ok((await listIn(rest, R.DataVolume, ns)).length > 0, 'cleanup deletes DataVolumes only with deleteVmOnFailMigration');
    });

    test(`a new vddkInitImage on the source Provider mid-run: ${v212 ? 'v2.12.5 matches the snapshot by uid only and the VM succeeds' : 'v2.11.5 cancels the VM (Modified)'}`, async () => {
      const ns = await setup('sim-se-gen');
      const plan = await createPlan(rest, ns, 'p4', [{ id: 'vm-2' }], { deleteVmOnFailMigration: false });
      await ready(R.Plan, ns, 'p4');
      await createMigration(rest, plan);
      await copying(ns, 'p4');
      await rest.patch(R.Provider, ns, 'vsphere', { spec: { settings: { vddkInitImage: 'registry.example.com/vddk:8.0.3-2' } } });
      const p = await planEnded(ns, 'p4', 'vm-2');
      const end = vmEnded(p, 'vm-2')!;
      if (v212) assert.equal(end.type, 'Succeeded', JSON.stringify(end));
      else {
        assert.equal(end.type, 'Canceled');
        assert.equal(end.reason, 'Modified');
        assert.equal(end.message, 'The migration has been canceled.');
        await waitFor('the Plan Canceled', async () => condition(await rest.get(R.Plan, ns, 'p4'), 'Canceled')?.reason === 'Modified');
      }
    });

    test(`a rotated vCenter password mid-run: ${v212 ? 'v2.12.5 fails the VM once the blocker outlives the grace period, naming it' : 'v2.11.5 holds the run, which goes on once the blocker clears'}`, async () => {
      const ns = await setup('sim-se-block');
      const plan = await createPlan(rest, ns, 'p5', [{ id: 'vm-2' }], { deleteVmOnFailMigration: false });
      await ready(R.Plan, ns, 'p5');
      await createMigration(rest, plan);
      await copying(ns, 'p5');
      await rest.patch(R.Secret, ns, 'vsphere-creds', { data: { password: b64('rotated elsewhere') } });
      await waitFor('Plan SourceProviderNotReady', async () => !!condition(await rest.get(R.Plan, ns, 'p5'), 'SourceProviderNotReady'));
      if (v212) {
        const p = await planEnded(ns, 'p5', 'vm-2');
        const end = vmEnded(p, 'vm-2')!;
        assert.equal(end.type, 'Failed');
        // The maps follow their source Provider (SourceProviderNotReady on them too): their blockers may join.
        assert.ok(end.message!.startsWith('The migration has FAILED due to a validation blocker: '), end.message);
        assert.match(end.message!, /The source provider is not ready\./);
        assert.ok(vmStatus(p, 'vm-2')!.error!.reasons.includes(end.message!));
        assert.equal((await vddkSecrets(rest, ns, plan, 'vm-2')).length, 1, 'nothing is cleaned up: the Secret stays');
      } else {
        // An observation window twice the v2.12.5 grace period: the VM has not ended; the right password
        // lets it go on.
        await new Promise((r) => setTimeout(r, 3000));
        assert.equal(vmEnded(await rest.get(R.Plan, ns, 'p5'), 'vm-2'), undefined, 'v2.11.5 freezes');
        await rest.patch(R.Secret, ns, 'vsphere-creds', { data: { password: b64(world.password) } });
        const p = await planEnded(ns, 'p5', 'vm-2');
        assert.equal(vmEnded(p, 'vm-2')!.type, 'Succeeded');
      }
    });

    test('an annotation on a Provider reconciles nothing; an annotation on its Secret re-tests it', async () => {
      const ns = await setup('sim-se-pred');
      const ok = (await rest.get(R.Provider, ns, 'vsphere'))!;
      // vCenter starts refusing the account: nothing re-tests the Provider until one of its triggers fires.
      const live = booted.sim.world(URL_A).fixture;
      const saved = live.password;
      live.password = 'changed in vCenter';
      try {
        await rest.patch(R.Provider, ns, 'vsphere', { metadata: { annotations: { 'example.com/poke': '1' } } });
        // An observation window, not synchronisation: a reconcile the annotation triggered would have
        // written ConnectionAuthFailed within it (the sim's passes take milliseconds).
        await new Promise((r) => setTimeout(r, 1500));
        const after1 = (await rest.get(R.Provider, ns, 'vsphere'))!;
        assert.ok(condition(after1, 'Ready'), 'still Ready: the annotation did not trigger a re-test');
        assert.equal(after1.status.observedGeneration, ok.status.observedGeneration);
        await rest.patch(R.Secret, ns, 'vsphere-creds', { metadata: { annotations: { 'example.com/retest': '1' } } });
        await waitFor('ConnectionAuthFailed after the Secret changed', async () => !!condition(await rest.get(R.Provider, ns, 'vsphere'), 'ConnectionAuthFailed'));
      } finally {
        live.password = saved;
      }
    });
  });
}
