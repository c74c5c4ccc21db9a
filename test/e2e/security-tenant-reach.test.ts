// What a tenant can reach with Cozystack's tenant roles (and the chart's aggregated ones), asked as the
// tenant through kubectl against the real API server: never Forklift's objects, never Secrets (not even
// in its own namespace), never another tenant's imports.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { bindTenant, freshNamespace, installOurCRDs, kubectl, testEnv } from './env/index.ts';
import { installStandInCRDs } from './fixtures.ts';
import { adminClient } from './source-helpers.ts';

let own: string;
let other: string;
let platform: string;
let tenantA: string;
let tenantB: string;

const FORKLIFT_KINDS = ['providers.forklift.konveyor.io', 'plans.forklift.konveyor.io', 'migrations.forklift.konveyor.io', 'hosts.forklift.konveyor.io'];

before(async () => {
  await installOurCRDs();
  const c = await adminClient();
  try {
    await installStandInCRDs(c);
  } finally {
    c.close();
  }
  own = await freshNamespace('reach-a');
  other = await freshNamespace('reach-b');
  platform = await freshNamespace('reach-ctl');
  tenantA = await bindTenant(own, { access: 'admin', tenant: 0 });
  tenantB = await bindTenant(other, { access: 'admin', tenant: 1 });
  const objects = [
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'projected', namespace: platform }, stringData: { password: 'canary' } },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'own-secret', namespace: own }, stringData: { password: 'canary' } },
    { apiVersion: 'forklift.konveyor.io/v1beta1', kind: 'Provider', metadata: { name: 'p', namespace: platform }, spec: { type: 'vsphere', url: 'https://vc.example/sdk', secret: { name: 'projected', namespace: platform } } },
    { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name: 'vc', namespace: other }, spec: { type: 'vsphere', url: 'https://vc.example/sdk', credentials: { username: 'u@vsphere.local', password: 'p', insecureSkipVerify: true } } },
  ];
  const r = await kubectl(['apply', '-f', '-'], { input: objects.map((o) => JSON.stringify(o)).join('\n') });
  assert.equal(r.code, 0, r.stderr);
});

/** Runs kubectl as the tenant and asserts the API server answered 403 Forbidden. */
async function forbidden(kubeconfig: string, args: string[]): Promise<void> {
  const r = await kubectl(args, { kubeconfig });
  assert.notEqual(r.code, 0, `kubectl ${args.join(' ')} succeeded as the tenant: ${r.stdout}`);
  assert.match(r.stderr, /forbidden/i, `kubectl ${args.join(' ')}: ${r.stderr}`);
}

test('a tenant reads its own imports, and the other tenant reads its own: the identities work', async () => {
  const mine = await kubectl(['-n', own, 'get', 'vmimportsources', '-o', 'name'], { kubeconfig: tenantA });
  assert.equal(mine.code, 0, mine.stderr);
  const theirs = await kubectl(['-n', other, 'get', 'vmimportsources', '-o', 'name'], { kubeconfig: tenantB });
  assert.equal(theirs.stdout.trim(), 'vmimportsource.forklift.cozystack.io/vc', theirs.stderr);
});

test("a tenant cannot read Forklift's objects, in its own namespace or the controller's", async () => {
  for (const kind of FORKLIFT_KINDS) {
    await forbidden(tenantA, ['-n', own, 'get', kind]);
    await forbidden(tenantA, ['-n', platform, 'get', kind]);
  }
  await forbidden(tenantA, ['-n', platform, 'get', 'providers.forklift.konveyor.io', 'p', '-o', 'yaml']);
  await forbidden(tenantA, ['get', 'providers.forklift.konveyor.io', '--all-namespaces']);
});

test('a tenant cannot read Secrets: not the projected credentials, not even a Secret in its own namespace', async () => {
  await forbidden(tenantA, ['-n', platform, 'get', 'secret', 'projected', '-o', 'yaml']);
  await forbidden(tenantA, ['-n', platform, 'get', 'secrets']);
  await forbidden(tenantA, ['-n', own, 'get', 'secret', 'own-secret', '-o', 'yaml']);
  await forbidden(tenantA, ['-n', own, 'get', 'secrets']);
  await forbidden(tenantA, ['get', 'secrets', '--all-namespaces']);
});

test("a tenant cannot read another namespace's imports", async () => {
  assert.ok((await testEnv()).tenants[1]);
  await forbidden(tenantA, ['-n', other, 'get', 'vmimportsource', 'vc', '-o', 'yaml']);
  for (const kind of ['vmimportsources.forklift.cozystack.io', 'vmimporttasks.forklift.cozystack.io']) {
    await forbidden(tenantA, ['-n', other, 'get', kind]);
    await forbidden(tenantA, ['get', kind, '--all-namespaces']);
  }
});
