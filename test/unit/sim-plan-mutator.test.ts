// The simulator's Plan mutator against what kubev2v/forklift's plan-mutator.go does (v2.11.5 and v2.12.5):
// json.Marshal of api.PlanSpec drops each omitempty field at its zero value, then the CRD defaults apply.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { goMarshalPlanSpec, transferNetworkRef } from '../sim/plan-mutator.ts';

test('the Go-marshalled Plan spec loses every explicit false and empty value, and keeps the fields PlanSpec always writes', () => {
  const written = {
    targetNamespace: 'tenant-a',
    provider: { source: { name: 'src', namespace: 'tenant-a' }, destination: { name: 'dst', namespace: 'tenant-a' } },
    map: { network: { name: 'nm', namespace: 'tenant-a' }, storage: { name: 'sm', namespace: 'tenant-a' } },
    vms: [{ id: 'vm-1' }],
    type: 'cold',
    warm: false,
    skipGuestConversion: true,
    targetPowerState: 'off',
    deleteVmOnFailMigration: false,
    preserveStaticIPs: false,
    migrateSharedDisks: true,
    useCompatibilityMode: true,
    runPreflightInspection: false,
    description: '',
  };
  assert.deepEqual(goMarshalPlanSpec(written), {
    targetNamespace: 'tenant-a',
    provider: written.provider,
    map: written.map,
    vms: [{ id: 'vm-1' }],
    type: 'cold',
    skipGuestConversion: true,
    targetPowerState: 'off',
    migrateSharedDisks: true,
    useCompatibilityMode: true,
  });
  assert.deepEqual(goMarshalPlanSpec({ targetNamespace: '', vms: [] }), { targetNamespace: '', vms: [] }, 'no omitempty on these');
});

test('the annotation names the attachment as namespace/name, or by name in the Plan\'s target namespace', () => {
  assert.deepEqual(transferNetworkRef('infra/transfer', 'tenant-a'), { namespace: 'infra', name: 'transfer' });
  assert.deepEqual(transferNetworkRef('transfer', 'tenant-a'), { namespace: 'tenant-a', name: 'transfer' });
});
