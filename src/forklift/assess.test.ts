import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FORKLIFT_RDM, OwnConcern, assessVM, ownConcerns, concernSentence, concernsFor, inventoryEntry, osFamily, summarise, toolsState, verdictOf, vmConcerns, vmFacts, type InventoryVMRecord } from './assess.ts';
import { statusInventory } from './inventory.ts';

const GiB = 2 ** 30;
/** A VM record as Forklift's inventory serves it (web/vsphere/vm.go VM), clean unless told otherwise. */
const record = (o: Partial<InventoryVMRecord> = {}): InventoryVMRecord => ({
  id: 'vm-1',
  name: 'web01',
  path: '/dc1/vm/web01',
  powerState: 'poweredOn',
  firmware: 'bios',
  secureBoot: false,
  guestId: 'rhel9_64Guest',
  toolsStatus: 'toolsOk',
  toolsRunningStatus: 'guestToolsRunning',
  changeTrackingEnabled: true,
  disks: [{ key: 2000, capacity: 16 * GiB, bus: 'scsi', mode: 'persistent', rdm: false, shared: false }],
  nics: [{ mac: '00:50:56:00:00:01', network: { kind: 'Network', id: 'network-1' }, order: 0 }],
  concerns: [],
  ...o,
});
const cbt = { id: 'vmware.changed_block_tracking.disabled', category: 'Warning', label: 'Changed Block Tracking (CBT) not enabled', assessment: 'For VM warm migration, Changed Block Tracking (CBT) must be enabled in VMware.' };

test('the facts of a VM are read from its inventory record: power, OS family, firmware, Secure Boot, Tools, CBT, disks and NICs', () => {
  assert.deepEqual(vmFacts(record({ firmware: 'efi', secureBoot: true, guestId: 'windows2019srv_64Guest', disks: [{ capacity: 8 * GiB, bus: 'scsi', mode: 'independent_persistent', rdm: true, shared: true }] })), {
    power: 'poweredOn',
    os: 'windows',
    guestId: 'windows2019srv_64Guest',
    firmware: 'efi',
    secureBoot: true,
    tools: 'running',
    cbt: true,
    disks: [{ capacity: 8 * GiB, bus: 'scsi', mode: 'independent_persistent', rdm: true, shared: true }],
    nics: [{ network: 'network-1' }],
  });
  // Secure Boot only means something with UEFI; flags that are false are left out (the status stays compact).
  assert.equal(vmFacts(record({ secureBoot: true })).secureBoot, undefined);
  assert.deepEqual(vmFacts(record()).disks, [{ capacity: 16 * GiB, bus: 'scsi', mode: 'persistent' }]);
});

test('the ESXi host a VM runs on is among its facts (a tenant reads it to name spec.hosts[]); one longer than a host id is left out', () => {
  assert.equal(vmFacts(record({ host: 'host-21' })).host, 'host-21');
  assert.equal(vmFacts(record()).host, undefined);
  assert.equal(vmFacts(record({ host: `host-${'9'.repeat(80)}` })).host, undefined);
});

test('the guest OS family comes from the vSphere guest id', () => {
  assert.deepEqual(['windows9Server64Guest', 'winNetStandardGuest', 'rhel8_64Guest', 'ubuntu64Guest', 'other4xLinux64Guest', 'freebsd13_64Guest', ''].map((g) => osFamily(g)), ['windows', 'windows', 'linux', 'linux', 'linux', 'other', undefined]);
});

test('VMware Tools are read as Forklift reads them: unknown, not installed, not running, running', () => {
  assert.deepEqual(
    [toolsState('', ''), toolsState('<nil>', 'guestToolsRunning'), toolsState('toolsNotInstalled', 'guestToolsNotRunning'), toolsState('toolsOk', 'guestToolsNotRunning'), toolsState('toolsOld', 'guestToolsRunning')],
    ['unknown', 'unknown', 'notInstalled', 'notRunning', 'running'],
  );
});

test('a clean VM is Ready; a Forklift Warning makes it ReadyWithWarnings; a Forklift Critical makes it Blocked', () => {
  assert.equal(assessVM(record()).verdict, 'Ready');
  assert.equal(assessVM(record({ concerns: [cbt] })).verdict, 'ReadyWithWarnings');
  const pt = { id: 'vmware.passthrough_device.detected', category: 'Critical', label: 'Passthrough device detected', assessment: 'x' };
  const a = assessVM(record({ concerns: [cbt, pt] }));
  assert.equal(a.verdict, 'Blocked');
  assert.deepEqual(a.concerns.map((c) => c.id), ['vmware.passthrough_device.detected', 'vmware.changed_block_tracking.disabled']);
  // Information never changes the verdict.
  assert.equal(assessVM(record({ concerns: [{ id: 'vmware.drs.enabled', category: 'Information', label: 'DRS', assessment: 'x' }] })).verdict, 'Ready');
});

test('our own blockers: a shared disk, and a powered-on VM whose Tools do not run; a powered-off VM needs no Tools', () => {
  assert.deepEqual(vmConcerns(record({ disks: [{ capacity: GiB, shared: true }] })).map((c) => [c.id, c.category]), [[OwnConcern.SharedDisk, 'Critical']]);
  assert.deepEqual(vmConcerns(record({ toolsRunningStatus: 'guestToolsNotRunning' })).map((c) => [c.id, c.category]), [[OwnConcern.ToolsNotRunning, 'Critical']]);
  assert.deepEqual(vmConcerns(record({ powerState: 'poweredOff', toolsRunningStatus: 'guestToolsNotRunning' })), []);
});

