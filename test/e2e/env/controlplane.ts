// A real local Kubernetes control plane: etcd + kube-apiserver + kube-controller-manager on loopback.
// Used by the e2e suite, the benchmarks and the demo. No container engine, no downloads at run time:
// binaries come from KUBEBUILDER_ASSETS or scripts/install-testenv.sh (which builds them once per machine).
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { appendFileSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import https from 'node:https';
import forge from 'node-forge';
import YAML from 'yaml';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

export interface Identity {
  name: string;
  token: string;
  groups: string[];
  kubeconfigPath: string;
}

/**
 * API versions a v1.20 API server serves by default that Kubernetes removed since (1.22–1.26) and nothing
 * here uses: the planes serve what a current cluster does. Each served group-version costs a GET in every
 * discovery pass (the garbage collector's and the quota controller's every 30 s, the namespace controller's
 * at each sync of a namespace it deletes): with these 17 served, such GETs were a seventh of the requests
 * of the e2e files measured. Without them kube-apiserver spent a fifth less CPU on task-import.test.ts, and
 * a plane starts two seconds sooner. Kept: the only versions 1.20 has of PodDisruptionBudget (policy),
 * EndpointSlice (discovery.k8s.io) and API Priority and Fairness (flowcontrol.apiserver.k8s.io).
 */
export const DISABLED_API_VERSIONS = [
  'admissionregistration.k8s.io/v1beta1',
  'apiextensions.k8s.io/v1beta1',
  'apiregistration.k8s.io/v1beta1',
  'authentication.k8s.io/v1beta1',
  'authorization.k8s.io/v1beta1',
  'autoscaling/v2beta1',
  'autoscaling/v2beta2',
  'batch/v1beta1',
  'certificates.k8s.io/v1beta1',
  'coordination.k8s.io/v1beta1',
  'events.k8s.io/v1beta1',
  'extensions/v1beta1',
  'networking.k8s.io/v1beta1',
  'node.k8s.io/v1beta1',
  'rbac.authorization.k8s.io/v1beta1',
  'scheduling.k8s.io/v1beta1',
  'storage.k8s.io/v1beta1',
] as const;

/**
 * kube-controller-manager's controllers: those whose kinds the suite, the demo and the benchmarks create or
 * whose work they read. The others (node, CronJob, Job, StatefulSet, DaemonSet, HPA, CSR, TTL, pod GC,
 * volume attach and expand) manage kinds nothing here creates, on a plane without nodes. They only poll
 * (CronJob every 10 s, HPA every 15 s, pod GC every 20 s), which cost each plane ~40 % of its idle
 * controller-manager CPU. `endpoint` is dropped when a test plays the endpoints controller itself.
 */
const KCM_CONTROLLERS = [
  'garbagecollector', // ownerReferences: a deleted task takes its Forklift objects and outputs along
  'namespace', // a deleted namespace empties and goes
  'resourcequota', // a quota's status.used, which the preflight reads
  'persistentvolume-binder', // Immediate claims bind to the simulated provisioner's volumes
  'pv-protection',
  'pvc-protection', // the finalizers a real cluster puts on volumes and claims in use
  'serviceaccount',
  'serviceaccount-token', // the tokens of the accounts the chart's Pods run as
  'root-ca-cert-publisher',
  'clusterrole-aggregation', // Cozystack's tenant roles aggregate ours
  'deployment',
  'replicaset', // the chart's Deployment becomes Pods
  'disruption', // the chart's PodDisruptionBudget gets a status
  'endpoint',
];

export interface ControlPlaneOptions {
  /** PV binder periodic sync. Tests use 1s; benchmarks measure the default (15s). */
  pvSyncPeriod?: string;
  /** Write an audit log (Metadata level) so a benchmark can count a client's requests. */
  auditLog?: boolean;
  /** Keep the working directory (and logs) after stop. */
  keepDir?: boolean;
  /** Overall deadline for start-up (default DEFAULT_START_TIMEOUT_MS). */
  startTimeoutMs?: number;
  /** Prefix printed on log lines of the harness itself. */
  quiet?: boolean;
  /**
   * Serve Services the way a cluster without kube-proxy can: the API server calls a Service-backed
   * webhook at an address from the Service's Endpoints (--enable-aggregator-routing), and
   * kube-controller-manager's endpoints controller is off, so the test writes those Endpoints (it plays
   * the kubelet and the endpoints controller for processes it runs itself).
   */
  serviceRoutingByTest?: boolean;
  /**
   * The components (and their log pipes) do not keep this process's event loop alive. For a control
   * plane stopped on `beforeExit`: that event fires only once nothing else is pending, which running
   * children with piped output would prevent forever (a benchmark that never exits).
   */
  letProcessExit?: boolean;
  /**
   * kube-controller-manager's client rate (--kube-api-qps; burst twice that). Its default, 20 QPS, makes a
   * namespace holding a few thousand objects take minutes to delete (the namespace deleter, the PVC
   * protection and PV binder controllers share that budget): the soak benchmark raises it so that its rounds
   * measure the controller, not the deletion's queue.
   */
  kcmQPS?: number;
  /**
   * The API server presents a client certificate (CN WEBHOOK_CLIENT_CN, signed by the plane's CA) to
   * every admission webhook it calls: the admission configuration's kubeConfigFile, as Kubernetes
   * documents for authenticating API servers to webhooks (docs/security.md).
   */
  webhookClientCert?: boolean;
}

/** The subject CN of the client certificate a plane started with webhookClientCert presents to webhooks. */
export const WEBHOOK_CLIENT_CN = 'kube-apiserver-webhook-client';

/**
 * When set, names a file to which every control plane started appends one JSON line per component
 * (`{ dir, component, pid }`), so a test can check that a process it ran left no etcd or kube-* process
 * and no working directory behind.
 */
export const CONTROLPLANE_RECORD_ENV = 'MC_CONTROLPLANE_RECORD';

export interface ControlPlaneInfo {
  server: string;
  caPEM: string;
  dir: string;
  logsDir: string;
  admin: Identity;
  /** A separate cluster-admin identity for the controller under test, so audit logs tell it apart. */
  controller: Identity;
  tenants: Identity[];
  auditLogPath?: string;
  serviceCIDR: string;
  /** etcd's client URL (plain HTTP on loopback): auditor tests read what is stored, bypassing the API server. */
  etcdURL?: string;
  pids: Record<string, number>;
}

/** Tenant identities in the static token file (group `tenants`). */
export const TENANT_NAMES = ['tenant-a', 'tenant-b'];
export const SERVICE_CIDR = '10.96.0.0/12';

const DEFAULT_START_TIMEOUT_MS = 180_000;

const children = new Set<ChildProcess>();
let exitHooksInstalled = false;

function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  const killAll = (): void => {
    for (const c of children) {
      try {
        c.kill('SIGKILL');
      } catch {
        /* already gone */
      }
    }
  };
  process.on('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      killAll();
      process.exit(sig === 'SIGINT' ? 130 : 143);
    });
  }
}

