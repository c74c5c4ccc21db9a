// Warm-import admission (spec.mode, spec.cutover) through the real API server: a tenant runs kubectl and
// reads what the webhook answers. The tasks name a Ready source whose inventory a scripted reader plays
// (no controller runs here: the status a controller would write is written directly).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, adminKubeConfig, freshNamespace, installOurCRDs, kubectl } from './env/index.ts';
import { applyAs, denial, tenantWithRole, waitForWebhookEffective } from './fixtures.ts';
import { KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { startTestWebhook, type TestWebhook } from '../../src/webhook/testkit.ts';
import type { InventoryReader } from '../../src/webhook/validate-task.ts';
import type { VMImportTask } from '../../src/api/types.ts';

const FAST = `wh-warm-${randomBytes(3).toString('hex')}`;
let client: KubeClient;
let wh: TestWebhook;
let ns: string;
let tenantKubeconfig: string;

const inventory: InventoryReader = {
  async getVM(_p, vmId) {
    return vmId === 'vm-201' ? { name: 'erp-01', host: 'host-1', disks: [{ capacity: 2 ** 30 }, { capacity: 2 ** 30 }] } : undefined;
  },
  async listHosts() {
    return [{ id: 'host-1', name: '192.168.40.11' }];
  },
};

function task(name: string, spec: Record<string, unknown>) {
  return { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name }, spec: { sourceRef: { name: 'lab' }, storageClass: FAST, vms: [{ id: 'vm-201' }], ...spec } };
}
const applyAsTenant = (obj: unknown) => applyAs(tenantKubeconfig, ns, obj);
const patchAsTenant = (name: string, patch: unknown) => kubectl(['-n', ns, 'patch', 'vmimporttask', name, '--type', 'merge', '-p', JSON.stringify(patch)], { kubeconfig: tenantKubeconfig });
const getTask = async (name: string) => (await client.get(GVRs.VMImportTask, ns, name)) as unknown as VMImportTask;

/** The "cut over now" one-liner of docs/warm.md, for `name` in the test namespace. */
function docsCutoverNow(name: string): string {
  const doc = readFileSync(join(REPO_ROOT, 'docs', 'warm.md'), 'utf8');
  const m = /^kubectl -n tenant-demo patch vmimporttask import-web-tier .*$/m.exec(doc);
  if (!m) throw new Error('docs/warm.md shows no cut-over-now one-liner');
  return m[0].replace('tenant-demo', ns).replace('import-web-tier', name);
}

function sh(line: string, kubeconfig: string): Promise<{ code: number; stderr: string }> {
  return new Promise((res) => {
    execFile('bash', ['-c', line], { env: { ...process.env, KUBECONFIG: kubeconfig }, timeout: 60_000 }, (err, _out, stderr) => {
      res({ code: err ? Number((err as { code?: unknown }).code) || 1 : 0, stderr: String(stderr) });
    });
  });
}

before(async () => {
  await installOurCRDs();
  client = new KubeClient(await adminKubeConfig());
  await client.create(GVRs.StorageClass, { metadata: { name: FAST }, provisioner: 'example.com/none', volumeBindingMode: 'Immediate', reclaimPolicy: 'Delete' } as KubeObject);
  wh = await startTestWebhook({ client, inventory });
  ns = await freshNamespace('wh-warm', { [wh.selector.key]: wh.selector.value });
  tenantKubeconfig = await tenantWithRole(ns);
  await client.create(GVRs.VMImportSource, {
    metadata: { name: 'lab', namespace: ns },
    spec: { type: 'vsphere', url: 'https://vcenter.lab.example/sdk', credentials: { username: 'mtv@vsphere.local', password: 'pw', insecureSkipVerify: true } },
  } as KubeObject);
  const now = new Date().toISOString();
  await client.patch(GVRs.VMImportSource, ns, 'lab', { status: { provider: { name: 'lab', uid: 'p-warm' }, conditions: [{ type: 'Ready', status: 'True', reason: 'Connected', message: 'connected', lastTransitionTime: now }] } }, 'merge', { subresource: 'status' });
  await waitForWebhookEffective(ns, task('probe', { sourceRef: { name: 'absent' } }));
});

after(async () => {
  await wh?.stop();
  await client?.delete(GVRs.StorageClass, undefined, FAST).catch(() => undefined);
  client?.close();
});

