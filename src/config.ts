// Controller configuration from flags and environment (flags win), parsed with node:util parseArgs. Every
// knob the controller has is a field of ControllerConfig and a row of KNOBS (its flag, its environment
// variable, its default, its help line); docs/operations.md documents each one and a unit test holds the
// two together. Pure: parseConfig never touches the network or the file system.
import { parseArgs } from 'node:util';
import { parseEgressPolicy, type EgressPolicy } from './preflight/egress.ts';

export interface ControllerConfig {
  /** Path of a kubeconfig; undefined → in-cluster configuration. */
  kubeconfig?: string;
  /** Namespace scope of the controller; '' = all namespaces. */
  namespace: string;
  leaderElect: boolean;
  leaseName: string;
  leaseNamespace: string;
  /** VDDK init image; '' is a supported state (sources report VDDKNotConfigured). */
  vddkImage: string;
  forkliftNamespace: string;
  /** Forklift inventory base URL. */
  inventoryURL: string;
  /** Secret (in forkliftNamespace) publishing the inventory's serving CA under `ca.crt`. */
  inventoryCASecret: string;
  /** Optional override of the cluster's Service CIDR (otherwise discovered). */
  serviceCIDR?: string;
  /** /healthz and /readyz (and /metrics); 0 = any free port. */
  healthPort: number;
  /** /metrics; 0 = any free port; equal to healthPort = served by the same listener. */
  metricsPort: number;
  /** `kubernetes`: /metrics answers only a bearer token the API server allows `get` on /metrics (src/telemetry/metrics-auth.ts). */
  metricsAuth: 'none' | 'kubernetes';
  /** Admission webhook (served by src/webhook). */
  webhookPort: number;
  /**
   * How the admission webhook runs:
   * - `selfManaged`: serve on webhookPort with a CA + serving certificate this controller keeps in Secret
   *   webhookSecretName (rotated before expiry) and injects into the chart's two configurations;
   * - `certManager`: serve the certificate cert-manager mounts in webhookCertDir (reloaded on change);
   * - `local`: serve on 127.0.0.1 with an in-memory certificate and register both configurations pointing
   *   at https://127.0.0.1:<port> (a controller run outside the cluster: the demo, e2e tests);
   * - `off`: no webhook (the reconcilers repeat every check anyway).
   */
  webhookMode: 'selfManaged' | 'certManager' | 'local' | 'off';
  webhookSecretName: string;
  webhookServiceName: string;
  webhookValidatingConfiguration: string;
  webhookMutatingConfiguration: string;
  webhookCertDir: string;
  /** PEM bundle file of the CA of the API server's client certificate; set, only that caller is answered. */
  webhookClientCAFile?: string;
  /** Accepted CNs / DNS SANs of that certificate (empty: any of the CA). */
  webhookClientNames: string[];
  /** Secret in podNamespace holding the key ring that seals inline passwords (created when absent). */
  credentialsKeySecret: string;
  /** Where sources may point (platform values EGRESS_ALLOWED_NETWORKS, EGRESS_DENIED_NETWORKS, EGRESS_DENIED_NAMES). */
  egress: EgressPolicy;
  /** Namespace the controller runs in (Leases, the webhook Secret, the Service-CIDR probe). */
  podNamespace: string;
  logLevel: string;
  /** Workers per reconciler. */
  workers: number;
  /**
   * Client-side rate limit of the reconcilers' (and, separately, the webhook's) requests to the API server:
   * a token bucket refilled at kubeAPIQPS per second holding at most kubeAPIBurst (client-go's QPS/Burst,
   * src/runtime/ratelimit.ts). The lease's renewals are not limited.
   */
  kubeAPIQPS: number;
  kubeAPIBurst: number;
  /** How long a VM's transfer may make no progress before the VM is reported Stalled. */
  taskStallAfterSeconds: number;
  /**
   * The platform allows tasks with spec.guestConversion (chart value guestConversion.enabled): the
   * administrator states that every node carries the seccomp profile virt-v2v's libguestfs needs to
   * start passt. Off, the webhook refuses the field.
   */
  guestConversion: boolean;
  /**
   * Start although Cozystack's own controller for these kinds has served them (its finalizer on tasks,
   * its Helm release owning the CRDs): this controller takes those tasks over (chart value
   * coexistence.takeOver). Its Lease renewed within two minutes refuses regardless
   * (src/cozystack/coexistence.ts).
   */
  takeOver: boolean;
  /**
   * The platform's transfer budget (docs/operations.md, "Transfer budget"; src/controllers/budget/): off,
   * every ready VM gets its Migration at once and only Forklift's per-Provider limit applies.
   */
  transferBudget: boolean;
  /** Disks in transfer at once per ESXi host, over every tenant's tasks that import from its vCenter. */
  transferMaxDisksPerHost: number;
  /** Of one host's budget, the disks one tenant (namespace) may hold; 0 = no cap beyond the host's. */
  transferMaxDisksPerTenant: number;
}

