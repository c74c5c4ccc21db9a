import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { VMImportSource } from '../../api/types.ts';
import { assessmentVerdict, hasTaskMarkers, hostDescription } from './preflight.ts';

test('an output is ours only when it carries this task\'s UID label, directly or as the aggregated API reflects it', () => {
  assert.equal(hasTaskMarkers({ metadata: { labels: { 'forklift.cozystack.io/task-uid': 'u1' } } }, 'u1'), true);
  assert.equal(hasTaskMarkers({ metadata: { labels: { 'apps.cozystack.io-forklift.cozystack.io/task-uid': 'u1' } } }, 'u1'), true);
  assert.equal(hasTaskMarkers({ metadata: { labels: { 'forklift.cozystack.io/task-uid': 'u2' } } }, 'u1'), false);
  assert.equal(hasTaskMarkers({ metadata: {} }, 'u1'), false);
});

test('the host description names the override when spec.hosts has one, else what vCenter advertises', () => {
  const src = { metadata: { name: 'vc' }, spec: { hosts: [{ id: 'host-2', address: '192.0.2.31', credentials: { username: 'root', password: 'x' } }] } } as unknown as VMImportSource;
  assert.equal(hostDescription(src, 'host-2', []), 'ESXi host host-2 at 192.0.2.31 (spec.hosts override)');
  assert.equal(hostDescription(src, 'host-1', [{ id: 'host-1', name: '10.96.0.50' }]), 'ESXi host host-1 at 10.96.0.50, as vCenter advertises it');
  assert.equal(hostDescription(src, undefined, []), undefined);
});

test('preflight fails a Blocked VM with every Critical concern and keeps the Warnings of a VM that goes on', () => {
  const base = { id: 'vm-7', name: 'db01', powerState: 'poweredOn', toolsStatus: 'toolsOk', toolsRunningStatus: 'guestToolsRunning', guestId: 'rhel9_64Guest', firmware: 'bios', changeTrackingEnabled: false, concerns: [] };
  const blocked = assessmentVerdict({ ...base, disks: [{ capacity: 1, shared: true }, { capacity: 1, rdm: true }] }, undefined);
  assert.match(blocked.blocked ?? '', /^VM db01 cannot be imported: Raw Device Mapped disk detected \(Critical, Forklift\): .* Shared disk detected \(Critical, migration-controller\): .* Fix: detach the shared disk/);
  const warned = assessmentVerdict({ ...base, firmware: 'efi', disks: [{ capacity: 1 }] }, undefined);
  assert.equal(warned.blocked, undefined);
  assert.deepEqual(warned.warnings.map((w) => w.slice(0, 40)), ['UEFI firmware (Warning, migration-contro']);
  assert.deepEqual(assessmentVerdict({ ...base, disks: [{ capacity: 1 }] }, undefined), { warnings: [] });
});
