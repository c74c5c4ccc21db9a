// Holding a source Provider's spec while tasks run over it (pure). Forklift v2.11.5 matches a running
// import's snapshot by uid AND generation of both Providers (kubev2v/forklift@v2.11.5:
// pkg/apis/forklift/v1beta1/plan/snapshot.go SnapshotRef.Match; pkg/controller/plan/controller.go
// matchSnapshot): a spec write to the source Provider — the chart's new vddkImage, an edited URL, another
// Secret reference — bumps its generation and every in-flight VM of the source ends Canceled (Modified).
// From v2.12.0 Match compares the uid only, but a spec change still reloads the Provider's inventory
// (pkg/controller/provider/controller.go, !HasReconciled: the collector is dropped), during which the
// Plans read SourceProviderNotReady: a blocker that v2.12 turns into a failure after 5 minutes. So the
// spec is written only while no task runs over the source; labels, annotations and owners still are.
import type { KubeObject } from '../../runtime/kube.ts';

/** The condition a source carries while a Provider update waits. */
export const CONDITION_PROVIDER_UPDATE_PENDING = 'ProviderUpdatePending';
export const REASON_TASKS_RUNNING = 'TasksRunning';
export const REASON_APPLIED = 'Applied';

type WithSpec = KubeObject & { spec?: Record<string, unknown> };

/** The spec fields (dotted, sorted) whose values differ between two Provider specs. */
export function specFieldsChanged(desired: unknown, actual: unknown, prefix = ''): string[] {
  const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
  if (!isObj(desired) || !isObj(actual)) return JSON.stringify(desired) === JSON.stringify(actual) ? [] : [prefix || 'spec'];
  const keys = [...new Set([...Object.keys(desired), ...Object.keys(actual)])].sort();
  return keys.flatMap((k) => specFieldsChanged(desired[k], actual[k], prefix ? `${prefix}.${k}` : k));
}

export interface ProviderWrite {
  /** What to write: `desired`, or `desired` with the stored spec kept. */
  write: KubeObject;
  /** The update that waits: which spec fields, for which tasks. */
  pending?: { fields: string[]; tasks: string[] };
}

/**
 * What to write to the source Provider. `holders`: the tasks still importing over the source
 * (inuse.ts tasksHoldingSource), asked only when the spec differs. Pure.
 */
export function holdProviderSpec(desired: WithSpec, actual: WithSpec | undefined, holders: () => string[]): ProviderWrite {
  if (!actual) return { write: desired };
  const fields = specFieldsChanged(desired.spec, actual.spec);
  if (!fields.length) return { write: desired };
  const tasks = holders();
  if (!tasks.length) return { write: desired };
  return { write: { ...desired, spec: structuredClone(actual.spec) } as KubeObject, pending: { fields, tasks } };
}

/** The pending update's message: what waits, for whom, and why. */
export function pendingMessage(p: { fields: string[]; tasks: string[] }): string {
  const shown = p.tasks.slice(0, 10).join(', ') + (p.tasks.length > 10 ? ` and ${p.tasks.length - 10} more` : '');
  return `An update of the Forklift Provider (spec.${p.fields.join(', spec.')}) waits until no task imports over this source (${shown}): written now, it would cancel their running imports (Forklift 2.11) or fail them (Forklift 2.12, once its inventory reload outlasts 5 minutes). It is applied as soon as they end.`;
}
