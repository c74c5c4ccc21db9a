// The platform's transfer budget end to end, on the real API server with the simulator: tasks of two
// tenants importing from one vCenter share its ESXi host's budget; slots go round-robin across tenants (a
// 1-VM task of one tenant is admitted before another tenant's 10-VM backlog drains); a waiting VM is
// Queued with a message that names its host and the disks ahead of it and no other tenant's names; a
// queued task is deleted cleanly; and a leader change — the controller process killed right after it
// recorded an admission checkpoint, then right after a Migration's create — never admits past the budget.
//
// Admissions are observed the way an operator would: by watching Migrations. A Migration holds its slot
// until its VM's disk is copied (Forklift's own cost(), kubev2v/forklift v2.11.5
// pkg/controller/plan/scheduler/vsphere/scheduler.go: nothing once the VM is past the copy, else its
// disks less those whose transfer task is Completed); every VM here has one disk.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import { Informer } from '../../src/runtime/informer.ts';
import type { VMImportTask, VMStatus } from '../../src/api/types.ts';
import { LABEL_TASK, LABEL_VM_ID } from '../../src/api/labels.ts';
import { REPO_ROOT, freshNamespace, kubectl, waitFor } from './env/index.ts';
import { VDDK_IMAGE, bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';
import { ENV_KILL_AFTER_ADMISSION } from './kill-after-admission.ts';

const URL_VC = 'https://vcenter-campaign.example.com/sdk';
/** Disks in transfer at once on the host, every tenant together. */
const BUDGET = 2;
const GiB = 2 ** 30;
/**
 * 8 GiB/s: tenant A's 48 GiB disks copy in about 6 s each, two at a time, so its backlog of ten lasts
 * about 30 s: long enough for tenant B to arrive and queue, and for A's last VM to wait past the stall limit.
 */
const MB_PER_SECOND = 8192;
const A_GIB = 48;
const BIG_GIB = 192;
const SMALL_GIB = 4;
/** The stall limit the controller runs with: a Queued VM waits longer than this without being called Stalled. */
const STALL_SECONDS = 8;
const CLASS = 'campaign-fast';

const ids = (from: number, n: number): string[] => Array.from({ length: n }, (_, i) => `vm-${from + i}`);
const A_VMS = ids(101, 10);
const B_VMS = ids(201, 1);
const D_VMS = ids(301, 2);
const F_VMS = ids(311, 2);
const C_VMS = ids(401, 4);
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.31' }],
  vms: [
    ...A_VMS.map((id, i) => ({ id, name: `a${i}`, disks: [{ capacityGiB: A_GIB }] })),
    ...B_VMS.map((id, i) => ({ id, name: `b${i}`, disks: [{ capacityGiB: SMALL_GIB }] })),
    ...D_VMS.map((id, i) => ({ id, name: `d${i}`, disks: [{ capacityGiB: SMALL_GIB }] })),
    ...F_VMS.map((id, i) => ({ id, name: `f${i}`, disks: [{ capacityGiB: BIG_GIB }] })),
    ...C_VMS.map((id, i) => ({ id, name: `c${i}`, disks: [{ capacityGiB: 32 }] })),
  ],
});

let booted: BootedWorld;
let c: KubeClient;

/** Every Migration seen, in the order their creations arrived, and the slots held after each event. */
const observed = { order: [] as string[], holding: new Map<string, boolean>(), maxByNamespaces: [] as Array<{ namespaces: Set<string>; max: number }> };
let migrations: Informer;

/** A Migration's VM still holds its slot: not past the copy, its disk's transfer not Completed. */
function holds(m: KubeObject): boolean {
  if (m.metadata?.deletionTimestamp) return true;
  const vm = ((m.status as { vms?: Array<Record<string, unknown>> } | undefined)?.vms ?? [])[0] as
    | { phase?: string; completed?: string; pipeline?: Array<{ name?: string; phase?: string; tasks?: Array<{ phase?: string }> }> }
    | undefined;
  if (!vm) return true;
  if (vm.completed || ['CreateVM', 'PostHook', 'Completed'].includes(vm.phase ?? '')) return false;
  const step = (vm.pipeline ?? []).find((s) => s.name === 'DiskTransfer');
  if (step?.phase === 'Completed') return false;
  return !(step?.tasks?.length && step.tasks.every((t) => t.phase === 'Completed'));
}

function note(m: KubeObject, gone = false): void {
  const key = `${m.metadata?.namespace}/${m.metadata?.name}`;
  if (!observed.holding.has(key) && !gone) observed.order.push(key);
  if (gone) observed.holding.delete(key);
  else observed.holding.set(key, holds(m));
  for (const w of observed.maxByNamespaces) {
    let n = 0;
    for (const [k, h] of observed.holding) if (h && w.namespaces.has(k.split('/')[0]!)) n++;
    w.max = Math.max(w.max, n);
  }
}

