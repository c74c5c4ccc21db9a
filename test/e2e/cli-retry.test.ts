// `kubectl vmimport watch` and `retry` after a partial failure, as a tenant bound only to Cozystack's
// tenant roles, against the real API server and the simulator: watch exits 1 naming the failures; retry
// makes a new task of only the VM a retry can import (same options, a derived name, a back-link), leaving
// out the VM that succeeded and the one whose output now exists, each with why; the retried VM is then
// imported and watch exits 0.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportSource, VMImportTask } from '../../src/api/types.ts';
import { ANNOTATION_RETRY_OF } from '../../src/api/labels.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { applyAs, bootWorld, type BootedWorld } from './fixtures.ts';
import { show, tenantKubeconfig, vmimport } from './cli-plugin.ts';

const URL_VC = 'https://vcenter-cli-retry.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  vms: [
    { id: 'vm-301', name: 'good-01', disks: [{ capacityGiB: 2 }] },
    { id: 'vm-302', name: 'flaky-01', disks: [{ capacityGiB: 2 }], faults: { failTransferAtPercent: 50 } },
    { id: 'vm-303', name: 'gone-01', disks: [{ capacityGiB: 1 }], faults: { failTransferAtPercent: 50 } },
    // A transfer that stops moving and never ends: a task that stays running.
    { id: 'vm-304', name: 'hang-01', disks: [{ capacityGiB: 2 }], faults: { stallTransferAtPercent: 30 } },
  ],
});

let booted: BootedWorld;
let c: KubeClient;
let ns: string;
let tenant: string;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'retry-fast' }], sim: { mbPerSecond: 4096 } });
  c = booted.c;
  ns = await freshNamespace('cli-retry');
  tenant = await tenantKubeconfig(ns);
  const s = await applyAs(tenant, ns, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name: 'vc' }, spec: { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } } });
  assert.equal(s.code, 0, s.stderr);
  await waitFor('the source to publish its inventory', async () => ((await c.get(GVRs.VMImportSource, ns, 'vc')) as unknown as VMImportSource | undefined)?.status?.inventory?.total === 4, { timeoutMs: 60_000 });
});

after(async () => {
  await booted?.shutdown();
});

const getTask = async (name: string): Promise<VMImportTask | undefined> => (await c.get(GVRs.VMImportTask, ns, name)) as unknown as VMImportTask | undefined;

