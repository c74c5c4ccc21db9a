// BudgetMetrics: the per-host queue, wait and slot series an admission pass leaves, and their removal
// once a host has nothing left.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { admit, type CampaignVM } from './budget.ts';
import { BudgetMetrics } from './metrics.ts';

const VC = 'vc-uuid';
const vm = (o: Partial<CampaignVM> & Pick<CampaignVM, 'id'>): CampaignVM => ({ namespace: 'tenant-a', task: 't', taskCreated: 0, index: 0, vcenter: VC, host: 'host-1', disks: 2, admitted: false, migration: false, finished: false, ready: true, ...o });

/** Every series of the registry, `name{label=value,...}` → value (histograms by their _count). */
async function series(reg: Registry): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const m of await reg.getMetricsAsJSON()) {
    for (const v of m.values as Array<{ value: number; labels: Record<string, string | number>; metricName?: string }>) {
      const name = v.metricName ?? m.name;
      if (name !== m.name && !name.endsWith('_count')) continue;
      const labels = Object.entries(v.labels).filter(([k]) => k !== 'le').map(([k, x]) => `${k}=${x}`).join(',');
      out[`${name}{${labels}}`] = v.value;
    }
  }
  return out;
}

test('an admission pass leaves per-host queue length, queued disks, oldest wait and slots against the budget', async () => {
  const reg = new Registry();
  const m = new BudgetMetrics(reg);
  const vms = [vm({ id: 'a', migration: true }), vm({ id: 'b', index: 1 }), vm({ id: 'c', index: 2, disks: 3 }), vm({ id: 'd', host: 'host-2' })];
  const a = admit(vms, { enabled: true, maxDisksPerHost: 3 });
  m.record(VC, a, new Map([['host-1', 1_000]]), 61_000);
  m.admitted(VC, 'host-2', 5);
  const s = await series(reg);
  assert.equal(s['migration_controller_transfer_queue_vms{vcenter=vc-uuid,host=host-1}'], 2);
  assert.equal(s['migration_controller_transfer_queue_disks{vcenter=vc-uuid,host=host-1}'], 5);
  assert.equal(s['migration_controller_transfer_queue_oldest_wait_seconds{vcenter=vc-uuid,host=host-1}'], 60);
  assert.equal(s['migration_controller_transfer_slots_in_use{vcenter=vc-uuid,host=host-1}'], 2);
  assert.equal(s['migration_controller_transfer_slots_budget{vcenter=vc-uuid,host=host-1}'], 3);
  assert.equal(s['migration_controller_transfer_slots_in_use{vcenter=vc-uuid,host=host-2}'], 2);
  assert.equal(s['migration_controller_transfer_queue_oldest_wait_seconds{vcenter=vc-uuid,host=host-2}'], 0);
  assert.equal(s['migration_controller_transfer_queue_wait_seconds_count{vcenter=vc-uuid,host=host-2}'], 1);
  assert.ok(Object.keys(s).every((k) => !k.includes('tenant-a')), 'no series names a tenant');
});

test('a host with nothing left of the campaign loses its series, and a budget turned off loses its budget series', async () => {
  const reg = new Registry();
  const m = new BudgetMetrics(reg);
  m.record(VC, admit([vm({ id: 'a' }), vm({ id: 'b', host: 'host-2' })], { enabled: true, maxDisksPerHost: 4 }), new Map(), 0);
  m.record(VC, admit([vm({ id: 'b', host: 'host-2' })], { enabled: false, maxDisksPerHost: 4 }), new Map(), 0);
  const s = await series(reg);
  assert.equal(Object.keys(s).some((k) => k.includes('host=host-1')), false);
  assert.equal(s['migration_controller_transfer_slots_budget{vcenter=vc-uuid,host=host-2}'], undefined);
  assert.equal(s['migration_controller_transfer_slots_in_use{vcenter=vc-uuid,host=host-2}'], 2);
});