/** From now on, the most slots held at once by the Migrations of these namespaces. */
function peakOf(...namespaces: string[]): { readonly max: number } {
  const w = { namespaces: new Set(namespaces), max: 0 };
  observed.maxByNamespaces.push(w);
  return w;
}

before(async () => {
  booted = await bootWorld({
    worlds: [world],
    storageClasses: [{ name: CLASS, reclaimPolicy: 'Delete' }],
    sim: { mbPerSecond: MB_PER_SECOND },
    controller: { extra: { transferMaxDisksPerHost: BUDGET, taskStallAfterSeconds: STALL_SECONDS } },
  });
  c = booted.c;
  migrations = new Informer(c, GVRs.Migration);
  migrations.addHandlers({ add: (m) => note(m), update: (_o, m) => note(m), delete: (m) => note(m, true) });
  migrations.start();
  await migrations.waitForSync();
});

after(async () => {
  await migrations?.stop();
  await booted?.shutdown();
});

async function tenant(prefix: string): Promise<string> {
  const ns = await freshNamespace(prefix);
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  return ns;
}

async function createTask(ns: string, name: string, vms: string[]): Promise<VMImportTask> {
  return (await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name, namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: CLASS, vms: vms.map((id) => ({ id })) } } as KubeObject)) as unknown as VMImportTask;
}

const getTask = async (ns: string, name: string): Promise<VMImportTask | undefined> => (await c.get(GVRs.VMImportTask, ns, name)) as unknown as VMImportTask | undefined;
const vmOf = (t: VMImportTask | undefined, id: string): VMStatus | undefined => t?.status?.vms?.find((v) => v.id === id);
const migrationsIn = (ns: string): string[] => observed.order.filter((k) => k.startsWith(`${ns}/`));
/** The position in the order of creations of the Migration of VM `id` of the task in `ns`. */
const createdAt = (ns: string, id: string): number => observed.order.findIndex((k) => k.startsWith(`${ns}/`) && k.endsWith(`-${id}`));

async function waitPhase(ns: string, name: string, phase: string, timeoutMs = 180_000): Promise<VMImportTask> {
  return await waitFor(`task ${ns}/${name} ${phase}`, async () => {
    const t = await getTask(ns, name);
    return t?.status?.phase === phase ? t : undefined;
  }, { timeoutMs });
}

