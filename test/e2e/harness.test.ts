// The local control plane is real: CRDs, status, kubectl wait, the PV binder, garbage collection, RBAC,
// and no process outlives the run that started it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { KubeClient } from '../../src/runtime/kube.ts';
import { GVRs, type GVR } from '../../src/runtime/gvr.ts';
import { adminKubeConfig, applyObjects, bindTenant, freshNamespace, kubeConfigFor, kubectl, testEnv, waitFor, REPO_ROOT } from './env/index.ts';
import { alive } from './fixtures.ts';

const POD: GVR = { group: '', version: 'v1', plural: 'pods', kind: 'Pod', namespaced: true };
const WIDGET: GVR = { group: 'harness.e2e.test', version: 'v1', plural: 'widgets', kind: 'Widget', namespaced: true };

const widgetCRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.harness.e2e.test' },
  spec: {
    group: 'harness.e2e.test',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', properties: { size: { type: 'integer' }, extra: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
              status: {
                type: 'object',
                properties: {
                  conditions: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['type', 'status'],
                      properties: { type: { type: 'string' }, status: { type: 'string' }, reason: { type: 'string' }, message: { type: 'string' }, lastTransitionTime: { type: 'string' } },
                    },
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
};

async function admin(): Promise<KubeClient> {
  return new KubeClient(await adminKubeConfig(), { fieldManager: 'e2e-harness' });
}

test('a CRD installs verbatim, an object gets Ready=True through the status subresource, and kubectl wait returns', async () => {
  const ns = await freshNamespace('harness');
  await applyObjects([widgetCRD]);
  const c = await admin();
  await c.create(WIDGET, { apiVersion: 'harness.e2e.test/v1', kind: 'Widget', metadata: { name: 'w1', namespace: ns }, spec: { size: 3, extra: { anything: { nested: true } } } });
  const waiting = kubectl(['-n', ns, 'wait', '--for=condition=Ready', 'widget/w1', '--timeout=30s']);
  await c.patch(WIDGET, ns, 'w1', { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Done', message: 'ok', lastTransitionTime: new Date().toISOString() }] } }, 'merge', { subresource: 'status' });
  const r = await waiting;
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /condition met/);
  // the spec is untouched by the status write
  const got = await c.get<{ spec: { size: number; extra: unknown } }>(WIDGET, ns, 'w1');
  assert.equal(got?.spec.size, 3);
  // the CRD was applied verbatim: x-kubernetes-preserve-unknown-fields kept what the schema does not name
  assert.deepEqual(got?.spec.extra, { anything: { nested: true } });
});

test('a claim binds to a pre-created volume through the real PV binder, and rebinds to another volume when claimRef is rewritten', async () => {
  const ns = await freshNamespace('harness');
  const c = await admin();
  const cls = `harness-${ns}`;
  await c.create(GVRs.StorageClass, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'Immediate', reclaimPolicy: 'Retain' });
  const pv = (name: string): Record<string, unknown> => ({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, labels: { harness: ns } },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: cls, persistentVolumeReclaimPolicy: 'Retain', hostPath: { path: `/tmp/${name}` } },
  });
  await c.create(GVRs.PersistentVolume, pv(`${ns}-a`));
  await c.create(GVRs.PersistentVolume, pv(`${ns}-b`));
  await c.create(GVRs.PersistentVolumeClaim, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'data', namespace: ns },
    spec: { accessModes: ['ReadWriteOnce'], storageClassName: cls, volumeName: `${ns}-a`, resources: { requests: { storage: '1Gi' } } },
  });
  type PVC = { status?: { phase?: string }; spec: { volumeName?: string }; metadata: { uid: string } };
  type PV = { status?: { phase?: string }; spec: { claimRef?: { name: string; uid?: string } } };
  await waitFor('claim Bound to volume a', async () => (await c.get<PVC>(GVRs.PersistentVolumeClaim, ns, 'data'))?.status?.phase === 'Bound');

  // Move the data to a new claim on the same volume: the handoff's mechanism.
  const moved = await c.create<PVC>(GVRs.PersistentVolumeClaim, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'moved', namespace: ns },
    spec: { accessModes: ['ReadWriteOnce'], storageClassName: cls, volumeName: `${ns}-a`, resources: { requests: { storage: '1Gi' } } },
  });
  await c.delete(GVRs.PersistentVolumeClaim, ns, 'data');
  await waitFor('old claim gone', async () => !(await c.get(GVRs.PersistentVolumeClaim, ns, 'data')));
  await c.patch(GVRs.PersistentVolume, undefined, `${ns}-a`, { spec: { claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: 'moved', uid: moved.metadata.uid } } });
  await waitFor('moved claim Bound to volume a', async () => {
    const pvc = await c.get<PVC>(GVRs.PersistentVolumeClaim, ns, 'moved');
    const v = await c.get<PV>(GVRs.PersistentVolume, undefined, `${ns}-a`);
    return pvc?.status?.phase === 'Bound' && pvc.spec.volumeName === `${ns}-a` && v?.status?.phase === 'Bound' && v.spec.claimRef?.uid === moved.metadata.uid;
  });
  // volume b was never touched
  const b = await c.get<PV>(GVRs.PersistentVolume, undefined, `${ns}-b`);
  assert.equal(b?.status?.phase, 'Available');
  for (const n of ['a', 'b']) await c.delete(GVRs.PersistentVolume, undefined, `${ns}-${n}`);
  await c.delete(GVRs.StorageClass, undefined, cls);
});

