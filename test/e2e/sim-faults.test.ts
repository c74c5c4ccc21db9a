// Every fault of the simulated world is reproducible on demand, and shows the way the real systems show it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootSim, type BootedSim } from './fixtures.ts';
import { CONTENT_ANNOTATION, NBD_ERROR, contentIdentity, vcenter } from '../sim/index.ts';
import type { Rest} from '../sim/testing.ts';
import { R, type Obj, condition, createMigration, createPlan, eventsFor, forkliftSetup, listIn, vsphereSecret } from '../sim/testing.ts';

const URL_F = 'https://vcenter-faults.example.com/sdk';
const world = vcenter({
  url: URL_F,
  hosts: [
    { id: 'host-1', address: '192.0.2.21' },
    // vCenter advertises an address inside the cluster's Service CIDR; the host is reachable elsewhere.
    { id: 'host-2', address: '10.96.10.20', otherAddresses: ['192.0.2.22'] },
    { id: 'host-3', address: '192.0.2.23', reachable: false },
  ],
  vms: [
    { id: 'vm-10', name: 'captured', host: 'host-2', disks: [{ capacityGiB: 4 }] },
    { id: 'vm-11', name: 'dark', host: 'host-3', disks: [{ capacityGiB: 4 }] },
    { id: 'vm-12', name: 'flaky', disks: [{ capacityGiB: 16 }], faults: { failTransferAtPercent: 40 } },
    { id: 'vm-13', name: 'converting', disks: [{ capacityGiB: 4 }], faults: { conversionFreeze: true } },
    { id: 'vm-14', name: 'novddk', disks: [{ capacityGiB: 4 }], faults: { awaitingVddk: true } },
  ],
});