test('two tenants importing from one vCenter share its host’s budget, and a 1-VM task of tenant B is admitted before tenant A’s 10-VM backlog drains', async () => {
  const [nsA, nsB] = [await tenant('budget-a'), await tenant('budget-b')];
  const peak = peakOf(nsA, nsB);
  await createTask(nsA, 'campaign', A_VMS);
  // The host's two slots go to two of A's VMs (in spec.vms order among those whose Plans are ready); the others wait Queued.
  // A VM admitted whose Migration is not created yet is still phase Queued, its message saying it is admitted.
  let last: VMImportTask | undefined;
  const waitingIn = (t: VMImportTask | undefined): VMStatus[] => (t?.status?.vms ?? []).filter((v) => v.phase === 'Queued' && / ahead of it /.test(v.message ?? ''));
  const a = await waitFor('tenant A: two VMs admitted, eight Queued in their place', async () => {
    last = await getTask(nsA, 'campaign');
    return [...observed.holding].filter(([k, h]) => h && k.startsWith(`${nsA}/`)).length === BUDGET && waitingIn(last).length === A_VMS.length - BUDGET ? last : undefined;
  }, { timeoutMs: 60_000 }).catch((e: Error) => assert.fail(`${e.message}: ${JSON.stringify(last?.status?.vms?.map((v) => [v.id, v.phase, v.reason, v.message]))}`));
  const queuedA = waitingIn(a);
  const lastA = queuedA[queuedA.length - 1]!;
  assert.match(lastA.message ?? '', new RegExp(`^Waiting for 1 disk of transfer slots on ESXi host .+, which transfers 2 disks of its budget of 2: ${queuedA.length - 1} disks? ahead of it in this namespace, ${queuedA.length - 1} disks? in total\\.$`));
  assert.ok(lastA.transferSlot?.vcenter && !lastA.transferSlot.admittedAt, 'a Queued VM has its place recorded, not its admission');
  assert.equal(a.status?.phase, 'Queued');

  await createTask(nsB, 'one', B_VMS);
  const b = await waitFor('tenant B’s VM Queued', async () => {
    const t = await getTask(nsB, 'one');
    return vmOf(t, 'vm-201')?.phase === 'Queued' ? t : undefined;
  }, { timeoutMs: 60_000 });
  // From here on, the next slot freed on the host is B's, whatever A has queued.
  const aBefore = migrationsIn(nsA).length;
  const msg = vmOf(b, 'vm-201')!.message ?? '';
  assert.match(msg, /^Waiting for 1 disk of transfer slots on ESXi host .+: 0 disks ahead of it in this namespace, 0 disks in total\.$/, 'nothing goes before the small tenant’s VM');
  for (const other of [nsA, 'campaign', ...A_VMS, 'a0', 'a9']) assert.ok(!msg.includes(other), `the message names nothing of tenant A (${other}): ${msg}`);

  // Queued is not Stalled: A's last VM, queued past the stall limit, is still Queued, reason Queued.
  const waited = await waitFor('a VM of tenant A queued past the stall limit', async () => {
    const v = vmOf(await getTask(nsA, 'campaign'), lastA.id);
    if (v?.phase !== 'Queued') return { v };
    return Date.now() - Date.parse(v.transferSlot?.queuedAt ?? '') > (STALL_SECONDS + 2) * 1000 ? { v } : undefined;
  }, { timeoutMs: 60_000 });
  assert.equal(waited.v?.phase, 'Queued', `A's last VM left the queue before the stall limit passed: ${JSON.stringify(waited.v)}`);
  assert.equal(waited.v?.reason, 'Queued');

  // Meanwhile tenant A's task tells its bytes, its rate and an ETA that covers its queued VMs.
  const withETA = await waitFor('tenant A’s whole-task ETA', async () => {
    const t = await getTask(nsA, 'campaign');
    // While two VMs move bytes (between one VM's copy and the next's first progress, the rate now is 0).
    return t?.status?.transfer?.etaSeconds !== undefined && t.status.transfer.bytesDone > 0 && t.status.transfer.bytesPerSecond > 0 && (t.status.vms ?? []).some((v) => v.phase === 'Queued') ? t : undefined;
  }, { timeoutMs: 60_000 });
  assert.equal(withETA.status!.transfer!.bytesTotal, 10 * A_GIB * GiB);
  assert.ok(withETA.status!.transfer!.etaSeconds! > 0);
  const get = await kubectl(['get', 'vmimporttask', '-n', nsA, 'campaign']);
  assert.match(get.stdout.split('\n')[0] ?? '', /\bETA\b/, get.stdout);

  await waitPhase(nsB, 'one', 'Succeeded');
  await waitPhase(nsA, 'campaign', 'Succeeded', 240_000);
  const bAt = createdAt(nsB, 'vm-201');
  const aAfter = migrationsIn(nsA).slice(aBefore).map((k) => observed.order.indexOf(k));
  assert.ok(aAfter.length > 0, 'A still had a backlog when B arrived');
  assert.ok(bAt >= 0 && aAfter.every((i) => i > bAt), `B's Migration is created before any of A's after B queued: ${observed.order.join(', ')}`);
  assert.equal(peak.max, BUDGET, 'the budget is used, never passed');
});

test('a Queued task is deleted at once: its VMs get no Migration, its Plans go, and the tasks transferring keep their slots', async () => {
  const [nsF, nsD] = [await tenant('budget-f'), await tenant('budget-d')];
  const peak = peakOf(nsF, nsD);
  await createTask(nsF, 'holder', F_VMS);
  await waitFor('tenant F holds both slots', () => migrationsIn(nsF).length === 2 || undefined, { timeoutMs: 60_000 });
  await createTask(nsD, 'waiting', D_VMS);
  await waitFor('tenant D’s VMs Queued', async () => ((await getTask(nsD, 'waiting'))?.status?.vms ?? []).every((v) => v.phase === 'Queued') || undefined, { timeoutMs: 60_000 });
  await c.delete(GVRs.VMImportTask, nsD, 'waiting');
  await waitFor('the queued task is gone', async () => !(await getTask(nsD, 'waiting')) || undefined, { timeoutMs: 30_000 });
  assert.deepEqual((await c.list(GVRs.Plan, nsD)).items.map((p) => p.metadata?.name), [], 'its Plans are deleted with it');
  assert.deepEqual(migrationsIn(nsD), [], 'no Migration was ever created for a queued VM');
  const f = await getTask(nsF, 'holder');
  assert.ok(F_VMS.every((id) => vmOf(f, id)?.phase === 'Transferring' || vmOf(f, id)?.phase === 'Creating' || vmOf(f, id)?.phase === 'Succeeded'), JSON.stringify(f?.status?.vms));
  await c.delete(GVRs.VMImportTask, nsF, 'holder');
  await waitFor('the holder task is gone', async () => !(await getTask(nsF, 'holder')) || undefined, { timeoutMs: 60_000 });
  assert.ok(peak.max <= BUDGET);
});

