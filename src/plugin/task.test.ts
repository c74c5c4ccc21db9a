import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { VMImportTask, VMStatus } from '../api/types.ts';
import { ANNOTATION_RETRY_OF } from '../api/labels.ts';
import { allSucceeded, buildTask, finished, parseCutover, parseNetwork, planRetry, retryName, retryTask } from './task.ts';

const task = (vms: VMStatus[], spec: Partial<VMImportTask['spec']> = {}): VMImportTask => ({
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportTask',
  metadata: { name: 'batch', namespace: 'tenant-a' },
  spec: { sourceRef: { name: 'vc' }, vms: vms.map((v) => ({ id: v.id })), storageClass: 'replicated', networks: [{ source: 'network-1', type: 'multus', name: 'nad' }], ...spec },
  status: { phase: 'Failed', completedAt: '2026-01-01T00:00:00Z', vms },
});
const vm = (id: string, phase: VMStatus['phase'], reason?: string): VMStatus => ({ id, name: `n-${id}`, phase, ...(reason ? { reason } : {}) });

test('a network argument maps a source network to a Multus attachment or the pod network, and anything else is refused with the expected form', () => {
  assert.deepEqual(parseNetwork('network-1=multus:backup'), { source: 'network-1', type: 'multus', name: 'backup' });
  assert.deepEqual(parseNetwork('VM Network=pod'), { source: 'VM Network', type: 'pod' });
  assert.match(parseNetwork('network-1') as string, /expected SRC=multus:NAD or SRC=pod/);
  assert.match(parseNetwork('network-1=bridge:x') as string, /must be pod or multus:NAD/);
  assert.match(parseNetwork('=pod') as string, /expected/);
});

test('a cutover is "now" in whole seconds or an RFC 3339 time; a malformed one is refused', () => {
  assert.deepEqual(parseCutover('now', Date.parse('2026-12-03T10:11:12.345Z')), { at: '2026-12-03T10:11:12Z' });
  assert.deepEqual(parseCutover('2026-12-03T22:00:00Z', 0), { at: '2026-12-03T22:00:00Z' });
  assert.deepEqual(parseCutover('2026-12-03T22:00:00+01:00', 0), { at: '2026-12-03T22:00:00+01:00' });
  for (const bad of ['tomorrow', '2026-12-03', '2026-13-45T99:00:00Z', 'x'.repeat(100)]) assert.equal(typeof parseCutover(bad, 0), 'string', bad);
});

