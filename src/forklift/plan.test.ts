import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { VMImportTask } from '../api/types.ts';
import { planDrift, planDriftMessage, preserveStaticIPsFor, readPlanVerdict, renderPlan } from './plan.ts';
import { renderMigration } from './migration.ts';

const task: VMImportTask = {
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportTask',
  metadata: { name: 'web', namespace: 'tenant-a', uid: 'uid-1' },
  spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1' }] },
};
const p = (n: string) => ({ name: n, namespace: 'tenant-a' });

test('a Plan is cold raw copy, off, keeps failed disks and writes every default-true boolean explicitly', () => {
  const plan = renderPlan({ task, vmId: 'vm-1', providers: { source: p('src'), destination: p('dst') }, networkMap: p('nm'), storageMap: p('sm') });
  const spec = JSON.parse(JSON.stringify(plan.spec)) as Record<string, unknown>;
  assert.equal(spec.type, 'cold');
  assert.equal(spec.skipGuestConversion, true);
  assert.equal(spec.targetPowerState, 'off');
  assert.equal(spec.targetNamespace, 'tenant-a');
  assert.equal(spec.deleteVmOnFailMigration, false);
  for (const k of ['preserveStaticIPs', 'migrateSharedDisks', 'useCompatibilityMode', 'runPreflightInspection']) assert.equal(typeof spec[k], 'boolean', k);
  assert.deepEqual(spec.map, { network: p('nm'), storage: p('sm') });
  assert.deepEqual(spec.provider, { source: p('src'), destination: p('dst') });
  assert.deepEqual(spec.vms, [{ id: 'vm-1' }]);
  assert.equal(plan.metadata?.labels?.['forklift.cozystack.io/vm-id'], 'vm-1');
  assert.equal(plan.metadata?.ownerReferences?.[0]?.uid, 'uid-1');
});

test('a task asking for guest conversion gets a Plan that converts (virt-v2v), keeps static IPs and uses virtio; the raw copy keeps compatibility devices', () => {
  const args = { vmId: 'vm-1', providers: { source: p('src'), destination: p('dst') }, networkMap: p('nm'), storageMap: p('sm') };
  const conv = renderPlan({ ...args, task: { ...task, spec: { ...task.spec, guestConversion: true } } }).spec as Record<string, unknown>;
  const raw = renderPlan({ ...args, task: { ...task, spec: { ...task.spec, guestConversion: false } } }).spec as Record<string, unknown>;
  const absent = renderPlan({ ...args, task }).spec as Record<string, unknown>;
  assert.deepEqual([conv.skipGuestConversion, conv.preserveStaticIPs, conv.useCompatibilityMode], [false, false, false]);
  assert.deepEqual([raw.skipGuestConversion, raw.preserveStaticIPs, raw.useCompatibilityMode], [true, false, true]);
  assert.deepEqual(absent, raw);
  // Everything else is the same plan: cold, off, failed disks kept, shared disks migrated (so Forklift's
  // cold vSphere plan takes the virt-v2v transfer path), no preflight inspection.
  const rest = (s: Record<string, unknown>) => ({ ...s, skipGuestConversion: undefined, useCompatibilityMode: undefined });
  assert.deepEqual(rest(conv), rest(raw));
  assert.deepEqual([conv.type, conv.warm, conv.targetPowerState, conv.deleteVmOnFailMigration, conv.migrateSharedDisks, conv.runPreflightInspection], ['cold', false, 'off', false, true, false]);
});

test('a Migration is owned by its Plan and names it with its uid', () => {
  const m = renderMigration(task, 'vm-1', { metadata: { name: 'plan-x', namespace: 'tenant-a', uid: 'plan-uid' } });
  assert.deepEqual(m.spec, { plan: { name: 'plan-x', namespace: 'tenant-a', uid: 'plan-uid' } });
  assert.equal(m.metadata?.ownerReferences?.[0]?.kind, 'Plan');
  assert.equal(m.metadata?.ownerReferences?.[0]?.uid, 'plan-uid');
});

