// The chart and the image together, the way a cluster runs them: `helm install` (default values plus
// what Cozystack's package operator injects) into a private control plane; kube-controller-manager's
// Deployment and ReplicaSet controllers create the two Pods; this test plays the node — for each Pod it
// runs the image `npm run image` built, under podman on runc, with the Pod's own args, env, user,
// read-only root filesystem and a token of the chart's ServiceAccount bound to that Pod, and it plays
// the endpoints controller, publishing a replica in the webhook Service's Endpoints once its /readyz
// answers. The API server (--enable-aggregator-routing) calls the webhook through those Endpoints.
//
// Deviations from a real node, each forced by this machine: the containers share the host's network
// (no pod network here), so each replica gets its own ports in place of the chart's 9443/8080/8081, and
// the API server reaches the replicas on the host's address.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { networkInterfaces } from 'node:os';
import { dirname, join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import YAML from 'yaml';
import { ControlPlane, REPO_ROOT, freePort, waitFor, writeKubeconfig } from './env/index.ts';
import { createStorageClass, startSim, vcenter, type Sim } from '../sim/index.ts';
import { KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import { GVRs, type GVR } from '../../src/runtime/gvr.ts';
import { VALIDATING_WEBHOOK_GVR } from '../../src/webhook/certs.ts';
import { PATHS } from '../../src/webhook/config.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { findKubectl } from '../../scripts/demo/tools.ts';

const CHART = join(REPO_ROOT, 'charts/migration-controller');
const RELEASE = 'migration-controller';
const RELEASE_NS = 'cozy-migration-controller';
const TENANT_NS = 'tenant-image';
const SA = 'migration-controller';
const URL_VC = 'https://vcenter-image.example.com/sdk';
const VDDK = 'registry.example.com/vddk:8.0.3';
const world = vcenter({ url: URL_VC, vms: [{ id: 'vm-9', name: 'db-09', disks: [{ capacityGiB: 3 }] }] });

const POD_GVR: GVR = { group: '', version: 'v1', plural: 'pods', kind: 'Pod', namespaced: true };
const ENDPOINTS_GVR: GVR = { group: '', version: 'v1', plural: 'endpoints', kind: 'Endpoints', namespaced: true };
const LEASE_GVR: GVR = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease', namespaced: true };

interface Replica {
  pod: string;
  container: string;
  proc: ChildProcess;
  log: string;
  webhookPort: number;
  healthPort: number;
  metricsPort: number;
}

let cp: ControlPlane;
let sim: Sim | undefined;
let admin: KubeClient;
let podmanDir = '';
let image = '';
let hostIP = '';
let tenantKubeconfig = '';
const replicas: Replica[] = [];
let kubeletTimer: NodeJS.Timeout | undefined;

function exec(bin: string, args: string[], o: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = execFile(bin, args, { timeout: o.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024, env: o.env ?? process.env }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      res({ code, stdout: String(stdout), stderr: String(stderr) });
    });
    if (o.input !== undefined) child.stdin?.end(o.input);
  });
}
const KUBECTL = findKubectl();
const kubectl = (args: string[], o: { kubeconfig?: string; input?: string } = {}) => exec(KUBECTL, ['--kubeconfig', o.kubeconfig ?? cp.kubeconfigPath, ...args], { input: o.input });
const helm = (args: string[]) => exec('bash', [join(REPO_ROOT, 'scripts/helm.sh'), ...args, '--kubeconfig', cp.kubeconfigPath]);

/** podman as this machine runs it: runc (crun fails here), cgroupfs, vfs, a private store; no ulimits. */
function podmanArgs(args: string[]): string[] {
  return ['--root', join(podmanDir, 'root'), '--runroot', join(podmanDir, 'run'), '--storage-driver', 'vfs', '--runtime', 'runc', '--cgroup-manager', 'cgroupfs', ...args];
}
function podmanEnv(): NodeJS.ProcessEnv {
  return { ...process.env, CONTAINERS_CONF: join(podmanDir, 'containers.conf') };
}
const podman = (args: string[], timeoutMs = 300_000) => exec('podman', podmanArgs(args), { env: podmanEnv(), timeoutMs });