export const DEFAULT_FORKLIFT_NAMESPACE = 'cozy-forklift';
export const INVENTORY_CA_SECRET = 'forklift-inventory-serving-cert';
export const DEFAULT_LEASE_NAME = 'migration-controller-leader';
/** Cozystack's namespace for this controller. */
export const DEFAULT_CONTROLLER_NAMESPACE = 'cozy-migration-controller';
/**
 * Client-side limit: Cozystack's own controller for these kinds sets 50/100 (client-go's 5/10 and
 * controller-runtime's 20/30 are sized for controllers of a handful of objects). Unlimited, a campaign of
 * 2,000 tasks relisting and reconciling at once saturated kube-apiserver; 50/s is above what the
 * 800-task benchmark needs at its peak, so the limit shapes bursts without slowing a normal campaign.
 */
export const DEFAULT_KUBE_API_QPS = 50;
export const DEFAULT_KUBE_API_BURST = 100;
/**
 * Disks in transfer per ESXi host across the platform: half of Forklift's MAX_VM_INFLIGHT (20) and about a
 * fifth of the 48 NFC streams an ESXi host serves by default (src/controllers/budget/budget.ts), leaving the
 * rest to backups and vSphere's own copies so that an import never makes them fail to open a disk.
 */
export const DEFAULT_TRANSFER_MAX_DISKS_PER_HOST = 10;
/**
 * The most the flag takes: past what any ESXi host's NFC service serves even with its buffers raised
 * (48 streams by default), a budget no longer protects anything and is a typo.
 */
export const MAX_TRANSFER_DISKS_PER_HOST = 1000;

/** Ten minutes without progress: longer than Forklift's slowest quiet phase (a warm migration's wait between precopies). */
export const DEFAULT_TASK_STALL_AFTER_SECONDS = 600;

export function defaultInventoryURL(forkliftNamespace: string): string {
  return `https://forklift-inventory.${forkliftNamespace}.svc:8443`;
}

/** One knob: its flag (parseArgs option), its environment variable, its default in words, its help line. */
export interface Knob {
  flag: string;
  type: 'string' | 'boolean';
  env?: string;
  default: string;
  help: string;
}

