// Leader election between real controller processes (node src/main.ts) on the real API server's Lease.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeObject } from '../../src/runtime/kube.ts';
import { LEASE_DURATION_MS, RENEW_DEADLINE_MS, RETRY_PERIOD_MS } from '../../src/runtime/leader.ts';
import { REPO_ROOT, freshNamespace, installOurCRDs, testEnv, waitFor } from './env/index.ts';
import { adminClient } from './source-helpers.ts';

interface Proc {
  child: ChildProcess;
  metrics: Promise<string>;
  exited: Promise<number | null>;
}

function startProcess(kubeconfig: string, ns: string, lease: string): Proc {
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, 'src/main.ts'), '--kubeconfig', kubeconfig, '--leader-elect', '--lease-namespace', ns, '--lease-name', lease, '--namespace', ns, '--health-port', '0', '--metrics-port', '0', '--log-level', 'info'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const metrics = new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.on('line', (l) => {
      try {
        const rec = JSON.parse(l) as { msg?: string; metrics?: string };
        if (rec.msg === 'controller started' && rec.metrics) resolve(`${rec.metrics}/metrics`);
      } catch {
        /* not JSON */
      }
    });
    child.once('exit', () => reject(new Error('controller exited before starting')));
  });
  metrics.catch(() => undefined);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, metrics, exited };
}

async function isLeader(p: Proc): Promise<boolean> {
  const text = await (await fetch(await p.metrics)).text();
  return /^migration_controller_leader 1$/m.test(text);
}

async function holder(ns: string, name: string): Promise<string> {
  const c = await adminClient();
  try {
    const l = (await c.get(GVRs.Lease, ns, name)) as (KubeObject & { spec?: { holderIdentity?: string } }) | undefined;
    return l?.spec?.holderIdentity ?? '';
  } finally {
    c.close();
  }
}

const pidOf = (identity: string): number => Number(identity.split('_')[1]);

test('of two controller processes exactly one leads; SIGKILLing the leader hands over within the lease time; SIGTERM releases the lease', async () => {
  const env = await testEnv();
  await installOurCRDs();
  const ns = await freshNamespace('leader');
  const procs = [startProcess(env.admin.kubeconfigPath, ns, 'mc'), startProcess(env.admin.kubeconfigPath, ns, 'mc')];
  try {
    const first = await waitFor('a leader', async () => (await holder(ns, 'mc')) || undefined, { timeoutMs: 30_000 });
    const leader = procs.find((p) => p.child.pid === pidOf(first))!;
    const standby = procs.find((p) => p !== leader)!;
    assert.ok(leader, `the holder ${first} is one of our processes`);
    await waitFor('the leader reports leader=1', () => isLeader(leader));
    assert.equal(await isLeader(standby), false, 'the standby does not lead');

    const killedAt = Date.now();
    leader.child.kill('SIGKILL');
    await leader.exited;
    const next = await waitFor('the standby takes over', async () => {
      const h = await holder(ns, 'mc');
      return h && h !== first ? h : undefined;
    }, { timeoutMs: LEASE_DURATION_MS + 4 * RETRY_PERIOD_MS + 5_000 });
    const handover = Date.now() - killedAt;
    assert.equal(pidOf(next), standby.child.pid);
    assert.ok(handover <= LEASE_DURATION_MS + 2 * RETRY_PERIOD_MS + 1_000, `handed over in ${handover} ms`);
    await waitFor('the new leader reports leader=1', () => isLeader(standby));

    standby.child.kill('SIGTERM');
    assert.equal(await standby.exited, 0, 'a SIGTERM stops the controller cleanly');
    assert.equal(await holder(ns, 'mc'), '', 'a clean stop releases the lease');
  } finally {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  }
});

test('a leader whose lease is taken over stops reconciling and exits within the renew deadline', async () => {
  const env = await testEnv();
  await installOurCRDs();
  const ns = await freshNamespace('leader');
  const p = startProcess(env.admin.kubeconfigPath, ns, 'mc');
  try {
    await waitFor('it leads', async () => (await holder(ns, 'mc')) || undefined, { timeoutMs: 30_000 });
    const c = await adminClient();
    // Another party writes itself into the Lease (as after a partition the leader did not notice).
    const stealAt = Date.now();
    const l = (await c.get(GVRs.Lease, ns, 'mc')) as KubeObject & { spec: Record<string, unknown> };
    await c.replace(GVRs.Lease, { ...l, spec: { ...l.spec, holderIdentity: 'intruder', leaseDurationSeconds: 3600, renewTime: new Date().toISOString().replace('Z', '000Z').replace(/\.(\d{3})000Z$/, '.$1000Z') } });
    c.close();
    const code = await Promise.race([p.exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), RENEW_DEADLINE_MS + 3 * RETRY_PERIOD_MS + 5_000))]);
    assert.notEqual(code, 'timeout', 'the process exited');
    assert.equal(code, 1, 'exits non-zero so it restarts as a standby');
    assert.ok(Date.now() - stealAt <= RENEW_DEADLINE_MS + 3 * RETRY_PERIOD_MS + 1_000);
    assert.equal(await holder(ns, 'mc'), 'intruder', 'it did not take the lease back');
  } finally {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  }
});
