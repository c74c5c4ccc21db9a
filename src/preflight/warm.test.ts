import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diskDeviceKey, warmBlockers, warmVerdict, type WarmDiskLike } from './warm.ts';

const disk = (o: Partial<WarmDiskLike> = {}): WarmDiskLike => ({ file: '[ds1] erp/erp.vmdk', rdm: false, mode: 'persistent', shared: false, changeTrackingEnabled: true, bus: 'scsi', controllerKey: 1000, unitNumber: 0, ...o });

test('a VM with CBT on, no snapshot and dependent disks can be imported warm', () => {
  assert.deepEqual(warmBlockers({ name: 'erp', changeTrackingEnabled: true, snapshot: { kind: '', id: '' }, disks: [disk(), disk({ unitNumber: 1 })] }), []);
});

test('CBT off on the VM is refused with the vSphere fix, the cold alternative and Forklift\'s words', () => {
  const [b, ...rest] = warmBlockers({ name: 'erp', changeTrackingEnabled: false, disks: [disk({ changeTrackingEnabled: false }), disk({ changeTrackingEnabled: false, controllerKey: 1001, unitNumber: 2 })] });
  assert.equal(rest.length, 0);
  assert.equal(b?.reason, 'ChangeTrackingDisabled');
  assert.match(b!.message, /^changed block tracking \(CBT\) is not enabled on VM "erp" \(disks scsi0:0, scsi1:2\)/);
  assert.match(b!.message, /govc vm\.change -vm "erp" -e ctkEnabled=TRUE -e scsi0:0\.ctkEnabled=TRUE -e scsi1:2\.ctkEnabled=TRUE/);
  assert.match(b!.message, /or import it cold/);
  assert.match(b!.message, /Forklift says: Changed Block Tracking \(CBT\) has not been enabled on some VM\. This feature is a prerequisite for VM warm migration\.$/);
});

test('CBT on the VM but off on one disk is refused in the words of Forklift\'s per-disk concern', () => {
  const b = warmVerdict({ name: 'erp', changeTrackingEnabled: true, disks: [disk(), disk({ changeTrackingEnabled: false, unitNumber: 1 })] });
  assert.equal(b?.reason, 'ChangeTrackingDisabled');
  assert.match(b!.message, /Forklift says: Disk - scsi0:1 does not have CBT enabled: Changed Block Tracking \(CBT\) has not been enabled for this device\./);
});

test('pre-existing snapshots, RDM, independent and shared disks are each refused; all are named in one failure', () => {
  const v = warmVerdict({
    name: 'db',
    changeTrackingEnabled: true,
    snapshot: { kind: 'VirtualMachineSnapshot', id: 'snapshot-7' },
    disks: [disk({ rdm: true, file: '[ds1] db/rdm.vmdk' }), disk({ mode: 'independent_persistent', file: '[ds1] db/log.vmdk' }), disk({ shared: true, file: '[ds1] db/quorum.vmdk' })],
  });
  assert.equal(v?.reason, 'SnapshotsPresent');
  assert.match(v!.message, /VM "db" has snapshots \(current "snapshot-7"\).*Forklift says: VM has pre-existing snapshots which are incompatible with warm migration\./);
  assert.match(v!.message, / Also: VM "db" has disks a warm import cannot copy: raw device mappings \("\[ds1\] db\/rdm\.vmdk"\).*independent disks \("\[ds1\] db\/log\.vmdk" independent_persistent\).*shared \(multi-writer\) disks \("\[ds1\] db\/quorum\.vmdk"\)/);
  assert.match(v!.message, /Raw Device Mapped disk detected.*Independent disk detected.*The shared disks cannot be used with warm migration$/);
  assert.deepEqual(warmBlockers({ changeTrackingEnabled: true, disks: [disk({ mode: 'independent_nonpersistent' })] }).map((b) => b.reason), ['DiskNotWarmCapable']);
});

test('facts the inventory does not serve are not guessed', () => {
  assert.deepEqual(warmBlockers({ name: 'x', disks: [{ file: 'a' }] }), []);
  assert.equal(diskDeviceKey({ bus: 'sata', controllerKey: 15001, unitNumber: 3 }), 'sata1:3');
  assert.equal(diskDeviceKey({ file: 'a' }), undefined);
});