test('a warm task with a cutover in the future is admitted and listed with its mode; a task that names no mode is stored cold', async () => {
  const future = new Date(Date.now() + 86_400_000).toISOString();
  const r = await applyAsTenant(task('warm-later', { mode: 'warm', cutover: future }));
  assert.equal(r.code, 0, r.stderr);
  const c = await applyAsTenant(task('plain', {}));
  assert.equal(c.code, 0, c.stderr);
  assert.equal((await getTask('plain')).spec.mode, 'cold');
  const wide = await kubectl(['-n', ns, 'get', 'vmimporttasks', '-o', 'wide'], { kubeconfig: tenantKubeconfig });
  assert.equal(wide.code, 0, wide.stderr);
  const [header, ...rows] = wide.stdout.trim().split('\n');
  assert.match(header ?? '', /\bMODE\b.*\bCUTOVER\b/);
  assert.match(rows.find((l) => l.startsWith('warm-later')) ?? '', new RegExp(`\\bwarm\\b.*${future.slice(0, 19)}`));
  assert.match(rows.find((l) => l.startsWith('plain')) ?? '', /\bcold\b/);
});

test('a cutover that is not an RFC 3339 time, a cutover on a cold task and an unknown mode are refused with the webhook\'s messages', async () => {
  assert.equal(
    denial((await applyAsTenant(task('typo', { mode: 'warm', cutover: '2026-12-01 02:00' }))).stderr),
    'spec.cutover must be an RFC 3339 time such as 2026-12-01T02:00:00Z (got "2026-12-01 02:00"); leave it out to cut over only once you set it',
  );
  assert.equal(
    denial((await applyAsTenant(task('cold-cutover', { cutover: '2026-12-01T02:00:00Z' }))).stderr),
    'spec.cutover applies to warm imports only (spec.mode: warm); a cold import powers each source VM off when its transfer starts, so there is no cutover to schedule',
  );
  assert.equal(denial((await applyAsTenant(task('hot', { mode: 'hot' }))).stderr), 'spec.mode must be cold or warm (got "hot"); leave it out for cold');
});

test('a tenant sets the cutover on a waiting warm task with the documented one-liner, may move it earlier, and may neither postpone nor remove it', async () => {
  assert.equal((await applyAsTenant(task('warm-open', { mode: 'warm' }))).code, 0);
  const before = Date.now();
  const now = await sh(docsCutoverNow('warm-open'), tenantKubeconfig);
  assert.equal(now.code, 0, now.stderr);
  const set = (await getTask('warm-open')).spec.cutover;
  assert.ok(set && Date.parse(set) >= Math.floor(before / 1000) * 1000 && Date.parse(set) <= Date.now(), `cutover set to the current time (got ${set})`);

  const later = new Date(Date.parse(set) + 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
  assert.equal(
    denial((await patchAsTenant('warm-open', { spec: { cutover: later } })).stderr),
    `spec.cutover may only be moved earlier: "${later}" is later than the scheduled "${set}"; a scheduled cutover can be brought forward (set it to the current time to cut over now) but not postponed`,
  );
  assert.equal(
    denial((await patchAsTenant('warm-open', { spec: { cutover: null } })).stderr),
    `spec.cutover cannot be removed once set (it is "${set}"): a cutover can be moved earlier but not cancelled or postponed; delete the task to abandon the import`,
  );
  const earlier = new Date(Date.parse(set) - 60_000).toISOString();
  const ok = await patchAsTenant('warm-open', { spec: { cutover: earlier } });
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal((await getTask('warm-open')).spec.cutover, earlier);
  assert.equal(
    denial((await patchAsTenant('warm-open', { spec: { mode: 'cold' } })).stderr),
    'spec.mode is immutable once the task is accepted (it is "warm"); delete this task and create a new one to import differently',
  );
});

test('once the status shows a VM cutting over, the cutover no longer moves, while status writes still pass', async () => {
  const at = new Date(Date.now() + 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
  assert.equal((await applyAsTenant(task('warm-cutting', { mode: 'warm', cutover: at }))).code, 0);
  const off = new Date().toISOString();
  await client.patch(GVRs.VMImportTask, ns, 'warm-cutting', { status: { phase: 'Transferring', vms: [{ id: 'vm-201', name: 'erp-01', phase: 'Transferring', timestamps: { sourcePoweredOff: off } }] } }, 'merge', { subresource: 'status' });
  assert.equal(
    denial((await patchAsTenant('warm-cutting', { spec: { cutover: new Date().toISOString() } })).stderr),
    `spec.cutover cannot change: cutover has started (the source of VM "erp-01" was powered off at ${off}), so the source VMs are being powered off for the final copy`,
  );
  await client.patch(GVRs.VMImportTask, ns, 'warm-cutting', { status: { phase: 'Failed', completedAt: new Date().toISOString() } }, 'merge', { subresource: 'status' });
  assert.equal(denial((await patchAsTenant('warm-cutting', { spec: { cutover: new Date().toISOString() } })).stderr), 'spec.cutover cannot change: the task has ended');
});
