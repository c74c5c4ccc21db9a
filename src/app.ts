// Wires the runtime: kube client, telemetry, manager with every reconciler, health/metrics server and
// leader election. `runController` is what main.ts and the e2e harness call.
import * as k8s from '@kubernetes/client-node';
import type { ControllerConfig } from './config.ts';
import { buildReconcilers } from './controllers/index.ts';
import { KubeEventRecorder } from './telemetry/events.ts';
import { createLogger, type Logger } from './telemetry/logger.ts';
import { Metrics } from './telemetry/metrics.ts';
import { kubernetesMetricsAuthorizer } from './telemetry/metrics-auth.ts';
import { replicaReady, startHealthServer, type HealthServer } from './runtime/health.ts';
import { startControllerWebhook, type ControllerWebhook } from './webhook/run.ts';
import { KubeClient } from './runtime/kube.ts';
import { TokenBucket } from './runtime/ratelimit.ts';
import { SecretKeyring, type KeyringSource } from './credentials/keyring.ts';
import { LeaderElector, RENEW_DEADLINE_MS, defaultIdentity } from './runtime/leader.ts';
import { Manager } from './runtime/manager.ts';
import type { Reconciler } from './runtime/reconciler.ts';
import type { WatchLiveness } from './runtime/informer.ts';
import { checkCoexistence } from './app-coexistence.ts';

export interface RunOptions {
  signal?: AbortSignal;
  /** Called when the leader lease is lost (after the controller stopped). main.ts exits on it. */
  onLostLease?: () => void;
  /** Replace the reconcilers (tests of the runtime itself). */
  reconcilers?: Reconciler[];
  logger?: Logger;
  /** Lease timings (tests). */
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  identity?: string;
  /** Key ring of sealed passwords (default: the Secret cfg.credentialsKeySecret in cfg.podNamespace). */
  keyring?: KeyringSource;
  /** Watch timeouts and the half-open bound (tests shorten them). */
  watchLiveness?: WatchLiveness;
  /** Host-name resolution for the egress policy (tests stand in for DNS). */
  resolve?: (host: string) => Promise<string[]>;
  /** How often caches drop what their keep rules no longer want (tests shorten it). */
  cacheSweepMs?: number;
}

export interface RunningController {
  stop(): Promise<void>;
  metricsURL: string;
  healthURL: string;
  manager: Manager;
  metrics: Metrics;
  isLeader(): boolean;
  /** Base URL of the admission webhook, when webhookMode is not `off`. */
  webhookURL?: string;
}

export function loadKubeConfig(cfg: Pick<ControllerConfig, 'kubeconfig'>): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (cfg.kubeconfig) kc.loadFromFile(cfg.kubeconfig);
  else kc.loadFromCluster();
  return kc;
}