test('an RDM disk blocks in Forklift\'s words even before Forklift validated the VM, and is never counted twice', () => {
  const early = vmConcerns(record({ disks: [{ capacity: GiB, rdm: true }] }));
  assert.deepEqual(early, [FORKLIFT_RDM]);
  const validated = vmConcerns(record({ disks: [{ capacity: GiB, rdm: true }], concerns: [FORKLIFT_RDM] }));
  assert.deepEqual(validated, [FORKLIFT_RDM]);
  assert.deepEqual(vmConcerns(record({ disks: [{ capacity: GiB, mode: 'independent_nonpersistent' }] })).map((c) => c.id), ['vmware.disk_mode.independent']);
});

test('UEFI, UEFI with Secure Boot and more disks than SATA ports are warnings', () => {
  assert.deepEqual(vmConcerns(record({ firmware: 'efi', secureBoot: true })).map((c) => [c.id, c.category]), [[OwnConcern.UEFI, 'Warning'], [OwnConcern.SecureBoot, 'Warning']]);
  const seven = Array.from({ length: 7 }, () => ({ capacity: GiB }));
  assert.deepEqual(vmConcerns(record({ disks: seven })).map((c) => c.id), [OwnConcern.BeyondSATA]);
  assert.deepEqual(vmConcerns(record({ disks: seven.slice(1) })), []);
});

test('the verdict is the worst category of the concerns, whatever their order', () => {
  const cat = fc.constantFrom('Critical' as const, 'Warning' as const, 'Information' as const);
  fc.assert(
    fc.property(fc.array(cat, { maxLength: 8 }), (cats) => {
      const v = verdictOf(cats.map((category) => ({ category, label: 'l', assessment: 'a' })));
      assert.equal(v, cats.includes('Critical') ? 'Blocked' : cats.includes('Warning') ? 'ReadyWithWarnings' : 'Ready');
    }),
  );
});

test('a cold import leaves the CBT concerns out; a warm one keeps them', () => {
  const cs = vmConcerns(record({ concerns: [cbt] }));
  assert.deepEqual(concernsFor(cs, undefined), []);
  assert.deepEqual(concernsFor(cs, 'cold'), []);
  assert.equal(concernsFor(cs, 'warm').length, 1);
});

test("a concern reads as Forklift's label and assessment, who raised it, and what to do", () => {
  assert.equal(
    concernSentence(FORKLIFT_RDM),
    'Raw Device Mapped disk detected (Critical, Forklift): RDM disks are not currently supported by Migration Toolkit for Virtualization. The VM cannot be migrated unless the RDM disks are removed. You can reattach them to the VM after migration. Fix: remove the RDM disk from the VM in vSphere (copy its data to a virtual disk if it must come along) and import again.',
  );
});

test('the status inventory counts every VM per verdict, listed or not, and bounds each entry to the CRD limits', () => {
  const vms = [
    record({ id: 'vm-1', name: 'a', path: '/a' }),
    record({ id: 'vm-2', name: 'b', path: '/b', concerns: [cbt] }),
    record({ id: 'vm-3', name: 'c', path: '/c', disks: [{ capacity: GiB, shared: true }] }),
    record({ id: 'vm-4', name: 'd', path: '/d', disks: Array.from({ length: 300 }, () => ({ capacity: GiB, rdm: true })) }),
  ] as Array<InventoryVMRecord & { id: string; name: string; path: string }>;
  const inv = statusInventory(vms, 2, 1 << 20, inventoryEntry);
  assert.deepEqual([inv.total, inv.listed, inv.truncated], [4, 2, true]);
  assert.deepEqual(inv.summary, { ready: 1, readyWithWarnings: 1, blocked: 2 });
  assert.deepEqual(inv.vms.map((v) => v.verdict), ['Ready', 'ReadyWithWarnings']);
  assert.equal(inventoryEntry(vms[3]!).disks?.length, 256);
  assert.deepEqual(summarise([]), { ready: 0, readyWithWarnings: 0, blocked: 0 });
});

test('our Tools blocker is exactly Forklift\'s GuestToolsIssue: installed Tools not reported as stopped pass', () => {
  assert.deepEqual(vmConcerns(record({ toolsStatus: 'toolsOk', toolsRunningStatus: '' })), []);
  assert.deepEqual(vmConcerns(record({ toolsStatus: '', toolsRunningStatus: 'guestToolsRunning' })).map((c) => c.id), [OwnConcern.ToolsNotRunning]);
  assert.deepEqual(vmConcerns(record({ toolsStatus: 'toolsNotInstalled' })).map((c) => c.id), [OwnConcern.ToolsNotRunning]);
});

test("a UEFI guest's assessment names the EFI profile that stands in where the platform has no firmware value, or says it will not boot", () => {
  const uefi = (os?: 'linux' | 'windows' | 'other', secureBoot = false) => ownConcerns({ firmware: 'efi', ...(secureBoot ? { secureBoot } : {}), ...(os ? { os } : {}), tools: 'running', cbt: true, disks: [], nics: [] }).find((c) => c.label === 'UEFI firmware')!.assessment;
  assert.match(uefi('linux'), /gets the EFI instance profile linux\.efi instead, unless the task names one/);
  assert.match(uefi('linux', true), /profile rhel\.9/);
  assert.match(uefi('windows'), /profile windows\.2k19/);
  assert.match(uefi('other'), /it will not boot: it starts with BIOS, and the guest's operating system is neither Linux nor Windows/);
  assert.match(uefi(), /it will not boot: .*not known/);
});
