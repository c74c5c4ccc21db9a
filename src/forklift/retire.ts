// What becomes of a VM's Plan once the VM has ended (pure). Forklift leaves the VDDK importer's Secret —
// the vCenter account, or the ESXi host's own — in the Plan's target namespace, the tenant's, with no owner
// reference (kubev2v/forklift@v2.11.5 and @v2.12.5:pkg/controller/plan/kubevirt.go DataVolumes →
// ensureSecret/secret; adapter/vsphere/builder.go Secret). Only migration.go cleanup removes it, and cleanup
// runs on a cancel, on a re-run, on archive and (v2.12.5) after a VM's success — never after a failure.
// Deleting the Plan removes it only at v2.12.5 (controller.go cleanupOrphanedResources); at v2.11.5 it
// stays for good. So every ended VM's Plan is archived (spec.archived: true): Archive cleans up every VM of
// the Plan (migration.go Archive → cleanup: pods, Secrets, ConfigMaps, jobs; with deleteVmOnFailMigration
// false never the disks) and then sets the Archived condition, which is the evidence the cleanup ran.
// A handed-off VM's Plan is deleted after that. A failed VM's Plan is kept, archived, until the task is
// deleted: its disks are kept for diagnosis and the Plan's uid is how the task's deletion finds them
// (Forklift labels them plan=<uid>), and v2.12.5's orphan cleanup would delete them with the Plan.
import type { KubeObject } from '../runtime/kube.ts';
import { conditionsOf } from './plan.ts';

/** How the VM of a Plan ended, as the task recorded it. */
export type VMOutcome = 'handed-off' | 'failed';

export type PlanRetirement =
  /** The Plan is gone: nothing to do. */
  | { type: 'none' }
  /**
   * Forklift still runs the VM's Migration: archiving now would stop it mid-copy (at v2.11.5 the Plan's new
   * generation cancels the run: controller.go matchSnapshot), so wait for the run to end.
   */
  | { type: 'wait-run' }
  /** Set spec.archived: true (a merge patch; the Plan's spec is otherwise left as rendered). */
  | { type: 'archive' }
  /** Archived, and Forklift has not said Archived yet: its cleanup has not run. */
  | { type: 'wait-archived' }
  /** Forklift cleaned up (Archived): delete the Plan. */
  | { type: 'delete' }
  /** Cleaned up; the Plan stays until the task is deleted (a failed VM's kept disks are found through it). */
  | { type: 'keep' };

/** When this controller archived the Plan (RFC 3339), on the Plan. */
export const ANNOTATION_ARCHIVED_AT = 'forklift.cozystack.io/archived-at';

/**
 * How long an archived Plan may go without Forklift's Archived condition before it is deleted anyway: a
 * Plan controller that is down or wedged must not hold a task's deletion for ever (the VDDK Secret may then
 * stay, and the Event says so). Forklift archives in its next pass, seconds after the write.
 */
export const ARCHIVE_WAIT_MS = 5 * 60_000;

/** The merge patch that archives a Plan, stamped with the time. */
export function archivePatch(now: Date): { metadata: { annotations: Record<string, string> }; spec: { archived: true } } {
  return { metadata: { annotations: { [ANNOTATION_ARCHIVED_AT]: now.toISOString() } }, spec: { archived: true } };
}

/** True when the Plan was archived by us longer than ARCHIVE_WAIT_MS ago and Forklift never said Archived. */
export function archiveOverdue(plan: KubeObject, now: Date): boolean {
  const at = Date.parse(plan.metadata?.annotations?.[ANNOTATION_ARCHIVED_AT] ?? '');
  return Number.isFinite(at) && now.getTime() - at > ARCHIVE_WAIT_MS;
}

/**
 * The step before a task's deletion deletes a Plan (its Migration already deleted, which cancels the run):
 * archive it, wait for Archived (or ARCHIVE_WAIT_MS), then delete. Pure.
 */
export function planDeletionStep(plan: KubeObject, now: Date): 'archive' | 'wait-archived' | 'delete' {
  const archived = (plan as { spec?: { archived?: unknown } }).spec?.archived === true;
  if (!archived) return 'archive';
  if (conditionsOf(plan).some((c) => c.type === 'Archived') || archiveOverdue(plan, now)) return 'delete';
  return 'wait-archived';
}

/** The next step for the Plan of a VM that ended with `outcome`. Pure. */
export function planRetirement(plan: KubeObject | undefined, outcome: VMOutcome, now: Date = new Date(0)): PlanRetirement {
  if (!plan || plan.metadata?.deletionTimestamp) return { type: 'none' };
  const conds = conditionsOf(plan);
  const has = (t: string): boolean => conds.some((c) => c.type === t);
  const archived = (plan as { spec?: { archived?: unknown } }).spec?.archived === true;
  if (!archived) {
    // Executing without a verdict: the run is live. (A run frozen on a blocker at v2.11.5 has no
    // Executing condition: archiving it is what ends it.)
    if (has('Executing') && !has('Succeeded') && !has('Failed') && !has('Canceled')) return { type: 'wait-run' };
    return { type: 'archive' };
  }
  if (!has('Archived') && !archiveOverdue(plan, now)) return { type: 'wait-archived' };
  return outcome === 'handed-off' ? { type: 'delete' } : { type: 'keep' };
}

/**
 * Whether a Plan, as Forklift's admission would store it with the archive patch applied (a server-side
 * dry run, which runs its mutator: sideEffects None), would let Archive delete a failed VM's disks. The
 * Plan mutator rewrites the whole spec on UPDATE too when the destination Provider carries
 * `forklift.konveyor.io/defaultTransferNetwork`, dropping every explicit false, so the CRD's default
 * `deleteVmOnFailMigration: true` comes back (kubev2v/forklift@v2.11.5 and @v2.12.5:
 * pkg/forklift-api/webhooks/mutating-webhook/mutators/plan-mutator.go; operator/roles/forkliftcontroller/
 * templates/api/mutatingwebhookconfiguration-plans.yml.j2: CREATE and UPDATE), and Archive's cleanup then
 * deletes that VM's DataVolumes (migration.go Archive → cleanup → deleteVmOnFailMigration).
 */
export function archiveWouldDeleteDisks(asStored: KubeObject | undefined): boolean {
  return (asStored?.spec as { deleteVmOnFailMigration?: unknown } | undefined)?.deleteVmOnFailMigration !== false;
}

