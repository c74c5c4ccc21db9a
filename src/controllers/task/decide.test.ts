// nextVMAction: branches by table, and the whole per-VM machine against a model of Forklift (validating
// the Plan, running the Migration, copying, building the VM, succeeding or failing) whose moves interleave
// with the controller's passes in any order, with crashes that lose a pass's status write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TaskReason } from '../../api/conditions.ts';
import type { VMStatus } from '../../api/types.ts';
import type { VMMigration } from '../../forklift/migration.ts';
import type { ForkliftCondition } from '../../forklift/plan.ts';
import { REASON_QUEUED, nextVMAction, passOrder, requestPriority, statusBeforeAction, stepsToEnd, taskGate, type VMAction, type VMObservation } from './decide.ts';
import { DISK_DONE, DISK_STEPS, Step, pendingCheckpoint } from '../handoff/steps.ts';
import { failVM } from './preflight.ts';
import { isTerminalPhase } from './status.ts';

const TOTAL = 8 * 1024 * 1024 * 1024;
const T0 = Date.parse('2026-01-01T00:00:00Z');

type Fate = 'succeed' | 'fail' | 'cancel' | 'noOutput' | 'blocked';
type Stage = 'none' | 'pending' | 'copying' | 'precopying' | 'cuttingover' | 'creating' | 'succeeded' | 'failed' | 'canceled';
type Mode = 'cold' | 'warm';
const isoAt = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Forklift's side of one VM, as the observation sees it. */
interface World {
  fate: Fate;
  mode: Mode;
  /** The task's spec.cutover (warm), set by the tenant at any time. */
  taskCutover?: number;
  /** The Migration's spec.cutover. */
  migrationCutover?: number;
  precopies: number;
  /** When Forklift powered the source off (warm: at cutover). */
  poweredOffAt?: number;
  plan?: 'validating' | 'ready' | 'blocked';
  migration: boolean;
  stage: Stage;
  copied: number;
  outputs: boolean;
  handoffSteps: number;
  planCreates: number;
  migrationCreates: number;
  clock: number;
}

/** Steps the handoff takes for this VM (its own machine is proven in handoff/plan.test.ts). */
const HANDOFF_STEPS = 3;

function fresh(fate: Fate, mode: Mode = 'cold'): World {
  return { fate, mode, precopies: 0, migration: false, stage: 'none', copied: 0, outputs: false, handoffSteps: 0, planCreates: 0, migrationCreates: 0, clock: T0 };
}

function runOf(w: World): VMMigration | undefined {
  if (!w.migration || w.stage === 'none') return undefined;
  if (w.mode === 'warm' && (w.stage === 'pending' || w.stage === 'precopying' || w.stage === 'cuttingover' || ((w.stage === 'failed' || w.stage === 'canceled') && w.copied < TOTAL))) {
    // kubev2v/forklift@v2.11.5: the precopy loop parks in CopyingPaused; the cutover powers off, then copies the final delta.
    const phase = w.stage === 'pending' ? undefined : w.stage === 'cuttingover' ? 'WaitForFinalSnapshot' : 'CopyingPaused';
    const precopies = Array.from({ length: w.precopies }, (_, i) => ({ start: isoAt(T0 + i * 60_000), end: isoAt(T0 + i * 60_000 + 30_000) }));
    return {
      id: 'vm-1',
      phase,
      pipeline: [{ name: 'DiskTransfer', phase: 'Running', started: isoAt(T0) }, ...(w.poweredOffAt !== undefined ? [{ name: 'Cutover', phase: 'Running', started: isoAt(w.poweredOffAt) }] : [])],
      errors: w.stage === 'failed' ? ['snapshot creation failed'] : [],
      succeeded: false,
      failed: w.stage === 'failed',
      canceled: w.stage === 'canceled',
      pending: w.stage === 'pending',
      warm: { successes: w.precopies, failures: 0, consecutiveFailures: 0, nextPrecopyAt: isoAt(w.clock + 60_000), precopies },
    };
  }
  const copyStarted = w.stage !== 'pending';
  const dtPhase = w.stage === 'copying' ? 'Running' : w.copied >= TOTAL ? 'Completed' : w.stage === 'failed' || w.stage === 'canceled' ? 'Running' : undefined;
  return {
    id: 'vm-1',
    phase: w.stage === 'creating' ? 'CreateVM' : w.stage === 'succeeded' ? 'Completed' : w.stage === 'copying' ? 'CopyDisks' : undefined,
    pipeline: [
      ...(copyStarted ? [{ name: 'DiskTransfer', phase: dtPhase, started: new Date(T0).toISOString() }] : []),
      ...(w.poweredOffAt !== undefined ? [{ name: 'Cutover', phase: 'Completed', started: isoAt(w.poweredOffAt) }] : []),
    ],
    errors: w.stage === 'failed' ? ['Unable to connect to vddk data source: NBD error'] : [],
    succeeded: w.stage === 'succeeded',
    failed: w.stage === 'failed',
    canceled: w.stage === 'canceled',
    pending: w.stage === 'pending',
    transfer: copyStarted ? { totalBytes: TOTAL, doneBytes: w.copied, phase: dtPhase } : undefined,
  };
}