test('watch exits 1 when a VM failed, naming each failure and the retry; retry then imports only the VM a retry can fix, and watch exits 0 on it', async () => {
  const made = await vmimport(tenant, ['create', 'batch', '--source', 'vc', '--vm', 'good-01', '--vm', 'flaky-01', '--vm', 'gone-01', '--storage-class', 'retry-fast', '--network', 'network-1=pod']);
  assert.equal(made.code, 0, show(made));

  const failed = await vmimport(tenant, ['watch', 'batch', '--timeout', '3m'], { timeoutMs: 200_000 });
  assert.equal(failed.code, 1, show(failed));
  assert.match(failed.stdout, /flaky-01 +Failed .*TransferFailed: /);
  assert.match(failed.stdout, /good-01 +Succeeded .*done, downtime \d+s/);
  assert.match(failed.stdout, /batch: 2 of 3 VMs failed: (flaky-01 \(TransferFailed\), gone-01 \(TransferFailed\)|gone-01 \(TransferFailed\), flaky-01 \(TransferFailed\)); retry them with kubectl vmimport retry batch\n$/);

  // What a tenant does between the runs: flaky-01's cause is fixed (the fault cleared), and a VMInstance
  // named gone-01 now exists (made by hand): a retry of gone-01 would fail on it.
  booted.sim.world(URL_VC).vm('vm-302')!.faults = {};
  await c.create(GVRs.VMInstance, { apiVersion: 'apps.cozystack.io/v1alpha1', kind: 'VMInstance', metadata: { name: 'gone-01', namespace: ns }, spec: { runStrategy: 'Halted' } } as KubeObject);

  const dry = await vmimport(tenant, ['retry', 'batch', '--dry-run=client', '-o', 'json']);
  assert.equal(dry.code, 0, show(dry));
  assert.equal(await getTask('batch-retry-1'), undefined, 'a client dry run creates nothing');

  const retried = await vmimport(tenant, ['retry', 'batch']);
  assert.equal(retried.code, 0, show(retried));
  assert.equal(retried.stdout, 'vmimporttask.forklift.cozystack.io/batch-retry-1 created: retrying 1 of 3 VMs of batch (vm-302)\n');
  assert.match(retried.stderr, /^left out: good-01 \(vm-301\) succeeded$/m);
  assert.match(retried.stderr, /^left out: gone-01 \(vm-303\) failed \(TransferFailed\) but its outputs exist: vminstance\/gone-01; a retry would fail with OutputExists: delete them first, then retry$/m);
  const task = (await getTask('batch-retry-1'))!;
  const old = (await getTask('batch'))!;
  assert.deepEqual(task.spec.vms, [{ id: 'vm-302' }]);
  // The dry run printed what was then created (the API server defaults the mode of a task that names none).
  assert.deepEqual({ mode: 'cold', ...JSON.parse(dry.stdout).spec }, task.spec);
  assert.equal(task.metadata.annotations?.[ANNOTATION_RETRY_OF], 'batch');
  // The same options: source, storage class, networks, mode.
  assert.deepEqual([task.spec.sourceRef, task.spec.storageClass, task.spec.networks, task.spec.mode], [old.spec.sourceRef, old.spec.storageClass, old.spec.networks, old.spec.mode]);

  const ok = await vmimport(tenant, ['watch', 'batch-retry-1', '--timeout', '3m'], { timeoutMs: 200_000 });
  assert.equal(ok.code, 0, show(ok));
  assert.match(ok.stdout, /flaky-01 +Succeeded .*done, downtime \d+s/);
  assert.match(ok.stdout, /batch-retry-1: all 1 VM imported\n$/);
  assert.ok(await c.get(GVRs.VMInstance, ns, 'flaky-01'), 'the retried VM was imported');

  // Nothing left that a retry can import: the command says so and creates nothing.
  const none = await vmimport(tenant, ['retry', 'batch-retry-1']);
  assert.equal(none.code, 1, show(none));
  assert.match(none.stderr, /left out: flaky-01 \(vm-302\) succeeded\nerror: task batch-retry-1 has no failed VM a retry can import/);

  // The report over both runs: each VM's outcome, and the totals.
  const j = JSON.parse((await vmimport(tenant, ['report', 'batch', 'batch-retry-1', '-o', 'json'])).stdout) as { rows: Array<{ task: string; id: string; outcome: string; reason: string }>; totals: Record<string, number> };
  assert.deepEqual(j.rows.map((r) => [r.task, r.id, r.outcome, r.reason]), [
    ['batch', 'vm-301', 'Succeeded', ''],
    ['batch', 'vm-302', 'Failed', 'TransferFailed'],
    ['batch', 'vm-303', 'Failed', 'TransferFailed'],
    ['batch-retry-1', 'vm-302', 'Succeeded', ''],
  ]);
  assert.deepEqual([j.totals.tasks, j.totals.vms, j.totals.succeeded, j.totals.failed], [2, 4, 2, 2]);
});

test('retry refuses a task that has not ended, pointing at watch', async () => {
  const made = await vmimport(tenant, ['create', 'running', '--source', 'vc', '--vm', 'hang-01', '--storage-class', 'retry-fast']);
  assert.equal(made.code, 0, show(made));
  await waitFor('the transfer to run', async () => (await getTask('running'))?.status?.vms?.[0]?.phase === 'Transferring', { timeoutMs: 60_000 });
  const r = await vmimport(tenant, ['retry', 'running']);
  assert.equal(r.code, 1, show(r));
  assert.match(r.stderr, /^error: task running has not ended \(phase Transferring\): only a finished task's failed VMs can be retried\nfix: wait for it with kubectl vmimport watch running\n$/);
  assert.deepEqual((await c.list(GVRs.VMImportTask, ns)).items.map((t) => t.metadata?.name).filter((n) => n?.startsWith('running')), ['running']);
});