test('Critical and Error conditions block the Plan with message and items verbatim; Advisory ones are read too', () => {
  const v = readPlanVerdict({
    status: {
      conditions: [
        { type: 'VMNotFound', status: 'True', category: 'Critical', message: 'VM not found.', items: ['id=vm-9'] },
        { type: 'ValidatingVDDK', status: 'True', category: 'Advisory', message: 'Validating' },
        { type: 'Failed', status: 'True', category: 'Advisory' },
      ],
    },
  });
  assert.equal(v.ready, false);
  assert.equal(v.blockers.length, 1);
  assert.equal(v.message, 'VMNotFound: VM not found. [id=vm-9]');
  assert.equal(v.failed, true);
  assert.equal(v.succeeded, false);
  const ok = readPlanVerdict({ status: { conditions: [{ type: 'Ready', status: 'True', category: 'Required' }, { type: 'Executing', status: 'True', category: 'Advisory' }] } });
  assert.equal(ok.ready, true);
  assert.equal(ok.executing, true);
  assert.equal(ok.blockers.length, 0);
});

test('the Plan as stored is checked against the Plan as rendered: a false the mutator dropped and the CRD defaulted true is named', () => {
  const rendered = { apiVersion: 'v', kind: 'Plan', metadata: {}, spec: { deleteVmOnFailMigration: false, preserveStaticIPs: false, vms: [{ id: 'vm-1' }], map: { network: { name: 'n' } } } };
  const same = structuredClone(rendered) as typeof rendered & { spec: Record<string, unknown> };
  same.spec.transferNetwork = { name: 'added', namespace: 'x' };
  (same.spec.vms[0] as Record<string, unknown>).name = 'filled-in';
  assert.deepEqual(planDrift(rendered, same), [], 'fields Forklift or the API server added do not count');
  // plan-mutator.go patchPayload: a Go-marshalled spec without false values, then the CRD defaults.
  const mutated = { ...rendered, spec: { deleteVmOnFailMigration: true, preserveStaticIPs: true, vms: [{ id: 'vm-1' }], map: { network: { name: 'n' } }, transferNetwork: { name: 'tn' } } };
  const drift = planDrift(rendered, mutated);
  assert.deepEqual(drift, ['spec.deleteVmOnFailMigration', 'spec.preserveStaticIPs']);
  const m = planDriftMessage(drift, rendered, mutated);
  assert.match(m, /spec\.deleteVmOnFailMigration: written false, stored true/);
  assert.match(m, /defaultTransferNetwork/);
  assert.deepEqual(planDrift(rendered, { ...rendered, spec: { ...rendered.spec, vms: [] } }), ['spec.vms.0', 'spec.vms.length']);
  assert.deepEqual(planDrift(rendered, undefined), ['spec']);
});

test('static IPs are kept only with guest conversion and every network on Multus: on the pod network the guest would keep an address it cannot use', () => {
  const nm = (...types: string[]) => ({ apiVersion: 'v', kind: 'NetworkMap', metadata: {}, spec: { map: types.map((type, i) => ({ source: { id: `network-${i}` }, destination: { type } })) } });
  assert.equal(preserveStaticIPsFor(true, nm('multus', 'multus')), true);
  assert.equal(preserveStaticIPsFor(true, nm('multus', 'pod')), false);
  assert.equal(preserveStaticIPsFor(true, nm('pod')), false, 'the default: NICs on the pod network');
  assert.equal(preserveStaticIPsFor(false, nm('multus')), false, 'a raw copy never writes into the guest');
  assert.equal(preserveStaticIPsFor(true, undefined), false);
  assert.equal(preserveStaticIPsFor(true, nm()), false);
});

test("the task's spec.preserveStaticIPs decides the Plan's when it converts; absent, the Multus rule does; a raw copy never keeps them", () => {
  const args = { vmId: 'vm-1', providers: { source: p('src'), destination: p('dst') }, networkMap: p('nm'), storageMap: p('sm') };
  const kept = (spec: Partial<VMImportTask['spec']>, rule: boolean) => (renderPlan({ ...args, task: { ...task, spec: { ...task.spec, ...spec } }, staticIPs: rule }).spec as Record<string, unknown>).preserveStaticIPs;
  assert.equal(kept({ guestConversion: true }, true), true, 'every NIC on Multus');
  assert.equal(kept({ guestConversion: true }, false), false, 'a NIC on the pod network');
  assert.equal(kept({ guestConversion: true, preserveStaticIPs: true }, false), true, 'the task keeps them on the pod network too');
  assert.equal(kept({ guestConversion: true, preserveStaticIPs: false }, true), false, 'the task lets the guests take new addresses on Multus too');
  assert.equal(kept({ guestConversion: false, preserveStaticIPs: true }, true), false);
  assert.equal(kept({ preserveStaticIPs: true }, true), false);
});
