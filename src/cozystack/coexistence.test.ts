import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FINALIZER, UPSTREAM_TASK_FINALIZER } from '../api/labels.ts';
import { decideCoexistence, type CoexistenceFacts } from './coexistence.ts';

const NOW = new Date('2026-12-03T12:00:00Z');
const ago = (s: number): string => new Date(NOW.getTime() - s * 1000).toISOString();
const facts = (f: Partial<CoexistenceFacts> = {}): CoexistenceFacts => ({ leases: [], crds: [], tasks: [], podNamespace: 'cozy-migration-controller', ownLease: { namespace: 'cozy-migration-controller', name: 'migration-controller-leader' }, ...f });
const refusal = (v: ReturnType<typeof decideCoexistence>): string => {
  assert.equal(v.start, false, 'refused');
  return v.start ? '' : v.reason;
};

test('a cluster without the other controller lets this one start', () => {
  assert.deepEqual(decideCoexistence(facts({ crds: [{ name: 'vmimporttasks.forklift.cozystack.io' }] }), false, NOW), { start: true, notes: [] });
});

test("the other controller's Lease renewed a few seconds ago refuses the start, naming the Lease, its holder and how to switch, even with --take-over", () => {
  const f = facts({ leases: [{ namespace: 'cozy-migration-controller', name: 'migration.cozystack.io', holder: 'migration-controller-7d9_1a2b', renewTime: ago(3) }] });
  for (const takeOver of [false, true]) {
    const why = refusal(decideCoexistence(f, takeOver, NOW));
    assert.match(why, /its leader-election Lease cozy-migration-controller\/migration\.cozystack\.io is held by "migration-controller-7d9_1a2b" \(renewed 3s ago\)/);
    assert.match(why, /stop it first/);
    assert.match(why, /docs\/install\.md, "Switching from Cozystack's own controller"/);
  }
});

test('a Lease last renewed more than two minutes ago, or released, is a stopped controller: the start goes on', () => {
  const stale = facts({ leases: [{ namespace: 'cozy-migration-controller', name: 'forklift.cozystack.io', holder: 'old', renewTime: ago(121) }] });
  const v = decideCoexistence(stale, false, NOW);
  assert.equal(v.start, true);
  assert.match(v.start ? v.notes.join() : '', /last renewed 121s ago by "old": that controller is stopped/);
  assert.equal(decideCoexistence(facts({ leases: [{ namespace: 'x', name: 'forklift.cozystack.io', renewTime: ago(1) }] }), false, NOW).start, true, 'no holder: released');
});

test("this controller's own Lease, named like the other's by --lease-name, is not the other controller", () => {
  const f = facts({ ownLease: { namespace: 'ns', name: 'forklift.cozystack.io' }, leases: [{ namespace: 'ns', name: 'forklift.cozystack.io', holder: 'me', renewTime: ago(1) }] });
  assert.equal(decideCoexistence(f, false, NOW).start, true);
});

test("tasks holding only the other controller's finalizer refuse the start until --take-over, counted with an example", () => {
  const f = facts({
    tasks: [
      { namespace: 'tenant-a', name: 'import-web-tier', finalizers: [UPSTREAM_TASK_FINALIZER] },
      { namespace: 'tenant-b', name: 'db', finalizers: [UPSTREAM_TASK_FINALIZER] },
      { namespace: 'tenant-c', name: 'taken', finalizers: [UPSTREAM_TASK_FINALIZER, FINALIZER] },
    ],
  });
  const why = refusal(decideCoexistence(f, false, NOW));
  assert.match(why, /^2 VMImportTask\(s\) hold the finalizer of Cozystack's own migration controller \(forklift\.cozystack\.io\/cleanup-transfer-volumes\) and not this one's, for example tenant-a\/import-web-tier/);
  assert.match(why, /start this controller with --take-over \(chart value coexistence\.takeOver=true\)/);
  const v = decideCoexistence(f, true, NOW);
  assert.equal(v.start, true);
  assert.match(v.start ? v.notes.join() : '', /2 VMImportTask\(s\).*taken over/);
});

test('a task taken over already (both finalizers) no longer counts: a restart needs no --take-over', () => {
  assert.equal(decideCoexistence(facts({ tasks: [{ namespace: 'a', name: 't', finalizers: [FINALIZER, UPSTREAM_TASK_FINALIZER] }] }), false, NOW).start, true);
});

test('a count cut short by the page bound says "or more"', () => {
  const why = refusal(decideCoexistence(facts({ tasksTruncated: true, tasks: [{ namespace: 'a', name: 't', finalizers: [UPSTREAM_TASK_FINALIZER] }] }), false, NOW));
  assert.match(why, /^1 or more VMImportTask/);
});

test("the CRDs owned by a Helm release in another namespace refuse the start until --take-over; a release in this controller's namespace is this one", () => {
  const crd = { name: 'vmimporttasks.forklift.cozystack.io', release: 'migration-controller', releaseNamespace: 'cozy-other' };
  const why = refusal(decideCoexistence(facts({ crds: [crd] }), false, NOW));
  assert.match(why, /the CRD vmimporttasks\.forklift\.cozystack\.io belongs to Helm release cozy-other\/migration-controller, not a release in this controller's namespace cozy-migration-controller/);
  assert.equal(decideCoexistence(facts({ crds: [crd] }), true, NOW).start, true);
  assert.equal(decideCoexistence(facts({ crds: [{ ...crd, releaseNamespace: 'cozy-migration-controller' }] }), false, NOW).start, true);
});
