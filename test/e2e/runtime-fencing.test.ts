// Fencing between two controller processes (node src/main.ts) on a private control plane that writes an
// audit log: the leader is frozen (SIGSTOP) in the middle of a multi-disk handoff, the standby takes the
// lease and finishes the import, then the first is thawed (SIGCONT). The audit log proves that the first
// made no write once its lease had expired — but the one it may have been putting on the wire at the
// instant it froze — and the import ends with exactly one of each output.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createStorageClass, startSim, vcenter, type Sim } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { LABEL_TASK_UID } from '../../src/api/labels.ts';
import { LEASE_DURATION_MS } from '../../src/runtime/leader.ts';
import { parseConfig } from '../../src/config.ts';
import { ControlPlane, REPO_ROOT, kubeConfigFor, loadYamlObjects, waitFor } from './env/index.ts';
import { installStandInCRDs } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-fencing.example.com/sdk';
const DISKS = 6;
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.41' }],
  vms: [{ id: 'vm-1', name: 'fence01', disks: Array.from({ length: DISKS }, (_, i) => ({ capacityGiB: 1 + i })) }],
});
const CLASS = 'fencing';

let cp: ControlPlane;
let sim: Sim;
let c: KubeClient;

before(async () => {
  // A private control plane: only it writes the audit log this test reads.
  cp = await ControlPlane.start({ auditLog: true, pvSyncPeriod: '1s' });
  c = new KubeClient(kubeConfigFor(cp.info.admin.kubeconfigPath), { fieldManager: 'e2e' });
  for (const o of loadYamlObjects(join(REPO_ROOT, 'crds'))) await c.patch(GVRs.CustomResourceDefinition, undefined, o.metadata!.name!, o, 'apply', { force: true });
  await installStandInCRDs(c);
  await waitFor('our CRDs served', async () => !!(await c.list(GVRs.VMImportTask, 'default').catch(() => undefined)));
  // The controller's own namespace (its credentials key lives there) exists wherever it runs.
  const own = parseConfig(['--kubeconfig', cp.info.admin.kubeconfigPath], {}).podNamespace;
  await c.create(GVRs.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: own } });
  await createStorageClass(cp.info.admin.kubeconfigPath, { name: CLASS, reclaimPolicy: 'Delete' });
  sim = await startSim({ kubeconfigPath: cp.info.admin.kubeconfigPath, worlds: [world], mbPerSecond: 65536 });
});

after(async () => {
  await sim?.stop();
  c?.close();
  await cp?.stop();
});

interface Proc {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output: () => string;
}

function controller(ns: string): Proc {
  const child = spawn(
    process.execPath,
    [
      join(REPO_ROOT, 'src/main.ts'),
      '--kubeconfig', cp.info.admin.kubeconfigPath,
      '--leader-elect', '--lease-namespace', ns, '--lease-name', 'mc',
      '--health-port', '0', '--metrics-port', '0', '--webhook-port', '0',
      '--vddk-image', 'registry.example.com/vddk:8.0.3',
      '--inventory-url', sim.inventory.url,
      '--log-level', 'warn',
    ],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-8000)));
  child.stderr?.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-8000)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
  return { child, exited, output: () => out };
}

const alive = (p: Proc): boolean => p.child.exitCode === null && p.child.signalCode === null;

async function holder(ns: string): Promise<string> {
  const l = (await c.get(GVRs.Lease, ns, 'mc')) as (KubeObject & { spec?: { holderIdentity?: string } }) | undefined;
  return l?.spec?.holderIdentity ?? '';
}

