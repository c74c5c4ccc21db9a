import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importBudget, parseQuantity, quotaVerdict } from './quota.ts';

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

test('a VDDK import budgets no scratch volume: certainly each disk once plus one disk twice (the handoff), possibly each disk twice with overhead (CDI prime claims)', () => {
  const b = importBudget([100 * Gi, 50 * Gi]);
  assert.equal(b.certainBytes, 200 * Gi);
  assert.equal(b.possibleBytes, 2 * Math.ceil(100 * Gi * 1.06) + 2 * Math.ceil(50 * Gi * 1.06));
  assert.equal(b.certainClaims, 3);
  assert.equal(b.possibleClaims, 4);
  assert.deepEqual(importBudget([]), { certainBytes: 0, possibleBytes: 0, certainClaims: 0, possibleClaims: 0 });
  // CDI rounds a request up to 1 MiB before anything else.
  assert.equal(importBudget([1]).certainBytes, 2 * 2 ** 20);
});

const quota = (hard: Record<string, string>, used: Record<string, string> = {}) => [{ metadata: { name: 'tenant' }, spec: { hard }, status: { hard, used } }];

test('a quota that certainly cannot hold the import fails it, naming the quota, key and numbers', () => {
  const v = quotaVerdict(quota({ 'requests.storage': '100Gi' }, { 'requests.storage': '20Gi' }), 'fast', importBudget([50 * Gi]));
  assert.equal(v.fail, 'ResourceQuota "tenant" limits requests.storage to 100 GiB with 20.0 GiB used (80.0 GiB free), but the import certainly needs 100 GiB at its peak (every disk\'s claim, plus one disk twice while its claim is handed over)');
});

test('a quota that holds the certain need but maybe not the prime claims is a warning, not a failure', () => {
  // 101 GiB free for one 50 GiB disk: 100 GiB certain, up to 106 GiB with CDI's prime claim and overhead.
  const v = quotaVerdict(quota({ 'requests.storage': '101Gi' }), 'fast', importBudget([50 * Gi]));
  assert.equal(v.fail, undefined);
  assert.match(v.warn ?? '', /may need up to 106 GiB/);
  assert.deepEqual(quotaVerdict(quota({ 'requests.storage': '200Gi' }), 'fast', importBudget([50 * Gi])), {});
});

test('a claim-count quota is budgeted too: each disk, plus one for the handoff', () => {
  assert.match(quotaVerdict(quota({ persistentvolumeclaims: '2' }), 'fast', importBudget([Gi, Gi])).fail ?? '', /limits persistentvolumeclaims to 2 .* certainly needs 3/);
  assert.match(quotaVerdict(quota({ persistentvolumeclaims: '3' }), 'fast', importBudget([Gi, Gi])).warn ?? '', /may need up to 4/);
});

test('a per-class quota counts for the resolved class only', () => {
  const quotas = [{ metadata: { name: 'per-class' }, spec: { hard: { 'fast.storageclass.storage.k8s.io/requests.storage': '10Gi' } } }];
  assert.match(quotaVerdict(quotas, 'fast', importBudget([20 * Gi])).fail ?? '', /limits fast.storageclass.storage.k8s.io\/requests.storage to 10.0 GiB with 0.00 GiB used/);
  assert.deepEqual(quotaVerdict(quotas, 'slow', importBudget([20 * Gi])), {});
});
