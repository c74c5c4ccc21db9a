// On a Cozystack platform every claim, Secret, Service and Pod of a tenant namespace passes Cozystack's
// lineage webhook (cozystack/cozystack@v1.6.2: packages/system/lineage-controller-webhook, failurePolicy
// Fail), played by the simulator (test/sim/lineage.ts): it labels what an application owns, and while it
// cannot be called the API server refuses those writes. The handoff's claims end labelled as the VMDisk's,
// and a handoff the webhook interrupts says so, waits, and finishes on the volumes Forklift filled.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CONTENT_ANNOTATION, contentIdentity, vcenter } from '../sim/index.ts';
import { APP_KIND_LABEL, APP_NAME_LABEL, MANAGED_LABEL } from '../sim/lineage.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { handoffHooks } from '../../src/controllers/handoff/index.ts';
import { Step } from '../../src/controllers/handoff/steps.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-lineage.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.51' }],
  vms: [
    { id: 'vm-1', name: 'web01', disks: [{ capacityGiB: 2 }, { capacityGiB: 1 }] },
    { id: 'vm-2', name: 'web02', disks: [{ capacityGiB: 1 }] },
  ],
});

let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'lineage-fast' }], sim: { lineage: true } });
  ({ c } = booted);
});

after(async () => {
  handoffHooks.afterStep = undefined;
  booted?.sim.setLineageWebhookDown(false);
  await booted?.shutdown();
});

type Task = VMImportTask & KubeObject;
const getTask = async (ns: string): Promise<Task> => (await c.get(GVRs.VMImportTask, ns, 't')) as unknown as Task;

async function importTask(prefix: string, vm: string, name: string): Promise<string> {
  const ns = await freshNamespace(prefix);
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 't', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'lineage-fast', vms: [{ id: vm, name }] } } as KubeObject);
  return ns;
}

async function succeeded(ns: string): Promise<Task> {
  return await waitFor('the task Succeeded', async () => {
    const t = await getTask(ns);
    if (t.status?.phase === 'Failed') throw new Error(`the task failed: ${JSON.stringify(t.status.vms)}`);
    return t.status?.phase === 'Succeeded' ? t : undefined;
  }, { timeoutMs: 120_000 });
}

/** Each disk's claim vm-disk-<name>: on the volume the transfer filled, labelled as its VMDisk's by the webhook. */
async function assertDisksOwnedByVMDisks(ns: string, vmId: string, names: string[]): Promise<void> {
  const w = booted.sim.world(URL_VC);
  for (const [i, disk] of names.entries()) {
    const claim = await c.get(GVRs.PersistentVolumeClaim, ns, `vm-disk-${disk}`);
    const labels = claim?.metadata?.labels ?? {};
    assert.equal(labels[MANAGED_LABEL], 'true', `claim of ${disk}: the lineage webhook marked it managed (${JSON.stringify(labels)})`);
    assert.equal(labels[APP_KIND_LABEL], 'VMDisk', `claim of ${disk}: owned by a VMDisk`);
    assert.equal(labels[APP_NAME_LABEL], disk, `claim of ${disk}: owned by its own VMDisk`);
    const pv = await c.get(GVRs.PersistentVolume, undefined, (claim!.spec as { volumeName: string }).volumeName);
    assert.equal(pv!.metadata?.annotations?.[CONTENT_ANNOTATION], contentIdentity(URL_VC, vmId, w.vm(vmId)!.disks[i]!), `${disk}: on the volume the transfer filled`);
  }
}

test('on a platform whose lineage webhook labels what an application owns, the handoff\'s claims end labelled as their VMDisks\' and the VM ends a Halted VMInstance on the volumes Forklift filled', async () => {
  const ns = await importTask('lineage', 'vm-1', 'web');
  const t = await succeeded(ns);
  assert.deepEqual(t.status!.vms![0]!.disks, ['web-disk-0', 'web-disk-1']);
  await waitFor('the claims labelled by the lineage webhook', async () => {
    for (const d of ['web-disk-0', 'web-disk-1']) if ((await c.get(GVRs.PersistentVolumeClaim, ns, `vm-disk-${d}`))?.metadata?.labels?.[MANAGED_LABEL] !== 'true') return undefined;
    return true;
  }, { timeoutMs: 30_000 });
  await assertDisksOwnedByVMDisks(ns, 'vm-1', ['web-disk-0', 'web-disk-1']);
  const vmi = await c.get(GVRs.VMInstance, ns, 'web');
  assert.equal((vmi!.spec as { runStrategy?: string }).runStrategy, 'Halted');
});

test('a lineage webhook that cannot be called during the handoff makes the task Degraded naming it; once it answers, the handoff finishes on the same volumes with nothing made twice', async () => {
  let downAt: string | undefined;
  // Down right after the handoff's first step: the volume is on Retain, and every claim write that follows
  // (the transfer claim's owners, the new claim, the binding) passes the webhook.
  handoffHooks.afterStep = (step, disk) => {
    if (downAt || step !== Step.RetainVolume || disk !== 0) return;
    downAt = new Date().toISOString();
    booted.sim.setLineageWebhookDown(true);
  };
  try {
    const ns = await importTask('lineage-down', 'vm-2', 'api');
    const degraded = await waitFor('Degraded naming the lineage webhook', async () => {
      const d = (await getTask(ns)).status?.conditions?.find((x) => x.type === 'Degraded');
      return d?.status === 'True' ? d : undefined;
    }, { timeoutMs: 120_000 });
    assert.ok(downAt, 'the webhook went down during the handoff');
    assert.equal(degraded.reason, 'AdmissionWebhookUnavailable', degraded.message);
    assert.match(degraded.message, /the admission webhook "lineage\.cozystack\.io" cannot be called/);
    const mid = (await getTask(ns)).status!.vms![0]!;
    assert.equal(mid.phase, 'Creating', `the VM waits in the handoff: ${JSON.stringify(mid)}`);
    const volumesDuring = (await c.list(GVRs.PersistentVolume)).items.filter((pv) => (pv.spec as { claimRef?: { namespace?: string } }).claimRef?.namespace === ns).map((pv) => pv.metadata!.name!).sort();

    booted.sim.setLineageWebhookDown(false);
    const t = await succeeded(ns);
    const cleared = t.status?.conditions?.find((x) => x.type === 'Degraded');
    assert.equal(cleared?.status, 'False', JSON.stringify(cleared));
    assert.equal(cleared?.reason, 'Recovered');
    await assertDisksOwnedByVMDisks(ns, 'vm-2', ['api-disk-0']);
    const volumesAfter = (await c.list(GVRs.PersistentVolume)).items.filter((pv) => (pv.spec as { claimRef?: { namespace?: string } }).claimRef?.namespace === ns).map((pv) => pv.metadata!.name!).sort();
    assert.deepEqual(volumesAfter, volumesDuring, 'no volume was provisioned or lost while the webhook was down');
  } finally {
    handoffHooks.afterStep = undefined;
    booted.sim.setLineageWebhookDown(false);
  }
});
