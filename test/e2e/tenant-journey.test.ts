// Every step the README and docs/operations.md give a tenant, run with kubectl as a tenant holding only
// Cozystack's tenant-admin role (test/fixtures/cozystack-tenant-roles.yaml) with the chart's tenant roles
// aggregated into it: find VM ids, follow progress, diagnose a stall, find a VM's disks and discard it.
// Those roles grant no ConfigMaps, claims, DataVolumes or volumes, so nothing documented may need them.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { VMImportSource, VMImportTask } from '../../src/api/types.ts';
import { freshNamespace, kubectl, testEnv, waitFor, writeKubeconfig } from './env/index.ts';
import { applyAs, bootWorld, tenantWithRole, type BootedWorld } from './fixtures.ts';

const URL_VC = 'https://vcenter-journey.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  vms: [
    { id: 'vm-1', name: 'web01', disks: [{ capacityGiB: 2 }, { capacityGiB: 1 }] },
    { id: 'vm-2', name: 'hang01', disks: [{ capacityGiB: 16 }], faults: { stallTransferAtPercent: 30 } },
  ],
});

let booted: BootedWorld;
let ns: string;
let tenantKC: string;
/** kubectl as the tenant, in its namespace (the context's default). */
const asTenant = (args: string[]) => kubectl(args, { kubeconfig: tenantKC });

before(async () => {
  // A stall after 2 s of no progress (the default is 10 min).
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'tj-fast' }], sim: { mbPerSecond: 8192 }, controller: { extra: { taskStallAfterSeconds: 2 } } });
  ns = await freshNamespace('tenant-journey');
  await tenantWithRole(ns);
  const env = await testEnv();
  const tenant = env.tenants[0]!;
  tenantKC = join(env.dir, `tenant-journey-${ns}.kubeconfig`);
  writeKubeconfig(tenantKC, env.server, env.caPEM, tenant.name, tenant.token, ns);
  const s = await applyAs(tenantKC, ns, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name: 'vc' }, spec: { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } } });
  assert.equal(s.code, 0, s.stderr);
});

after(async () => {
  await booted?.shutdown();
});

test("a tenant finds the source's VM ids, names and folders in its status, where the ConfigMap is out of its reach", async () => {
  // Waited for as the admin, in process (a kubectl per observation cost a process start each); what the
  // tenant sees is then read with kubectl as the tenant.
  await waitFor('the inventory in the source status', async () => ((await booted.c.get(GVRs.VMImportSource, ns, 'vc')) as unknown as VMImportSource | undefined)?.status?.inventory?.vms?.length, { timeoutMs: 60_000 });
  const r = await asTenant(['get', 'vmimportsource', 'vc', '-o', 'jsonpath={range .status.inventory.vms[*]}{.id} {.name}{"\\n"}{end}']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().split('\n').sort(), ['vm-1 web01', 'vm-2 hang01']);
  const counts = await asTenant(['get', 'vmimportsource', 'vc', '-o', 'jsonpath={.status.inventory.total} {.status.inventory.listed} {.status.inventory.truncated}']);
  assert.equal(counts.stdout, '2 2 false');
  // The same list in a ConfigMap is unreadable with Cozystack's tenant roles.
  const cm = await asTenant(['get', 'configmap', 'vmimport-inventory-vc']);
  assert.notEqual(cm.code, 0);
  assert.match(cm.stderr, /forbidden/i);
});

