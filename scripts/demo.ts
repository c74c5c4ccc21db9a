// npm run demo — one command, a fresh machine, an import to watch.
//
// Starts a real local control plane (etcd + kube-apiserver + kube-controller-manager), the simulated
// vCenter / Forklift / CDI / KubeVirt / Cozystack engine of test/sim over it, the controller and its
// admission webhook in this process, then applies examples/ as a tenant would (kubectl with a tenant's
// kubeconfig) and shows the import live with the plugin, `kubectl vmimport watch` (src/plugin). Nothing of VMware or Forklift is real here; the Kubernetes
// API server, RBAC, admission and the PV binder are.
//
//   node scripts/demo.ts            # the demo; everything stops at the end
//   node scripts/demo.ts --keep     # leave the sandbox running and print KUBECONFIGs; Ctrl-C stops it
//   node scripts/demo.ts --fast     # transfer at full simulator speed (the e2e test of the demo)
//   node scripts/demo.ts --warm     # a warm import: precopies while the VMs run, then a cutover the demo asks for
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import YAML from 'yaml';
import { ControlPlane, findAssets, writeKubeconfig } from '../test/e2e/env/controlplane.ts';
import { createStorageClass, startSim, vcenter, type Sim } from '../test/sim/index.ts';
import { parseConfig } from '../src/config.ts';
import { runController, type RunningController } from '../src/app.ts';
import { createLogger } from '../src/telemetry/logger.ts';
import { KubeClient, type KubeObject } from '../src/runtime/kube.ts';
import { GVRs } from '../src/runtime/gvr.ts';
import type { VMImportTask } from '../src/api/types.ts';
import * as k8s from '@kubernetes/client-node';
import { formatBytes, formatDuration, formatQuantity, renderTable } from './demo/render.ts';
import { installPluginShims } from './demo/plugin.ts';
import { frame } from '../src/plugin/watch.ts';
import { REPO_ROOT, findKubectl, helmTemplate, run, tenantRoles, type Run } from './demo/tools.ts';

const args = new Set(process.argv.slice(2));
for (const a of args) {
  if (!['--keep', '--fast', '--warm', '--help', '-h'].includes(a)) {
    console.error(`unknown argument ${a}\nusage: node scripts/demo.ts [--keep] [--fast] [--warm]`);
    process.exit(2);
  }
}
if (args.has('--help') || args.has('-h')) {
  console.log('usage: node scripts/demo.ts [--keep] [--fast] [--warm]\n  --keep  leave the sandbox running and print its KUBECONFIGs (Ctrl-C stops it)\n  --fast  transfer at full simulator speed\n  --warm  import warm: precopies while the VMs run, then a cutover the demo sets with kubectl vmimport cutover');
  process.exit(0);
}
const KEEP = args.has('--keep');
const FAST = args.has('--fast') || process.env.DEMO_FAST === '1';
const WARM = args.has('--warm');

const NS = 'tenant-demo';
const TASK = WARM ? 'import-web-tier-warm' : 'import-web-tier';
const TASK_FILE = WARM ? 'task-warm.yaml' : 'task.yaml';
/**
 * Precopies every VM completes (the first copies whole disks, the next ones only changed blocks) before the
 * demo sets the cutover: two show the loop going round at least once after the initial copy.
 */
const PRECOPIES_BEFORE_CUTOVER = 2;
/**
 * Forklift's PRECOPY_INTERVAL as the simulator plays it, in ms (Forklift's default is 60 minutes): short
 * enough that the precopies tick by on screen; with --fast the simulator's own default.
 */
const PRECOPY_INTERVAL_MS = FAST ? 1000 : 4000;
const EXAMPLES = join(REPO_ROOT, 'examples');
/** How long the demo waits for the import to end before it reports it stuck (see where it is used). */
const IMPORT_DEADLINE_MS = 6 * 60_000;
const VCENTER_URL = 'https://vcenter.demo.example.com/sdk';
/**
 * Simulated transfer speed in MiB/s per disk (a VM's disks move in parallel). 1000 makes web-01 (16 GiB)
 * take ~16 s and db-01 (largest disk 24 GiB) ~25 s: long enough to watch the bars move, short enough
 * for a demo. A cold --fast run moves at 2048 (web-01 ~8 s, db-01 ~12 s): the plugin's bundle is built
 * before the task is applied, so `kubectl vmimport watch` draws its first frame a few seconds after the apply
 * even on a loaded machine, with both VMs still Transferring. (While the bundle was built after the
 * apply, a machine running the whole suite saw the first frame 21 s after it, and web-01 past its
 * transfer.) Faster still, db-01 could end before that frame. A warm run stays in Precopying until its
 * cutover, so a --fast one moves at 8192 (db-01's first precopy ~3 s): every frame before the cutover
 * reads Precopying whatever the speed, and the demo prints the frame it cut over on. At 2048 the first
 * precopy took ~12 s and, the guest's changes accruing per precopy interval meanwhile, the second copied
 * a quarter of each disk again: half the warm demo's wall was copying.
 */
