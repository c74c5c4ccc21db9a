// What the cli-*.test.ts files share: `kubectl vmimport …` run through the machine's kubectl (which finds
// the plugin on PATH, as on a user's machine: scripts/demo/plugin.ts), as a tenant of a namespace bound
// only to Cozystack's tenant roles, with that namespace as its kubeconfig context's.
import { execFile, type ExecFileException } from 'node:child_process';
import { join } from 'node:path';
import { installPluginShims } from '../../scripts/demo/plugin.ts';
import { bindTenant, testEnv, writeKubeconfig, type TenantAccess } from './env/index.ts';

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let shims: Promise<string> | undefined;

/** The folder holding kubectl-vmimport for this run (written once per process). */
async function pluginDir(): Promise<string> {
  shims ??= testEnv().then((env) => installPluginShims(join(env.dir, `vmimport-plugin-${process.pid}`)));
  return await shims;
}

/**
 * A tenant (tenants[tenant]) bound in `ns` to Cozystack's `cozy:tenant:<access>` (bindTenant), and a
 * kubeconfig of its own whose context names `ns`: the plugin finds the namespace as kubectl would.
 */
export async function tenantKubeconfig(ns: string, access: TenantAccess = 'admin', tenant = 0): Promise<string> {
  await bindTenant(ns, { access, tenant });
  const env = await testEnv();
  const t = env.tenants[tenant]!;
  const path = join(env.dir, `cli-${ns}-${t.name}.kubeconfig`);
  writeKubeconfig(path, env.server, env.caPEM, t.name, t.token, ns);
  return path;
}

/** `kubectl vmimport ARGS…` with `kubeconfig` (never throws on a non-zero exit). */
export async function vmimport(kubeconfig: string, args: string[], o: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  const dir = await pluginDir();
  return await new Promise((res) => {
    execFile(
      'kubectl',
      ['vmimport', ...args],
      { timeout: o.timeoutMs ?? 60_000, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, ...o.env, KUBECONFIG: kubeconfig, PATH: `${dir}:${process.env.PATH ?? ''}` } },
      (err, stdout, stderr) => {
        res(outcome(err, stdout, stderr));
      },
    );
  });
}

/** A shell command line run with the plugin on PATH and `kubeconfig` as KUBECONFIG (completion scripts). */
export async function shWithPlugin(kubeconfig: string, script: string, shell = 'bash'): Promise<Run> {
  const dir = await pluginDir();
  return await new Promise((res) => {
    execFile(shell, ['-c', script], { timeout: 60_000, env: { ...process.env, KUBECONFIG: kubeconfig, PATH: `${dir}:${process.env.PATH ?? ''}` } }, (err, stdout, stderr) => {
      res(outcome(err, stdout, stderr));
    });
  });
}

/** What execFile's callback saw; a process ended by the timeout says so, not a bare exit 1. */
function outcome(err: ExecFileException | null, stdout: string | Buffer, stderr: string | Buffer): Run {
  if (!err) return { code: 0, stdout: String(stdout), stderr: String(stderr) };
  const killed = err.killed || err.signal ? `\n[ended by ${err.signal ?? 'a signal'}${err.killed ? ' at the timeout' : ''}]` : '';
  return { code: typeof err.code === 'number' ? err.code : 1, stdout: String(stdout), stderr: `${String(stderr)}${killed}` };
}

/** A Run for an assertion message. */
export function show(r: Run): string {
  return `exit ${r.code}\n--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}`;
}