function observe(w: World, status: VMStatus, stallAfterMs = 1e12): VMObservation {
  const blockers: ForkliftCondition[] =
    w.plan === 'blocked' ? [{ type: 'VMNotFound', status: 'True', category: 'Critical', message: 'VM not found' }] : w.plan === 'validating' ? [{ type: 'StorageMapNotReady', status: 'True', category: 'Critical' }] : [];
  const o: VMObservation = { status, migrationName: 'mig-1', now: new Date(w.clock), stallAfterMs, mode: w.mode, cutoverAt: w.taskCutover !== undefined ? isoAt(w.taskCutover) : undefined };
  if (!w.plan) return o;
  o.plan = { verdict: { ready: w.plan === 'ready', blockers, executing: w.migration, succeeded: false, failed: false, canceled: false } };
  if (!w.migration) return o;
  o.migration = { creationTimestamp: new Date(T0).toISOString(), conditions: [], cutover: w.migrationCutover !== undefined ? isoAt(w.migrationCutover) : undefined };
  const run = runOf(w);
  if (!run) return o;
  o.run = run;
  if (run.transfer && run.transfer.totalBytes > 0) o.transfer = { totalBytes: TOTAL, doneBytes: w.copied, percent: Math.round((w.copied / TOTAL) * 10000) / 100, lastChangeAt: w.clock, idleMs: 0, converting: false, fromDataVolumes: false };
  else o.idleBeforeBytesMs = w.clock - T0;
  if (run.succeeded) o.outputs = { handoffStarted: w.handoffSteps > 0, succeededWithoutOutput: !w.outputs };
  return o;
}

/** What effects.ts does with each action, on the model. Returns the status the pass records. */
function act(w: World, a: VMAction): VMStatus {
  switch (a.type) {
    case 'create-plan':
      if (!w.plan) {
        w.plan = 'validating';
        w.planCreates++;
      }
      return a.status;
    case 'create-migration':
      if (!w.migration) {
        w.migration = true;
        w.migrationCreates++;
        // renderMigration writes a warm task's cutover.
        if (w.mode === 'warm') w.migrationCutover = w.taskCutover;
      }
      return a.status;
    case 'set-cutover':
      w.migrationCutover = Date.parse(a.cutover);
      return a.status;
    case 'fail-diagnosed':
      return failVM(a.status, a.blockers ? TaskReason.VMNotFound : TaskReason.Failed, a.blockers ? 'blocked' : a.text ?? '');
    case 'handoff':
      w.handoffSteps++;
      if (w.handoffSteps >= HANDOFF_STEPS) return { ...a.status, phase: 'Succeeded', reason: TaskReason.Succeeded, timestamps: { ...a.status.timestamps, completed: new Date(w.clock).toISOString() } };
      return { ...a.status, phase: 'Creating', reason: TaskReason.Creating };
    default:
      return a.status;
  }
}

type Move = 'validate' | 'startRun' | 'copy' | 'finishCopy' | 'finishVM' | 'precopy' | 'cutover' | 'finishCutover' | 'tenantSetsCutover' | 'controller';

/** Forklift's moves that are possible now (each is one of its reconciles). */
function forkliftMoves(w: World): Move[] {
  const m: Move[] = [];
  if (w.plan === 'validating') m.push('validate');
  if (w.migration && (w.stage === 'none' || w.stage === 'pending')) m.push('startRun');
  if (w.stage === 'copying') m.push(w.copied < TOTAL ? 'copy' : 'finishCopy');
  if (w.stage === 'precopying') m.push('precopy');
  // Forklift leaves CopyingPaused for the cutover once Migration.spec.cutover is not after now.
  if (w.stage === 'precopying' && w.migrationCutover !== undefined && w.migrationCutover <= w.clock) m.push('cutover');
  if (w.stage === 'cuttingover') m.push('finishCutover');
  if (w.mode === 'warm' && w.taskCutover === undefined) m.push('tenantSetsCutover');
  if (w.stage === 'creating') m.push('finishVM');
  return m;
}

