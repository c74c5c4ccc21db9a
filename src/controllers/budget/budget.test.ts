// admit(): the platform's per-host transfer budget by example, and its safety, fairness, determinism and
// rebuild properties over arbitrary campaigns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { AdmissionLedger, DEFAULT_MAX_DISKS_PER_HOST, FORKLIFT_MAX_VM_INFLIGHT, NFC_STREAMS_PER_HOST, admit, budgetFromEnv, hostKey, vmKey, type BudgetConfig, type CampaignVM } from './budget.ts';

const VC = '5f1c3b0e-0000-4000-8000-00000000000a';
const T0 = Date.parse('2026-01-01T00:00:00Z');

function vm(o: Partial<CampaignVM> & Pick<CampaignVM, 'namespace' | 'id'>): CampaignVM {
  return { task: 'import', taskCreated: T0, index: 0, vcenter: VC, host: 'host-1', disks: 1, admitted: false, migration: false, finished: false, ready: true, ...o };
}

/** `n` waiting VMs of one task, in spec.vms order. */
function task(namespace: string, name: string, n: number, o: Partial<CampaignVM> = {}): CampaignVM[] {
  return Array.from({ length: n }, (_, i) => vm({ namespace, task: name, id: `${name}-vm-${i}`, index: i, ...o }));
}

const on = (maxDisksPerHost: number, maxDisksPerTenant?: number): BudgetConfig => ({ enabled: true, maxDisksPerHost, ...(maxDisksPerTenant ? { maxDisksPerTenant } : {}) });

test('the default budget is at or below Forklift’s per-Provider limit and well under the host’s NFC streams', () => {
  assert.ok(DEFAULT_MAX_DISKS_PER_HOST <= FORKLIFT_MAX_VM_INFLIGHT);
  assert.ok(DEFAULT_MAX_DISKS_PER_HOST < NFC_STREAMS_PER_HOST);
});

test('two tenants importing from one vCenter share one host’s budget', () => {
  const a = task('tenant-a', 'big', 8);
  const b = task('tenant-b', 'small', 8, { taskCreated: T0 + 1000 });
  const r = admit([...a, ...b], on(6));
  assert.equal(r.admit.length, 6);
  assert.equal(r.hosts[0]!.inUse, 6);
  assert.equal(r.admit.filter((k) => k.startsWith('tenant-a/')).length, 3);
  assert.equal(r.admit.filter((k) => k.startsWith('tenant-b/')).length, 3);
});

test('the budget is counted per vCenter identity and host id: the same host id on another vCenter is another host', () => {
  const a = task('tenant-a', 'x', 4);
  const b = task('tenant-b', 'y', 4, { vcenter: 'another-vcenter-instance' });
  const r = admit([...a, ...b], on(2));
  assert.equal(r.admit.length, 4);
  assert.deepEqual(r.hosts.map((h) => [h.vcenter, h.inUse]).sort(), [[VC, 2], ['another-vcenter-instance', 2]].sort());
});

test('one tenant’s 500-VM task does not starve another tenant’s 1-VM task: the next free slot is the small one’s', () => {
  // The big tenant holds every slot; its 490 others wait. The small tenant arrives later.
  const big = task('tenant-big', 'campaign', 500);
  for (const v of big.slice(0, 10)) v.admitted = true;
  const small = task('tenant-small', 'one', 1, { taskCreated: T0 + 3600_000 });
  const full = admit([...big, ...small], on(10));
  assert.deepEqual(full.admit, []);
  const q = full.queued.get(vmKey(small[0]!))!;
  assert.equal(q.disksAheadInTenant, 0);
  assert.equal(q.disksAheadTotal, 0, 'nothing goes before the small tenant’s VM');
  // One of the big tenant's transfers ends: its slot goes to the small tenant, not to VM 11 of the big one.
  big[0]!.finished = true;
  assert.deepEqual(admit([...big, ...small], on(10)).admit, [vmKey(small[0]!)]);
});

test('slots go round-robin across tenants, then in each task’s spec.vms order', () => {
  const a = task('tenant-a', 'a', 5);
  const b = task('tenant-b', 'b', 5, { taskCreated: T0 + 1 });
  const c = task('tenant-c', 'c', 5, { taskCreated: T0 + 2 });
  const r = admit([...c, ...b, ...a], on(7));
  assert.deepEqual(r.admit, ['tenant-a/a/a-vm-0', 'tenant-b/b/b-vm-0', 'tenant-c/c/c-vm-0', 'tenant-a/a/a-vm-1', 'tenant-b/b/b-vm-1', 'tenant-c/c/c-vm-1', 'tenant-a/a/a-vm-2']);
});

