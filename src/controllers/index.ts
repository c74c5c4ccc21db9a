// Every reconciler the controller runs. Keep it a plain list: one line per controller.
import type { ControllerConfig } from '../config.ts';
import type { Reconciler } from '../runtime/reconciler.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import type { KeyringSource } from '../credentials/keyring.ts';
import { sourceReconciler } from './source/reconciler.ts';
import { TaskReconciler } from './task/reconciler.ts';

export interface ReconcilerDeps {
  /** The process's metrics: domain metrics (imports, stalls, source readiness) land on its registry. */
  metrics?: Metrics;
  /** Opens sealed passwords when projecting Forklift's Secrets. */
  keyring?: KeyringSource;
  /** Host-name resolution for the egress policy (default: the system resolver). */
  resolve?: (host: string) => Promise<string[]>;
}

export function buildReconcilers(cfg: ControllerConfig, deps: ReconcilerDeps = {}): Reconciler[] {
  const task = new TaskReconciler(cfg, { registry: deps.metrics?.registry });
  return [
    sourceReconciler(cfg, { sourceReady: deps.metrics?.sourceReady, keyring: deps.keyring, resolve: deps.resolve }),
    task,
    // The task's finishing lane (task/lane.ts): a VM whose outputs deployed ends within the running pass.
    task.finisher(),
  ];
}
