// Credentials as Forklift's Secret webhook judges them: the vCenter Secret and the host Secrets are
// connection-tested on their create/update (kubev2v/forklift@v2.11.5:pkg/forklift-api/webhooks/validating-webhook/admitters/secret-admitter.go),
// and a source with ESXi host overrides imports through them end to end.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { ApiError, type KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, getSource, projectedSecret, readyOf, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-creds.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  // vCenter advertises host-1 at an address in the Service CIDR: only the override 192.0.2.51 reaches it.
  hosts: [{ id: 'host-1', address: '10.96.0.50', otherAddresses: ['192.0.2.51'] }],
  vms: [{ id: 'vm-1', name: 'web01', host: 'host-1', disks: [{ capacityGiB: 2 }] }],
});
const good = { username: world.user, password: world.password, caCert: world.caPEM };
const hostGood = { username: 'root', password: world.hosts[0]!.password, insecureSkipVerify: true };

let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'creds-fast', reclaimPolicy: 'Delete' }] });
  ({ c } = booted);
});

after(async () => {
  await booted?.shutdown();
});

/** Completed reconciles of the source controller (this file's first test has the controller to itself). */
async function sourceReconciles(): Promise<number> {
  const text = await (await fetch(booted.ctl.metricsURL)).text();
  let n = 0;
  for (const m of text.matchAll(/^migration_controller_reconcile_total\{([^}]*)\} (\d+)/gm)) if (m[1]!.includes('controller="vmimportsource"')) n += Number(m[2]);
  return n;
}

// First in the file: no other source exists, so every reconcile the metric counts is this source's.
test('a refused vCenter password is AuthenticationFailed with the SSO hint and is presented again only when the spec changes, never silently', async () => {
  const ns = await freshNamespace('creds');
  const password = 'wrong-Secret-1234';
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { ...good, username: 'mtv', password } });
  const s = await waitForReason(c, ns, 'vc', 'AuthenticationFailed');
  const ready = readyOf(s)!;
  assert.match(ready.message, /Invalid credentials/);
  assert.match(ready.message, /SSO domain/);
  assert.match(ready.message, /until the source's spec changes/);
  assert.equal(s.status?.credentialsRejected?.attempts, 1);
  assert.ok(Date.parse(s.status!.credentialsRejected!.retryAfter) - Date.now() > 10 * 60_000, 'the next attempt is far away');
  assert.equal(booted.sim.world(URL_VC).failedLogins.vcenter, 1);
  assert.equal(await c.get(GVRs.Secret, ns, 'vmimport-vc-credentials'), undefined, 'the refused Secret was never stored');

  // Wake the source without changing its spec, and wait until that reconcile has run: no new login.
  const before = await sourceReconciles();
  await c.patch(GVRs.VMImportSource, ns, 'vc', { metadata: { annotations: { 'example.com/touched': 'yes' } } });
  await waitFor('the source to be reconciled again', async () => ((await sourceReconciles()) > before ? true : undefined));
  assert.equal(booted.sim.world(URL_VC).failedLogins.vcenter, 1, 'the refused password was not presented again');
  const again = (await getSource(c, ns, 'vc'))!;
  assert.equal(readyOf(again)?.reason, 'AuthenticationFailed');
  assert.equal(again.status?.credentialsRejected?.attempts, 1);

  const events = (await c.list(GVRs.Event, ns)).items;
  assert.doesNotMatch(JSON.stringify(again.status) + JSON.stringify(events), new RegExp(password));

  // Correcting the spec is a new attempt, at once.
  await c.patch(GVRs.VMImportSource, ns, 'vc', { spec: { credentials: { username: world.user, password: world.password } } });
  const ok = await waitForReason(c, ns, 'vc', 'Connected');
  assert.equal(ok.status?.credentialsRejected, undefined);
  assert.equal(booted.sim.world(URL_VC).failedLogins.vcenter, 1);
});

test("Forklift's Secret webhook refuses a host Secret without createdForResource, and one without a user", async () => {
  const ns = await freshNamespace('creds');
  const secret = (labels: Record<string, string>, data: Record<string, string>): KubeObject =>
    ({ apiVersion: 'v1', kind: 'Secret', metadata: { generateName: 'h-', namespace: ns, labels }, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) }) as KubeObject;
  await assert.rejects(c.create(GVRs.Secret, secret({ createdForResourceType: 'hosts' }, { user: 'root', password: 'x' })), (e: unknown) => {
    assert.ok(e instanceof ApiError && e.code === 400, String(e));
    assert.match(e.message, /host secret is labeled with 'createdForResourceType' but without 'createdForResource'/);
    return true;
  });
  await assert.rejects(c.create(GVRs.Secret, secret({ createdForResourceType: 'hosts', createdForResource: 'host-1' }, { password: 'x' })), /missing credentials on Host secret/);
  await assert.rejects(c.create(GVRs.Secret, secret({ createdForResourceType: 'providers' }, { user: 'u' })), /without 'createdForProviderType'/);
});

test('a wrong ESXi password for a host override is AuthenticationFailed naming the host, never echoing the password, and a corrected one connects', async () => {
  const ns = await freshNamespace('creds');
  const password = 'wrong-Esxi-5678';
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: good, hosts: [{ id: 'host-1', address: '192.0.2.51', credentials: { ...hostGood, password } }] });
  const s = await waitForReason(c, ns, 'vc', 'AuthenticationFailed', 60_000);
  assert.match(readyOf(s)!.message, /host-1 \(192\.0\.2\.51\)/);
  assert.match(readyOf(s)!.message, /incorrect user name or password/);
  assert.doesNotMatch(JSON.stringify(s.status), new RegExp(password));
  await c.patch(GVRs.VMImportSource, ns, 'vc', { spec: { hosts: [{ id: 'host-1', address: '192.0.2.51', credentials: hostGood }] } });
  await waitForReason(c, ns, 'vc', 'Connected', 60_000);
});

test('a source with spec.hosts[] connects with host Secrets Forklift accepts, and a task over it imports its VM through the host override', async () => {
  const ns = await freshNamespace('creds');
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: good, hosts: [{ id: 'host-1', address: '192.0.2.51', credentials: hostGood }] });
  const s = await waitForReason(c, ns, 'vc', 'Connected', 60_000);
  assert.deepEqual(s.status?.hosts?.map((h) => [h.id, h.ready]), [['host-1', true]]);
  const hs = (await projectedSecret(c, ns, 'vc', 'host-1'))!;
  assert.equal(hs.metadata?.labels?.createdForResourceType, 'hosts');
  assert.equal(hs.metadata?.labels?.createdForResource, 'host-1');

  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'through-host', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'creds-fast', vms: [{ id: 'vm-1' }] } } as KubeObject);
  const t = await waitFor('the task to end', async () => {
    const x = (await c.get(GVRs.VMImportTask, ns, 'through-host')) as unknown as VMImportTask | undefined;
    return x?.status?.completedAt ? x : undefined;
  }, { timeoutMs: 120_000 });
  const v = t.status!.vms![0]!;
  assert.equal(v.phase, 'Succeeded', JSON.stringify(v));
  assert.ok(await c.get(GVRs.VMInstance, ns, v.vmInstance ?? 'web01'));
});
