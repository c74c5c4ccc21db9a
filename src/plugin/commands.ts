// The commands' I/O: read what the tenant may read (VMImportSources and VMImportTasks, the VMInstances and
// VMDisks of its namespace), decide with the pure modules, write a task or a cutover. Every request goes
// out with the user's own kubeconfig, context and rights.
import YAML from 'yaml';
import * as k8s from '@kubernetes/client-node';
import type { SourceInventoryVM, TaskVM, VMImportSource, VMImportTask } from '../api/types.ts';
import { readVMDisks } from '../api/disks.ts';
import { GVRs } from '../runtime/gvr.ts';
import { KubeClient, type KubeObject } from '../runtime/kube.ts';
import { PluginError } from './errors.ts';
import { parseDuration, UsageError, type Parsed } from './args.ts';
import { filterVMs, inventoryNotes, resolveVM, vmTable } from './vms.ts';
import { buildTask, finished, parseCutover, parseNetwork, planRetry, retryName, retryTask } from './task.ts';
import { buildReport, reportCSV, reportJSON, reportMarkdown, reportTable } from './report.ts';
import { watchTasks } from './watch.ts';
import { cobraOutput, completionFor } from './complete.ts';

export interface IO {
  out: (s: string) => void;
  err: (s: string) => void;
  tty: boolean;
  now: () => number;
}

export interface Session {
  client: KubeClient;
  namespace: string;
  server: string;
  context: string;
  /** Admission warnings of the requests so far (each Warning header's text). */
  warnings: string[];
}

/** Longest Warning header value read: the webhook's warnings are a few sentences; anything longer is cut. */
const MAX_WARNING_HEADER = 64 * 1024;

/** The texts of a Warning header value (`299 - "text", 299 - "more"`, RFC 7234 §5.5). Pure. */
export function parseWarningHeader(h: string): string[] {
  const s = h.slice(0, MAX_WARNING_HEADER);
  const out: string[] = [];
  const re = /\d{3} \S+ "((?:[^"\\]|\\.)*)"/g;
  for (let m = re.exec(s); m; m = re.exec(s)) out.push(m[1]!.replace(/\\(.)/g, '$1'));
  return out.length ? out : [s];
}

/** The user's kubeconfig, context and namespace, as kubectl resolves them. */
export function session(values: Parsed['values']): Session {
  const kc = new k8s.KubeConfig();
  const file = values.kubeconfig as string | undefined;
  try {
    if (file) kc.loadFromFile(file);
    else kc.loadFromDefault();
  } catch (e) {
    throw new PluginError(`cannot load the kubeconfig${file ? ` ${file}` : ''}: ${(e as Error).message}`, 'point --kubeconfig or $KUBECONFIG at a kubeconfig file');
  }
  const ctxName = values.context as string | undefined;
  if (ctxName) {
    if (!kc.getContextObject(ctxName)) throw new PluginError(`context "${ctxName}" does not exist in the kubeconfig`, `list the contexts with kubectl config get-contexts`);
    kc.setCurrentContext(ctxName);
  }
  if (!kc.getCurrentCluster()) throw new PluginError('the kubeconfig has no current context', 'choose one with kubectl config use-context, or pass --context');
  const context = kc.getCurrentContext();
  const namespace = (values.namespace as string | undefined) ?? kc.getContextObject(context)?.namespace ?? 'default';
  const warnings: string[] = [];
  const client = new KubeClient(kc, { fieldManager: 'kubectl-vmimport', userAgent: 'kubectl-vmimport', onWarning: (h) => warnings.push(...parseWarningHeader(h)) });
  return { client, namespace, server: client.server, context, warnings };
}

async function getSource(s: Session, name: string): Promise<VMImportSource> {
  const src = await s.client.get<VMImportSource & KubeObject>(GVRs.VMImportSource, s.namespace, name);
  if (!src) throw new PluginError(`vmimportsources.forklift.cozystack.io "${name}" not found in namespace ${s.namespace}`, `list the sources with kubectl get vmimportsources -n ${s.namespace}`);
  return src;
}

