import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { defaultVMName, isDNS1035Label, outputNameProblems, maxVMNameLength } from './names.ts';

test('DNS-1035 labels start with a letter, end alphanumeric, lower case, at most 63', () => {
  for (const ok of ['a', 'web-1', 'a'.repeat(63), 'x0']) assert.equal(isDNS1035Label(ok), true, ok);
  for (const bad of ['', '1web', 'Web', 'web-', '-web', 'we_b', 'a'.repeat(64), 'we.b']) assert.equal(isDNS1035Label(bad), false, bad);
});

test('a VM name may have 41 characters for one disk, 38 up to ten disks, 37 up to a hundred', () => {
  assert.equal(maxVMNameLength(1), 38);
  assert.equal(maxVMNameLength(0), 38);
  assert.equal(maxVMNameLength(10), 38);
  assert.equal(maxVMNameLength(11), 37);
  assert.equal(maxVMNameLength(101), 36);
});

test('the default name is the source name sanitised', () => {
  assert.equal(defaultVMName('web-01', 1), 'web-01');
  assert.equal(defaultVMName('Web Server_01 (prod)', 2), 'web-server-01-prod');
  assert.equal(defaultVMName('01-db', 1), 'vm-01-db');
  assert.equal(defaultVMName('___', 1), 'vm');
  assert.equal(defaultVMName('Škoda', 1), 'skoda');
});

test('a long source name is shortened with a hash so two long names do not collide', () => {
  const a = defaultVMName('a-very-long-virtual-machine-name-for-the-finance-department-1', 3);
  const b = defaultVMName('a-very-long-virtual-machine-name-for-the-finance-department-2', 3);
  assert.notEqual(a, b);
  assert.equal(a.length, 38);
  assert.deepEqual(outputNameProblems(a, 3), []);
});

test('every default name is DNS-1035 and fits the VMInstance and every VMDisk name limit', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 120 }), fc.integer({ min: 1, max: 200 }), (s, n) => {
      const name = defaultVMName(s, n);
      assert.ok(isDNS1035Label(name), name);
      assert.deepEqual(outputNameProblems(name, n), []);
    }),
    { numRuns: 2000 },
  );
});

test('a name too long for its disks is reported naming the disk, its length and the limit', () => {
  const name = 'a'.repeat(39);
  assert.deepEqual(outputNameProblems(name, 2), [
    `VMDisk name "${name}-disk-1" is 46 characters; the limit is 45 (Helm release names are limited to 53, minus the "vm-disk-" prefix); with 2 disks the VM name may have at most 38 characters`,
  ]);
  assert.deepEqual(outputNameProblems('a'.repeat(38), 2), []);
});

test('a VMInstance name over 41 and a non-DNS-1035 name are each reported', () => {
  const p = outputNameProblems('A'.repeat(42), 0);
  assert.equal(p.length, 2);
  assert.match(p[0]!, /is not a DNS-1035 label/);
  assert.equal(p[1], `VMInstance name "${'A'.repeat(42)}" is 42 characters; the limit is 41 (Helm release names are limited to 53, minus the "vm-instance-" prefix)`);
});
