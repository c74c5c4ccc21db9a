// With no VDDK image configured (a supported state) a vSphere source says so at once and materialises nothing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient } from '../../src/runtime/kube.ts';
import { freshNamespace } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { CONTROLLER_NS, createSource, projectedSecret, readyOf, waitForReason } from './source-helpers.ts';

const world = vcenter({ url: 'https://vcenter-vddk.example.com/sdk' });
let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], controller: { vddkImage: '' } });
  c = booted.c;
});

after(async () => {
  await booted?.shutdown();
});

test('VDDK missing: the source is Ready=False VDDKNotConfigured at once and nothing is materialised, not even the Secret', async () => {
  const ns = await freshNamespace('vddk');
  await createSource(c, ns, 'vc', {
    type: 'vsphere',
    url: world.url,
    credentials: { username: world.user, password: world.password, caCert: world.caPEM },
    hosts: [{ id: 'host-1', address: '192.0.2.10', credentials: { username: 'root', password: 'x', insecureSkipVerify: true } }],
  });
  const s = await waitForReason(c, ns, 'vc', 'VDDKNotConfigured', 10_000);
  assert.equal(readyOf(s)?.status, 'False');
  assert.match(readyOf(s)!.message, /VDDK/);
  assert.equal(s.status?.provider, undefined);
  assert.equal((await c.list(GVRs.Secret, CONTROLLER_NS, { labelSelector: `forklift.cozystack.io/source-namespace=${ns}` })).items.length, 0);
  assert.equal(await projectedSecret(c, ns, 'vc'), undefined);
  assert.equal((await c.list(GVRs.Provider, ns)).items.length, 0);
  assert.equal((await c.list(GVRs.Host, ns)).items.length, 0);
  assert.equal(await c.get(GVRs.ConfigMap, ns, 'vmimport-inventory-vc'), undefined);
  // Deleting such a source is not blocked by anything.
  await c.delete(GVRs.VMImportSource, ns, 'vc');
});
