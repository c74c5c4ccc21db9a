import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diskNames, hasLegacyDisks, normalizeVMDisks, readVMDisks } from './disks.ts';
import type { DiskStatus, VMStatus } from './types.ts';

const EVIDENCE: DiskStatus[] = [
  { index: 0, vmDisk: 'db-disk-0', volumeName: 'pv-a', transferClaim: 'plan-db-0', capacityBytes: 2 ** 31, handoff: 'done' },
  { index: 1, vmDisk: 'db-disk-1', volumeName: 'pv-b', transferClaim: 'plan-db-1', capacityBytes: 2 ** 30, handoff: 'rebind-volume' },
];
/** A VM status as an earlier version stored it: the evidence in `disks`. */
const legacy = (o: Partial<VMStatus> = {}): VMStatus => ({ id: 'vm-1', name: 'db', phase: 'Creating', ...o, disks: EVIDENCE as unknown as string[] });

test('a status this version wrote reads back as it was: names from disks, evidence from diskHandoffs', () => {
  const v: VMStatus = { id: 'vm-1', name: 'db', phase: 'Creating', disks: ['db-disk-0', 'db-disk-1'], diskHandoffs: EVIDENCE };
  assert.deepEqual(readVMDisks(v), { names: ['db-disk-0', 'db-disk-1'], evidence: EVIDENCE });
  assert.equal(hasLegacyDisks(v), false);
  assert.deepEqual(normalizeVMDisks(v), v);
});

test("an earlier version's objects in disks are the handoff's evidence, every field and checkpoint kept, and they name the VMDisks once the handoff had begun", () => {
  const v = legacy();
  assert.equal(hasLegacyDisks(v), true);
  assert.deepEqual(readVMDisks(v), { names: ['db-disk-0', 'db-disk-1'], evidence: EVIDENCE });
  const next = normalizeVMDisks(v);
  assert.deepEqual(next.disks, ['db-disk-0', 'db-disk-1'], 'the next status write stores names in disks');
  assert.deepEqual(next.diskHandoffs, EVIDENCE, '... and the evidence in diskHandoffs, in the same write');
  assert.equal(hasLegacyDisks(next), false);
  assert.deepEqual(readVMDisks(next), readVMDisks(v), 'the migrated status reads as the old one did');
});

test("an earlier version's preflight plan (no handoff yet) is kept as evidence but names no VMDisk: none exists yet", () => {
  const plan = [{ index: 0, vmDisk: 'db-disk-0', capacityBytes: 2 ** 31 }];
  const v: VMStatus = { id: 'vm-1', name: 'db', phase: 'Transferring', disks: plan as unknown as string[] };
  assert.deepEqual(readVMDisks(v), { names: [], evidence: plan });
  const next = normalizeVMDisks(v);
  assert.equal(next.disks, undefined);
  assert.deepEqual(next.diskHandoffs, plan);
});

test("a failed VM of an earlier version names the VMDisks its handoff reached (a volume or a checkpoint), not those it never began", () => {
  const begun = legacy({ phase: 'Failed' });
  assert.deepEqual(readVMDisks(begun).names, ['db-disk-0', 'db-disk-1']);
  const never: VMStatus = { id: 'vm-1', name: 'db', phase: 'Failed', disks: [{ index: 0, vmDisk: 'db-disk-0', capacityBytes: 1 }] as unknown as string[] };
  assert.deepEqual(readVMDisks(never).names, []);
});

test('evidence comes back in source order whatever order it was stored in, and the names with it', () => {
  const v = legacy();
  v.disks = [...EVIDENCE].reverse() as unknown as string[];
  assert.deepEqual(readVMDisks(v).evidence.map((d) => d.index), [0, 1]);
  assert.deepEqual(readVMDisks(v).names, ['db-disk-0', 'db-disk-1']);
  assert.deepEqual(diskNames([EVIDENCE[1]!, EVIDENCE[0]!]), ['db-disk-0', 'db-disk-1']);
});

test("evidence an earlier version wrote into disks after this version's diskHandoffs wins at its index: this version never writes objects there, so they are the later record", () => {
  const older: DiskStatus = { index: 1, vmDisk: 'db-disk-1', handoff: 'retain-volume' };
  const v = { id: 'vm-1', name: 'db', phase: 'Creating' as const, diskHandoffs: [EVIDENCE[0]!, older], disks: [EVIDENCE[1]!] as unknown as string[] };
  assert.deepEqual(readVMDisks(v).evidence, EVIDENCE);
});

test('what is neither a name nor a disk record is dropped, never taken for evidence', () => {
  const v = { id: 'vm-1', name: 'db', phase: 'Creating' as const, disks: [null, 7, { index: -1, vmDisk: 'x' }, { index: 0 }, 'db-disk-0'] as unknown as string[], diskHandoffs: 'nonsense' as unknown as DiskStatus[] };
  assert.deepEqual(readVMDisks(v), { names: ['db-disk-0'], evidence: [] });
  assert.deepEqual(readVMDisks({}), { names: [], evidence: [] });
});

test("a status Cozystack's own controller wrote (VMDisk names in disks, no diskHandoffs) reads as those names with no evidence, and is written back unchanged", () => {
  const v: VMStatus = { id: 'vm-1', name: 'db', phase: 'Succeeded', vmInstance: 'db', disks: ['db-disk-0'] };
  assert.deepEqual(readVMDisks(v), { names: ['db-disk-0'], evidence: [] });
  assert.equal(hasLegacyDisks(v), false);
  assert.deepEqual(normalizeVMDisks(v), v);
});
