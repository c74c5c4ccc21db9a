// The demo binds its tenant to exactly the ClusterRoles the chart contributes to Cozystack's tenant roles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tenantRoles } from '../../scripts/demo/tools.ts';

type Obj = { kind: string; metadata: { name: string; labels?: Record<string, string> } };

test('only ClusterRoles carrying a Cozystack tenant aggregation label are the tenant roles', () => {
  const objs: Obj[] = [
    { kind: 'ClusterRole', metadata: { name: 'mc', labels: { 'app.kubernetes.io/name': 'migration-controller' } } },
    { kind: 'ClusterRole', metadata: { name: 'mc-tenant-view', labels: { 'rbac.cozystack.io/aggregate-to-tenant-view': 'true' } } },
    { kind: 'ClusterRole', metadata: { name: 'mc-tenant-admin', labels: { 'rbac.cozystack.io/aggregate-to-tenant-admin': 'true' } } },
    { kind: 'Role', metadata: { name: 'r', labels: { 'rbac.cozystack.io/aggregate-to-tenant-admin': 'true' } } },
    { kind: 'ClusterRoleBinding', metadata: { name: 'b' } },
  ];
  assert.deepEqual(tenantRoles(objs).map((o) => o.metadata.name), ['mc-tenant-view', 'mc-tenant-admin']);
});
