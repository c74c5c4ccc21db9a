// The webhook authenticates its caller: on a control plane whose API server presents a client
// certificate to webhooks (an admission configuration with a kubeConfigFile, as Kubernetes documents),
// a webhook configured with that CA admits the tenant's real writes, while a forged review sent straight
// to its port, without that certificate, gets 401 and nothing else: no sealed value, no verdict.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import * as k8s from '@kubernetes/client-node';
import { GVRs } from '../../src/runtime/gvr.ts';
import { KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import { PATHS } from '../../src/webhook/config.ts';
import { startTestWebhook } from '../../src/webhook/testkit.ts';
import { ControlPlane, WEBHOOK_CLIENT_CN } from './env/controlplane.ts';
import { installOurCRDs, waitFor } from './env/index.ts';

test("the API server's client certificate is answered; a forged review without it gets 401 and no sealed value", async () => {
  const cp = await ControlPlane.start({ webhookClientCert: true });
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  const c = new KubeClient(kc, { fieldManager: 'e2e' });
  let wh: Awaited<ReturnType<typeof startTestWebhook>> | undefined;
  try {
    await installOurCRDs(kc);
    await waitFor('our CRDs Established', async () => {
      const crd = (await c.get(GVRs.CustomResourceDefinition, undefined, 'vmimportsources.forklift.cozystack.io')) as { status?: { conditions?: Array<{ type: string; status: string }> } } | undefined;
      return crd?.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
    });
    wh = await startTestWebhook({ client: c, clientAuth: { caPEM: cp.info.caPEM, names: [WEBHOOK_CLIENT_CN] } });
    await c.create(GVRs.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'callers', labels: { [wh.selector.key]: wh.selector.value } } });
    const source = { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name: 'vc', namespace: 'callers' }, spec: { type: 'vsphere', url: 'https://vc.callers.example/sdk', credentials: { username: 'u@vsphere.local', password: 'Plain-Password-1', insecureSkipVerify: true } } };
    // Through the API server: reviewed (the password is stored sealed), and the API server's certificate was what let it through.
    const stored = (await c.create(GVRs.VMImportSource, source as KubeObject)) as KubeObject & { spec: { credentials: { password: string } } };
    assert.match(stored.spec.credentials.password, /^enc:v2:/);
    // Straight to the port, as a pod that can reach it would: no AdmissionReview comes back.
    const forged = JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'forged', kind: { group: 'forklift.cozystack.io', version: 'v1alpha1', kind: 'VMImportSource' }, operation: 'CREATE', namespace: 'callers', object: source } });
    const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', port: wh!.server.port, path: PATHS.earlySource, method: 'POST', ca: wh!.caPEM, agent: false, headers: { 'Content-Type': 'application/json' } }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end(forged);
    });
    assert.equal(r.status, 401);
    assert.ok(!r.body.includes('enc:') && !r.body.includes('AdmissionReview'), r.body);
  } finally {
    await wh?.stop();
    c.close();
    await cp.stop();
  }
});
