// The simulator's warm Plan validation, through hand-written Forklift objects (no controller): a warm Plan
// naming a VM without changed block tracking, or with pre-existing snapshots, carries Forklift v2.11.5's
// Critical conditions and never becomes Ready; a CBT-enabled VM's warm Plan and a cold Plan do.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootSim, type BootedSim } from './fixtures.ts';
import { vcenter } from '../sim/index.ts';
import { R, type Obj, condition, createPlan, forkliftSetup } from '../sim/testing.ts';

const URL_W = 'https://vcenter-warm.example.com/sdk';
const world = vcenter({
  url: URL_W,
  vms: [
    { id: 'vm-1', name: 'noctk01', disks: [{ capacityGiB: 1 }] },
    { id: 'vm-2', name: 'snap01', changeTrackingEnabled: true, snapshot: 'snapshot-4', disks: [{ capacityGiB: 1 }] },
    { id: 'vm-3', name: 'erp01', changeTrackingEnabled: true, disks: [{ capacityGiB: 1 }, { capacityGiB: 1 }] },
  ],
});

let booted: BootedSim;
let ns: string;

before(async () => {
  booted = await bootSim({ worlds: [world], storageClasses: [{ name: 'simw-fast', reclaimPolicy: 'Delete' }] });
  ns = await freshNamespace('sim-warm');
  await forkliftSetup(booted.rest, ns, world, { storageClass: 'simw-fast' });
  for (const [res, name] of [[R.Provider, 'vsphere'], [R.Provider, 'host'], [R.NetworkMap, 'net'], [R.StorageMap, 'sto']] as const) {
    await waitFor(`${res.kind} ${name} Ready`, async () => condition(await booted.rest.get(res, ns, name), 'Ready'));
  }
});

after(async () => {
  await booted?.shutdown();
});

/** The Plan once validated: Ready, or carrying a Critical condition. */
async function validated(name: string): Promise<Obj> {
  return await waitFor(`Plan ${name} validated`, async () => {
    const p = await booted.rest.get(R.Plan, ns, name);
    const conds = (p?.status?.conditions ?? []) as Array<{ type: string; category?: string }>;
    return conds.some((c) => c.type === 'Ready' || c.category === 'Critical') ? p : undefined;
  });
}

test('a warm Plan for a VM without changed block tracking is blocked by VMMissingChangedBlockTracking naming the VM', async () => {
  await createPlan(booted.rest, ns, 'w-noctk', [{ id: 'vm-1' }], { type: 'warm' });
  const p = await validated('w-noctk');
  const c = condition(p, 'VMMissingChangedBlockTracking');
  assert.ok(c, JSON.stringify(p.status?.conditions));
  assert.equal(c.category, 'Critical');
  assert.equal(c.reason, 'MissingChangedBlockTracking');
  assert.equal(c.message, 'Changed Block Tracking (CBT) has not been enabled on some VM. This feature is a prerequisite for VM warm migration.');
  assert.equal(c.items?.length, 1);
  assert.match(c.items![0]!, /vm-1/);
  assert.equal(condition(p, 'Ready'), undefined);
});

test('a warm Plan for a VM with snapshots is blocked by VMHasSnapshots; the deprecated spec.warm flag counts as warm', async () => {
  await createPlan(booted.rest, ns, 'w-snap', [{ id: 'vm-2' }], { warm: true });
  const p = await validated('w-snap');
  const c = condition(p, 'VMHasSnapshots');
  assert.equal(c?.category, 'Critical', JSON.stringify(p.status?.conditions));
  assert.equal(c?.message, 'VM has pre-existing snapshots which are incompatible with warm migration');
  assert.equal(condition(p, 'VMMissingChangedBlockTracking'), undefined, 'this VM has CBT on');
  assert.equal(condition(p, 'Ready'), undefined);
});

test('a CBT-enabled two-disk VM\'s warm Plan and a cold Plan for the VM without CBT are Ready', async () => {
  await createPlan(booted.rest, ns, 'w-ok', [{ id: 'vm-3' }], { type: 'warm' });
  await createPlan(booted.rest, ns, 'c-noctk', [{ id: 'vm-1' }]);
  for (const name of ['w-ok', 'c-noctk']) {
    const p = await validated(name);
    assert.ok(condition(p, 'Ready'), `${name}: ${JSON.stringify(p.status?.conditions)}`);
  }
});