function forklift(w: World, m: Move): void {
  switch (m) {
    case 'validate':
      w.plan = w.fate === 'blocked' ? 'blocked' : 'ready';
      break;
    case 'startRun':
      w.stage = w.stage === 'none' ? 'pending' : w.mode === 'warm' ? 'precopying' : 'copying';
      break;
    case 'precopy':
      w.precopies++;
      if (w.fate === 'fail' && w.precopies >= 2) w.stage = 'failed';
      if (w.fate === 'cancel' && w.precopies >= 2) w.stage = 'canceled';
      break;
    case 'cutover':
      w.stage = 'cuttingover';
      w.poweredOffAt = w.clock;
      // The final snapshot can fail too (or the tenant cancels during the cutover).
      if (w.fate === 'fail') w.stage = 'failed';
      if (w.fate === 'cancel') w.stage = 'canceled';
      break;
    case 'finishCutover':
      w.stage = 'creating';
      w.copied = TOTAL;
      break;
    case 'tenantSetsCutover':
      w.taskCutover = w.clock;
      break;
    case 'copy':
      w.copied = Math.min(TOTAL, w.copied + TOTAL / 4);
      if (w.fate === 'fail' && w.copied >= TOTAL / 2) w.stage = 'failed';
      if (w.fate === 'cancel' && w.copied >= TOTAL / 2) w.stage = 'canceled';
      break;
    case 'finishCopy':
      w.stage = 'creating';
      break;
    case 'finishVM':
      w.stage = 'succeeded';
      w.outputs = w.fate !== 'noOutput';
      break;
  }
}

interface RunResult {
  status: VMStatus;
  violations: string[];
}

/** Runs the machine to the end; `pick` chooses the next move among the possible ones, `crash` whether a pass loses its status write. */
function run(fate: Fate, pick: (moves: Move[]) => Move, crash: () => boolean, mode: Mode = 'cold', lostAction: () => boolean = () => false): RunResult {
  const w = fresh(fate, mode);
  let status: VMStatus = { id: 'vm-1', name: 'web', phase: 'Validating', plan: 'plan-1' };
  const violations: string[] = [];
  for (let i = 0; i < 500 && !isTerminalPhase(status.phase); i++) {
    w.clock += 1000;
    const moves: Move[] = [...forkliftMoves(w), 'controller'];
    const m = pick(moves);
    if (m !== 'controller') {
      forklift(w, m);
      continue;
    }
    const before = { plan: w.plan, migration: w.migration, handoff: w.handoffSteps };
    const obs = observe(w, status);
    const a = nextVMAction(obs);
    if (a.type === 'handoff' && (w.stage !== 'succeeded' || w.copied < TOTAL)) violations.push(`handoff before the transfer finished (stage ${w.stage})`);
    if (a.type === 'handoff' && !w.outputs && w.handoffSteps === 0) violations.push('handoff on a success without output');
    if (a.type === 'create-migration' && (w.plan !== 'ready' || w.migration)) violations.push(`Migration created with plan ${w.plan}, migration ${w.migration}`);
    if (a.type === 'set-cutover' && w.stage !== 'precopying' && w.stage !== 'pending') violations.push(`cutover set with Forklift at ${w.stage}`);
    if (a.type === 'set-cutover' && w.migrationCutover !== undefined && Date.parse(a.cutover) >= w.migrationCutover) violations.push('cutover moved later (or rewritten)');
    if ((a.type === 'report' || a.type === 'set-cutover') && a.status.phase === 'Precopying' && w.stage !== 'precopying' && w.stage !== 'pending') violations.push(`Precopying shown with Forklift at ${w.stage}`);
    if (mode === 'cold' && a.type === 'report' && (a.status.phase === 'Precopying' || a.status.phase === 'CuttingOver')) violations.push('a cold import shown warm');
    // The pass wrote what it observed and then lost its action (a crash, an error in a sibling's write).
    if (a.type !== 'none' && lostAction()) {
      status = statusBeforeAction(a, status);
      continue;
    }
    const next = act(w, a);
    const changed = [before.plan !== w.plan, before.migration !== w.migration, before.handoff !== w.handoffSteps].filter(Boolean).length;
    if (changed > 1) violations.push(`one pass took ${changed} steps`);
    const ts = next.timestamps ?? {};
    if (ts.started && ts.transferred && Date.parse(ts.transferred) < Date.parse(ts.started)) violations.push('transferred before started');
    if (ts.transferred && ts.completed && Date.parse(ts.completed) < Date.parse(ts.transferred)) violations.push('completed before transferred');
    if (ts.transferred && !(w.copied >= TOTAL)) violations.push('transferred recorded before every byte was copied');
    if (mode === 'warm' && ts.sourcePoweredOff && (w.poweredOffAt === undefined || Date.parse(ts.sourcePoweredOff) < w.poweredOffAt)) violations.push('source recorded off before Forklift powered it off');
    if (mode === 'warm' && ts.sourcePoweredOff && ts.completed && Date.parse(ts.completed) < Date.parse(ts.sourcePoweredOff)) violations.push('completed before the power-off');
    if (!crash()) status = next;
  }
  if (w.planCreates > 1) violations.push(`Plan created ${w.planCreates} times`);
  if (w.migrationCreates > 1) violations.push(`Migration created ${w.migrationCreates} times`);
  // A terminal VM is a record: asking again changes nothing.
  if (isTerminalPhase(status.phase)) {
    const again = nextVMAction(observe(w, status));
    if (again.type !== 'none' || again.status !== status) violations.push('a terminal VM was acted on');
  }
  return { status, violations };
}

