// Setup shared by the e2e files: the simulated world (sim + controller + client) a file boots once, a
// tenant holding Cozystack's tenant-admin role in a namespace, the webhook's answers as a tenant reads them, the
// stand-in CRDs, and a process liveness probe. Each helper is small so a file still reads on its own.
import { createStorageClass, standInCRDs, startSim, type Sim, type SimOptions, type WorldFixture } from '../sim/index.ts';
import { Rest } from '../sim/testing.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, bindTenant, deleteOwnedNamespaces, installOurCRDs, kubectl, testEnv, waitFor, type ControlPlaneInfo, type TenantAccess } from './env/index.ts';
import { startController, type StartControllerOptions } from './controller.ts';
import { adminClient } from './source-helpers.ts';

/** The VDDK image a controller is configured with unless a file says otherwise (a source then connects). */
export const VDDK_IMAGE = 'registry.example.com/vddk:8.0.3';

type StorageClassSpec = Parameters<typeof createStorageClass>[1];

export interface SimBootOptions {
  worlds: WorldFixture[];
  /** Created (or replaced) before the sim starts; provisioned by the sim. */
  storageClasses?: StorageClassSpec[];
  /** The rest of startSim's options (mbPerSecond, timings, forkliftInstalled, …). */
  sim?: Omit<SimOptions, 'kubeconfigPath' | 'worlds'>;
}

export interface BootedSim {
  env: ControlPlaneInfo;
  sim: Sim;
  /** The sim's raw REST client, as the admin. */
  rest: Rest;
  shutdown(): Promise<void>;
}

/** The simulator alone over the shared control plane (the sim-* files): classes, sim, a REST client. */
export async function bootSim(o: SimBootOptions): Promise<BootedSim> {
  const env = await testEnv();
  for (const sc of o.storageClasses ?? []) await createStorageClass(env.admin.kubeconfigPath, sc);
  const sim = await startSim({ kubeconfigPath: env.admin.kubeconfigPath, worlds: o.worlds, ...(o.sim ?? {}) });
  const rest = new Rest(env.admin.kubeconfigPath);
  return {
    env,
    sim,
    rest,
    shutdown: async () => {
      await sim.stop();
      rest.close();
    },
  };
}

export interface WorldBootOptions extends SimBootOptions {
  /** Controller options beyond kubeconfig and inventory URL; vddkImage defaults to VDDK_IMAGE. */
  controller?: Omit<StartControllerOptions, 'kubeconfigPath' | 'inventoryURL'>;
}

export interface BootedWorld {
  env: ControlPlaneInfo;
  sim: Sim;
  /** The running controller (after restartController(), the new one: the same object delegates). */
  ctl: { stop(): Promise<void>; metricsURL: string };
  /** Stops the controller and starts a new one with the same options (a restart: memory is lost). */
  restartController(): Promise<void>;
  /** The admin's KubeClient. */
  c: KubeClient;
  /** Deletes the file's namespaces, stops the controller, then the sim, then closes the client; safe to call more than once. */
  shutdown(): Promise<void>;
}

// How long a file's end waits for its sources and tasks to be deleted: a task's finalizer retires its
// Plans (archive, then delete) through the simulator in a few seconds; past this the file ends anyway.
const CLEANUP_WAIT_MS = 30_000;

/**
 * The standard world of the controller files: our CRDs, the given storage classes, the simulated
 * vCenter/Forklift/CDI/Cozystack, the controller pointed at the sim's inventory, and an admin client.
 */
export async function bootWorld(o: WorldBootOptions): Promise<BootedWorld> {
  const env = await testEnv();
  await installOurCRDs();
  for (const sc of o.storageClasses ?? []) await createStorageClass(env.admin.kubeconfigPath, sc);
  const sim = await startSim({ kubeconfigPath: env.admin.kubeconfigPath, worlds: o.worlds, ...(o.sim ?? {}) });
  const start = () => startController({ vddkImage: VDDK_IMAGE, ...(o.controller ?? {}), kubeconfigPath: env.admin.kubeconfigPath, inventoryURL: sim.inventory.url });
  let cur: BootedWorld['ctl'];
  try {
    cur = await start();
  } catch (e) {
    await sim.stop();
    throw e;
  }
  let stopped: Promise<void> | undefined;
  const ctl: BootedWorld['ctl'] = {
    get metricsURL() {
      return cur.metricsURL;
    },
    stop: () => (stopped ??= cur.stop()),
  };
  const c = await adminClient();
  let shut: Promise<void> | undefined;
  return {
    env,
    sim,
    ctl,
    restartController: async () => {
      await ctl.stop();
      cur = await start();
      stopped = undefined;
    },
    c,
    shutdown: () =>
      (shut ??= (async () => {
        // The file's namespaces go while its controller and simulator can still answer their finalizers
        // (a controller the test stopped cannot: they are then left to the next controller on the plane).
        await deleteOwnedNamespaces(c, { waitMs: stopped ? 0 : CLEANUP_WAIT_MS }).catch((e: unknown) => console.error(`[e2e] deleting the file's namespaces: ${(e as Error).message}`));
        await ctl.stop();
        await sim.stop();
        c.close();
      })()),
  };
}

