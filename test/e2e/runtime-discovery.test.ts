// Discovery against the real API server and a real aggregated API server: an APIService registered after
// the controller started (cozystack-api coming up late) is picked up without a restart, and withdrawn when
// its APIService goes; CustomResourceDefinitions are cached only for the kinds tracked, without schema.
// Runs on a PRIVATE control plane: the aggregator must reach the test's own server through Endpoints
// (--enable-aggregator-routing), which the shared planes do not enable.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { networkInterfaces } from 'node:os';
import type { AddressInfo } from 'node:net';
import { ControlPlane, kubeConfigFor, waitFor } from './env/index.ts';
import { KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import { Discovery } from '../../src/runtime/discovery.ts';
import { GVRs, type GVR } from '../../src/runtime/gvr.ts';
import { makeCA, makeServingCert } from '../sim/certs.ts';

const GROUP = 'late.e2e.example.com';
const LATE: GVR = { group: GROUP, version: 'v1alpha1', plural: 'widgets', kind: 'Widget', namespaced: true, optional: true, aggregated: true };
const BY_CRD: GVR = { group: 'crd.e2e.example.com', version: 'v1', plural: 'gadgets', kind: 'Gadget', namespaced: true, optional: true };
const NS = 'default';
const SVC = 'late-aggregated';

const APISERVICE: GVR = GVRs.APIService;
const SERVICE: GVR = { group: '', version: 'v1', plural: 'services', kind: 'Service', namespaced: true };
const ENDPOINTS: GVR = { group: '', version: 'v1', plural: 'endpoints', kind: 'Endpoints', namespaced: true };

let cp: ControlPlane;
let admin: KubeClient;
let server: https.Server;
let discovery: Discovery;
const seen: Array<{ gvr: string; installed: boolean }> = [];

function hostIP(): string {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  throw new Error('no non-loopback IPv4 address on this machine');
}

before(async () => {
  cp = await ControlPlane.start({ serviceRoutingByTest: true, auditLog: false, quiet: true });
  admin = new KubeClient(kubeConfigFor(cp.info.admin.kubeconfigPath), { fieldManager: 'e2e' });
  // The aggregated server: its group version's discovery document, as an aggregated API server serves it
  // (k8s.io/apiserver's APIResourceList), and an empty list for anything else it is asked.
  const ca = makeCA('late aggregated CA');
  const cert = makeServingCert(ca, `${SVC}.${NS}.svc`, { dns: [`${SVC}.${NS}.svc`], ips: [hostIP()] });
  server = https.createServer({ key: cert.keyPEM, cert: cert.certPEM }, (req, res) => {
    res.setHeader('Content-Type', 'application/json');
    if (req.url?.split('?')[0] === `/apis/${GROUP}/v1alpha1`) {
      res.end(JSON.stringify({ kind: 'APIResourceList', apiVersion: 'v1', groupVersion: `${GROUP}/v1alpha1`, resources: [{ name: 'widgets', singularName: 'widget', namespaced: true, kind: 'Widget', verbs: ['get', 'list', 'watch'] }] }));
    } else if (req.url?.split('?')[0] === `/apis/${GROUP}`) {
      res.end(JSON.stringify({ kind: 'APIGroup', apiVersion: 'v1', name: GROUP, versions: [{ groupVersion: `${GROUP}/v1alpha1`, version: 'v1alpha1' }], preferredVersion: { groupVersion: `${GROUP}/v1alpha1`, version: 'v1alpha1' } }));
    } else {
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Success' }));
    }
  });
  await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
  discovery = new Discovery(admin);
  discovery.onChange((gvr, installed) => seen.push({ gvr: gvr.kind, installed }));
  discovery.track(LATE);
  discovery.track(BY_CRD);
  await discovery.start();
  await discovery.waitForSync();
});

after(async () => {
  await discovery?.stop();
  admin?.close();
  await new Promise((r) => server?.close(r));
  await cp?.stop();
});

test('an aggregated API registered after start is discovered when its APIService becomes Available, without a restart, and withdrawn when it is deleted', async () => {
  assert.equal(discovery.installed(LATE), false, 'not served at start');
  const port = (server.address() as AddressInfo).port;
  await admin.create(SERVICE, { apiVersion: 'v1', kind: 'Service', metadata: { name: SVC, namespace: NS }, spec: { ports: [{ port: 443, targetPort: port }] } } as KubeObject);
  await admin.create(ENDPOINTS, { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: SVC, namespace: NS }, subsets: [{ addresses: [{ ip: hostIP() }], ports: [{ port }] }] } as KubeObject);
  await admin.create(APISERVICE, {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: { name: `v1alpha1.${GROUP}` },
    spec: { group: GROUP, version: 'v1alpha1', service: { namespace: NS, name: SVC, port: 443 }, insecureSkipTLSVerify: true, groupPriorityMinimum: 1000, versionPriority: 15 },
  } as KubeObject);
  let last: unknown;
  await waitFor('the late aggregated kind to be discovered', async () => {
    last = (await admin.get(APISERVICE, undefined, `v1alpha1.${GROUP}`))?.status;
    return discovery.installed(LATE);
  }, { timeoutMs: 60_000 }).catch(async (e: Error) => {
    const doc = await admin.request('GET', `/apis/${GROUP}/v1alpha1`).catch((x: Error) => x.message);
    throw new Error(`${e.message}; the APIService's status: ${JSON.stringify(last)}; its document: ${JSON.stringify(doc)}; APIServices held: ${JSON.stringify(discovery.apiServices.store.list().map((o) => o.metadata?.name))} synced ${discovery.apiServices.hasSynced()} lists ${discovery.apiServices.lists}`);
  });
  assert.deepEqual(seen.filter((s) => s.gvr === 'Widget'), [{ gvr: 'Widget', installed: true }]);
  await admin.delete(APISERVICE, undefined, `v1alpha1.${GROUP}`);
  await waitFor('the kind to be withdrawn with its APIService', () => !discovery.installed(LATE), { timeoutMs: 60_000 });
});

test('the CRD cache holds only the tracked kinds, without their schemas', async () => {
  const schema = { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, description: 'x'.repeat(20_000) } };
  const crd = (plural: string, group: string): KubeObject => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: { group, scope: 'Namespaced', names: { plural, singular: plural.slice(0, -1), kind: plural[0]!.toUpperCase() + plural.slice(1, -1) }, versions: [{ name: 'v1', served: true, storage: true, schema }] },
  });
  await admin.create(GVRs.CustomResourceDefinition, crd('untracked', 'crd.e2e.example.com'));
  await admin.create(GVRs.CustomResourceDefinition, crd('gadgets', 'crd.e2e.example.com'));
  await waitFor('the tracked CRD kind to be discovered once Established', () => discovery.installed(BY_CRD), { timeoutMs: 30_000 });
  const held = discovery.crds.store.list().map((o) => o.metadata?.name);
  assert.deepEqual(held, ['gadgets.crd.e2e.example.com'], 'only the tracked CRD is held');
  const size = JSON.stringify(discovery.crds.store.list()).length;
  assert.ok(size < 1_000, `what is held is a few fields (${size} bytes), not the 20 KB schema`);
});
