// nextStep / nextVMStep: every branch by table, and the whole recipe against a model of the world (the
// PV binder, CDI, the garbage collector and pvc-protection as moves that may happen at any time, in any
// order) — including the safety properties: the volume is never Released under Delete, and the transfer
// claim never disappears while a DataVolume that would recreate it is alive.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  ANNOTATION_BIND_REQUESTED,
  ANNOTATION_HANDOFF,
  CDI_POPULATED_FOR,
  CLAIM_FINALIZER,
  HANDOFF_SETTLED,
  LABEL_DISK_INDEX,
  LABEL_TASK_UID,
  LABEL_VM_ID,
} from '../../api/labels.ts';
import { TaskReason } from '../../api/conditions.ts';
import type { KubeObject } from '../../runtime/kube.ts';
import { IRREVERSIBLE_STEPS, adoptedBy, claimRefMatches, desiredReclaimPolicy, nextStep, nextVMStep, type DiskObservation, type Markers } from './plan.ts';
import { DISK_DONE, DISK_STEPS, HANDOFF_STEPS, RECORDED_BEFORE, Step, VM_STEPS, type StepName } from './steps.ts';

const DISK_DONE_CHECKPOINT = DISK_DONE;

const M: Markers = { taskUid: 'task-uid-1', vmId: 'vm-42' };
const NS = 'tenant-a';
const ours = (index?: number): Record<string, string> => ({ [LABEL_TASK_UID]: M.taskUid, [LABEL_VM_ID]: M.vmId, ...(index !== undefined ? { [LABEL_DISK_INDEX]: String(index) } : {}) });

/** The world of one disk, as plain Kubernetes-shaped objects. */
interface World {
  pv?: KubeObject;
  transferClaim?: KubeObject;
  transferDV?: KubeObject;
  claim?: KubeObject;
  dv?: KubeObject;
  vmDisk?: KubeObject;
  sc?: KubeObject;
  /** Safety violations observed while the world moved. */
  violations: string[];
}