describe('simulated faults', () => {
  let rest: Rest;
  let booted: BootedSim;
  before(async () => {
    booted = await bootSim({ worlds: [world], storageClasses: [{ name: 'sim-faults' }], sim: { mbPerSecond: 4096, timings: { unreachableFailMs: 2500, conversionMs: 2000 } } });
    rest = booted.rest;
  });
  after(async () => {
    await booted?.shutdown();
  });

  const start = async (vmId: string): Promise<{ ns: string; plan: Obj; mig: Obj }> => {
    const ns = await freshNamespace('sim-fault');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-faults' });
    const plan = await createPlan(rest, ns, 'p', [{ id: vmId }]);
    await waitFor('Plan Ready', async () => condition(await rest.get(R.Plan, ns, 'p'), 'Ready'));
    const mig = await createMigration(rest, plan);
    return { ns, plan, mig };
  };
  const finished = async (ns: string, name: string): Promise<Obj> =>
    await waitFor(`Migration ${name} finished`, async () => {
      const m = await rest.get(R.Migration, ns, name);
      return condition(m, 'Succeeded') || condition(m, 'Failed') ? m : undefined;
    }, { timeoutMs: 60_000 });

  for (const [vmId, why] of [['vm-10', 'inside the Service CIDR'], ['vm-11', 'unreachable']] as const) {
    test(`a host address ${why} leaves the transfer at 0% with Warning events on the claim, then fails with the NBD error`, async () => {
      const { ns, mig } = await start(vmId);
      const claim = await waitFor('a Warning event on the target claim', async () => {
        for (const c of await listIn(rest, R.PVC, ns)) {
          const evs = (await eventsFor(rest, ns, 'PersistentVolumeClaim', c.metadata.name)).filter((e) => e.type === 'Warning');
          if (evs.length) return c;
        }
        return undefined;
      });
      const p = (await rest.get(R.Plan, ns, 'p'))!;
      const xfer = p.status.migration.vms[0].pipeline.find((s: { name: string }) => s.name === 'DiskTransfer');
      assert.equal(xfer.progress.completed, 0);
      assert.equal(condition(await rest.get(R.Migration, ns, mig.metadata.name), 'Failed'), undefined, 'nothing on the migration objects yet');
      const dv = await rest.get(R.DataVolume, ns, claim.metadata.name);
      assert.equal(dv?.status?.progress, '0.00%');
      const m = await finished(ns, mig.metadata.name);
      assert.ok(condition(m, 'Failed'));
      assert.deepEqual(m.status.vms[0].error.reasons, [NBD_ERROR]);
      const plan = (await rest.get(R.Plan, ns, 'p'))!;
      assert.ok(condition(plan, 'Failed'));
      assert.ok(plan.status.migration.vms[0].conditions.some((c: { type: string }) => c.type === 'Failed'));
      // deleteVmOnFailMigration: the failed VM's disks are removed.
      await waitFor('claims removed', async () => (await listIn(rest, R.PVC, ns)).length === 0);
      assert.equal((await listIn(rest, R.VirtualMachine, ns)).length, 0);
    });
  }

  test('a Ready Host override with a reachable address makes the captured host transfer succeed', async () => {
    const ns = await freshNamespace('sim-fault');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-faults' });
    const h = world.hosts[1]!;
    await vsphereSecret(rest, ns, 'esxi', { user: h.user, password: h.password });
    await rest.create(R.Host, { metadata: { name: 'h2', namespace: ns }, spec: { id: 'host-2', ipAddress: '192.0.2.22', provider: { name: 'vsphere', namespace: ns }, secret: { name: 'esxi', namespace: ns } } });
    await waitFor('Host Ready', async () => condition(await rest.get(R.Host, ns, 'h2'), 'Ready'));
    const plan = await createPlan(rest, ns, 'p', [{ id: 'vm-10' }]);
    await waitFor('Plan Ready', async () => condition(await rest.get(R.Plan, ns, 'p'), 'Ready'));
    const mig = await createMigration(rest, plan);
    const m = await finished(ns, mig.metadata.name);
    assert.ok(condition(m, 'Succeeded'), JSON.stringify(m.status.vms?.[0]?.error));
    const [claim] = await listIn(rest, R.PVC, ns);
    const pv = (await rest.get(R.PV, undefined, claim!.spec.volumeName))!;
    assert.equal(pv.metadata.annotations![CONTENT_ANNOTATION], contentIdentity(URL_F, 'vm-10', world.vms[0]!.disks[0]!));
  });

  test('a transfer failing mid-way fails the VM, the Plan and the Migration with the reason', async () => {
    const { ns, mig } = await start('vm-12');
    const m = await finished(ns, mig.metadata.name);
    assert.ok(condition(m, 'Failed'));
    const vm = m.status.vms[0];
    assert.match(vm.error.reasons[0], /VixDiskLib_Read/);
    const xfer = vm.pipeline.find((s: { name: string }) => s.name === 'DiskTransfer');
    assert.ok(xfer.progress.completed > 0 && xfer.progress.completed < xfer.progress.total, 'it failed part-way');
    assert.ok(condition(await rest.get(R.Plan, ns, 'p'), 'Failed'));
  });

  test('a DataVolume sits at 99.92% during the conversion period, then completes', async () => {
    const { ns, mig } = await start('vm-13');
    const dv = await waitFor('DataVolume at 99.92%', async () => (await listIn(rest, R.DataVolume, ns)).find((d) => d.status?.progress === '99.92%'));
    // Still there, unchanged, a while later in the period (observed, not slept on: the next read).
    const again = await rest.get(R.DataVolume, ns, dv.metadata.name);
    assert.equal(again?.status?.progress, '99.92%');
    assert.equal(again?.status?.phase, 'ImportInProgress');
    const m = await finished(ns, mig.metadata.name);
    assert.ok(condition(m, 'Succeeded'));
  });

  test('a DataVolume without its VDDK image stays AwaitingVDDK and the transfer never moves', async () => {
    const { ns, mig } = await start('vm-14');
    const dv = await waitFor('DataVolume AwaitingVDDK', async () =>
      (await listIn(rest, R.DataVolume, ns)).find((d) => (d.status?.conditions ?? []).some((c: { reason?: string }) => c.reason === 'AwaitingVDDK')));
    assert.equal(dv.status.phase, 'ImportScheduled');
    const p = (await rest.get(R.Plan, ns, 'p'))!;
    assert.equal(p.status.migration.vms[0].pipeline[1].progress.completed, 0);
    assert.equal(condition(await rest.get(R.Migration, ns, mig.metadata.name), 'Succeeded'), undefined);
    await rest.del(R.Migration, ns, mig.metadata.name);
    await waitFor('Plan Canceled', async () => condition(await rest.get(R.Plan, ns, 'p'), 'Canceled'));
  });
});
