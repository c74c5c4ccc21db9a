// The reads behind the start-up refusal of src/cozystack/coexistence.ts (decideCoexistence), and the
// check runController makes before it serves anything.
import { GROUP } from './api/types.ts';
import { UPSTREAM_TASK_FINALIZER } from './api/labels.ts';
import { GVRs } from './runtime/gvr.ts';
import { ApiError, type KubeClient, type KubeObject } from './runtime/kube.ts';
import { CoexistenceError, UPSTREAM_LEASE_NAMES, decideCoexistence, type CoexistenceFacts, type CRDSeen, type LeaseSeen, type TaskSeen } from './cozystack/coexistence.ts';
import type { Logger } from './telemetry/logger.ts';

/** Tasks read at most this many pages of 500: a larger campaign's count is reported as a lower bound. */
const MAX_TASK_PAGES = 20;

export interface ObserveOptions {
  /** '' = every namespace (the controller's scope). */
  namespace: string;
  podNamespace: string;
  leaseNamespace: string;
  ownLease?: { namespace: string; name: string };
}

const forbidden = (e: unknown): boolean => e instanceof ApiError && e.code === 403;

/**
 * The reads `decideCoexistence` needs. The Leases are read by name where Cozystack installs its
 * controller (the namespace this one runs in, cozy-migration-controller by default, and the lease
 * namespace): the chart grants `get` on Leases there only, and Helm's lookup covers every namespace at
 * install time. A read this controller may not make is skipped and named in `skipped`.
 */
export async function observeCoexistence(client: KubeClient, o: ObserveOptions): Promise<{ facts: CoexistenceFacts; skipped: string[] }> {
  const skipped: string[] = [];
  const leases: LeaseSeen[] = [];
  for (const ns of [...new Set([o.podNamespace, o.leaseNamespace])]) {
    for (const name of UPSTREAM_LEASE_NAMES) {
      try {
        const l = await client.get<KubeObject>(GVRs.Lease, ns, name);
        if (!l) continue;
        const spec = (l.spec ?? {}) as { holderIdentity?: string; renewTime?: string; acquireTime?: string };
        leases.push({ namespace: ns, name, ...(spec.holderIdentity ? { holder: spec.holderIdentity } : {}), ...(spec.renewTime || spec.acquireTime ? { renewTime: spec.renewTime ?? spec.acquireTime } : {}) });
      } catch (e) {
        if (!forbidden(e)) throw e;
        skipped.push(`Lease ${ns}/${name} (forbidden)`);
      }
    }
  }
  const crds: CRDSeen[] = [];
  for (const name of [`vmimportsources.${GROUP}`, `vmimporttasks.${GROUP}`]) {
    try {
      const c = await client.get<KubeObject>(GVRs.CustomResourceDefinition, undefined, name);
      const a = c?.metadata?.annotations ?? {};
      if (c) crds.push({ name, ...(a['meta.helm.sh/release-name'] ? { release: a['meta.helm.sh/release-name'] } : {}), ...(a['meta.helm.sh/release-namespace'] ? { releaseNamespace: a['meta.helm.sh/release-namespace'] } : {}) });
    } catch (e) {
      if (!forbidden(e)) throw e;
      skipped.push(`CustomResourceDefinition ${name} (forbidden)`);
    }
  }
  const tasks: TaskSeen[] = [];
  let tasksTruncated = false;
  if (crds.some((c) => c.name.startsWith('vmimporttasks.'))) {
    let cont: string | undefined;
    let pages = 0;
    do {
      const page = await client.list<KubeObject>(GVRs.VMImportTask, o.namespace || undefined, { limit: 500, ...(cont ? { continue: cont } : {}) });
      for (const t of page.items) {
        const fin = t.metadata?.finalizers ?? [];
        if (fin.includes(UPSTREAM_TASK_FINALIZER)) tasks.push({ namespace: t.metadata?.namespace ?? '', name: t.metadata?.name ?? '', finalizers: [...fin] });
      }
      cont = page.metadata.continue || undefined;
      pages++;
    } while (cont && pages < MAX_TASK_PAGES);
    tasksTruncated = cont !== undefined;
  }
  return { facts: { leases, crds, tasks, ...(tasksTruncated ? { tasksTruncated } : {}), ...(o.ownLease ? { ownLease: o.ownLease } : {}), podNamespace: o.podNamespace }, skipped };
}


/** Refuses (CoexistenceError) when another controller serves these kinds; logs what it found otherwise. */
export async function checkCoexistence(client: KubeClient, o: ObserveOptions & { takeOver: boolean; log: Logger }): Promise<void> {
  const { facts, skipped } = await observeCoexistence(client, o);
  if (skipped.length) o.log.warn({ skipped }, 'coexistence check: reads this controller may not make were skipped');
  const v = decideCoexistence(facts, o.takeOver, new Date());
  if (!v.start) throw new CoexistenceError(v.reason);
  for (const n of v.notes) o.log.info(n);
}
