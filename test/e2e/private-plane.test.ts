// The tests that need a control plane of their own, on ONE private plane: a plane's start is the dearest
// part of each (tens of CPU seconds with its bootstrap), so they share it. Each depends on nothing another
// did; the ones that restart the API server come last.
// - The handoff lets the PV binder finish from watch events: this plane's binder resyncs every 15 s (the
//   shared planes' every 1 s, which would hide a handoff waiting on it).
// - The controller survives the API server restarting: informers resume (relisting when their
//   resourceVersion is gone), reconciles continue, and no object is duplicated. The shared plane cannot be
//   restarted under other files.
// - The fault proxy behaves as a load balancer does when kube-apiserver restarts behind it: a stream the
//   server broke off is broken off for the client too, so the client's watches resume within seconds
//   instead of sitting on a silent connection until their liveness bound (5–10 min). `npm run chaos`
//   restarts the API server three times behind this proxy; without this, every watch of every replica
//   froze there.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startSim, vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { KubeClient, isAlreadyExists, type KubeObject } from '../../src/runtime/kube.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { ControlPlane, REPO_ROOT, installOurCRDs, kubeConfigFor, loadYamlObjects, waitFor, writeKubeconfig } from './env/index.ts';
import { installStandInCRDs } from './fixtures.ts';
import { Step } from '../../src/controllers/handoff/index.ts';
import { rand, runHandoff, transferredVM } from './handoff-world.ts';
import { startController } from './controller.ts';
import { CONTROLLER_NS, createSource, readyOf, waitForReason } from './source-helpers.ts';
import { NO_FAULTS, startFaultProxy } from './chaos/faultproxy.ts';

let cp: ControlPlane;
let c: KubeClient;

before(async () => {
  // The PV binder's periodic resync at Kubernetes' default, 15 s: the binder test tells a bind completed
  // from watch events (well under a second) from one left to the resync (up to 15 s).
  cp = await ControlPlane.start({ pvSyncPeriod: '15s', quiet: true });
  c = new KubeClient(kubeConfigFor(cp.kubeconfigPath), { fieldManager: 'e2e' });
});

after(async () => {
  c?.close();
  await cp?.stop();
});

async function installCRDs(c: KubeClient): Promise<void> {
  const crds = loadYamlObjects(join(REPO_ROOT, 'crds')).filter((o) => o.kind === 'CustomResourceDefinition') as KubeObject[];
  for (const crd of crds) {
    try {
      await c.create(GVRs.CustomResourceDefinition, crd);
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  }
  for (const crd of crds) {
    await waitFor(`CRD ${crd.metadata?.name} Established`, async () => {
      const got = (await c.get(GVRs.CustomResourceDefinition, undefined, crd.metadata!.name!)) as { status?: { conditions?: Array<{ type: string; status: string }> } } | undefined;
      return got?.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
    });
  }
}

const St = (o: KubeObject | undefined): Record<string, unknown> => ((o?.status ?? {}) as Record<string, unknown>);

test('the handoff lets the PV binder finish from watch events, not its 15 s periodic resync', { timeout: 180_000 }, async () => {
  await installStandInCRDs(c);
  // Ours too, as on any cluster the controller runs on: the handoff reads the task's source (a kind
  // not served is an error, not an absent source).
  await installOurCRDs(kubeConfigFor(cp.kubeconfigPath));
  await waitFor('default ServiceAccount', async () => await c.get({ group: '', version: 'v1', plural: 'serviceaccounts', kind: 'ServiceAccount', namespaced: true }, 'default', 'default'));
  const ns = `bind-${rand()}`;
  await c.create(GVRs.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } as KubeObject);
  // No leftover DataVolume: its orphaning deletion would wait for the garbage collector to discover
  // the just-installed CRD (up to 30 s), which is not what this test measures.
  const w = await transferredVM(c, { disks: [{ size: '1Gi' }], ns, leftoverDataVolume: false });
  let rebindAt = 0;
  let boundAt = 0;
  const r = await runHandoff(c, w, {
    deadlineMs: 120_000,
    onOutcome: async (o) => {
      if (o.disks[0]?.handoff === Step.RebindVolume && !rebindAt) rebindAt = performance.now();
      if (rebindAt && !boundAt) {
        const claim = await c.get(GVRs.PersistentVolumeClaim, ns, `vm-disk-${w.vmName}-disk-0`);
        if (St(claim).phase === 'Bound') boundAt = performance.now();
      }
    },
  });
  assert.equal(r.outcome.state, 'done', r.outcome.message);
  const handoffBind = boundAt - rebindAt;

  // The same rebind without the claim event, for comparison: the binder only gets to it on a resync.
  const w2 = await transferredVM(c, { disks: [{ size: '1Gi' }], ns, leftoverDataVolume: false });
  const pv = w2.pvs[0]!;
  await c.patch(GVRs.PersistentVolume, undefined, pv.name, { spec: { persistentVolumeReclaimPolicy: 'Retain' } });
  const claim = await c.create(GVRs.PersistentVolumeClaim, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: `manual-${rand()}`, namespace: ns },
    spec: { volumeName: pv.name, storageClassName: w2.className, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  } as KubeObject);
  await c.delete(GVRs.PersistentVolumeClaim, ns, w2.transferClaims[0]!);
  await waitFor('PV Released', async () => St(await c.get(GVRs.PersistentVolume, undefined, pv.name)).phase === 'Released');
  const t0 = performance.now();
  await c.patch(GVRs.PersistentVolume, undefined, pv.name, {
    spec: { claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: claim.metadata!.name, uid: claim.metadata!.uid, resourceVersion: null } },
  });
  await waitFor('manual claim Bound', async () => St(await c.get(GVRs.PersistentVolumeClaim, ns, claim.metadata!.name!)).phase === 'Bound', { timeoutMs: 40_000 });
  const resyncBind = performance.now() - t0;
  console.log(`[handoff] bind latency with --pvclaimbinder-sync-period=15s: handoff ${handoffBind.toFixed(0)} ms (claimRef write → claim Bound); the same rebind without the claim event ${resyncBind.toFixed(0)} ms`);
  assert.ok(handoffBind > 0 && handoffBind < 3000, `the handoff's bind completes from events (took ${handoffBind.toFixed(0)} ms)`);
});