async function getTask(s: Session, name: string): Promise<VMImportTask> {
  const t = await s.client.get<VMImportTask & KubeObject>(GVRs.VMImportTask, s.namespace, name);
  if (!t) throw new PluginError(`vmimporttasks.forklift.cozystack.io "${name}" not found in namespace ${s.namespace}`, `list the tasks with kubectl get vmimporttasks -n ${s.namespace}`);
  return t;
}

// ---------------------------------------------------------------------------------------------------

export async function cmdVMs(p: Parsed, s: Session, io: IO): Promise<number> {
  const v = p.values;
  if (v.blocked && v.ready) throw new UsageError('--blocked and --ready exclude each other', p.command);
  const src = await getSource(s, p.positionals[0]!);
  const vms = filterVMs(src.status?.inventory, { folder: v.folder as string | undefined, name: v.name as string | undefined, blocked: v.blocked === true, ready: v.ready === true });
  const o = v.output as string | undefined;
  if (o === 'json') io.out(`${JSON.stringify(vms, null, 2)}\n`);
  else if (o === 'yaml') io.out(YAML.stringify(vms));
  else io.out(`${vmTable(vms, o === 'wide').join('\n')}\n`);
  for (const n of inventoryNotes(src)) io.err(`${n}\n`);
  return 0;
}

/** `--watch`: follow `name` to its end after the command's own work, exiting as `watch` does. */
async function thenWatch(p: Parsed, s: Session, io: IO, name: string): Promise<number> {
  return p.values.watch ? await watchTasks({ client: s.client, namespace: s.namespace, names: [name], write: io.out, tty: io.tty, timeoutMs: timeoutOf(p), now: io.now }) : 0;
}

/** `--timeout` as ms (undefined: none); a usage error when malformed or given without something to watch. */
export function timeoutOf(p: Parsed): number | undefined {
  const t = p.values.timeout as string | undefined;
  if (t === undefined) return undefined;
  if (p.command.name !== 'watch' && !p.values.watch) throw new UsageError('--timeout is for --watch', p.command);
  const ms = parseDuration(t);
  if (ms === undefined) throw new UsageError(`--timeout ${t}: expected a duration such as 90s, 30m or 2h`, p.command);
  return ms;
}

/** Writes a task (or prints it, with --dry-run=client) and shows the webhook's warnings. */
async function writeTask(task: VMImportTask, p: Parsed, s: Session, io: IO, what: string): Promise<void> {
  const dry = p.values['dry-run'] as string | undefined;
  if (dry && p.values.watch) throw new UsageError('--watch follows a task that was created: not with --dry-run', p.command);
  if (dry === 'client') {
    io.out(p.values.output === 'json' ? `${JSON.stringify(task, null, 2)}\n` : YAML.stringify(task));
    return;
  }
  if (p.values.output !== undefined) throw new UsageError('-o is for --dry-run=client (the task is printed, not created)', p.command);
  s.warnings.length = 0;
  try {
    await s.client.create(GVRs.VMImportTask, task as unknown as KubeObject, { dryRun: dry === 'server' });
  } finally {
    for (const w of s.warnings) io.err(`Warning: ${w}\n`);
  }
  io.out(`vmimporttask.forklift.cozystack.io/${task.metadata.name} created${dry === 'server' ? ' (server dry run)' : ''}${what}\n`);
}

