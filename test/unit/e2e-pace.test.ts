// The e2e harness's waits and CPU accounting (test/e2e/env/wait.ts, cpu.ts): pure or /proc reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WAIT_BACKOFF, waitIntervals } from '../e2e/env/wait.ts';
import { groupCpu, procCpu } from '../e2e/env/cpu.ts';

test('a wait without a fixed interval looks again within 50 ms at first, then less often, never less often than every 250 ms', () => {
  const it = waitIntervals();
  const pauses = Array.from({ length: 40 }, () => it.next().value);
  assert.equal(pauses[0], WAIT_BACKOFF.firstMs);
  for (let i = 1; i < pauses.length; i++) assert.ok(pauses[i]! >= pauses[i - 1]!, `pause ${i} does not shrink: ${pauses.join(',')}`);
  assert.equal(Math.max(...pauses), WAIT_BACKOFF.maxMs);
  // A condition that holds within a second is observed within a second and a quarter: the first
  // pauses add up to little more than a second.
  let t = 0;
  let n = 0;
  while (t < 1000) t += pauses[n++]!;
  assert.ok(t <= 1250, `the first pauses cover the first second closely: ${pauses.slice(0, n).join(',')}`);
  // A minute's wait reads about 4 times a second, not 20.
  const observationsInAMinute = pauses.length + (60_000 - pauses.reduce((a, b) => a + b, 0)) / WAIT_BACKOFF.maxMs;
  assert.ok(observationsInAMinute < 300, String(observationsInAMinute));
});

test('the CPU of a process and of its process group are read from /proc', { skip: process.platform !== 'linux' }, () => {
  let x = 0;
  for (let i = 0; i < 2e7; i++) x += i % 7;
  assert.ok(x > 0);
  const self = procCpu('self');
  assert.ok(self && self.self > 0, JSON.stringify(self));
  const group = groupCpu(self.pgrp);
  assert.ok(group.has(process.pid), 'this process is found in its own group');
  assert.equal(procCpu(2 ** 22 + 1), undefined, 'a process that does not exist has no figure');
});
