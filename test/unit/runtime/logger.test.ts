import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger, objectLogger } from '../../../src/telemetry/logger.ts';
import { Metrics, METRIC_PREFIX } from '../../../src/telemetry/metrics.ts';

test('log lines are JSON bound to controller, namespace and name, with secrets redacted', async () => {
  const lines: string[] = [];
  const sink = new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) });
  const log = objectLogger(createLogger({ level: 'info', destination: sink }), 'vmimportsource', 'tenant-a', 'vc');
  log.info({ spec: { credentials: { username: 'u', password: 'hunter2' } }, password: 'p2', secret: { data: { password: 'aGk=' } }, token: 't' }, 'hello');
  await new Promise((r) => setImmediate(r));
  const rec = JSON.parse(lines[0]!);
  assert.equal(rec.controller, 'vmimportsource');
  assert.equal(rec.namespace, 'tenant-a');
  assert.equal(rec.name, 'vc');
  assert.equal(rec.msg, 'hello');
  assert.doesNotMatch(lines[0]!, /hunter2|p2|aGk=|"t"/);
});

test('every metric carries the one project prefix', async () => {
  const m = new Metrics();
  m.reconcileTotal.inc({ controller: 'x', result: 'success' });
  const names = (await m.registry.getMetricsAsJSON()).map((x) => x.name);
  assert.ok(names.length >= 10);
  for (const n of names) assert.ok(n.startsWith(METRIC_PREFIX), n);
  assert.ok(names.includes('migration_controller_reconcile_total'));
  assert.ok(names.includes('migration_controller_workqueue_depth'));
  assert.ok(names.includes('migration_controller_api_requests_total'));
});