export async function cmdCreate(p: Parsed, s: Session, io: IO): Promise<number> {
  const v = p.values;
  const source = v.source as string | undefined;
  const args = (v.vm as string[] | undefined) ?? [];
  if (!source) throw new UsageError('--source SOURCE is required', p.command);
  if (!args.length) throw new UsageError('at least one --vm NAME|ID is required', p.command);
  if (v.cutover !== undefined && !v.warm) throw new UsageError('--cutover is for a warm import (--warm)', p.command);
  const networks = ((v.network as string[] | undefined) ?? []).map(parseNetwork);
  const badNet = networks.filter((n): n is string => typeof n === 'string');
  if (badNet.length) throw new UsageError(badNet.join('\n'), p.command);
  let cutover: string | undefined;
  if (v.cutover !== undefined) {
    const c = parseCutover(v.cutover as string, io.now());
    if (typeof c === 'string') throw new UsageError(`--cutover: ${c}`, p.command);
    cutover = c.at;
  }
  const src = await getSource(s, source);
  const resolved = args.map((a) => resolveVM(src.status?.inventory, a, source));
  const problems = resolved.flatMap((r) => (r.ok ? [] : [r.message]));
  if (problems.length) throw new PluginError(problems.join('\n'), `list the source's VMs with kubectl vmimport vms ${source}`);
  const vms: TaskVM[] = [];
  for (const r of resolved) {
    if (!r.ok) continue;
    if (vms.some((x) => x.id === r.id)) throw new PluginError(`VM ${r.id}${r.name ? ` (${r.name})` : ''} is named twice`);
    vms.push({ id: r.id });
  }
  const task = buildTask({
    name: p.positionals[0]!,
    namespace: s.namespace,
    source,
    vms,
    storageClass: v['storage-class'] as string | undefined,
    networks: networks as Exclude<(typeof networks)[number], string>[],
    warm: v.warm === true,
    cutover,
    conversion: v.conversion === true,
  });
  await writeTask(task, p, s, io, '');
  return await thenWatch(p, s, io, task.metadata.name!);
}

export async function cmdWatch(p: Parsed, s: Session, io: IO): Promise<number> {
  return await watchTasks({ client: s.client, namespace: s.namespace, names: [...new Set(p.positionals)], write: io.out, tty: io.tty, timeoutMs: timeoutOf(p), now: io.now });
}

/** The outputs that exist now of a failed VM: the VMInstance and the VMDisks a retry would create. */
async function existingOutputs(s: Session, task: VMImportTask, inv: Map<string, SourceInventoryVM>): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const st of task.status?.vms ?? []) {
    if (st.phase !== 'Failed') continue;
    const spec = task.spec.vms.find((x) => x.id === st.id);
    const name = st.vmInstance ?? spec?.name ?? st.name;
    const recorded = readVMDisks(st);
    const disks = Math.max(recorded.evidence.length, inv.get(st.id)?.disks?.length ?? 0);
    const found: string[] = [];
    if (await s.client.get(GVRs.VMInstance, s.namespace, name)) found.push(`vminstance/${name}`);
    const diskNames = new Set([...recorded.names, ...recorded.evidence.map((d) => d.vmDisk), ...Array.from({ length: disks }, (_, i) => `${name}-disk-${i}`)]);
    for (const d of diskNames) if (await s.client.get(GVRs.VMDisk, s.namespace, d)) found.push(`vmdisk/${d}`);
    out.set(st.id, found);
  }
  return out;
}

export async function cmdRetry(p: Parsed, s: Session, io: IO): Promise<number> {
  const old = await getTask(s, p.positionals[0]!);
  if (!finished(old)) {
    throw new PluginError(`task ${old.metadata.name} has not ended (phase ${old.status?.phase ?? 'Pending'}): only a finished task's failed VMs can be retried`, `wait for it with kubectl vmimport watch ${old.metadata.name}`);
  }
  let src: VMImportSource | undefined;
  try {
    src = await getSource(s, old.spec.sourceRef.name);
  } catch {
    src = undefined; // without the source, VMs are judged on the task's status alone
  }
  const inv = new Map((src?.status?.inventory?.vms ?? []).map((v) => [v.id, v]));
  const decisions = planRetry(old, { outputs: await existingOutputs(s, old, inv), inventory: src?.status?.inventory });
  for (const d of decisions) if (!d.retry) io.err(`left out: ${d.why}\n`);
  const vms = decisions.filter((d) => d.retry).map((d) => d.vm);
  if (!vms.length) throw new PluginError(`task ${old.metadata.name} has no failed VM a retry can import`);
  let name = p.values.name as string | undefined;
  if (!name) {
    const taken = new Set((await s.client.list(GVRs.VMImportTask, s.namespace)).items.map((t) => t.metadata?.name ?? ''));
    name = retryName(old.metadata.name!, taken);
  }
  const { task, notes } = retryTask(old, name, vms, io.now());
  for (const n of notes) io.err(`note: ${n}\n`);
  await writeTask(task, p, s, io, p.values['dry-run'] === 'client' ? '' : `: retrying ${vms.length} of ${old.spec.vms.length} VMs of ${old.metadata.name} (${vms.map((v) => v.id).join(', ')})`);
  return await thenWatch(p, s, io, name);
}