test('inside a tenant the older task goes first', () => {
  const newer = task('tenant-a', 'newer', 2, { taskCreated: T0 + 60_000 });
  const older = task('tenant-a', 'older', 2);
  assert.deepEqual(admit([...newer, ...older], on(3)).admit, ['tenant-a/older/older-vm-0', 'tenant-a/older/older-vm-1', 'tenant-a/newer/newer-vm-0']);
});

test('a VM holds its slot by its admission checkpoint or by its Migration, and frees it when its copy is done', () => {
  const held = [vm({ namespace: 'a', id: 'ckpt', disks: 2, admitted: true }), vm({ namespace: 'b', id: 'mig', disks: 2, migration: true })];
  const waiting = task('c', 'w', 3, { disks: 2 });
  let r = admit([...held, ...waiting], on(6));
  assert.deepEqual(r.admit, ['c/w/w-vm-0']);
  assert.deepEqual(r.holders.sort(), ['a/import/ckpt', 'b/import/mig', 'c/w/w-vm-0']);
  // The checkpointed VM's disks are copied (Forklift's cost 0 from CreateVM on): two slots free up.
  held[0]!.disksRemaining = 0;
  r = admit([...held, ...waiting], on(6));
  assert.deepEqual(r.admit, ['c/w/w-vm-0', 'c/w/w-vm-1']);
});

test('a VM with more disks than the budget starts only once its host is idle, and nothing passes it meanwhile', () => {
  const wide = vm({ namespace: 'a', id: 'wide', disks: 12 });
  const busy = vm({ namespace: 'b', id: 'busy', disks: 1, migration: true });
  const small = task('a', 'later', 3, { taskCreated: T0 + 1 });
  assert.deepEqual(admit([busy, wide, ...small], on(10)).admit, []);
  busy.finished = true;
  assert.deepEqual(admit([busy, wide, ...small], on(10)).admit, ['a/import/wide']);
});

test('the least-served tenant’s next VM keeps the freed slots until it fits: a smaller VM of another tenant does not pass it', () => {
  const holder = vm({ namespace: 'b', id: 'h', disks: 3, migration: true });
  const wide = vm({ namespace: 'a', id: 'four', disks: 4 });
  const narrow = task('b', 'narrow', 3, { taskCreated: T0 + 1 });
  const r = admit([holder, wide, ...narrow], on(6));
  assert.deepEqual(r.admit, []);
  assert.match(r.queued.get('a/import/four')!.message, /Waiting for 4 disks of transfer slots on ESXi host host-1/);
});

test('a tenant at its cap waits without holding back the other tenants', () => {
  const a = task('tenant-a', 'a', 6, { disks: 2 });
  const b = task('tenant-b', 'b', 6, { taskCreated: T0 + 1 });
  const r = admit([...a, ...b], on(10, 4));
  assert.equal(r.admit.filter((k) => k.startsWith('tenant-a/')).length, 2);
  assert.equal(r.admit.filter((k) => k.startsWith('tenant-b/')).length, 4);
  assert.equal(r.hosts[0]!.inUse, 8);
});

test('a VM that is not ready yet waits for no slot and holds back no one', () => {
  const a = vm({ namespace: 'a', id: 'validating', ready: false });
  const b = task('a', 'b', 2, { taskCreated: T0 + 1 });
  const r = admit([a, ...b], on(2));
  assert.deepEqual(r.admit, ['a/b/b-vm-0', 'a/b/b-vm-1']);
  assert.equal(r.queued.has('a/import/validating'), false);
});

test('a finished or canceled VM holds nothing, even with its checkpoint and Migration left', () => {
  const done = vm({ namespace: 'a', id: 'done', disks: 5, admitted: true, migration: true, finished: true });
  assert.deepEqual(admit([done, ...task('b', 'x', 2)], on(2)).admit, ['b/x/x-vm-0', 'b/x/x-vm-1']);
});

test('with the budget off every ready VM starts at once', () => {
  const r = admit([...task('a', 'x', 30, { disks: 3 }), ...task('b', 'y', 30)], { enabled: false, maxDisksPerHost: 10 });
  assert.equal(r.admit.length, 60);
  assert.equal(r.hosts[0]!.inUse, 120);
  assert.equal(r.hosts[0]!.budget, undefined);
  assert.equal(r.queued.size, 0);
});