export const KNOBS: readonly Knob[] = [
  { flag: 'kubeconfig', type: 'string', env: 'KUBECONFIG', default: 'in-cluster', help: 'kubeconfig path' },
  { flag: 'namespace', type: 'string', env: 'WATCH_NAMESPACE', default: "'' (all namespaces)", help: 'watch one namespace' },
  { flag: 'leader-elect', type: 'boolean', env: 'LEADER_ELECT', default: 'true in-cluster, false with a kubeconfig', help: 'leader election over a Lease' },
  { flag: 'lease-name', type: 'string', env: 'LEASE_NAME', default: DEFAULT_LEASE_NAME, help: 'Lease name' },
  { flag: 'lease-namespace', type: 'string', env: 'LEASE_NAMESPACE', default: '$POD_NAMESPACE, else the Forklift namespace', help: 'Lease namespace' },
  { flag: 'pod-namespace', type: 'string', env: 'POD_NAMESPACE', default: DEFAULT_CONTROLLER_NAMESPACE, help: 'namespace the controller runs in (webhook Secret, key ring, Service-CIDR probe)' },
  { flag: 'vddk-image', type: 'string', env: 'VDDK_IMAGE', default: "'' (sources report VDDKNotConfigured)", help: 'VDDK init image' },
  { flag: 'forklift-namespace', type: 'string', env: 'FORKLIFT_NAMESPACE', default: DEFAULT_FORKLIFT_NAMESPACE, help: "Forklift's namespace" },
  { flag: 'inventory-url', type: 'string', env: 'INVENTORY_URL', default: 'https://forklift-inventory.<forklift namespace>.svc:8443', help: 'Forklift inventory URL' },
  { flag: 'inventory-ca-secret', type: 'string', env: 'INVENTORY_CA_SECRET', default: INVENTORY_CA_SECRET, help: "Secret in the Forklift namespace with the inventory's serving CA (ca.crt)" },
  { flag: 'service-cidr', type: 'string', env: 'SERVICE_CIDR', default: 'discovered', help: 'Service CIDR override' },
  { flag: 'health-port', type: 'string', env: 'HEALTH_PORT', default: '8081', help: 'health probes port (0 = any)' },
  { flag: 'metrics-port', type: 'string', env: 'METRICS_PORT', default: '8080', help: 'metrics port (0 = any; = health port: one listener)' },
  { flag: 'metrics-auth', type: 'string', env: 'METRICS_AUTH', default: 'none', help: 'none | kubernetes (scrapers authenticated by TokenReview and authorised by SubjectAccessReview)' },
  { flag: 'webhook-port', type: 'string', env: 'WEBHOOK_PORT', default: '9443', help: 'admission webhook port' },
  { flag: 'webhook-mode', type: 'string', env: 'WEBHOOK_CERT_MODE', default: 'selfManaged in-cluster, off with a kubeconfig', help: 'selfManaged | certManager | local | off' },
  { flag: 'webhook-secret-name', type: 'string', env: 'WEBHOOK_SECRET_NAME', default: 'migration-controller-webhook-tls', help: "Secret of the webhook's serving certificate" },
  { flag: 'webhook-service-name', type: 'string', env: 'WEBHOOK_SERVICE_NAME', default: 'migration-controller-webhook', help: "the webhook's Service" },
  { flag: 'webhook-validating-configuration', type: 'string', env: 'WEBHOOK_VALIDATING_CONFIGURATION', default: 'migration-controller-validating', help: 'ValidatingWebhookConfiguration to inject the CA into' },
  { flag: 'webhook-mutating-configuration', type: 'string', env: 'WEBHOOK_MUTATING_CONFIGURATION', default: 'migration-controller-early', help: 'MutatingWebhookConfiguration to inject the CA into' },
  { flag: 'webhook-cert-dir', type: 'string', env: 'WEBHOOK_CERT_DIR', default: '/etc/migration-controller/webhook-tls', help: 'certificate directory (certManager mode)' },
  { flag: 'webhook-client-ca-file', type: 'string', env: 'WEBHOOK_CLIENT_CA_FILE', default: "'' (callers not authenticated)", help: "CA bundle of the API server's webhook client certificate; set, every review needs that certificate" },
  { flag: 'webhook-client-names', type: 'string', env: 'WEBHOOK_CLIENT_NAMES', default: "'' (any name the CA signed)", help: 'accepted common names / DNS names of that client certificate (comma-separated)' },
  { flag: 'credentials-key-secret', type: 'string', env: 'CREDENTIALS_KEY_SECRET', default: 'migration-controller-credentials-key', help: 'Secret of the key ring sealing inline passwords' },
  { flag: 'egress-allowed-networks', type: 'string', env: 'EGRESS_ALLOWED_NETWORKS', default: "'' (any)", help: 'CIDRs sources may point into (comma-separated)' },
  { flag: 'egress-denied-networks', type: 'string', env: 'EGRESS_DENIED_NETWORKS', default: "''", help: 'CIDRs sources may not point into' },
  { flag: 'egress-denied-names', type: 'string', env: 'EGRESS_DENIED_NAMES', default: "''", help: 'host names (or *.suffix) sources may not name' },
  { flag: 'log-level', type: 'string', env: 'LOG_LEVEL', default: 'info', help: 'trace | debug | info | warn | error' },
  { flag: 'workers', type: 'string', env: 'WORKERS', default: '4', help: 'workers per reconciler (1-256)' },
  { flag: 'kube-api-qps', type: 'string', env: 'KUBE_API_QPS', default: String(DEFAULT_KUBE_API_QPS), help: 'client-side request rate to the API server (requests/s)' },
  { flag: 'kube-api-burst', type: 'string', env: 'KUBE_API_BURST', default: String(DEFAULT_KUBE_API_BURST), help: 'client-side burst above that rate (requests)' },
  { flag: 'task-stall-after-seconds', type: 'string', env: 'MC_TASK_STALL_AFTER_SECONDS', default: String(DEFAULT_TASK_STALL_AFTER_SECONDS), help: 'a transfer without progress this long is reported Stalled' },
  { flag: 'take-over', type: 'boolean', env: 'TAKE_OVER', default: 'false', help: "start although Cozystack's own controller served these kinds (its finalizer on tasks, its CRDs), and take its tasks over; never while its Lease is renewed" },
  { flag: 'guest-conversion', type: 'boolean', env: 'GUEST_CONVERSION_ENABLED', default: 'false', help: 'allow tasks with spec.guestConversion (the nodes carry the seccomp profile libguestfs/passt needs)' },
  { flag: 'transfer-budget', type: 'boolean', env: 'TRANSFER_BUDGET', default: 'true', help: "the platform's per-ESXi-host transfer budget (false: every ready VM starts at once, Forklift's per-Provider limit alone)" },
  { flag: 'transfer-max-disks-per-host', type: 'string', env: 'TRANSFER_MAX_DISKS_PER_HOST', default: String(DEFAULT_TRANSFER_MAX_DISKS_PER_HOST), help: 'disks in transfer at once per ESXi host, every tenant together (an ESXi host serves 48 NFC streams by default)' },
  { flag: 'transfer-max-disks-per-tenant', type: 'string', env: 'TRANSFER_MAX_DISKS_PER_TENANT', default: '0 (no cap)', help: "of one host's budget, the disks one namespace may hold" },
];