export async function cmdCutover(p: Parsed, s: Session, io: IO): Promise<number> {
  const v = p.values;
  if (v.now && v.at !== undefined) throw new UsageError('--now and --at exclude each other', p.command);
  if (!v.now && v.at === undefined) throw new UsageError('give --now or --at TIME', p.command);
  const c = parseCutover(v.now ? 'now' : (v.at as string), io.now());
  if (typeof c === 'string') throw new UsageError(`--at: ${c}`, p.command);
  const task = await getTask(s, p.positionals[0]!);
  if (task.spec.mode !== 'warm') throw new PluginError(`task ${task.metadata.name} is a cold import: it has no cutover (its VMs are powered off for the whole transfer)`);
  if (finished(task)) throw new PluginError(`task ${task.metadata.name} has ended (${task.status?.phase ?? ''}): there is nothing left to cut over`);
  s.warnings.length = 0;
  try {
    await s.client.patch(GVRs.VMImportTask, s.namespace, task.metadata.name!, { spec: { cutover: c.at } }, 'merge');
  } finally {
    for (const w of s.warnings) io.err(`Warning: ${w}\n`);
  }
  io.out(`vmimporttask.forklift.cozystack.io/${task.metadata.name} patched: cutover at ${c.at}\n`);
  // Followed at once from the same process: a cutover's short phases are seen, not missed while a
  // separate `watch` starts.
  return await thenWatch(p, s, io, task.metadata.name!);
}

export async function cmdReport(p: Parsed, s: Session, io: IO): Promise<number> {
  const tasks: VMImportTask[] = [];
  for (const n of new Set(p.positionals)) tasks.push(await getTask(s, n));
  const sourceVMs = new Map<string, SourceInventoryVM>();
  for (const name of new Set(tasks.map((t) => t.spec.sourceRef.name))) {
    const src = await s.client.get<VMImportSource & KubeObject>(GVRs.VMImportSource, s.namespace, name).catch(() => undefined);
    for (const vm of src?.status?.inventory?.vms ?? []) sourceVMs.set(vm.id, vm);
  }
  const r = buildReport(tasks, sourceVMs);
  const o = (p.values.output as string | undefined) ?? 'table';
  io.out(o === 'csv' ? reportCSV(r) : o === 'json' ? reportJSON(r) : o === 'markdown' ? reportMarkdown(r) : `${reportTable(r)}\n`);
  return 0;
}

/** `__complete WORD...`: candidates in Cobra's format; names from the API, silently none when unreadable. */
export async function cmdComplete(words: string[], io: IO, connect: (values: Parsed['values']) => Session): Promise<number> {
  const req = completionFor(words.length ? words : ['']);
  if (req.kind === 'static') {
    io.out(cobraOutput(req.candidates));
    return 0;
  }
  let names: string[] = [];
  try {
    const s = connect(req.globals);
    if (req.kind === 'task') names = (await s.client.list(GVRs.VMImportTask, s.namespace)).items.map((t) => t.metadata?.name ?? '');
    else if (req.kind === 'source') names = (await s.client.list(GVRs.VMImportSource, s.namespace)).items.map((t) => t.metadata?.name ?? '');
    else if (req.source) {
      const src = await s.client.get<VMImportSource & KubeObject>(GVRs.VMImportSource, s.namespace, req.source);
      names = (src?.status?.inventory?.vms ?? []).flatMap((v) => [v.name, v.id]);
    }
    s.client.close();
  } catch {
    names = [];
  }
  io.out(cobraOutput([...new Set(names)].filter((n) => n && n.startsWith(req.partial) && !/\s/.test(n)).map((n) => req.prefix + n)));
  return 0;
}
