// What e2e tests, benchmarks and the demo import: the shared control plane and small helpers over it.
//
// `npm run test:e2e` (test/e2e/run.ts) starts ONE control plane, writes its descriptor to a file and
// names it in MC_TESTENV; every e2e file connects to it. A file run on its own (node --test file.ts)
// starts a private control plane instead and stops it when the process exits.
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import YAML from 'yaml';
import { ControlPlane, type ControlPlaneInfo } from './controlplane.ts';
import { KubeClient } from '../../../src/runtime/kube.ts';
import { GVRs, type GVR } from '../../../src/runtime/gvr.ts';

export { ControlPlane, type ControlPlaneInfo, type Identity, SERVICE_CIDR, TENANT_NAMES, freePort, writeKubeconfig, findAssets } from './controlplane.ts';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

let shared: Promise<ControlPlaneInfo> | undefined;

/** The control plane of this test run (shared), or a private one when the file runs alone. */
export function testEnv(): Promise<ControlPlaneInfo> {
  if (!shared) {
    const file = process.env.MC_TESTENV;
    if (file) {
      shared = Promise.resolve(JSON.parse(readFileSync(file, 'utf8')) as ControlPlaneInfo);
    } else {
      shared = ControlPlane.start().then((cp) => {
        process.once('beforeExit', () => void cp.stop());
        return cp.info;
      });
    }
  }
  return shared;
}

export function kubeConfigFor(kubeconfigPath: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return kc;
}

export async function adminKubeConfig(): Promise<k8s.KubeConfig> {
  return kubeConfigFor((await testEnv()).admin.kubeconfigPath);
}

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
}

/**
 * Waits until `fn` returns a truthy value and returns it; fails with `what` and the last observation
 * when the deadline passes. This is how tests synchronise: on a condition, with a deadline.
 */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | null | false> | T | undefined | null | false, opts: WaitOptions = {}): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      lastErr = undefined;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${lastErr ? `: ${(lastErr as Error).message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 50));
  }
}

/** Creates a namespace with a unique name (label `e2e=true`) and returns its name. */
export async function freshNamespace(prefix = 'e2e', labels: Record<string, string> = {}): Promise<string> {
  const kc = await adminKubeConfig();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const name = `${prefix}-${randomBytes(3).toString('hex')}`.toLowerCase();
  await core.createNamespace({ body: { metadata: { name, labels: { e2e: 'true', ...labels } } } });
  return name;
}

/** Runs the machine's kubectl against the control plane (as admin unless a kubeconfig is given). */
export async function kubectl(args: string[], o: { kubeconfig?: string; input?: string; timeoutMs?: number } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = await testEnv();
  return await new Promise((res) => {
    const child = execFile(
      'kubectl',
      ['--kubeconfig', o.kubeconfig ?? env.admin.kubeconfigPath, ...args],
      { timeout: o.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
        res({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    if (o.input !== undefined) {
      child.stdin?.end(o.input);
    }
  });
}

/** Parses every YAML document in a file or folder (recursively, *.yaml / *.yml). */
export function loadYamlObjects(path: string): k8s.KubernetesObject[] {
  const files: string[] = [];
  const walk = (p: string): void => {
    let entries;
    try {
      entries = readdirSync(p, { withFileTypes: true });
    } catch {
      files.push(p);
      return;
    }
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const full = join(p, e.name);
      if (e.isDirectory()) walk(full);
      else if (/\.ya?ml$/.test(e.name)) files.push(full);
    }
  };
  walk(path);
  return files.flatMap((f) => YAML.parseAllDocuments(readFileSync(f, 'utf8')).map((d) => d.toJSON() as k8s.KubernetesObject).filter((o) => o && o.kind));
}

/**
 * Server-side applies objects (CRDs included) as the admin and, for CRDs, waits until Established.
 * Idempotent: safe to call from every test file against the shared control plane. Objects travel as raw
 * JSON (never through client-node's typed models, which drop fields such as
 * `x-kubernetes-preserve-unknown-fields` they do not know how to serialise).
 */
export async function applyObjects(objs: k8s.KubernetesObject[], fieldManager = 'e2e'): Promise<void> {
  const client = new KubeClient(await adminKubeConfig(), { fieldManager });
  const plurals = new Map<string, { plural: string; namespaced: boolean }>();
  const resolve = async (apiVersion: string, kind: string): Promise<GVR> => {
    const [group, version] = apiVersion.includes('/') ? (apiVersion.split('/') as [string, string]) : ['', apiVersion];
    const key = `${apiVersion}/${kind}`;
    if (!plurals.has(key)) {
      const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
      const list = await client.request<{ resources: Array<{ name: string; kind: string; namespaced: boolean }> }>('GET', path);
      for (const r of list.resources) if (!r.name.includes('/')) plurals.set(`${apiVersion}/${r.kind}`, { plural: r.name, namespaced: r.namespaced });
    }
    const found = plurals.get(key);
    if (!found) throw new Error(`the API server does not serve ${kind} in ${apiVersion}`);
    return { group, version, plural: found.plural, kind, namespaced: found.namespaced };
  };
  for (const o of objs) {
    const gvr = await resolve(o.apiVersion!, o.kind!);
    await client.patch(gvr, o.metadata?.namespace, o.metadata!.name!, o, 'apply', { force: true });
  }
  for (const c of objs.filter((o) => o.kind === 'CustomResourceDefinition')) {
    await waitFor(`CRD ${c.metadata?.name} Established`, async () => {
      const got = await client.get<{ status?: { conditions?: Array<{ type: string; status: string }> } }>(GVRs.CustomResourceDefinition, undefined, c.metadata!.name!);
      return got?.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
    });
  }
  client.close();
}

/** Installs our own CRDs (crds/). */
export async function installOurCRDs(): Promise<void> {
  await applyObjects(loadYamlObjects(join(REPO_ROOT, 'crds')));
}