test('a created task carries only the options given', () => {
  assert.deepEqual(buildTask({ name: 't', namespace: 'ns', source: 'vc', vms: [{ id: 'vm-1' }] }).spec, { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1' }] });
  assert.deepEqual(buildTask({ name: 't', namespace: 'ns', source: 'vc', vms: [{ id: 'vm-1' }], warm: true, cutover: '2030-01-01T00:00:00Z', conversion: true, storageClass: 'r' }).spec, {
    sourceRef: { name: 'vc' },
    vms: [{ id: 'vm-1' }],
    storageClass: 'r',
    mode: 'warm',
    cutover: '2030-01-01T00:00:00Z',
    guestConversion: true,
  });
});

test('a task has ended on Finished=True or a completion time, and succeeded only when every VM of its spec did', () => {
  const t = task([vm('vm-1', 'Succeeded'), vm('vm-2', 'Succeeded')]);
  assert.equal(finished(t), true);
  assert.equal(allSucceeded(t), true);
  assert.equal(allSucceeded({ ...t, status: { vms: [vm('vm-1', 'Succeeded')] } }), false, 'a VM without status has not succeeded');
  assert.equal(finished({ status: { conditions: [{ type: 'Finished', status: 'False', reason: 'InProgress', message: '', lastTransitionTime: '' }] } }), false);
  assert.equal(finished({ status: { conditions: [{ type: 'Finished', status: 'True', reason: 'Succeeded', message: '', lastTransitionTime: '' }] } }), true);
});

test('a retry takes the failed VMs only, leaving out those that succeeded, those whose outputs exist and those whose failure a retry cannot fix, each with why', () => {
  const t = task([vm('vm-1', 'Succeeded'), vm('vm-2', 'Failed', 'TransferFailed'), vm('vm-3', 'Failed', 'TransferFailed'), vm('vm-4', 'Failed', 'VMBlocked'), vm('vm-5', 'Failed', 'OutputExists'), vm('vm-6', 'Failed', 'HostUnreachable')]);
  const d = planRetry(t, { outputs: new Map([['vm-3', ['vminstance/n-vm-3']]]), inventory: { total: 1, listed: 1, truncated: false, vms: [{ id: 'vm-4', name: 'n-vm-4', path: '/', verdict: 'Blocked' }] } });
  assert.deepEqual(d.filter((x) => x.retry).map((x) => x.vm.id), ['vm-2', 'vm-6']);
  const why = Object.fromEntries(d.filter((x) => !x.retry).map((x) => [x.vm.id, x.why]));
  assert.match(why['vm-1']!, /succeeded/);
  assert.match(why['vm-3']!, /outputs exist: vminstance\/n-vm-3; a retry would fail with OutputExists/);
  assert.match(why['vm-4']!, /failed with VMBlocked, which a retry cannot fix: .*kubectl vmimport vms SOURCE --blocked/);
  assert.match(why['vm-5']!, /failed with OutputExists, which a retry cannot fix/);
});

test('a VM Blocked or not found at the time is retried once the source no longer says so', () => {
  const t = task([vm('vm-4', 'Failed', 'VMBlocked'), vm('vm-7', 'Failed', 'VMNotFound'), vm('vm-8', 'Failed', 'VMNotFound')]);
  const inventory = { total: 2, listed: 2, truncated: false, vms: [{ id: 'vm-4', name: 'a', path: '/', verdict: 'Ready' as const }, { id: 'vm-7', name: 'b', path: '/', verdict: 'Ready' as const }] };
  assert.deepEqual(planRetry(t, { outputs: new Map(), inventory }).map((x) => [x.vm.id, x.retry]), [['vm-4', true], ['vm-7', true], ['vm-8', false]]);
});

test('a retry name counts up from the task name, continues a retry\'s count, skips names taken, and stays within 63 characters', () => {
  assert.equal(retryName('import-web-tier', new Set()), 'import-web-tier-retry-1');
  assert.equal(retryName('import-web-tier-retry-1', new Set()), 'import-web-tier-retry-2');
  assert.equal(retryName('x', new Set(['x-retry-1', 'x-retry-2'])), 'x-retry-3');
  assert.equal(retryName('a'.repeat(63), new Set()), `${'a'.repeat(55)}-retry-1`);
  fc.assert(
    fc.property(fc.stringMatching(/^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/), fc.array(fc.integer({ min: 1, max: 5 }), { maxLength: 5 }), (old, takenN) => {
      const taken = new Set(takenN.map((n) => retryName(old, new Set()).replace(/-retry-\d+$/, `-retry-${n}`)));
      const name = retryName(old, taken);
      return name.length <= 63 && /-retry-\d+$/.test(name) && !taken.has(name) && name !== old && /^[a-z0-9]/.test(name) && !/[-.]-retry/.test(name);
    }),
  );
});

test('a retry task keeps the source, storage class, networks, mode and conversion, links back, and drops a cutover that has passed', () => {
  const old = task([vm('vm-2', 'Failed', 'TransferFailed')], { mode: 'warm', cutover: '2026-01-01T00:00:00Z', guestConversion: true });
  const { task: t, notes } = retryTask(old, 'batch-retry-1', [{ id: 'vm-2' }], Date.parse('2026-06-01T00:00:00Z'));
  assert.deepEqual(t.metadata, { name: 'batch-retry-1', namespace: 'tenant-a', annotations: { [ANNOTATION_RETRY_OF]: 'batch' } });
  assert.deepEqual(t.spec, { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-2' }], storageClass: 'replicated', networks: [{ source: 'network-1', type: 'multus', name: 'nad' }], mode: 'warm', guestConversion: true });
  assert.match(notes[0]!, /the old cutover \(2026-01-01T00:00:00Z\) has passed and is not carried over: set one with kubectl vmimport cutover batch-retry-1/);
  const future = retryTask(old, 'r', [{ id: 'vm-2' }], Date.parse('2025-01-01T00:00:00Z'));
  assert.equal(future.task.spec.cutover, '2026-01-01T00:00:00Z');
  assert.deepEqual(future.notes, []);
});
