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

test('a task asking for guest conversion on a platform without it fails every waiting VM before any Forklift object exists', async () => {
  const { runPreflight } = await import('./preflight.ts');
  const { GUEST_CONVERSION_DISABLED_MESSAGE } = await import('../../preflight/conversion.ts');
  let vmReads = 0;
  const inventory = {
    // Not in the inventory: a VM that got past the conversion check fails VMNotFound here.
    getVM: async (): Promise<never> => {
      vmReads++;
      throw Object.assign(new Error('not found'), { status: 404 });
    },
    listHosts: async () => [],
    listNetworks: async () => [],
  };
  const task = { metadata: { name: 't', namespace: 'n', uid: 'u' }, spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1' }, { id: 'vm-2' }], guestConversion: true } } as never;
  const source = { metadata: { name: 'vc' }, spec: {} } as unknown as VMImportSource;
  const vms = [
    { id: 'vm-1', name: 'vm-1', phase: 'Validating' as const },
    { id: 'vm-2', name: 'vm-2', phase: 'Failed' as const, reason: 'VMNotFound', message: 'gone' },
  ];
  const base = { ctx: {} as never, task, source, providerUID: 'p', storageClass: 'c', inventory, cidr: { resolve: async () => undefined }, vms };
  const off = await runPreflight({ ...base, guestConversionEnabled: false });
  assert.deepEqual(off.vms.map((v) => [v.id, v.phase, v.reason, v.message]), [
    ['vm-1', 'Failed', 'PlanNotValid', GUEST_CONVERSION_DISABLED_MESSAGE],
    ['vm-2', 'Failed', 'VMNotFound', 'gone'],
  ]);
  assert.equal(vmReads, 0, 'decided before asking the inventory');
  // With the opt-in (or the check not wired), the VM goes on to the inventory.
  const on = await runPreflight({ ...base, guestConversionEnabled: true });
  assert.equal(on.vms[0]!.reason, 'VMNotFound');
  const unwired = await runPreflight(base);
  assert.equal(unwired.vms[0]!.reason, 'VMNotFound');
  assert.equal(vmReads, 2);
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