const EXPECTED: Record<Fate, { phase: string; reason: string }> = {
  succeed: { phase: 'Succeeded', reason: TaskReason.Succeeded },
  fail: { phase: 'Failed', reason: TaskReason.Failed },
  cancel: { phase: 'Failed', reason: TaskReason.Canceled },
  noOutput: { phase: 'Failed', reason: TaskReason.EngineReportedSuccessWithoutOutput },
  blocked: { phase: 'Failed', reason: TaskReason.VMNotFound },
};

const fateArb = fc.constantFrom<Fate>('succeed', 'fail', 'cancel', 'noOutput', 'blocked');

for (const mode of ['cold', 'warm'] as const) {
test(`${mode}: under any interleaving of Forklift’s moves, the tenant’s and the controller’s passes, each pass takes at most one step, never hands off before the transfer finished, and the VM ends as its fate says`, () => {
  fc.assert(
    fc.property(fateArb, fc.array(fc.nat(), { minLength: 50, maxLength: 400 }), (fate, choices) => {
      let i = 0;
      const r = run(fate, (moves) => moves[(choices[i++ % choices.length] ?? 0) % moves.length]!, () => false, mode);
      assert.deepEqual(r.violations, []);
      assert.deepEqual({ phase: r.status.phase, reason: r.status.reason }, EXPECTED[fate]);
    }),
    { numRuns: 400 },
  );
});

test(`${mode}: a crash that loses any pass’s status write is resumed: the same end as without crashes, with no object created twice`, () => {
  fc.assert(
    fc.property(fateArb, fc.array(fc.nat(), { minLength: 50, maxLength: 400 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 50 }), (fate, choices, crashes) => {
      let i = 0;
      let c = 0;
      const pick = (moves: Move[]): Move => moves[(choices[i++ % choices.length] ?? 0) % moves.length]!;
      // Crashes stop after the list ends: the process stays up long enough to finish.
      const withCrashes = run(fate, pick, () => c < crashes.length && crashes[c++]!, mode);
      i = 0;
      const clean = run(fate, pick, () => false, mode);
      assert.deepEqual(withCrashes.violations, []);
      assert.deepEqual({ phase: withCrashes.status.phase, reason: withCrashes.status.reason }, { phase: clean.status.phase, reason: clean.status.reason });
    }),
    { numRuns: 300 },
  );
});

test(`${mode}: a status written before its action ran, the action then lost, is resumed: the same end, with no object created twice`, () => {
  fc.assert(
    fc.property(fateArb, fc.array(fc.nat(), { minLength: 50, maxLength: 400 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 50 }), (fate, choices, lost) => {
      let i = 0;
      let c = 0;
      const pick = (moves: Move[]): Move => moves[(choices[i++ % choices.length] ?? 0) % moves.length]!;
      const withLoss = run(fate, pick, () => false, mode, () => c < lost.length && lost[c++]!);
      i = 0;
      const clean = run(fate, pick, () => false, mode);
      assert.deepEqual(withLoss.violations, []);
      assert.deepEqual({ phase: withLoss.status.phase, reason: withLoss.status.reason }, { phase: clean.status.phase, reason: clean.status.reason });
    }),
    { numRuns: 300 },
  );
});
}

