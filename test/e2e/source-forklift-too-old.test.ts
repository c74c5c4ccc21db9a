// Feature detection: a Forklift whose Plan CRD lacks the fields every Plan relies on (a 2.9-era Forklift has
// no targetPowerState or deleteVmOnFailMigration) would prune them silently and run the Plan on its own
// defaults. The source says ForkliftTooOld, naming the fields and the minimum version, and no Plan is ever
// created; once Forklift's Plan CRD has them, the source connects and the task proceeds by itself.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { standInCRDs, vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, readyOf, waitForReason } from './source-helpers.ts';

const world = vcenter({ url: 'https://vcenter-old.example.com/sdk', vms: [{ id: 'vm-1', name: 'web01', disks: [{ capacityGiB: 1 }] }] });
const PLAN_CRD = 'plans.forklift.konveyor.io';
let booted: BootedWorld;
let c: KubeClient;

/** The stand-in Plan CRD as a Forklift 2.9 would install it: without the four fields. */
function olderPlanCRD(): KubeObject {
  const crd = structuredClone(standInCRDs('forklift').find((x) => x.metadata.name === PLAN_CRD)!) as unknown as KubeObject & { spec: { versions: Array<{ schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, unknown> } } } } }> } };
  const props = crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties;
  for (const f of ['targetPowerState', 'useCompatibilityMode', 'deleteVmOnFailMigration', 'runPreflightInspection']) delete props[f];
  for (const vm of [(props.vms as { items: { properties: Record<string, unknown> } }).items.properties]) {
    delete vm.targetPowerState;
    delete vm.deleteVmOnFailMigration;
  }
  return crd;
}

async function replacePlanCRD(body: KubeObject): Promise<void> {
  const cur = await c.get(GVRs.CustomResourceDefinition, undefined, PLAN_CRD);
  await c.replace(GVRs.CustomResourceDefinition, { ...body, metadata: { ...body.metadata, resourceVersion: cur!.metadata!.resourceVersion } });
}

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'old-fast', reclaimPolicy: 'Delete' }] });
  ({ c } = booted);
});

after(async () => {
  // Leave the current Plan CRD for the files that follow, whatever happened here.
  await replacePlanCRD(standInCRDs('forklift').find((x) => x.metadata.name === PLAN_CRD) as unknown as KubeObject).catch(() => undefined);
  await booted?.shutdown();
});

test('a Forklift whose Plan lacks targetPowerState gets ForkliftTooOld and no Plan, and the task proceeds once Forklift is upgraded', async () => {
  await replacePlanCRD(olderPlanCRD());
  const ns = await freshNamespace('too-old');
  await createSource(c, ns, 'vc', { type: 'vsphere', url: world.url, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  const s = await waitForReason(c, ns, 'vc', 'ForkliftTooOld');
  const ready = readyOf(s)!;
  assert.equal(ready.status, 'False');
  assert.match(ready.message, /targetPowerState, useCompatibilityMode, deleteVmOnFailMigration/);
  assert.doesNotMatch(ready.message, /skipGuestConversion/, 'only the fields that are really missing are named');
  assert.match(ready.message, /Forklift 2\.10 or later/);

  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 't', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'old-fast', vms: [{ id: 'vm-1' }] } } as KubeObject);
  const waiting = await waitFor('the task to wait with ForkliftTooOld', async () => {
    const t = await c.get(GVRs.VMImportTask, ns, 't');
    const conds = ((t?.status as { conditions?: Array<{ type: string; reason?: string; message?: string }> } | undefined)?.conditions ?? []);
    return conds.find((x) => x.reason === 'ForkliftTooOld');
  });
  assert.match(waiting.message ?? '', /targetPowerState/);
  assert.deepEqual((await c.list(GVRs.Plan, ns)).items, [], 'no Plan while Forklift is too old');

  // The upgrade: the Plan CRD has every field again. No nudge: the source looks again by itself.
  await replacePlanCRD(standInCRDs('forklift').find((x) => x.metadata.name === PLAN_CRD) as unknown as KubeObject);
  await waitForReason(c, ns, 'vc', 'Connected', 60_000);
  const plan = await waitFor('a Plan for the task', async () => (await c.list(GVRs.Plan, ns)).items[0], { timeoutMs: 60_000 });
  assert.equal((plan.spec as { targetPowerState?: string }).targetPowerState, 'off', 'the field survives on the upgraded Forklift');
});
