// The demo's terminal rendering (scripts/demo/render.ts): what a newcomer reads while an import runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { derivePercent, formatBytes, formatDuration, formatQuantity, formatRate, phaseKey, progressBar, redraw, renderTable, renderTask, renderVMLine, renderWarm, shouldPrintPlain } from '../../scripts/demo/render.ts';
import type { VMImportTask, VMStatus } from '../../src/api/types.ts';

const GiB = 2 ** 30;

test('sizes are binary units with one decimal, bytes stay whole, nonsense is a dash', () => {
  assert.equal(formatBytes(0), '0 B');
  assert.equal(formatBytes(1023), '1023 B');
  assert.equal(formatBytes(1536), '1.5 KiB');
  assert.equal(formatBytes(16 * GiB), '16.0 GiB');
  assert.equal(formatBytes(4 * 1024 * GiB), '4.0 TiB');
  assert.equal(formatBytes(undefined), '—');
  assert.equal(formatBytes(-1), '—');
  assert.equal(formatBytes(Number.NaN), '—');
});

test('a rate is a size per second, and no rate is measured before bytes move', () => {
  assert.equal(formatRate(1.5 * GiB), '1.5 GiB/s');
  assert.equal(formatRate(0), '—');
  assert.equal(formatRate(undefined), '—');
});

test('durations read as seconds, minutes or hours and round up so an ETA never says 0s while work remains', () => {
  assert.equal(formatDuration(0), '0s');
  assert.equal(formatDuration(0.2), '1s');
  assert.equal(formatDuration(59), '59s');
  assert.equal(formatDuration(65), '1m05s');
  assert.equal(formatDuration(3600 + 180), '1h03m');
  assert.equal(formatDuration(undefined), '—');
  assert.equal(formatDuration(-3), '—');
});

test('a progress bar has a fixed width and clamps out-of-range percentages', () => {
  assert.equal(progressBar(0, 10), '[----------]');
  assert.equal(progressBar(50, 10), '[#####-----]');
  assert.equal(progressBar(100, 10), '[##########]');
  assert.equal(progressBar(140, 10), '[##########]');
  assert.equal(progressBar(-5, 10), '[----------]');
  assert.equal(progressBar(undefined, 4), '[----]');
  for (const p of [0, 12.5, 33, 99.9, 100]) assert.equal(progressBar(p, 24).length, 26);
});

test('the percentage is the reported one, else derived from bytes, and 100 once the VM succeeded', () => {
  assert.equal(derivePercent({ phase: 'Transferring', progress: 42 }), 42);
  assert.equal(derivePercent({ phase: 'Transferring', bytesDone: GiB, bytesTotal: 4 * GiB }), 25);
  assert.equal(derivePercent({ phase: 'Succeeded' }), 100);
  assert.equal(derivePercent({ phase: 'Pending' }), 0);
});

const vm = (o: Partial<VMStatus>): VMStatus => ({ id: 'vm-101', name: 'web-01', phase: 'Transferring', ...o });

test('a transferring VM shows phase, bar, bytes, rate and ETA', () => {
  const l = renderVMLine(vm({ progress: 25, bytesDone: 4 * GiB, bytesTotal: 16 * GiB, bytesPerSecond: 1.5 * GiB, etaSeconds: 8 }), 6, 8);
  assert.equal(l, '  web-01 Transferring [##------]  25%    4.0 GiB / 16.0 GiB    1.5 GiB/s  ETA 8s');
});

test('a succeeded VM shows its downtime and a failed one its reason and message instead of an ETA', () => {
  assert.match(renderVMLine(vm({ phase: 'Succeeded', bytesDone: 16 * GiB, bytesTotal: 16 * GiB, downtimeSeconds: 12 })), /100%.*16\.0 GiB \/ 16\.0 GiB.*done, downtime 12s$/);
  const failed = renderVMLine(vm({ phase: 'Failed', progress: 0, reason: 'HostUnreachable', message: 'ESXi host host-2 at 192.0.2.20 is unreachable' }));
  assert.match(failed, /Failed.*HostUnreachable: ESXi host host-2 at 192\.0\.2\.20 is unreachable$/);
  assert.doesNotMatch(failed, /ETA/);
});

