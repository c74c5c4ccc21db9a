// docs/metrics.md is the metrics reference: every metric the controller registers is there, with its
// type and exactly its labels, and nothing is documented that the controller does not serve.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Metrics, METRIC_PREFIX } from '../../src/telemetry/metrics.ts';
import { TaskMetrics } from '../../src/controllers/task/metrics.ts';
import { BudgetMetrics } from '../../src/controllers/budget/metrics.ts';
import { REPO_ROOT } from '../../scripts/demo/tools.ts';

test('docs/metrics.md lists every metric the controller registers, with its type and labels', () => {
  const m = new Metrics();
  new TaskMetrics(m.registry);
  new BudgetMetrics(m.registry);
  const served = new Map<string, { type: string; labels: string[] }>();
  for (const x of m.registry.getMetricsAsArray()) {
    const { name, type, labelNames } = x as unknown as { name: string; type: string; labelNames?: string[] };
    served.set(name, { type, labels: (labelNames ?? []).slice().sort() });
  }
  const doc = readFileSync(join(REPO_ROOT, 'docs/metrics.md'), 'utf8');
  const rows = new Map<string, { type: string; labels: string[] }>();
  for (const line of doc.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const name = /^`(migration_controller_[a-z_]+)`$/.exec(cells[1] ?? '')?.[1];
    if (!name) continue;
    const labels = cells[3] === '—' ? [] : [...(cells[3] ?? '').matchAll(/`([a-z_]+)`/g)].map((x) => x[1]!).sort();
    rows.set(name, { type: cells[2] ?? '', labels });
  }
  const problems: string[] = [];
  for (const [name, s] of served) {
    const d = rows.get(name);
    if (!d) problems.push(`${name} is served but not in docs/metrics.md`);
    else {
      if (d.type !== s.type) problems.push(`${name}: documented as ${d.type}, served as ${s.type}`);
      if (d.labels.join(',') !== s.labels.join(',')) problems.push(`${name}: documented labels [${d.labels}], served [${s.labels}]`);
    }
  }
  for (const name of rows.keys()) if (!served.has(name)) problems.push(`${name} is documented but not served`);
  assert.deepEqual(problems, []);
  assert.ok(served.size >= 10);
  assert.ok([...served.keys()].every((n) => n.startsWith(METRIC_PREFIX)));
});
