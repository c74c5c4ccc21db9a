// Guest conversion is a platform opt-in: a tenant's `kubectl apply` of a task asking for it is refused,
// naming the chart value, on a platform that has not enabled it, and admitted (the field kept by the
// CRD schema) on one that has. Two admission servers, each scoped to its own namespace, play the two
// platforms through the real API server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { adminKubeConfig, freshNamespace, installOurCRDs } from './env/index.ts';
import { applyAs, denial, tenantWithRole, waitForWebhookEffective } from './fixtures.ts';
import { KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { startTestWebhook, type TestWebhook } from '../../src/webhook/testkit.ts';
import { GUEST_CONVERSION_DISABLED_MESSAGE, type InventoryReader } from '../../src/webhook/validate-task.ts';

const id = randomBytes(3).toString('hex');
const CLASS = `gc-fast-${id}`;
let client: KubeClient;
const hooks: TestWebhook[] = [];
const platforms: Record<'off' | 'on', { ns: string; tenant: string }> = { off: { ns: '', tenant: '' }, on: { ns: '', tenant: '' } };

const inventory: InventoryReader = {
  async getVM(_p, vmId) {
    return vmId === 'vm-201' ? { name: 'app-01', host: 'host-1', disks: [{ capacity: 10 * 2 ** 30 }, { capacity: 20 * 2 ** 30 }] } : undefined;
  },
  async listHosts() {
    return [{ id: 'host-1', name: '192.168.40.11' }];
  },
};

function task(name: string, spec: Record<string, unknown> = {}) {
  return { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name }, spec: { sourceRef: { name: 'lab' }, storageClass: CLASS, vms: [{ id: 'vm-201' }], ...spec } };
}

before(async () => {
  await installOurCRDs();
  client = new KubeClient(await adminKubeConfig());
  await client.create(GVRs.StorageClass, { metadata: { name: CLASS }, provisioner: 'example.com/none', volumeBindingMode: 'Immediate', reclaimPolicy: 'Delete' } as KubeObject);
  for (const which of ['off', 'on'] as const) {
    const wh = await startTestWebhook({ client, inventory, platform: { guestConversion: which === 'on' } });
    hooks.push(wh);
    const ns = await freshNamespace(`gc-${which}`, { [wh.selector.key]: wh.selector.value });
    platforms[which] = { ns, tenant: await tenantWithRole(ns) };
    await client.create(GVRs.VMImportSource, {
      metadata: { name: 'lab', namespace: ns },
      spec: { type: 'vsphere', url: 'https://vcenter.lab.example/sdk', credentials: { username: 'mtv@vsphere.local', password: 'pw', insecureSkipVerify: true } },
    } as KubeObject);
    await client.patch(GVRs.VMImportSource, ns, 'lab', { status: { provider: { name: 'lab', uid: `p-${which}` }, conditions: [{ type: 'Ready', status: 'True', reason: 'Connected', message: 'connected', lastTransitionTime: new Date().toISOString() }] } }, 'merge', { subresource: 'status' });
    await waitForWebhookEffective(ns, task('probe', { sourceRef: { name: 'absent' } }));
  }
});

after(async () => {
  for (const wh of hooks) await wh.stop();
  await client?.delete(GVRs.StorageClass, undefined, CLASS).catch(() => undefined);
  client?.close();
});

test('a task asking for guest conversion is refused without the platform flag, and the refusal names the flag', async () => {
  const { ns, tenant } = platforms.off;
  const r = await applyAs(tenant, ns, task('convert-me', { guestConversion: true }));
  assert.notEqual(r.code, 0);
  assert.equal(denial(r.stderr), GUEST_CONVERSION_DISABLED_MESSAGE);
  assert.match(denial(r.stderr), /chart value guestConversion\.enabled=true/);
  assert.equal(await client.get(GVRs.VMImportTask, ns, 'convert-me'), undefined);
  // The same task as a raw copy is admitted on the same platform.
  const raw = await applyAs(tenant, ns, task('raw-copy', { guestConversion: false }));
  assert.equal(raw.code, 0, raw.stderr);
});

test('with the platform flag a task asking for guest conversion is admitted, stored with the field, and cannot be switched back', async () => {
  const { ns, tenant } = platforms.on;
  const r = await applyAs(tenant, ns, task('convert-me', { guestConversion: true }));
  assert.equal(r.code, 0, r.stderr);
  const stored = (await client.get(GVRs.VMImportTask, ns, 'convert-me')) as { spec?: { guestConversion?: unknown } } | undefined;
  assert.equal(stored?.spec?.guestConversion, true);
  const flip = await applyAs(tenant, ns, task('convert-me', { guestConversion: false }));
  assert.notEqual(flip.code, 0);
  assert.equal(denial(flip.stderr), 'spec.guestConversion is immutable once the task is accepted; delete this task and create a new one to import differently');
});
