// `npm run demo` as a newcomer runs it: a child process on a fresh, private control plane. What they
// must see: the WaitForFirstConsumer task refused at admission with the reason, live progress, a final
// Ready, the VMDisks and the Halted VMInstances with downtime — and no process left behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './env/index.ts';

const NODE = process.execPath;

/** Every live process whose command line names a control-plane binary under the given folder. */
function controlPlaneProcesses(dir: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((l) => l.includes(dir) && /\b(etcd|kube-apiserver|kube-controller-manager)\b/.test(l));
}

/** Runs `scripts/demo.ts` as a newcomer would, with a deadline; fails unless it exits 0. */
async function runDemo(args: string[]): Promise<{ stdout: string; both: string }> {
  const child = spawn(NODE, [join(REPO_ROOT, 'scripts/demo.ts'), ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MC_TESTENV: '' } });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const code = await new Promise<number | null>((res) => {
    // A deadline, not a sleep: the demo is killed (and the test fails) if it hangs. Beyond the demo's own
    // import deadline (6 min) with room for its control plane's start on a loaded machine, so that a stuck
    // import is reported by the demo itself, with its stuck-import report.
    const timer = setTimeout(() => child.kill('SIGINT'), 480_000);
    child.on('exit', (c) => {
      clearTimeout(timer);
      res(c);
    });
  });
  const both = `${stdout}\n--- stderr ---\n${stderr}`;
  // Why it failed first (the demo's error and its last screen), then the whole run: a runner that
  // repeats only the head of a failure still shows the cause.
  assert.equal(code, 0, `the demo exited ${code}\n--- stderr ---\n${stderr}\n--- the last 60 lines of its output ---\n${stdout.trimEnd().split('\n').slice(-60).join('\n')}\n--- its whole output ---\n${stdout}`);
  return { stdout, both };
}

test('the demo refuses a WaitForFirstConsumer task at admission, shows the import with kubectl vmimport watch to Ready, lists Halted VMInstances, and leaves no process behind', async () => {
  const { stdout, both } = await runDemo(['--fast']);

  // The control plane the demo started (its working folder is printed with the logs path).
  const logs = /logs in (\S+)/.exec(stdout)?.[1];
  assert.ok(logs, `no control-plane logs path in the output:\n${both}`);

  // The one failure caught at admission, in the webhook's own words.
  assert.match(stdout, /caCert placeholder is replaced by the simulated vCenter's CA/);
  assert.match(stdout, /denied the request: spec\.storageClass: storage class "local" has volumeBindingMode WaitForFirstConsumer; .*storage classes that bind Immediate: replicated/);
  // Live progress with bars, bytes and a final Ready, drawn by the plugin as the tenant runs it.
  // While it transfers, the task's own ETA in its printer column, as kubectl get shows it.
  assert.match(stdout, /==> As the tenant, while it transferred: kubectl get vmimporttask import-web-tier\n\s*NAME +SOURCE +MODE +PHASE +PROGRESS +ETA +READY +AGE\n\s*import-web-tier +vcenter-prod +cold +Transferring +[\d.]+ +\d+[smhd]\w* +False +\S+\n/);
  assert.match(stdout, /==> As the tenant: kubectl vmimport watch import-web-tier\n/);
  assert.match(stdout, /\nimport-web-tier: all 2 VMs imported\n/);
  // A transfer on screen with its bar and bytes: web-01's or db-01's, whichever was still moving when the
  // plugin (started after the apply, on a machine that may be running the whole suite) drew its first frame.
  assert.match(stdout, /(web-01 +Transferring +\[[#-]+\] +\d+% +[\d.]+ \w?i?B \/ 16\.0 GiB|db-01 +Transferring +\[[#-]+\] +\d+% +[\d.]+ \w?i?B \/ 40\.0 GiB)/);
  assert.doesNotMatch(stdout, /import-web-tier: not found/, 'the watch never shows an existing task as not found');
  assert.match(stdout, /db-01 +Succeeded +\[#+\] 100% +40\.0 GiB \/ 40\.0 GiB +done, downtime \d+s/);
  assert.match(stdout, /vmimporttask\.forklift\.cozystack\.io\/import-web-tier condition met/);
  assert.match(stdout, /import-web-tier +vcenter-prod +cold +Succeeded +100 +True/);
  // The outputs: four VMDisks on the Immediate class, two Halted VMInstances, downtime per VM.
  for (const d of ['db-01-disk-0', 'db-01-disk-1', 'db-01-disk-2', 'web-01-disk-0']) assert.match(stdout, new RegExp(`\\b${d} +[\\d.]+ GiB +replicated`));
  assert.match(stdout, /\bweb-01 +Halted +web-01-disk-0\(sata\)/);
  assert.match(stdout, /\bdb-01 +Halted +db-01-disk-0\(sata\) db-01-disk-1\(sata\) db-01-disk-2\(sata\)/);
  assert.match(stdout, /\bweb-01 +vm-101 +16\.0 GiB +\d+s/);
  assert.match(stdout, /\bdb-01 +vm-102 +40\.0 GiB +\d+s/);
  assert.match(stdout, /Everything stopped/);

  // Nothing outlives the demo.
  const dir = logs.replace(/\/logs$/, '');
  assert.deepEqual(controlPlaneProcesses(dir), []);
});

test('the warm demo shows precopies while the VMs run with kubectl vmimport watch, cuts over with kubectl vmimport cutover --now --watch, and ends with Halted VMInstances and the precopies counted', async () => {
  const { stdout, both } = await runDemo(['--warm', '--fast']);
  const logs = /logs in (\S+)/.exec(stdout)?.[1];
  assert.ok(logs, `no control-plane logs path in the output:\n${both}`);

  // Precopies tick while the sources run, before any cutover is asked for.
  const cut = stdout.indexOf('==> Cutover now');
  assert.ok(cut > 0, `the demo never asked for the cutover:\n${both}`);
  const before = stdout.slice(0, cut);
  assert.match(before, /web-01 +Precopying .*precopies ([2-9]|[1-9]\d+)\b/);
  assert.match(before, /db-01 +Precopying .*precopies ([2-9]|[1-9]\d+)\b/);
  assert.doesNotMatch(before, /CuttingOver/);
  // The cutover is the plugin's, run as the tenant, and the webhook admits it.
  assert.match(stdout, /==> Cutover now, as the tenant: kubectl vmimport cutover import-web-tier-warm --now --watch\nvmimporttask\.forklift\.cozystack\.io\/import-web-tier-warm patched: cutover at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n/);
  assert.match(stdout.slice(cut), /CuttingOver .*source powered off/);
  assert.match(stdout.slice(cut), /\nimport-web-tier-warm: all 2 VMs imported\n/);
  assert.match(stdout, /import-web-tier-warm +vcenter-prod +warm +Succeeded +100 +True/);
  assert.match(stdout, /\bweb-01 +Halted +web-01-disk-0\(sata\)/);
  assert.match(stdout, /\bdb-01 +Halted +db-01-disk-0\(sata\) db-01-disk-1\(sata\) db-01-disk-2\(sata\)/);
  assert.match(stdout, /\bweb-01 +vm-101 +16\.0 GiB +([2-9]|[1-9]\d+) +\d+s/);
  assert.match(stdout, /\bdb-01 +vm-102 +40\.0 GiB +([2-9]|[1-9]\d+) +\d+s/);
  assert.match(stdout, /Everything stopped/);
  assert.deepEqual(controlPlaneProcesses(logs.replace(/\/logs$/, '')), []);
});
