// `kubectl vmimport` on the common path, run through kubectl as a tenant bound only to Cozystack's tenant
// roles (which grant no Secrets and no ConfigMaps), against the real API server, the admission webhook and
// the simulator: the VMs a source sees, a task created by VM names, watched to its end, reported; a warm
// task cut over; the API's own refusals with the fix; --help on every command; shell completion.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import YAML from 'yaml';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient } from '../../src/runtime/kube.ts';
import type { SourceInventoryVM, VMImportSource, VMImportTask } from '../../src/api/types.ts';
import { InventoryClient } from '../../src/forklift/inventory.ts';
import { startTestWebhook, type TestWebhook } from '../../src/webhook/testkit.ts';
import { COMMANDS } from '../../src/plugin/spec.ts';
import { freshNamespace, testEnv, waitFor } from './env/index.ts';
import { applyAs, bootWorld, waitForWebhookEffective, type BootedWorld } from './fixtures.ts';
import { shWithPlugin, show, tenantKubeconfig, vmimport } from './cli-plugin.ts';

const URL_VC = 'https://vcenter-cli.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [
    { id: 'host-1', address: '192.0.2.10' },
    { id: 'host-2', address: '192.0.2.20' },
  ],
  vms: [
    { id: 'vm-101', name: 'web-01', path: '/dc1/vm/web/web-01', disks: [{ capacityGiB: 2 }] },
    { id: 'vm-102', name: 'db-01', path: '/dc1/vm/db/db-01', host: 'host-2', firmware: 'efi', disks: [{ capacityGiB: 2 }, { capacityGiB: 1 }] },
    // Two VMs of one name in different folders: a name that must not be guessed.
    { id: 'vm-103', name: 'app', path: '/dc1/vm/web/app', disks: [{ capacityGiB: 1 }] },
    { id: 'vm-104', name: 'app', path: '/dc1/vm/db/app', disks: [{ capacityGiB: 1 }] },
    // Forklift's rdm_disk policy: Blocked.
    { id: 'vm-105', name: 'rdm-01', path: '/dc1/vm/db/rdm-01', disks: [{ capacityGiB: 1 }, { capacityGiB: 1, rdm: true }] },
    // Warm needs changed block tracking on.
    { id: 'vm-106', name: 'warm-01', path: '/dc1/vm/web/warm-01', changeTrackingEnabled: true, disks: [{ capacityGiB: 1 }] },
  ],
});

let booted: BootedWorld;
let c: KubeClient;
let wh: TestWebhook | undefined;
let ns: string;
/** The tenant admin of ns (cozy:tenant:admin), its context's namespace ns. */
let admin: string;
/** Another tenant holding only cozy:tenant:view in ns. */
let viewer: string;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'cli-fast' }], sim: { mbPerSecond: 4096 } });
  c = booted.c;
  ns = await freshNamespace('cli');
  admin = await tenantKubeconfig(ns, 'admin', 0);
  viewer = await tenantKubeconfig(ns, 'view', 1);
  // The tenant writes the source itself; the namespace joins the webhook after it (the test webhook
  // seals passwords with a key the controller does not hold).
  const s = await applyAs(admin, ns, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name: 'vc' }, spec: { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } } });
  assert.equal(s.code, 0, s.stderr);
  await waitFor('the source to publish its assessed inventory', async () => {
    const src = (await c.get(GVRs.VMImportSource, ns, 'vc')) as unknown as VMImportSource | undefined;
    return src?.status?.inventory?.total === 6 && src.status.inventory.summary;
  }, { timeoutMs: 60_000 });
  const env = await testEnv();
  const inventory = new InventoryClient({ baseURL: booted.sim.inventory.url, ca: () => booted.sim.inventory.caPEM, token: () => env.admin.token, timeoutMs: 2000 });
  wh = await startTestWebhook({ client: c, inventory });
  await c.patch(GVRs.Namespace, undefined, ns, { metadata: { labels: { [wh.selector.key]: wh.selector.value } } });
  await waitForWebhookEffective(ns, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'probe' }, spec: { sourceRef: { name: 'absent' }, vms: [{ id: 'vm-101' }] } });
});

