// What the controller does about Forklift's side effects, under both Forklift versions the simulator plays
// (test/sim/SIDE-EFFECTS.md): no Secret holding a vCenter or ESXi password is left in the tenant's namespace
// after a success, a failure or a cancel (Forklift's VDDK Secret goes with an archived Plan), and a
// Provider spec change waits while a task imports over the source (v2.11.5 would cancel it).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FORKLIFT_VERSIONS, vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportSource, VMImportTask } from '../../src/api/types.ts';
import { sourceProviderName } from '../../src/forklift/provider.ts';
import { SecretKeyring } from '../../src/credentials/keyring.ts';
import { startTestWebhook, type TestWebhook } from '../../src/webhook/testkit.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, waitForWebhookEffective, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-side-effects.example.com/sdk';
const KEY_SECRET = 'mc-e2e-side-effects-key';
const world = vcenter({
  url: URL_VC,
  hosts: [
    { id: 'host-1', address: '192.0.2.10' },
    // vCenter advertises an address the cluster cannot reach: its VMs fail with the NBD error.
    { id: 'host-2', address: '192.0.2.20', reachable: false },
  ],
  vms: [
    { id: 'vm-1', name: 'ok01', host: 'host-1', disks: [{ capacityGiB: 1 }] },
    { id: 'vm-2', name: 'unreach01', host: 'host-2', disks: [{ capacityGiB: 1 }] },
    // 64 GiB at the rate below: long enough to act on it mid-copy.
    { id: 'vm-3', name: 'long01', host: 'host-1', disks: [{ capacityGiB: 64 }] },
  ],
});

/** The Secrets in `ns` that hold a vCenter or ESXi account: Forklift's VDDK Secrets (resource=vm-config). */
async function credentialSecrets(c: KubeClient, ns: string): Promise<string[]> {
  const items = (await c.list<KubeObject>(GVRs.Secret, ns)).items;
  return items.filter((s) => s.metadata?.labels?.resource === 'vm-config' || 'secretKey' in ((s as { data?: object }).data ?? {})).map((s) => s.metadata?.name ?? '');
}

async function task(c: KubeClient, ns: string, name: string, vms: string[]): Promise<void> {
  await c.create(GVRs.VMImportTask, {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name, namespace: ns },
    spec: { sourceRef: { name: 'vc' }, storageClass: 'side-fast', vms: vms.map((id) => ({ id })) },
  } as KubeObject);
}

async function ended(c: KubeClient, ns: string, name: string): Promise<VMImportTask> {
  return await waitFor(`task ${name} to end`, async () => {
    const x = (await c.get(GVRs.VMImportTask, ns, name)) as unknown as VMImportTask | undefined;
    return x?.status?.completedAt ? x : undefined;
  }, { timeoutMs: 120_000 });
}

