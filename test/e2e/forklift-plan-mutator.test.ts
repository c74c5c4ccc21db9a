// Forklift's Plan mutator (test/sim/plan-mutator.ts; the same code at v2.11.5 and v2.12.5): when the
// destination Provider carries forklift.konveyor.io/defaultTransferNetwork naming an attachment that exists,
// it replaces the Plan's spec with a Go-marshalled copy without its false values, and the CRD's defaults
// turn deleteVmOnFailMigration (a failed VM's disks deleted), useCompatibilityMode and preserveStaticIPs
// true. The controller removes the annotation from its destination Provider, but a platform's policy engine
// may put it back on every write; then the Plan-drift check must hold the VM before any Migration runs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { FORKLIFT_VERSIONS, vcenter } from '../sim/index.ts';
import { makeCA, makeServingCert } from '../sim/certs.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { GVR } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-mutator.example.com/sdk';
const world = vcenter({ url: URL_VC, hosts: [{ id: 'host-1', address: '192.0.2.10' }], vms: [{ id: 'vm-1', name: 'web01', disks: [{ capacityGiB: 1 }] }] });
const ANNOTATION = 'forklift.konveyor.io/defaultTransferNetwork';
const POLICY_LABEL = `mc-e2e-transfer-network-policy-${process.pid}`;
const MutatingWebhookConfiguration: GVR = { group: 'admissionregistration.k8s.io', version: 'v1', plural: 'mutatingwebhookconfigurations', kind: 'MutatingWebhookConfiguration', namespaced: false };
const NetworkAttachmentDefinition: GVR = { group: 'k8s.cni.cncf.io', version: 'v1', plural: 'network-attachment-definitions', kind: 'NetworkAttachmentDefinition', namespaced: true };

/**
 * A platform policy (a policy engine's mutating rule) that stamps the annotation on every Provider written in
 * the namespaces labelled POLICY_LABEL (the source's too, where it does nothing): the controller's removal of
 * it is undone on each write.
 */
async function startPolicy(c: KubeClient): Promise<{ stop(): Promise<void> }> {
  const ca = makeCA('e2e transfer-network policy CA');
  const cert = makeServingCert(ca, '127.0.0.1', { ips: ['127.0.0.1'] });
  const server = https.createServer({ key: cert.keyPEM, cert: cert.certPEM }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      const rq = (JSON.parse(body) as { request: { uid: string; object: { metadata?: { annotations?: Record<string, string> } } } }).request;
      const annotations = rq.object.metadata?.annotations;
      const patch = annotations ? [{ op: 'add', path: `/metadata/annotations/${ANNOTATION.replace('/', '~1')}`, value: 'transfer' }] : [{ op: 'add', path: '/metadata/annotations', value: { [ANNOTATION]: 'transfer' } }];
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: rq.uid, allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(patch)).toString('base64') } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const name = `e2e-transfer-network-policy-${process.pid}`;
  await c.create(MutatingWebhookConfiguration, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name },
    webhooks: [
      {
        name: 'transfer-network.policy.example.com',
        clientConfig: { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/`, caBundle: Buffer.from(ca.certPEM).toString('base64') },
        rules: [{ apiGroups: ['forklift.konveyor.io'], apiVersions: ['v1beta1'], operations: ['CREATE', 'UPDATE'], resources: ['providers'] }],
        namespaceSelector: { matchLabels: { [POLICY_LABEL]: 'true' } },
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        failurePolicy: 'Fail',
        timeoutSeconds: 10,
      },
    ],
  } as KubeObject);
  return {
    async stop() {
      await c.delete(MutatingWebhookConfiguration, undefined, name).catch(() => false);
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

for (const version of FORKLIFT_VERSIONS) {
  describe(`simulated Forklift ${version}: the Plan mutator`, () => {
    let booted: BootedWorld;
    let c: KubeClient;
    let policy: { stop(): Promise<void> } | undefined;
    before(async () => {
      booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'mutator-fast', reclaimPolicy: 'Delete' }], sim: { forkliftVersion: version } });
      ({ c } = booted);
      policy = await startPolicy(c);
    });
    after(async () => {
      await policy?.stop();
      await booted?.shutdown();
    });

    test(`with defaultTransferNetwork kept on the destination Provider, the Plan stored without its false values holds the VM with the drift reason, no Migration runs, and the failed VM's Plan is not archived to delete its disks (${version})`, async () => {
      const ns = await freshNamespace('mutator', { [POLICY_LABEL]: 'true' });
      await c.create(NetworkAttachmentDefinition, { apiVersion: 'k8s.cni.cncf.io/v1', kind: 'NetworkAttachmentDefinition', metadata: { name: 'transfer', namespace: ns }, spec: { config: '{"cniVersion":"0.3.1","type":"bridge"}' } } as KubeObject);
      await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
      await waitForReason(c, ns, 'vc', 'Connected');
      const destination = (await c.list(GVRs.Provider, ns)).items.find((p) => (p as KubeObject & { spec?: { type?: string } }).spec?.type === 'openshift');
      assert.equal(destination?.metadata?.annotations?.[ANNOTATION], 'transfer', 'the policy keeps the annotation on the destination Provider');

      await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'imp', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'mutator-fast', vms: [{ id: 'vm-1' }] } } as KubeObject);
      const vm = await waitFor(
        'the VM held with the drift reason',
        async () => {
          const t = (await c.get(GVRs.VMImportTask, ns, 'imp')) as unknown as VMImportTask | undefined;
          const v = t?.status?.vms?.find((x) => x.id === 'vm-1');
          return v?.reason === 'PlanNotValid' ? v : undefined;
        },
        { timeoutMs: 60_000 },
      );
      assert.equal(vm.phase, 'Failed');
      assert.match(vm.message ?? '', /^Forklift stored the migration Plan otherwise than it was written/);
      assert.match(vm.message ?? '', /spec\.deleteVmOnFailMigration: written false, stored true/);
      assert.match(vm.message ?? '', /defaultTransferNetwork/);

      // What the mutator stored, and that nothing ran on it.
      const [plan] = (await c.list(GVRs.Plan, ns)).items as Array<KubeObject & { spec?: Record<string, unknown> }>;
      assert.deepEqual(plan?.spec?.transferNetwork, { namespace: ns, name: 'transfer' });
      assert.deepEqual([plan?.spec?.deleteVmOnFailMigration, plan?.spec?.preserveStaticIPs, plan?.spec?.runPreflightInspection], [true, true, true], 'the CRD defaults back');
      assert.deepEqual((await c.list(GVRs.Migration, ns)).items, []);

      // The failed VM's Plan is not archived as stored: Archive would delete a failed VM's disks.
      const held = await waitFor(
        'the archive held, in an Event',
        async () => (await c.list<KubeObject & { reason?: string; message?: string; involvedObject?: { name?: string } }>(GVRs.Event, ns)).items.find((e) => e.reason === 'ArchiveHeld' && e.involvedObject?.name === 'imp'),
        { timeoutMs: 60_000 },
      );
      assert.match(held.message ?? '', /deleteVmOnFailMigration true/);
      const after = (await c.get(GVRs.Plan, ns, plan!.metadata!.name!)) as (KubeObject & { spec?: { archived?: boolean } }) | undefined;
      assert.notEqual(after?.spec?.archived, true, 'the Plan stays unarchived while the mutator would turn deleteVmOnFailMigration true');
    });
  });
}
