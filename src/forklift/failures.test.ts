import { test } from 'node:test';
import assert from 'node:assert/strict';
import { claimsPendingAfterCopy, engineSucceededWithoutOutput, pendingAfterCopyMessage, translateFailure, translatePlanBlockers } from './failures.ts';

test('the NBD error becomes HostUnreachable telling the user to add spec.hosts, keeping Forklift\'s words', () => {
  const t = translateFailure("Unable to connect to vddk data source: nbd_connect_uri: the server has no export named ''", { hostDescription: 'host-10 at 10.96.0.15', sourceName: 'vc' });
  assert.equal(t.reason, 'HostUnreachable');
  assert.match(t.message, /host-10 at 10\.96\.0\.15/);
  assert.match(t.message, /spec\.hosts\[\] to VMImportSource "vc"/);
  assert.match(t.message, /Forklift said: Unable to connect to vddk data source: nbd_connect_uri/);
  assert.equal(translateFailure('VixDiskLib_Open: The server refused connection').reason, 'HostUnreachable');
});

test('VDDK out of NFC buffers on the host is HostTransferLimit asking for the transfer budget, not an unreachable host', () => {
  const said = 'Unable to connect to vddk data source: nbdkit: vddk[1]: error: VixDiskLib_Open: [ds1] web/web.vmdk: Memory allocation failed. Out of memory. (DiskLib error 802: NBD_ERR_INSUFFICIENT_RESOURCES)';
  const t = translateFailure(said, { hostDescription: 'host-10 at 10.0.0.15', sourceName: 'vc' });
  assert.equal(t.reason, 'HostTransferLimit');
  assert.match(t.message, /host-10 at 10\.0\.0\.15/);
  assert.match(t.message, /transfer\.maxDisksPerHost/);
  assert.doesNotMatch(t.message, /spec\.hosts/);
  assert.match(t.message, /Forklift said: Unable to connect to vddk data source/);
});

test('known texts map to their reasons; unknown ones stay TransferFailed with the words kept', () => {
  assert.equal(translateFailure('DataVolume is AwaitingVDDK').reason, 'VDDKNotConfigured');
  assert.equal(translateFailure('persistentvolumeclaims "x" is forbidden: exceeded quota: q').reason, 'QuotaExceeded');
  assert.match(translateFailure('x509: certificate signed by unknown authority').message, /caCert/);
  assert.match(translateFailure('ServerFaultCode: Cannot complete login due to an incorrect user name or password.').message, /SSO domain/);
  const u = translateFailure('something odd');
  assert.equal(u.reason, 'TransferFailed');
  assert.match(u.message, /Forklift said: something odd/);
});

test('Plan blockers translate by type, else PlanNotValid with message and items verbatim', () => {
  assert.equal(translatePlanBlockers([{ type: 'VDDKInitImageUnavailable', category: 'Critical', message: 'VDDK init image not available' }]).reason, 'VDDKNotConfigured');
  const t = translatePlanBlockers([{ type: 'NamespaceNotValid', category: 'Critical', message: 'Target namespace not valid.', items: ['x'] }]);
  assert.equal(t.reason, 'PlanNotValid');
  assert.match(t.message, /NamespaceNotValid: Target namespace not valid\. \[x\]/);
});

test('Succeeded without a VirtualMachine or claims is detected; a real success is not', () => {
  assert.equal(engineSucceededWithoutOutput({ engineSucceeded: true, forkliftVM: undefined, transferClaims: [], expectedDisks: 1 }), true);
  assert.equal(engineSucceededWithoutOutput({ engineSucceeded: true, forkliftVM: {}, transferClaims: [], expectedDisks: 1 }), true);
  assert.equal(engineSucceededWithoutOutput({ engineSucceeded: true, forkliftVM: {}, transferClaims: [{}], expectedDisks: 1 }), false);
  assert.equal(engineSucceededWithoutOutput({ engineSucceeded: false, forkliftVM: undefined, transferClaims: [], expectedDisks: 1 }), false);
});

test('a failed guest conversion points at the conversion pod\'s log and its three causes, keeping Forklift\'s words', () => {
  for (const words of ['Guest conversion failed. See pod logs for details.', 'Guest conversion pod not found']) {
    const t = translateFailure(words);
    assert.equal(t.reason, 'TransferFailed');
    assert.match(t.message, /^guest conversion \(virt-v2v\) failed; the log of the conversion pod \(label app=virt-v2v/);
    assert.match(t.message, /seccomp profile .* cannot convert, or a disk missing on its datastore/);
    assert.match(t.message, /Import without spec\.guestConversion for a raw copy/);
    assert.ok(t.message.endsWith(`Forklift said: ${words}`), t.message);
  }
});

test('warm: a snapshot refused for permissions names the warm-only vCenter privileges; Forklift\'s warm Plan blockers keep their own reasons', () => {
  const t = translateFailure('CreateInitialSnapshot: ServerFaultCode: Permission to perform this operation was denied.', { sourceName: 'vc' });
  assert.equal(t.reason, 'SnapshotFailed');
  assert.match(t.message, /VMImportSource "vc" lacks the warm-only privileges Virtual machine > Snapshot management > Create snapshot and Remove snapshot \(VirtualMachine\.State\.CreateSnapshot, VirtualMachine\.State\.RemoveSnapshot\).*Forklift said: CreateInitialSnapshot: ServerFaultCode: Permission/);
  assert.equal(translateFailure('Permission to perform this operation was denied.').reason, 'TransferFailed');
  assert.equal(translatePlanBlockers([{ type: 'VMMissingChangedBlockTracking', status: 'True', category: 'Critical', message: 'Changed Block Tracking (CBT) has not been enabled on some VM. This feature is a prerequisite for VM warm migration.', items: ["id:vm-1 name:'erp'"] }]).reason, 'ChangeTrackingDisabled');
  assert.equal(translatePlanBlockers([{ type: 'VMHasSnapshots', status: 'True', category: 'Critical', message: 'VM has pre-existing snapshots which are incompatible with warm migration.' }]).reason, 'SnapshotsPresent');
});

test('transfer claims still Pending after Forklift reported the copy done are named: nothing was copied', () => {
  const claims = [{ metadata: { name: 'p-vm-1-b' }, status: { phase: 'Pending' } }, { metadata: { name: 'p-vm-1-a' }, status: { phase: 'Bound' } }, { metadata: { name: 'p-vm-1-c' }, status: { phase: 'Pending' } }];
  assert.deepEqual(claimsPendingAfterCopy(claims), ['p-vm-1-b', 'p-vm-1-c']);
  assert.deepEqual(claimsPendingAfterCopy([{ metadata: { name: 'x' }, status: { phase: 'Bound' } }]), []);
  assert.match(pendingAfterCopyMessage(['p-vm-1-b']), /transfer claim p-vm-1-b is still Pending: nothing was copied.*WaitForFirstConsumer/);
});
