// The heap's ceiling is served beside its use, so an operator can alert before the process runs out of
// heap (Node derives the ceiling from the container's memory limit).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getHeapStatistics } from 'node:v8';
import { Metrics } from '../../src/telemetry/metrics.ts';

test('the metrics serve the V8 heap size limit this process runs under', async () => {
  const text = await new Metrics().registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith('migration_controller_nodejs_heap_size_limit_bytes '));
  assert.ok(line, 'no migration_controller_nodejs_heap_size_limit_bytes sample');
  assert.equal(Number(line.split(' ')[1]), getHeapStatistics().heap_size_limit);
});
