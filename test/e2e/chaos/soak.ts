// What the soak test (test/e2e/soak-memory.test.ts) and the soak benchmark (bench/soak.ts) share: rounds of
// one-VM imports run to the end and then deleted with their namespace, and the sizes that must come back
// to their baseline afterwards — every in-memory map of the controller, every informer cache — with the
// heap after a full garbage collection.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { WorldFixture } from '../../sim/index.ts';
import type { RunningController } from '../../../src/app.ts';
import { GVRs } from '../../../src/runtime/gvr.ts';
import type { KubeClient } from '../../../src/runtime/kube.ts';
import type { VMImportTask } from '../../../src/api/types.ts';
import { createConnectedSource, createTask, ensureNamespace, until } from './fixtures.ts';

/** The heap in use after two full collections (V8's gc, reached without starting Node with --expose-gc). */
export function heapAfterGC(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Everything whose size must not grow with the number of tasks ever seen. */
export function controllerSizes(ctl: RunningController): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [r, m] of Object.entries(ctl.manager.memory())) {
    // Expectations lapse after their TTL (a minute) and are swept then: bounded by one TTL of writes,
    // checked by their unit test rather than waited for here.
    for (const [k, v] of Object.entries(m)) if (!/Expectations$/.test(k)) out[`${r}.${k}`] = v;
  }
  for (const [k, v] of Object.entries(ctl.manager.cacheSizes())) out[`cache.${k}`] = v;
  return out;
}

/** The entries of `now` above `baseline` (empty: nothing grew). */
export function grownSince(baseline: Record<string, number>, now: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(now).filter(([k, v]) => v > (baseline[k] ?? 0)));
}

/** Waits (up to `timeoutMs`) for the sizes to be back at or below `baseline`; returns the last sizes seen. */
export async function settledSizes(ctl: RunningController, baseline: Record<string, number>, timeoutMs = 30_000): Promise<Record<string, number>> {
  // Watch events of the deletions may still be on their way: the caches settle within moments.
  return await until('maps and caches back at their baseline', () => {
    const now = controllerSizes(ctl);
    return Object.keys(grownSince(baseline, now)).length === 0 ? now : undefined;
  }, timeoutMs).catch(() => controllerSizes(ctl));
}

export interface RoundOptions {
  namespace: string;
  world: WorldFixture;
  storageClass: string;
  /** One task per VM. */
  vmIds: string[];
  timeoutMs?: number;
  /** Called with the sizes at the round's peak (every task Succeeded, nothing deleted yet). */
  atPeak?: () => void;
  /** Leave the namespace in place: the caller deletes it (deleteRound) when it chooses. */
  keep?: boolean;
}

// A round's waits on the API server poll every 250 ms rather than until()'s 50 ms: a round lasts tens of
// seconds, and at 50 ms the short soak's lists of tasks and GETs of its namespaces were a seventh of all
// its requests (~1,700 of 12,000), every one of them served by the plane the other files share.
const ROUND_POLL_MS = 250;

/** One round: a namespace, a source, one-VM imports to the end, then the namespace deleted and its volumes gone. */
export async function importRound(c: KubeClient, o: RoundOptions): Promise<void> {
  const timeoutMs = o.timeoutMs ?? 180_000;
  const ns = o.namespace;
  await ensureNamespace(c, ns);
  await createConnectedSource(c, ns, 'vc', o.world, timeoutMs);
  for (const [i, id] of o.vmIds.entries()) await createTask(c, { namespace: ns, name: `t${i + 1}`, vmIds: [id] }, 'vc', o.storageClass);
  await until(`every import of ${ns} Succeeded`, async () => {
    const ts = (await c.list(GVRs.VMImportTask, ns)).items as unknown as VMImportTask[];
    return ts.length === o.vmIds.length && ts.every((t) => t.status?.phase === 'Succeeded');
  }, timeoutMs, ROUND_POLL_MS);
  o.atPeak?.();
  if (!o.keep) await deleteRound(c, ns, timeoutMs);
}

/** Deletes a round's namespace and waits until it and the volumes of its claims are gone. */
export async function deleteRound(c: KubeClient, ns: string, timeoutMs = 180_000): Promise<void> {
  await c.delete(GVRs.Namespace, undefined, ns);
  await until(`namespace ${ns} gone`, async () => !(await c.get(GVRs.Namespace, undefined, ns)), timeoutMs, ROUND_POLL_MS);
  // Cluster-scoped leftovers of the round: the handed-off volumes, deleted with their claims (Delete).
  await until(`the volumes of ${ns} gone`, async () => (await c.list(GVRs.PersistentVolume)).items.every((pv) => (pv.spec as { claimRef?: { namespace?: string } })?.claimRef?.namespace !== ns), timeoutMs, ROUND_POLL_MS);
}