/** The machine's first non-loopback IPv4 address: Endpoints may not name a loopback address. */
function findHostIP(): string {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  throw new Error('no non-loopback IPv4 address on this machine');
}

function clientFor(path: string): KubeClient {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(path);
  return new KubeClient(kc);
}

function get(url: string): Promise<{ status: number; body: string }> {
  return fetch(url).then(async (r) => ({ status: r.status, body: await r.text() })).catch(() => ({ status: 0, body: '' }));
}

/** Plays the endpoints controller: the webhook and metrics Services' Endpoints list the ready replicas. */
async function publishReadyReplicas(): Promise<void> {
  const ready: Replica[] = [];
  for (const r of replicas) if ((await get(`http://127.0.0.1:${r.healthPort}/readyz`)).status === 200) ready.push(r);
  for (const [svc, portName, port] of [[`${RELEASE}-webhook`, 'https', (r: Replica) => r.webhookPort], [`${RELEASE}-metrics`, 'http-metrics', (r: Replica) => r.metricsPort]] as const) {
    const subsets = ready.map((r) => ({ addresses: [{ ip: hostIP, targetRef: { kind: 'Pod', namespace: RELEASE_NS, name: r.pod } }], ports: [{ name: portName, port: port(r), protocol: 'TCP' }] }));
    const cur = await admin.get(ENDPOINTS_GVR, RELEASE_NS, svc);
    const body = { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: svc, namespace: RELEASE_NS, ...(cur ? { resourceVersion: cur.metadata?.resourceVersion } : {}) }, subsets };
    if (!cur) await admin.create(ENDPOINTS_GVR, body as KubeObject).catch(() => undefined);
    else if (JSON.stringify((cur as KubeObject & { subsets?: unknown }).subsets ?? []) !== JSON.stringify(subsets)) await admin.replace(ENDPOINTS_GVR, body as KubeObject).catch(() => undefined);
  }
}

