// What e2e tests, benchmarks and the demo import: the shared control plane and small helpers over it.
//
// `npm run test:e2e` (test/e2e/run.ts) starts ONE control plane, writes its descriptor to a file and
// names it in MC_TESTENV; every e2e file connects to it. A file run on its own (node --test file.ts)
// starts a private control plane instead and stops it when the process exits.
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash, randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import YAML from 'yaml';
import { ControlPlane, type ControlPlaneInfo } from './controlplane.ts';
import { KubeClient, isNotFound, type KubeObject } from '../../../src/runtime/kube.ts';
import { GVRs, type GVR } from '../../../src/runtime/gvr.ts';
import { helmTemplate, tenantRoles } from '../../../scripts/demo/tools.ts';
import { waitIntervals } from './wait.ts';
import { OWNER_LABEL, PROCESS_OWNER } from '../../sim/scope.ts';

export { WAIT_BACKOFF, waitIntervals } from './wait.ts';
export { ControlPlane, type ControlPlaneInfo, type Identity, SERVICE_CIDR, TENANT_NAMES, TENANT_ROLES_FIXTURE, freePort, writeKubeconfig, findAssets } from './controlplane.ts';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

let shared: Promise<ControlPlaneInfo> | undefined;
let privatePlane: Promise<ControlPlane> | undefined;

/** The control plane of this test run (shared), or a private one when the file runs alone. */
export function testEnv(): Promise<ControlPlaneInfo> {
  if (!shared) {
    const file = process.env.MC_TESTENV;
    // The e2e runner's lane without a plane (test/e2e/env/shards.ts OWN_PLANE_FILES): a file there starts
    // every plane it uses.
    if (file === 'none') throw new Error('this e2e file runs without the shared control plane (it is listed in test/e2e/env/shards.ts OWN_PLANE_FILES) but asked for it');
    if (file) {
      shared = Promise.resolve(JSON.parse(readFileSync(file, 'utf8')) as ControlPlaneInfo);
    } else {
      // The private plane's processes must not hold the event loop, or `beforeExit` (which stops it)
      // never fires and the process never ends.
      privatePlane = ControlPlane.start({ letProcessExit: true }).then((cp) => {
        process.once('beforeExit', () => void cp.stop());
        return cp;
      });
      shared = privatePlane.then((cp) => cp.info);
    }
  }
  return shared;
}

/** Stops the private control plane this process started, if any (a shared one is left to its owner). */
export async function stopTestEnv(): Promise<void> {
  if (privatePlane) await (await privatePlane).stop();
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
  /** A fixed interval between observations; without it the interval starts short and grows (below). */
  intervalMs?: number;
}

/**
 * Waits until `fn` returns a truthy value and returns it; fails with `what` and the last observation
 * when the deadline passes. This is how tests synchronise: on a condition, with a deadline.
 */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | null | false> | T | undefined | null | false, opts: WaitOptions = {}): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  const intervals = waitIntervals();
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
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? intervals.next().value));
  }
}

/**
 * Creates a namespace with a unique name (label `e2e=true`, and this process's owner label: the simulator
 * of a later file on the same plane leaves it alone, test/sim/scope.ts) and returns its name.
 */
export async function freshNamespace(prefix = 'e2e', labels: Record<string, string> = {}): Promise<string> {
  const kc = await adminKubeConfig();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const name = `${prefix}-${randomBytes(3).toString('hex')}`.toLowerCase();
  await core.createNamespace({ body: { metadata: { name, labels: { e2e: 'true', [OWNER_LABEL]: PROCESS_OWNER, ...labels } } } });
  return name;
}

