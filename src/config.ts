// Controller configuration from flags and environment (flags win). Pure: parseConfig never touches the
// network or the file system.
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
   * Benchmark baseline only (the polling anchor): changes of secondary kinds (Forklift objects, claims…)
   * wake no reconcile, and every requeue is stretched to pollIntervalMs. Never for production.
   */
  pollOnly: boolean;
  /** Requeue period in poll-only mode (the anchor polls every 20 s while a transfer runs). */
  pollIntervalMs: number;
  /** A transfer that moved nothing for this long is reported Stalled with a diagnosis (default 600 s). */
  taskStallAfterSeconds?: number;
  /**
   * The platform allows tasks with spec.guestConversion (chart value guestConversion.enabled): the
   * administrator states that every node carries the seccomp profile virt-v2v's libguestfs needs to
   * start passt. Off, the webhook refuses the field.
   */
  guestConversion: boolean;
}

export const DEFAULT_FORKLIFT_NAMESPACE = 'cozy-forklift';
export const INVENTORY_CA_SECRET = 'forklift-inventory-serving-cert';
export const DEFAULT_LEASE_NAME = 'migration-controller-leader';
/** Cozystack's namespace for this controller. */
export const DEFAULT_CONTROLLER_NAMESPACE = 'cozy-migration-controller';

export function defaultInventoryURL(forkliftNamespace: string): string {
  return `https://forklift-inventory.${forkliftNamespace}.svc:8443`;
}

const USAGE = `migration-controller [flags]
  --kubeconfig <path>          kubeconfig (default: $KUBECONFIG, else in-cluster)
  --namespace <ns>             watch one namespace ('' = all; env WATCH_NAMESPACE)
  --leader-elect[=true|false]  leader election (default: true in-cluster, false with a kubeconfig)
  --lease-name <name>          Lease name (default ${DEFAULT_LEASE_NAME})
  --lease-namespace <ns>       Lease namespace (default: $POD_NAMESPACE, else the forklift namespace)
  --vddk-image <ref>           VDDK init image (env VDDK_IMAGE; empty = not configured)
  --forklift-namespace <ns>    Forklift's namespace (default ${DEFAULT_FORKLIFT_NAMESPACE})
  --inventory-url <url>        Forklift inventory URL (default https://forklift-inventory.<ns>.svc:8443)
  --service-cidr <cidr>        Service CIDR override
  --health-port <n>            health probes (default 8081)
  --metrics-port <n>           metrics (default 8080)
  --webhook-port <n>           admission webhook (default 9443)
  --webhook-mode <mode>        selfManaged|certManager|local|off (env WEBHOOK_CERT_MODE; default selfManaged
                               in-cluster, off with a kubeconfig)
  --log-level <level>          trace|debug|info|warn|error (default info)
  --workers <n>                workers per controller (default 4)
  --poll-only[=true|false]     benchmark baseline: no wake-ups from secondary kinds, fixed requeue (default false)
  --poll-interval-ms <n>       requeue period in poll-only mode (default 20000)
  --guest-conversion[=true|false]  allow tasks with spec.guestConversion (env GUEST_CONVERSION_ENABLED;
                               default false: the nodes must carry the seccomp profile libguestfs/passt needs)`;

export class ConfigError extends Error {
  constructor(message: string) {
    super(`${message}\n\n${USAGE}`);
    this.name = 'ConfigError';
  }
}

function parseBool(v: string, flag: string): boolean {
  if (/^(true|1|yes)$/i.test(v)) return true;
  if (/^(false|0|no)$/i.test(v)) return false;
  throw new ConfigError(`${flag}: not a boolean: ${v}`);
}

function parsePort(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new ConfigError(`${flag}: not a port: ${v}`);
  return n;
}

const BOOL_FLAGS = new Set(['leader-elect', 'poll-only', 'guest-conversion']);