/** Runs one Pod's container from its spec, as a kubelet would, with the ports of this host. */
async function runPod(pod: KubeObject & { spec: { serviceAccountName: string; containers: Array<{ image: string; args: string[]; env: Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>; securityContext: { runAsUser: number; runAsGroup: number; readOnlyRootFilesystem: boolean } }> } }): Promise<Replica> {
  const name = pod.metadata!.name!;
  const c = pod.spec.containers[0]!;
  assert.equal(c.image, image, "the Pod runs the chart's default image, the one npm run image built");
  assert.equal(pod.spec.serviceAccountName, SA);
  // The projected ServiceAccount volume: a token bound to this Pod, the cluster CA, the namespace.
  const tok = await kubectl(['create', 'token', pod.spec.serviceAccountName, '-n', RELEASE_NS, '--duration=2h', '--bound-object-kind=Pod', `--bound-object-name=${name}`, `--bound-object-uid=${pod.metadata!.uid}`]);
  assert.equal(tok.code, 0, tok.stderr);
  const saDir = join(podmanDir, 'sa', name);
  mkdirSync(saDir, { recursive: true, mode: 0o755 });
  writeFileSync(join(saDir, 'token'), tok.stdout.trim(), { mode: 0o444 });
  writeFileSync(join(saDir, 'ca.crt'), cp.info.caPEM, { mode: 0o444 });
  writeFileSync(join(saDir, 'namespace'), RELEASE_NS, { mode: 0o444 });

  const [webhookPort, healthPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const ports: Record<string, number> = { '--webhook-port': webhookPort, '--health-port': healthPort, '--metrics-port': metricsPort };
  const args = c.args.map((a) => {
    const flag = a.split('=')[0]!;
    return flag in ports ? `${flag}=${ports[flag]}` : a;
  });
  const env: string[] = [];
  for (const e of c.env) {
    const field = e.valueFrom?.fieldRef?.fieldPath;
    const value = field === 'metadata.namespace' ? RELEASE_NS : field === 'metadata.name' ? name : e.value;
    assert.ok(value !== undefined, `env ${e.name} resolvable`);
    env.push('--env', `${e.name}=${value}`);
  }
  const api = new URL(cp.server);
  env.push('--env', `KUBERNETES_SERVICE_HOST=${api.hostname}`, '--env', `KUBERNETES_SERVICE_PORT=${api.port}`);
  const sc = c.securityContext;
  const container = `mc-${name}`;
  const proc = spawn('podman', podmanArgs([
    'run', '--rm', '--name', container, '--network', 'host',
    '--user', `${sc.runAsUser}:${sc.runAsGroup}`,
    ...(sc.readOnlyRootFilesystem ? ['--read-only'] : []),
    '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges',
    '--volume', `${saDir}:/var/run/secrets/kubernetes.io/serviceaccount:ro`,
    ...env, c.image, ...args,
  ]), { env: podmanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  const r: Replica = { pod: name, container, proc, log: '', webhookPort, healthPort, metricsPort };
  proc.stdout!.setEncoding('utf8').on('data', (d: string) => (r.log += d));
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => (r.log += d));
  return r;
}

function logs(): string {
  return replicas.map((r) => `--- ${r.pod}\n${r.log.slice(-4000)}`).join('\n');
}

async function metric(r: Replica, name: string): Promise<number | undefined> {
  const body = (await get(`http://127.0.0.1:${r.metricsPort}/metrics`)).body;
  const line = body.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

// The review names a user who may read the tenant's imports (an administrator): the webhook puts facts about
// a namespace (here, that its source does not exist) only into answers to such users.
const REVIEWER = { username: 'e2e-admin', groups: ['system:masters', 'system:authenticated'] };

/** An AdmissionReview sent straight to one replica, its certificate checked against the caBundle the API server uses. */
function review(r: Replica, caPEM: string, object: object): Promise<{ allowed: boolean; message?: string }> {
  const body = JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { uid: 'e2e-direct', kind: { group: 'forklift.cozystack.io', version: 'v1alpha1', kind: 'VMImportTask' }, resource: { group: 'forklift.cozystack.io', version: 'v1alpha1', resource: 'vmimporttasks' }, operation: 'CREATE', namespace: TENANT_NS, name: 'direct', userInfo: REVIEWER, object },
  });
  return new Promise((res, rej) => {
    const req = https.request({ host: hostIP, port: r.webhookPort, path: PATHS.validateTask, method: 'POST', ca: caPEM, servername: `${RELEASE}-webhook.${RELEASE_NS}.svc`, headers: { 'content-type': 'application/json' }, timeout: 10_000 }, (resp) => {
      let data = '';
      resp.setEncoding('utf8').on('data', (d: string) => (data += d)).on('end', () => {
        const rv = JSON.parse(data) as { response: { allowed: boolean; status?: { message?: string } } };
        res({ allowed: rv.response.allowed, message: rv.response.status?.message });
      });
    });
    req.on('error', rej).end(body);
  });
}

before(async () => {
  hostIP = findHostIP();
  // The image (built, then loaded into podman's store) and the private control plane (with the
  // simulator) are independent: made side by side, the plane's bootstrap — mostly waiting — overlaps the
  // build's downloads and compression instead of following them.
  const imageReady = (async () => {
    // Built once per set of inputs (scripts/build-image.sh skips an up-to-date archive).
    const built = await exec('bash', [join(REPO_ROOT, 'scripts/build-image.sh')], { timeoutMs: 15 * 60_000 });
    assert.equal(built.code, 0, `npm run image failed:\n${built.stderr}`);
    image = (await exec('bash', [join(REPO_ROOT, 'scripts/build-image.sh'), '--print-ref'])).stdout.trim();
    const archive = (await exec('bash', [join(REPO_ROOT, 'scripts/build-image.sh'), '--print-archive'])).stdout.trim();
    // A short path: conmon's attach socket lives under the run root and Unix socket paths are short.
    podmanDir = mkdtempSync('/tmp/mc-podman-');
    writeFileSync(join(podmanDir, 'containers.conf'), '[containers]\ndefault_ulimits = []\n');
    const loaded = await podman(['load', '--quiet', '--input', archive]);
    assert.equal(loaded.code, 0, `podman load: ${loaded.stderr}`);
    assert.match(loaded.stdout, new RegExp(image.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')), 'the archive loads under the chart\'s default reference');
  })();
  const planeReady = (async () => {
    cp = await ControlPlane.start({ serviceRoutingByTest: true });
    admin = clientFor(cp.kubeconfigPath);
    await createStorageClass(cp.kubeconfigPath, { name: 'replicated', bindingMode: 'Immediate' });
    sim = await startSim({ kubeconfigPath: cp.kubeconfigPath, worlds: [world] });
  })();
  // Both settle before a failure is reported, so that `after` stops whatever did start.
  const failed = (await Promise.allSettled([imageReady, planeReady])).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
});

after(async () => {
  if (kubeletTimer) clearInterval(kubeletTimer);
  for (const r of replicas) {
    await podman(['rm', '--force', '--time', '5', r.container], 60_000);
    if (r.proc.exitCode === null && r.proc.signalCode === null) {
      r.proc.kill('SIGKILL');
      await new Promise((res) => r.proc.once('exit', res));
    }
  }
  if (podmanDir) {
    await podman(['rm', '--all', '--force', '--time', '0'], 60_000);
    rmSync(podmanDir, { recursive: true, force: true });
  }
  await sim?.stop();
  admin?.close();
  await cp?.stop();
});

test('the image archive reads back as the chart\'s default reference: user 65532, freed blocks of 64 KiB and more returned to the kernel, read-only root filesystem declared, production dependencies only, nothing writable by its user', async () => {
  const archive = (await exec('bash', [join(REPO_ROOT, 'scripts/build-image.sh'), '--print-archive'])).stdout.trim();
  const cfg = await exec('skopeo', ['inspect', '--config', `oci-archive:${archive}`]);
  assert.equal(cfg.code, 0, cfg.stderr);
  const config = (JSON.parse(cfg.stdout) as { config: { User: string; Entrypoint: string[]; Env: string[]; Labels: Record<string, string> } }).config;
  assert.equal(config.User, '65532:65532');
  // glibc returns freed blocks of 64 KiB and more to the kernel (the native memory a busy controller kept).
  assert.ok(config.Env.includes('MALLOC_MMAP_THRESHOLD_=65536'), JSON.stringify(config.Env));
  assert.deepEqual(config.Entrypoint, ['/usr/local/bin/node', '/app/dist/main.js']);
  assert.equal(config.Labels['io.cozystack.migration-controller.read-only-root-filesystem'], 'true');
  assert.equal(config.Labels['io.cozystack.migration-controller.run-as-non-root'], 'true');
  assert.equal(config.Labels['org.opencontainers.image.ref.name'], image);
  // docker load: engines with OCI-layout support read index.json's io.containerd.image.name; older ones
  // read Docker's manifest.json. Both name the chart's reference and point at blobs in the archive.
  const listing = (await exec('tar', ['-tf', archive])).stdout.split('\n');
  const index = JSON.parse((await exec('tar', ['-xOf', archive, 'index.json'])).stdout) as { manifests: Array<{ annotations: Record<string, string> }> };
  assert.equal(index.manifests[0]!.annotations['io.containerd.image.name'], image);
  const dockerManifest = JSON.parse((await exec('tar', ['-xOf', archive, 'manifest.json'])).stdout) as Array<{ Config: string; RepoTags: string[]; Layers: string[] }>;
  assert.deepEqual(dockerManifest[0]!.RepoTags, [image]);
  for (const blob of [dockerManifest[0]!.Config, ...dockerManifest[0]!.Layers]) assert.ok(listing.includes(blob), `${blob} is in the archive`);
  // Inside: the runtime the tests run on, the production dependencies and nothing else, and no file the
  // controller's user could change (checked without --read-only, so the image itself is what refuses).
  const probe = `
    const fs = require('node:fs');
    let writable = [];
    for (const p of ['/app/dist/main.js', '/app/node_modules', '/usr/local/bin/node', '/etc/passwd', '/']) { try { fs.accessSync(p, fs.constants.W_OK); writable.push(p); } catch {} }
    console.log(JSON.stringify({ version: process.version, uid: process.getuid(), dev: JSON.parse(process.argv[1]).filter((p) => fs.existsSync('/app/' + p)), writable }));`;
  // What package-lock.json installs for development only (dev: true): none of it may be in the image.
  const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
  const devOnly = Object.entries(lock.packages).filter(([path, p]) => path.startsWith('node_modules/') && p.dev).map(([path]) => path);
  assert.ok(devOnly.includes('node_modules/typescript'));
  const run = await podman(['run', '--rm', '--network', 'none', '--entrypoint', '/usr/local/bin/node', image, '-e', probe, JSON.stringify(devOnly)], 120_000);
  assert.equal(run.code, 0, run.stderr);
  const got = JSON.parse(run.stdout.trim()) as { version: string; uid: number; dev: string[]; writable: string[] };
  assert.equal(got.version, process.version, 'the image ships the Node.js the tests run on');
  assert.equal(got.uid, 65532);
  assert.deepEqual(got.dev, [], 'no development-only package in the image');
  assert.deepEqual(got.writable, []);
});

test("helm install with Cozystack's injected values creates two Pods running the image `npm run image` built", async () => {
  const r = await helm([
    'install', RELEASE, CHART, '-n', RELEASE_NS, '--create-namespace',
    '-f', join(REPO_ROOT, 'test/fixtures/cozystack-values.yaml'),
    '--set', `inventoryURL=${sim!.inventory.url}`, '--set', `vddkImage=${VDDK}`,
  ]);
  assert.equal(r.code, 0, `helm install failed: ${r.stderr}`);
  const pods = await waitFor('the ReplicaSet to create two Pods', async () => {
    const list = (await admin.list(POD_GVR, RELEASE_NS)).items.filter((p) => p.metadata?.labels?.['app.kubernetes.io/name'] === 'migration-controller');
    return list.length === 2 ? list : undefined;
  }, { timeoutMs: 60_000 });
  for (const p of pods) replicas.push(await runPod(p as Parameters<typeof runPod>[0]));
  kubeletTimer = setInterval(() => void publishReadyReplicas().catch(() => undefined), 1000);
});

test('both replicas become Ready serving the webhook; exactly one holds the lease and reconciles', async () => {
  assert.equal(replicas.length, 2);
  for (const r of replicas) {
    await waitFor(`${r.pod} to answer /readyz`, async () => {
      if (r.proc.exitCode !== null) throw new Error(`${r.pod} exited ${r.proc.exitCode}:\n${r.log.slice(-4000)}`);
      const s = await get(`http://127.0.0.1:${r.healthPort}/readyz`);
      return s.status === 200 && /webhook serving/.test(s.body) ? s.body : undefined;
    }, { timeoutMs: 120_000 }).catch((e: Error) => {
      throw new Error(`${e.message}\n${logs()}`);
    });
  }
  const leaders = await waitFor('exactly one leader', async () => {
    const flags = await Promise.all(replicas.map((r) => metric(r, 'migration_controller_leader')));
    return flags.filter((f) => f === 1).length === 1 && flags.filter((f) => f === 0).length === 1 ? flags : undefined;
  }, { timeoutMs: 60_000 });
  const leader = replicas[leaders.indexOf(1)]!;
  const standby = replicas[leaders.indexOf(0)]!;
  assert.match((await get(`http://127.0.0.1:${leader.healthPort}/readyz`)).body, /ok \(leader, webhook serving\)/);
  assert.match((await get(`http://127.0.0.1:${standby.healthPort}/readyz`)).body, /ok \(standby, webhook serving\)/);
  const lease = (await admin.get(LEASE_GVR, RELEASE_NS, 'migration-controller-leader')) as (KubeObject & { spec?: { holderIdentity?: string } }) | undefined;
  assert.ok(lease?.spec?.holderIdentity, 'the Lease in the release namespace has a holder');
  // Only the leader reconciles: the standby has run no reconcile at all.
  const standbyReconciles = (await get(`http://127.0.0.1:${standby.metricsPort}/metrics`)).body.split('\n').filter((l) => l.startsWith('migration_controller_reconcile_total{') && !l.endsWith(' 0'));
  assert.deepEqual(standbyReconciles, [], 'the standby reconciles nothing');
});

test("each replica answers admission reviews with a certificate the webhook configuration's caBundle trusts", async () => {
  const v = (await admin.get(VALIDATING_WEBHOOK_GVR, undefined, `${RELEASE}-validating`)) as KubeObject & { webhooks: Array<{ clientConfig: { caBundle?: string; service?: { name: string } } }> };
  const bundle = v.webhooks[0]!.clientConfig.caBundle;
  assert.ok(bundle, 'selfManaged: the replicas injected the CA bundle');
  const caPEM = Buffer.from(bundle, 'base64').toString('utf8');
  const orphan = { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'direct', namespace: TENANT_NS }, spec: { sourceRef: { name: 'nope' }, storageClass: 'replicated', vms: [{ id: 'vm-9' }] } };
  for (const r of replicas) {
    const answer = await review(r, caPEM, orphan);
    assert.equal(answer.allowed, false, `${r.pod} refuses a task whose source does not exist`);
    assert.match(answer.message ?? '', /VMImportSource "nope" does not exist/);
  }
});

test("a tenant holding only Cozystack's tenant-admin role imports a VM through the installed controller and waits on its end with the README's one-liner; the API server calls the webhook through the Service", async () => {
  const tenant = cp.info.tenants[0]!;
  tenantKubeconfig = join(cp.info.dir, 'image-tenant.kubeconfig');
  writeKubeconfig(tenantKubeconfig, cp.server, cp.info.caPEM, tenant.name, tenant.token, TENANT_NS);
  // Cozystack's tenant-admin role, as the platform's tenant chart binds it (the ClusterRoles come from
  // test/fixtures/cozystack-tenant-roles.yaml, installed with the control plane); the chart installed
  // above aggregates its tenant roles into it.
  const rbac = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: TENANT_NS } },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'cozy:tenant:admin', namespace: TENANT_NS }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cozy:tenant:admin' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: tenant.name }] },
  ];
  const applied = await kubectl(['apply', '-f', '-'], { input: rbac.map((o) => YAML.stringify(o)).join('---\n') });
  assert.equal(applied.code, 0, applied.stderr);
  await waitFor("Cozystack's tenant-admin role (with the chart's rules aggregated) to allow creating tasks", async () => (await kubectl(['auth', 'can-i', 'create', 'vmimporttasks.forklift.cozystack.io', '-n', TENANT_NS], { kubeconfig: tenantKubeconfig })).stdout.trim() === 'yes');

  // Through the API server: refused by a replica's webhook, reached through the Service's Endpoints.
  const orphan = { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'orphan', namespace: TENANT_NS }, spec: { sourceRef: { name: 'nope' }, storageClass: 'replicated', vms: [{ id: 'vm-9' }] } };
  const refused = await kubectl(['create', '-f', '-'], { kubeconfig: tenantKubeconfig, input: JSON.stringify(orphan) });
  assert.notEqual(refused.code, 0, 'a task naming no source is not admitted');
  assert.match(refused.stderr, /admission webhook "vmimporttask\.forklift\.cozystack\.io" denied the request: .*VMImportSource "nope" does not exist/);

  const source = { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name: 'vc', namespace: TENANT_NS }, spec: { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } } };
  const s = await kubectl(['apply', '-f', '-'], { kubeconfig: tenantKubeconfig, input: JSON.stringify(source) });
  assert.equal(s.code, 0, `the tenant could not create a VMImportSource: ${s.stderr}`);
  const src = await exec(KUBECTL, ['--kubeconfig', tenantKubeconfig, 'wait', '--for=condition=Ready', '-n', TENANT_NS, 'vmimportsource/vc', '--timeout=90s'], { timeoutMs: 100_000 });
  assert.equal(src.code, 0, `the source did not connect: ${src.stderr}\n${logs()}`);

  const task = { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'import', namespace: TENANT_NS }, spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-9' }], storageClass: 'replicated' } };
  const t = await kubectl(['apply', '-f', '-'], { kubeconfig: tenantKubeconfig, input: JSON.stringify(task) });
  assert.equal(t.code, 0, `the tenant could not create a VMImportTask: ${t.stderr}`);
  // The README's one-liner, as documented (the task's name and timeout substituted), in the tenant's shell.
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const m = /^kubectl wait --for=condition=Finished .*\\\n.*$/m.exec(readme);
  assert.ok(m, 'the README shows a `kubectl wait --for=condition=Finished … && \\` one-liner');
  const oneLiner = m[0].replaceAll('import-web-tier', 'import').replace(/--timeout=\S+/, '--timeout=180s');
  const wait = await exec('bash', ['-c', oneLiner], { env: { ...process.env, KUBECONFIG: tenantKubeconfig, PATH: `${dirname(KUBECTL)}:${process.env.PATH}` }, timeoutMs: 190_000 });
  const got = (await admin.get(GVRs.VMImportTask, TENANT_NS, 'import')) as unknown as VMImportTask;
  assert.equal(wait.code, 0, `the README's wait failed: ${wait.stderr}\nstatus: ${JSON.stringify(got?.status, null, 1)}\n${logs()}`);
  assert.equal(got.status?.phase, 'Succeeded');
  assert.deepEqual(got.status!.vms![0]!.disks, ['db-09-disk-0']);
  const inst = (await admin.get(GVRs.VMInstance, TENANT_NS, 'db-09')) as (KubeObject & { spec?: { runStrategy?: string } }) | undefined;
  assert.equal(inst?.spec?.runStrategy, 'Halted');
  // Nothing either replica did was refused by the API server under the chart's RBAC.
  assert.deepEqual(replicas.flatMap((r) => r.log.split('\n').filter((l) => /\bforbidden\b/i.test(l))), []);
});

