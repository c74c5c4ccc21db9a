// No series names a source: readiness is counted per namespace (metrics map the platform for whoever
// reads them; the names of every tenant's sources are not theirs to read).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Metrics } from './metrics.ts';

test("an unauthenticated scrape names no source: readiness is counted per namespace, and a namespace's series go with its last source", async () => {
  const m = new Metrics();
  m.sourceReady.set({ namespace: 'tenant-a', source: 'secret-project-vcenter' }, 1);
  m.sourceReady.set({ namespace: 'tenant-a', source: 'other' }, 0);
  m.sourceReady.set({ namespace: 'tenant-b', source: 'x' }, 1);
  const text = await m.registry.metrics();
  assert.ok(!text.includes('secret-project-vcenter') && !/source="/.test(text), 'a source name in the metrics');
  const lines = text.split('\n').filter((l) => l.startsWith('migration_controller_sources{'));
  assert.deepEqual(lines.sort(), [
    'migration_controller_sources{namespace="tenant-a",ready="false"} 1',
    'migration_controller_sources{namespace="tenant-a",ready="true"} 1',
    'migration_controller_sources{namespace="tenant-b",ready="false"} 0',
    'migration_controller_sources{namespace="tenant-b",ready="true"} 1',
  ]);
  m.sourceReady.set({ namespace: 'tenant-a', source: 'other' }, 1);
  m.sourceReady.remove({ namespace: 'tenant-b', source: 'x' });
  m.sourceReady.remove({ namespace: 'tenant-b', source: 'never-seen' });
  const after = (await m.registry.metrics()).split('\n').filter((l) => l.startsWith('migration_controller_sources{'));
  assert.deepEqual(after.sort(), ['migration_controller_sources{namespace="tenant-a",ready="false"} 0', 'migration_controller_sources{namespace="tenant-a",ready="true"} 2']);
});