interface AuditEvent {
  stage: string;
  verb: string;
  userAgent?: string;
  requestURI: string;
  objectRef?: { resource?: string; name?: string; namespace?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

const WRITES = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

test('a leader frozen mid multi-disk handoff makes no write after its lease expired but the one it was sending, and the import ends with one of each output', { timeout: 240_000 }, async () => {
  const ns = `fencing-${Date.now().toString(36)}`;
  await c.create(GVRs.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  const procs = [controller(ns), controller(ns)];
  try {
    const first = await waitFor('a leader', async () => (await holder(ns)) || undefined, { timeoutMs: 60_000 });
    const leader = procs.find((p) => first.includes(`_${p.child.pid}_`))!;
    assert.ok(leader, `the holder ${first} is one of our processes`);
    const standby = procs.find((p) => p !== leader)!;

    await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
    await waitForReason(c, ns, 'vc', 'Connected', 60_000);
    await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 't', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: CLASS, vms: [{ id: 'vm-1' }] } } as KubeObject);

    // Freeze the leader as soon as the handoff has begun on some disk and not finished the last one.
    const task = (): Promise<VMImportTask | undefined> => c.get(GVRs.VMImportTask, ns, 't') as unknown as Promise<VMImportTask | undefined>;
    const midway = await waitFor('the handoff midway', async () => {
      const disks = (await task())?.status?.vms?.[0]?.diskHandoffs ?? [];
      const started = disks.filter((d) => d.handoff).length;
      return started > 0 && disks.filter((d) => d.handoff === 'done').length < DISKS ? disks : undefined;
    }, { timeoutMs: 120_000, intervalMs: 10 });
    leader.child.kill('SIGSTOP');
    const frozenAt = Date.now();
    try {
      const next = await waitFor('the standby takes the lease', async () => {
        const h = await holder(ns);
        return h && h !== first ? h : undefined;
      }, { timeoutMs: LEASE_DURATION_MS + 30_000 });
      assert.ok(next.includes(`_${standby.child.pid}_`), `the standby ${standby.child.pid} holds the lease (${next})`);
      // Let the new leader work a moment so both would be writing the same task if the first could.
      await waitFor('the new leader reconciles the task', async () => {
        const v = (await task())?.status?.vms?.[0];
        return v?.phase === 'Succeeded' || (v?.diskHandoffs ?? []).filter((d) => d.handoff).length > midway.filter((d) => d.handoff).length ? true : undefined;
      }, { timeoutMs: 60_000 });
    } finally {
      leader.child.kill('SIGCONT');
    }
    const thawedAt = Date.now();
    // Thawed, it finds its lease gone and exits non-zero (to restart as a standby).
    const ex = await Promise.race([leader.exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 30_000))]);
    assert.notEqual(ex, 'timeout', `the thawed leader exits (frozen for ${Date.now() - frozenAt} ms); output: ${leader.output()}`);
    assert.equal((ex as { code: number | null }).code, 1, 'it exits because it lost the lease');

    const t = await waitFor('the task Succeeded', async () => {
      const x = await task();
      return x?.status?.phase === 'Succeeded' ? x : undefined;
    }, { timeoutMs: 120_000 });
    // Exactly one of each output.
    const sel = { labelSelector: `${LABEL_TASK_UID}=${t.metadata.uid}` };
    assert.equal((await c.list(GVRs.VMDisk, ns, sel)).items.length, DISKS);
    assert.equal((await c.list(GVRs.VMInstance, ns, sel)).items.length, 1);
    assert.equal((await c.list(GVRs.DataVolume, ns, sel)).items.length, DISKS);
    assert.equal((await c.list(GVRs.PersistentVolumeClaim, ns, sel)).items.length, DISKS);

    // The audit log: the first leader's writes, and when its lease expired.
    const pid = `_${leader.child.pid}_`;
    const events = readFileSync(cp.info.auditLogPath!, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditEvent)
      .filter((e) => e.stage === 'ResponseComplete' && (e.userAgent ?? '').includes(pid));
    const ok = (e: AuditEvent): boolean => (e.responseStatus?.code ?? 0) < 300;
    const renewals = events.filter((e) => e.objectRef?.resource === 'leases' && e.objectRef.namespace === ns && WRITES.has(e.verb) && ok(e));
    assert.ok(renewals.length > 0, 'the first leader renewed its lease (and is named in the audit log)');
    const lastRenewal = Math.max(...renewals.map((e) => Date.parse(e.stageTimestamp)));
    const expiry = lastRenewal + LEASE_DURATION_MS;
    // The fence is asked right before a write goes on the wire, but a process can be frozen between that
    // answer and the system call that sends the bytes (SIGSTOP stops it at any instruction); thawed, it
    // finishes that one call before anything else runs. So at most one write, cleared while the lease was
    // held, may reach the API server after the expiry; a fence that did not hold lets the thawed process
    // go on writing from the reconciles it had in flight.
    const late = events.filter((e) => WRITES.has(e.verb) && Date.parse(e.requestReceivedTimestamp) >= expiry);
    assert.ok(
      late.length <= 1,
      `no write from the first leader after its lease expired at ${new Date(expiry).toISOString()}, but the one it may have been sending when it froze (frozen ${new Date(frozenAt).toISOString()}, thawed ${new Date(thawedAt).toISOString()}); its requests from the freeze on:\n` +
        events
          .filter((e) => Date.parse(e.stageTimestamp) >= frozenAt - 3000)
          .map((e) => `  ${e.verb} ${e.requestURI} -> ${e.responseStatus?.code} received ${e.requestReceivedTimestamp} answered ${e.stageTimestamp}`)
          .join('\n') +
        `\nits output:\n${leader.output()}`,
    );
    const writesWhileLeading = events.filter((e) => WRITES.has(e.verb) && e.objectRef?.resource !== 'leases' && ok(e));
    assert.ok(writesWhileLeading.length > 0, 'the first leader did write while it led (the audit log sees it)');
  } finally {
    for (const p of procs) {
      if (!alive(p)) continue;
      p.child.kill('SIGCONT');
      p.child.kill('SIGKILL');
      await p.exited;
    }
  }
});