const MB_PER_SECOND = FAST ? (WARM ? 8192 : 2048) : 1000;
/** The demo's VDDK reference: the simulator never pulls it, but without one a source is VDDKNotConfigured. */
const VDDK_IMAGE = 'registry.example.com/vddk:8.0.3';

const say = (s = ''): void => void process.stdout.write(`${s}\n`);
const step = (s: string): void => say(`\n==> ${s}`);

// Everything started, in reverse order of stopping.
let cp: ControlPlane | undefined;
let sim: Sim | undefined;
let ctl: RunningController | undefined;
let admin: KubeClient | undefined;
let stopping: Promise<void> | undefined;
/** `kubectl vmimport watch` processes running. */
const children = new Set<ChildProcess>();

function stopAll(): Promise<void> {
  stopping ??= (async () => {
    const quietly = async (f: () => Promise<unknown> | undefined): Promise<void> => {
      try {
        await f();
      } catch {
        /* best effort while tearing down */
      }
    };
    // The watches the demo started, by their pids.
    for (const ch of children) {
      try {
        if (ch.pid) process.kill(ch.pid, 'SIGTERM');
      } catch {
        /* already ended */
      }
    }
    await quietly(() => ctl?.stop());
    await quietly(() => sim?.stop());
    admin?.close();
    await quietly(() => cp?.stop());
  })();
  return stopping;
}

// Ctrl-C at any point: stop what was started, in order, then exit (the control plane's own hook would
// SIGKILL its processes; a graceful stop first lets the controller and simulator close their watches).
process.removeAllListeners('SIGINT');
process.removeAllListeners('SIGTERM');
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    say('\nstopping…');
    void stopAll().then(() => process.exit(sig === 'SIGINT' ? 130 : 143));
  });
}

async function kubectlAs(kubectl: string, kubeconfig: string, argv: string[], input?: string, timeoutMs?: number): Promise<Run> {
  return await run(kubectl, ['--kubeconfig', kubeconfig, ...argv], { input, timeoutMs });
}

function must(r: Run, what: string): string {
  if (r.code !== 0) throw new Error(`${what} failed (exit ${r.code}): ${r.stderr.trim() || r.stdout.trim()}`);
  return r.stdout;
}

