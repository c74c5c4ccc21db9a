// The early (mutating) pass sees an object before the API server's schema validation: what our own rules
// do not read, the CRD's schema (through the typed models) still catches there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeClient } from '../runtime/kube.ts';
import { StaticKeyring } from '../credentials/keyring.ts';
import { PATHS } from './config.ts';
import { createReviewer } from './server.ts';
import { UPSTREAM_NAME_NOTE } from './validate-task.ts';

// The early task path reads nothing from the cluster: a client that throws proves it.
const noCluster = new Proxy({}, { get: () => () => { throw new Error('the early pass must not call the API server'); } }) as unknown as KubeClient;
const reviewer = createReviewer({ client: noCluster, keyring: new StaticKeyring() });

function review(object: unknown): Promise<{ allowed: boolean; message: string; warnings: string[] }> {
  const body = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { uid: 'u1', kind: { group: 'forklift.cozystack.io', version: 'v1alpha1', kind: 'VMImportTask' }, operation: 'CREATE', namespace: 'tenant-a', object },
  };
  return reviewer.review(PATHS.earlyTask, body).then((r) => ({ allowed: r.response!.allowed, message: r.response!.status?.message ?? '', warnings: r.response!.warnings ?? [] }));
}

const task = (vm: Record<string, unknown>): unknown => ({
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportTask',
  metadata: { name: 'web', namespace: 'tenant-a' },
  spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1', ...vm }] },
});

test('the early pass admits a task that matches both our rules and the CRD schema', async () => {
  assert.equal((await review(task({}))).allowed, true);
});

test('the early pass denies a field of the wrong type that our own rules do not read, naming the field and the schema', async () => {
  const r = await review(task({ instanceProfile: 42 }));
  assert.equal(r.allowed, false);
  assert.match(r.message, /spec\.vms\[0\]\.instanceProfile: must be string \(the VMImportTask schema\)/);
});

test('our own rules speak first: their message, not the schema\'s, answers a task naming no VM', async () => {
  const r = await review({ apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'web' }, spec: { sourceRef: { name: 'vc' }, vms: [] } });
  assert.equal(r.allowed, false);
  assert.doesNotMatch(r.message, /the VMImportTask schema/);
});

test("a denial of the early pass carries its warnings: a name Cozystack's own controller admits is refused saying so", async () => {
  const r = await review(task({ name: '1web' }));
  assert.equal(r.allowed, false);
  assert.match(r.message, /is not a DNS-1035 label/);
  assert.deepEqual(r.warnings, [`spec.vms[0].name: ${UPSTREAM_NAME_NOTE}`]);
});
