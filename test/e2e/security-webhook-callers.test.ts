// The webhook's answers reveal nothing about a namespace to a user who cannot read it: a forged
// AdmissionReview naming another tenant's namespace gets the structural verdict only (real API server
// for the SubjectAccessReviews).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import { StaticKeyring } from '../../src/credentials/keyring.ts';
import { createReviewer } from '../../src/webhook/server.ts';
import { freshNamespace, installOurCRDs, testEnv } from './env/index.ts';
import { adminClient } from './source-helpers.ts';

let c: KubeClient;
let victim: string;

before(async () => {
  await installOurCRDs();
  c = await adminClient();
  victim = await freshNamespace('victim');
  await c.create(GVRs.VMImportSource, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name: 'vc', namespace: victim }, spec: { type: 'vsphere', url: 'https://vcenter.victim.example/sdk', credentials: { username: 'u@vsphere.local', password: 'p', insecureSkipVerify: true } } } as KubeObject);
  await c.patch(GVRs.VMImportSource, victim, 'vc', { status: { conditions: [{ type: 'Ready', status: 'False', reason: 'AuthenticationFailed', message: 'victim-secret-detail', lastTransitionTime: new Date().toISOString() }] } }, 'merge', { subresource: 'status' });
});

after(() => c?.close());

function review(username: string, groups: string[]) {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'forged-1',
      kind: { group: 'forklift.cozystack.io', version: 'v1alpha1', kind: 'VMImportTask' },
      namespace: victim,
      operation: 'CREATE',
      userInfo: { username, groups },
      object: { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 't', namespace: victim }, spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1' }] } },
    },
  };
}

test("a review naming another tenant's namespace, for a user who cannot read it, carries none of that namespace's facts", async () => {
  const reviewer = createReviewer({ client: c, keyring: new StaticKeyring() });
  const tenant = (await testEnv()).tenants[0]!.name;
  const forged = JSON.stringify(await reviewer.review('/validate-vmimporttask', review(tenant, ['tenants', 'system:authenticated'])));
  assert.ok(!forged.includes('victim-secret-detail') && !forged.includes('AuthenticationFailed'), forged);
  assert.match(forged, /the checks against the cluster were skipped: the requesting user may not read VMImportSources in this namespace/);
  // The same review for a user who may read the namespace gets the facts (the test is not vacuous).
  const admin = JSON.stringify(await reviewer.review('/validate-vmimporttask', review('admin', ['system:masters'])));
  assert.match(admin, /victim-secret-detail/);
});
