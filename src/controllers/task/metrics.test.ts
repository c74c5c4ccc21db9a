import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { TaskMetrics } from './metrics.ts';

test('task metrics share the project prefix and a stalled VM has a series only while it is stalled', async () => {
  const r = new Registry();
  const m = new TaskMetrics(r);
  m.imports.inc({ namespace: 'ns', outcome: 'failed', reason: 'HostUnreachable' });
  m.bytesTransferred.inc(1024);
  m.phaseDuration.observe({ phase: 'transferring' }, 12);
  m.setStalled({ namespace: 'ns', name: 'a' }, ['vm-1', 'vm-2']);
  m.setStalled({ namespace: 'ns', name: 'b' }, ['vm-3']);
  m.setStalled({ namespace: 'ns', name: 'a' }, ['vm-2']);
  const text = await r.metrics();
  assert.match(text, /migration_controller_imports_total\{namespace="ns",outcome="failed",reason="HostUnreachable"\} 1/);
  assert.match(text, /migration_controller_import_bytes_transferred_total 1024/);
  assert.match(text, /migration_controller_import_phase_duration_seconds_count\{phase="transferring"\} 1/);
  assert.match(text, /migration_controller_vm_stalled\{namespace="ns",task="a",vm="vm-2"\} 1/);
  assert.match(text, /migration_controller_vm_stalled\{namespace="ns",task="b",vm="vm-3"\} 1/);
  assert.doesNotMatch(text, /vm="vm-1"/);
  // a second reconciler instance on the same registry reuses the series instead of throwing
  assert.doesNotThrow(() => new TaskMetrics(r));
});
