// The single-file kubectl-vmimport (npm run build:plugin: Node's single executable application support)
// works as the plugin on its own: kubectl finds it on PATH, and it reads the tenant's kubeconfig and talks
// to the real API server with the tenant's rights — nothing of this checkout beside it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildPluginExecutable } from '../../scripts/build-plugin.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeObject } from '../../src/runtime/kube.ts';
import { patchStatus } from '../../src/runtime/status.ts';
import { freshNamespace, installOurCRDs } from './env/index.ts';
import { adminClient } from './source-helpers.ts';
import { show, tenantKubeconfig, type Run } from './cli-plugin.ts';

let dir: string;
let ns: string;
let tenant: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vmimport-sea-'));
  await buildPluginExecutable(dir);
  await installOurCRDs();
  ns = await freshNamespace('cli-sea');
  tenant = await tenantKubeconfig(ns, 'view');
  // A source as the controller would have published it (no controller runs here: only the plugin is tested).
  const c = await adminClient();
  const src = (await c.create(GVRs.VMImportSource, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name: 'vc', namespace: ns }, spec: { type: 'vsphere', url: 'https://vc.example.com/sdk', credentials: { username: 'u@vsphere.local', password: 'p', insecureSkipVerify: true } } } as KubeObject)) as KubeObject;
  await patchStatus(c, GVRs.VMImportSource, src, {
    inventory: { total: 1, listed: 1, truncated: false, summary: { ready: 1, readyWithWarnings: 0, blocked: 0 }, vms: [{ id: 'vm-7', name: 'web-07', path: '/dc/vm/web-07', host: 'host-3', power: 'poweredOff', os: 'linux', firmware: 'bios', disks: [{ capacity: 4 * 2 ** 30 }], verdict: 'Ready' }] },
  });
  c.close();
});

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** kubectl vmimport, with only the single file (and kubectl) on PATH. */
function sea(args: string[]): Promise<Run> {
  return new Promise((res) => {
    execFile('kubectl', ['vmimport', ...args], { env: { PATH: `${dir}:/usr/local/bin:/usr/bin:/bin`, KUBECONFIG: tenant, HOME: dir }, timeout: 60_000 }, (err, stdout, stderr) => {
      res({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

test('the single-file plugin is one executable that lists a source\'s VMs as the tenant and reports a missing task in the API\'s words', async () => {
  assert.deepEqual(readdirSync(dir).filter((f) => f === 'kubectl-vmimport'), ['kubectl-vmimport']);
  const vms = await sea(['vms', 'vc']);
  assert.equal(vms.code, 0, show(vms));
  assert.match(vms.stdout, /^web-07 +vm-7 +poweredOff +linux +bios +1 +4\.0 GiB +host-3 +Ready$/m);
  const gone = await sea(['report', 'nope']);
  assert.equal(gone.code, 1, show(gone));
  assert.match(gone.stderr, /error: vmimporttasks\.forklift\.cozystack\.io "nope" not found in namespace cli-sea-/);
  const help = await sea(['retry', '--help']);
  assert.match(help.stdout, /^Usage: kubectl vmimport retry TASK/m);
});