async function waitUntil<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * What a stuck import looked like when the demo gave up: the task's conditions and VMs, Forklift's view
 * of each VM (the Plan's pipeline phase), and the controller's last log lines — enough to tell a stalled
 * engine from a stalled controller without the sandbox.
 */
async function stuckReport(client: KubeClient, task: VMImportTask | undefined, controllerLog: string): Promise<string> {
  const out: string[] = ['--- the task ---', JSON.stringify({ conditions: task?.status?.conditions, vms: task?.status?.vms }, null, 1)];
  try {
    for (const p of (await client.list(GVRs.Plan, NS)).items as Array<KubeObject & { status?: { conditions?: Array<{ type: string; status: string; message?: string }>; migration?: { vms?: Array<{ id: string; phase?: string; error?: unknown; warm?: { precopies?: unknown[] } }> } } }>) {
      out.push(`--- Plan ${p.metadata!.name} ---`, `conditions: ${(p.status?.conditions ?? []).map((c) => `${c.type}=${c.status}`).join(', ')}`);
      for (const v of p.status?.migration?.vms ?? []) out.push(`  ${v.id}: phase ${v.phase ?? '—'}, precopies ${v.warm?.precopies?.length ?? 0}${v.error ? `, error ${JSON.stringify(v.error)}` : ''}`);
    }
    for (const m of (await client.list(GVRs.Migration, NS)).items as Array<KubeObject & { spec?: { cutover?: string } }>) out.push(`--- Migration ${m.metadata!.name}: cutover ${m.spec?.cutover ?? '—'} ---`);
  } catch (e) {
    out.push(`(Forklift's objects could not be read: ${(e as Error).message})`);
  }
  try {
    out.push('--- the controller log, last 40 lines ---', ...readFileSync(controllerLog, 'utf8').trimEnd().split('\n').slice(-40));
  } catch {
    /* no log yet */
  }
  return out.join('\n');
}

async function main(): Promise<void> {
  const t0 = Date.now();
  say(`migration-controller demo: a tenant imports two vSphere VMs into Cozystack${WARM ? ', warm (precopies while they run, then a cutover)' : ''}.`);
  say('Real here: kube-apiserver, etcd, kube-controller-manager, RBAC, admission, the controller and its webhook.');
  say('Simulated (test/sim): vCenter, Forklift, CDI, KubeVirt and Cozystack\'s VMDisk/VMInstance API.');

  step('Prerequisites');
  const assets = findAssets(); // builds kube-apiserver/kube-controller-manager once per machine (~9 min) when missing
  say(`control-plane binaries: ${assets}`);
  const kubectl = findKubectl();
  say(`kubectl: ${kubectl}`);

  step('Starting a local control plane');
  cp = await ControlPlane.start({ startTimeoutMs: 120_000 });
  const info = cp.info;
  const adminKC = info.admin.kubeconfigPath;
  say(`kube-apiserver ${info.server} (Service CIDR ${info.serviceCIDR}); logs in ${info.logsDir}`);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(adminKC);
  admin = new KubeClient(kc);
  // The plugin's bundle is built now, not once the task is applied: the build takes seconds of CPU, and
  // made after the apply it delayed the watch's first frame while the disks were already moving (a --fast
  // run's transfer could end before the tenant saw it).
  const pluginPATH = `${installPluginShims(join(info.dir, 'plugin'))}:${dirname(kubectl)}:${process.env.PATH ?? ''}`;

  must(await kubectlAs(kubectl, adminKC, ['apply', '--server-side', '-f', join(REPO_ROOT, 'crds')]), 'installing the CRDs');
  // The controller's own namespace, as on Cozystack: its webhook probes the Service CIDR there.
  must(await kubectlAs(kubectl, adminKC, ['create', 'namespace', 'cozy-migration-controller']), 'creating namespace cozy-migration-controller');
  must(await kubectlAs(kubectl, adminKC, ['wait', '--for=condition=Established', 'crd/vmimportsources.forklift.cozystack.io', 'crd/vmimporttasks.forklift.cozystack.io', '--timeout=60s']), 'waiting for the CRDs');
  say('CRDs vmimportsources/vmimporttasks.forklift.cozystack.io established');

  step('Starting the simulated vCenter, Forklift, CDI, KubeVirt and Cozystack');
  // Like a stock Cozystack: `local` (WaitForFirstConsumer) is the default; `replicated` binds Immediate.
  await createStorageClass(adminKC, { name: 'local', bindingMode: 'WaitForFirstConsumer', isDefault: true });
  await createStorageClass(adminKC, { name: 'replicated', bindingMode: 'Immediate' });
  say('storage classes: local (WaitForFirstConsumer, default), replicated (Immediate)');
  const world = vcenter({
    url: VCENTER_URL,
    user: 'mtv-migration@vsphere.local',
    password: 'demo-password',
    hosts: [{ id: 'host-1', address: '192.0.2.10' }],
    vms: [
      // Warm needs changed block tracking on each VM (Forklift refuses a warm Plan without it).
      { id: 'vm-101', name: 'web-01', changeTrackingEnabled: WARM, disks: [{ capacityGiB: 16 }] },
      { id: 'vm-102', name: 'db-01', firmware: 'efi', changeTrackingEnabled: WARM, disks: [{ capacityGiB: 24 }, { capacityGiB: 8 }, { capacityGiB: 8 }] },
    ],
  });
  sim = await startSim({ kubeconfigPath: adminKC, worlds: [world], mbPerSecond: MB_PER_SECOND, ...(WARM ? { timings: { precopyIntervalMs: PRECOPY_INTERVAL_MS } } : {}) });
  say(`vCenter ${VCENTER_URL}: web-01 (vm-101, 1 disk, 16 GiB), db-01 (vm-102, 3 disks, 40 GiB); each disk moves at ${MB_PER_SECOND} MiB/s`);

  step('Starting the controller and its admission webhook');
  const controllerLog = join(info.logsDir, 'controller.log');
  const logger = createLogger({ level: process.env.MC_LOG_LEVEL ?? 'info', destination: createWriteStream(controllerLog) });
  // --webhook-mode local: the controller serves its admission webhook on 127.0.0.1 with an in-memory
  // certificate and registers both webhook configurations pointing at it (no Service, no pod network here).
  const cfg = parseConfig(
    ['--kubeconfig', info.controller.kubeconfigPath, '--leader-elect=false', '--health-port', '0', '--metrics-port', '0', '--webhook-mode', 'local', '--webhook-port', '0', '--vddk-image', VDDK_IMAGE, '--inventory-url', sim.inventory.url],
    {},
  );
  ctl = await runController(cfg, { logger });
  say(`controller: in-process, VDDK image ${VDDK_IMAGE}, metrics ${ctl.metricsURL}, log ${controllerLog}`);
  say(`webhook: ${ctl.webhookURL ?? '(not serving)'} (ValidatingWebhookConfiguration ${cfg.webhookValidatingConfiguration}, MutatingWebhookConfiguration ${cfg.webhookMutatingConfiguration})`);

  step(`Tenant namespace ${NS}`);
  const tenant = info.tenants[0]!;
  const tenantKC = join(info.dir, 'tenant-demo.kubeconfig');
  writeKubeconfig(tenantKC, info.server, info.caPEM, tenant.name, tenant.token, NS);
  const roles = tenantRoles(await helmTemplate());
  // The control plane carries Cozystack's own tenant roles (test/fixtures/cozystack-tenant-roles.yaml);
  // the chart's tenant ClusterRoles aggregate into them by label, and the tenant is bound to
  // cozy:tenant:admin as Cozystack binds a tenant admin: it holds what a tenant admin of the platform holds.
  const rbac = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    ...roles,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'cozy:tenant:admin', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cozy:tenant:admin' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: tenant.name }],
    },
  ];
  must(await kubectlAs(kubectl, adminKC, ['apply', '-f', '-'], rbac.map((o) => YAML.stringify(o)).join('---\n')), 'creating the tenant namespace and roles');
  say(`user ${tenant.name} is bound in ${NS} to Cozystack's cozy:tenant:admin, which aggregates the chart's ${roles.map((r) => (r.metadata as { name?: string }).name).join(', ')}`);
  // The aggregation controller fills the rules asynchronously: wait until the tenant may create a task.
  await waitUntil('the tenant role to be aggregated', 30_000, async () => {
    const r = await kubectlAs(kubectl, tenantKC, ['auth', 'can-i', 'create', 'vmimporttasks.forklift.cozystack.io', '-n', NS]);
    return r.stdout.trim() === 'yes' ? true : undefined;
  });

  step(`As the tenant: kubectl apply -f examples/source.yaml`);
  const sourceYaml = readFileSync(join(EXAMPLES, 'source.yaml'), 'utf8');
  const source = YAML.parse(sourceYaml) as { spec: { credentials: { caCert?: string } } };
  source.spec.credentials.caCert = world.caPEM;
  say("(its caCert placeholder is replaced by the simulated vCenter's CA certificate)");
  say(must(await kubectlAs(kubectl, tenantKC, ['apply', '-f', '-'], YAML.stringify(source)), 'applying examples/source.yaml').trim());
  const connected = await waitUntil('the source to become Ready', 60_000, async () => {
    const s = (await admin!.get(GVRs.VMImportSource, NS, 'vcenter-prod')) as (KubeObject & { status?: { conditions?: Array<{ type: string; status: string; reason: string; message: string }> } }) | undefined;
    const ready = s?.status?.conditions?.find((c) => c.type === 'Ready');
    return ready?.status === 'True' ? ready : undefined;
  });
  say(`vmimportsource/vcenter-prod Ready=True (${connected.reason}): ${connected.message}`);

  // The API server picks up new webhook configurations asynchronously: wait (as admin, server-side dry
  // run, which our CRD kinds honour) until a task on `local` is judged, so the tenant's attempt below is.
  await waitUntil('the admission webhook to be effective', 30_000, async () => {
    const r = await kubectlAs(kubectl, adminKC, ['apply', '--dry-run=server', '-f', join(EXAMPLES, 'task-wffc.yaml')]);
    return r.code !== 0 && /denied the request/.test(r.stderr) ? true : undefined;
  });

  step('Caught at admission: kubectl apply -f examples/task-wffc.yaml');
  const refused = await kubectlAs(kubectl, tenantKC, ['apply', '-f', join(EXAMPLES, 'task-wffc.yaml')]);
  if (refused.code === 0) throw new Error(`examples/task-wffc.yaml was admitted; the webhook should have refused it: ${refused.stdout}`);
  for (const l of refused.stderr.trim().split('\n')) say(`  ${l}`);
  say('refused before any Forklift object existed: `local` is WaitForFirstConsumer and would hang the transfer.');

  step(`As the tenant: kubectl apply -f examples/${TASK_FILE}`);
  const applied = must(await kubectlAs(kubectl, tenantKC, ['apply', '-f', join(EXAMPLES, TASK_FILE)]), `applying examples/${TASK_FILE}`);
  say(applied.trim());
  if (WARM) say(`warm: the VMs keep running while Forklift precopies them; the demo asks for the cutover after ${PRECOPIES_BEFORE_CUTOVER} precopies of each.`);

  // Live progress is the plugin's: `kubectl vmimport watch`, found by kubectl on PATH (scripts/demo/plugin.ts),
  // run as the tenant and drawing on this terminal (plain blocks when the output is not one); its bundle
  // was built before the task was applied.
  const tenantEnv = { ...process.env, KUBECONFIG: tenantKC, PATH: pluginPATH };
  const plugin = (args: string[]): { exit: Promise<number>; pid: number | undefined } => {
    const child = spawn(kubectl, ['vmimport', ...args], { stdio: ['ignore', 'inherit', 'inherit'], env: tenantEnv });
    children.add(child);
    const exit = new Promise<number>((res) => child.on('exit', (code, signal) => {
      children.delete(child);
      res(code ?? (signal === 'SIGINT' ? 130 : 1));
    }));
    return { exit, pid: child.pid };
  };
  const timeout = ['--timeout', `${IMPORT_DEADLINE_MS / 60_000}m`];
  const getTask = async (): Promise<VMImportTask | undefined> => (await admin!.get(GVRs.VMImportTask, NS, TASK)) as unknown as VMImportTask | undefined;

  if (WARM) {
    step(`As the tenant: kubectl vmimport watch ${TASK}   (until ${PRECOPIES_BEFORE_CUTOVER} precopies of each VM)`);
    const first = plugin(['watch', TASK, ...timeout]);
    // The demo's own cue for the cutover, read as the admin: every VM precopied enough times.
    const ended = await Promise.race([
      first.exit.then(() => true),
      waitUntil(`${PRECOPIES_BEFORE_CUTOVER} precopies of each VM`, IMPORT_DEADLINE_MS, async () => {
        const t = await getTask();
        const vms = t?.status?.vms ?? [];
        return t && vms.length === t.spec.vms.length && vms.every((v) => v.phase === 'Precopying' && (v.warm?.precopies ?? 0) >= PRECOPIES_BEFORE_CUTOVER) ? false : undefined;
      }),
    ]);
    if (ended) throw new Error(`kubectl vmimport watch ended before the cutover\n${await stuckReport(admin, await getTask(), controllerLog)}`);
    // The first watch has shown the precopies; it is stopped (the process the demo started, by its pid),
    // and the block as it stood when the demo decided is printed (the watch may not have drawn it yet).
    if (first.pid) process.kill(first.pid, 'SIGINT');
    await first.exit;
    const atCutover = await getTask();
    if (atCutover) for (const l of frame([TASK], new Map([[TASK, atCutover]]), Date.now())) say(l);
    // The cutover, then the rest of the import followed by the same process (`--watch`): the short
    // cutover phase is on screen, not missed while a separate watch starts.
    step(`Cutover now, as the tenant: kubectl vmimport cutover ${TASK} --now --watch`);
  } else {
    step(`As the tenant: kubectl vmimport watch ${TASK}`);
  }
  // The task's own ETA, its ETA printer column (status.transfer.eta), as `kubectl get` shows it while the
  // disks move: asked for as the tenant once the controller states one, beside the watch (which owns the
  // terminal meanwhile), and printed when the watch has ended.
  const whileTransferring = WARM
    ? undefined
    : waitUntil('the task’s ETA', IMPORT_DEADLINE_MS, async () => {
        const t = await getTask();
        if (t?.status?.completedAt) return '';
        return t?.status?.transfer?.eta ? must(await kubectlAs(kubectl, tenantKC, ['get', 'vmimporttask', TASK, '-n', NS]), 'kubectl get vmimporttask') : undefined;
      }).catch(() => '');
  const watched = await plugin(WARM ? ['cutover', TASK, '--now', '--watch', ...timeout] : ['watch', TASK, ...timeout]).exit;
  const shown = await whileTransferring;
  if (shown) {
    step(`As the tenant, while it transferred: kubectl get vmimporttask ${TASK}`);
    say(shown.trimEnd());
  }
  const task = await getTask();
  if (!task?.status?.completedAt) throw new Error(`the import did not finish within ${IMPORT_DEADLINE_MS / 60_000} minutes\n${await stuckReport(admin, task, controllerLog)}`);
  if (watched !== 0) throw new Error(`kubectl vmimport watch exited ${watched}: ${JSON.stringify(task.status, null, 1)}`);

  step(`kubectl wait --for=condition=Ready vmimporttask/${TASK}`);
  const waited = await kubectlAs(kubectl, tenantKC, ['wait', '--for=condition=Ready', `vmimporttask/${TASK}`, '-n', NS, '--timeout=60s'], undefined, 70_000);
  say((waited.stdout + waited.stderr).trim());
  if (waited.code !== 0) throw new Error(`kubectl wait failed: ${JSON.stringify(task.status, null, 1)}`);
  say(must(await kubectlAs(kubectl, tenantKC, ['get', 'vmimporttask', TASK, '-n', NS]), 'kubectl get vmimporttask').trimEnd());

  step('Result');
  const disks = (await admin.list(GVRs.VMDisk, NS)).items as Array<KubeObject & { spec?: { storage?: string; storageClass?: string } }>;
  say('VMDisks (apps.cozystack.io):');
  for (const l of renderTable(['NAME', 'STORAGE', 'CLASS'], disks.map((d) => [d.metadata!.name!, formatQuantity(d.spec?.storage), d.spec?.storageClass ?? '']))) say(`  ${l}`);
  const instances = (await admin.list(GVRs.VMInstance, NS)).items as Array<KubeObject & { spec?: { runStrategy?: string; disks?: Array<{ name: string; bus?: string }> } }>;
  say('VMInstances (apps.cozystack.io):');
  for (const l of renderTable(['NAME', 'RUNSTRATEGY', 'DISKS'], instances.map((i) => [i.metadata!.name!, i.spec?.runStrategy ?? '', (i.spec?.disks ?? []).map((d) => `${d.name}(${d.bus ?? ''})`).join(' ')]))) say(`  ${l}`);
  say('Downtime per VM (source powered off → VMInstance created):');
  const cols = WARM ? ['VM', 'SOURCE', 'BYTES', 'PRECOPIES', 'DOWNTIME'] : ['VM', 'SOURCE', 'BYTES', 'DOWNTIME'];
  const rows = (task.status?.vms ?? []).map((v) => [v.name, v.id, formatBytes(v.bytesTotal), ...(WARM ? [String(v.warm?.precopies ?? 0)] : []), formatDuration(v.downtimeSeconds)]);
  for (const l of renderTable(cols, rows)) say(`  ${l}`);
  say(`\nDone in ${formatDuration((Date.now() - t0) / 1000)}. The VMs start Halted: nothing boots a second copy of a production machine.`);

  if (KEEP) {
    const envFile = join(info.dir, 'demo.env');
    writeFileSync(envFile, `export KUBECONFIG=${adminKC}\n# tenant: export KUBECONFIG=${tenantKC}\nexport PATH=${join(info.dir, 'plugin')}:$PATH\n`);
    step('The sandbox keeps running (--keep). Explore it with kubectl:');
    say(`  admin:  export KUBECONFIG=${adminKC}`);
    say(`  tenant: export KUBECONFIG=${tenantKC}     # namespace ${NS}`);
    say(`  the plugin: export PATH=${join(info.dir, 'plugin')}:$PATH; kubectl vmimport report ${TASK}`);
    say(`  kubectl get vmimportsources,vmimporttasks -n ${NS}`);
    say(`  kubectl get vmimporttask ${TASK} -n ${NS} -o yaml`);
    say(`  kubectl get vmdisks,vminstances,plans,migrations,pvc -n ${NS}     # as admin`);
    say('Press Ctrl-C to stop everything.');
    mkdirSync(info.dir, { recursive: true });
    // Keep the event loop alive until a signal arrives (handled above).
    setInterval(() => {}, 1 << 30);
    return;
  }
  await stopAll();
  say('Everything stopped. Run with --keep to explore the sandbox with kubectl.');
}

main().then(
  () => {
    if (!KEEP) process.exit(0);
  },
  async (e: unknown) => {
    process.stderr.write(`\ndemo failed: ${(e as Error).stack ?? String(e)}\n`);
    await stopAll();
    process.exit(1);
  },
);
