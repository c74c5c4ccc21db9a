// The platform's transfer budget against an ESXi host's NFC ceiling, as a tenant and an operator see it.
// Every disk copy opens one NFC connection on its VM's ESXi host; past the host's ceiling VixDiskLib_Open
// fails (VMware's VDDK Programming Guide, "NFC Session Limits and Timeouts"; test/sim/esxi.ts), CDI's
// importer exits with "Unable to connect to vddk data source: …" and restarts, and Forklift fails the VM
// once the importer restarted more than IMPORTER_RETRY times (kubev2v/forklift@v2.11.5:
// pkg/controller/plan/migration.go updateCopyProgress, restartLimitExceeded). The simulator plays the
// host (a small ceiling here, 2, where a real host has 48) and records the most transfers open on it.
//
// With the budget at or below the ceiling every VM of a backlog succeeds and the host never serves more
// transfers than the budget; with the budget off the same backlog meets the ceiling and a VM fails
// with VDDK's words in its status.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter, vddkOpenFailure, type WorldFixture } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { VDDK_IMAGE, bootWorld, type BootedWorld } from './fixtures.ts';
import { startController } from './controller.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const GiB = 2 ** 30;
/** NFC connections each simulated host serves at once. */
const CEILING = 2;
/** The controller's disks in transfer at once per ESXi host (--transfer-max-disks-per-host). */
const BUDGET = 2;
/**
 * 1 GiB/s of NFC bandwidth per host and 4 GiB disks: two transfers at once move 0.5 GiB/s each and take
 * about 8 s, far longer than the importer's four refused opens (timings.importerRestartMs apart) — so
 * with the budget off the VMs past the ceiling fail before a connection frees up, whatever the order in
 * which their Migrations arrive.
 */
const HOST_BANDWIDTH = 1 * GiB;
const DISK_GIB = 4;
const VMS = ['vm-1', 'vm-2', 'vm-3', 'vm-4'];
const CLASS = 'esxi-budget';

const worldAt = (url: string): WorldFixture =>
  vcenter({
    url,
    hosts: [{ id: 'host-1', address: '192.0.2.51', bandwidthBytesPerSecond: HOST_BANDWIDTH, nfcCeiling: CEILING }],
    vms: VMS.map((id, i) => ({ id, name: `esxi${i}`, disks: [{ capacityGiB: DISK_GIB }] })),
  });
const WITH_BUDGET = worldAt('https://vcenter-esxi-budget.example.com/sdk');
const WITHOUT_BUDGET = worldAt('https://vcenter-esxi-nobudget.example.com/sdk');

let booted: BootedWorld;
let unbudgeted: { stop(): Promise<void> } | undefined;

before(async () => {
  booted = await bootWorld({
    worlds: [WITH_BUDGET, WITHOUT_BUDGET],
    storageClasses: [{ name: CLASS, reclaimPolicy: 'Delete' }],
    controller: { extra: { transferMaxDisksPerHost: BUDGET } },
  });
});

after(async () => {
  await unbudgeted?.stop();
  await booted?.shutdown();
});

async function importAll(world: WorldFixture, prefix: string): Promise<{ ns: string; task: VMImportTask }> {
  const c = booted.c;
  const ns = await freshNamespace(prefix);
  await createSource(c, ns, 'vc', { type: 'vsphere', url: world.url, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  await c.create(GVRs.VMImportTask, {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name: 'backlog', namespace: ns },
    spec: { sourceRef: { name: 'vc' }, storageClass: CLASS, vms: VMS.map((id) => ({ id })) },
  } as KubeObject);
  let last: VMImportTask | undefined;
  const task = await waitFor(`task ${ns}/backlog ended`, async () => {
    last = (await c.get(GVRs.VMImportTask, ns, 'backlog')) as unknown as VMImportTask | undefined;
    return last?.status?.phase === 'Succeeded' || last?.status?.phase === 'Failed' ? last : undefined;
  }, { timeoutMs: 180_000 }).catch((e: Error) => assert.fail(`${e.message}: ${JSON.stringify(last?.status?.vms?.map((v) => [v.id, v.phase, v.reason, v.message]))}`));
  return { ns, task };
}

const describe = (t: VMImportTask): string => JSON.stringify(t.status?.vms?.map((v) => [v.id, v.phase, v.reason, v.message]));

test('with the transfer budget at the host’s NFC ceiling, every VM of a backlog on one ESXi host is imported and the host never serves more transfers than the budget', async () => {
  const { task } = await importAll(WITH_BUDGET, 'esxi-budget');
  assert.equal(task.status?.phase, 'Succeeded', describe(task));
  assert.deepEqual(task.status?.vms?.map((v) => v.phase), VMS.map(() => 'Succeeded'), describe(task));
  const host = booted.sim.world(WITH_BUDGET.url).esxiStats().find((h) => h.id === 'host-1')!;
  assert.ok(host.peak <= BUDGET, `transfers open at once on host-1: ${host.peak}`);
  assert.equal(host.peak, BUDGET, 'the budget is used: two disks copied side by side');
  assert.equal(host.failed, 0, 'no VDDK open was refused');
  assert.equal(host.started, VMS.length);
});

test('without the transfer budget, a backlog past the host’s NFC ceiling fails a VM with VDDK’s out-of-resources error in its status', async () => {
  // The same controller with the budget off (--transfer-budget=false, chart transfer.budget: false).
  await booted.ctl.stop();
  unbudgeted = await startController({ kubeconfigPath: booted.env.admin.kubeconfigPath, inventoryURL: booted.sim.inventory.url, vddkImage: VDDK_IMAGE, extra: { transferBudget: false } });
  const { task } = await importAll(WITHOUT_BUDGET, 'esxi-nobudget');
  assert.equal(task.status?.phase, 'Failed', describe(task));
  const failed = (task.status?.vms ?? []).filter((v) => v.phase === 'Failed');
  assert.ok(failed.length >= 1, describe(task));
  // What CDI's importer ended with, carried to the VM's status through Forklift (the disk's file is the VM's own).
  const expected = /Unable to connect to vddk data source: .*VixDiskLib_Open: .*Memory allocation failed\. Out of memory\. \(DiskLib error 802: NBD_ERR_INSUFFICIENT_RESOURCES\)/;
  for (const v of failed) {
    assert.match(v.message ?? '', expected, `VM ${v.id}: ${v.message}`);
    // The host is reachable, it is busy: the reason and the advice say so, not "add spec.hosts".
    assert.equal(v.reason, 'HostTransferLimit', `VM ${v.id}: ${v.reason}`);
    assert.match(v.message ?? '', /transfer\.maxDisksPerHost/);
    const name = WITHOUT_BUDGET.vms.find((x) => x.id === v.id)!;
    assert.ok((v.message ?? '').includes(vddkOpenFailure(name.disks[0]!.file)), `VM ${v.id} names its own disk: ${v.message}`);
  }
  const host = booted.sim.world(WITHOUT_BUDGET.url).esxiStats().find((h) => h.id === 'host-1')!;
  assert.equal(host.peak, CEILING, 'the host served its ceiling and no more');
  assert.ok(host.failed > 0, 'opens past the ceiling were refused');
});
