import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cutoverLock, parseRFC3339 } from './warm.ts';

test('RFC 3339 times parse to their instant; dates alone, loose forms and impossible dates do not', () => {
  assert.equal(parseRFC3339('2026-12-01T02:00:00Z'), Date.UTC(2026, 11, 1, 2));
  assert.equal(parseRFC3339('2026-12-01t03:00:00.250+01:00'), Date.UTC(2026, 11, 1, 2, 0, 0, 250));
  assert.equal(parseRFC3339('2016-12-31T23:59:60Z'), Date.UTC(2017, 0, 1));
  assert.equal(parseRFC3339('2028-02-29T00:00:00Z'), Date.UTC(2028, 1, 29));
  for (const bad of ['2026-12-01', 'Dec 1 2026', '2026-12-01T02:00:00', '2027-02-29T00:00:00Z', '2026-13-01T00:00:00Z', '2026-12-01T02:00:00+24:00', '', 5, null]) {
    assert.equal(parseRFC3339(bad), undefined, String(bad));
  }
});

test('the cutover is locked once a VM is CuttingOver or later or its source was powered off, and when the task ended', () => {
  assert.equal(cutoverLock(undefined), undefined);
  assert.equal(cutoverLock({ vms: [{ id: 'vm-1', name: 'a', phase: 'Precopying' as never }, { id: 'vm-2', name: 'b', phase: 'Failed' }] }), undefined);
  assert.deepEqual(cutoverLock({ vms: [{ id: 'vm-1', name: 'a', phase: 'Creating' }] }), { kind: 'started', vm: 'a', phase: 'Creating' });
  assert.deepEqual(cutoverLock({ vms: [{ id: 'vm-1', name: 'a', phase: 'Transferring', timestamps: { sourcePoweredOff: '2026-12-01T02:00:00Z' } }] }), { kind: 'started', vm: 'a', phase: 'Transferring', sourcePoweredOff: '2026-12-01T02:00:00Z' });
  assert.deepEqual(cutoverLock({ phase: 'Succeeded', completedAt: '2026-12-01T03:00:00Z' }), { kind: 'ended' });
});
