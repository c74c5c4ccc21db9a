// The task reconciler's watch mappers resolve through the caches (namespace index, labels), not through
// anything a reconcile remembered: a freshly made reconciler (a restart) maps the first event already.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../config.ts';
import { LABEL_TASK } from '../../api/labels.ts';
import { GVRs, type GVR } from '../../runtime/gvr.ts';
import type { KubeObject } from '../../runtime/kube.ts';
import type { Cache } from '../../runtime/reconciler.ts';
import { taskReconciler } from './reconciler.ts';
import { PLAN_LABEL } from './observe.ts';

function cacheOf(objs: KubeObject[]): Cache {
  return {
    get: (ns, name) => objs.find((o) => o.metadata?.namespace === ns && o.metadata?.name === name),
    list: (ns) => objs.filter((o) => !ns || o.metadata?.namespace === ns),
    hasSynced: () => true,
  };
}

const caches = (m: Partial<Record<string, KubeObject[]>>) => (gvr: GVR): Cache | undefined => (m[gvr.plural] ? cacheOf(m[gvr.plural]!) : undefined);

test('a transfer claim, DataVolume or VM of a Plan maps to the Plan’s task through the cached Plans, on a reconciler that never reconciled', () => {
  const r = taskReconciler(parseConfig(['--kubeconfig', '/k'], {}));
  const plans = [
    { metadata: { name: 'p1', namespace: 'a', uid: 'plan-uid-1', labels: { [LABEL_TASK]: 'import' } } },
    { metadata: { name: 'p2', namespace: 'b', uid: 'plan-uid-2', labels: { [LABEL_TASK]: 'other' } } },
  ];
  const cache = caches({ [GVRs.Plan.plural]: plans });
  for (const gvr of [GVRs.PersistentVolumeClaim, GVRs.DataVolume, GVRs.VirtualMachine]) {
    const w = r.watches.find((x) => x.gvr === gvr && x.labelSelector === PLAN_LABEL)!;
    assert.deepEqual(w.map({ metadata: { name: 'x', namespace: 'a', labels: { [PLAN_LABEL]: 'plan-uid-1' } } }, cache), [{ namespace: 'a', name: 'import' }], gvr.kind);
    assert.deepEqual(w.map({ metadata: { name: 'x', namespace: 'a', labels: { [PLAN_LABEL]: 'plan-uid-2' } } }, cache), [], 'a Plan of another namespace is not this object’s');
    assert.deepEqual(w.map({ metadata: { name: 'x', namespace: 'a', labels: { [PLAN_LABEL]: 'plan-uid-1' } } }, () => undefined), [], 'no Plan cache yet: nothing to map to');
  }
});

test('a source maps to the tasks of its namespace that reference it', () => {
  const r = taskReconciler(parseConfig(['--kubeconfig', '/k'], {}));
  const tasks = [
    { metadata: { name: 't1', namespace: 'a' }, spec: { sourceRef: { name: 'vc' } } },
    { metadata: { name: 't2', namespace: 'a' }, spec: { sourceRef: { name: 'other' } } },
    { metadata: { name: 't3', namespace: 'b' }, spec: { sourceRef: { name: 'vc' } } },
  ] as unknown as KubeObject[];
  const w = r.watches.find((x) => x.gvr === GVRs.VMImportSource)!;
  assert.deepEqual(w.map({ metadata: { name: 'vc', namespace: 'a' } }, caches({ [GVRs.VMImportTask.plural]: tasks })), [{ namespace: 'a', name: 't1' }]);
});