test('when the leader stops, the standby takes the lease and the webhook keeps answering through the Service', async () => {
  const flags = await Promise.all(replicas.map((r) => metric(r, 'migration_controller_leader')));
  const leader = replicas[flags.indexOf(1)]!;
  const standby = replicas[flags.indexOf(0)]!;
  assert.ok(leader && standby, `one leader, one standby: ${JSON.stringify(flags)}`);
  // A node drain: the leader's Pod is stopped (SIGTERM, then the kubelet's grace period).
  const stopped = await podman(['stop', '--time', '30', leader.container], 60_000);
  assert.equal(stopped.code, 0, stopped.stderr);
  await waitFor('the standby to lead', async () => (await metric(standby, 'migration_controller_leader')) === 1, { timeoutMs: 60_000 }).catch((e: Error) => {
    throw new Error(`${e.message}\n${logs()}`);
  });
  await waitFor('the stopped replica to leave the webhook Endpoints', async () => {
    const ep = (await admin.get(ENDPOINTS_GVR, RELEASE_NS, `${RELEASE}-webhook`)) as (KubeObject & { subsets?: Array<{ ports: Array<{ port: number }> }> }) | undefined;
    const ports = (ep?.subsets ?? []).flatMap((x) => x.ports.map((p) => p.port));
    return ports.length === 1 && ports[0] === standby.webhookPort;
  }, { timeoutMs: 30_000 });
  const orphan = { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 'orphan-2', namespace: TENANT_NS }, spec: { sourceRef: { name: 'nope' }, storageClass: 'replicated', vms: [{ id: 'vm-9' }] } };
  const refused = await kubectl(['create', '-f', '-'], { kubeconfig: tenantKubeconfig, input: JSON.stringify(orphan) });
  assert.match(refused.stderr, /admission webhook "vmimporttask\.forklift\.cozystack\.io" denied the request: .*VMImportSource "nope" does not exist/, 'the remaining replica answers');
});