export const USAGE = `migration-controller [flags]   (each flag also reads the environment variable named; the flag wins)\n${KNOBS.map((k) => {
  const name = k.type === 'boolean' ? `--${k.flag}[=true|false]` : `--${k.flag} <value>`;
  return `  ${name.padEnd(44)}${k.help} (default ${k.default}${k.env ? `; env ${k.env}` : ''})`;
}).join('\n')}\n  --help`;

export class ConfigError extends Error {
  constructor(message: string) {
    super(`${message}\n\n${USAGE}`);
    this.name = 'ConfigError';
  }
}

function parseBool(v: string, flag: string): boolean {
  if (/^(true|1|yes)$/i.test(v)) return true;
  if (/^(false|0|no)$/i.test(v)) return false;
  throw new ConfigError(`--${flag}: not a boolean: ${v}`);
}

function parseInteger(v: string, flag: string, min: number, max: number, what: string): number {
  const n = /^\d+$/.test(v.trim()) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new ConfigError(`--${flag}: not ${what} between ${min} and ${max}: ${v}`);
  return n;
}

function parseRate(v: string, flag: string): number {
  const n = /^\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : NaN;
  // Below 0.1/s a reconcile pass of a multi-VM task (dozens of requests) would take minutes.
  if (!Number.isFinite(n) || n < 0.1 || n > 100_000) throw new ConfigError(`--${flag}: not a rate between 0.1 and 100000 requests/s: ${v}`);
  return n;
}