function freshWorld(o: { dvLeft?: boolean; classPolicy?: 'Delete' | 'Retain' | 'gone' } = {}): World {
  const transferDV: KubeObject | undefined = o.dvLeft === false ? undefined : { metadata: { name: 'plan-vm-42-abcde', namespace: NS, uid: 'dv-old', labels: { vmID: M.vmId } } };
  return {
    pv: {
      metadata: { name: 'pvc-1', uid: 'pv-uid', resourceVersion: '1' },
      spec: {
        capacity: { storage: '10Gi' },
        storageClassName: 'replicated',
        persistentVolumeReclaimPolicy: 'Delete',
        claimRef: { name: 'plan-vm-42-abcde', namespace: NS, uid: 'old-uid' },
      },
      status: { phase: 'Bound' },
    },
    transferClaim: {
      metadata: {
        name: 'plan-vm-42-abcde',
        namespace: NS,
        uid: 'old-uid',
        ownerReferences: [
          { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', name: 'web', uid: 'vm-uid' },
          ...(transferDV ? [{ apiVersion: 'cdi.kubevirt.io/v1beta1', kind: 'DataVolume', name: 'plan-vm-42-abcde', uid: 'dv-old', controller: true }] : []),
        ],
      },
      spec: { volumeName: 'pvc-1' },
      status: { phase: 'Bound' },
    },
    transferDV,
    sc: o.classPolicy === 'gone' ? undefined : { metadata: { name: 'replicated' }, reclaimPolicy: o.classPolicy ?? 'Delete' },
    violations: [],
  };
}

function observe(w: World): DiskObservation {
  return {
    index: 0,
    vmDisk: 'web-disk-0',
    claimName: 'vm-disk-web-disk-0',
    namespace: NS,
    transferClaimName: 'plan-vm-42-abcde',
    transferClaim: w.transferClaim,
    volumeName: w.pv?.metadata?.name ?? 'pvc-1',
    volume: w.pv,
    transferDataVolumes: w.transferDV ? [w.transferDV] : [],
    claim: w.claim,
    dataVolume: w.dv,
    vmDiskObject: w.vmDisk,
  };
}

const clone = <T>(x: T): T => structuredClone(x);
const spec = (o: KubeObject | undefined): Record<string, unknown> => (o!.spec ??= {}) as Record<string, unknown>;
const status = (o: KubeObject | undefined): Record<string, unknown> => (o!.status ??= {}) as Record<string, unknown>;

/** What each controller step does to the world (the executor's writes, in model form). */
function applyStep(w: World, step: StepName): void {
  const pv = w.pv!;
  switch (step) {
    case Step.RetainVolume:
      pv.metadata!.labels = { ...pv.metadata!.labels, ...ours(0) };
      spec(pv).persistentVolumeReclaimPolicy = 'Retain';
      break;
    case Step.DeleteTransferDataVolume:
      w.transferDV!.metadata!.deletionTimestamp = 'now';
      break;
    case Step.OrphanTransferClaim:
      w.transferClaim!.metadata!.ownerReferences = w.transferClaim!.metadata!.ownerReferences!.filter((r) => r.kind !== 'VirtualMachine' && r.kind !== 'DataVolume');
      break;
    case Step.CreateClaim:
      w.claim = {
        metadata: { name: 'vm-disk-web-disk-0', namespace: NS, uid: 'new-uid', labels: ours(0), annotations: { [CDI_POPULATED_FOR]: 'vm-disk-web-disk-0' } },
        spec: { volumeName: 'pvc-1' },
        status: { phase: 'Pending' },
      };
      break;
    case Step.DeleteTransferClaim:
      w.transferClaim!.metadata!.deletionTimestamp = 'now';
      break;
    case Step.RebindVolume:
      spec(pv).claimRef = { name: 'vm-disk-web-disk-0', namespace: NS, uid: 'new-uid' };
      break;
    case Step.RequestBind:
      w.claim!.metadata!.annotations = { ...w.claim!.metadata!.annotations, [ANNOTATION_BIND_REQUESTED]: 't' };
      break;
    case Step.CreateDataVolume:
      w.dv = { metadata: { name: 'vm-disk-web-disk-0', namespace: NS, uid: 'dv-new', labels: ours(0) } };
      break;
    case Step.CreateVMDisk:
      w.vmDisk = { metadata: { name: 'web-disk-0', namespace: NS, labels: ours(0) } };
      break;
    case Step.SettleVolume:
      spec(pv).persistentVolumeReclaimPolicy = desiredReclaimPolicy(w.sc);
      pv.metadata!.annotations = { ...pv.metadata!.annotations, [ANNOTATION_HANDOFF]: HANDOFF_SETTLED };
      break;
    default:
      throw new Error(`unexpected step ${step}`);
  }
}

/** The rest of the cluster: each move is enabled only when its real counterpart could act. */
const ENV_MOVES = ['gcOrphansDV', 'pvcProtectionRemovesClaim', 'binderReleases', 'binderBindsVolume', 'binderClaimEvent', 'binderResync', 'cdiAdopts', 'classDeleted'] as const;
type EnvMove = (typeof ENV_MOVES)[number];

function envMove(w: World, m: EnvMove): boolean {
  const pv = w.pv;
  const ref = pv ? (spec(pv).claimRef as { name: string; uid: string } | undefined) : undefined;
  switch (m) {
    case 'gcOrphansDV':
      if (!w.transferDV?.metadata?.deletionTimestamp) return false;
      if (w.transferClaim) w.transferClaim.metadata!.ownerReferences = w.transferClaim.metadata!.ownerReferences!.filter((r) => r.uid !== 'dv-old');
      w.transferDV = undefined;
      return true;
    case 'pvcProtectionRemovesClaim':
      if (!w.transferClaim?.metadata?.deletionTimestamp) return false;
      if (w.transferDV && !w.transferDV.metadata?.deletionTimestamp) w.violations.push('transfer claim deleted while a live DataVolume would recreate it');
      w.transferClaim = undefined;
      return true;
    case 'binderReleases': {
      if (!pv || !ref || ref.uid !== 'old-uid' || w.transferClaim || status(pv).phase === 'Released') return false;
      status(pv).phase = 'Released';
      if (spec(pv).persistentVolumeReclaimPolicy === 'Delete') {
        w.violations.push('volume Released under Delete: data deleted');
        w.pv = undefined;
      }
      return true;
    }
    case 'binderBindsVolume':
      if (!pv || !ref || !w.claim || ref.uid !== w.claim.metadata?.uid || status(pv).phase === 'Bound') return false;
      status(pv).phase = 'Bound';
      return true;
    case 'binderClaimEvent':
      // A claim event makes the binder look at the claim: it binds when the volume already names it.
      if (!pv || !w.claim || status(w.claim).phase === 'Bound' || !w.claim.metadata?.annotations?.[ANNOTATION_BIND_REQUESTED]) return false;
      if (ref?.uid !== w.claim.metadata.uid || status(pv).phase !== 'Bound') return false;
      status(w.claim).phase = 'Bound';
      return true;
    case 'binderResync':
      if (!pv || !w.claim || status(w.claim).phase === 'Bound' || ref?.uid !== w.claim.metadata?.uid) return false;
      status(pv).phase = 'Bound';
      status(w.claim).phase = 'Bound';
      return true;
    case 'cdiAdopts':
      if (!w.dv || !w.claim || adoptedBy(w.claim, w.dv)) return false;
      w.claim.metadata!.ownerReferences = [{ apiVersion: 'cdi.kubevirt.io/v1beta1', kind: 'DataVolume', name: 'vm-disk-web-disk-0', uid: 'dv-new', controller: true }];
      return true;
    case 'classDeleted':
      if (!w.sc) return false;
      w.sc = undefined;
      return true;
  }
}

/** Runs the controller (one step per call) and the environment until done; returns the steps taken. */
function drive(w: World, choose: (enabled: Array<'controller' | EnvMove>) => 'controller' | EnvMove, maxMoves = 500): StepName[] {
  const steps: StepName[] = [];
  for (let i = 0; i < maxMoves; i++) {
    const action = nextStep(observe(w), M);
    if (action.type === 'done') return steps;
    assert.notEqual(action.type, 'fail', `unexpected failure: ${JSON.stringify(action)}`);
    const enabled: Array<'controller' | EnvMove> = [];
    if (action.type === 'step') enabled.push('controller');
    for (const m of ENV_MOVES) if (m !== 'classDeleted' && canMove(w, m)) enabled.push(m);
    if (canMove(w, 'classDeleted')) enabled.push('classDeleted');
    assert.ok(enabled.length, `stuck: ${JSON.stringify(action)}`);
    const pick = choose(enabled);
    if (pick === 'controller' && action.type === 'step') {
      applyStep(w, action.step);
      steps.push(action.step);
    } else if (pick !== 'controller') {
      envMove(w, pick);
    }
  }
  throw new Error('did not converge');
}

function canMove(w: World, m: EnvMove): boolean {
  return envMove(clone(w), m);
}

test('the recipe, with the cluster reacting at once, runs every disk step in the declared order', () => {
  const w = freshWorld();
  // The environment acts before the controller whenever it can (but the class stays).
  const steps = drive(w, (enabled) => enabled.find((e) => e !== 'controller' && e !== 'classDeleted' && e !== 'binderResync') ?? 'controller');
  assert.deepEqual(steps, DISK_STEPS);
  assert.deepEqual(w.violations, []);
  assert.equal(spec(w.pv).persistentVolumeReclaimPolicy, 'Delete');
  assert.equal(w.pv!.metadata!.uid, 'pv-uid');
});

test('without a leftover DataVolume the step that deletes it is skipped', () => {
  const w = freshWorld({ dvLeft: false });
  const steps = drive(w, (enabled) => enabled.find((e) => e !== 'controller' && e !== 'classDeleted' && e !== 'binderResync') ?? 'controller');
  assert.deepEqual(steps, DISK_STEPS.filter((s) => s !== Step.DeleteTransferDataVolume));
});

test('a bind finished by the periodic resync needs no bind request', () => {
  const w = freshWorld({ dvLeft: false });
  const steps = drive(w, (enabled) => (enabled.includes('binderResync') ? 'binderResync' : (enabled.find((e) => e !== 'controller' && e !== 'classDeleted') ?? 'controller')));
  assert.ok(!steps.includes(Step.RequestBind));
  assert.equal(steps.at(-1), Step.SettleVolume);
});

test('any interleaving of the cluster’s reactions converges without losing the volume or re-importing', () => {
  fc.assert(
    fc.property(
      fc.array(fc.nat(), { minLength: 0, maxLength: 200 }),
      fc.boolean(),
      fc.constantFrom<'Delete' | 'Retain' | 'gone'>('Delete', 'Retain', 'gone'),
      (choices, dvLeft, classPolicy) => {
        const w = freshWorld({ dvLeft, classPolicy });
        let i = 0;
        const steps = drive(w, (enabled) => {
          // Random choices first, then a fair tail (the controller last) so the run terminates.
          if (i < choices.length) return enabled[choices[i++]! % enabled.length]!;
          return enabled.find((e) => e !== 'controller') ?? 'controller';
        });
        assert.deepEqual(w.violations, []);
        assert.equal(w.pv?.metadata?.uid, 'pv-uid', 'same volume');
        assert.equal(steps.at(-1), Step.SettleVolume);
        // Settled on the class's policy as it was when settling (Delete once the class is gone).
        assert.equal(spec(w.pv).persistentVolumeReclaimPolicy, desiredReclaimPolicy(w.sc));
        assert.ok(claimRefMatches(w.pv, w.claim));
        assert.equal(w.transferClaim, undefined);
        // Every step at most once except waits: an idempotent machine repeats nothing that succeeded.
        assert.equal(new Set(steps).size, steps.length, `a step repeated: ${steps.join(',')}`);
      },
    ),
    { numRuns: 400 },
  );
});

test('without CDI adoption the disk waits before settling, naming what it waits for', () => {
  const w = freshWorld({ dvLeft: false });
  for (let i = 0; i < 100; i++) {
    const a = nextStep(observe(w), M);
    if (a.type === 'step') {
      assert.notEqual(a.step, Step.SettleVolume);
      applyStep(w, a.step);
      continue;
    }
    const moved = (['pvcProtectionRemovesClaim', 'binderReleases', 'binderBindsVolume', 'binderClaimEvent'] as const).some((m) => envMove(w, m));
    if (!moved) {
      assert.equal(a.type, 'wait');
      assert.match((a as { message: string }).message, /waiting for CDI to adopt claim vm-disk-web-disk-0/);
      assert.equal(spec(w.pv).persistentVolumeReclaimPolicy, 'Retain', 'still Retain while the claim has no owner');
      return;
    }
  }
  assert.fail('never waited for CDI');
});

/** Runs the recipe with the cluster reacting at once until the next action is the settle step. */
function untilSettle(): World {
  const w = freshWorld({ dvLeft: false });
  for (let i = 0; i < 100; i++) {
    const a = nextStep(observe(w), M);
    if (a.type === 'step' && a.step === Step.SettleVolume) return w;
    if (a.type === 'step') applyStep(w, a.step);
    else assert.ok((['pvcProtectionRemovesClaim', 'binderReleases', 'binderBindsVolume', 'binderClaimEvent', 'cdiAdopts'] as const).some((m) => envMove(w, m)), `stuck: ${JSON.stringify(a)}`);
  }
  assert.fail('never reached the settle step');
}

test('settle rests on every condition: a VMDisk this handoff created and someone deleted fails the VM with OutputDeleted, the volume left on Retain', () => {
  const w = untilSettle();
  assert.equal(spec(w.pv).persistentVolumeReclaimPolicy, 'Retain');
  w.vmDisk = undefined;
  const a = nextStep({ ...observe(w), checkpoint: Step.CreateVMDisk }, M);
  assert.equal(a.type, 'fail');
  assert.equal((a as { reason: string }).reason, TaskReason.OutputDeleted);
  assert.match((a as { message: string }).message, /^VMDisk web-disk-0 was deleted by someone other than this controller after the handoff created it; .*no VMInstance is created/);
  // Without evidence that it was created (its checkpoint is recorded before the create), it is still to be made.
  assert.deepEqual(nextStep({ ...observe(w), checkpoint: Step.CreateDataVolume }, M), { type: 'step', step: Step.CreateVMDisk });
});

test('each output whose create was recorded and is now missing or being deleted fails the VM with OutputDeleted, naming it and who else wrote it; nothing is re-created', () => {
  const w = untilSettle();
  const managed = (o: KubeObject | undefined, manager: string): KubeObject => ({ ...o!, metadata: { ...o!.metadata, deletionTimestamp: 'now', managedFields: [{ manager: 'migration-controller' }, { manager }] } as KubeObject['metadata'] });
  const cases: Array<[string, Partial<DiskObservation>, RegExp]> = [
    [Step.CreateClaim, { claim: undefined }, /^PersistentVolumeClaim vm-disk-web-disk-0 was deleted by someone other than this controller/],
    [Step.CreateClaim, { claim: managed(w.claim, 'kubectl-client-side-apply') }, /^PersistentVolumeClaim vm-disk-web-disk-0 was being deleted \(last written by kubectl-client-side-apply\)/],
    [Step.CreateDataVolume, { dataVolume: undefined }, /^DataVolume vm-disk-web-disk-0 was deleted/],
    [Step.CreateDataVolume, { dataVolume: managed(w.dv, 'helm-controller') }, /^DataVolume vm-disk-web-disk-0 was being deleted \(last written by helm-controller\)/],
    [Step.CreateVMDisk, { vmDiskObject: managed(w.vmDisk, 'argocd-controller') }, /^VMDisk web-disk-0 was being deleted \(last written by argocd-controller\)/],
    [DISK_DONE_CHECKPOINT, { vmDiskObject: undefined }, /^VMDisk web-disk-0 was deleted/],
    // Deleted, then made again without our markers (a Helm release re-rendering its DataVolume): still ours deleted.
    [Step.CreateDataVolume, { dataVolume: { metadata: { name: 'vm-disk-web-disk-0', namespace: NS, labels: { 'helm.toolkit.fluxcd.io/name': 'vm-disk-web-disk-0' } } } }, /^DataVolume vm-disk-web-disk-0 was deleted after the handoff created it, and one of that name was made again by another writer \(left untouched\)/],
  ];
  for (const [checkpoint, change, message] of cases) {
    const a = nextStep({ ...observe(w), ...change, checkpoint }, M);
    assert.equal(a.type, 'fail', `${checkpoint}: ${JSON.stringify(a)}`);
    assert.equal((a as { reason: string }).reason, TaskReason.OutputDeleted);
    assert.match((a as { message: string }).message, message);
  }
  // Before its create was recorded, a missing output is simply still to be made.
  const early = freshWorld({ dvLeft: false });
  for (const s of [Step.RetainVolume, Step.OrphanTransferClaim] as const) applyStep(early, s);
  assert.deepEqual(nextStep({ ...observe(early), checkpoint: Step.OrphanTransferClaim }, M), { type: 'step', step: Step.CreateClaim });
});

test('the steps after which data cannot come back are the ones decided on a live observation', () => {
  assert.deepEqual([...IRREVERSIBLE_STEPS].sort(), [Step.CreateDataVolume, Step.CreateVMDisk, Step.CreateVMInstance, Step.DeleteTransferClaim, Step.DeleteTransferDataVolume, Step.ReleaseClaims, Step.SettleVolume].sort());
  assert.deepEqual([...RECORDED_BEFORE].sort(), [Step.CreateClaim, Step.CreateDataVolume, Step.CreateVMDisk].sort());
});

test('settle waits while the transferred claim still exists, even terminating and no longer bound to the volume', () => {
  const w = untilSettle();
  w.transferClaim = { metadata: { name: 'plan-vm-42-abcde', namespace: NS, uid: 'old-uid', deletionTimestamp: 'now', finalizers: ['kubernetes.io/pvc-protection'] }, spec: { volumeName: 'pvc-1' }, status: { phase: 'Lost' } };
  const a = nextStep(observe(w), M);
  assert.equal(a.type, 'wait');
  assert.match((a as { message: string }).message, /transferred claim plan-vm-42-abcde to be gone/);
});

test('the volume is not re-pointed while the binder still shows it Bound to the deleted claim', () => {
  const w = freshWorld({ dvLeft: false });
  for (const s of [Step.RetainVolume, Step.OrphanTransferClaim, Step.CreateClaim, Step.DeleteTransferClaim] as const) {
    assert.deepEqual(nextStep(observe(w), M), { type: 'step', step: s });
    applyStep(w, s);
  }
  envMove(w, 'pvcProtectionRemovesClaim');
  const a = nextStep(observe(w), M);
  assert.equal(a.type, 'wait');
  envMove(w, 'binderReleases');
  assert.deepEqual(nextStep(observe(w), M), { type: 'step', step: Step.RebindVolume });
});

test('outputs without our markers are someone else’s: OutputExists, whichever of the three it is', () => {
  for (const which of ['claim', 'dv', 'vmDisk'] as const) {
    const w = freshWorld();
    const foreign = { metadata: { name: 'x', namespace: NS, labels: { other: 'yes' } }, spec: { volumeName: 'pvc-1' } };
    w[which] = foreign;
    const a = nextStep(observe(w), M);
    assert.equal(a.type, 'fail', which);
    assert.equal((a as { reason: string }).reason, TaskReason.OutputExists);
  }
});

test('labels handed back with Cozystack’s prefix still mark the VMDisk as ours', () => {
  const w = freshWorld();
  w.vmDisk = { metadata: { name: 'web-disk-0', labels: Object.fromEntries(Object.entries(ours(0)).map(([k, v]) => [`apps.cozystack.io-${k}`, v])) } };
  assert.deepEqual(nextStep(observe(w), M), { type: 'step', step: Step.RetainVolume });
});

test('a claim of ours that names another volume fails instead of stealing either volume', () => {
  const w = freshWorld({ dvLeft: false });
  applyStep(w, Step.RetainVolume);
  applyStep(w, Step.OrphanTransferClaim);
  applyStep(w, Step.CreateClaim);
  spec(w.claim).volumeName = 'pvc-other';
  const a = nextStep(observe(w), M);
  assert.equal(a.type, 'fail');
  assert.match((a as { message: string }).message, /names volume pvc-other/);
});

test('before anything is recorded: an unbound transfer claim waits; a missing one fails as success-without-output', () => {
  const w = freshWorld();
  const o = observe(w);
  assert.equal(nextStep({ ...o, volume: undefined, volumeName: undefined, transferClaim: { ...w.transferClaim!, status: { phase: 'Pending' } } }, M).type, 'wait');
  const missing = nextStep({ ...o, volume: undefined, volumeName: undefined, transferClaim: undefined }, M);
  assert.equal(missing.type, 'fail');
  assert.equal((missing as { reason: string }).reason, TaskReason.EngineReportedSuccessWithoutOutput);
  const lost = nextStep({ ...o, volume: undefined, volumeName: 'pvc-1' }, M);
  assert.equal(lost.type, 'fail');
  assert.match((lost as { message: string }).message, /PersistentVolume pvc-1 of disk 0 no longer exists/);
});

test('a settled disk is done, even when Helm later rewrote the DataVolume’s labels', () => {
  const w = freshWorld({ dvLeft: false });
  drive(w, (enabled) => enabled.find((e) => e !== 'controller' && e !== 'classDeleted') ?? 'controller');
  w.dv!.metadata!.labels = { 'app.kubernetes.io/managed-by': 'Helm' };
  assert.deepEqual(nextStep(observe(w), M), { type: 'done' });
});

test('reclaim policy: the class’s, Delete when it names none or is gone', () => {
  assert.equal(desiredReclaimPolicy({ metadata: { name: 'a' }, reclaimPolicy: 'Retain' }), 'Retain');
  assert.equal(desiredReclaimPolicy({ metadata: { name: 'a' }, reclaimPolicy: 'Delete' }), 'Delete');
  assert.equal(desiredReclaimPolicy({ metadata: { name: 'a' } }), 'Delete');
  assert.equal(desiredReclaimPolicy(undefined), 'Delete');
});

const deployed = { conditions: [{ type: 'Ready', status: 'True', reason: 'InstallSucceeded', message: 'Helm install succeeded' }, { type: 'Released', status: 'True', reason: 'InstallSucceeded', message: '' }] };

test('VM steps: the VMInstance, then — once every release deployed — the scaffolding VM goes; a foreign VMInstance fails; a VM gone too early fails', () => {
  const vmi = { metadata: { name: 'web', labels: ours() }, status: deployed };
  const disks = [{ name: 'web-disk-0', object: { metadata: { name: 'web-disk-0' }, status: deployed } }];
  const scaffold = { metadata: { name: 'web', uid: 'vm-uid' } };
  assert.deepEqual(nextVMStep({ vmInstanceName: 'web', scaffoldingVM: scaffold }, M), { type: 'step', step: Step.CreateVMInstance });
  assert.deepEqual(nextVMStep({ vmInstanceName: 'web', vmInstance: vmi, vmDisks: disks, scaffoldingVM: scaffold }, M), { type: 'step', step: Step.DeleteScaffoldingVM });
  assert.deepEqual(nextVMStep({ vmInstanceName: 'web', vmInstance: vmi, vmDisks: disks, scaffoldingVM: { metadata: { ...scaffold.metadata, deletionTimestamp: 'now' } } }, M), { type: 'done' });
  assert.deepEqual(nextVMStep({ vmInstanceName: 'web', vmInstance: vmi, vmDisks: disks }, M), { type: 'done' });
  const foreign = nextVMStep({ vmInstanceName: 'web', vmInstance: { metadata: { name: 'web' } }, scaffoldingVM: scaffold }, M);
  assert.equal((foreign as { reason: string }).reason, TaskReason.OutputExists);
  assert.equal(nextVMStep({ vmInstanceName: 'web' }, M).type, 'fail');
});

test('after the scaffolding VM, the claims leave the handoff’s custody last; a recorded VMInstance that is gone or going fails the VM with OutputDeleted', () => {
  const vmi = { metadata: { name: 'web', labels: ours() }, status: deployed };
  const disks = [{ name: 'web-disk-0', object: { metadata: { name: 'web-disk-0' }, status: deployed } }];
  const held = [{ name: 'vm-disk-web-disk-0', object: { metadata: { name: 'vm-disk-web-disk-0', finalizers: ['kubernetes.io/pvc-protection', CLAIM_FINALIZER] } } }];
  const free = [{ name: 'vm-disk-web-disk-0', object: { metadata: { name: 'vm-disk-web-disk-0', finalizers: ['kubernetes.io/pvc-protection'] } } }];
  const scaffold = { metadata: { name: 'web', uid: 'vm-uid' } };
  assert.deepEqual(nextVMStep({ vmInstanceName: 'web', vmInstance: vmi, vmDisks: disks, claims: held, scaffoldingVM: scaffold }, M), { type: 'step', step: Step.DeleteScaffoldingVM });
  assert.deepEqual(nextVMStep({ vmInstanceName: 'web', vmInstance: vmi, vmDisks: disks, claims: held }, M), { type: 'step', step: Step.ReleaseClaims });
  assert.deepEqual(nextVMStep({ vmInstanceName: 'web', vmInstance: vmi, vmDisks: disks, claims: free }, M), { type: 'done' });
  for (const vmInstance of [undefined, { ...vmi, metadata: { ...vmi.metadata, deletionTimestamp: 'now' } }]) {
    const a = nextVMStep({ vmInstanceName: 'web', vmInstance, vmInstanceRecorded: true, vmDisks: disks, claims: held, scaffoldingVM: scaffold }, M);
    assert.equal((a as { reason?: string }).reason, TaskReason.OutputDeleted);
    assert.match((a as { message: string }).message, /^VMInstance web was (being )?deleted/);
  }
});

test('a VM is not done, and its scaffolding VM stays, while a VMDisk or the VMInstance release has not deployed', () => {
  const scaffold = { metadata: { name: 'web', uid: 'vm-uid' } };
  const installing = { conditions: [{ type: 'Ready', status: 'Unknown', reason: 'Progressing', message: "Running 'install' action with timeout of 5m0s" }] };
  const vmi = { metadata: { name: 'web', labels: ours() }, status: deployed };
  const a = nextVMStep({ vmInstanceName: 'web', vmInstance: { ...vmi, status: installing }, vmDisks: [{ name: 'web-disk-0', object: { metadata: {}, status: deployed } }], scaffoldingVM: scaffold }, M);
  assert.equal(a.type, 'wait');
  assert.match((a as { message: string }).message, /VMInstance web: Running 'install' action/);
  const b = nextVMStep({ vmInstanceName: 'web', vmInstance: vmi, vmDisks: [{ name: 'web-disk-0', object: { metadata: {} } }] }, M);
  assert.equal(b.type, 'wait', 'a VMDisk with no conditions yet is still on its way');
});

test("a release the chart failed fails the VM with the chart's message, keeping the scaffolding VM", () => {
  const scaffold = { metadata: { name: 'web', uid: 'vm-uid' } };
  const msg = 'Helm install failed for release t/vm-instance-web with chart vm-instance@0.1.0: execution error at (vm-instance/templates/vm.yaml:2:6): Specified instanceType does not exist in the cluster: u1.huge';
  const failedRelease = { conditions: [{ type: 'Ready', status: 'False', reason: 'InstallFailed', message: msg }, { type: 'Released', status: 'False', reason: 'InstallFailed', message: msg }] };
  const a = nextVMStep({ vmInstanceName: 'web', vmInstance: { metadata: { name: 'web', labels: ours() }, status: failedRelease }, vmDisks: [], scaffoldingVM: scaffold }, M);
  assert.equal(a.type, 'fail');
  assert.equal((a as { reason: string }).reason, TaskReason.ReleaseFailed);
  assert.match((a as { message: string }).message, /Specified instanceType does not exist in the cluster: u1\.huge/);
  const gone = nextVMStep({ vmInstanceName: 'web', vmInstance: { metadata: { name: 'web', labels: ours() }, status: deployed }, vmDisks: [{ name: 'web-disk-0', object: undefined }] }, M);
  assert.equal(gone.type, 'fail');
  assert.match((gone as { message: string }).message, /VMDisk web-disk-0/);
});

test('HANDOFF_STEPS lists every step once: the disk steps, then the VM steps', () => {
  assert.deepEqual(HANDOFF_STEPS, [...DISK_STEPS, ...VM_STEPS]);
  assert.equal(new Set(HANDOFF_STEPS).size, HANDOFF_STEPS.length);
  assert.deepEqual(new Set(HANDOFF_STEPS), new Set(Object.values(Step)));
});
