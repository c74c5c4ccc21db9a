// Warm imports, the controller's half, on the real API server: a warm task renders a warm Plan and gives
// its Migration the tenant's cutover — set at creation, set later by `kubectl patch --type merge`, moved
// earlier — which is what Forklift reads to leave its precopy loop (kubev2v/forklift@v2.11.5:
// pkg/controller/plan/migration.go, CopyingPaused). The simulated warm run precopies until the Migration's
// cutover comes, so the cutover is changed while the VM precopies.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask, VMImportTaskSpec } from '../../src/api/types.ts';
import { freshNamespace, kubectl, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-warm.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.41' }],
  vms: [
    // Two disks, CBT on (vSphere's default is off, which a warm import refuses up front). A warm run ignores
    // the stall fault: it precopies until its cutover, hours away or absent here.
    { id: 'vm-1', name: 'warm01', changeTrackingEnabled: true, disks: [{ capacityGiB: 64 }, { capacityGiB: 32 }], faults: { stallTransferAtPercent: 40 } },
    { id: 'vm-2', name: 'warm02', changeTrackingEnabled: true, disks: [{ capacityGiB: 64 }, { capacityGiB: 32 }], faults: { stallTransferAtPercent: 40 } },
  ],
});

let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'warm-fast', reclaimPolicy: 'Delete' }] });
  ({ c } = booted);
});

after(async () => {
  await booted?.shutdown();
});

const seconds = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

async function warmTask(ns: string, name: string, spec: Partial<VMImportTaskSpec> & { vms: VMImportTaskSpec['vms'] }): Promise<void> {
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name, namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'warm-fast', mode: 'warm', ...spec } } as KubeObject);
}

async function migrationCutover(ns: string, want: (cutover: string | undefined) => boolean, what: string): Promise<KubeObject> {
  return await waitFor(what, async () => {
    const m = (await c.list(GVRs.Migration, ns)).items[0];
    return m && want((m.spec as { cutover?: string } | undefined)?.cutover) ? m : undefined;
  }, { timeoutMs: 90_000 });
}

async function vmStatus(ns: string, name: string): Promise<NonNullable<NonNullable<VMImportTask['status']>['vms']>[number] | undefined> {
  return ((await c.get(GVRs.VMImportTask, ns, name)) as unknown as VMImportTask | undefined)?.status?.vms?.[0];
}

test('a warm task with a cutover in the future renders a warm Plan, its Migration carries that cutover, and moving it earlier by kubectl patch reaches the Migration', async () => {
  const ns = await freshNamespace('warm-future');
  const future = seconds(Date.now() + 3 * 3600_000);
  await warmTask(ns, 't', { cutover: future, vms: [{ id: 'vm-1' }] });

  const plan = await waitFor('the Plan', async () => (await c.list(GVRs.Plan, ns)).items[0], { timeoutMs: 60_000 });
  assert.equal((plan.spec as { type?: string }).type, 'warm');
  assert.equal((plan.spec as { warm?: boolean }).warm, true);
  await migrationCutover(ns, (x) => x !== undefined && Date.parse(x) === Date.parse(future), 'the Migration created with the task’s cutover');
  const v = await waitFor('the VM precopying with the cutover shown', async () => {
    const s = await vmStatus(ns, 't');
    return s?.phase === 'Precopying' && s.warm?.cutoverAt === future ? s : undefined;
  }, { timeoutMs: 60_000 });
  assert.equal(v.timestamps?.sourcePoweredOff, undefined, 'the source runs while it precopies');
  assert.match(v.message ?? '', new RegExp(`cutover at ${future}`));

  const earlier = seconds(Date.now() + 3600_000);
  const r = await kubectl(['patch', '-n', ns, 'vmimporttask', 't', '--type', 'merge', '-p', JSON.stringify({ spec: { cutover: earlier } })]);
  assert.equal(r.code, 0, r.stderr);
  await migrationCutover(ns, (x) => x !== undefined && Date.parse(x) === Date.parse(earlier), 'the earlier cutover on the Migration');
  await waitFor('the VM shows the earlier cutover', async () => ((await vmStatus(ns, 't'))?.warm?.cutoverAt === earlier ? true : undefined), { timeoutMs: 60_000 });
});

test('a warm task without a cutover precopies and says it waits for one; kubectl patch --type merge with the current time gives its Migration the cutover, with a CutoverScheduled Event', async () => {
  const ns = await freshNamespace('warm-now');
  await warmTask(ns, 't', { vms: [{ id: 'vm-2' }] });
  await migrationCutover(ns, (x) => x === undefined, 'the Migration, without a cutover');
  await waitFor('the VM precopying, waiting for spec.cutover', async () => {
    const s = await vmStatus(ns, 't');
    return s?.phase === 'Precopying' && /waiting for spec\.cutover/.test(s.message ?? '') ? s : undefined;
  }, { timeoutMs: 60_000 });
  // Still without a cutover a moment later: nothing sets one but the tenant.
  assert.equal(((await c.list(GVRs.Migration, ns)).items[0]?.spec as { cutover?: string } | undefined)?.cutover, undefined);

  const now = seconds(Date.now());
  const r = await kubectl(['patch', '-n', ns, 'vmimporttask', 't', '--type', 'merge', '-p', `{"spec":{"cutover":"${now}"}}`]);
  assert.equal(r.code, 0, r.stderr);
  await migrationCutover(ns, (x) => x !== undefined && Date.parse(x) === Date.parse(now), 'the cutover on the Migration');
  await waitFor('a CutoverScheduled Event on the task', async () => {
    const evs = (await c.list(GVRs.Event, ns)).items as Array<KubeObject & { reason?: string; message?: string; involvedObject?: { name?: string } }>;
    return evs.find((e) => e.reason === 'CutoverScheduled' && e.involvedObject?.name === 't' && e.message?.includes(now));
  }, { timeoutMs: 30_000 });
});
