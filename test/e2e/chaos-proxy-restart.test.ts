// The fault proxy behaves as a load balancer does when kube-apiserver restarts behind it: a stream the
// server broke off is broken off for the client too, so the client's watches resume within seconds instead
// of sitting on a silent connection until their liveness bound (5–10 min). `npm run chaos` restarts the API
// server three times behind this proxy; without this, every watch of every replica froze there.
// Runs on a PRIVATE control plane, since the shared one cannot be restarted under other files.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ControlPlane, kubeConfigFor, waitFor, writeKubeconfig } from './env/index.ts';
import { KubeClient } from '../../src/runtime/kube.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { NO_FAULTS, startFaultProxy, type FaultProxy } from './chaos/faultproxy.ts';

let cp: ControlPlane;
let proxy: FaultProxy;
let viaProxy: KubeClient;
let admin: KubeClient;
let informer: Informer;

before(async () => {
  cp = await ControlPlane.start({ auditLog: false, quiet: true });
  // Only forwarding: the one fault here is the restart itself.
  proxy = await startFaultProxy(cp.info.server, cp.info.caPEM, NO_FAULTS);
  const kubeconfig = join(cp.info.dir, 'via-fault-proxy.kubeconfig');
  writeKubeconfig(kubeconfig, proxy.url, proxy.caPEM, cp.info.admin.name, cp.info.admin.token);
  viaProxy = new KubeClient(kubeConfigFor(kubeconfig), { fieldManager: 'e2e' });
  admin = new KubeClient(kubeConfigFor(cp.info.admin.kubeconfigPath), { fieldManager: 'e2e' });
  // The informer's own liveness bound stays at its default (a watch lives 5–10 min): what brings the
  // stream back quickly must be the connection breaking, as it does without a proxy.
  informer = new Informer(viaProxy, GVRs.ConfigMap, { namespace: 'default', maxBackoffMs: 1_000 });
  informer.start();
  await informer.waitForSync();
});

after(async () => {
  await informer?.stop();
  viaProxy?.close();
  admin?.close();
  await proxy?.close();
  await cp?.stop();
});

async function createAndSee(name: string, timeoutMs: number): Promise<void> {
  await admin.create(GVRs.ConfigMap, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data: {} });
  await waitFor(`ConfigMap ${name} in the cache fed through the fault proxy`, () => informer.store.get('default', name), { timeoutMs });
}

test('after kube-apiserver restarts behind the fault proxy, a watch through it resumes and the cache sees new objects within seconds', { timeout: 240_000 }, async () => {
  await createAndSee('before-restart', 10_000);
  for (let i = 1; i <= 2; i++) {
    await cp.restartApiServer();
    // 30 s: the informer's backoff (capped at 1 s here) and a relist fit many times over; a watch left
    // open on a dead upstream would stay silent for 5 minutes or more.
    await createAndSee(`after-restart-${i}`, 30_000);
  }
  assert.ok((proxy.observed.upstreamAborted ?? 0) > 0, `the restarts broke streams off upstream, and the proxy passed that on (${JSON.stringify(proxy.observed)})`);
});