test('a terminal VM is a record: whatever Forklift shows, the action is none and its status unchanged', () => {
  fc.assert(
    fc.property(fc.constantFrom('Succeeded', 'Failed'), fc.constantFrom(...(['none', 'pending', 'copying', 'creating', 'succeeded', 'failed', 'canceled'] as const)), (phase, stage) => {
      const w = { ...fresh('succeed'), plan: 'ready' as const, migration: true, stage, copied: TOTAL / 2 };
      const status: VMStatus = { id: 'vm-1', name: 'web', phase: phase as 'Succeeded' | 'Failed', reason: 'X', plan: 'plan-1', timestamps: { started: new Date(T0).toISOString() } };
      const a = nextVMAction(observe(w, status));
      assert.equal(a.type, 'none');
      assert.equal(a.status, status);
    }),
  );
});

test('a Plan or Migration gone from under a started VM fails it (never recreated); before the start, the Plan is created', () => {
  const started: VMStatus = { id: 'vm-1', name: 'web', phase: 'Transferring', plan: 'plan-1', timestamps: { started: new Date(T0).toISOString() } };
  const noPlan = nextVMAction(observe(fresh('succeed'), started));
  assert.equal(noPlan.type, 'fail');
  assert.match(noPlan.status.message ?? '', /Plan plan-1 disappeared/);
  const noMig = nextVMAction(observe({ ...fresh('succeed'), plan: 'ready' }, started));
  assert.equal(noMig.type, 'fail');
  assert.equal(noMig.status.reason, TaskReason.Canceled);
  assert.match(noMig.status.message ?? '', /Migration mig-1 was deleted/);
  const unstarted: VMStatus = { id: 'vm-1', name: 'web', phase: 'Validating', plan: 'plan-1' };
  assert.equal(nextVMAction(observe(fresh('succeed'), unstarted)).type, 'create-plan');
});

test('a transfer idle past the stall limit is stalled, while one converting at CDI’s plateau is not', () => {
  const w = { ...fresh('succeed'), plan: 'ready' as const, migration: true, stage: 'copying' as const, copied: TOTAL / 2 };
  const status: VMStatus = { id: 'vm-1', name: 'web', phase: 'Transferring', plan: 'plan-1', timestamps: { started: new Date(T0).toISOString() } };
  const o = observe(w, status, 600_000);
  assert.equal(nextVMAction(o).type, 'report');
  const idle = nextVMAction({ ...o, transfer: { ...o.transfer!, idleMs: 600_001 } });
  assert.equal(idle.type, 'stalled');
  // The DataVolumes still moving are a second witness: not stalled.
  assert.equal(nextVMAction({ ...o, transfer: { ...o.transfer!, idleMs: 600_001 }, dataVolumeIdleMs: 1000 }).type, 'report');
  const conv = nextVMAction({ ...o, transfer: { ...o.transfer!, idleMs: 600_001, converting: true } });
  assert.equal(conv.type, 'report');
  assert.equal(conv.status.reason, TaskReason.Converting);
});

test('the task waits, naming what to do, for a missing source, a source not Ready, and Forklift not installed', () => {
  const base = { namespace: 't', sourceName: 'vc', forkliftInstalled: true };
  assert.equal(taskGate(base)?.reason, TaskReason.SourceNotFound);
  assert.equal(taskGate({ ...base, source: { name: 'vc', ready: { status: 'False', reason: 'ConnectionFailed' } } })?.reason, TaskReason.SourceNotReady);
  assert.equal(taskGate({ ...base, source: { name: 'vc', ready: { status: 'False', reason: 'ForkliftTooOld' } } })?.reason, TaskReason.ForkliftTooOld);
  assert.equal(taskGate({ ...base, forkliftInstalled: false, source: { name: 'vc', ready: { status: 'True' }, providerUID: 'p' } })?.reason, TaskReason.ForkliftNotInstalled);
  assert.equal(taskGate({ ...base, source: { name: 'vc', ready: { status: 'True' }, providerUID: 'p' } }), undefined);
});

test('a warm VM precopying shows the precopies done, the last one’s duration, the next one’s time, and that it waits for spec.cutover', () => {
  const w: World = { ...fresh('succeed', 'warm'), plan: 'ready', migration: true, stage: 'precopying', precopies: 3 };
  const status: VMStatus = { id: 'vm-1', name: 'web', phase: 'Precopying', plan: 'plan-1', timestamps: { started: isoAt(T0) } };
  const a = nextVMAction(observe(w, status));
  assert.equal(a.type, 'report');
  assert.equal(a.status.phase, 'Precopying');
  assert.equal(a.status.reason, TaskReason.Precopying);
  assert.deepEqual(a.status.warm, { precopies: 3, lastPrecopySeconds: 30, nextPrecopyAt: isoAt(w.clock + 60_000), cutoverAt: undefined });
  assert.match(a.status.message ?? '', /3 precopies done.*next precopy at .*waiting for spec\.cutover/);
  assert.equal(a.status.timestamps?.sourcePoweredOff, undefined, 'the source runs while precopying');
});