export function parseConfig(argv: string[], env: NodeJS.ProcessEnv): ControllerConfig {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--help' || a === '-h') throw new ConfigError('usage');
    if (!a.startsWith('--')) throw new ConfigError(`unexpected argument: ${a}`);
    const eq = a.indexOf('=');
    const name = eq >= 0 ? a.slice(2, eq) : a.slice(2);
    let value: string;
    if (eq >= 0) value = a.slice(eq + 1);
    else if (BOOL_FLAGS.has(name) && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--'))) value = 'true';
    else {
      const next = argv[i + 1];
      if (next === undefined) throw new ConfigError(`--${name} needs a value`);
      value = next;
      i++;
    }
    flags.set(name, value);
  }
  const known = ['kubeconfig', 'namespace', 'leader-elect', 'lease-name', 'lease-namespace', 'vddk-image', 'forklift-namespace', 'inventory-url', 'service-cidr', 'health-port', 'metrics-port', 'webhook-port', 'webhook-mode', 'log-level', 'workers', 'poll-only', 'poll-interval-ms', 'guest-conversion'];
  for (const k of flags.keys()) if (!known.includes(k)) throw new ConfigError(`unknown flag --${k}`);

  const get = (flag: string, envName: string | undefined): string | undefined => flags.get(flag) ?? (envName ? env[envName] : undefined);
  const kubeconfig = get('kubeconfig', 'KUBECONFIG') || undefined;
  const inCluster = !kubeconfig && !!env.KUBERNETES_SERVICE_HOST;
  if (!kubeconfig && !inCluster) throw new ConfigError('no --kubeconfig and not running in a cluster (KUBERNETES_SERVICE_HOST unset)');
  const forkliftNamespace = get('forklift-namespace', 'FORKLIFT_NAMESPACE') || DEFAULT_FORKLIFT_NAMESPACE;
  const le = get('leader-elect', 'LEADER_ELECT');
  const workersRaw = get('workers', 'WORKERS');
  const workers = workersRaw === undefined ? 4 : Number(workersRaw);
  if (!Number.isInteger(workers) || workers < 1 || workers > 256) throw new ConfigError(`--workers: not a count between 1 and 256: ${workersRaw}`);
  const pollRaw = flags.get('poll-interval-ms');
  const pollIntervalMs = pollRaw === undefined ? 20_000 : Number(pollRaw);
  if (!Number.isInteger(pollIntervalMs) || pollIntervalMs < 1) throw new ConfigError(`--poll-interval-ms: not a positive number of milliseconds: ${pollRaw}`);
  const pollOnly = flags.has('poll-only') ? parseBool(flags.get('poll-only')!, '--poll-only') : false;
  const stallRaw = env.MC_TASK_STALL_AFTER_SECONDS;
  const stallSeconds = stallRaw === undefined || stallRaw === '' ? undefined : Number(stallRaw);
  if (stallSeconds !== undefined && !(Number.isFinite(stallSeconds) && stallSeconds > 0)) throw new ConfigError(`MC_TASK_STALL_AFTER_SECONDS: not a positive number of seconds: ${stallRaw}`);
  const gc = get('guest-conversion', 'GUEST_CONVERSION_ENABLED');
  const guestConversion = gc === undefined || gc === '' ? false : parseBool(gc, '--guest-conversion');
  const logLevel = get('log-level', 'LOG_LEVEL') || 'info';
  if (!['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(logLevel)) throw new ConfigError(`--log-level: unknown level ${logLevel}`);
  const inventoryURL = get('inventory-url', 'INVENTORY_URL') || defaultInventoryURL(forkliftNamespace);
  try {
    new URL(inventoryURL);
  } catch {
    throw new ConfigError(`--inventory-url: not a URL: ${inventoryURL}`);
  }
  const webhookMode = get('webhook-mode', 'WEBHOOK_CERT_MODE') || (inCluster ? 'selfManaged' : 'off');
  if (!['selfManaged', 'certManager', 'local', 'off'].includes(webhookMode)) throw new ConfigError(`--webhook-mode: unknown mode ${webhookMode}`);
  const podNamespace = env.POD_NAMESPACE || DEFAULT_CONTROLLER_NAMESPACE;
  let egress: EgressPolicy;
  try {
    egress = parseEgressPolicy({ allowed: env.EGRESS_ALLOWED_NETWORKS, denied: env.EGRESS_DENIED_NETWORKS, deniedNames: env.EGRESS_DENIED_NAMES });
  } catch (e) {
    throw new ConfigError(`egress policy: ${(e as Error).message}`);
  }
  return {
    kubeconfig,
    namespace: get('namespace', 'WATCH_NAMESPACE') ?? '',
    leaderElect: le === undefined ? inCluster : parseBool(le, '--leader-elect'),
    leaseName: get('lease-name', 'LEASE_NAME') || DEFAULT_LEASE_NAME,
    leaseNamespace: get('lease-namespace', 'LEASE_NAMESPACE') || env.POD_NAMESPACE || forkliftNamespace,
    vddkImage: (get('vddk-image', 'VDDK_IMAGE') ?? '').trim(),
    forkliftNamespace,
    inventoryURL,
    inventoryCASecret: INVENTORY_CA_SECRET,
    serviceCIDR: get('service-cidr', 'SERVICE_CIDR') || undefined,
    healthPort: parsePort(get('health-port', 'HEALTH_PORT') ?? '8081', '--health-port'),
    metricsPort: parsePort(get('metrics-port', 'METRICS_PORT') ?? '8080', '--metrics-port'),
    webhookPort: parsePort(get('webhook-port', 'WEBHOOK_PORT') ?? '9443', '--webhook-port'),
    webhookMode: webhookMode as ControllerConfig['webhookMode'],
    webhookSecretName: env.WEBHOOK_SECRET_NAME || 'migration-controller-webhook-tls',
    webhookServiceName: env.WEBHOOK_SERVICE_NAME || 'migration-controller-webhook',
    webhookValidatingConfiguration: env.WEBHOOK_VALIDATING_CONFIGURATION || 'migration-controller-validating',
    webhookMutatingConfiguration: env.WEBHOOK_MUTATING_CONFIGURATION || 'migration-controller-early',
    webhookCertDir: env.WEBHOOK_CERT_DIR || '/etc/migration-controller/webhook-tls',
    credentialsKeySecret: env.CREDENTIALS_KEY_SECRET || 'migration-controller-credentials-key',
    egress,
    podNamespace,
    logLevel,
    workers,
    pollOnly,
    pollIntervalMs,
    guestConversion,
    ...(stallSeconds ? { taskStallAfterSeconds: stallSeconds } : {}),
  };
}
