// The controller's exact RBAC, rendered by the real helm binary: every rule the chart grants its
// ServiceAccount, where it applies, and the reason it exists. A rule added or widened without a reason
// here fails this test (docs/security.md, "The controller's blast radius").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { scratch } from './scratch.ts';

const tmp = scratch('mc-rbac-');

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CHART = join(ROOT, 'charts/migration-controller');
const NS = 'cozy-migration-controller';
const FORKLIFT_NS = 'cozy-forklift';

interface Obj {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: RawRule[];
  roleRef?: { kind: string; name: string };
  subjects?: Array<{ kind: string; name: string; namespace?: string }>;
}
interface RawRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
}
/** One granted rule: where it applies ('cluster' or a namespace), what it allows, and why. */
interface Grant {
  scope: string;
  groups: string;
  resources: string;
  verbs: string;
  names?: string;
  why: string;
}

function render(values: object): Obj[] {
  const f = tmp('values.yaml');
  writeFileSync(f, YAML.stringify(values));
  const r = spawnSync('bash', [join(ROOT, 'scripts/helm.sh'), 'template', 'migration-controller', CHART, '--namespace', NS, '-f', f], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  assert.equal(r.status, 0, `helm template failed: ${r.stderr}`);
  return YAML.parseAllDocuments(r.stdout)
    .map((d) => d.toJSON() as Obj | null)
    .filter((o): o is Obj => !!o && typeof o.kind === 'string');
}

/** The rules bound to the controller's ServiceAccount, each with the scope its binding gives it. */
function controllerGrants(objs: Obj[]): Array<Omit<Grant, 'why'>> {
  const out: Array<Omit<Grant, 'why'>> = [];
  for (const b of objs.filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding')) {
    if (!b.subjects?.some((s) => s.kind === 'ServiceAccount' && s.name === 'migration-controller' && s.namespace === NS)) continue;
    const role = objs.find((o) => o.kind === b.roleRef!.kind && o.metadata.name === b.roleRef!.name && (o.kind === 'ClusterRole' || o.metadata.namespace === b.metadata.namespace));
    assert.ok(role, `binding ${b.metadata.name} names a role the chart renders`);
    const scope = b.kind === 'ClusterRoleBinding' ? 'cluster' : b.metadata.namespace!;
    for (const r of role.rules ?? []) {
      out.push({
        scope,
        groups: (r.apiGroups ?? []).join(','),
        resources: (r.resources ?? []).join(','),
        verbs: [...r.verbs].sort().join(','),
        ...(r.resourceNames ? { names: [...r.resourceNames].sort().join(',') } : {}),
      });
    }
  }
  return out;
}

const key = (g: Omit<Grant, 'why'>) => `${g.scope} | ${g.groups || 'core'} | ${g.resources} | ${g.verbs}${g.names ? ` | ${g.names}` : ''}`;

/** The rules with the default values (selfManaged certificates, no secretRef). */
const BASE: Grant[] = [
  { scope: 'cluster', groups: 'forklift.cozystack.io', resources: 'vmimportsources,vmimporttasks', verbs: 'get,list,patch,watch', why: 'reconcile our kinds; add and remove the finalizer (merge patch)' },
  { scope: 'cluster', groups: 'forklift.cozystack.io', resources: 'vmimportsources/status,vmimporttasks/status', verbs: 'patch', why: 'write status (conditions, progress) by merge patch' },
  { scope: 'cluster', groups: 'forklift.cozystack.io', resources: 'vmimportsources/finalizers,vmimporttasks/finalizers', verbs: 'update', why: 'owner references with blockOwnerDeletion on the children' },
  { scope: 'cluster', groups: 'forklift.konveyor.io', resources: 'providers,hosts', verbs: 'create,delete,get,list,patch,update,watch', why: "a source's Providers and Hosts, brought in line with it by update; the destination Provider's defaultTransferNetwork annotation removed by patch" },
  { scope: 'cluster', groups: 'forklift.konveyor.io', resources: 'networkmaps,storagemaps', verbs: 'create,delete,get,list,watch', why: "a task's maps: written once, deleted with the task" },
  { scope: 'cluster', groups: 'forklift.konveyor.io', resources: 'plans', verbs: 'create,delete,get,list,patch,watch', why: "a task's Plans: written once, archived by patch (Forklift then removes its VDDK Secret), deleted" },
  { scope: 'cluster', groups: 'forklift.konveyor.io', resources: 'migrations', verbs: 'create,delete,get,list,patch,watch', why: "a task's Migrations: cutover and cancel are patches" },
  { scope: 'cluster', groups: 'cdi.kubevirt.io', resources: 'datavolumes', verbs: 'create,delete,get,list,watch', why: 'the VMDisk DataVolume adopting the transferred claim; removing transfer DataVolumes' },
  { scope: 'cluster', groups: 'kubevirt.io', resources: 'virtualmachines', verbs: 'create,delete,get,list,watch', why: "Forklift's Plan admission reviews VM create on the Plan's behalf; Forklift's VM shell is removed after the handoff" },
  { scope: 'cluster', groups: 'apps.cozystack.io', resources: 'vmdisks,vminstances', verbs: 'create,get,list,watch', why: 'the outputs: create-only, never modified or deleted' },
  { scope: 'cluster', groups: '', resources: 'persistentvolumeclaims', verbs: 'create,delete,get,list,patch,watch', why: 'copy-free handoff: the target claim, marking and deleting the transferred one' },
  { scope: 'cluster', groups: '', resources: 'persistentvolumes', verbs: 'get,list,patch,watch', why: 'copy-free handoff: Retain during the swap, claimRef, the class policy back; never update or delete' },
  { scope: 'cluster', groups: 'storage.k8s.io', resources: 'storageclasses', verbs: 'get,list,watch', why: 'preflight: binding mode and reclaim policy of the class' },
  { scope: 'cluster', groups: '', resources: 'resourcequotas', verbs: 'get,list,watch', why: 'preflight: quota against twice the disk size' },
  { scope: 'cluster', groups: 'networking.k8s.io', resources: 'servicecidrs', verbs: 'get,list,watch', why: 'the Service CIDR without creating anything (Kubernetes 1.33+)' },
  { scope: 'cluster', groups: '', resources: 'nodes', verbs: 'list', why: "egress policy: the nodes' pod CIDRs and own addresses a source may not point into" },
  { scope: 'cluster', groups: '', resources: 'configmaps', verbs: 'create,delete,get,list,update', why: 'the inventory ConfigMap published per source; never watched or patched' },
  { scope: 'cluster', groups: ',events.k8s.io', resources: 'events', verbs: 'create,list,patch', why: "Events on our objects; a stalled claim's quota Events explain a stall" },
  { scope: 'cluster', groups: 'apiextensions.k8s.io', resources: 'customresourcedefinitions', verbs: 'get,list,watch', why: 'which engines are installed' },
  { scope: 'cluster', groups: 'cozystack.io', resources: 'applicationdefinitions', verbs: 'get', names: 'vm-instance', why: "what the platform's vm-instance chart takes (firmware, MACs), read when a VMInstance is made" },
  { scope: 'cluster', groups: 'apiregistration.k8s.io', resources: 'apiservices', verbs: 'get,list,watch', why: "an aggregated API (Cozystack's apps.cozystack.io) that becomes Available later" },
  { scope: 'cluster', groups: 'authorization.k8s.io', resources: 'subjectaccessreviews', verbs: 'create', why: "the webhook checks the caller: secretRef readable by its author, task facts only for readers" },
  {
    scope: 'cluster',
    groups: 'admissionregistration.k8s.io',
    resources: 'validatingwebhookconfigurations,mutatingwebhookconfigurations',
    verbs: 'get,update',
    names: 'migration-controller-early,migration-controller-validating',
    why: 'selfManaged certificates: the caBundle of its own two configurations',
  },
  { scope: NS, groups: 'coordination.k8s.io', resources: 'leases', verbs: 'create,get,update', why: 'leader election' },
  { scope: NS, groups: '', resources: 'services', verbs: 'create,delete', why: 'the Service-CIDR probe (< 1.33), only in its own namespace' },
  { scope: NS, groups: '', resources: 'secrets', verbs: 'create,delete,get,patch,update', why: 'projected Forklift credentials (a re-test asked for by annotating one), the key ring, the webhook certificate: Secrets only it holds' },
  { scope: 'default', groups: 'discovery.k8s.io', resources: 'endpointslices', verbs: 'get', names: 'kubernetes', why: "egress policy: the API server's own addresses" },
  { scope: FORKLIFT_NS, groups: '', resources: 'secrets', verbs: 'get', names: 'forklift-inventory-serving-cert', why: "the inventory's serving CA" },
];

function assertExactly(values: object, expected: Grant[]): void {
  const got = controllerGrants(render(values)).map(key).sort();
  assert.deepEqual(got, expected.map(key).sort());
  for (const g of expected) assert.ok(g.why.length > 10, `a reason for ${key(g)}`);
}

test('with the default values the controller is granted exactly the listed rules, each with its reason', () => {
  assertExactly({}, BASE);
});

test('Secrets are reachable only in the controller\'s namespace and one named Secret in Forklift\'s; never listed or watched anywhere', () => {
  const secrets = controllerGrants(render({})).filter((g) => g.resources.split(',').includes('secrets'));
  assert.deepEqual(secrets.map((g) => g.scope).sort(), [FORKLIFT_NS, NS]);
  for (const g of secrets) assert.ok(!/list|watch/.test(g.verbs), key(g));
});

test('certManager certificates drop the webhook-configuration rule; enabling secretRef adds exactly a cluster-wide named get on Secrets', () => {
  const noWebhookRule = BASE.filter((g) => g.groups !== 'admissionregistration.k8s.io');
  assertExactly({ webhook: { certificate: { mode: 'certManager' } } }, noWebhookRule);
  assertExactly({ credentials: { secretRef: { enabled: true } } }, [...BASE, { scope: 'cluster', groups: '', resources: 'secrets', verbs: 'get', why: 'credentials.secretRef: the password from a Secret in the source namespace' }]);
});

test('the controller can create Services nowhere but its own namespace, and never updates or deletes a volume', () => {
  const grants = controllerGrants(render({}));
  assert.deepEqual(grants.filter((g) => g.resources.split(',').includes('services')).map((g) => g.scope), [NS]);
  const pv = grants.find((g) => g.resources === 'persistentvolumes')!;
  assert.ok(!/update|delete|create/.test(pv.verbs));
});

test('metrics.authorization adds exactly a TokenReview create for the controller, and a /metrics reader role bound to the named scrapers', () => {
  const values = { metrics: { authorization: { enabled: true, scrapers: [{ namespace: 'cozy-monitoring', name: 'vmagent' }] } } };
  assertExactly(values, [...BASE, { scope: 'cluster', groups: 'authentication.k8s.io', resources: 'tokenreviews', verbs: 'create', why: "metrics.authorization: a scraper's bearer token is reviewed before /metrics answers" }]);
  const objs = render(values);
  const reader = objs.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'migration-controller-metrics-reader')!;
  assert.deepEqual(reader.rules, [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
  const binding = objs.find((o) => o.kind === 'ClusterRoleBinding' && o.metadata.name === 'migration-controller-metrics-reader')!;
  assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'vmagent', namespace: 'cozy-monitoring' }]);
  const d = objs.find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { spec: { containers: Array<{ env: Array<{ name: string; value?: string }> }> } } } };
  assert.ok(d.spec.template.spec.containers[0]!.env.some((e) => e.name === 'METRICS_AUTH' && e.value === 'kubernetes'));
  assert.equal(render({}).filter((o) => o.metadata.name === 'migration-controller-metrics-reader').length, 0, 'nothing of it by default');
});