test('a Queued VM’s message names its host and the disks ahead of it in its namespace and in total, never another tenant', () => {
  const a = task('tenant-alpha', 'secret-task', 4, { disks: 2, hostName: 'esx07.example.internal' });
  for (const v of a.slice(0, 2)) v.migration = true;
  const b = task('tenant-bravo', 'mine', 3, { taskCreated: T0 + 1, hostName: 'esx07.example.internal' });
  const r = admit([...a, ...b], on(4));
  assert.deepEqual(r.admit, []);
  const third = r.queued.get('tenant-bravo/mine/mine-vm-2')!;
  // tenant-bravo holds nothing, alpha 4: bravo's VMs 0,1 and alpha's VM 2 go before bravo's VM 2 in the fair order.
  assert.equal(third.disksAheadInTenant, 2);
  assert.equal(third.disksAheadTotal, 2);
  const alpha = r.queued.get('tenant-alpha/secret-task/secret-task-vm-3')!;
  assert.equal(alpha.disksAheadInTenant, 2);
  assert.equal(alpha.disksAheadTotal, 5);
  assert.equal(third.message, 'Waiting for 1 disk of transfer slots on ESXi host esx07.example.internal, which transfers 4 disks of its budget of 4: 2 disks ahead of it in this namespace, 2 disks in total.');
  for (const q of r.queued.values()) {
    assert.doesNotMatch(q.message, /tenant-|secret-task|mine|vm-/);
  }
});

test('an inventory host name of any length is cut before it reaches a message', () => {
  const r = admit([vm({ namespace: 'a', id: 'h', migration: true }), vm({ namespace: 'a', id: 'w', index: 1, hostName: 'h'.repeat(100_000) })], on(1));
  assert.ok(r.queued.get('a/import/w')!.message.length < 600);
});

test('the budget comes from the chart’s environment, and a malformed value stops the process with the variable named', () => {
  assert.deepEqual(budgetFromEnv({}), { enabled: true, maxDisksPerHost: DEFAULT_MAX_DISKS_PER_HOST });
  assert.deepEqual(budgetFromEnv({ TRANSFER_BUDGET: 'false', TRANSFER_MAX_DISKS_PER_HOST: '16', TRANSFER_MAX_DISKS_PER_TENANT: '4' }), { enabled: false, maxDisksPerHost: 16, maxDisksPerTenant: 4 });
  assert.deepEqual(budgetFromEnv({ TRANSFER_MAX_DISKS_PER_TENANT: '0' }), { enabled: true, maxDisksPerHost: DEFAULT_MAX_DISKS_PER_HOST });
  assert.throws(() => budgetFromEnv({ TRANSFER_MAX_DISKS_PER_HOST: 'ten' }), /TRANSFER_MAX_DISKS_PER_HOST must be a whole number/);
  assert.throws(() => budgetFromEnv({ TRANSFER_MAX_DISKS_PER_HOST: '0' }), /at least 1/);
  assert.throws(() => budgetFromEnv({ TRANSFER_BUDGET: 'maybe' }), /TRANSFER_BUDGET must be true or false/);
});

test('the ledger counts an admission this process wrote until the cache shows it, so a second pass never gives its slot away', () => {
  const ledger = new AdmissionLedger();
  const vms = [...task('a', 'x', 1), ...task('b', 'y', 1, { taskCreated: T0 + 1 })];
  const first = admit(ledger.overlay(vms), on(1));
  assert.deepEqual(first.admit, ['a/x/x-vm-0']);
  ledger.record(first.admit[0]!);
  // The cache still shows a/x/x-vm-0 waiting: without the ledger b's VM would be admitted too.
  assert.deepEqual(admit(ledger.overlay(vms), on(1)).admit, []);
  // The cache catches up: the entry ends.
  vms[0]!.admitted = true;
  assert.deepEqual(admit(ledger.overlay(vms), on(1)).admit, []);
  assert.equal(ledger.size, 0);
});

// ---- properties ----

interface World {
  vms: CampaignVM[];
  cfg: BudgetConfig;
}