test('a precopy whose importer failed and is being retried keeps the VM Precopying with reason PrecopyRetrying, naming the retry; the next precopy’s fresh importer clears it', () => {
  const w: World = { ...fresh('succeed', 'warm'), plan: 'ready', migration: true, stage: 'precopying', precopies: 1 };
  const status: VMStatus = { id: 'vm-1', name: 'web', phase: 'Precopying', plan: 'plan-1', timestamps: { started: isoAt(T0) } };
  const o = observe(w, status);
  // v2.11.5 writes the importer's restarts to warm.failures and never writes consecutiveFailures.
  const retried = nextVMAction({ ...o, run: { ...o.run!, phase: 'CopyDisks', warm: { ...o.run!.warm!, failures: 1, consecutiveFailures: 0 } } });
  assert.equal(retried.type, 'report');
  assert.equal(retried.status.phase, 'Precopying');
  assert.equal(retried.status.reason, 'PrecopyRetrying');
  assert.match(retried.status.message ?? '', /the current precopy failed 1 time\(s\) and Forklift retries it/);
  const recovered = nextVMAction({ ...o, run: { ...o.run!, warm: { ...o.run!.warm!, successes: 2, failures: 0 } } });
  assert.equal(recovered.status.reason, 'Precopying');
});

test('a warm copy that failed past Forklift’s importer retries is PrecopyFailed; a snapshot vCenter refused is SnapshotFailed by the phase Forklift names', () => {
  const w: World = { ...fresh('fail', 'warm'), plan: 'ready', migration: true, stage: 'failed', precopies: 1 };
  const status: VMStatus = { id: 'vm-1', name: 'web', phase: 'Precopying', plan: 'plan-1', timestamps: { started: isoAt(T0) } };
  const o = observe(w, status);
  const words = 'Unable to transfer source data to target: nbdkit: vddk: VixDiskLib_Read: [ds] web/web.vmdk';
  const copy = nextVMAction({ ...o, run: { ...o.run!, phase: 'Completed', errorPhase: 'CopyDisks', errors: [words], warm: { ...o.run!.warm!, failures: 4 } } });
  assert.equal(copy.type, 'fail');
  assert.equal(copy.status.reason, 'PrecopyFailed');
  assert.ok(copy.status.message?.includes(`Forklift said: ${words}`), copy.status.message);
  const snap = nextVMAction({ ...o, run: { ...o.run!, phase: 'Completed', errorPhase: 'CreateSnapshot', errors: ['ServerFaultCode: Permission to perform this operation was denied.'] } });
  assert.equal(snap.type, 'fail-diagnosed');
  assert.match((snap as { text: string }).text, /Permission to perform this operation was denied\. \(Forklift phase CreateSnapshot\)/);
});

test('a warm VM’s power-off is the controller’s first sight of the source off; first seen only after the final copy began, the last precopy’s end (the downtime overstated, never hidden)', () => {
  const status: VMStatus = { id: 'vm-1', name: 'web', phase: 'Precopying', plan: 'plan-1', timestamps: { started: isoAt(T0) } };
  const w: World = { ...fresh('succeed', 'warm'), plan: 'ready', migration: true, stage: 'cuttingover', precopies: 2, poweredOffAt: T0 + 200_000, clock: T0 + 201_000 };
  const o = observe(w, status);
  assert.equal(nextVMAction(o).status.timestamps?.sourcePoweredOff, isoAt(T0 + 201_000));
  const late = nextVMAction({ ...o, run: { ...o.run!, phase: 'Finalize' } });
  assert.equal(late.status.timestamps?.sourcePoweredOff, isoAt(T0 + 60_000 + 30_000), 'the end of the second precopy');
});

