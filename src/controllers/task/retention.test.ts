import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LABEL_TASK, LABEL_TASK_UID } from '../../api/labels.ts';
import { Store } from '../../runtime/informer.ts';
import type { KubeObject } from '../../runtime/kube.ts';
import { keepTaskObject, UNKNOWN_TASK_GRACE_MS } from './retention.ts';

const NOW = Date.parse('2026-12-01T12:00:00Z');
const ago = (ms: number): string => new Date(NOW - ms).toISOString();

function task(name: string, uid: string, phase?: string, completedAt?: string): KubeObject {
  return { metadata: { namespace: 'tenant', name, uid }, status: { ...(phase ? { phase } : {}), ...(completedAt ? { completedAt } : {}) } } as KubeObject;
}

function tasks(...ts: KubeObject[]): Store {
  const s = new Store();
  for (const t of ts) s.items.set(`tenant/${t.metadata!.name}`, t);
  s.synced = true;
  return s;
}

function vmDisk(taskName: string, uid: string, created: string): KubeObject {
  return { metadata: { namespace: 'tenant', name: 'vm-disk-0', creationTimestamp: created, labels: { [LABEL_TASK]: taskName, [LABEL_TASK_UID]: uid } } } as KubeObject;
}

test('the outputs of a running task are held, and those of a finished task are not', () => {
  const old = vmDisk('t1', 'u1', ago(3 * UNKNOWN_TASK_GRACE_MS));
  assert.equal(keepTaskObject(old, tasks(task('t1', 'u1', 'Running')), NOW), true);
  assert.equal(keepTaskObject(old, tasks(task('t1', 'u1')), NOW), true, 'a task with no phase yet runs');
  assert.equal(keepTaskObject(old, tasks(task('t1', 'u1', 'Succeeded', ago(1000))), NOW), false);
  assert.equal(keepTaskObject(old, tasks(task('t1', 'u1', 'Failed', ago(1000))), NOW), false);
  assert.equal(keepTaskObject(old, tasks(task('t1', 'u1', 'Succeeded')), NOW), true, 'a final phase without completedAt is not yet the end');
});

test('the outputs of a deleted task are dropped once past the grace, and held within it (its task may be newer than the task cache)', () => {
  const none = tasks();
  assert.equal(keepTaskObject(vmDisk('t1', 'u1', ago(UNKNOWN_TASK_GRACE_MS + 1)), none, NOW), false);
  assert.equal(keepTaskObject(vmDisk('t1', 'u1', ago(60_000)), none, NOW), true);
  // A new task took the deleted one's name: the old outputs are not its.
  assert.equal(keepTaskObject(vmDisk('t1', 'u-old', ago(UNKNOWN_TASK_GRACE_MS + 1)), tasks(task('t1', 'u-new', 'Running')), NOW), false);
});

test('a marked volume is matched to its task through the claim it is bound to', () => {
  const pv = (ns: string): KubeObject => ({ metadata: { name: 'pv-1', creationTimestamp: ago(2 * UNKNOWN_TASK_GRACE_MS), labels: { [LABEL_TASK]: 't1', [LABEL_TASK_UID]: 'u1' } }, spec: { claimRef: { namespace: ns, name: 'vm-disk-0' } } }) as KubeObject;
  assert.equal(keepTaskObject(pv('tenant'), tasks(task('t1', 'u1', 'Running')), NOW), true);
  assert.equal(keepTaskObject(pv('tenant'), tasks(task('t1', 'u1', 'Succeeded', ago(1))), NOW), false);
  assert.equal(keepTaskObject(pv('elsewhere'), tasks(task('t1', 'u1', 'Running')), NOW), false, 'a task of that name in another namespace is not its task');
});

test('an output is held whenever its task cannot be known: no synced task cache, labels or namespace missing, no creation time', () => {
  const old = vmDisk('t1', 'u1', ago(3 * UNKNOWN_TASK_GRACE_MS));
  assert.equal(keepTaskObject(old, undefined, NOW), true);
  assert.equal(keepTaskObject({ metadata: { namespace: 'tenant', name: 'x', labels: { [LABEL_TASK]: 't1' } } } as KubeObject, tasks(), NOW), true);
  assert.equal(keepTaskObject({ metadata: { name: 'pv-9', labels: { [LABEL_TASK]: 't1', [LABEL_TASK_UID]: 'u1' } } } as KubeObject, tasks(), NOW), true);
  assert.equal(keepTaskObject({ metadata: { namespace: 'tenant', name: 'x', labels: { [LABEL_TASK]: 't1', [LABEL_TASK_UID]: 'u1' } } } as KubeObject, tasks(), NOW), true);
});
