// A vCenter the cluster cannot reach because its packets are dropped (a firewall that drops, a missing
// route): Forklift's Secret webhook tests the login on every write of the provider Secret and hangs on it,
// until the API server gives up on the webhook after its timeoutSeconds (30) and fails the write
// (failurePolicy Fail). The source must say that vCenter is not reachable from the cluster, and must not
// write the Secret again (another 30 s of the API server and the webhook) before its backoff is over.
//
// The sim's Secret webhook keeps upstream's 30 s here: what this file guards is the race between that
// timeout and the deadline of the controller's own write, which only the real numbers show.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter, type Sim } from '../sim/index.ts';
import type { KubeClient } from '../../src/runtime/kube.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, getSource, projectedSecret, readyOf } from './source-helpers.ts';

const URL_VC = 'https://vcenter-dropped.example.com/sdk';
const world = vcenter({ url: URL_VC, hosts: [{ id: 'host-1', address: '192.0.2.10' }], vms: [{ id: 'vm-1', name: 'app01', host: 'host-1' }] });

/** The webhook's 30 s, the API server's answer and a loaded machine: the verdict comes well within this. */
const VERDICT_WITHIN_MS = 75_000;
/**
 * How long the source is watched after the verdict: a third of the first wait of the backoff (1 min). A
 * controller retrying on its ordinary requeue (10 s) or error backoff (about a second) writes again within it.
 */
const WINDOW_MS = 20_000;

let booted: BootedWorld;
let sim: Sim;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world] });
  ({ sim, c } = booted);
});

after(async () => {
  await booted?.shutdown();
});

test("a vCenter whose packets are dropped makes the source read 'vCenter is not reachable from the cluster' once Forklift's Secret webhook times out, and the Secret is not written again before the backoff's next attempt", async () => {
  const live = sim.world(URL_VC);
  live.packetsDropped = true;
  const ns = await freshNamespace('vc-drop');
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });

  let last = '';
  const s = await waitFor(
    "the source's verdict on the stalled Secret write",
    async () => {
      const r = readyOf(await getSource(c, ns, 'vc'));
      last = r ? `${r.status}/${r.reason}: ${r.message}` : 'no Ready condition';
      return r && /^vCenter is not reachable from the cluster/.test(r.message) ? r : undefined;
    },
    { timeoutMs: VERDICT_WITHIN_MS },
  ).catch((e: Error) => {
    throw new Error(`${e.message} (last: ${last})`);
  });
  assert.equal(s.status, 'False');
  assert.equal(s.reason, 'ConnectionFailed');
  assert.match(s.message, /vcenter-dropped\.example\.com:443/);
  assert.match(s.message, /failed calling webhook "secrets\.forklift\.konveyor"/, "the API server's own words, not our client's timeout");
  assert.doesNotMatch(s.message, new RegExp(world.password));
  const next = Date.parse(/Next attempt at (\S+?) \(/.exec(s.message)?.[1] ?? '');
  assert.ok(next - Date.now() > WINDOW_MS, `the next attempt (${new Date(next).toISOString()}) lies beyond the window`);
  assert.equal(live.secretWebhookLogins, 1, 'one write, one login');

  // Over the window the controller keeps its verdict and leaves the webhook alone.
  const end = Date.now() + WINDOW_MS;
  const seen: Array<{ logins: number; message: string }> = [];
  await waitFor(
    'the end of the window',
    async () => {
      seen.push({ logins: live.secretWebhookLogins, message: readyOf(await getSource(c, ns, 'vc'))?.message ?? '' });
      return Date.now() >= end;
    },
    { timeoutMs: WINDOW_MS + 10_000, intervalMs: 1_000 },
  );
  assert.deepEqual(seen.filter((o) => o.logins !== 1), [], 'no second write of the Secret before the next attempt');
  assert.deepEqual(seen.filter((o) => !o.message.startsWith('vCenter is not reachable from the cluster')), [], 'the verdict stays');
  assert.equal(await projectedSecret(c, ns, 'vc'), undefined, 'the webhook refused the only write');
});