test('a tenant follows a task to its end, then finds the VM and its disks by the task labels and discards them', async () => {
  const r = await applyAs(tenantKC, ns, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'web' }, spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1' }], storageClass: 'tj-fast' } });
  assert.equal(r.code, 0, r.stderr);
  const list = await asTenant(['get', 'vmimporttask']);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout.split('\n')[0]!, /SOURCE\s+MODE\s+PHASE\s+PROGRESS\s+ETA\s+READY/);
  const wait = await asTenant(['wait', '--for=condition=Finished', 'vmimporttask/web', '--timeout=90s']);
  assert.equal(wait.code, 0, wait.stderr);
  const perVM = await asTenant(['get', 'vmimporttask', 'web', '-o', 'jsonpath={range .status.vms[*]}{.id} {.phase} {.vmInstance}{"\\n"}{end}']);
  assert.equal(perVM.stdout.trim(), 'vm-1 Succeeded web01');

  // docs/operations.md: the VM's outputs, by the task's uid and the VM id.
  const uid = (await asTenant(['get', 'vmimporttask', 'web', '-o', 'jsonpath={.metadata.uid}'])).stdout;
  const sel = `forklift.cozystack.io/task-uid=${uid},forklift.cozystack.io/vm-id=vm-1`;
  const outputs = await asTenant(['get', 'vminstance,vmdisk', '-l', sel, '-o', 'name']);
  assert.equal(outputs.code, 0, outputs.stderr);
  assert.deepEqual(outputs.stdout.trim().split('\n').sort(), ['vmdisk.apps.cozystack.io/web01-disk-0', 'vmdisk.apps.cozystack.io/web01-disk-1', 'vminstance.apps.cozystack.io/web01']);
  const disks = await asTenant(['get', 'vmimporttask', 'web', '-o', 'jsonpath={range .status.vms[0].diskHandoffs[*]}{.vmDisk} {.handoff}{"\\n"}{end}']);
  assert.deepEqual(disks.stdout.trim().split('\n'), ['web01-disk-0 done', 'web01-disk-1 done']);
  // What Cozystack's console lists as the VM's disks: the VMDisk names, in source order.
  const names = await asTenant(['get', 'vmimporttask', 'web', '-o', 'jsonpath={.status.vms[0].disks}']);
  assert.deepEqual(JSON.parse(names.stdout), ['web01-disk-0', 'web01-disk-1']);
  const del = await asTenant(['delete', 'vminstance,vmdisk', '-l', sel, '--wait=false']);
  assert.equal(del.code, 0, del.stderr);
  await waitFor('the VM and its disks gone', async () => !(await booted.c.list(GVRs.VMInstance, ns, { labelSelector: sel })).items.length && !(await booted.c.list(GVRs.VMDisk, ns, { labelSelector: sel })).items.length);
  const left = await asTenant(['get', 'vminstance,vmdisk', '-l', sel, '-o', 'name']);
  assert.equal(left.code, 0, left.stderr);
  assert.equal(left.stdout.trim(), '');
  // The task itself goes too; its outputs were already the tenant's own.
  const delTask = await asTenant(['delete', 'vmimporttask', 'web', '--timeout=60s']);
  assert.equal(delTask.code, 0, delTask.stderr);
});

test("a tenant diagnoses a stall from the task alone: kubectl describe shows the VM Stalled and for how long, with no forbidden read", async () => {
  const r = await applyAs(tenantKC, ns, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'hang' }, spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-2' }], storageClass: 'tj-fast' } });
  assert.equal(r.code, 0, r.stderr);
  // Waited for as the admin, in process; the tenant then reads the reason with kubectl.
  await waitFor('the VM to be reported Stalled', async () => ((await booted.c.get(GVRs.VMImportTask, ns, 'hang')) as unknown as VMImportTask | undefined)?.status?.vms?.[0]?.reason === 'Stalled', { timeoutMs: 60_000 });
  const reason = await asTenant(['get', 'vmimporttask', 'hang', '-o', 'jsonpath={.status.vms[0].reason}']);
  assert.equal(reason.code, 0, reason.stderr);
  assert.equal(reason.stdout, 'Stalled');
  // Described until the stall shows there too: on a loaded machine the simulator's last progress write
  // before the hang can land after the first Stalled verdict and restart the 2 s stall clock once.
  const d = await waitFor('kubectl describe to show the VM Stalled', async () => {
    const x = await asTenant(['describe', 'vmimporttask', 'hang']);
    assert.equal(x.code, 0, x.stderr);
    return /Reason:\s+Stalled/.test(x.stdout) ? x : undefined;
  }, { timeoutMs: 60_000 });
  assert.doesNotMatch(d.stderr, /forbidden/i);
  assert.match(d.stdout, /Reason:\s+Stalled/);
  assert.match(d.stdout, /no progress for/);
  // What the stall message tells comes from objects the tenant cannot read itself.
  const pvc = await asTenant(['get', 'pvc']);
  assert.match(pvc.stderr, /forbidden/i);
  const events = await asTenant(['get', 'events', '--field-selector', 'involvedObject.kind=VMImportTask']);
  assert.equal(events.code, 0, events.stderr);
});