/**
 * Deletes every namespace an owner made (freshNamespace's owner label; by default this process's). A file
 * calls it while its controller and simulator still run, so their finalizers are answered: a source left
 * behind would be retried by every later file's controller on the shared plane, against a simulator that no
 * longer knows it. The VMImportSources and VMImportTasks in those namespaces are deleted first and waited
 * for, at most `waitMs`; the namespaces after them. What is still there at the deadline is named on stderr
 * and left to the namespace controller (the file does not fail). `release` drops those two kinds'
 * finalizers instead of waiting: the e2e runner's sweep after a file has ended, whose controller is gone
 * (else the next file's would act on them).
 *
 * Why the objects go before their namespaces: at each pass over a deleted namespace kube-controller-manager's
 * namespace controller rereads discovery (~30 GETs) and lists and deletes every namespaced kind the plane
 * serves (~40 kinds, ~80 requests); a pass that still finds an object held by a finalizer passes again a few
 * seconds later. A namespace deleted with its sources and tasks in it was passed over twice, and those
 * passes were over a third of a shared plane's requests.
 */
export async function deleteOwnedNamespaces(c: KubeClient, o: { owner?: string; waitMs?: number; release?: boolean } = {}): Promise<void> {
  const owned = await c.listAll(GVRs.Namespace, undefined, { labelSelector: `${OWNER_LABEL}=${o.owner ?? PROCESS_OWNER}` });
  const names = new Set(owned.items.filter((n) => !n.metadata!.deletionTimestamp).map((n) => n.metadata!.name!));
  if (names.size === 0) return;
  const left = async (): Promise<Array<{ gvr: GVR; o: KubeObject }>> => {
    const out: Array<{ gvr: GVR; o: KubeObject }> = [];
    for (const gvr of [GVRs.VMImportTask, GVRs.VMImportSource]) {
      for (const x of (await c.listAll(gvr)).items) if (names.has(x.metadata!.namespace!)) out.push({ gvr, o: x });
    }
    return out;
  };
  const deleteNamespaces = (): Promise<unknown> => Promise.all([...names].map((n) => c.delete(GVRs.Namespace, undefined, n, { propagationPolicy: 'Background' })));
  if (o.release) {
    for (const { gvr, o: x } of await left()) {
      if (!x.metadata!.finalizers?.length) continue;
      await c.patch(gvr, x.metadata!.namespace, x.metadata!.name!, { metadata: { finalizers: null } }, 'merge').catch((e: unknown) => {
        if (!isNotFound(e)) throw e;
      });
    }
    await deleteNamespaces();
    return;
  }
  const waitMs = o.waitMs ?? 0;
  if (waitMs > 0) {
    let rest = await left();
    await Promise.all(rest.filter(({ o: x }) => !x.metadata!.deletionTimestamp).map(({ gvr, o: x }) => c.delete(gvr, x.metadata!.namespace, x.metadata!.name!, { propagationPolicy: 'Background' })));
    const deadline = Date.now() + waitMs;
    const intervals = waitIntervals();
    while (rest.length > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, intervals.next().value));
      rest = await left();
    }
    if (rest.length > 0) {
      const named = rest.map(({ gvr, o: x }) => `${gvr.kind} ${x.metadata!.namespace}/${x.metadata!.name}`);
      console.error(`[e2e] still being deleted after ${Math.round(waitMs / 1000)} s (left to the namespace controller): ${named.join(', ')}`);
    }
  }
  await deleteNamespaces();
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
export async function applyObjects(objs: k8s.KubernetesObject[], fieldManager = 'e2e', kc?: k8s.KubeConfig): Promise<void> {
  const client = new KubeClient(kc ?? (await adminKubeConfig()), { fieldManager });
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

// The digest of the crds/ files our CRDs were last applied from, kept on each CRD: a file whose plane already
// has exactly these (every file after the first on a shared plane) neither parses nor applies them. Each
// such apply changed nothing, yet cost the file a YAML parse of both CRDs and kube-apiserver a decode,
// merge and validation of each.
const CRDS_DIGEST = 'e2e.migration-controller/crds-sha256';

/** Installs our own CRDs (crds/), on this run's control plane or the one `kc` names. */
export async function installOurCRDs(kc?: k8s.KubeConfig): Promise<void> {
  const dir = join(REPO_ROOT, 'crds');
  const files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort();
  const hash = createHash('sha256');
  for (const f of files) hash.update(f).update('\0').update(readFileSync(join(dir, f))).update('\0');
  const digest = hash.digest('hex');
  // crds/<group>_<plural>.yaml holds the CRD <plural>.<group> (src/api/models.ts crdSchema reads them so).
  const names = files.map((f) => /^(.+?)_(.+)\.ya?ml$/.exec(f)).map((m) => (m ? `${m[2]}.${m[1]}` : undefined));
  if (names.every((n) => n !== undefined)) {
    const client = new KubeClient(kc ?? (await adminKubeConfig()));
    try {
      const current = await Promise.all(names.map((n) => client.get<KubeObject & { status?: { conditions?: Array<{ type: string; status: string }> } }>(GVRs.CustomResourceDefinition, undefined, n)));
      const same = (c: (typeof current)[number]): boolean =>
        !!c && !c.metadata?.deletionTimestamp && c.metadata?.annotations?.[CRDS_DIGEST] === digest && !!c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
      if (current.every(same)) return;
    } finally {
      client.close();
    }
  }
  const objs = loadYamlObjects(dir).map((o) => (o.kind === 'CustomResourceDefinition' ? { ...o, metadata: { ...o.metadata, annotations: { ...(o.metadata?.annotations ?? {}), [CRDS_DIGEST]: digest } } } : o));
  await applyObjects(objs, 'e2e', kc);
}

/** Cozystack's tenant access levels (test/fixtures/cozystack-tenant-roles.yaml), lowest first. */
export type TenantAccess = 'view' | 'use' | 'admin' | 'super-admin';

let chartTenantRoles: Promise<void> | undefined;

/**
 * The chart's tenant ClusterRoles (those labelled rbac.cozystack.io/aggregate-to-tenant-*), rendered
 * from the chart as `helm template` does and applied, so they aggregate into Cozystack's roles as they
 * do on a platform where the chart is installed. Once per process; idempotent on the shared plane.
 * Not for a control plane where the chart itself is installed (Helm refuses to adopt them).
 */
export function installChartTenantRoles(): Promise<void> {
  chartTenantRoles ??= (async () => {
    const roles = tenantRoles(await helmTemplate());
    if (roles.length === 0) throw new Error('the chart renders no ClusterRole carrying a Cozystack tenant aggregation label');
    await applyObjects(roles as unknown as k8s.KubernetesObject[]);
  })();
  return chartTenantRoles;
}

/**
 * Binds a tenant identity (tenants[0] unless told) in `ns` to Cozystack's tenant role of `access`
 * level — RoleBinding `cozy:tenant:<access>` to ClusterRole `cozy:tenant:<access>`, as Cozystack's
 * tenant chart does (cozystack/cozystack@v1.6.2:packages/apps/tenant/templates/tenant.yaml; it binds
 * the groups <tenant>-<access>, here the user itself) — after installing the chart's tenant roles.
 * Waits until the aggregated role shows the chart's rules to that tenant, and returns its kubeconfig.
 * Never the built-in `admin`: a tenant gets exactly what a tenant of the platform gets.
 */
export async function bindTenant(ns: string, o: { access?: TenantAccess; tenant?: number; chartRoles?: boolean } = {}): Promise<string> {
  const env = await testEnv();
  const tenant = env.tenants[o.tenant ?? 0];
  if (!tenant) throw new Error(`no tenant identity #${o.tenant}`);
  const access = o.access ?? 'admin';
  if (o.chartRoles ?? true) await installChartTenantRoles();
  const name = `cozy:tenant:${access}`;
  await applyObjects([
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: tenant.name }],
    } as k8s.KubernetesObject,
  ]);
  // The aggregation controller and the authorizer's cache act asynchronously: wait for the tenant to
  // see our kinds (view and up), and to create tasks (admin and up).
  const verb = access === 'admin' || access === 'super-admin' ? 'create' : 'list';
  await waitFor(`${tenant.name} to hold ${name} in ${ns}`, async () => {
    const r = await kubectl(['auth', 'can-i', verb, 'vmimporttasks.forklift.cozystack.io', '-n', ns], { kubeconfig: tenant.kubeconfigPath });
    return r.stdout.trim() === 'yes';
  });
  return tenant.kubeconfigPath;
}
