// Forklift absent at start-up: sources report it as status (no crash loop) and proceed by themselves once
// Forklift's CRDs appear, without restarting the controller.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter, type Sim } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient } from '../../src/runtime/kube.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, projectedSecret, readyOf, waitForReason } from './source-helpers.ts';

const world = vcenter({ url: 'https://vcenter-late.example.com/sdk' });
let booted: BootedWorld;
let sim: Sim;
let ctl: BootedWorld['ctl'];
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], sim: { forkliftInstalled: false } });
  ({ sim, ctl, c } = booted);
});

after(async () => {
  await ctl?.stop();
  // Leave Forklift installed for the files that follow.
  await sim?.installForklift().catch(() => undefined);
  await booted?.shutdown();
});

test('Forklift installed after start-up is picked up without a restart', async () => {
  const ns = await freshNamespace('late');
  const readyz = ctl.metricsURL.replace(/\/metrics$/, '/readyz');
  await createSource(c, ns, 'vc', { type: 'vsphere', url: world.url, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  const s = await waitForReason(c, ns, 'vc', 'ForkliftNotInstalled');
  assert.equal(readyOf(s)?.status, 'False');
  assert.equal((await fetch(readyz)).status, 200, 'readiness does not wait for an optional kind');
  assert.equal(await projectedSecret(c, ns, 'vc'), undefined, 'nothing half-built while Forklift is absent');

  await sim.installForklift();
  const ok = await waitForReason(c, ns, 'vc', 'Connected', 60_000);
  assert.equal(readyOf(ok)?.status, 'True');
  await waitFor('Providers exist', async () => ((await c.list(GVRs.Provider, ns)).items.length === 2 ? true : undefined));
});
