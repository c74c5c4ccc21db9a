// The world of the fault and memory files on the shared plane: our CRDs, a storage class, the simulator,
// and the controller running in this process (its maps readable, as the soak needs), talking to the API
// server directly or through the fault proxy.
import { join } from 'node:path';
import { createStorageClass, startSim, type Sim, type WorldFixture } from '../../sim/index.ts';
import { parseConfig } from '../../../src/config.ts';
import { runController, type RunningController } from '../../../src/app.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';
import type { KubeClient } from '../../../src/runtime/kube.ts';
import { installOurCRDs, testEnv, writeKubeconfig } from '../env/index.ts';
import { adminClient } from '../source-helpers.ts';
import { startFaultProxy, type FaultProxy, type FaultRates } from './faultproxy.ts';
import { ensureNamespace } from './fixtures.ts';

export interface InProcessWorld {
  sim: Sim;
  ctl: RunningController;
  /** The admin's client, straight to the API server (never through the proxy). */
  c: KubeClient;
  /** Present when the controller talks through the fault proxy. */
  proxy?: FaultProxy;
  stop(): Promise<void>;
}

export async function startInProcessWorld(o: {
  world: WorldFixture;
  storageClass: string;
  mbPerSecond?: number;
  /** The controller's requests go through a fault proxy injecting these (absent: straight to the server). */
  faults?: FaultRates;
  /** The controller's log level when MC_LOG_LEVEL is unset. */
  logLevel?: string;
  /** How often the controller's caches drop what their keep rules no longer want (default: its own). */
  cacheSweepMs?: number;
}): Promise<InProcessWorld> {
  const env = await testEnv();
  await installOurCRDs();
  await createStorageClass(env.admin.kubeconfigPath, { name: o.storageClass, reclaimPolicy: 'Delete' });
  const sim = await startSim({ kubeconfigPath: env.admin.kubeconfigPath, worlds: [o.world], ...(o.mbPerSecond ? { mbPerSecond: o.mbPerSecond } : {}) });
  let proxy: FaultProxy | undefined;
  let kubeconfig = env.admin.kubeconfigPath;
  if (o.faults) {
    proxy = await startFaultProxy(env.server, env.caPEM, o.faults);
    kubeconfig = join(env.dir, `via-fault-proxy-${process.pid}.kubeconfig`);
    writeKubeconfig(kubeconfig, proxy.url, proxy.caPEM, env.admin.name, env.admin.token);
  }
  const cfg = {
    ...parseConfig(['--kubeconfig', kubeconfig, '--leader-elect=false', '--health-port', '0', '--metrics-port', '0'], {}),
    vddkImage: 'registry.example.com/vddk:8.0.3',
    inventoryURL: sim.inventory.url,
  };
  // The controller's own namespace (its credentials key lives there) exists wherever it runs.
  const c = await adminClient();
  await ensureNamespace(c, cfg.podNamespace);
  const ctl = await runController(cfg, { logger: createLogger({ level: process.env.MC_LOG_LEVEL ?? o.logLevel ?? 'silent' }), ...(o.cacheSweepMs ? { cacheSweepMs: o.cacheSweepMs } : {}) });
  return {
    sim,
    ctl,
    c,
    ...(proxy ? { proxy } : {}),
    stop: async () => {
      await ctl.stop();
      await proxy?.close();
      await sim.stop();
      c.close();
    },
  };
}
