// The tenant-role fixture models Cozystack's own ClusterRoles
// (cozystack/cozystack@v1.6.2:packages/system/cozystack-basics/templates/clusterroles.yaml), and the
// chart's tenant ClusterRoles carry labels those roles select, so on a platform they aggregate into them.
// The e2e harness installs the fixture into every control plane and binds tenants to it (bindTenant).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { REPO_ROOT, helmTemplate, tenantRoles } from '../../scripts/demo/tools.ts';

interface Role {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  aggregationRule?: { clusterRoleSelectors: Array<{ matchLabels: Record<string, string> }> };
  rules?: Array<{ apiGroups?: string[]; resources?: string[]; verbs: string[] }>;
}

const fixture = YAML.parseAllDocuments(readFileSync(join(REPO_ROOT, 'test/fixtures/cozystack-tenant-roles.yaml'), 'utf8'))
  .map((d) => d.toJSON() as Role | null)
  .filter((o): o is Role => o?.kind === 'ClusterRole');
const byName = new Map(fixture.map((r) => [r.metadata.name, r]));
const LEVELS = ['view', 'use', 'admin', 'super-admin'] as const;

/** The labels a ClusterRole must carry to be aggregated into `role`. */
function selectors(role: string): Array<Record<string, string>> {
  return (byName.get(role)?.aggregationRule?.clusterRoleSelectors ?? []).map((s) => s.matchLabels);
}
const selectedBy = (labels: Record<string, string> | undefined, role: string) => selectors(role).some((m) => Object.entries(m).every(([k, v]) => labels?.[k] === v));

/** Every ClusterRole (transitively) aggregated into `role`, as the clusterrole-aggregation controller computes it. */
function aggregatedInto(role: string, extra: Role[] = []): Set<string> {
  const all = [...fixture, ...extra];
  const out = new Set<string>();
  const walk = (r: string) => {
    for (const c of all) if (!out.has(c.metadata.name) && selectedBy(c.metadata.labels, r)) {
      out.add(c.metadata.name);
      walk(c.metadata.name);
    }
  };
  walk(role);
  return out;
}

test("the fixture holds Cozystack's four tenant access levels, each aggregating the next lower one", () => {
  for (const level of LEVELS) {
    const role = byName.get(`cozy:tenant:${level}`);
    assert.ok(role, `cozy:tenant:${level}`);
    assert.deepEqual(selectors(`cozy:tenant:${level}`), [{ [`rbac.cozystack.io/aggregate-to-tenant-${level}`]: 'true' }]);
    assert.deepEqual(role.rules, [], 'an aggregated role has no rules of its own');
    assert.ok(byName.get(`cozy:tenant:${level}:base`)?.rules?.length, `cozy:tenant:${level}:base has rules`);
  }
  assert.ok(aggregatedInto('cozy:tenant:use').has('cozy:tenant:view'));
  assert.ok(aggregatedInto('cozy:tenant:admin').has('cozy:tenant:use'));
  assert.ok(aggregatedInto('cozy:tenant:admin').has('cozy:tenant:view:base'));
  assert.ok(aggregatedInto('cozy:tenant:super-admin').has('cozy:tenant:admin:base'));
  assert.ok(!aggregatedInto('cozy:tenant:view').has('cozy:tenant:admin:base'));
});

test('no Cozystack tenant level grants ConfigMaps, Secrets, claims, DataVolumes or Forklift objects — what the docs ask of a tenant must not need them', () => {
  for (const level of LEVELS) {
    const names = aggregatedInto(`cozy:tenant:${level}`);
    const rules = fixture.filter((r) => names.has(r.metadata.name)).flatMap((r) => r.rules ?? []);
    for (const [group, resource] of [['', 'configmaps'], ['', 'secrets'], ['', 'persistentvolumeclaims'], ['cdi.kubevirt.io', 'datavolumes'], ['forklift.konveyor.io', 'plans']] as const) {
      assert.ok(!rules.some((r) => (r.apiGroups ?? []).some((g) => g === group || g === '*') && (r.resources ?? []).some((x) => x === resource || x === '*')), `${level} grants ${group}/${resource}`);
    }
  }
});

test("the chart's tenant roles aggregate into Cozystack's view (read) and admin (write) roles", async () => {
  const chart = tenantRoles(await helmTemplate()) as unknown as Role[];
  const view = chart.filter((r) => selectedBy(r.metadata.labels, 'cozy:tenant:view'));
  const admin = chart.filter((r) => selectedBy(r.metadata.labels, 'cozy:tenant:admin'));
  assert.ok(view.some((r) => r.rules?.some((x) => x.resources?.includes('vmimporttasks') && x.verbs.includes('list'))), 'read on tasks reaches view');
  assert.ok(admin.some((r) => r.rules?.some((x) => x.resources?.includes('vmimporttasks') && x.verbs.includes('create'))), 'create on tasks reaches admin');
  // Through view, the read reaches every level; the write reaches admin and super-admin only.
  for (const level of LEVELS) {
    const names = aggregatedInto(`cozy:tenant:${level}`, chart);
    assert.ok(view.every((r) => names.has(r.metadata.name)), `${level} aggregates the chart's view role`);
    assert.equal(admin.every((r) => names.has(r.metadata.name)), level === 'admin' || level === 'super-admin', `${level} and the chart's admin role`);
  }
});
