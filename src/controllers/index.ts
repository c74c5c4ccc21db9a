// Every reconciler the controller runs. Keep it a plain list: one line per controller.
import type { ControllerConfig } from '../config.ts';
import type { Reconciler } from '../runtime/reconciler.ts';
import type { Metrics } from '../telemetry/metrics.ts';
import { sourceReconciler } from './source/reconciler.ts';
import { taskReconciler } from './task/reconciler.ts';

export interface ReconcilerDeps {
  /** The process's metrics: domain metrics (imports, stalls, source readiness) land on its registry. */
  metrics?: Metrics;
}

export function buildReconcilers(cfg: ControllerConfig, deps: ReconcilerDeps = {}): Reconciler[] {
  return [
    sourceReconciler(cfg, { sourceReady: deps.metrics?.sourceReady }),
    taskReconciler(cfg, { registry: deps.metrics?.registry }),
  ];
}