test('a precopying VM shows its precopies, the last one\'s duration and when the next starts; a cutting-over one says the source is off', () => {
  const now = Date.parse('2026-12-01T00:00:00Z');
  const pre = vm({ phase: 'Precopying', warm: { precopies: 3, lastPrecopySeconds: 2, nextPrecopyAt: '2026-12-01T00:00:04Z' } });
  assert.equal(renderWarm(pre, now), 'precopies 3, last 2s, next in 4s');
  assert.match(renderVMLine(pre, 6, 8, now), /Precopying .*precopies 3, last 2s, next in 4s$/);
  const set = vm({ phase: 'Precopying', warm: { precopies: 1, cutoverAt: '2026-12-01T02:00:00Z' } });
  assert.equal(renderWarm(set, now), 'precopies 1, cutover at 2026-12-01T02:00:00Z');
  assert.equal(renderWarm(vm({ phase: 'CuttingOver', warm: { precopies: 5 } }), now), 'cutting over after 5 precopies (source powered off)');
  assert.doesNotMatch(renderVMLine(pre, 6, 8, now), /ETA/);
});

test('in plain output a new precopy is a change the reader sees at once', () => {
  const t = (n: number): Pick<VMImportTask, 'status'> => ({ status: { phase: 'Transferring', vms: [vm({ phase: 'Precopying', warm: { precopies: n } })] } as VMImportTask['status'] });
  assert.notEqual(phaseKey(t(1)), phaseKey(t(2)));
});

test('the task block lists every VM of the spec, pending ones before the controller reports them', () => {
  const task: Pick<VMImportTask, 'metadata' | 'spec' | 'status'> = {
    metadata: { name: 'import-web-tier' },
    spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-101', name: 'web-01' }, { id: 'vm-102', name: 'db-01' }] },
    status: { phase: 'Transferring', progress: 40, conditions: [{ type: 'Ready', status: 'False', reason: 'Transferring', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }], vms: [vm({ progress: 40, bytesDone: 1, bytesTotal: 2 })] },
  };
  const lines = renderTask(task, 5);
  assert.equal(lines.length, 3);
  assert.equal(lines[0], 'import-web-tier: phase Transferring, 40% overall, Ready=False (Transferring), 5s elapsed');
  assert.match(lines[1]!, /^ {2}web-01 Transferring/);
  assert.match(lines[2]!, /^ {2}db-01 {2}Pending/);
});

test('redrawing moves the cursor up over the previous block and clears each line', () => {
  assert.equal(redraw(0, ['a', 'b']), '\r\x1b[2Ka\n\r\x1b[2Kb\n');
  assert.equal(redraw(2, ['c']), '\x1b[2A\r\x1b[2Kc\n');
});

test('plain output prints at once on a phase change, otherwise only after the period and when the text changed', () => {
  const prev = { key: 'Transferring|vm-101=Transferring', text: 'x', at: 1000 };
  assert.equal(shouldPrintPlain(undefined, 'k', 't', 0, 3000), true);
  assert.equal(shouldPrintPlain(prev, 'Transferring|vm-101=Creating', 'x', 1001, 3000), true);
  assert.equal(shouldPrintPlain(prev, prev.key, 'y', 2000, 3000), false);
  assert.equal(shouldPrintPlain(prev, prev.key, 'y', 4000, 3000), true);
  assert.equal(shouldPrintPlain(prev, prev.key, 'x', 9000, 3000), false);
  assert.equal(phaseKey({ status: { phase: 'Creating', vms: [vm({ phase: 'Creating' })] } }), 'Creating|vm-101=Creating');
  assert.equal(phaseKey({}), 'Pending|');
});

test('tables pad columns to the widest cell and storage quantities in bytes read as sizes', () => {
  assert.deepEqual(renderTable(['NAME', 'X'], [['web-01-disk-0', 'a'], ['b', 'long']]), ['NAME            X', 'web-01-disk-0   a', 'b               long']);
  assert.equal(formatQuantity('17179869184'), '16.0 GiB');
  assert.equal(formatQuantity('16Gi'), '16Gi');
  assert.equal(formatQuantity(undefined), '—');
});