/**
 * The first tenant of the control plane, holding in `ns` exactly what a tenant admin of a Cozystack
 * platform holds: Cozystack's `cozy:tenant:admin` (test/fixtures/cozystack-tenant-roles.yaml) with the
 * chart's tenant roles aggregated into it. Returns that tenant's kubeconfig.
 */
export async function tenantWithRole(ns: string, access: TenantAccess = 'admin'): Promise<string> {
  return await bindTenant(ns, { access });
}

/** `kubectl apply` of one object into `ns` as the holder of `kubeconfig`. */
export async function applyAs(kubeconfig: string, ns: string, obj: unknown): Promise<{ code: number; stdout: string; stderr: string }> {
  return await kubectl(['apply', '-n', ns, '-f', '-'], { kubeconfig, input: JSON.stringify(obj) });
}

/** The webhook's denial message in kubectl's stderr (or a text saying there was none). */
export function denial(stderr: string): string {
  const m = /denied the request: (.*)$/m.exec(stderr);
  return m?.[1]?.trim() ?? `(no denial in: ${stderr.trim()})`;
}

/**
 * The API server picks webhook configurations up asynchronously: waits until a server-side dry run of
 * `probe` (an object our webhook refuses) in `ns` is denied.
 */
export async function waitForWebhookEffective(ns: string, probe: unknown): Promise<void> {
  await waitFor('the webhook to be effective', async () => {
    const r = await kubectl(['apply', '--dry-run=server', '-n', ns, '-f', '-'], { input: JSON.stringify(probe) });
    return r.code !== 0 && r.stderr.includes('denied the request');
  });
}

/**
 * Installs the stand-in CRDs (test/crds) as raw JSON and waits until each is Established. Server-side
 * apply through client-node's typed models drops `x-kubernetes-preserve-unknown-fields` (observed: the
 * stored schema becomes `{type: object}` and every spec is pruned), so objects travel as plain JSON.
 */
export async function installStandInCRDs(c: KubeClient): Promise<void> {
  const crds = standInCRDs() as unknown as KubeObject[];
  for (const crd of crds) {
    await c.patch(GVRs.CustomResourceDefinition, undefined, crd.metadata!.name!, crd, 'apply', { force: true, fieldManager: 'e2e' });
  }
  for (const crd of crds) {
    await waitFor(`CRD ${crd.metadata?.name} Established`, async () => {
      const got = await c.get<{ status?: { conditions?: Array<{ type: string; status: string }> } }>(GVRs.CustomResourceDefinition, undefined, crd.metadata!.name!);
      return got?.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
    });
  }
}

/** Whether a process with this pid exists (signal 0 probes without signalling). */
/**
 * Whether `pid` still runs. A zombie does not: a component whose parent died is reparented to PID 1,
 * and where PID 1 does not reap (a container whose first process is not an init) it stays a zombie —
 * ended, holding nothing, yet still answering signal 0.
 */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) S ..." — the state follows the last ')' (comm may hold spaces).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

/**
 * The README's wait-for-the-end one-liner (`kubectl wait --for=condition=Finished … && \` and its test
 * line) for `task`, with `timeout`: tests run the documented text itself, in a shell whose KUBECONFIG
 * context names the task's namespace.
 */
export function readmeOneLiner(task: string, timeout: string): string {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const m = /^kubectl wait --for=condition=Finished .*\\\n.*$/m.exec(readme);
  if (!m) throw new Error('the README shows no `kubectl wait --for=condition=Finished … && \\` one-liner');
  const line = m[0].replaceAll('import-web-tier', task).replace(/--timeout=\S+/, `--timeout=${timeout}`);
  if (line === m[0]) throw new Error('the README one-liner names no task to substitute');
  return line;
}
