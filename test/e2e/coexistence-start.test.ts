// Two controllers must never reconcile the same objects: the controller process (node src/main.ts)
// refuses to start while Cozystack's own controller serves these kinds, with a message naming what it
// found and how to switch (src/cozystack/coexistence.ts; the chart's refusal is
// test/e2e/chart-coexistence.test.ts). That controller's traces as it leaves them: its leader-election
// Lease (controller-runtime's, named after its LeaderElectionID, cozystack/cozystack@052fa1764:
// cmd/migration-controller/main.go) and its finalizer on the tasks it served
// (api/migration/v1alpha1/vmimporttask_types.go, TaskFinalizer).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import { FINALIZER, UPSTREAM_TASK_FINALIZER } from '../../src/api/labels.ts';
import { REPO_ROOT, freshNamespace, installOurCRDs, testEnv, waitFor } from './env/index.ts';
import { adminClient } from './source-helpers.ts';

let c: KubeClient;
let ns = '';
let kubeconfig = '';
const LEASE = 'migration.cozystack.io';
const HOLDER = 'migration-controller-7d9f6c5b8-x2x4q_0b1c2d3e';
/** A controller process starts in about 20 s on a loaded test machine (Node.js loading the sources). */
const START_DEADLINE_MS = 90_000;
const STOP_DEADLINE_MS = 20_000;

before(async () => {
  const env = await testEnv();
  kubeconfig = env.admin.kubeconfigPath;
  await installOurCRDs();
  c = await adminClient();
  // The other controller ran in the namespace this one runs in (cozy-migration-controller for both);
  // here a namespace of this file's own, scoped so no other file's objects count.
  ns = await freshNamespace('coexist');
});

after(async () => {
  if (!c) return;
  const t = await c.get(GVRs.VMImportTask, ns, 'import-web-tier');
  if (t) await c.patch(GVRs.VMImportTask, ns, 'import-web-tier', { metadata: { finalizers: null } });
  await c.delete(GVRs.Namespace, undefined, ns);
  c.close();
});

interface Run {
  /** Resolves with the exit code, or 'started' once the controller logged that it started. */
  outcome: Promise<number | 'started'>;
  output: () => string;
  /** SIGTERM, then SIGKILL after STOP_DEADLINE_MS; the exit code, or null when it had to be killed. */
  stop(): Promise<number | null>;
}

function run(...extra: string[]): Run {
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, 'src/main.ts'), '--kubeconfig', kubeconfig, '--namespace', ns, '--pod-namespace', ns, '--lease-namespace', ns, '--leader-elect=false', '--health-port', '0', '--metrics-port', '0', '--log-level', 'info', ...extra],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  // A process that neither starts nor exits within the deadline fails the test with what it wrote.
  let deadline: NodeJS.Timeout | undefined;
  const outcome = new Promise<number | 'started'>((resolve, reject) => {
    deadline = setTimeout(() => reject(new Error(`the controller neither started nor exited within ${START_DEADLINE_MS} ms; output: ${out}`)), START_DEADLINE_MS);
    createInterface({ input: child.stdout }).on('line', (l) => {
      out += `${l}\n`;
      if (l.includes('"msg":"controller started"')) resolve('started');
    });
    void exited.then((code) => resolve(code ?? -1));
  }).finally(() => clearTimeout(deadline));
  return {
    outcome,
    output: () => out,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      let kill: NodeJS.Timeout | undefined;
      const code = await Promise.race([exited, new Promise<'hung'>((r) => (kill = setTimeout(() => r('hung'), STOP_DEADLINE_MS)))]);
      clearTimeout(kill);
      if (code !== 'hung') return code;
      // Not this file's subject (a stop right after start-up, while discovery still adds kinds, was seen
      // to take longer): the process is ended so the file does not leave it running.
      child.kill('SIGKILL');
      await exited;
      return null;
    },
  };
}

/** The fatal line main.ts writes when the start is refused. */
function refusal(r: Run): string {
  const line = r.output().split('\n').find((l) => l.includes('"controller failed to start"'));
  assert.ok(line, `a fatal line names the refusal; output: ${r.output()}`);
  return (JSON.parse(line) as { err: string }).err;
}

const lease = (renewTime: Date) => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name: LEASE, namespace: ns },
  spec: { holderIdentity: HOLDER, leaseDurationSeconds: 15, renewTime: renewTime.toISOString().replace('Z', '000Z') },
});

test("while the other controller's Lease is renewed, the controller exits non-zero naming the Lease and its holder, --take-over or not", async () => {
  await c.create(GVRs.Lease, lease(new Date()) as KubeObject);
  for (const flags of [[], ['--take-over']]) {
    const r = run(...flags);
    const code = await r.outcome;
    assert.equal(code, 1, `refused (${flags.join(' ') || 'no flags'}); output: ${r.output()}`);
    const why = refusal(r);
    assert.match(why, new RegExp(`its leader-election Lease ${ns}/migration\\.cozystack\\.io is held by "${HOLDER}" \\(renewed \\d+s ago\\)`));
    assert.match(why, /stop it first/);
    assert.match(why, /docs\/install\.md, "Switching from Cozystack's own controller"/);
  }
});

test("once that controller has stopped, tasks holding its finalizer refuse the start until --take-over; with it the controller runs and takes them over", async () => {
  // Stopped: controller-runtime leaves its Lease behind, last renewed when it stopped.
  const l = await c.get<KubeObject>(GVRs.Lease, ns, LEASE);
  await c.replace(GVRs.Lease, { ...l!, spec: lease(new Date(Date.now() - 10 * 60_000)).spec } as KubeObject);
  await c.create(GVRs.VMImportTask, {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name: 'import-web-tier', namespace: ns, finalizers: [UPSTREAM_TASK_FINALIZER] },
    spec: { sourceRef: { name: 'vcenter-prod' }, vms: [{ id: 'vm-1234', name: 'web-01' }], storageClass: 'replicated' },
  } as KubeObject);

  const refused = run();
  assert.equal(await refused.outcome, 1, refused.output());
  const why = refusal(refused);
  assert.match(why, new RegExp(`1 VMImportTask\\(s\\) hold the finalizer of Cozystack's own migration controller \\(forklift\\.cozystack\\.io/cleanup-transfer-volumes\\) and not this one's, for example ${ns}/import-web-tier`));
  assert.match(why, /start this controller with --take-over \(chart value coexistence\.takeOver=true\)/);

  const taking = run('--take-over');
  try {
    assert.equal(await taking.outcome, 'started', taking.output());
    // Taken over: the task holds this controller's finalizer beside the other one's.
    const t = await waitFor('the task taken over', async () => {
      const got = await c.get<KubeObject>(GVRs.VMImportTask, ns, 'import-web-tier');
      return got?.metadata?.finalizers?.includes(FINALIZER) ? got : undefined;
    }, { timeoutMs: 60_000 }).catch((e: Error) => {
      throw new Error(`${e.message}; controller output: ${taking.output().slice(-4000)}`);
    });
    assert.deepEqual([...(t.metadata?.finalizers ?? [])].sort(), [FINALIZER, UPSTREAM_TASK_FINALIZER].sort());
  } finally {
    await taking.stop();
  }

  // A task taken over no longer counts: a restart needs no --take-over.
  const again = run();
  try {
    assert.equal(await again.outcome, 'started', again.output());
  } finally {
    await again.stop();
  }
});
