// The forward switch from Cozystack's own controller (docs/install.md, "Switching from Cozystack's own
// controller"): objects written against that controller's schema, as its README shows them, holding its
// finalizer, are taken over by this controller and finish; a task it served and a tenant deleted while
// no controller ran is released, after that controller's cleanup is done (the DataVolumes Forklift made
// for its Plans: cozystack/cozystack@4dc7d04ca:internal/migrationcontroller/vmimporttask_controller.go,
// finalize and deleteTransferVolumes).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { FINALIZER, UPSTREAM_LABEL_TASK_NAME, UPSTREAM_LABEL_TASK_NAMESPACE, UPSTREAM_TASK_FINALIZER } from '../../src/api/labels.ts';
import { freshNamespace, installOurCRDs, kubectl, testEnv, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { adminClient, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-switch.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.10' }],
  vms: [{ id: 'vm-1234', name: 'web01', disks: [{ capacityGiB: 4 }] }],
});

let booted: BootedWorld;
let c: KubeClient;
/** The namespace of the first test, whose source's Providers the second test's Plans name. */
let takenOverNs = '';

before(async () => {
  // Cozystack's own controller served the cluster until now: its tenants' objects exist before this
  // controller first starts.
  await testEnv();
  await installOurCRDs();
  const admin = await adminClient();
  try {
    takenOverNs = await freshNamespace('switch');
    // The README's manifests, as that controller's tenants wrote them (credentials of the simulated vCenter).
    await admin.create(GVRs.VMImportSource, {
      apiVersion: 'forklift.cozystack.io/v1alpha1',
      kind: 'VMImportSource',
      metadata: { name: 'vcenter-prod', namespace: takenOverNs },
      spec: { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } },
    } as KubeObject);
    await admin.create(GVRs.VMImportTask, {
      apiVersion: 'forklift.cozystack.io/v1alpha1',
      kind: 'VMImportTask',
      metadata: { name: 'import-web-tier', namespace: takenOverNs, finalizers: [UPSTREAM_TASK_FINALIZER] },
      spec: { sourceRef: { name: 'vcenter-prod' }, vms: [{ id: 'vm-1234', name: 'web-01' }], storageClass: 'replicated' },
    } as KubeObject);
  } finally {
    admin.close();
  }
  // Step 3 of the procedure: that controller stopped, this one is told to take its tasks over.
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'replicated', reclaimPolicy: 'Delete' }], controller: { extra: { takeOver: true } } });
  c = booted.c;
});

after(async () => {
  await booted?.shutdown();
});

const getTask = async (ns: string, name: string) => (await c.get(GVRs.VMImportTask, ns, name)) as unknown as (VMImportTask & KubeObject) | undefined;

test("a task written against Cozystack's own controller's schema, holding its finalizer, is taken over, imported, and released when deleted", async () => {
  const ns = takenOverNs;
  await waitForReason(c, ns, 'vcenter-prod', 'Connected', 60_000);
  const wait = await kubectl(['wait', '--for=condition=Ready', '-n', ns, 'vmimporttask/import-web-tier', '--timeout=120s'], { timeoutMs: 130_000 });
  const t = (await getTask(ns, 'import-web-tier'))!;
  assert.equal(wait.code, 0, `${wait.stderr} — status: ${JSON.stringify(t.status)}`);
  assert.equal(t.status?.phase, 'Succeeded');
  const vm = t.status!.vms![0]!;
  assert.equal(vm.vmInstance, 'web-01');
  assert.ok(await c.get(GVRs.VMInstance, ns, 'web-01'));
  assert.deepEqual([...(t.metadata.finalizers ?? [])].sort(), [FINALIZER, UPSTREAM_TASK_FINALIZER].sort());

  await c.delete(GVRs.VMImportTask, ns, 'import-web-tier');
  await waitFor('the taken-over task is gone', async () => !(await getTask(ns, 'import-web-tier')), { timeoutMs: 60_000 });
  // What it imported outlives it, as with either controller.
  assert.ok(await c.get(GVRs.VMInstance, ns, 'web-01'));
});

test("a task Cozystack's own controller served and a tenant deleted meanwhile is released after that controller's cleanup: its Plans' transfer volumes are removed, nobody else's", async () => {
  await booted.ctl.stop();
  const ns = await freshNamespace('switch-del');
  const task = (await c.create(GVRs.VMImportTask, {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name: 'old', namespace: ns, finalizers: [UPSTREAM_TASK_FINALIZER] },
    spec: { sourceRef: { name: 'gone' }, vms: [{ id: 'vm-1234' }], storageClass: 'replicated' },
  } as KubeObject))!;
  const owner = { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', name: 'old', uid: task.metadata!.uid! };
  const labels = { [UPSTREAM_LABEL_TASK_NAME]: 'old', [UPSTREAM_LABEL_TASK_NAMESPACE]: ns };
  // Forklift admits a Plan only over Providers that exist: those built for the first test's source.
  const providers = (await Promise.all([takenOverNs, 'cozy-forklift'].map(async (n) => (await c.list(GVRs.Provider, n)).items))).flat() as Array<KubeObject & { spec?: { type?: string } }>;
  const ref = (type: string) => {
    const p = providers.find((x) => x.spec?.type === type);
    assert.ok(p, `a ${type} Provider exists`);
    return { name: p.metadata!.name!, namespace: p.metadata!.namespace! };
  };
  const planSpec = {
    targetNamespace: ns,
    provider: { source: ref('vsphere'), destination: ref('openshift') },
    map: { network: { name: 'gone', namespace: ns }, storage: { name: 'gone', namespace: ns } },
    vms: [{ id: 'vm-1234' }],
  };
  const plan = (await c.create(GVRs.Plan, { apiVersion: 'forklift.konveyor.io/v1beta1', kind: 'Plan', metadata: { name: 'old-vm-1234', namespace: ns, labels, ownerReferences: [owner] }, spec: planSpec } as KubeObject))!;
  // A Plan with the same labels but owned by no task of ours: a namesake's, left alone.
  const stray = (await c.create(GVRs.Plan, { apiVersion: 'forklift.konveyor.io/v1beta1', kind: 'Plan', metadata: { name: 'stray', namespace: ns, labels }, spec: planSpec } as KubeObject))!;
  const dv = (planUID: string, name: string) =>
    c.create(GVRs.DataVolume, { apiVersion: 'cdi.kubevirt.io/v1beta1', kind: 'DataVolume', metadata: { name, namespace: ns, labels: { plan: planUID } }, spec: { source: { blank: {} }, storage: { resources: { requests: { storage: '1Gi' } }, storageClassName: 'replicated' } } } as KubeObject);
  await dv(plan.metadata!.uid!, 'old-vm-1234-disk-0');
  await dv(stray.metadata!.uid!, 'stray-disk-0');
  await c.delete(GVRs.VMImportTask, ns, 'old');

  await booted.restartController();
  await waitFor('the deleted task is released', async () => !(await getTask(ns, 'old')), { timeoutMs: 60_000 });
  await waitFor("its Plan's transfer volume is removed", async () => !(await c.get(GVRs.DataVolume, ns, 'old-vm-1234-disk-0')), { timeoutMs: 30_000 });
  assert.ok(await c.get(GVRs.DataVolume, ns, 'stray-disk-0'), "a volume of a Plan the task did not own stays");
});
