import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { VMImportSource } from '../../api/types.ts';
import { hasTaskMarkers, hostDescription } from './preflight.ts';

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
