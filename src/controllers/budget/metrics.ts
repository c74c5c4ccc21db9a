// Metrics of the transfer budget, per vCenter and ESXi host: the queue (VMs and disks waiting), how long
// VMs waited for their slot, the oldest wait now (the chart's MigrationControllerTransferQueuedTooLong
// alert, templates/transfer-alerts.yaml), and the slots in use against the budget. Labels carry the
// vCenter's instance identity and the inventory host id only: no tenant's namespace, task or VM, so the
// series stay few (hosts, not VMs) and an admin's dashboard shows the hosts' load, not who imports what.
import { Gauge, Histogram, type Registry } from 'prom-client';
import { metricName } from '../../telemetry/metrics.ts';
import type { Admission } from './budget.ts';

type HostLabels = 'vcenter' | 'host';

export class BudgetMetrics {
  readonly queueLength: Gauge<HostLabels>;
  readonly queuedDisks: Gauge<HostLabels>;
  readonly oldestWait: Gauge<HostLabels>;
  readonly waitSeconds: Histogram<HostLabels>;
  readonly slotsInUse: Gauge<HostLabels>;
  readonly slotsBudget: Gauge<HostLabels>;
  private readonly seen = new Map<string, Set<string>>();

  constructor(registry: Registry) {
    const registers = [registry];
    const labelNames = ['vcenter', 'host'] as const;
    // A second budget on the same registry (a reconciler restarted in process) shares the series.
    const existing = <T>(name: string): T | undefined => registry.getSingleMetric(metricName(name)) as T | undefined;
    this.queueLength = existing<Gauge<HostLabels>>('transfer_queue_vms') ?? new Gauge({ name: metricName('transfer_queue_vms'), help: 'VMs waiting for a transfer slot on the ESXi host (Queued).', labelNames, registers });
    this.queuedDisks = existing<Gauge<HostLabels>>('transfer_queue_disks') ?? new Gauge({ name: metricName('transfer_queue_disks'), help: 'Disks of the VMs waiting for a transfer slot on the ESXi host.', labelNames, registers });
    this.oldestWait = existing<Gauge<HostLabels>>('transfer_queue_oldest_wait_seconds') ?? new Gauge({ name: metricName('transfer_queue_oldest_wait_seconds'), help: 'How long the VM queued longest on the ESXi host has waited so far (0 with no queue).', labelNames, registers });
    // A wait lasts from nothing (a free slot) to hours (a campaign's tail behind a full host).
    const buckets = [1, 10, 30, 60, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400];
    this.waitSeconds = existing<Histogram<HostLabels>>('transfer_queue_wait_seconds') ?? new Histogram({ name: metricName('transfer_queue_wait_seconds'), help: 'Time a VM waited between Queued and its admission to a transfer slot.', labelNames, buckets, registers });
    this.slotsInUse = existing<Gauge<HostLabels>>('transfer_slots_in_use') ?? new Gauge({ name: metricName('transfer_slots_in_use'), help: 'Disk transfer slots held on the ESXi host, every tenant together.', labelNames, registers });
    this.slotsBudget = existing<Gauge<HostLabels>>('transfer_slots_budget') ?? new Gauge({ name: metricName('transfer_slots_budget'), help: 'The platform budget of disk transfer slots per ESXi host (transfer.maxDisksPerHost); absent when the budget is off.', labelNames, registers });
  }

  /**
   * One vCenter's state after an admission pass. `oldestQueuedAt` gives, per host id, the epoch ms of the
   * Queued time of its longest-waiting VM; hosts no longer reported lose their series.
   */
  record(vcenter: string, a: Admission, oldestQueuedAt: ReadonlyMap<string, number>, now: number): void {
    const hosts = new Set<string>();
    for (const h of a.hosts) {
      const l = { vcenter, host: h.host };
      hosts.add(h.host);
      this.queueLength.set(l, h.queuedVMs);
      this.queuedDisks.set(l, h.queuedDisks);
      this.slotsInUse.set(l, h.inUse);
      if (h.budget !== undefined) this.slotsBudget.set(l, h.budget);
      else this.slotsBudget.remove(l);
      const since = oldestQueuedAt.get(h.host);
      this.oldestWait.set(l, h.queuedVMs > 0 && since !== undefined ? Math.max(0, (now - since) / 1000) : 0);
    }
    for (const host of this.seen.get(vcenter) ?? []) {
      if (hosts.has(host)) continue;
      const l = { vcenter, host };
      for (const g of [this.queueLength, this.queuedDisks, this.slotsInUse, this.slotsBudget, this.oldestWait]) g.remove(l);
    }
    this.seen.set(vcenter, hosts);
  }

  /** A VM left the queue for a slot after waiting `seconds`. */
  admitted(vcenter: string, host: string, seconds: number): void {
    this.waitSeconds.observe({ vcenter, host }, Math.max(0, seconds));
  }
}