test('deleting an owner garbage-collects its dependent', async () => {
  const ns = await freshNamespace('harness');
  const c = await admin();
  const owner = await c.create(GVRs.ConfigMap, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owner', namespace: ns }, data: {} });
  await c.create(GVRs.ConfigMap, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'dependent', namespace: ns, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata!.uid! }] },
    data: {},
  });
  await c.delete(GVRs.ConfigMap, ns, 'owner');
  await waitFor('dependent garbage-collected', async () => !(await c.get(GVRs.ConfigMap, ns, 'dependent')));
});

test("a tenant identity holding Cozystack's tenant-admin role in its namespace is forbidden to read another tenant's namespace", async () => {
  const env = await testEnv();
  const [a, b] = env.tenants;
  assert.ok(a && b);
  const nsA = await freshNamespace('tenant');
  const nsB = await freshNamespace('tenant');
  await bindTenant(nsA, { access: 'admin', tenant: 0 });
  await bindTenant(nsB, { access: 'admin', tenant: 1 });
  const c = await admin();
  await c.create(POD, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'private', namespace: nsB }, spec: { containers: [{ name: 'c', image: 'example.invalid/none' }] } });
  const tenantA = new KubeClient(kubeConfigFor(a.kubeconfigPath));
  // cozy:tenant:view (inside admin) grants pods get/list: tenant-a reads its own namespace…
  assert.deepEqual((await tenantA.list(POD, nsA)).items, []);
  // …and nothing of tenant-b's, which tenant-b itself reads.
  await assert.rejects(tenantA.get(POD, nsB, 'private'), (e: { code?: number }) => e.code === 403);
  const r = await kubectl(['-n', nsB, 'get', 'pods'], { kubeconfig: a.kubeconfigPath });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /forbidden/i);
  const own = await kubectl(['-n', nsB, 'get', 'pods', '-o', 'name'], { kubeconfig: b.kubeconfigPath });
  assert.equal(own.stdout.trim(), 'pod/private', own.stderr);
  tenantA.close();
});

test("Cozystack's tenant roles are installed and aggregate as on the platform: view reads, admin writes, neither reaches ConfigMaps, Secrets or claims", async () => {
  const env = await testEnv();
  const ns = await freshNamespace('tenant');
  const kc = await bindTenant(ns, { access: 'view', tenant: 1 });
  const can = async (verb: string, what: string) => (await kubectl(['auth', 'can-i', verb, what, '-n', ns], { kubeconfig: kc })).stdout.trim();
  assert.equal(await can('list', 'vmimportsources.forklift.cozystack.io'), 'yes');
  assert.equal(await can('get', 'vmdisks.apps.cozystack.io'), 'yes');
  assert.equal(await can('create', 'vmimporttasks.forklift.cozystack.io'), 'no');
  await bindTenant(ns, { access: 'admin', tenant: 1 });
  assert.equal(await can('create', 'vmimporttasks.forklift.cozystack.io'), 'yes');
  assert.equal(await can('delete', 'vmdisks.apps.cozystack.io'), 'yes');
  for (const [verb, what] of [['get', 'configmaps'], ['get', 'secrets'], ['list', 'persistentvolumeclaims'], ['list', 'datavolumes.cdi.kubevirt.io'], ['list', 'plans.forklift.konveyor.io']]) {
    assert.equal(await can(verb!, what!), 'no', `a tenant admin may ${verb} ${what}`);
  }
  // A RoleBinding grants nothing cluster-scoped, though the role names persistentvolumes.
  const pv = await kubectl(['auth', 'can-i', 'list', 'persistentvolumes'], { kubeconfig: kc });
  assert.equal(pv.stdout.trim(), 'no');
  assert.ok(env.tenants[1]);
});

test('no etcd or kube-* process outlives the run that started it, whether it ends by SIGTERM or SIGKILL', async () => {
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'test/e2e/env/standalone.ts')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8');
    child.stderr!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => (out += d));
    child.stderr!.on('data', (d: string) => (err += d));
    const exited = new Promise((r) => child.once('exit', r));
    try {
      const pids = await waitFor(
        'the standalone control plane to report its pids',
        () => {
          // A standalone that failed to start has exited: say why at once instead of waiting out the deadline.
          if (child.exitCode !== null) throw new Error(`the standalone control plane exited with ${child.exitCode}: ${err.slice(-2000)}`);
          const line = out.split('\n').find((l) => l.startsWith('PIDS '));
          return line ? (JSON.parse(line.slice(5)) as Record<string, number>) : undefined;
        },
        // Its own start deadline is 60 s; on a loaded machine the three components may need most of it.
        { timeoutMs: 90_000 },
      );
      assert.deepEqual(Object.keys(pids).sort(), ['etcd', 'kube-apiserver', 'kube-controller-manager']);
      child.kill(signal);
      await exited;
      await waitFor(`every component gone after ${signal}`, () => Object.values(pids).every((pid) => !alive(pid)), { timeoutMs: 20_000 });
    } finally {
      // On any failure above, the standalone must not outlive this test (it would hold the file open).
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    }
  }
});
