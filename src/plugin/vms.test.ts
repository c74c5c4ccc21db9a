import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SourceInventoryStatus, SourceInventoryVM } from '../api/types.ts';
import { filterVMs, inventoryNotes, resolveVM, vmTable } from './vms.ts';

const GiB = 2 ** 30;
const vms: SourceInventoryVM[] = [
  { id: 'vm-1', name: 'web-01', path: '/dc/vm/web/web-01', host: 'host-1', power: 'poweredOn', os: 'linux', firmware: 'bios', tools: 'running', cbt: false, disks: [{ capacity: 16 * GiB }], nics: [{ network: 'network-1' }], verdict: 'Ready', concerns: [] },
  { id: 'vm-2', name: 'db-01', path: '/dc/vm/db/db-01', host: 'host-2', power: 'poweredOff', os: 'windows', firmware: 'efi', secureBoot: true, disks: [{ capacity: 24 * GiB }, { capacity: 8 * GiB }], verdict: 'ReadyWithWarnings', concerns: [{ category: 'Warning', label: 'UEFI firmware', assessment: '' }] },
  { id: 'vm-3', name: 'app', path: '/dc/vm/web/app', verdict: 'Blocked', concerns: [{ category: 'Information', label: 'note', assessment: '' }, { category: 'Critical', label: 'Raw Device Mapped disk detected', assessment: '' }] },
  { id: 'vm-4', name: 'app', path: '/dc/vm/webby/app', verdict: 'Ready' },
];
const inv: SourceInventoryStatus = { total: 4, listed: 4, truncated: false, vms };
const ids = (x: SourceInventoryVM[]): string[] => x.map((v) => v.id);

test('vms filters by folder (the folder or below it, not a folder sharing its prefix), by name case-insensitively, and by verdict', () => {
  assert.deepEqual(ids(filterVMs(inv, { folder: '/dc/vm/web' })), ['vm-1', 'vm-3']);
  assert.deepEqual(ids(filterVMs(inv, { folder: '/dc/vm/web/' })), ['vm-1', 'vm-3']);
  assert.deepEqual(ids(filterVMs(inv, { folder: '/dc' })), ['vm-1', 'vm-2', 'vm-3', 'vm-4']);
  assert.deepEqual(ids(filterVMs(inv, { name: 'WEB' })), ['vm-1']);
  assert.deepEqual(ids(filterVMs(inv, { blocked: true })), ['vm-3']);
  assert.deepEqual(ids(filterVMs(inv, { ready: true })), ['vm-1', 'vm-2', 'vm-4']);
  assert.deepEqual(filterVMs(undefined, {}), []);
});

test('the vms table has one line per VM with name, id, power, OS, firmware, disks, their size, host and verdict; wide adds folder, Tools, CBT, NICs and the first concern that is not a note', () => {
  const [head, web, db] = vmTable(vms.slice(0, 2), false);
  assert.deepEqual(head!.split(/\s{2,}/), ['NAME', 'ID', 'POWER', 'OS', 'FIRMWARE', 'DISKS', 'SIZE', 'HOST', 'VERDICT']);
  assert.deepEqual(web!.split(/\s{2,}/), ['web-01', 'vm-1', 'poweredOn', 'linux', 'bios', '1', '16.0 GiB', 'host-1', 'Ready']);
  assert.deepEqual(db!.split(/\s{2,}/), ['db-01', 'vm-2', 'poweredOff', 'windows', 'efi+secureboot', '2', '32.0 GiB', 'host-2', 'ReadyWithWarnings']);
  const wide = vmTable([vms[2]!], true);
  assert.match(wide[0]!, /FOLDER +TOOLS +CBT +NICS +CONCERN$/);
  assert.match(wide[1]!, /\/dc\/vm\/web +no +0 +Critical: Raw Device Mapped disk detected$/);
});

test('a VM resolves by id or by a name one VM carries; a shared name is refused listing each candidate by id and path; an unknown name suggests close ones', () => {
  assert.deepEqual(resolveVM(inv, 'web-01', 'vc'), { ok: true, id: 'vm-1', name: 'web-01' });
  assert.deepEqual(resolveVM(inv, 'vm-2', 'vc'), { ok: true, id: 'vm-2', name: 'db-01' });
  const amb = resolveVM(inv, 'app', 'vc');
  assert.equal(amb.ok, false);
  assert.equal(!amb.ok && amb.message, 'VM name "app" is ambiguous in source vc: 2 VMs carry it; give one by id:\n  vm-3  /dc/vm/web/app\n  vm-4  /dc/vm/webby/app');
  const none = resolveVM(inv, 'web', 'vc');
  assert.equal(!none.ok && none.message, 'no VM named "web" in source vc\'s inventory; similar: web-01 (vm-1)');
});

test('an id beyond a truncated list is passed on for the webhook to judge, and an unknown name says the list is cut short', () => {
  const cut: SourceInventoryStatus = { ...inv, total: 900, truncated: true };
  assert.deepEqual(resolveVM(cut, 'vm-777', 'vc'), { ok: true, id: 'vm-777', name: '' });
  const r = resolveVM(cut, 'zzz', 'vc');
  assert.match(!r.ok ? r.message : '', /it lists 4 of 900 VMs: give a VM beyond them by id/);
  assert.deepEqual(inventoryNotes({ metadata: { name: 'vc' }, status: { inventory: cut } }), ['source vc lists the first 4 of its 900 VMs (by folder path); narrow with --folder, or give VMs by id']);
  assert.deepEqual(inventoryNotes({ metadata: { name: 'vc' }, status: { inventory: inv } }), []);
  assert.match(inventoryNotes({ metadata: { name: 'vc' }, status: { conditions: [{ type: 'Ready', status: 'False', reason: 'Connecting', message: 'waiting', lastTransitionTime: '' }] } })[0]!, /no inventory yet \(Ready=False, Connecting: waiting\)/);
});