test('the task’s cutover reaches the Migration: set when it has none, moved earlier, never later, never once the cutover started', () => {
  const status: VMStatus = { id: 'vm-1', name: 'web', phase: 'Precopying', plan: 'plan-1', timestamps: { started: isoAt(T0) } };
  const w: World = { ...fresh('succeed', 'warm'), plan: 'ready', migration: true, stage: 'precopying', precopies: 1, taskCutover: T0 + 3_600_000 };
  const set = nextVMAction(observe(w, status));
  assert.equal(set.type, 'set-cutover');
  assert.equal((set as { cutover: string }).cutover, isoAt(T0 + 3_600_000));
  assert.equal(set.status.warm?.cutoverAt, isoAt(T0 + 3_600_000));
  assert.equal(nextVMAction(observe({ ...w, migrationCutover: T0 + 3_600_000 }, status)).type, 'report');
  assert.equal(nextVMAction(observe({ ...w, migrationCutover: T0 + 7_200_000 }, status)).type, 'set-cutover', 'moved earlier');
  assert.equal(nextVMAction(observe({ ...w, migrationCutover: T0 + 60_000 }, status)).type, 'report', 'never later');
  const cutting = nextVMAction(observe({ ...w, migrationCutover: T0 + 7_200_000, stage: 'cuttingover', poweredOffAt: T0 + 5000, clock: T0 + 5000 }, status));
  assert.equal(cutting.type, 'report');
  assert.equal(cutting.status.phase, 'CuttingOver');
  assert.equal(cutting.status.timestamps?.sourcePoweredOff, isoAt(T0 + 5000), 'downtime counts from the power-off at cutover');
});

test('a warm run past the cutover is transferred in full even when the last precopy’s counters stopped short, and Forklift building the VM shows Creating', () => {
  const status: VMStatus = { id: 'vm-1', name: 'web', phase: 'CuttingOver', plan: 'plan-1', timestamps: { started: isoAt(T0), sourcePoweredOff: isoAt(T0 + 5000) } };
  const w: World = { ...fresh('succeed', 'warm'), plan: 'ready', migration: true, stage: 'precopying' };
  const o = observe(w, status);
  const run: VMMigration = { ...o.run!, phase: 'CreateVM', pipeline: [{ name: 'DiskTransfer', phase: 'Running', started: isoAt(T0) }], transfer: { totalBytes: TOTAL, doneBytes: TOTAL / 3, phase: 'Running' } };
  const a = nextVMAction({ ...o, run, transfer: { totalBytes: TOTAL, doneBytes: TOTAL / 3, percent: 33.33, lastChangeAt: T0, idleMs: 3_600_000, converting: false, fromDataVolumes: false }, stallAfterMs: 600_000 });
  assert.equal(a.type, 'report');
  assert.equal(a.status.phase, 'Creating');
  assert.equal(a.status.progress, 100);
  assert.ok(a.status.timestamps?.transferred);
  assert.equal(a.status.timestamps?.sourcePoweredOff, isoAt(T0 + 5000), 'the power-off time is kept');
});

test('a warm VM waiting hours between precopies is never called stalled', () => {
  const status: VMStatus = { id: 'vm-1', name: 'web', phase: 'Precopying', plan: 'plan-1', timestamps: { started: isoAt(T0) } };
  const w: World = { ...fresh('succeed', 'warm'), plan: 'ready', migration: true, stage: 'precopying', precopies: 2 };
  const o = observe(w, status, 600_000);
  const a = nextVMAction({ ...o, transfer: { totalBytes: TOTAL, doneBytes: TOTAL, percent: 100, lastChangeAt: T0, idleMs: 7_200_000, converting: false, fromDataVolumes: false }, dataVolumeIdleMs: 7_200_000 });
  assert.equal(a.type, 'report');
  assert.equal(a.status.phase, 'Precopying');
  assert.equal(a.status.bytesDone, TOTAL);
});

test('a VM whose Plan is ready waits Queued, with the budget’s sentence, while the budget has no slot for it: no Migration, no start, no stall clock', () => {
  const w = { ...fresh('succeed'), plan: 'ready' as const };
  const status: VMStatus = { id: 'vm-1', name: 'web', phase: 'Validating', plan: 'plan-1' };
  const message = 'Waiting for 1 disk of transfer slots on ESXi host esx1, which transfers 2 disks of its budget of 2: 0 disks ahead of it in this namespace, 3 disks in total.';
  const a = nextVMAction({ ...observe(w, status, 1), slot: { admitted: false, message } });
  assert.equal(a.type, 'report');
  assert.equal(a.status.phase, 'Queued');
  assert.equal(a.status.reason, REASON_QUEUED);
  assert.equal(a.status.message, message);
  assert.equal(a.status.timestamps?.started, undefined, 'a queued VM has not started');
  assert.notEqual(a.status.reason, TaskReason.Stalled);
});