const arbWorld: fc.Arbitrary<World> = fc
  .record({
    tenants: fc.integer({ min: 1, max: 4 }),
    hosts: fc.integer({ min: 1, max: 3 }),
    budget: fc.integer({ min: 1, max: 12 }),
    cap: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
    vms: fc.array(
      fc.record({
        tenant: fc.nat(3),
        task: fc.nat(1),
        host: fc.nat(2),
        disks: fc.integer({ min: 0, max: 6 }),
        slot: fc.constantFrom('waiting', 'waiting', 'checkpoint', 'migration', 'both', 'finished', 'notReady'),
        copied: fc.boolean(),
      }),
      { maxLength: 40 },
    ),
  })
  .map(({ tenants, hosts, budget, cap, vms }) => {
    // Holders are generated only while the host's budget allows: a state a budget-keeping controller reaches.
    const used = new Map<string, number>();
    const list = vms.map((g, i): CampaignVM => {
      const host = `host-${g.host % hosts}`;
      const ns = `t${g.tenant % tenants}`;
      let slot = g.slot;
      if (slot === 'checkpoint' || slot === 'migration' || slot === 'both') {
        const u = used.get(host) ?? 0;
        if (u + g.disks > budget && !(u === 0)) slot = 'waiting';
        else used.set(host, u + g.disks);
      }
      return vm({
        namespace: ns,
        task: `task-${g.task}`,
        taskCreated: T0 + g.task,
        id: `vm-${i}`,
        index: i,
        host,
        disks: g.disks,
        admitted: slot === 'checkpoint' || slot === 'both',
        migration: slot === 'migration' || slot === 'both' || slot === 'finished',
        finished: slot === 'finished',
        ready: slot !== 'notReady',
        ...(g.copied && slot !== 'waiting' ? { disksRemaining: 0 } : {}),
      });
    });
    return { vms: list, cfg: on(budget, cap) };
  });

function usage(vms: readonly CampaignVM[], holders: readonly string[]): Map<string, { disks: number; count: number; maxOne: number }> {
  const set = new Set(holders);
  const out = new Map<string, { disks: number; count: number; maxOne: number }>();
  for (const v of vms) {
    if (!set.has(vmKey(v))) continue;
    const c = Math.min(v.disks, v.disksRemaining ?? v.disks);
    const u = out.get(hostKey(v)) ?? { disks: 0, count: 0, maxOne: 0 };
    out.set(hostKey(v), { disks: u.disks + c, count: u.count + (c > 0 ? 1 : 0), maxOne: Math.max(u.maxOne, c) });
  }
  return out;
}

test('property: no host is ever over its budget, except one VM wider than the budget alone on an idle host', () => {
  fc.assert(
    fc.property(arbWorld, ({ vms, cfg }) => {
      const before = usage(vms, admit(vms, { ...cfg, maxDisksPerHost: Number.MAX_SAFE_INTEGER }).holders.filter((k) => vms.some((v) => vmKey(v) === k && (v.admitted || v.migration))));
      const r = admit(vms, cfg);
      for (const [h, u] of usage(vms, r.holders)) {
        const was = before.get(h)?.disks ?? 0;
        const ok = u.disks <= cfg.maxDisksPerHost || u.disks === was || (u.count === 1 && u.maxOne > cfg.maxDisksPerHost && was === 0);
        assert.ok(ok, `${h}: ${u.disks} disks held, budget ${cfg.maxDisksPerHost}, held before ${was}`);
      }
      // The tenant cap: a tenant gains slots on a host only up to its cap (one wider VM alone excepted).
      if (cfg.maxDisksPerTenant !== undefined) {
        const gained = new Map<string, number>();
        for (const k of r.admit) {
          const v = vms.find((x) => vmKey(x) === k)!;
          const key = `${hostKey(v)}|${v.namespace}`;
          gained.set(key, (gained.get(key) ?? 0) + v.disks);
        }
        for (const [key, g] of gained) {
          const [h, ns] = key.split('|') as [string, string];
          const prior = vms.filter((v) => hostKey(v) === h && v.namespace === ns && !v.finished && (v.admitted || v.migration)).reduce((a, v) => a + Math.min(v.disks, v.disksRemaining ?? v.disks), 0);
          const wide = r.admit.map((k) => vms.find((x) => vmKey(x) === k)!).filter((v) => v.namespace === ns && hostKey(v) === h && v.disks > 0);
          assert.ok(prior + g <= cfg.maxDisksPerTenant || (prior === 0 && wide.length === 1), `${key}: ${prior}+${g} over the cap ${cfg.maxDisksPerTenant}`);
        }
      }
    }),
    { numRuns: 400 },
  );
});