interface Proc {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output: () => string;
}

/** The controller as its own process, with the admission kill points preloaded. */
function controllerProcess(kill?: string): Proc {
  const child = spawn(
    process.execPath,
    [
      '--import', pathToFileURL(join(REPO_ROOT, 'test/e2e/kill-after-admission.ts')).href,
      join(REPO_ROOT, 'src/main.ts'),
      '--kubeconfig', booted.env.admin.kubeconfigPath,
      '--leader-elect=false',
      '--health-port', '0',
      '--metrics-port', '0',
      '--webhook-port', '0',
      '--vddk-image', VDDK_IMAGE,
      '--inventory-url', booted.sim.inventory.url,
      '--log-level', 'warn',
      '--transfer-max-disks-per-host', String(BUDGET),
    ],
    { cwd: REPO_ROOT, env: { ...process.env, ...(kill ? { [ENV_KILL_AFTER_ADMISSION]: kill } : {}) }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
  return { child, exited, output: () => out.slice(-4000) };
}

/** How the process ended, or undefined if it still runs after `ms` (a deadline, not a synchronisation). */
async function exitWithin(p: Proc, ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null } | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<undefined>((res) => (timer = setTimeout(() => res(undefined), ms)));
  try {
    return await Promise.race([p.exited, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

async function stopProcess(p: Proc): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGTERM');
  const t = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
  await p.exited;
  clearTimeout(t);
}

const admittedIn = (t: VMImportTask | undefined): string[] => (t?.status?.vms ?? []).filter((v) => v.transferSlot?.admittedAt).map((v) => v.id);

test('a controller killed right after recording an admission, then right after a Migration’s create, is followed by leaders that never admit past the budget', async () => {
  const nsC = await tenant('budget-crash');
  // The rest of this test runs the controller as its own process, one at a time.
  await booted.ctl.stop();
  const peak = peakOf(nsC);
  const task = await createTask(nsC, 'crash', C_VMS);
  const uid = task.metadata.uid!;

  const p1 = controllerProcess(`record:${uid}`);
  const e1 = await exitWithin(p1, 90_000);
  if (!e1) await stopProcess(p1);
  assert.equal(e1?.signal, 'SIGKILL', `the first controller was to die after recording the admission: ${p1.output()} — ${JSON.stringify((await getTask(nsC, 'crash'))?.status?.vms?.map((v) => [v.id, v.phase, v.message]))}`);
  // Admitted as their Plans turned ready: at least one, never more than the budget, and no Migration yet.
  const afterRecord = await getTask(nsC, 'crash');
  const first = admittedIn(afterRecord);
  assert.ok(first.length >= 1 && first.length <= BUDGET, JSON.stringify(afterRecord?.status?.vms));
  assert.deepEqual((await c.list(GVRs.Migration, nsC)).items, [], 'killed after the checkpoint, before any Migration');

  const p2 = controllerProcess(`migration:${uid}`);
  const e2 = await exitWithin(p2, 90_000);
  if (!e2) await stopProcess(p2);
  assert.equal(e2?.signal, 'SIGKILL', `the second controller was to die after a Migration's create: ${p2.output()}`);
  // The pass creates its VMs' Migrations a few at once: siblings already sent when the first answered
  // land too. Each belongs to a VM admitted before it, and none passes the budget.
  const made = (await c.list(GVRs.Migration, nsC)).items;
  const second = admittedIn(await getTask(nsC, 'crash'));
  assert.ok(made.length >= 1 && made.length <= BUDGET, `Migrations made: ${made.map((m) => m.metadata?.name).join(', ')}`);
  for (const m of made) assert.ok(second.includes(m.metadata?.labels?.[LABEL_VM_ID] ?? ''), `Migration ${m.metadata?.name} of a VM admitted before it (${second})`);
  assert.ok(first.every((id) => second.includes(id)) && second.length <= BUDGET, `the checkpoints stand and nothing passes the budget: ${second}`);

  const p3 = controllerProcess();
  try {
    await waitPhase(nsC, 'crash', 'Succeeded', 180_000);
  } finally {
    await stopProcess(p3);
  }
  assert.deepEqual(migrationsIn(nsC).length, C_VMS.length);
  assert.ok(peak.max <= BUDGET, `slots held at once by the leaders' Migrations: ${peak.max}`);
  assert.equal(peak.max, BUDGET);
  // Each Migration's owner is the crash task; the label names it.
  for (const m of (await c.list(GVRs.Migration, nsC)).items) assert.equal(m.metadata?.labels?.[LABEL_TASK], 'crash');
});
