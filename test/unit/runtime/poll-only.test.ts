// The poll-only baseline (the Go anchor the benchmarks compare against): how it is configured and how it
// stretches requeues. Used by bench/ only; the default controller is unaffected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, parseConfig } from '../../../src/config.ts';
import { DEFAULT_POLL_INTERVAL_MS, requeueDelay } from '../../../src/runtime/manager.ts';

test('poll-only is off by default with a 20 s poll period', () => {
  const c = parseConfig(['--kubeconfig', '/k'], {});
  assert.equal(c.pollOnly, false);
  assert.equal(c.pollIntervalMs, 20_000);
  assert.equal(DEFAULT_POLL_INTERVAL_MS, 20_000);
});

test('--poll-only turns it on, alone or with a value, and --poll-interval-ms sets the period', () => {
  assert.equal(parseConfig(['--kubeconfig', '/k', '--poll-only'], {}).pollOnly, true);
  assert.equal(parseConfig(['--poll-only', '--kubeconfig', '/k'], {}).pollOnly, true);
  assert.equal(parseConfig(['--kubeconfig', '/k', '--poll-only=false'], {}).pollOnly, false);
  assert.equal(parseConfig(['--kubeconfig', '/k', '--poll-interval-ms', '2500'], {}).pollIntervalMs, 2500);
});

test('a poll period that is not a positive whole number of milliseconds is refused', () => {
  for (const v of ['0', '-5', 'abc', '1.5']) assert.throws(() => parseConfig(['--kubeconfig', '/k', '--poll-interval-ms', v], {}), ConfigError, v);
});

test('without poll-only a requeue keeps the delay the reconciler asked for', () => {
  for (const ms of [0, 20, 250, 30_000, 300_000]) assert.equal(requeueDelay(ms, {}), ms);
  assert.equal(requeueDelay(250, { pollOnly: false, pollIntervalMs: 20_000 }), 250);
});

test('in poll-only mode every delayed requeue waits one poll period, and an immediate one stays immediate', () => {
  for (const ms of [20, 250, 30_000, 300_000]) assert.equal(requeueDelay(ms, { pollOnly: true, pollIntervalMs: 20_000 }), 20_000);
  assert.equal(requeueDelay(250, { pollOnly: true }), DEFAULT_POLL_INTERVAL_MS);
  assert.equal(requeueDelay(0, { pollOnly: true, pollIntervalMs: 20_000 }), 0);
});
