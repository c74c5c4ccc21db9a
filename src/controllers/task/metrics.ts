// Domain metrics of VMImportTask: imports by outcome and reason, per-phase durations, bytes moved, and
// how many VMs are stalled right now. Registered on the project registry with the common prefix.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { metricName } from '../../telemetry/metrics.ts';

export class TaskMetrics {
  readonly imports: Counter<'namespace' | 'outcome' | 'reason'>;
  readonly phaseDuration: Histogram<'phase'>;
  readonly bytesTransferred: Counter;
  /** Warm imports: precopies completed. */
  readonly precopies: Counter<'namespace'>;
  /** Warm imports: source power-off to the final changes copied. */
  readonly cutoverDuration: Histogram;
  /** Source power-off to VMInstance created, cold and warm side by side. */
  readonly downtime: Histogram<'mode'>;
  /** 1 per stalled VM, labelled namespace/task/vm (the chart's TransferStalled alert). */
  readonly stalled: Gauge<'namespace' | 'task' | 'vm'>;
  private readonly stalledByTask = new Map<string, string[]>();

  constructor(registry: Registry) {
    const registers = [registry];
    const existing = <T>(name: string): T | undefined => registry.getSingleMetric(name) as T | undefined;
    this.imports =
      existing(metricName('imports_total')) ??
      new Counter({ name: metricName('imports_total'), help: 'VM imports that reached a final phase, by namespace, outcome (succeeded, failed) and reason.', labelNames: ['namespace', 'outcome', 'reason'], registers });
    // A phase lasts from seconds (validation) to hours (a 300 GiB transfer).
    const buckets = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400];
    this.phaseDuration =
      existing(metricName('import_phase_duration_seconds')) ??
      new Histogram({ name: metricName('import_phase_duration_seconds'), help: 'Time a VM spent in each import phase (validating, transferring, creating, downtime).', labelNames: ['phase'], buckets, registers });
    this.bytesTransferred =
      existing(metricName('import_bytes_transferred_total')) ??
      new Counter({ name: metricName('import_bytes_transferred_total'), help: 'Disk bytes transferred by finished VM transfers.', registers });
    this.precopies =
      existing(metricName('import_precopies_total')) ??
      new Counter({ name: metricName('import_precopies_total'), help: 'Precopies completed by warm VM imports (each copies the blocks changed since the last).', labelNames: ['namespace'], registers });
    // A cutover copies one delta: seconds to minutes; a downtime is that plus building the VM (cold: the whole copy).
    const short = [1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400];
    this.cutoverDuration =
      existing(metricName('import_cutover_duration_seconds')) ??
      new Histogram({ name: metricName('import_cutover_duration_seconds'), help: 'Warm imports: seconds from the source power-off at cutover to the final changes copied.', buckets: short, registers });
    this.downtime =
      existing(metricName('import_downtime_seconds')) ??
      new Histogram({ name: metricName('import_downtime_seconds'), help: 'Seconds from the source VM power-off to its VMInstance created, by mode (cold, warm).', labelNames: ['mode'], buckets: short, registers });
    this.stalled =
      existing(metricName('vm_stalled')) ??
      new Gauge({ name: metricName('vm_stalled'), help: '1 while a VM transfer has made no progress for the stall timeout (series removed when it moves again or ends).', labelNames: ['namespace', 'task', 'vm'], registers });
  }

  /** Records which VMs of a task are stalled now; VMs no longer listed lose their series. */
  setStalled(task: { namespace: string; name: string }, vmIds: string[]): void {
    const key = `${task.namespace}/${task.name}`;
    for (const vm of this.stalledByTask.get(key) ?? []) {
      if (!vmIds.includes(vm)) this.stalled.remove({ namespace: task.namespace, task: task.name, vm });
    }
    for (const vm of vmIds) this.stalled.set({ namespace: task.namespace, task: task.name, vm }, 1);
    if (vmIds.length) this.stalledByTask.set(key, [...vmIds]);
    else this.stalledByTask.delete(key);
  }
}