after(async () => {
  await wh?.stop();
  await booted?.shutdown();
});

const row = (out: string, name: string): string[] | undefined => out.split('\n').map((l) => l.trim().split(/\s{2,}/)).find((cells) => cells[0] === name);

test('vms lists every VM the source sees with its id, power, guest OS, firmware, disks and size, ESXi host and verdict, and filters by verdict, name and folder', async () => {
  // Each a process of its own, reading the same published inventory: run side by side.
  const [all, blocked, ready, web, wide, jsonRun, yamlRun] = await Promise.all([
    vmimport(viewer, ['vms', 'vc']),
    vmimport(viewer, ['vms', 'vc', '--blocked']),
    vmimport(viewer, ['vms', 'vc', '--ready']),
    vmimport(viewer, ['vms', 'vc', '--folder', '/dc1/vm/web', '--name', 'WEB']),
    vmimport(viewer, ['vms', 'vc', '-o', 'wide', '--blocked']),
    vmimport(viewer, ['vms', 'vc', '-o', 'json', '--name', 'app']),
    vmimport(viewer, ['vms', 'vc', '-o', 'yaml', '--blocked']),
  ]);
  assert.equal(all.code, 0, show(all));
  assert.deepEqual(all.stdout.split('\n')[0]!.trim().split(/\s{2,}/), ['NAME', 'ID', 'POWER', 'OS', 'FIRMWARE', 'DISKS', 'SIZE', 'HOST', 'VERDICT']);
  assert.deepEqual(row(all.stdout, 'web-01'), ['web-01', 'vm-101', 'poweredOn', 'linux', 'bios', '1', '2.0 GiB', 'host-1', 'ReadyWithWarnings']);
  assert.deepEqual(row(all.stdout, 'db-01'), ['db-01', 'vm-102', 'poweredOn', 'linux', 'efi', '2', '3.0 GiB', 'host-2', 'ReadyWithWarnings']);
  assert.deepEqual(row(all.stdout, 'rdm-01')?.at(-1), 'Blocked');

  const names = (out: string): string[] => out.trim().split('\n').slice(1).map((l) => l.split(/\s+/)[0]!).sort();
  assert.deepEqual(names(blocked.stdout), ['rdm-01'], show(blocked));
  assert.deepEqual(names(ready.stdout), ['app', 'app', 'db-01', 'warm-01', 'web-01'], show(ready));
  assert.deepEqual(names(web.stdout), ['web-01'], show(web));

  assert.match(wide.stdout, /FOLDER +TOOLS +CBT +NICS +CONCERN/);
  assert.match(wide.stdout, /rdm-01 .* \/dc1\/vm\/db +running +no +1 +Critical: Raw Device Mapped disk detected/);

  const json = JSON.parse(jsonRun.stdout) as SourceInventoryVM[];
  assert.deepEqual(json.map((v) => [v.id, v.path]).sort(), [['vm-103', '/dc1/vm/web/app'], ['vm-104', '/dc1/vm/db/app']].sort());
  const yaml = YAML.parse(yamlRun.stdout) as SourceInventoryVM[];
  assert.deepEqual(yaml.map((v) => [v.id, v.verdict, v.concerns?.[0]?.id]), [['vm-105', 'Blocked', 'vmware.disk.rdm.detected']]);
});

