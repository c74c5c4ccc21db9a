// The fair order of one ESXi host's queue: round-robin across tenants (namespaces) by the disks each holds
// on the host, then each tenant's VMs in task order (oldest task first) and each task's spec.vms order.
//
// "Round-robin" without a pointer: the next slot goes to the tenant holding the fewest disks on the host
// (counting what this pass has already given it), ties to the tenant whose waiting VM belongs to the oldest
// task, then to the namespace's name. A pointer would be state the controller could lose in a crash; the
// disks held are state the world gives back (checkpoints and Migrations), so a new leader computes the
// same order. While every tenant has VMs waiting this hands out max-min fair shares; a tenant that arrives
// late holds nothing and is served at the next free slot, whatever the others have queued.

/** One waiting VM, as the fair order needs it. */
export interface Waiter {
  namespace: string;
  task: string;
  /** The task's creationTimestamp, epoch ms. */
  taskCreated: number;
  /** Position in the task's spec.vms. */
  index: number;
  /** Disk slots the VM's transfer opens on the host. */
  cost: number;
}

/** Task order inside a tenant: oldest task first, then the task's name, then spec.vms order. */
export function compareInTenant(a: Waiter, b: Waiter): number {
  return a.taskCreated - b.taskCreated || cmp(a.task, b.task) || a.index - b.index;
}

export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Each tenant's waiters in task order, tenants keyed by namespace. */
export function tenantQueues<W extends Waiter>(waiters: readonly W[]): Map<string, W[]> {
  const queues = new Map<string, W[]>();
  for (const w of waiters) {
    const q = queues.get(w.namespace);
    if (q) q.push(w);
    else queues.set(w.namespace, [w]);
  }
  for (const q of queues.values()) q.sort(compareInTenant);
  return queues;
}

/**
 * The tenant served next among `candidates`: fewest disks held, then the oldest waiting task at its
 * queue's head, then the namespace's name. `heads` gives each candidate's first waiting VM.
 */
export function nextTenant<W extends Waiter>(candidates: Iterable<string>, held: ReadonlyMap<string, number>, heads: (ns: string) => W): string | undefined {
  let best: string | undefined;
  for (const ns of candidates) {
    if (best === undefined) {
      best = ns;
      continue;
    }
    const d = (held.get(ns) ?? 0) - (held.get(best) ?? 0);
    if (d < 0 || (d === 0 && (heads(ns).taskCreated - heads(best).taskCreated || cmp(heads(ns).task, heads(best).task) || cmp(ns, best)) < 0)) best = ns;
  }
  return best;
}

/**
 * The whole queue of a host in the order slots would go to it if nothing were released: what "ahead of
 * it" means in a Queued VM's message, and the order the ETA drains a host's backlog in. `held` is each
 * tenant's disks on the host now (after this pass's admissions).
 */
export function projectedOrder<W extends Waiter>(waiters: readonly W[], held: ReadonlyMap<string, number>): W[] {
  const queues = tenantQueues(waiters);
  const load = new Map(held);
  const pos = new Map<string, number>();
  const out: W[] = [];
  const live = new Set(queues.keys());
  while (live.size) {
    const ns = nextTenant(live, load, (n) => queues.get(n)![pos.get(n) ?? 0]!)!;
    const q = queues.get(ns)!;
    const i = pos.get(ns) ?? 0;
    const w = q[i]!;
    out.push(w);
    // A VM without a disk still takes its turn: weigh it as one so the order moves on.
    load.set(ns, (load.get(ns) ?? 0) + Math.max(1, w.cost));
    if (i + 1 >= q.length) live.delete(ns);
    else pos.set(ns, i + 1);
  }
  return out;
}