test('an admitted VM gets its Migration, as does every VM when there is no budget; a Plan not ready keeps an admitted VM Validating', () => {
  const status: VMStatus = { id: 'vm-1', name: 'web', phase: 'Queued', plan: 'plan-1' };
  const ready = observe({ ...fresh('succeed'), plan: 'ready' }, status);
  assert.equal(nextVMAction({ ...ready, slot: { admitted: true } }).type, 'create-migration');
  assert.equal(nextVMAction(ready).type, 'create-migration');
  const validating = nextVMAction({ ...observe({ ...fresh('succeed'), plan: 'validating' }, status), slot: { admitted: false, message: 'x' } });
  assert.equal(validating.status.phase, 'Validating');
});

test('a Queued VM whose Migration exists (created by a leader that died before its status write) is past the queue: its run is read as any other', () => {
  const status: VMStatus = { id: 'vm-1', name: 'web', phase: 'Queued', plan: 'plan-1', transferSlot: { vcenter: 'vc', host: 'host-1', disks: 1, admittedAt: isoAt(T0) } };
  const a = nextVMAction({ ...observe({ ...fresh('succeed'), plan: 'ready', migration: true, stage: 'copying', copied: TOTAL / 4 }, status), slot: { admitted: false, message: 'x' } });
  assert.equal(a.status.phase, 'Transferring');
  assert.ok(a.status.timestamps?.started);
});

const inHandoff = (vmInstance: string | undefined, ...checkpoints: Array<string | undefined>): VMAction => ({
  type: 'handoff',
  status: { id: 'vm-1', name: 'a', phase: 'Creating', ...(vmInstance ? { vmInstance } : {}), diskHandoffs: checkpoints.map((h, index) => ({ index, vmDisk: `a-disk-${index}`, ...(h ? { handoff: h } : {}) })) },
});

test('a VM nearer its end goes first: its VMInstance made, then fewer disk steps left, then VMs before their transfer', () => {
  const ready = stepsToEnd(inHandoff('a', DISK_DONE, DISK_DONE));
  const settling = stepsToEnd(inHandoff(undefined, DISK_DONE, Step.CreateVMDisk));
  const announced = stepsToEnd(inHandoff(undefined, DISK_DONE, pendingCheckpoint(Step.CreateVMDisk)));
  const fresh = stepsToEnd(inHandoff(undefined, undefined, undefined));
  const migration = stepsToEnd({ type: 'create-migration', status: { id: 'vm-2', name: 'b', phase: 'Queued' } });
  const plan = stepsToEnd({ type: 'create-plan', status: { id: 'vm-3', name: 'c', phase: 'Validating' } });
  assert.equal(ready, 2, 'the scaffolding VM and the claims are what is left');
  assert.ok(ready < settling && settling < announced && announced < fresh && fresh < migration && migration < plan, `${[ready, settling, announced, fresh, migration, plan]}`);
  assert.equal(fresh, 2 * DISK_STEPS.length + 3);
});

test('an action’s requests take the limiter’s turns nearest the end first, all of them after the work of priority 0 (watches, relists, sources)', () => {
  const actions: VMAction[] = [
    inHandoff('a', DISK_DONE, DISK_DONE),
    inHandoff(undefined, DISK_DONE, Step.CreateVMDisk),
    inHandoff(undefined, undefined, undefined),
    { type: 'create-migration', status: { id: 'vm-2', name: 'b', phase: 'Queued' } },
    { type: 'create-plan', status: { id: 'vm-3', name: 'c', phase: 'Validating' } },
  ];
  const p = actions.map(requestPriority);
  for (let i = 1; i < p.length; i++) assert.ok(p[i - 1]! > p[i]!, `${p}`);
  assert.ok(p.every((x) => x < 0), `${p}`);
});

test('a pass orders the VMs the previous pass did not reach first, each group nearest the end first, ties in the given order', () => {
  fc.assert(
    fc.property(fc.array(fc.record({ steps: fc.nat(40), behind: fc.boolean() }), { maxLength: 30 }), (vms) => {
      const ks = vms.map((_, k) => k);
      const behind = new Set(ks.filter((k) => vms[k]!.behind));
      const order = passOrder(ks, behind, (k) => vms[k]!.steps);
      assert.deepEqual([...order].sort((a, b) => a - b), ks, 'every VM once');
      const firstAhead = order.findIndex((k) => !behind.has(k));
      if (firstAhead >= 0) assert.ok(order.slice(firstAhead).every((k) => !behind.has(k)), 'no VM left behind comes after one that was not');
      for (let i = 1; i < order.length; i++) {
        const [p, q] = [order[i - 1]!, order[i]!];
        if (behind.has(p) !== behind.has(q)) continue;
        assert.ok(vms[p]!.steps < vms[q]!.steps || (vms[p]!.steps === vms[q]!.steps && p < q));
      }
    }),
  );
});