test('create refuses a VM name two VMs share, listing both by id and folder, and with --dry-run=client prints the task it would apply without creating it', async () => {
  // None of the three creates anything: run side by side.
  const [amb, missing, dry] = await Promise.all([
    vmimport(admin, ['create', 'x', '--source', 'vc', '--vm', 'app']),
    vmimport(admin, ['create', 'x', '--source', 'vc', '--vm', 'web-9']),
    vmimport(admin, ['create', 'planned', '--source', 'vc', '--vm', 'web-01', '--vm', 'vm-104', '--storage-class', 'cli-fast', '--network', 'network-1=multus:backup-net', '--dry-run=client']),
  ]);
  assert.equal(amb.code, 1, show(amb));
  assert.match(amb.stderr, /error: VM name "app" is ambiguous in source vc: 2 VMs carry it; give one by id:\n {2}vm-10[34] {2}\/dc1\/vm\/(web|db)\/app\n {2}vm-10[34] {2}\/dc1\/vm\/(web|db)\/app/);
  assert.match(amb.stderr, /fix: list the source's VMs with kubectl vmimport vms vc/);
  assert.match(missing.stderr, /no VM named "web-9" in source vc's inventory/);

  assert.equal(dry.code, 0, show(dry));
  assert.deepEqual(YAML.parse(dry.stdout), {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name: 'planned', namespace: ns },
    spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-101' }, { id: 'vm-104' }], storageClass: 'cli-fast', networks: [{ source: 'network-1', type: 'multus', name: 'backup-net' }] },
  });
  assert.equal(await c.get(GVRs.VMImportTask, ns, 'planned'), undefined);
});

test("create applies the task by VM names and shows the webhook's warnings; watch follows it and exits 0 when every VM succeeded; report gives each VM's outcome, bytes, downtime, outputs and what was not carried", async () => {
  const made = await vmimport(admin, ['create', 'web-tier', '--source', 'vc', '--vm', 'web-01', '--vm', 'db-01', '--storage-class', 'cli-fast']);
  assert.equal(made.code, 0, show(made));
  assert.equal(made.stdout, 'vmimporttask.forklift.cozystack.io/web-tier created\n');
  assert.match(made.stderr, /^Warning: spec\.vms\[1\]: VM "db-01" \(vm-102\): UEFI firmware \(Warning, migration-controller\)/m);

  const w = await vmimport(admin, ['watch', 'web-tier', '--timeout', '3m'], { timeoutMs: 200_000 });
  assert.equal(w.code, 0, show(w));
  // Plain blocks (stdout is a pipe here), the demo's renderer's lines, and the end.
  assert.match(w.stdout, /^\[[\dhms]+\]\nweb-tier: phase \w+/m);
  assert.match(w.stdout, /db-01 +Succeeded +\[#+\] 100% +3\.0 GiB \/ 3\.0 GiB +done, downtime \d+s/);
  assert.match(w.stdout, /web-tier: all 2 VMs imported\n$/);
  assert.ok(!w.stdout.includes('\x1b['), 'no cursor movement when stdout is not a terminal');
  const task = (await c.get(GVRs.VMImportTask, ns, 'web-tier')) as unknown as VMImportTask;
  assert.equal(task.status?.phase, 'Succeeded');

  // The report in each format, side by side (each a process of its own, reading the ended task).
  const [jsonReport, table, csvReport, mdReport] = await Promise.all([
    vmimport(viewer, ['report', 'web-tier', '-o', 'json']),
    vmimport(viewer, ['report', 'web-tier']),
    vmimport(viewer, ['report', 'web-tier', '-o', 'csv']),
    vmimport(viewer, ['report', 'web-tier', '-o', 'markdown']),
  ]);
  const j = JSON.parse(jsonReport.stdout) as { rows: Array<Record<string, unknown>>; totals: Record<string, unknown> };
  const db = j.rows.find((r) => r.id === 'vm-102')!;
  assert.deepEqual([db.outcome, db.bytes, db.vmInstance, db.vmDisks], ['Succeeded', 3 * 2 ** 30, 'db-01', ['db-01-disk-0', 'db-01-disk-1']]);
  assert.equal(typeof db.downtimeSeconds, 'number');
  assert.equal(typeof db.transferSeconds, 'number');
  assert.deepEqual(db.notCarried, ['UEFI firmware', 'MAC addresses (1 NIC)']);
  assert.deepEqual([j.totals.vms, j.totals.succeeded, j.totals.failed, j.totals.bytes], [2, 2, 0, 5 * 2 ** 30]);
  // The outputs the report names exist.
  assert.ok(await c.get(GVRs.VMInstance, ns, 'db-01'));
  assert.ok(await c.get(GVRs.VMDisk, ns, 'db-01-disk-1'));

  assert.match(table.stdout, /^TASK +VM +ID +OUTCOME +REASON +BYTES +TRANSFER +DOWNTIME +VMINSTANCE +VMDISKS +NOT CARRIED$/m);
  assert.match(table.stdout, /^web-tier +web-01 +vm-101 +Succeeded +2\.0 GiB +\d+s +\d+s +web-01 +web-01-disk-0 +MAC addresses \(1 NIC\)$/m);
  assert.match(table.stdout, /^Total: 2 VMs in 1 task: 2 succeeded, 0 failed; 5\.0 GiB imported; downtime longest \d+s, total \d+s$/m);
  const csv = csvReport.stdout.split('\r\n');
  assert.equal(csv[0], 'task,vm,id,outcome,reason,message,bytes,transferSeconds,downtimeSeconds,vmInstance,vmDisks,notCarried');
  assert.match(csv.find((l) => l.includes('vm-102'))!, /^web-tier,db-01,vm-102,Succeeded,,,3221225472,\d+,\d+,db-01,db-01-disk-0 db-01-disk-1,UEFI firmware; MAC addresses \(1 NIC\)$/);
  const md = mdReport.stdout;
  assert.match(md, /^\| TASK \| VM \| ID \|/m);
  assert.match(md, /^\| web-tier \| db-01 \| vm-102 \| Succeeded \|/m);
  assert.match(md, /^\*\*Total:\*\* 2 VMs in 1 task/m);
});

test('cutover --now sets the cutover of a warm task as the tenant and, with --watch, follows the import to its end; a cold task has none', async () => {
  const made = await vmimport(admin, ['create', 'warm', '--source', 'vc', '--vm', 'warm-01', '--storage-class', 'cli-fast', '--warm']);
  assert.equal(made.code, 0, show(made));
  await waitFor('a first precopy', async () => {
    const t = (await c.get(GVRs.VMImportTask, ns, 'warm')) as unknown as VMImportTask | undefined;
    return (t?.status?.vms?.[0]?.warm?.precopies ?? 0) >= 1;
  }, { timeoutMs: 120_000 });
  // The cutover, then the import followed to its end by the same command (--watch), exiting as watch does.
  const cut = await vmimport(admin, ['cutover', 'warm', '--now', '--watch', '--timeout', '3m'], { timeoutMs: 200_000 });
  assert.equal(cut.code, 0, show(cut));
  assert.match(cut.stdout, /^vmimporttask\.forklift\.cozystack\.io\/warm patched: cutover at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)\n\[/);
  assert.match(cut.stdout, /warm-01 +Succeeded .*done, downtime \d+s/);
  assert.match(cut.stdout, /\nwarm: all 1 VM imported\n$/);
  const at = /cutover at (\S+)/.exec(cut.stdout)![1];
  const task = (await c.get(GVRs.VMImportTask, ns, 'warm')) as unknown as VMImportTask;
  assert.equal(task.spec.cutover, at);
  assert.equal(task.status?.phase, 'Succeeded');

  const cold = await vmimport(admin, ['cutover', 'web-tier', '--at', '2030-01-01T00:00:00Z']);
  assert.equal(cold.code, 1, show(cold));
  assert.match(cold.stderr, /error: task web-tier is a cold import: it has no cutover/);
});

test("refusals come in the API's own words with the fix: a viewer cannot create, a Blocked VM is denied by the webhook, an unknown task is not found", async () => {
  // Four refusals, none of which writes: run side by side.
  const [denied, blocked, gone, usage] = await Promise.all([
    vmimport(viewer, ['create', 'nope', '--source', 'vc', '--vm', 'web-01']),
    vmimport(admin, ['create', 'rdm', '--source', 'vc', '--vm', 'rdm-01', '--storage-class', 'cli-fast']),
    vmimport(viewer, ['watch', 'no-such-task']),
    vmimport(admin, ['create', 'x', '--vm', 'web-01']),
  ]);
  assert.equal(denied.code, 1, show(denied));
  assert.match(denied.stderr, /^Error from server \(Forbidden\): vmimporttasks\.forklift\.cozystack\.io is forbidden: User "tenant-b" cannot create resource "vmimporttasks" in API group "forklift\.cozystack\.io" in the namespace "cli-[0-9a-f]+"$/m);
  assert.match(denied.stderr, /^fix: creating or changing imports in cli-[0-9a-f]+ needs a tenant admin role there \(cozy:tenant:admin\)/m);

  assert.equal(blocked.code, 1, show(blocked));
  assert.match(blocked.stderr, /admission webhook .* denied the request: spec\.vms\[0\]: VM "rdm-01" \(vm-105\) is Blocked: Raw Device Mapped disk detected .* Fix: remove the RDM disk/);
  assert.equal(await c.get(GVRs.VMImportTask, ns, 'rdm'), undefined);

  assert.equal(gone.code, 1, show(gone));
  assert.match(gone.stderr, /error: vmimporttasks\.forklift\.cozystack\.io "no-such-task" not found in namespace cli-[0-9a-f]+\nfix: list the tasks with kubectl get vmimporttasks -n cli-/);

  assert.equal(usage.code, 2, show(usage));
  assert.match(usage.stderr, /^error: --source SOURCE is required\nusage: kubectl vmimport create TASK/);
});

test('every command answers --help with its usage and an example, and bash, zsh and kubectl complete commands, flags and the namespace\'s task names', async () => {
  // Every process of this test only reads: all run side by side.
  const [helps, top, k, bash, vms, zsh, hasZsh] = await Promise.all([
    Promise.all(COMMANDS.map((cmd) => vmimport(viewer, [cmd.name, '--help']))),
    vmimport(viewer, ['--help']),
    // kubectl's own completion of a plugin (kubectl 1.26+ runs kubectl_complete-vmimport).
    shWithPlugin(viewer, 'kubectl __complete vmimport watch web 2>/dev/null'),
    // bash: the script the plugin prints, driven as bash drives it on <TAB>.
    shWithPlugin(viewer, 'source <(kubectl-vmimport completion bash); COMP_WORDS=(kubectl-vmimport report w); COMP_CWORD=2; _kubectl_vmimport; printf "%s\\n" "${COMPREPLY[@]}"; COMP_WORDS=(kubectl-vmimport vms vc --b); COMP_CWORD=3; _kubectl_vmimport; printf "%s\\n" "${COMPREPLY[@]}"'),
    shWithPlugin(viewer, 'source <(kubectl-vmimport completion bash); COMP_WORDS=(kubectl-vmimport create t --source vc --vm we); COMP_CWORD=6; _kubectl_vmimport; printf "%s\\n" "${COMPREPLY[@]}"'),
    vmimport(viewer, ['completion', 'zsh']),
    shWithPlugin(viewer, 'command -v zsh').then((r) => r.code === 0),
  ]);
  for (const [i, cmd] of COMMANDS.entries()) {
    const h = helps[i]!;
    assert.equal(h.code, 0, show(h));
    assert.match(h.stdout, new RegExp(`^Usage: kubectl vmimport ${cmd.name}\\b`, 'm'));
    assert.ok(h.stdout.includes(`Example:\n  ${cmd.example}`), h.stdout);
  }
  for (const cmd of COMMANDS) assert.match(top.stdout, new RegExp(`^ {2}${cmd.name} +\\S`, 'm'));

  assert.deepEqual(k.stdout.trim().split('\n'), ['web-tier', ':4'], show(k));
  assert.deepEqual(bash.stdout.trim().split('\n').sort(), ['--blocked', 'warm', 'web-tier'], show(bash));
  assert.deepEqual(vms.stdout.trim().split('\n').sort(), ['web-01'], show(vms));
  // zsh: the script parses (zsh itself, where the machine has it).
  assert.match(zsh.stdout, /^#compdef kubectl-vmimport\n/);
  assert.match(zsh.stdout, /kubectl-vmimport __complete/);
  if (hasZsh) {
    const parsed = await shWithPlugin(viewer, 'kubectl-vmimport completion zsh | zsh -n');
    assert.equal(parsed.code, 0, show(parsed));
  }
});