test('property: the decision does not depend on the order the caches list the VMs in', () => {
  fc.assert(
    fc.property(arbWorld, fc.integer(), ({ vms, cfg }, seed) => {
      const shuffled = [...vms].sort((a, b) => ((hash(vmKey(a)) ^ seed) >>> 0) - ((hash(vmKey(b)) ^ seed) >>> 0));
      const x = admit(vms, cfg);
      const y = admit(shuffled, cfg);
      assert.deepEqual([...y.admit].sort(), [...x.admit].sort());
      assert.deepEqual([...y.queued.entries()].sort(), [...x.queued.entries()].sort());
    }),
    { numRuns: 300 },
  );
});

test('property: rebuilt from the recorded checkpoints and Migrations, the holders are the same and nothing more is admitted', () => {
  fc.assert(
    fc.property(arbWorld, fc.array(fc.constantFrom('checkpoint', 'migration', 'both'), { minLength: 40, maxLength: 40 }), ({ vms, cfg }, evidence) => {
      const r = admit(vms, cfg);
      const admitted = new Set(r.admit);
      // A new leader: no memory, only what the API server holds. Each admitted VM left its checkpoint, or
      // its Migration (the checkpoint's write then lost), or both.
      const rebuilt = vms.map((v, i) => {
        if (!admitted.has(vmKey(v))) return { ...v };
        const e = evidence[i % evidence.length]!;
        return { ...v, admitted: e !== 'migration', migration: e !== 'checkpoint' };
      });
      const again = admit(rebuilt, cfg);
      assert.deepEqual(again.admit, []);
      assert.deepEqual([...again.holders].sort(), [...r.holders].sort());
    }),
    { numRuns: 300 },
  );
});

test('property: a crash after any subset of the checkpoints was written never leads to over-admission', () => {
  fc.assert(
    fc.property(arbWorld, fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }), ({ vms, cfg }, kept) => {
      const r = admit(vms, cfg);
      const admitted = new Set(r.admit);
      const partial = vms.map((v, i) => (admitted.has(vmKey(v)) && kept[i] ? { ...v, admitted: true } : { ...v }));
      const again = admit(partial, cfg);
      const u = usage(partial, again.holders);
      const ref = usage(vms, r.holders);
      for (const [h, x] of u) {
        const limit = Math.max(cfg.maxDisksPerHost, ref.get(h)?.disks ?? 0);
        assert.ok(x.disks <= limit || (x.count === 1 && x.maxOne > cfg.maxDisksPerHost), `${h}: ${x.disks} held after the restart, at most ${limit} before`);
      }
    }),
    { numRuns: 300 },
  );
});

test('property: with one-disk VMs the slots of a contended host are shared within one disk between every tenant still waiting', () => {
  fc.assert(
    fc.property(fc.integer({ min: 2, max: 5 }), fc.integer({ min: 1, max: 30 }), fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 5, maxLength: 5 }), (tenants, budget, sizes) => {
      const vms = Array.from({ length: tenants }, (_, t) => task(`t${t}`, 'x', sizes[t]!, { taskCreated: T0 + t })).flat();
      const r = admit(vms, on(budget));
      const got = Array.from({ length: tenants }, (_, t) => r.admit.filter((k) => k.startsWith(`t${t}/`)).length);
      const stillWaiting = got.map((g, t) => g < sizes[t]!);
      const minWaiting = Math.min(...got.filter((_, t) => stillWaiting[t]));
      // A tenant still waiting got at least as much as any other, less one.
      for (let t = 0; t < tenants; t++) if (Number.isFinite(minWaiting)) assert.ok(got[t]! <= minWaiting + 1, `tenant ${t} got ${got[t]}, a waiting tenant only ${minWaiting}`);
      assert.equal(r.hosts[0]?.inUse ?? 0, Math.min(budget, sizes.slice(0, tenants).reduce((a, b) => a + b, 0)));
    }),
    { numRuns: 300 },
  );
});

test('property: a tenant that arrives while another saturates the host gets the first slot freed (one-disk VMs)', () => {
  // From a budget of 2: with 1, the freed slot leaves both tenants holding nothing, and the older task goes first.
  fc.assert(
    fc.property(fc.integer({ min: 2, max: 20 }), fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 5 }), (budget, bigSize, smallSize) => {
      const big = task('big', 'campaign', budget + bigSize);
      for (const v of big.slice(0, budget)) v.migration = true;
      const small = task('small', 'late', smallSize, { taskCreated: T0 + 1e9 });
      big[0]!.finished = true;
      assert.deepEqual(admit([...big, ...small], on(budget)).admit, [vmKey(small[0]!)]);
    }),
  );
});

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}
