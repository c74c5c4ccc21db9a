// Starts the controller in-process for e2e tests (leader election off, ephemeral ports). A kill-test that
// needs a separate process spawns `node src/main.ts --kubeconfig …` instead.
import { parseConfig, type ControllerConfig } from '../../src/config.ts';
import { runController } from '../../src/runtime/app.ts';
import { createLogger } from '../../src/telemetry/logger.ts';

export interface StartControllerOptions {
  kubeconfigPath: string;
  vddkImage?: string;
  inventoryURL?: string;
  serviceCIDR?: string;
  extra?: Partial<ControllerConfig>;
}

export async function startController(opts: StartControllerOptions): Promise<{ stop(): Promise<void>; metricsURL: string }> {
  const cfg: ControllerConfig = {
    ...parseConfig(['--kubeconfig', opts.kubeconfigPath, '--leader-elect=false', '--health-port', '0', '--metrics-port', '0'], {}),
    vddkImage: opts.vddkImage ?? '',
    ...(opts.inventoryURL ? { inventoryURL: opts.inventoryURL } : {}),
    ...(opts.serviceCIDR ? { serviceCIDR: opts.serviceCIDR } : {}),
    ...(opts.extra ?? {}),
  };
  // Quiet by default; MC_LOG_LEVEL=debug shows the controller's logs while a test runs.
  const logger = createLogger({ level: process.env.MC_LOG_LEVEL ?? 'warn' });
  const ctl = await runController(cfg, { logger });
  return { stop: () => ctl.stop(), metricsURL: ctl.metricsURL };
}
