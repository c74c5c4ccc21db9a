// The primary-object filter: a reconciler's own status write must not wake it again, while every change a
// user or another controller makes to what it acts on still does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statusOnlyChange } from '../../../src/runtime/manager.ts';
import type { KubeObject } from '../../../src/runtime/kube.ts';

const base = (): KubeObject => ({
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportTask',
  metadata: { name: 't', namespace: 'n', uid: 'u1', generation: 1, resourceVersion: '10', finalizers: ['f'], labels: { a: 'b' }, annotations: { x: 'y' } },
  spec: { vms: [] },
  status: { phase: 'Transferring' },
});

test('an update that changes only status and resourceVersion is a status-only change', () => {
  const b = base();
  b.metadata!.resourceVersion = '11';
  b.status = { phase: 'Creating' };
  assert.equal(statusOnlyChange(base(), b), true);
});

test('a spec edit, a deletion, a finalizer, label, annotation or owner change is never status-only', () => {
  const edits: Array<[string, (o: KubeObject) => void]> = [
    ['generation', (o) => (o.metadata!.generation = 2)],
    ['deletionTimestamp', (o) => (o.metadata!.deletionTimestamp = '2026-11-29T10:00:00Z')],
    ['finalizers', (o) => (o.metadata!.finalizers = [])],
    ['labels', (o) => (o.metadata!.labels = { a: 'c' })],
    ['annotations', (o) => (o.metadata!.annotations = {})],
    ['ownerReferences', (o) => (o.metadata!.ownerReferences = [{ apiVersion: 'v1', kind: 'X', name: 'x', uid: 'x' }])],
    ['uid (recreated under the same name)', (o) => (o.metadata!.uid = 'u2')],
  ];
  for (const [what, edit] of edits) {
    const b = base();
    edit(b);
    assert.equal(statusOnlyChange(base(), b), false, what);
  }
});
