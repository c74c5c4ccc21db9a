import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { VMImportTask } from '../../api/types.ts';
import type { KubeObject } from '../../runtime/kube.ts';
import { holdMayEnd, tasksHoldingSource } from './inuse.ts';

const task = (name: string, o: { source?: string; phase?: string; completedAt?: string; reason?: string; ready?: 'True' | 'False'; deleting?: boolean } = {}): VMImportTask => ({
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportTask',
  metadata: { name, namespace: 'n', uid: `uid-${name}`, ...(o.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
  spec: { sourceRef: { name: o.source ?? 'vc' }, vms: [{ id: 'vm-1' }] },
  status: {
    ...(o.phase ? { phase: o.phase as 'Pending' } : {}),
    ...(o.completedAt ? { completedAt: o.completedAt } : {}),
    ...(o.reason ? { conditions: [{ type: 'Ready', status: o.ready ?? 'False', reason: o.reason, message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }] } : {}),
  },
});
const plan = (taskName: string): KubeObject => ({ metadata: { name: `p-${taskName}`, labels: { 'forklift.cozystack.io/task-uid': `uid-${taskName}` } } });

test('a source is held by every unfinished task naming it, and by no finished task or task of another source', () => {
  const tasks = [
    task('running', { phase: 'Transferring', reason: 'Transferring' }),
    task('fresh'),
    task('done', { phase: 'Succeeded', completedAt: '2026-01-01T00:00:00Z', reason: 'Succeeded', ready: 'True' }),
    task('failed', { phase: 'Failed', completedAt: '2026-01-01T00:00:00Z', reason: 'Failed' }),
    task('other', { source: 'other', phase: 'Transferring', reason: 'Transferring' }),
    task('going', { phase: 'Transferring', reason: 'Transferring', deleting: true }),
  ];
  assert.deepEqual(tasksHoldingSource('vc', tasks, []), ['fresh', 'going', 'running']);
});

test('a task still waiting for the source holds it only once it has a Plan', () => {
  const waiting = task('waiting', { phase: 'Pending', reason: 'SourceNotReady' });
  assert.deepEqual(tasksHoldingSource('vc', [waiting], []), []);
  assert.deepEqual(tasksHoldingSource('vc', [waiting], [plan('waiting')]), ['waiting']);
  assert.deepEqual(tasksHoldingSource('vc', [task('gone', { reason: 'SourceNotFound' })], []), []);
});

test('only events that can end a hold wake the source: a task finishing, being deleted or waiting on the source', () => {
  assert.equal(holdMayEnd(task('a', { phase: 'Transferring', reason: 'Transferring' })), false);
  assert.equal(holdMayEnd(task('b', { phase: 'Failed', completedAt: '2026-01-01T00:00:00Z', reason: 'Failed' })), true);
  assert.equal(holdMayEnd(task('c', { deleting: true })), true);
  assert.equal(holdMayEnd(task('d', { reason: 'SourceNotReady' })), true);
});
