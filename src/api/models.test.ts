import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VMImportSourceModel, VMImportTaskModel, isVMImportTask, sourceSchemaProblems, taskSchemaProblems } from './models.ts';

const task = (spec: unknown): Record<string, unknown> => ({ apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 't', namespace: 'n' }, spec });

test('a task model fills apiVersion and kind, and a valid one passes the CRD schema', () => {
  const m = new VMImportTaskModel({ metadata: { name: 'web', namespace: 'tenant-a' }, spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1' }] } });
  assert.equal(m.toJSON() && (m.toJSON() as { apiVersion: string }).apiVersion, 'forklift.cozystack.io/v1alpha1');
  assert.ok(isVMImportTask(m.toJSON()));
  m.validate();
});

test('a task model missing its source reference fails validation, naming the field', () => {
  const m = new VMImportTaskModel({ metadata: { name: 'web' }, spec: { vms: [{ id: 'vm-1' }] } as never });
  assert.throws(() => m.validate(), /sourceRef/);
});

test('schema problems name each field by its path, every one at once', () => {
  const problems = taskSchemaProblems(task({ sourceRef: { name: 5 }, vms: [{ id: 7 }] }));
  assert.ok(problems.includes('spec.sourceRef.name: must be string'), problems.join('\n'));
  assert.ok(problems.includes('spec.vms[0].id: must be string'), problems.join('\n'));
  assert.deepEqual(taskSchemaProblems(task(undefined)), ['spec: required']);
});

test('a value outside an enum lists the allowed values', () => {
  const problems = taskSchemaProblems(task({ sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1' }], networks: [{ source: 'n', type: 'bridge' }] }));
  assert.ok(problems.some((p) => p.startsWith('spec.networks[0].type: must be equal to one of the allowed values: "pod", "multus"')), problems.join('\n'));
});

test('a source without its vCenter URL does not match the schema; metadata is left to the API server', () => {
  const problems = sourceSchemaProblems({ apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name: 'vc', anything: 1 }, spec: {} });
  assert.ok(problems.length > 0);
  assert.ok(problems.every((p) => p.startsWith('spec')), problems.join('\n'));
  assert.ok(new VMImportSourceModel({ metadata: { name: 'x' } } as never));
});
