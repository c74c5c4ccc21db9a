// Forklift may be absent when things start and be installed later: the sim can play that.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootSim, type BootedSim } from './fixtures.ts';
import { type Sim, vcenter } from '../sim/index.ts';
import type { Rest} from '../sim/testing.ts';
import { R, condition, forkliftSetup } from '../sim/testing.ts';

const world = vcenter({ url: 'https://vcenter-late.example.com/sdk', vms: [{ id: 'vm-1', name: 'solo' }] });

describe('absent or late Forklift', () => {
  let sim: Sim;
  let rest: Rest;
  let installed = false;
  let booted: BootedSim;
  before(async () => {
    booted = await bootSim({ worlds: [world], storageClasses: [{ name: 'sim-late' }], sim: { forkliftInstalled: false } });
    ({ sim, rest } = booted);
  });
  after(async () => {
    // Leave the shared control plane as other files expect it: Forklift installed.
    if (sim && !installed) await sim.installForklift();
    await booted?.shutdown();
  });

  test('without Forklift its kinds are not served; once installed, a Provider written by hand becomes Ready', async () => {
    await assert.rejects(rest.list(R.Provider), (e: Error & { code?: number }) => e.code === 404);
    await sim.installForklift();
    installed = true;
    const ns = await freshNamespace('sim-late');
    await forkliftSetup(rest, ns, world, { storageClass: 'sim-late' });
    await waitFor('Provider Ready', async () => condition(await rest.get(R.Provider, ns, 'vsphere'), 'Ready'));
    await waitFor('StorageMap Ready', async () => condition(await rest.get(R.StorageMap, ns, 'sto'), 'Ready'));
  });
});
