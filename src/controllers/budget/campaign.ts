// The transfer budget as the task reconciler holds it: one object for the process (dependencies injected),
// through which every admission pass over a vCenter goes. It keeps what must not be decided twice at once
// and what is measured across passes — and nothing the world cannot give back:
// - passes over one vCenter run one at a time (`run`), the checkpoints a pass writes included, as
//   Forklift serialises its own scheduler (kubev2v/forklift v2.11.5 pkg/controller/plan/scheduler/vsphere/
//   scheduler.go: a package-level mutex "to ensure that multiple concurrent reconciles don't attempt to
//   schedule VMs into the same slots");
// - the ledger of checkpoints written but not yet in the cache (budget.ts AdmissionLedger);
// - each host's measured rate and one stream's bound (eta.ts HostRates), for the ETA;
// - the metrics (metrics.ts).
// After a restart the ledger is empty (the new process reads the checkpoints from the API server) and the
// rates are measured again; the slots are rebuilt from the checkpoints and Migrations alone.
import { AdmissionLedger, admit, vmKey, type Admission, type BudgetConfig, type CampaignVM } from './budget.ts';
import { HostRates, drain, ratesWithFallback, type HostDrain } from './eta.ts';
import type { BudgetMetrics } from './metrics.ts';

export interface CampaignDecision {
  admission: Admission;
  /** Seconds from now until each VM (vmKey) is copied, where the hosts' rates allow an estimate. */
  finishes: Map<string, number>;
  /**
   * Tasks (`namespace/name`) with VMs admitted by this pass: the pass writes only its own task's
   * checkpoints, so the reconciler wakes these to write theirs.
   */
  tasksToWake: string[];
}

export class CampaignBudget {
  private readonly cfg: BudgetConfig;
  private readonly metrics: BudgetMetrics | undefined;
  private readonly ledger = new AdmissionLedger();
  private readonly rates = new Map<string, HostRates>();
  private readonly tails = new Map<string, Promise<unknown>>();

  constructor(cfg: BudgetConfig, o: { metrics?: BudgetMetrics } = {}) {
    this.cfg = cfg;
    this.metrics = o.metrics;
  }

  get config(): BudgetConfig {
    return this.cfg;
  }

  /**
   * One admission pass over a vCenter, serialised with every other pass over it: `gather` reads every VM
   * of every running task that imports from it (from the caches), `apply` writes the checkpoints of the
   * pass's own task and returns the keys it wrote; those count as held until the cache shows them.
   */
  async run<T>(vcenter: string, gather: () => CampaignVM[] | Promise<CampaignVM[]>, apply: (d: CampaignDecision) => Promise<{ written: string[]; result: T }>, now: () => number = Date.now): Promise<T> {
    const prev = this.tails.get(vcenter) ?? Promise.resolve();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => gate);
    this.tails.set(vcenter, tail);
    try {
      await prev;
      const d = this.decide(vcenter, await gather(), now());
      const { written, result } = await apply(d);
      for (const k of written) this.ledger.record(k);
      return result;
    } finally {
      release();
      if (this.tails.get(vcenter) === tail) this.tails.delete(vcenter);
    }
  }

  /** The pass itself, synchronous: admission over the ledger's view, the hosts' rates, the ETA's play, the metrics. */
  decide(vcenter: string, gathered: readonly CampaignVM[], now: number): CampaignDecision {
    const vms = this.ledger.overlay(gathered.filter((v) => v.vcenter === vcenter));
    const admission = admit(vms, this.cfg);
    const holders = new Set(admission.holders);
    const byHost = new Map<string, CampaignVM[]>();
    for (const v of vms) if (!v.finished) (byHost.get(v.host) ?? byHost.set(v.host, []).get(v.host)!).push(v);
    const rates = this.rates.get(vcenter) ?? this.rates.set(vcenter, new HostRates()).get(vcenter)!;
    for (const [host, list] of byHost) {
      let rate = 0;
      let streams = 0;
      for (const v of list) {
        if (!holders.has(vmKey(v)) || !v.migration) continue;
        rate += Math.max(0, v.bytesPerSecond ?? 0);
        streams += (v.disksLeft ?? []).filter((b) => b > 0).length;
      }
      rates.observe(host, rate, now, streams);
    }
    rates.retain(new Set(byHost.keys()));
    const hostRates = ratesWithFallback([...byHost.keys()], (h) => rates.rate(h));
    const finishes = new Map<string, number>();
    for (const [host, list] of byHost) {
      const withDisks = list.filter((v) => v.disksLeft !== undefined);
      const plan: HostDrain = {
        ...(hostRates.get(host) ? { bytesPerSecond: hostRates.get(host)! } : {}),
        ...(rates.streamBound() ? { perStreamBytesPerSecond: rates.streamBound()! } : {}),
        ...(this.cfg.enabled ? { slots: this.cfg.maxDisksPerHost } : {}),
        transferring: withDisks.filter((v) => holders.has(vmKey(v))).map((v) => ({ key: vmKey(v), disksLeft: v.disksLeft! })),
        queued: withDisks
          .filter((v) => admission.queued.has(vmKey(v)))
          .sort((a, b) => admission.queued.get(vmKey(a))!.position - admission.queued.get(vmKey(b))!.position)
          .map((v) => ({ key: vmKey(v), disksLeft: v.disksLeft! })),
      };
      for (const [k, t] of drain(plan) ?? []) finishes.set(k, t);
    }
    const byKey = new Map(vms.map((v) => [vmKey(v), v]));
    if (this.metrics) {
      const oldest = new Map<string, number>();
      for (const k of admission.queued.keys()) {
        const v = byKey.get(k)!;
        if (v.queuedSince !== undefined) oldest.set(v.host, Math.min(oldest.get(v.host) ?? Infinity, v.queuedSince));
      }
      this.metrics.record(vcenter, admission, oldest, now);
      for (const k of admission.admit) {
        const v = byKey.get(k)!;
        if (v.queuedSince !== undefined) this.metrics.admitted(vcenter, v.host, (now - v.queuedSince) / 1000);
      }
    }
    const tasksToWake = [...new Set(admission.admit.map((k) => `${byKey.get(k)!.namespace}/${byKey.get(k)!.task}`))].sort();
    return { admission, finishes, tasksToWake };
  }
}