export function findAssets(): string {
  const env = process.env.KUBEBUILDER_ASSETS;
  const has = (d: string): boolean =>
    ['etcd', 'kube-apiserver', 'kube-controller-manager'].every((b) => existsSync(join(d, b)));
  if (env && has(env)) return env;
  const cache = join(process.env.XDG_CACHE_HOME ?? join(process.env.HOME ?? tmpdir(), '.cache'), 'migration-controller', 'k8s-1.20.2');
  if (has(cache)) return cache;
  // Idempotent; builds once per machine (about 9 minutes), prints the assets folder last.
  const out = execFileSync('bash', [join(REPO_ROOT, 'scripts/install-testenv.sh')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  const dir = out.trim().split('\n').pop() ?? '';
  if (!has(dir)) throw new Error(`install-testenv.sh did not produce the control-plane binaries in ${dir}`);
  return dir;
}

/** A start that lost one of its ports to another process between choosing it and binding it. */
class PortTakenError extends Error {}
/** Three losses in a row would mean something holds ports on purpose, not a race. */
const PORT_RACE_ATTEMPTS = 3;


/**
 * A port no socket holds now, for a process that binds it later. Chosen below the kernel's ephemeral range
 * (ip_local_port_range), never from it: every outbound connection of every process on the machine takes its
 * local port from that range, so a port chosen there can be taken by a client's connection in the seconds
 * between choosing and binding — a container that started 2 s later failed with EADDRINUSE that way. Below
 * the range, only a process that binds a number on purpose can take it; each candidate is checked by binding
 * it on every address, and one process never hands out the same port twice.
 */
export async function freePort(): Promise<number> {
  const [low, span] = FIXED_PORT_RANGE;
  for (let i = 0; i < FREE_PORT_ATTEMPTS; i++) {
    const port = low + Math.floor(Math.random() * span);
    if (handedOut.has(port)) continue;
    if (await bindable(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port found in ${FREE_PORT_ATTEMPTS} tries between ${low} and ${low + span - 1}`);
}

/** Ports this process handed out (each test file and the runner are processes of their own). */
const handedOut = new Set<number>();
/** Random tries before giving up: with a few hundred ports bound of ~12,000, 50 misses in a row do not happen by chance. */
const FREE_PORT_ATTEMPTS = 50;
/**
 * [first port, count]: from 20000 up to the ephemeral range's start (32768 on Linux by default); below 20000
 * sit the ports services commonly use. Where the range starts lower, the span below it shrinks, never under
 * 1,000 ports.
 */
const FIXED_PORT_RANGE: [number, number] = (() => {
  let ephemeralLow = 32768;
  try {
    ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || ephemeralLow;
  } catch {
    /* not Linux: its default */
  }
  const low = Math.min(20000, Math.max(1024, ephemeralLow - 12768));
  return [low, Math.max(1000, ephemeralLow - low)];
})();

function bindable(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = createServer();
    s.unref();
    s.once('error', () => res(false));
    // No host: the unspecified address, so a port bound on any one address is seen as taken.
    s.listen({ port, exclusive: true }, () => s.close(() => res(true)));
  });
}

function certPair(cn: string, opts: { ca?: { cert: forge.pki.Certificate; key: forge.pki.rsa.PrivateKey }; isCA?: boolean; ips?: string[]; dns?: string[] }) {
  const keys = forge.pki.rsa.generateKeyPair(2048);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = '01' + randomBytes(8).toString('hex');
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 365 * 24 * 3600_000);
  cert.setSubject([{ name: 'commonName', value: cn }]);
  cert.setIssuer(opts.ca ? opts.ca.cert.subject.attributes : [{ name: 'commonName', value: cn }]);
  const ext: object[] = [{ name: 'basicConstraints', cA: !!opts.isCA }];
  if (opts.isCA) ext.push({ name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true });
  else {
    ext.push({ name: 'keyUsage', digitalSignature: true, keyEncipherment: true });
    ext.push({ name: 'extKeyUsage', serverAuth: true, clientAuth: true });
    ext.push({
      name: 'subjectAltName',
      altNames: [...(opts.dns ?? []).map((value) => ({ type: 2, value })), ...(opts.ips ?? []).map((ip) => ({ type: 7, ip }))],
    });
  }
  cert.setExtensions(ext);
  cert.sign(opts.ca ? opts.ca.key : keys.privateKey, forge.md.sha256.create());
  return { cert, key: keys.privateKey, certPEM: forge.pki.certificateToPem(cert), keyPEM: forge.pki.privateKeyToPem(keys.privateKey) };
}

export function writeKubeconfig(path: string, server: string, caPEM: string, user: string, token: string, namespace?: string): void {
  const cfg = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'local', cluster: { server, 'certificate-authority-data': Buffer.from(caPEM).toString('base64') } }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: user, context: { cluster: 'local', user, ...(namespace ? { namespace } : {}) } }],
    'current-context': user,
  };
  writeFileSync(path, YAML.stringify(cfg), { mode: 0o600 });
}

function httpsGet(url: string, caPEM: string, token: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = https.get(url, { ca: caPEM, headers: { Authorization: `Bearer ${token}` }, timeout: timeoutMs }, (r) => {
      let body = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (body += c));
      r.on('end', () => res({ status: r.statusCode ?? 0, body }));
      // A response broken off after its headers emits neither 'end' nor (without this listener) 'error'.
      r.on('error', rej);
      r.on('close', () => !r.complete && rej(new Error(`response of GET ${url} cut off`)));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', rej);
  });
}

/** Cozystack's tenant ClusterRoles (view, use, admin, super-admin and their aggregation), modelled from upstream. */
export const TENANT_ROLES_FIXTURE = join(REPO_ROOT, 'test/fixtures/cozystack-tenant-roles.yaml');

/**
 * Creates the ClusterRoles of TENANT_ROLES_FIXTURE. kube-controller-manager's clusterrole-aggregation
 * controller then fills the aggregated ones (cozy:tenant:admin …) from every ClusterRole carrying their
 * labels, as on a real platform; bind a tenant with `bindTenant` (test/e2e/env/index.ts).
 */
async function installTenantRoles(server: string, caPEM: string, token: string): Promise<void> {
  const roles = YAML.parseAllDocuments(readFileSync(TENANT_ROLES_FIXTURE, 'utf8'))
    .map((d) => d.toJSON() as { kind?: string; metadata?: { name?: string } } | null)
    .filter((o) => o?.kind === 'ClusterRole');
  for (const role of roles) {
    const r = await httpsRequest('POST', `${server}/apis/rbac.authorization.k8s.io/v1/clusterroles`, caPEM, token, JSON.stringify(role), 10_000);
    // 409: already there (a restarted start against the same store); anything else is a broken fixture.
    if (r.status !== 201 && r.status !== 409) throw new Error(`creating ClusterRole ${role?.metadata?.name}: HTTP ${r.status} ${r.body}`);
  }
}

function httpsRequest(method: string, url: string, caPEM: string, token: string, body: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = https.request(url, { method, ca: caPEM, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, timeout: timeoutMs }, (r) => {
      let out = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (out += c));
      r.on('end', () => res({ status: r.statusCode ?? 0, body: out }));
      r.on('error', rej);
      r.on('close', () => !r.complete && rej(new Error(`response of ${method} ${url} cut off`)));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', rej);
    req.end(body);
  });
}

/** Resolves when `fn` returns true; polls a health endpoint, never a fixed sleep as synchronisation. */
async function until(what: string, deadline: number, fn: () => Promise<boolean>, proc?: ChildProcess, logFile?: string): Promise<void> {
  let last = '';
  while (Date.now() < deadline) {
    if (proc && proc.exitCode !== null) {
      throw new Error(`${what}: process exited with code ${proc.exitCode}; log: ${logFile}\n${tail(logFile)}`);
    }
    try {
      if (await fn()) return;
    } catch (e) {
      last = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: not ready before the deadline (${last}); log: ${logFile}\n${tail(logFile)}`);
}

function tail(file?: string): string {
  if (!file || !existsSync(file)) return '';
  return readFileSync(file, 'utf8').split('\n').slice(-25).join('\n');
}

export class ControlPlane {
  readonly info: ControlPlaneInfo;
  private procs = new Map<string, { proc: ChildProcess; args: string[]; bin: string; log: string; tail: string; closed: Promise<void> }>();
  private readonly opts: ControlPlaneOptions;
  private stopped = false;

  private constructor(info: ControlPlaneInfo, opts: ControlPlaneOptions) {
    this.info = info;
    this.opts = opts;
  }

  get server(): string {
    return this.info.server;
  }
  get kubeconfigPath(): string {
    return this.info.admin.kubeconfigPath;
  }

  static async start(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
    // A port freePort() found free can be bound by another process (another file's plane, a simulator)
    // before etcd or the API server binds it; CI saw etcd exit on `bind: address already in use`. Such a
    // start is tried again on new ports; any other failure is reported as it is.
    for (let attempt = 1; ; attempt++) {
      try {
        return await ControlPlane.startOnce(opts);
      } catch (e) {
        if (!(e instanceof PortTakenError) || attempt >= PORT_RACE_ATTEMPTS) throw e;
        if (!opts.quiet) console.error(`[testenv] ${e.message}; starting again on new ports`);
      }
    }
  }

  private static async startOnce(opts: ControlPlaneOptions): Promise<ControlPlane> {
    installExitHooks();
    const t0 = Date.now();
    // The default deadline is a net for a start that cannot succeed, not a timing: on this 2-core machine
    // at load average 30-40 (several suites and benchmarks starting planes at once) a healthy start took
    // 146 s, and 60 s failed whole benchmark runs and e2e files that start a private plane.
    const deadline = t0 + (opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS);
    const assets = findAssets();
    const dir = mkdtempSync(join(tmpdir(), 'mc-cp-'));
    const logsDir = join(dir, 'logs');
    mkdirSync(logsDir);
    for (const d of ['etcd', 'apiserver', 'kcm']) mkdirSync(join(dir, d));

    const ca = certPair('migration-controller-testenv-ca', { isCA: true });
    const serving = certPair('kube-apiserver', { ca, ips: ['127.0.0.1', '10.96.0.1'], dns: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc'] });
    const ad = join(dir, 'apiserver');
    writeFileSync(join(ad, 'ca.crt'), ca.certPEM);
    writeFileSync(join(ad, 'ca.key'), ca.keyPEM, { mode: 0o600 });
    writeFileSync(join(ad, 'serving.crt'), serving.certPEM);
    writeFileSync(join(ad, 'serving.key'), serving.keyPEM, { mode: 0o600 });
    const sa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(join(ad, 'sa.key'), sa.privateKey.export({ type: 'pkcs1', format: 'pem' }), { mode: 0o600 });
    writeFileSync(join(ad, 'sa.pub'), sa.publicKey.export({ type: 'spki', format: 'pem' }));

    const tok = (): string => randomBytes(24).toString('hex');
    const admin: Identity = { name: 'admin', token: tok(), groups: ['system:masters'], kubeconfigPath: join(dir, 'admin.kubeconfig') };
    const tenants: Identity[] = TENANT_NAMES.map((name) => ({ name, token: tok(), groups: ['tenants'], kubeconfigPath: join(dir, `${name}.kubeconfig`) }));
    const controller: Identity = { name: 'migration-controller', token: tok(), groups: ['system:masters'], kubeconfigPath: join(dir, 'controller.kubeconfig') };
    const kcmIdentity: Identity = { name: 'system:kube-controller-manager', token: tok(), groups: ['system:masters'], kubeconfigPath: join(dir, 'kcm.kubeconfig') };
    const lines = [admin, controller, kcmIdentity, ...tenants].map((i) => `${i.token},${i.name},${i.name},"${i.groups.join(',')}"`);
    writeFileSync(join(ad, 'tokens.csv'), lines.join('\n') + '\n', { mode: 0o600 });

    const [etcdPort, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort()];
    const server = `https://127.0.0.1:${apiPort}`;
    for (const i of [admin, controller, kcmIdentity, ...tenants]) writeKubeconfig(i.kubeconfigPath, server, ca.certPEM, i.name, i.token);

    const info: ControlPlaneInfo = { server, caPEM: ca.certPEM, dir, logsDir, admin, controller, tenants, serviceCIDR: SERVICE_CIDR, etcdURL: `http://127.0.0.1:${etcdPort}`, pids: {} };
    const cp = new ControlPlane(info, opts);
    try {
      // etcd
      cp.spawnComponent('etcd', join(assets, 'etcd'), [
        '--data-dir', join(dir, 'etcd'),
        '--listen-client-urls', `http://127.0.0.1:${etcdPort}`,
        '--advertise-client-urls', `http://127.0.0.1:${etcdPort}`,
        '--listen-peer-urls', `http://127.0.0.1:${etcdPeer}`,
        '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeer}`,
        '--initial-cluster', `default=http://127.0.0.1:${etcdPeer}`,
        // Tests create and delete thousands of objects; an unsynced disk is fine for a throwaway store.
        '--unsafe-no-fsync',
        '--quota-backend-bytes', String(4 * 1024 * 1024 * 1024),
      ]);
      await until('etcd', deadline, async () => (await fetch(`http://127.0.0.1:${etcdPort}/health`, { signal: AbortSignal.timeout(2000) })).ok, cp.proc('etcd'), cp.log('etcd'));

      const apiArgs = [
        `--etcd-servers=http://127.0.0.1:${etcdPort}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        '--insecure-port=0',
        `--cert-dir=${ad}`,
        `--tls-cert-file=${join(ad, 'serving.crt')}`,
        `--tls-private-key-file=${join(ad, 'serving.key')}`,
        `--client-ca-file=${join(ad, 'ca.crt')}`,
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        '--service-account-issuer=https://kubernetes.default.svc',
        `--service-account-signing-key-file=${join(ad, 'sa.key')}`,
        `--service-account-key-file=${join(ad, 'sa.pub')}`,
        `--token-auth-file=${join(ad, 'tokens.csv')}`,
        '--authorization-mode=RBAC',
        '--allow-privileged=true',
        '--enable-admission-plugins=NamespaceLifecycle,ServiceAccount,DefaultStorageClass,ResourceQuota,MutatingAdmissionWebhook,ValidatingAdmissionWebhook',
        '--advertise-address=127.0.0.1',
        `--runtime-config=${DISABLED_API_VERSIONS.map((v) => `${v}=false`).join(',')}`,
      ];
      if (opts.serviceRoutingByTest) apiArgs.push('--enable-aggregator-routing=true');
      if (opts.webhookClientCert) {
        const client = certPair(WEBHOOK_CLIENT_CN, { ca });
        const kubeconfig = join(ad, 'webhook-client.kubeconfig');
        // User "*": the certificate for every webhook host this API server calls.
        writeFileSync(kubeconfig, YAML.stringify({ apiVersion: 'v1', kind: 'Config', users: [{ name: '*', user: { 'client-certificate-data': Buffer.from(client.certPEM).toString('base64'), 'client-key-data': Buffer.from(client.keyPEM).toString('base64') } }] }), { mode: 0o600 });
        const webhookConfig = { apiVersion: 'apiserver.config.k8s.io/v1', kind: 'WebhookAdmissionConfiguration', kubeConfigFile: kubeconfig };
        const admission = join(ad, 'admission.yaml');
        writeFileSync(admission, YAML.stringify({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'AdmissionConfiguration', plugins: [{ name: 'ValidatingAdmissionWebhook', configuration: webhookConfig }, { name: 'MutatingAdmissionWebhook', configuration: webhookConfig }] }));
        apiArgs.push(`--admission-control-config-file=${admission}`);
      }
      if (opts.auditLog) {
        const policy = join(ad, 'audit-policy.yaml');
        writeFileSync(policy, YAML.stringify({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', rules: [{ level: 'Metadata' }] }));
        info.auditLogPath = join(logsDir, 'audit.log');
        apiArgs.push(`--audit-policy-file=${policy}`, `--audit-log-path=${info.auditLogPath}`, '--audit-log-format=json');
      }
      cp.spawnComponent('kube-apiserver', join(assets, 'kube-apiserver'), apiArgs);
      await cp.waitApiReady(deadline);

      cp.spawnComponent('kube-controller-manager', join(assets, 'kube-controller-manager'), [
        `--kubeconfig=${kcmIdentity.kubeconfigPath}`,
        `--authentication-kubeconfig=${kcmIdentity.kubeconfigPath}`,
        `--authorization-kubeconfig=${kcmIdentity.kubeconfigPath}`,
        '--leader-elect=false',
        '--port=0',
        '--secure-port=0',
        `--service-account-private-key-file=${join(ad, 'sa.key')}`,
        `--root-ca-file=${join(ad, 'ca.crt')}`,
        '--use-service-account-credentials=false',
        `--controllers=${KCM_CONTROLLERS.filter((c) => !(opts.serviceRoutingByTest && c === 'endpoint')).join(',')}`,
        `--pvclaimbinder-sync-period=${opts.pvSyncPeriod ?? '1s'}`,
        ...(opts.kcmQPS ? [`--kube-api-qps=${opts.kcmQPS}`, `--kube-api-burst=${2 * opts.kcmQPS}`] : []),
      ]);
      // Ready when the service-account token controller has populated the default namespace's account.
      await until(
        'kube-controller-manager',
        deadline,
        async () => {
          const r = await httpsGet(`${server}/api/v1/namespaces/default/serviceaccounts/default`, ca.certPEM, admin.token, 2000);
          return r.status === 200;
        },
        cp.proc('kube-controller-manager'),
        cp.log('kube-controller-manager'),
      );
      // A tenant on this control plane holds what a tenant of a real Cozystack platform holds.
      await installTenantRoles(server, ca.certPEM, admin.token);
    } catch (e) {
      const taken = await cp.portTaken();
      await cp.stop({ keepDir: !taken });
      if (taken) throw new PortTakenError(`control plane failed to start: ${taken}`);
      throw new Error(`control plane failed to start; logs kept in ${logsDir}: ${(e as Error).message}`);
    }
    if (!opts.quiet) console.error(`[testenv] control plane ready at ${server} in ${Date.now() - t0} ms (dir ${dir})`);
    return cp;
  }

  /** The line of etcd's or the API server's output that says a port was taken from under it, if any. */
  private async portTaken(): Promise<string | undefined> {
    for (const c of ['etcd', 'kube-apiserver']) {
      const p = this.procs.get(c);
      if (!p) continue;
      // A component's exit can be seen before its last output is read; 'close' comes after both pipes end.
      if (p.proc.exitCode !== null || p.proc.signalCode !== null) await Promise.race([p.closed, new Promise((r) => setTimeout(r, 2000))]);
      const line = p.tail.split('\n').find((l) => l.includes('address already in use'));
      if (line) return `${c}: ${line.trim().slice(0, 300)}`;
    }
    return undefined;
  }

  private proc(name: string): ChildProcess | undefined {
    return this.procs.get(name)?.proc;
  }
  private log(name: string): string {
    return join(this.info.logsDir, `${name}.log`);
  }

  private spawnComponent(name: string, bin: string, args: string[]): void {
    const log = this.log(name);
    const out = createWriteStream(log, { flags: 'a' });
    // setpriv --pdeathsig: the kernel kills the component if this process dies (even by SIGKILL), so no
    // etcd or kube-* process can outlive the run that started it.
    const useSetpriv = existsSync('/usr/bin/setpriv');
    const proc = useSetpriv
      ? spawn('/usr/bin/setpriv', ['--pdeathsig', 'KILL', '--', bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout?.pipe(out);
    proc.stderr?.pipe(out);
    const entry = { proc, args, bin, log, tail: '', closed: new Promise<void>((r) => proc.once('close', () => r())) };
    // The last output kept in memory, for reasons a start failed (8 KiB holds etcd's last few lines).
    const keep = (b: Buffer): void => {
      entry.tail = (entry.tail + b.toString('utf8')).slice(-8192);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    if (this.opts.letProcessExit) {
      proc.unref();
      (proc.stdout as { unref?: () => void } | null)?.unref?.();
      (proc.stderr as { unref?: () => void } | null)?.unref?.();
    }
    const record = process.env[CONTROLPLANE_RECORD_ENV];
    if (record && proc.pid) appendFileSync(record, JSON.stringify({ dir: this.info.dir, component: name, pid: proc.pid }) + '\n');
    children.add(proc);
    proc.on('exit', () => children.delete(proc));
    this.procs.set(name, entry);
    if (proc.pid) this.info.pids[name] = proc.pid;
  }

  private async waitApiReady(deadline: number): Promise<void> {
    await until(
      'kube-apiserver',
      deadline,
      async () => {
        const r = await httpsGet(`${this.info.server}/readyz`, this.info.caPEM, this.info.admin.token, 2000);
        return r.status === 200;
      },
      this.proc('kube-apiserver'),
      this.log('kube-apiserver'),
    );
  }

  private async kill(name: string, timeoutMs = 10_000): Promise<void> {
    const p = this.procs.get(name);
    if (!p || p.proc.exitCode !== null || p.proc.signalCode !== null) return;
    const exited = new Promise<void>((r) => p.proc.once('exit', () => r()));
    p.proc.kill('SIGTERM');
    const t = setTimeout(() => p.proc.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(t);
  }

  /**
   * Restarts kube-apiserver with the same flags (clients see connection errors, then 410s on watches).
   * kube-controller-manager is held (SIGSTOP) from before the old server goes until the new one is ready,
   * as a load balancer in front of an HA control plane sends it to no server that is not: until its CRD
   * informer has synced, a v1.20 kube-apiserver answers a custom resource's path 404 (seen in audit logs),
   * and a garbage collector that asks then for a claim's VirtualMachine owner takes the owner as absent and
   * deletes the claim (the likeliest cause of a claim lost in a CI run of sim-apiserver-restart-writes).
   * Every other client still meets the window.
   */
  async restartApiServer(): Promise<void> {
    const p = this.procs.get('kube-apiserver');
    if (!p) throw new Error('kube-apiserver not started');
    const kcm = this.procs.get('kube-controller-manager')?.proc;
    const held = !!kcm && kcm.exitCode === null && kcm.signalCode === null && kcm.kill('SIGSTOP');
    try {
      await this.kill('kube-apiserver');
      this.spawnComponent('kube-apiserver', p.bin, p.args);
      await this.waitApiReady(Date.now() + 60_000);
    } finally {
      if (held) kcm.kill('SIGCONT');
    }
  }

  /** Stops every component (controller manager, API server, etcd) and removes the directory. */
  async stop(o: { keepDir?: boolean } = {}): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const name of ['kube-controller-manager', 'kube-apiserver', 'etcd']) await this.kill(name);
    if (o.keepDir || this.opts.keepDir) {
      console.error(`[testenv] control plane stopped; logs kept in ${this.info.logsDir}`);
    } else {
      rmSync(this.info.dir, { recursive: true, force: true });
    }
  }
}