test('the controller survives the API server restarting: informers resume and no object is duplicated', async () => {
  const world = vcenter({ url: 'https://vcenter-restart.example.com/sdk' });
  let sim: Awaited<ReturnType<typeof startSim>> | undefined;
  let ctl: Awaited<ReturnType<typeof startController>> | undefined;
  try {
    await installCRDs(c);
    sim = await startSim({ kubeconfigPath: cp.kubeconfigPath, worlds: [world] });
    ctl = await startController({ kubeconfigPath: cp.kubeconfigPath, vddkImage: 'registry.example.com/vddk:8.0.3', inventoryURL: sim.inventory.url });
    await c.create(GVRs.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'restart' } });
    const creds = { username: world.user, password: world.password, caCert: world.caPEM };
    await createSource(c, 'restart', 'before', { type: 'vsphere', url: world.url, credentials: creds });
    await waitForReason(c, 'restart', 'before', 'Connected');

    await cp.restartApiServer();

    // A change made after the restart reaches the controller (its watches resumed)…
    await c.patch(GVRs.VMImportSource, 'restart', 'before', { spec: { credentials: { password: 'wrong' } } });
    await waitForReason(c, 'restart', 'before', 'AuthenticationFailed', 60_000);
    await c.patch(GVRs.VMImportSource, 'restart', 'before', { spec: { credentials: { password: world.password } } });
    await waitForReason(c, 'restart', 'before', 'Connected', 60_000);
    // …and so does a new object.
    await createSource(c, 'restart', 'after', { type: 'vsphere', url: world.url, credentials: creds });
    const after = await waitForReason(c, 'restart', 'after', 'Connected', 60_000);
    assert.equal(readyOf(after)?.status, 'True');

    const providers = (await c.list(GVRs.Provider, 'restart')).items.map((p) => p.metadata!.name!).sort();
    assert.deepEqual(providers, ['vmimport-after', 'vmimport-after-destination', 'vmimport-before', 'vmimport-before-destination']);
    const secrets = (await c.list(GVRs.Secret, CONTROLLER_NS, { labelSelector: 'forklift.cozystack.io/source-namespace=restart' })).items.map((s) => s.metadata!.labels!['forklift.cozystack.io/source']).sort();
    assert.deepEqual(secrets, ['after', 'before']);
    const text = await (await fetch(ctl.metricsURL)).text();
    // The restarted API server's watch cache no longer knows the informers' resourceVersions (410 Gone):
    // they relisted instead of losing events.
    const lists = Number(/^migration_controller_informer_lists_total\{kind="VMImportSource"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    assert.ok(lists >= 2, `the VMImportSource informer relisted after the restart (lists: ${lists})`);
  } finally {
    await ctl?.stop();
    await sim?.stop();
  }
});

test('after kube-apiserver restarts behind the fault proxy, a watch through it resumes and the cache sees new objects within seconds', { timeout: 240_000 }, async () => {
  // Only forwarding: the one fault here is the restart itself.
  const proxy = await startFaultProxy(cp.info.server, cp.info.caPEM, NO_FAULTS);
  const kubeconfig = join(cp.info.dir, 'via-fault-proxy.kubeconfig');
  writeKubeconfig(kubeconfig, proxy.url, proxy.caPEM, cp.info.admin.name, cp.info.admin.token);
  const viaProxy = new KubeClient(kubeConfigFor(kubeconfig), { fieldManager: 'e2e' });
  // The informer's own liveness bound stays at its default (a watch lives 5–10 min): what brings the
  // stream back quickly must be the connection breaking, as it does without a proxy.
  const informer = new Informer(viaProxy, GVRs.ConfigMap, { namespace: 'default', maxBackoffMs: 1_000 });
  const createAndSee = async (name: string, timeoutMs: number): Promise<void> => {
    await c.create(GVRs.ConfigMap, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data: {} });
    await waitFor(`ConfigMap ${name} in the cache fed through the fault proxy`, () => informer.store.get('default', name), { timeoutMs });
  };
  try {
    informer.start();
    await informer.waitForSync();
    await createAndSee('before-restart', 10_000);
    for (let i = 1; i <= 2; i++) {
      await cp.restartApiServer();
      // 30 s: the informer's backoff (capped at 1 s here) and a relist fit many times over; a watch left
      // open on a dead upstream would stay silent for 5 minutes or more.
      await createAndSee(`after-restart-${i}`, 30_000);
    }
    assert.ok((proxy.observed.upstreamAborted ?? 0) > 0, `the restarts broke streams off upstream, and the proxy passed that on (${JSON.stringify(proxy.observed)})`);
  } finally {
    await informer.stop();
    viaProxy.close();
    await proxy.close();
  }
});
