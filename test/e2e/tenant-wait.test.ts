// A tenant holding only Cozystack's tenant-admin role (with the chart's roles aggregated into it) waits
// on a task's end with the README's one-liner: it returns at once on a failure, exiting non-zero, and
// exits zero on success. The one-liner is read from the README, so the documented text is what runs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { vcenter } from '../sim/index.ts';
import type { VMImportSource, VMImportTask } from '../../src/api/types.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeObject } from '../../src/runtime/kube.ts';
import { patchStatus } from '../../src/runtime/status.ts';
import { freshNamespace, kubectl, testEnv, waitFor, writeKubeconfig } from './env/index.ts';
import { applyAs, bootWorld, readmeOneLiner, tenantWithRole, type BootedWorld } from './fixtures.ts';

const URL_VC = 'https://vcenter-wait.example.com/sdk';
const world = vcenter({ url: URL_VC, vms: [{ id: 'vm-1', name: 'web01', disks: [{ capacityGiB: 2 }] }] });

let booted: BootedWorld;
let ns: string;
/** The tenant's kubeconfig with `ns` as its context namespace (the one-liner names none). */
let tenantKC: string;

function sh(script: string, timeoutMs: number): Promise<{ code: number | string; stdout: string; stderr: string }> {
  return new Promise((res) => {
    execFile('bash', ['-c', script], { env: { ...process.env, KUBECONFIG: tenantKC }, timeout: timeoutMs }, (err, stdout, stderr) => {
      const e = err as (Error & { code?: number | string; killed?: boolean }) | null;
      res({ code: e ? (e.killed ? 'killed' : (e.code ?? 1)) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'tw-fast' }, { name: 'tw-wffc', bindingMode: 'WaitForFirstConsumer' }] });
  ns = await freshNamespace('tenant-wait');
  const env = await testEnv();
  await tenantWithRole(ns);
  const tenant = env.tenants[0]!;
  tenantKC = join(env.dir, `tenant-wait-${ns}.kubeconfig`);
  writeKubeconfig(tenantKC, env.server, env.caPEM, tenant.name, tenant.token, ns);
  const s = await applyAs(tenantKC, ns, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name: 'vc' }, spec: { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } } });
  assert.equal(s.code, 0, s.stderr);
  // Waited for as the admin, in process (a kubectl per observation cost a process start each).
  await waitFor('the source to connect', async () => ((await booted.c.get(GVRs.VMImportSource, ns, 'vc')) as unknown as VMImportSource | undefined)?.status?.conditions?.find((c) => c.type === 'Ready')?.reason === 'Connected', { timeoutMs: 60_000 });
});

after(async () => {
  await booted?.shutdown();
});

const task = (name: string, storageClass: string) => ({ apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name }, spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1', name: `${name}-vm` }], storageClass } });

test("a failed task ends the README's wait at once, and the one-liner exits non-zero (as a tenant holding Cozystack's tenant-admin role)", async () => {
  const r = await applyAs(tenantKC, ns, task('doomed', 'tw-wffc'));
  assert.equal(r.code, 0, r.stderr);
  // A ten-minute wait that must end inside this test's one-minute budget: it ends on Finished=True.
  const out = await sh(readmeOneLiner('doomed', '10m'), 60_000);
  assert.equal(out.code, 1, `the one-liner should end and fail: ${JSON.stringify(out)}`);
  assert.match(out.stdout, /vmimporttask\.forklift\.cozystack\.io\/doomed condition met/);
  const got = (await booted.c.get(GVRs.VMImportTask, ns, 'doomed')) as unknown as VMImportTask;
  const finished = got.status?.conditions?.find((c) => c.type === 'Finished');
  assert.equal(finished?.status, 'True');
  assert.equal(finished?.reason, 'StorageClassWaitForFirstConsumer');
  // Waiting on Ready alone never ends on that failure: only its timeout stops it.
  const ready = await kubectl(['wait', '--for=condition=Ready', 'vmimporttask/doomed', '--timeout=2s'], { kubeconfig: tenantKC });
  assert.notEqual(ready.code, 0);
  assert.match(ready.stderr, /timed out/);
});

test("a successful task ends the README's wait with exit code 0 (as the same tenant)", async () => {
  const r = await applyAs(tenantKC, ns, task('fine', 'tw-fast'));
  assert.equal(r.code, 0, r.stderr);
  const out = await sh(readmeOneLiner('fine', '10m'), 120_000);
  assert.equal(out.code, 0, JSON.stringify(out));
  const got = (await booted.c.get(GVRs.VMImportTask, ns, 'fine')) as unknown as VMImportTask;
  assert.equal(got.status?.phase, 'Succeeded');
  assert.deepEqual(got.status?.conditions?.filter((c) => c.type === 'Finished' || c.type === 'Ready').map((c) => [c.type, c.status, c.reason]).sort(), [['Finished', 'True', 'Succeeded'], ['Ready', 'True', 'Succeeded']]);
});

test("a task that ended under a controller without the Finished condition gets it when this controller starts, so the README's wait ends for it too", async () => {
  // What an earlier controller left: a failed task whose status has Ready=False and no Finished.
  await booted.ctl.stop();
  const created = (await booted.c.create(GVRs.VMImportTask, { ...task('earlier', 'tw-fast'), metadata: { name: 'earlier', namespace: ns } } as KubeObject)) as KubeObject;
  await patchStatus(booted.c, GVRs.VMImportTask, created, {
    phase: 'Failed',
    completedAt: '2026-01-02T03:04:05Z',
    message: '1 of 1 VMs failed',
    conditions: [{ type: 'Ready', status: 'False', reason: 'TransferFailed', message: '1 of 1 VMs failed: earlier-vm (vm-1): TransferFailed', lastTransitionTime: '2026-01-02T03:04:05Z' }],
  });
  await booted.restartController();
  const out = await sh(readmeOneLiner('earlier', '10m'), 60_000);
  assert.equal(out.code, 1, `the one-liner should end and fail: ${JSON.stringify(out)}`);
  const got = (await booted.c.get(GVRs.VMImportTask, ns, 'earlier')) as unknown as VMImportTask;
  const finished = got.status?.conditions?.find((c) => c.type === 'Finished');
  assert.deepEqual([finished?.status, finished?.reason, finished?.lastTransitionTime], ['True', 'TransferFailed', '2026-01-02T03:04:05Z']);
  // A record: nothing else of it changed.
  assert.equal(got.status?.phase, 'Failed');
  assert.equal(got.status?.completedAt, '2026-01-02T03:04:05Z');
});
