// Whose object is it: the controller writes (updates, deletes) a child of a source only when the child's
// owner label names that very source's UID. Projected Secrets of every tenant share the controller's
// namespace; a name that maps onto another source's object, by a collision or by an object left there
// by hand, must never hand one tenant's Secret, Provider or Host to another's. The conflict is reported
// on the source instead (Ready=False, NameConflict), and the object is left as it is.
import { LABEL_SOURCE_UID } from '../../api/labels.ts';
import { mergeDesired, needsUpdate } from '../../forklift/provider.ts';
import type { GVR } from '../../runtime/gvr.ts';
import { isAlreadyExists, type KubeObject } from '../../runtime/kube.ts';
import type { ReconcileContext } from '../../runtime/reconciler.ts';

/** An object this source would write belongs to another source (or to nobody we know). */
export class OwnershipConflict extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OwnershipConflict';
  }
}

/** True when `o` carries the owner label of the source with this UID. Pure. */
export function ownedBy(o: KubeObject | undefined, sourceUID: string): boolean {
  return !!sourceUID && o?.metadata?.labels?.[LABEL_SOURCE_UID] === sourceUID;
}

/** Why `actual` may not be written for the source `sourceUID`, or undefined when it is that source's. Pure. */
export function conflictMessage(gvr: GVR, actual: KubeObject, sourceUID: string): string | undefined {
  if (ownedBy(actual, sourceUID)) return undefined;
  const where = actual.metadata?.namespace ? `${actual.metadata.namespace}/` : '';
  const other = actual.metadata?.labels?.[LABEL_SOURCE_UID];
  return `The ${gvr.kind} ${where}${actual.metadata?.name} this source would write already exists and belongs ${other ? 'to another source' : 'to no source of the migration controller'}; it was left untouched. Delete that object if it is stale, or rename this source.`;
}

/**
 * Creates `desired` or brings the existing object in line with it (only when it differs), provided the
 * existing object carries this source's owner label; otherwise throws OwnershipConflict and writes nothing.
 * `timeoutMs`: the deadline of the create or update (the client's own when unset).
 */
export async function ensureOwned(ctx: Pick<ReconcileContext, 'client' | 'log'>, gvr: GVR, desired: KubeObject, cached: KubeObject | undefined, sourceUID: string, o: { timeoutMs?: number } = {}): Promise<KubeObject> {
  let actual = cached;
  if (!actual) {
    try {
      return await ctx.client.create(gvr, desired, { timeoutMs: o.timeoutMs });
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
      actual = await ctx.client.get(gvr, desired.metadata?.namespace, desired.metadata!.name!);
      if (!actual) throw e;
    }
  }
  const conflict = conflictMessage(gvr, actual, sourceUID);
  if (conflict) throw new OwnershipConflict(conflict);
  if (!needsUpdate(desired, actual)) return actual;
  ctx.log.info({ kind: gvr.kind, object: desired.metadata?.name }, 'updating to the desired state');
  // The resourceVersion the owner check was made on goes with the write: an object changed meanwhile
  // (another writer) fails with a conflict instead of being overwritten unchecked.
  return await ctx.client.replace(gvr, mergeDesired(desired, actual), undefined, { timeoutMs: o.timeoutMs });
}
