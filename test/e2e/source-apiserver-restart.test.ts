// The controller survives the API server restarting: informers resume (relisting when their
// resourceVersion is gone), reconciles continue, and no object is duplicated. Runs on a PRIVATE control
// plane, since the shared one cannot be restarted under other files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { startSim, vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { KubeClient, isAlreadyExists, type KubeObject } from '../../src/runtime/kube.ts';
import { ControlPlane, REPO_ROOT, loadYamlObjects, waitFor } from './env/index.ts';
import { startController } from './controller.ts';
import { CONTROLLER_NS, createSource, readyOf, waitForReason } from './source-helpers.ts';

async function installCRDs(c: KubeClient): Promise<void> {
  const crds = loadYamlObjects(join(REPO_ROOT, 'crds')).filter((o) => o.kind === 'CustomResourceDefinition') as KubeObject[];
  for (const crd of crds) {
    try {
      await c.create(GVRs.CustomResourceDefinition, crd);
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  }
  for (const crd of crds) {
    await waitFor(`CRD ${crd.metadata?.name} Established`, async () => {
      const got = (await c.get(GVRs.CustomResourceDefinition, undefined, crd.metadata!.name!)) as { status?: { conditions?: Array<{ type: string; status: string }> } } | undefined;
      return got?.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
    });
  }
}

test('the controller survives the API server restarting: informers resume and no object is duplicated', async () => {
  const cp = await ControlPlane.start();
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  const c = new KubeClient(kc, { fieldManager: 'e2e' });
  const world = vcenter({ url: 'https://vcenter-restart.example.com/sdk' });
  let sim: Awaited<ReturnType<typeof startSim>> | undefined;
  let ctl: Awaited<ReturnType<typeof startController>> | undefined;
  try {
    await installCRDs(c);
    sim = await startSim({ kubeconfigPath: cp.kubeconfigPath, worlds: [world] });
    ctl = await startController({ kubeconfigPath: cp.kubeconfigPath, vddkImage: 'registry.example.com/vddk:8.0.3', inventoryURL: sim.inventory.url });
    await c.create(GVRs.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'restart' } });
    const creds = { username: world.user, password: world.password, caCert: world.caPEM };
    await createSource(c, 'restart', 'before', { type: 'vsphere', url: world.url, credentials: creds });
    await waitForReason(c, 'restart', 'before', 'Connected');

    await cp.restartApiServer();

    // A change made after the restart reaches the controller (its watches resumed)…
    await c.patch(GVRs.VMImportSource, 'restart', 'before', { spec: { credentials: { password: 'wrong' } } });
    await waitForReason(c, 'restart', 'before', 'AuthenticationFailed', 60_000);
    await c.patch(GVRs.VMImportSource, 'restart', 'before', { spec: { credentials: { password: world.password } } });
    await waitForReason(c, 'restart', 'before', 'Connected', 60_000);
    // …and so does a new object.
    await createSource(c, 'restart', 'after', { type: 'vsphere', url: world.url, credentials: creds });
    const after = await waitForReason(c, 'restart', 'after', 'Connected', 60_000);
    assert.equal(readyOf(after)?.status, 'True');

    const providers = (await c.list(GVRs.Provider, 'restart')).items.map((p) => p.metadata!.name!).sort();
    assert.deepEqual(providers, ['vmimport-after', 'vmimport-after-destination', 'vmimport-before', 'vmimport-before-destination']);
    const secrets = (await c.list(GVRs.Secret, CONTROLLER_NS, { labelSelector: 'forklift.cozystack.io/source-namespace=restart' })).items.map((s) => s.metadata!.labels!['forklift.cozystack.io/source']).sort();
    assert.deepEqual(secrets, ['after', 'before']);
    const text = await (await fetch(ctl.metricsURL)).text();
    // The restarted API server's watch cache no longer knows the informers' resourceVersions (410 Gone):
    // they relisted instead of losing events.
    const lists = Number(/^migration_controller_informer_lists_total\{kind="VMImportSource"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    assert.ok(lists >= 2, `the VMImportSource informer relisted after the restart (lists: ${lists})`);
  } finally {
    await ctl?.stop();
    await sim?.stop();
    c.close();
    await cp.stop();
  }
});
