// CampaignBudget: passes over one vCenter serialised with their checkpoint writes, the ledger bridging the
// cache's lag, the tasks to wake, the ETA's play from the hosts' measured rates, and the wait metrics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { vmKey, type CampaignVM } from './budget.ts';
import { CampaignBudget } from './campaign.ts';
import { BudgetMetrics } from './metrics.ts';

const VC = 'vc-1';
const GB = 1e9;
const vm = (o: Partial<CampaignVM> & Pick<CampaignVM, 'namespace' | 'task' | 'id'>): CampaignVM => ({ taskCreated: 0, index: 0, vcenter: VC, host: 'host-1', disks: 1, admitted: false, migration: false, finished: false, ready: true, ...o });

test('two tasks’ passes at once over one vCenter never hand out one slot twice, though the cache lags behind the checkpoints', async () => {
  const budget = new CampaignBudget({ enabled: true, maxDisksPerHost: 3 });
  // The API server's truth, and a cache that shows a checkpoint only some time after it is written.
  const server = new Map<string, CampaignVM>();
  for (const ns of ['a', 'b']) for (let i = 0; i < 4; i++) {
    const v = vm({ namespace: ns, task: 't', id: `vm-${i}`, index: i });
    server.set(vmKey(v), v);
  }
  const cache = new Map([...server].map(([k, v]) => [k, { ...v }]));
  const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
  const pass = (ns: string): Promise<number> =>
    budget.run(
      VC,
      async () => {
        await tick();
        return [...cache.values()].map((v) => ({ ...v }));
      },
      async (d) => {
        const mine = d.admission.admit.filter((k) => k.startsWith(`${ns}/`));
        for (const k of mine) {
          await tick();
          server.get(k)!.admitted = true;
          // The cache catches up later.
          setTimeout(() => (cache.get(k)!.admitted = true), 20);
        }
        return { written: mine, result: mine.length };
      },
    );
  const got = await Promise.all([pass('a'), pass('b'), pass('a'), pass('b')]);
  const held = [...server.values()].filter((v) => v.admitted).length;
  assert.equal(held, 3, `slots held: ${held}, passes wrote ${got}`);
  assert.ok(got.reduce((x, y) => x + y, 0) === 3);
});

test('a pass names the other tasks whose VMs it admitted, for the reconciler to wake', () => {
  const budget = new CampaignBudget({ enabled: true, maxDisksPerHost: 4 });
  const d = budget.decide(VC, [vm({ namespace: 'a', task: 'x', id: '1' }), vm({ namespace: 'b', task: 'y', id: '1' }), vm({ namespace: 'b', task: 'y', id: '2', index: 1 })], 0);
  assert.deepEqual(d.tasksToWake, ['a/x', 'b/y']);
});

test('the ETA plays each host forward from its measured rate, queued VMs behind the ones holding slots', () => {
  const budget = new CampaignBudget({ enabled: true, maxDisksPerHost: 1 });
  const running = vm({ namespace: 'a', task: 'x', id: 'run', migration: true, admitted: true, disksLeft: [10 * GB], bytesPerSecond: 100e6 });
  const queued = vm({ namespace: 'b', task: 'y', id: 'wait', disksLeft: [20 * GB] });
  const d = budget.decide(VC, [running, queued], 1000);
  assert.equal(d.finishes.get(vmKey(running)), 100);
  assert.equal(d.finishes.get(vmKey(queued)), 300);
  // Another vCenter's VMs are not this pass's.
  assert.equal(budget.decide('vc-2', [running, queued], 2000).admission.hosts.length, 0);
});

test('the metrics get each host’s queue, its oldest wait, and the wait of each VM admitted', async () => {
  const reg = new Registry();
  const budget = new CampaignBudget({ enabled: true, maxDisksPerHost: 1 }, { metrics: new BudgetMetrics(reg) });
  const holder = vm({ namespace: 'a', task: 'x', id: 'h', migration: true });
  const waiting = vm({ namespace: 'b', task: 'y', id: 'w', queuedSince: 0 });
  budget.decide(VC, [holder, waiting], 90_000);
  const oldest = (await reg.getSingleMetric('migration_controller_transfer_queue_oldest_wait_seconds')!.get()).values[0]!;
  assert.equal(oldest.value, 90);
  budget.decide(VC, [{ ...holder, finished: true }, waiting], 120_000);
  const waits = (await reg.getSingleMetric('migration_controller_transfer_queue_wait_seconds')!.get()).values;
  assert.equal(waits.find((v) => (v as { metricName?: string }).metricName?.endsWith('_sum'))!.value, 120);
});
