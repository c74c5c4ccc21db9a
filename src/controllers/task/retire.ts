// Effects of retiring the Plans of ended VMs (the decision is src/forklift/retire.ts): archive, wait for
// Forklift's Archived, then delete a handed-off VM's Plan. Kept apart from the per-VM pass so that the
// pass's restructuring does not move it: the reconciler calls it for ended VMs, and for an ended task
// before it becomes a record.
import { LABEL_TASK_UID, LABEL_VM_ID } from '../../api/labels.ts';
import type { VMImportTask } from '../../api/types.ts';
import { archivePatch, archiveWouldDeleteDisks, planRetirement, type VMOutcome } from '../../forklift/retire.ts';
import { GVRs } from '../../runtime/gvr.ts';
import { isNotFound, type KubeObject } from '../../runtime/kube.ts';
import type { ReconcileContext } from '../../runtime/reconciler.ts';
import { listOptional } from './observe.ts';
import { boundedPool } from './board.ts';

/** While Forklift has not said Archived: look again this soon (its Plan controller archives in one pass). */
export const RETIRE_POLL_MS = 2_000;
/**
 * While Forklift still runs a VM this task has ended (our stall verdict, say): look again this seldom, so a
 * run Forklift never ends costs one Plan list per half minute, not a tight loop.
 */
export const RETIRE_RUN_POLL_MS = 30_000;

/** Plans retired at once: the client's rate limit is the brake, as for the VMs' actions (reconciler.ts). */
const RETIRE_IN_FLIGHT = 8;

/**
 * One step for each Plan of this task whose VM has ended (Succeeded: handed off; Failed). A running task's
 * Plans are cached (`preferCache`); an ended task's are read live, no longer cached (retention.ts). The
 * writes go a few at once, and none starts once `mayStart` says no (a pass's budget): those Plans wait
 * for the next pass, at once. Returns when to look again, undefined when nothing waits.
 */
export async function retireEndedPlans(ctx: ReconcileContext, task: VMImportTask, o: { preferCache?: boolean; mayStart?: () => boolean } = {}): Promise<number | undefined> {
  if (!ctx.installed(GVRs.Plan)) return undefined;
  const ns = task.metadata.namespace ?? '';
  const ended = new Map<string, VMOutcome>();
  for (const v of task.status?.vms ?? []) {
    if (v.phase === 'Succeeded') ended.set(v.id, 'handed-off');
    else if (v.phase === 'Failed') ended.set(v.id, 'failed');
  }
  if (!ended.size) return undefined;
  let again: number | undefined;
  const plans = (await listOptional(ctx, GVRs.Plan, ns, { [LABEL_TASK_UID]: task.metadata.uid ?? '' }, { preferCache: o.preferCache, trustCacheAbsence: o.preferCache })).filter((p) => ended.has(p.metadata?.labels?.[LABEL_VM_ID] ?? ''));
  const left = await boundedPool(plans, RETIRE_IN_FLIGHT, async (p) => {
    const step = planRetirement(p, ended.get(p.metadata?.labels?.[LABEL_VM_ID] ?? '')!, ctx.now());
    const name = p.metadata?.name ?? '';
    try {
      if (step.type === 'archive') {
        const outcome = ended.get(p.metadata?.labels?.[LABEL_VM_ID] ?? '');
        // A failed VM's disks are kept for the tenant: its Plan is archived only as it would be stored.
        if (outcome === 'failed' && archiveWouldDeleteDisks(await ctx.client.patch<KubeObject>(GVRs.Plan, ns, name, archivePatch(ctx.now()), 'merge', { dryRun: true }))) {
          ctx.events.event(task as unknown as KubeObject, 'Warning', 'ArchiveHeld', `Plan ${name} is not archived: Forklift's Plan mutator would store it with deleteVmOnFailMigration true (the destination Provider carries forklift.konveyor.io/defaultTransferNetwork), and archiving would delete the failed VM's disks; Forklift's VDDK Secret stays in the namespace until the annotation is gone`);
          again = Math.min(again ?? RETIRE_RUN_POLL_MS, RETIRE_RUN_POLL_MS);
          return;
        }
        await ctx.client.patch<KubeObject>(GVRs.Plan, ns, name, archivePatch(ctx.now()));
        again = RETIRE_POLL_MS;
      } else if (step.type === 'wait-archived') {
        again = RETIRE_POLL_MS;
      } else if (step.type === 'wait-run') {
        again = Math.min(again ?? RETIRE_RUN_POLL_MS, RETIRE_RUN_POLL_MS);
      } else if (step.type === 'delete') {
        await ctx.client.delete(GVRs.Plan, ns, name, { propagationPolicy: 'Background', uid: p.metadata?.uid });
      }
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }, o.mayStart);
  if (left.length) again = 0;
  return again;
}