export async function runController(cfg: ControllerConfig, opts: RunOptions = {}): Promise<RunningController> {
  const log = opts.logger ?? createLogger({ level: cfg.logLevel });
  const kc = loadKubeConfig(cfg);
  const metrics = new Metrics({ defaultMetrics: true });
  const identity = opts.identity ?? defaultIdentity();
  const clientOpts = {
    observe: (verb: string, gvr: { plural: string } | undefined, code: number) => metrics.apiRequests.inc({ verb, resource: gvr?.plural ?? 'other', code: String(code) }),
    // The replica's identity in the API server's audit log (who wrote what, and when).
    userAgent: `migration-controller/${identity}`,
  };
  // Three clients: the reconcilers' (fenced by the lease: it writes only while this replica surely leads),
  // the lease's own (its renewals bounded by the renew deadline), and the webhook's (served by every replica).
  // The reconcilers and the webhook each have their own client-side limit (cfg.kubeAPIQPS/kubeAPIBurst),
  // so a campaign's reconciles cannot starve admission reviews; the lease's renewals have none: a renewal
  // held behind a queue of reconciles would lose the lease.
  const limited = (name: string) => ({ limiter: new TokenBucket(cfg.kubeAPIQPS, cfg.kubeAPIBurst), onThrottled: (ms: number) => metrics.rateLimiterWait.observe({ client: name }, ms / 1000) });
  const client = new KubeClient(kc, { ...clientOpts, ...limited('reconcilers') });
  const leaseClient = new KubeClient(kc, { ...clientOpts, timeoutMs: opts.renewDeadlineMs ?? RENEW_DEADLINE_MS });
  const webhookClient = new KubeClient(kc, { ...clientOpts, ...limited('webhook') });
  // Two controllers must never reconcile the same objects: refuse before serving anything.
  try {
    await checkCoexistence(webhookClient, { namespace: cfg.namespace, podNamespace: cfg.podNamespace, leaseNamespace: cfg.leaseNamespace, ownLease: { namespace: cfg.leaseNamespace, name: cfg.leaseName }, takeOver: cfg.takeOver, log: log.child({ component: 'coexistence' }) });
  } catch (e) {
    for (const c of [client, leaseClient, webhookClient]) c.close();
    throw e;
  }
  const events = new KubeEventRecorder(client, 'migration-controller', log.child({ component: 'events' }));
  const manager = new Manager({ client, log, metrics, events, namespace: cfg.namespace, workers: cfg.workers, watchLiveness: opts.watchLiveness, cacheSweepMs: opts.cacheSweepMs });
  // The credentials keyring serves the webhook too (every replica): it uses the unfenced client.
  const keyring = opts.keyring ?? new SecretKeyring({ client: webhookClient, namespace: cfg.podNamespace, name: cfg.credentialsKeySecret });
  metrics.cacheSizes = () => manager.cacheSizes();
  for (const r of opts.reconcilers ?? buildReconcilers(cfg, { metrics, keyring, resolve: opts.resolve })) manager.register(r);

  let elector: LeaderElector | undefined;
  // The webhook is stateless and served by every replica, leader or standby.
  let webhook: ControllerWebhook | undefined;
  const role = (): string => (elector ? (elector.isLeader() ? 'leader' : 'standby') : 'disabled') + (webhook ? ', webhook serving' : '');
  const ready = (): boolean => replicaReady({ webhookRequired: cfg.webhookMode !== 'off', webhookServing: webhook !== undefined, cachesSynced: manager.ready() });
  const servers: HealthServer[] = [];
  const authorizeMetrics = cfg.metricsAuth === 'kubernetes' ? kubernetesMetricsAuthorizer(webhookClient) : undefined;
  const health = await startHealthServer(cfg.healthPort, { ready, role, registry: metrics.registry, authorizeMetrics });
  servers.push(health);
  let metricsServer = health;
  if (cfg.metricsPort !== cfg.healthPort || cfg.metricsPort === 0) {
    metricsServer = await startHealthServer(cfg.metricsPort, { ready, role, registry: metrics.registry, authorizeMetrics });
    servers.push(metricsServer);
  }

  try {
    webhook = await startControllerWebhook(cfg, webhookClient, log.child({ component: 'webhook' }), keyring);
  } catch (e) {
    await Promise.all(servers.map((s) => s.close()));
    throw e;
  }

  let stopped = false;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      stopped = true;
      log.info('stopping');
      await elector?.stop();
      await manager.stop();
      await webhook?.stop();
      await events.flush();
      await Promise.all(servers.map((s) => s.close()));
      client.close();
      leaseClient.close();
      webhookClient.close();
      log.info('stopped');
    })();
    return stopping;
  };

  await manager.start();
  const startWorkers = (): void => {
    // Workers read the caches: wait for the required ones (client-go's WaitForCacheSync).
    void manager.waitForSync().then(() => {
      if (!stopped) manager.startWorkers();
    });
  };
  if (cfg.leaderElect) {
    const le = new LeaderElector(leaseClient, {
      namespace: cfg.leaseNamespace,
      name: cfg.leaseName,
      identity,
      leaseDurationMs: opts.leaseDurationMs,
      renewDeadlineMs: opts.renewDeadlineMs,
      retryPeriodMs: opts.retryPeriodMs,
      log: log.child({ component: 'leader' }),
      onStartedLeading: () => {
        metrics.leader.set(1);
        startWorkers();
      },
      onStoppedLeading: () => {
        metrics.leader.set(0);
        // Another instance may lead now: cancel what is in flight, stop reconciling at once, then let the
        // process go.
        manager.pause();
        client.abortInFlight();
        void stop().then(() => opts.onLostLease?.());
      },
    });
    elector = le;
    client.setFence(() => (le.mayAct() ? undefined : 'this replica does not hold the leader lease (not renewed within the renew deadline)'));
    manager.setGate(() => le.mayAct());
    elector.start();
  } else {
    startWorkers();
  }

  if (opts.signal) {
    if (opts.signal.aborted) await stop();
    else opts.signal.addEventListener('abort', () => void stop(), { once: true });
  }
  log.info({ namespace: cfg.namespace || '(all)', leaderElect: cfg.leaderElect, vddkConfigured: cfg.vddkImage !== '', health: health.url, metrics: metricsServer.url }, 'controller started');
  return { stop, metricsURL: `${metricsServer.url}/metrics`, healthURL: health.url, manager, metrics, isLeader: () => elector?.isLeader() ?? true, webhookURL: webhook?.url };
}
