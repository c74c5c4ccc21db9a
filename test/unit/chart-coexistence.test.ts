// The chart's coexistence guard (templates/coexistence.yaml) decides on what Helm's lookup finds in the
// cluster, and lookup finds nothing under `helm template`. Here the decisions are exercised offline: a
// copy of the chart answers each lookup from a value instead (the template is otherwise unchanged), so
// every rule is seen to refuse with its message and to pass once the switch steps are done.
// test/e2e/chart-coexistence.test.ts runs the real lookups against an API server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { scratch } from './scratch.ts';

const tmp = scratch('mc-coexist-');

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const RELEASE = 'migration-controller';
const NS = 'cozy-migration-controller';

/** The chart, with each `lookup "<apiVersion>" "<Kind>" "<ns>" "<name>"` answered by .Values.lookupStub["<apiVersion>|<Kind>|<ns>|<name>"]. */
function stubbedChart(): string {
  const dir = tmp('chart');
  cpSync(join(ROOT, 'charts/migration-controller'), dir, { recursive: true });
  const file = join(dir, 'templates/coexistence.yaml');
  const text = readFileSync(file, 'utf8');
  const stubbed = text.replace(/lookup "([^"]*)" "([^"]*)" "([^"]*)" ("[^"]*"|\$crd)/g, (_m, av: string, kind: string, ns: string, name: string) =>
    `(get (default (dict) $.Values.lookupStub) (printf "%s|%s|%s|%s" "${av}" "${kind}" "${ns}" ${name === '$crd' ? '$crd' : name}))`,
  );
  assert.notEqual(stubbed, text, 'the guard calls lookup');
  assert.doesNotMatch(stubbed, /\blookup "/, 'every lookup is stubbed');
  writeFileSync(file, stubbed);
  // The stub is not a value of the chart: its schema would refuse it.
  rmSync(join(dir, 'values.schema.json'));
  return dir;
}
const CHART = stubbedChart();

function install(cluster: Record<string, unknown>, values: object = {}): { code: number; stderr: string } {
  const f = tmp('values.yaml');
  writeFileSync(f, YAML.stringify({ ...values, lookupStub: cluster }));
  const r = spawnSync('bash', [join(ROOT, 'scripts/helm.sh'), 'template', RELEASE, CHART, '-n', NS, '-f', f], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { code: r.status ?? 1, stderr: r.stderr };
}

const crd = (name: string, release: string, ns: string) => ({
  [`apiextensions.k8s.io/v1|CustomResourceDefinition||${name}`]: { metadata: { name, annotations: { 'meta.helm.sh/release-name': release, 'meta.helm.sh/release-namespace': ns } } },
});
const bothCRDs = (release: string, ns: string) => ({ ...crd('vmimportsources.forklift.cozystack.io', release, ns), ...crd('vmimporttasks.forklift.cozystack.io', release, ns) });
const micro = (d: Date) => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
const leases = (renew: Date) => ({ 'coordination.k8s.io/v1|Lease||': { items: [{ metadata: { name: 'forklift.cozystack.io', namespace: 'cozy-vm-import' }, spec: { holderIdentity: 'mc-6d4f9_1f2e', renewTime: micro(renew) } }] } });
const deployments = (replicas: number, image = 'ghcr.io/cozystack/cozystack/migration-controller:v1.7.0') => ({
  'apps/v1|Deployment||': { items: [{ metadata: { name: 'migration-controller', namespace: 'cozy-vm-import' }, spec: { replicas, template: { spec: { containers: [{ name: 'c', image }] } } } }] },
});
const tasks = (finalizers: string[]) => ({ 'forklift.cozystack.io/v1alpha1|VMImportTask||': { items: [{ metadata: { name: 'import-web-tier', namespace: 'tenant-foo', finalizers } }] } });
const HOW = /docs\/install\.md, "Switching from Cozystack's own controller"/;

test('on an empty cluster, and over CRDs this very release owns, the chart installs', () => {
  assert.equal(install({}).code, 0);
  assert.equal(install(bothCRDs(RELEASE, NS)).code, 0);
});

test("CRDs owned by another Helm release are refused, naming the release; with crds.install off they are someone else's to manage", () => {
  const r = install(bothCRDs('migration-controller', 'cozy-vm-import'));
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /the CRD vmimportsources\.forklift\.cozystack\.io belongs to Helm release cozy-vm-import\/migration-controller/);
  assert.match(r.stderr, HOW);
  assert.equal(install(bothCRDs('migration-controller', 'cozy-vm-import'), { crds: { install: false } }).code, 0);
});

test("Cozystack's own controller's Lease renewed in the last two minutes is refused, naming its holder; a stale one is not", () => {
  const r = install(leases(new Date(Date.now() - 5_000)));
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /its leader-election Lease cozy-vm-import\/forklift\.cozystack\.io is held by "mc-6d4f9_1f2e" \(renewed \d+s ago\)/);
  assert.equal(install(leases(new Date(Date.now() - 10 * 60_000))).code, 0);
});

test("a Deployment running Cozystack's own controller's image is refused while it has replicas, not once scaled to zero", () => {
  const r = install(deployments(1));
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /Deployment cozy-vm-import\/migration-controller runs ghcr\.io\/cozystack\/cozystack\/migration-controller:v1\.7\.0; .*scale it to 0/);
  assert.equal(install(deployments(0)).code, 0);
  assert.equal(install(deployments(2, 'registry.corp.lan/other:1')).code, 0);
});

test("tasks holding Cozystack's own controller's finalizer are refused until the install is told to take them over; once taken over they hold ours too and upgrades pass", () => {
  const cluster = { ...bothCRDs(RELEASE, NS), ...tasks(['forklift.cozystack.io/cleanup-transfer-volumes']) };
  const r = install(cluster);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /1 VMImportTask\(s\) hold the finalizer of Cozystack's own migration controller \(forklift\.cozystack\.io\/cleanup-transfer-volumes\), for example tenant-foo\/import-web-tier/);
  assert.match(r.stderr, /install with coexistence\.takeOver=true/);
  assert.equal(install(cluster, { coexistence: { takeOver: true } }).code, 0);
  assert.equal(install({ ...bothCRDs(RELEASE, NS), ...tasks(['forklift.cozystack.io/finalizer']) }).code, 0, 'our own finalizer is ours');
  // Taken over (both finalizers): a later upgrade without the value passes.
  assert.equal(install({ ...bothCRDs(RELEASE, NS), ...tasks(['forklift.cozystack.io/cleanup-transfer-volumes', 'forklift.cozystack.io/finalizer']) }).code, 0, 'a task taken over is ours');
});
