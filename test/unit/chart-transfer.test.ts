// The chart's transfer.* values: the schema's bounds (the NFC streams of an ESXi host), and the
// MigrationControllerTransferQueuedTooLong alert, rendered for the monitoring stack the cluster serves,
// keyed on a metric the controller's budget registers, with its runbook section in docs/operations.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import YAML from 'yaml';
import { BudgetMetrics } from '../../src/controllers/budget/metrics.ts';
import { NFC_STREAMS_PER_HOST } from '../../src/controllers/budget/budget.ts';
import { parseConfig } from '../../src/config.ts';
import { scratch } from './scratch.ts';

const tmp = scratch('mc-chart-transfer-');

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CHART = join(ROOT, 'charts/migration-controller');
const NS = 'cozy-migration-controller';
const PROM = ['monitoring.coreos.com/v1/ServiceMonitor', 'monitoring.coreos.com/v1/PrometheusRule'];
const VM = ['operator.victoriametrics.com/v1beta1/VMServiceScrape', 'operator.victoriametrics.com/v1beta1/VMRule'];

interface Obj {
  kind: string;
  metadata: { name: string };
  spec?: { groups: Array<{ rules: Array<{ alert: string; expr: string; labels: Record<string, string>; annotations: Record<string, string> }> }> };
}

function helm(values: object, apis: string[]): { code: number; objs: Obj[]; stderr: string } {
  const f = tmp('values.yaml');
  writeFileSync(f, YAML.stringify(values));
  const r = spawnSync('bash', [join(ROOT, 'scripts/helm.sh'), 'template', 'migration-controller', CHART, '--namespace', NS, '-f', f, ...apis.flatMap((a) => ['--api-versions', a])], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const objs = r.status === 0 ? YAML.parseAllDocuments(r.stdout).map((d) => d.toJSON() as Obj | null).filter((o): o is Obj => !!o && typeof o.kind === 'string') : [];
  return { code: r.status ?? 1, objs, stderr: r.stderr };
}

const transferRules = (objs: Obj[]): Obj[] => objs.filter((o) => o.metadata.name === 'migration-controller-transfer');

test('the queued-too-long alert renders for the stack the cluster serves, once, and not when the budget or the alerts are off', () => {
  assert.deepEqual(transferRules(helm({}, []).objs), [], 'no monitoring API: nothing that would fail the install');
  assert.deepEqual(transferRules(helm({}, PROM).objs).map((o) => o.kind), ['PrometheusRule']);
  assert.deepEqual(transferRules(helm({}, [...PROM, ...VM]).objs).map((o) => o.kind), ['VMRule'], 'never both stacks');
  assert.deepEqual(transferRules(helm({ transfer: { budget: false } }, PROM).objs), []);
  assert.deepEqual(transferRules(helm({ transfer: { alerts: { enabled: false } } }, PROM).objs), []);
  assert.deepEqual(transferRules(helm({ metrics: { alerts: { enabled: false } } }, PROM).objs), []);
});

test('the alert fires on the oldest wait of a host above the chart value, on a metric the budget registers, with its runbook', async () => {
  const [rule] = transferRules(helm({ transfer: { alerts: { queuedLongerThanMinutes: 45, severity: 'critical' } } }, PROM).objs);
  const r = rule!.spec!.groups[0]!.rules[0]!;
  assert.equal(r.alert, 'MigrationControllerTransferQueuedTooLong');
  assert.equal(r.expr, `max by (vcenter, host) (migration_controller_transfer_queue_oldest_wait_seconds{job="migration-controller-metrics", namespace="${NS}"}) > 2700`);
  assert.equal(r.labels.severity, 'critical');
  const registered = new Set((await (() => {
    const reg = new Registry();
    new BudgetMetrics(reg);
    return reg.getMetricsAsJSON();
  })()).map((m) => m.name));
  assert.ok(registered.has('migration_controller_transfer_queue_oldest_wait_seconds'));
  const anchors = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8').split('\n').filter((l) => /^#{2,4} /.test(l)).map((l) => l.replace(/^#+ /, '').trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-'));
  assert.equal(r.annotations.runbook_url, 'docs/operations.md#migrationcontrollertransferqueuedtoolong');
  assert.ok(anchors.includes('migrationcontrollertransferqueuedtoolong'), 'docs/operations.md has the runbook section');
});

test('the schema keeps the budget within an ESXi host’s NFC streams and refuses what is not a whole number of disks', () => {
  assert.equal(helm({ transfer: { maxDisksPerHost: NFC_STREAMS_PER_HOST } }, []).code, 0);
  for (const bad of [{ maxDisksPerHost: NFC_STREAMS_PER_HOST + 1 }, { maxDisksPerHost: 0 }, { maxDisksPerHost: 2.5 }, { maxDisksPerTenant: -1 }, { budget: 'maybe' }, { alerts: { queuedLongerThanMinutes: 0 } }, { unknown: 1 }]) {
    const r = helm({ transfer: bad }, []);
    assert.notEqual(r.code, 0, `accepted transfer: ${JSON.stringify(bad)}`);
    assert.match(r.stderr, /transfer/);
  }
});

test('the chart’s transfer values reach the controller as its flags: the budget, the per-host and the per-tenant caps, and the baseline with the budget off', () => {
  const cfgOf = (values: object): ReturnType<typeof parseConfig> => {
    const dep = helm(values, []).objs.find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { spec: { containers: Array<{ args: string[] }> } } } };
    return parseConfig(dep.spec.template.spec.containers[0]!.args, { KUBERNETES_SERVICE_HOST: '10.96.0.1', POD_NAMESPACE: NS });
  };
  const d = cfgOf({});
  assert.deepEqual([d.transferBudget, d.transferMaxDisksPerHost, d.transferMaxDisksPerTenant], [true, 10, 0]);
  const set = cfgOf({ transfer: { budget: false, maxDisksPerHost: 16, maxDisksPerTenant: 4 } });
  assert.deepEqual([set.transferBudget, set.transferMaxDisksPerHost, set.transferMaxDisksPerTenant], [false, 16, 4]);
});