const BOOLEAN_FLAGS: ReadonlySet<string> = new Set(KNOBS.filter((k) => k.type === 'boolean').map((k) => k.flag));

/**
 * parseArgs takes a boolean as `--x` or `--no-x`; the chart and existing invocations also write
 * `--x=true|false`, which become the form parseArgs takes (a value that is not a boolean is refused).
 */
function booleanForms(argv: readonly string[]): string[] {
  return argv.map((a) => {
    const m = /^--([a-z-]+)=(.*)$/s.exec(a);
    if (!m || !BOOLEAN_FLAGS.has(m[1]!)) return a;
    return parseBool(m[2]!, m[1]!) ? `--${m[1]}` : `--no-${m[1]}`;
  });
}

export function parseConfig(argv: string[], env: NodeJS.ProcessEnv): ControllerConfig {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: booleanForms(argv),
      options: { ...Object.fromEntries(KNOBS.map((k) => [k.flag, { type: k.type }])), help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
      allowNegative: true,
    }));
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    const err = e as Error & { code?: string };
    // parseArgs's own words, with the flag named as the usage names it.
    if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw new ConfigError(`unknown flag ${/'([^']+)'/.exec(err.message)?.[1] ?? err.message}`);
    throw new ConfigError(err.message);
  }
  if (values.help) throw new ConfigError('usage');
  const knob = (flag: string): Knob => KNOBS.find((k) => k.flag === flag)!;
  /** The flag's value, else its environment variable's (undefined when neither is set). */
  const get = (flag: string): string | undefined => {
    const v = values[flag];
    if (typeof v === 'string') return v;
    if (typeof v === 'boolean') return String(v);
    const e = knob(flag).env;
    return e ? env[e] : undefined;
  };
  const bool = (flag: string, dflt: boolean): boolean => {
    const v = get(flag);
    return v === undefined || v === '' ? dflt : parseBool(v, flag);
  };
  const port = (flag: string, dflt: number): number => {
    const v = get(flag);
    return v === undefined ? dflt : parseInteger(v, flag, 0, 65535, 'a port');
  };

  const kubeconfig = get('kubeconfig') || undefined;
  const inCluster = !kubeconfig && !!env.KUBERNETES_SERVICE_HOST;
  if (!kubeconfig && !inCluster) throw new ConfigError('no --kubeconfig and not running in a cluster (KUBERNETES_SERVICE_HOST unset)');
  const forkliftNamespace = get('forklift-namespace') || DEFAULT_FORKLIFT_NAMESPACE;
  const workersRaw = get('workers');
  const workers = workersRaw === undefined ? 4 : parseInteger(workersRaw, 'workers', 1, 256, 'a count');
  const logLevel = get('log-level') || 'info';
  if (!['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(logLevel)) throw new ConfigError(`--log-level: unknown level ${logLevel}`);
  const inventoryURL = get('inventory-url') || defaultInventoryURL(forkliftNamespace);
  try {
    new URL(inventoryURL);
  } catch {
    throw new ConfigError(`--inventory-url: not a URL: ${inventoryURL}`);
  }
  const webhookMode = get('webhook-mode') || (inCluster ? 'selfManaged' : 'off');
  if (!['selfManaged', 'certManager', 'local', 'off'].includes(webhookMode)) throw new ConfigError(`--webhook-mode: unknown mode ${webhookMode}`);
  const podNamespace = get('pod-namespace') || DEFAULT_CONTROLLER_NAMESPACE;
  let egress: EgressPolicy;
  try {
    egress = parseEgressPolicy({ allowed: get('egress-allowed-networks'), denied: get('egress-denied-networks'), deniedNames: get('egress-denied-names') });
  } catch (e) {
    throw new ConfigError(`egress policy: ${(e as Error).message}`);
  }
  const qpsRaw = get('kube-api-qps');
  const kubeAPIQPS = qpsRaw === undefined || qpsRaw === '' ? DEFAULT_KUBE_API_QPS : parseRate(qpsRaw, 'kube-api-qps');
  const burstRaw = get('kube-api-burst');
  const kubeAPIBurst = burstRaw === undefined || burstRaw === '' ? DEFAULT_KUBE_API_BURST : parseInteger(burstRaw, 'kube-api-burst', 1, 100_000, 'a count');
  const stallRaw = get('task-stall-after-seconds');
  // At least a second: a stall bound of 0 would report every VM Stalled between two progress writes.
  const taskStallAfterSeconds = stallRaw === undefined || stallRaw === '' ? DEFAULT_TASK_STALL_AFTER_SECONDS : parseInteger(stallRaw, 'task-stall-after-seconds', 1, 7 * 24 * 3600, 'a number of seconds');
  const perHostRaw = get('transfer-max-disks-per-host');
  const transferMaxDisksPerHost = perHostRaw === undefined || perHostRaw === '' ? DEFAULT_TRANSFER_MAX_DISKS_PER_HOST : parseInteger(perHostRaw, 'transfer-max-disks-per-host', 1, MAX_TRANSFER_DISKS_PER_HOST, 'a number of disks');
  const perTenantRaw = get('transfer-max-disks-per-tenant');
  const transferMaxDisksPerTenant = perTenantRaw === undefined || perTenantRaw === '' ? 0 : parseInteger(perTenantRaw, 'transfer-max-disks-per-tenant', 0, MAX_TRANSFER_DISKS_PER_HOST, 'a number of disks');
  return {
    kubeconfig,
    namespace: get('namespace') ?? '',
    leaderElect: bool('leader-elect', inCluster),
    leaseName: get('lease-name') || DEFAULT_LEASE_NAME,
    leaseNamespace: get('lease-namespace') || env.POD_NAMESPACE || forkliftNamespace,
    vddkImage: (get('vddk-image') ?? '').trim(),
    forkliftNamespace,
    inventoryURL,
    inventoryCASecret: get('inventory-ca-secret') || INVENTORY_CA_SECRET,
    serviceCIDR: get('service-cidr') || undefined,
    healthPort: port('health-port', 8081),
    metricsPort: port('metrics-port', 8080),
    metricsAuth: parseMetricsAuth(get('metrics-auth')),
    webhookPort: port('webhook-port', 9443),
    webhookMode: webhookMode as ControllerConfig['webhookMode'],
    webhookSecretName: get('webhook-secret-name') || 'migration-controller-webhook-tls',
    webhookServiceName: get('webhook-service-name') || 'migration-controller-webhook',
    webhookValidatingConfiguration: get('webhook-validating-configuration') || 'migration-controller-validating',
    webhookMutatingConfiguration: get('webhook-mutating-configuration') || 'migration-controller-early',
    webhookCertDir: get('webhook-cert-dir') || '/etc/migration-controller/webhook-tls',
    ...(get('webhook-client-ca-file') ? { webhookClientCAFile: get('webhook-client-ca-file')! } : {}),
    webhookClientNames: (get('webhook-client-names') ?? '').split(/[\s,]+/).filter(Boolean),
    credentialsKeySecret: get('credentials-key-secret') || 'migration-controller-credentials-key',
    egress,
    podNamespace,
    logLevel,
    workers,
    kubeAPIQPS,
    kubeAPIBurst,
    taskStallAfterSeconds,
    guestConversion: bool('guest-conversion', false),
    takeOver: bool('take-over', false),
    transferBudget: bool('transfer-budget', true),
    transferMaxDisksPerHost,
    transferMaxDisksPerTenant,
  };
}

function parseMetricsAuth(v: string | undefined): 'none' | 'kubernetes' {
  if (v === undefined || v === '' || v === 'none') return 'none';
  if (v === 'kubernetes') return 'kubernetes';
  throw new ConfigError(`--metrics-auth: unknown mode ${v} (none or kubernetes)`);
}
