import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { KubeObject } from '../runtime/kube.ts';
import { ARCHIVE_WAIT_MS, archivePatch, archiveWouldDeleteDisks, planDeletionStep, planRetirement, type VMOutcome } from './retire.ts';

const plan = (o: { archived?: boolean; conditions?: string[]; deleting?: boolean } = {}): KubeObject =>
  ({
    apiVersion: 'forklift.konveyor.io/v1beta1',
    kind: 'Plan',
    metadata: { name: 'p', namespace: 'ns', ...(o.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
    spec: { ...(o.archived !== undefined ? { archived: o.archived } : {}) },
    status: { conditions: (o.conditions ?? []).map((type) => ({ type, status: 'True', category: 'Advisory' })) },
  }) as KubeObject;

test('an ended VM\'s Plan is archived first, so Forklift removes the VDDK Secret from the tenant\'s namespace', () => {
  assert.deepEqual(planRetirement(plan({ conditions: ['Succeeded'] }), 'handed-off'), { type: 'archive' });
  assert.deepEqual(planRetirement(plan({ conditions: ['Failed'] }), 'failed'), { type: 'archive' });
  assert.deepEqual(planRetirement(plan({ conditions: ['Ready'] }), 'failed'), { type: 'archive' }, 'a Plan that never ran (preflight failed after it was created)');
  assert.deepEqual(planRetirement(plan({ archived: false, conditions: ['Canceled'] }), 'failed'), { type: 'archive' });
});

test('a Plan still executing is not archived: at v2.11.5 its new generation would cancel the run', () => {
  assert.deepEqual(planRetirement(plan({ conditions: ['Executing'] }), 'failed'), { type: 'wait-run' });
  assert.deepEqual(planRetirement(plan({ conditions: ['Executing', 'Failed'] }), 'failed'), { type: 'archive' });
});

test('an archived Plan waits for Forklift\'s Archived condition, the evidence its cleanup ran', () => {
  assert.deepEqual(planRetirement(plan({ archived: true, conditions: ['Succeeded'] }), 'handed-off'), { type: 'wait-archived' });
});

test('once Archived, a handed-off VM\'s Plan is deleted and a failed VM\'s Plan is kept for the task\'s deletion to find its disks', () => {
  assert.deepEqual(planRetirement(plan({ archived: true, conditions: ['Archived', 'Succeeded'] }), 'handed-off'), { type: 'delete' });
  assert.deepEqual(planRetirement(plan({ archived: true, conditions: ['Archived', 'Failed'] }), 'failed'), { type: 'keep' });
});

test('a Plan gone or being deleted needs nothing', () => {
  assert.deepEqual(planRetirement(undefined, 'handed-off'), { type: 'none' });
  assert.deepEqual(planRetirement(plan({ deleting: true }), 'failed'), { type: 'none' });
});

test('property: a Plan is never deleted before Forklift said Archived, and never archived while it executes', () => {
  const types = ['Executing', 'Succeeded', 'Failed', 'Canceled', 'Archived', 'Ready', 'SourceProviderNotReady'];
  fc.assert(
    fc.property(fc.subarray(types), fc.option(fc.boolean(), { nil: undefined }), fc.constantFrom<VMOutcome>('handed-off', 'failed'), (conds, archived, outcome) => {
      const r = planRetirement(plan({ archived, conditions: conds }), outcome);
      if (r.type === 'delete') assert.ok(archived === true && conds.includes('Archived') && outcome === 'handed-off');
      if (r.type === 'archive') assert.ok(archived !== true && (!conds.includes('Executing') || conds.some((c) => ['Succeeded', 'Failed', 'Canceled'].includes(c))));
    }),
  );
});

test('a task\'s deletion archives each Plan and deletes it once Forklift said Archived, or once the wait is overdue', () => {
  const now = new Date('2026-01-01T00:10:00Z');
  assert.equal(planDeletionStep(plan({ conditions: ['Executing'] }), now), 'archive');
  assert.equal(planDeletionStep(plan({ archived: true }), now), 'wait-archived');
  assert.equal(planDeletionStep(plan({ archived: true, conditions: ['Archived'] }), now), 'delete');
  const stamped = (at: Date): KubeObject => {
    const p = plan({ archived: true });
    p.metadata!.annotations = archivePatch(at).metadata.annotations;
    return p;
  };
  assert.equal(planDeletionStep(stamped(new Date(now.getTime() - ARCHIVE_WAIT_MS + 1000)), now), 'wait-archived');
  assert.equal(planDeletionStep(stamped(new Date(now.getTime() - ARCHIVE_WAIT_MS - 1000)), now), 'delete', 'a Plan controller that never answers does not hold the deletion for ever');
  assert.deepEqual(planRetirement(stamped(new Date(now.getTime() - ARCHIVE_WAIT_MS - 1000)), 'handed-off', now), { type: 'delete' });
});

test('a Plan the mutator would store with deleteVmOnFailMigration true (or without it, the CRD default) may not be archived for a failed VM; one stored false may', () => {
  const plan = (spec: Record<string, unknown>): KubeObject => ({ metadata: { name: 'p' }, spec }) as KubeObject;
  assert.equal(archiveWouldDeleteDisks(plan({ deleteVmOnFailMigration: true, archived: true })), true);
  assert.equal(archiveWouldDeleteDisks(plan({ archived: true })), true);
  assert.equal(archiveWouldDeleteDisks(plan({ deleteVmOnFailMigration: false, archived: true })), false);
});