for (const version of FORKLIFT_VERSIONS) {
  describe(`Forklift ${version}: what the controller leaves in the tenant's namespace`, () => {
    let booted: BootedWorld;
    let c: KubeClient;
    let wh: TestWebhook;
    before(async () => {
      // The controller and the admission webhook share one key ring (the webhook seals the passwords).
      const keyNs = await freshNamespace('mc-side');
      booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'side-fast', reclaimPolicy: 'Delete' }], sim: { forkliftVersion: version, mbPerSecond: 4096 }, controller: { extra: { podNamespace: keyNs, credentialsKeySecret: KEY_SECRET } } });
      ({ c } = booted);
      wh = await startTestWebhook({ client: c, keyring: new SecretKeyring({ client: c, namespace: keyNs, name: KEY_SECRET, ttlMs: 200 }) });
    });
    after(async () => {
      await wh?.stop();
      await booted?.shutdown();
    });

    const source = async (prefix: string, admitted = false): Promise<string> => {
      const ns = await freshNamespace(prefix, admitted ? { [wh.selector.key]: wh.selector.value } : {});
      if (admitted) await waitForWebhookEffective(ns, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name: 'probe' }, spec: { type: 'vsphere', url: 'http://nope.example/sdk', credentials: { username: 'u', password: 'p', insecureSkipVerify: true } } });
      await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
      await waitForReason(c, ns, 'vc', 'Connected');
      return ns;
    };

    test('after a success and a failure no Secret holding a vCenter or ESXi password is left in the namespace; the handed-off VM\'s Plan is gone, the failed one\'s archived', async () => {
      const ns = await source('side-end');
      await task(c, ns, 'mixed', ['vm-1', 'vm-2']);
      // Forklift's VDDK Secret exists while the disks copy: the thing to clean up.
      await waitFor('a VDDK Secret in the namespace', async () => (await credentialSecrets(c, ns)).length > 0);
      const t = await ended(c, ns, 'mixed');
      assert.equal(t.status!.vms!.find((v) => v.id === 'vm-1')!.phase, 'Succeeded');
      assert.equal(t.status!.vms!.find((v) => v.id === 'vm-2')!.phase, 'Failed');
      await waitFor('no credential Secret left', async () => (await credentialSecrets(c, ns)).length === 0, { timeoutMs: 60_000 });
      const plans = await waitFor('only the failed VM\'s Plan left, archived', async () => {
        const ps = (await c.list<KubeObject>(GVRs.Plan, ns)).items;
        return ps.length === 1 && (ps[0]!.status as { conditions?: Array<{ type: string }> } | undefined)?.conditions?.some((x) => x.type === 'Archived') ? ps : undefined;
      }, { timeoutMs: 60_000 });
      assert.equal(plans[0]!.metadata?.labels?.['forklift.cozystack.io/vm-id'], 'vm-2');
      assert.ok((await c.list<KubeObject>(GVRs.PersistentVolumeClaim, ns)).items.some((p) => p.metadata?.labels?.vmID === 'vm-2'), 'the failed VM\'s disks are kept for diagnosis');
    });

    test('a task deleted mid-copy leaves no Secret holding a password in the namespace', async () => {
      const ns = await source('side-cancel');
      await task(c, ns, 'canceled', ['vm-3']);
      await waitFor('the copy under way', async () => {
        const x = (await c.get(GVRs.VMImportTask, ns, 'canceled')) as unknown as VMImportTask | undefined;
        return x?.status?.vms?.[0]?.phase === 'Transferring' && (await credentialSecrets(c, ns)).length > 0;
      }, { timeoutMs: 60_000 });
      await c.delete(GVRs.VMImportTask, ns, 'canceled');
      await waitFor('the task gone', async () => !(await c.get(GVRs.VMImportTask, ns, 'canceled')), { timeoutMs: 120_000 });
      assert.deepEqual(await credentialSecrets(c, ns), []);
      assert.deepEqual((await c.list<KubeObject>(GVRs.Plan, ns)).items, []);
    });

    test('a new URL for the source while a task imports over it is refused at admission, naming the task, and the import goes on with the Provider untouched', async () => {
      const ns = await source('side-hold', true);
      await task(c, ns, 'held', ['vm-3']);
      await waitFor('the copy under way', async () => {
        const x = (await c.get(GVRs.VMImportTask, ns, 'held')) as unknown as VMImportTask | undefined;
        return x?.status?.vms?.[0]?.phase === 'Transferring';
      }, { timeoutMs: 60_000 });
      const before = (await c.get(GVRs.Provider, ns, sourceProviderName('vc')))!;
      // The admission refuses the edit while the task runs, naming it. (A new URL takes the password again in
      // plain text: a sealed one opens only for the endpoint it was written for.)
      const newURL = { spec: { url: 'https://vcenter-side-effects.example.com:443/sdk', credentials: { username: world.user, password: world.password, caCert: world.caPEM } } };
      await assert.rejects(c.patch(GVRs.VMImportSource, ns, 'vc', newURL), /spec\.url cannot change while tasks import over this source \(held\)/);
      const t = await ended(c, ns, 'held');
      assert.equal(t.status!.vms![0]!.phase, 'Succeeded', JSON.stringify(t.status!.vms![0]));
      const after = (await c.get(GVRs.Provider, ns, sourceProviderName('vc')))!;
      assert.equal(after.metadata?.generation, before.metadata?.generation, 'the Provider\'s spec was not written under the run');
      // Once the task has ended, the same edit is admitted.
      await c.patch(GVRs.VMImportSource, ns, 'vc', newURL);
      const src = (await c.get(GVRs.VMImportSource, ns, 'vc')) as unknown as VMImportSource;
      assert.equal(src.spec.url, 'https://vcenter-side-effects.example.com:443/sdk');
    });
  });
}
