// Forklift 2.12's failure of a run whose Plan keeps a blocker (pure). From v2.12.0 the Plan controller fails
// the executing snapshot and every VM in flight once a Critical or Error condition on the Plan is older than
// BLOCKER_GRACE_PERIOD_MINUTES (default 5), with "The migration has FAILED due to a validation blocker:
// <the blockers' messages, joined by '; '>" as the VM's condition and error (kubev2v/forklift@v2.12.5:
// pkg/controller/plan/controller.go failExecutingMigrationOnBlocker, criticalOrErrorCondition;
// pkg/settings/migration.go). v2.11.5 freezes the run instead. Nothing is cleaned up and nothing carries
// over: the VM's copy is abandoned, and a new task starts it again from the first byte.
import { TaskReason } from '../api/conditions.ts';

/** The words v2.12.5 starts its blocker failure with (controller.go failExecutingMigrationOnBlocker). */
export const BLOCKER_FAILURE_PREFIX = 'The migration has FAILED due to a validation blocker: ';

/** Forklift's own messages for the blockers a source causes (plan/validation.go at both tags). */
const SOURCE_BLOCKERS: readonly RegExp[] = [/The source provider is not (ready|valid)/i, /The destination provider is not (ready|valid)/i];

export interface BlockerFailure {
  reason: TaskReason;
  message: string;
  /** The blockers' messages as Forklift wrote them. */
  blockers: string[];
}

/**
 * The blocker failure in a VM's failure text, translated: the reason names what blocked (the source not
 * Ready, else the Plan), the message says that a new task copies everything again. Undefined when the text
 * is not a blocker failure. The text is bounded by the caller (a VM's errors as recorded).
 */
export function blockerFailure(text: string, sourceName?: string): BlockerFailure | undefined {
  const at = text.indexOf(BLOCKER_FAILURE_PREFIX);
  if (at < 0) return undefined;
  const rest = text.slice(at + BLOCKER_FAILURE_PREFIX.length);
  // The blockers run to the end of that error (errors are joined by newlines or '; ' by the reader).
  const end = rest.search(/\n/);
  const blockers = (end < 0 ? rest : rest.slice(0, end))
    .split('; ')
    .map((s) => s.trim())
    .filter(Boolean);
  const fromSource = blockers.some((b) => SOURCE_BLOCKERS.some((r) => r.test(b)));
  const src = sourceName ? `VMImportSource "${sourceName}"` : 'the source';
  const cause = fromSource
    ? `${src} stopped being Ready during the copy (vCenter unreachable, its password changed, a host override or a map gone bad) and stayed so past Forklift's grace period (5 minutes)`
    : "Forklift's Plan gained a blocker during the copy that stayed past its grace period (5 minutes)";
  return {
    reason: fromSource ? TaskReason.SourceNotReady : TaskReason.PlanNotValid,
    blockers,
    message: `${cause}, so Forklift 2.12 failed the import: nothing of the copy is reused, and a new task copies every disk again from the start. Fix what blocked (${blockers.join('; ')}), then create a new task. Forklift said: ${BLOCKER_FAILURE_PREFIX}${blockers.join('; ')}`,
  };
}
