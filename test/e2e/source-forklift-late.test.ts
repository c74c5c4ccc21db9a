// Forklift absent at start-up: sources report it as status (no crash loop) and proceed by themselves once
// Forklift's CRDs appear, without restarting the controller.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startSim, vcenter, type Sim } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient } from '../../src/runtime/kube.ts';
import { freshNamespace, installOurCRDs, testEnv, waitFor } from './env/index.ts';
import { startController } from './controller.ts';
import { adminClient, createSource, readyOf, waitForReason } from './source-helpers.ts';

const world = vcenter({ url: 'https://vcenter-late.example.com/sdk' });
let sim: Sim;
let ctl: { stop(): Promise<void>; metricsURL: string };
let c: KubeClient;

before(async () => {
  const env = await testEnv();
  await installOurCRDs();
  sim = await startSim({ kubeconfigPath: env.admin.kubeconfigPath, worlds: [world], forkliftInstalled: false });
  ctl = await startController({ kubeconfigPath: env.admin.kubeconfigPath, vddkImage: 'registry.example.com/vddk:8.0.3', inventoryURL: sim.inventory.url });
  c = await adminClient();
});

after(async () => {
  await ctl?.stop();
  // Leave Forklift installed for the files that follow.
  await sim?.installForklift().catch(() => undefined);
  await sim?.stop();
  c?.close();
});

test('Forklift installed after start-up is picked up without a restart', async () => {
  const ns = await freshNamespace('late');
  const readyz = ctl.metricsURL.replace(/\/metrics$/, '/readyz');
  await createSource(c, ns, 'vc', { type: 'vsphere', url: world.url, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  const s = await waitForReason(c, ns, 'vc', 'ForkliftNotInstalled');
  assert.equal(readyOf(s)?.status, 'False');
  assert.equal((await fetch(readyz)).status, 200, 'readiness does not wait for an optional kind');
  assert.equal(await c.get(GVRs.Secret, ns, 'vmimport-vc-credentials'), undefined, 'nothing half-built while Forklift is absent');

  await sim.installForklift();
  const ok = await waitForReason(c, ns, 'vc', 'Connected', 60_000);
  assert.equal(readyOf(ok)?.status, 'True');
  await waitFor('Providers exist', async () => ((await c.list(GVRs.Provider, ns)).items.length === 2 ? true : undefined));
});
