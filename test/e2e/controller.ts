// Starts the controller in-process for e2e tests (leader election off, ephemeral ports). A kill-test that
// needs a separate process spawns `node src/main.ts --kubeconfig …` instead.
import { parseConfig, type ControllerConfig } from '../../src/config.ts';
import { runController } from '../../src/app.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { KubeClient, isAlreadyExists, type KubeObject } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { loadKubeConfig } from '../../src/app.ts';

export interface StartControllerOptions {
  kubeconfigPath: string;
  vddkImage?: string;
  inventoryURL?: string;
  serviceCIDR?: string;
  extra?: Partial<ControllerConfig>;
  /** Stands in for DNS (the egress policy resolves source host names). */
  resolve?: (host: string) => Promise<string[]>;
  /**
   * Receives every log line the controller writes (pino's JSON, one line per call) instead of stdout,
   * at `logLevel` (default MC_LOG_LEVEL, else warn): an auditing test reads what an operator's log
   * collector would keep.
   */
  logDestination?: NodeJS.WritableStream;
  logLevel?: string;
}

export async function startController(opts: StartControllerOptions): Promise<{ stop(): Promise<void>; metricsURL: string }> {
  const cfg: ControllerConfig = {
    ...parseConfig(['--kubeconfig', opts.kubeconfigPath, '--leader-elect=false', '--health-port', '0', '--metrics-port', '0'], {}),
    vddkImage: opts.vddkImage ?? '',
    ...(opts.inventoryURL ? { inventoryURL: opts.inventoryURL } : {}),
    ...(opts.serviceCIDR ? { serviceCIDR: opts.serviceCIDR } : {}),
    ...(opts.extra ?? {}),
  };
  // The controller's own namespace (projected Secrets, the credentials key) exists wherever it runs.
  const admin = new KubeClient(loadKubeConfig(cfg));
  try {
    await admin.create(GVRs.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: cfg.podNamespace } } as KubeObject);
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
  } finally {
    admin.close();
  }
  // Quiet by default; MC_LOG_LEVEL=debug shows the controller's logs while a test runs.
  const logger = createLogger({ level: opts.logLevel ?? process.env.MC_LOG_LEVEL ?? 'warn', destination: opts.logDestination });
  const ctl = await runController(cfg, { logger, resolve: opts.resolve });
  return { stop: () => ctl.stop(), metricsURL: ctl.metricsURL };
}
