// Two controllers must never reconcile the same objects. At start-up this controller looks for
// Cozystack's own controller of these kinds (cozystack/cozystack PR #3931: cmd/migration-controller,
// internal/migrationcontroller) and refuses to start while that one serves them, naming what it found
// and how to switch (docs/install.md, "Switching from Cozystack's own controller"). The chart refuses
// the same at install time (charts/migration-controller/templates/coexistence.yaml); this check covers
// what the chart cannot see: a controller started outside Helm, a restart after the other controller
// came back, an image rolled without `helm upgrade`.
//
// Pure: observations and the clock in, a verdict out. src/app-coexistence.ts makes the reads.
import { UPSTREAM_TASK_FINALIZER, FINALIZER } from '../api/labels.ts';

/**
 * The other controller's leader-election Lease names. controller-runtime names the Lease after
 * `LeaderElectionID`: `migration.cozystack.io` in the revisions that can be read
 * (cozystack/cozystack@052fa1764:cmd/migration-controller/main.go, and 370a377e7 on feat/vm-import-api);
 * the chart's lookup and the later revisions serving forklift.cozystack.io name it after that group. Both
 * are looked for: missing the one in use would let two controllers run.
 */
export const UPSTREAM_LEASE_NAMES = ['migration.cozystack.io', 'forklift.cozystack.io'] as const;

/**
 * A Lease renewed this recently is held by a running controller. controller-runtime's leader renews
 * every 2 s and its lease lasts 15 s; the margin covers clock skew between the nodes, and equals the
 * chart's bound (coexistence.yaml), so the two refuse the same Lease.
 */
export const LIVE_LEASE_SECONDS = 120;

const HOW = `see docs/install.md, "Switching from Cozystack's own controller"`;

export interface LeaseSeen {
  namespace: string;
  name: string;
  holder?: string;
  /** spec.renewTime (or acquireTime), RFC 3339. */
  renewTime?: string;
}

export interface CRDSeen {
  name: string;
  /** meta.helm.sh/release-name / -namespace. */
  release?: string;
  releaseNamespace?: string;
}

export interface TaskSeen {
  namespace: string;
  name: string;
  finalizers: string[];
}

export interface CoexistenceFacts {
  leases: LeaseSeen[];
  crds: CRDSeen[];
  tasks: TaskSeen[];
  /** Tasks were listed through more pages than were read (the count is a lower bound). */
  tasksTruncated?: boolean;
  /** This controller's own Lease (never the other controller's) and namespace. */
  ownLease?: { namespace: string; name: string };
  /** The namespace this controller runs in: a Helm release owning the CRDs from elsewhere is another installation. */
  podNamespace: string;
}

export type CoexistenceVerdict = { start: true; notes: string[] } | { start: false; reason: string };

/**
 * Whether this controller may start beside what it found. A live Lease of the other controller refuses
 * always: that controller reconciles these objects right now, and `--take-over` is for taking over what
 * a stopped controller left. Its finalizer on tasks and its Helm release owning the CRDs refuse unless
 * `takeOver`.
 */
export function decideCoexistence(f: CoexistenceFacts, takeOver: boolean, now: Date): CoexistenceVerdict {
  const notes: string[] = [];
  for (const l of f.leases) {
    if (f.ownLease && l.namespace === f.ownLease.namespace && l.name === f.ownLease.name) continue;
    if (!l.holder) continue; // released: nobody leads
    const renewed = l.renewTime ? Date.parse(l.renewTime) : NaN;
    const age = Math.round((now.getTime() - renewed) / 1000);
    if (Number.isFinite(renewed) && age < LIVE_LEASE_SECONDS) {
      return {
        start: false,
        reason:
          `Cozystack's own migration controller is running: its leader-election Lease ${l.namespace}/${l.name} is held by ${JSON.stringify(l.holder)} (renewed ${Math.max(age, 0)}s ago). ` +
          `Two controllers must never reconcile the same VMImportSources and VMImportTasks; stop it first (scale its Deployment to 0 and suspend its HelmRelease), then start this one with --take-over; --take-over does not lift this refusal while that Lease is renewed (${HOW})`,
      };
    }
    notes.push(`the Lease ${l.namespace}/${l.name} of Cozystack's own migration controller was last renewed ${Number.isFinite(renewed) ? `${age}s ago` : 'never'} by ${JSON.stringify(l.holder)}: that controller is stopped`);
  }
  const foreign = f.crds.filter((c) => c.release && c.releaseNamespace && c.releaseNamespace !== f.podNamespace);
  if (foreign.length) {
    const c = foreign[0]!;
    const what = `the CRD ${c.name} belongs to Helm release ${c.releaseNamespace}/${c.release}, not a release in this controller's namespace ${f.podNamespace} (Cozystack's own migration controller, or another installation of this one)`;
    if (!takeOver) return { start: false, reason: `${what}: two controllers must never serve these kinds; stop that controller, hand its CRDs over and start this one with --take-over (${HOW})` };
    notes.push(`${what}; taken over (--take-over)`);
  }
  const held = f.tasks.filter((t) => t.finalizers.includes(UPSTREAM_TASK_FINALIZER) && !t.finalizers.includes(FINALIZER));
  if (held.length) {
    const count = `${held.length}${f.tasksTruncated ? ' or more' : ''}`;
    const first = held[0]!;
    if (!takeOver) {
      return {
        start: false,
        reason:
          `${count} VMImportTask(s) hold the finalizer of Cozystack's own migration controller (${UPSTREAM_TASK_FINALIZER}) and not this one's, for example ${first.namespace}/${first.name}: that controller served them. ` +
          `Once it is stopped, start this controller with --take-over (chart value coexistence.takeOver=true) and it takes them over (${HOW})`,
      };
    }
    notes.push(`${count} VMImportTask(s) hold the finalizer of Cozystack's own migration controller, for example ${first.namespace}/${first.name}: taken over (--take-over)`);
  }
  return { start: true, notes };
}

/** Refused by what another controller holds; the message names it and how to switch. */
export class CoexistenceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CoexistenceError';
  }
}
