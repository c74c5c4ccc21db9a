import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importBudgetBytes, parseQuantity, quotaProblem } from './quota.ts';

const Gi = 2 ** 30;

test('Kubernetes quantities parse: binary, decimal, milli and exponent forms', () => {
  assert.equal(parseQuantity('10Gi'), 10 * Gi);
  assert.equal(parseQuantity('1.5Ti'), 1.5 * 2 ** 40);
  assert.equal(parseQuantity('100M'), 100e6);
  assert.equal(parseQuantity('5k'), 5000);
  assert.equal(parseQuantity('500m'), 0.5);
  assert.equal(parseQuantity('1e3'), 1000);
  assert.equal(parseQuantity('12E-1'), 1.2);
  assert.equal(parseQuantity('2E'), 2e18);
  assert.equal(parseQuantity('42'), 42);
  assert.equal(parseQuantity('1.1G'), 1.1e9);
  assert.ok(Number.isNaN(parseQuantity('ten')));
  assert.ok(Number.isNaN(parseQuantity('10GB')));
});

test('the import budget is about 2.06 times the disks', () => {
  assert.equal(importBudgetBytes([100 * Gi, 50 * Gi]), Math.ceil(150 * Gi * 2.06));
  assert.equal(importBudgetBytes([]), 0);
});

test('a quota with room is no problem; one without names the quota, key and numbers', () => {
  const quotas = [{ metadata: { name: 'tenant' }, spec: { hard: { 'requests.storage': '100Gi' } }, status: { hard: { 'requests.storage': '100Gi' }, used: { 'requests.storage': '20Gi' } } }];
  assert.equal(quotaProblem(quotas, 'fast', 80 * Gi), undefined);
  assert.equal(
    quotaProblem(quotas, 'fast', importBudgetBytes([50 * Gi])),
    'ResourceQuota "tenant" limits requests.storage to 100 GiB with 20.0 GiB used (80.0 GiB free), but the import needs about 103 GiB while it runs (each disk about twice: the target volume plus CDI\'s scratch volume)',
  );
});

test('a per-class quota counts for the resolved class only', () => {
  const quotas = [{ metadata: { name: 'per-class' }, spec: { hard: { 'fast.storageclass.storage.k8s.io/requests.storage': '10Gi' } } }];
  assert.match(quotaProblem(quotas, 'fast', 20 * Gi) ?? '', /limits fast.storageclass.storage.k8s.io\/requests.storage to 10.0 GiB with 0.00 GiB used/);
  assert.equal(quotaProblem(quotas, 'slow', 20 * Gi), undefined);
});
