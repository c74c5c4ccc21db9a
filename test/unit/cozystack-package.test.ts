// The Cozystack package (packaging/cozystack/): what an admin applies to install the chart and Forklift
// through Cozystack's package operator. Checked against the operator's rules as Cozystack defines them
// (cozystack/cozystack@3c780acd: api/v1alpha1/packagesource_types.go, package_types.go,
// internal/operator/package_reconciler.go, packagesource_reconciler.go).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { render as renderForkliftOperator, NAMESPACE as FORKLIFT_NS } from '../../packaging/cozystack/update-forklift-operator.ts';
import { scratch } from './scratch.ts';

const tmp = scratch('mc-pkg-');

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PKG = join(ROOT, 'packaging/cozystack');

interface HealthCheck { apiVersion: string; kind: string; current?: string; failed?: string; inProgress?: string }
interface Component { name: string; path: string; install?: { namespace?: string; releaseName?: string; dependsOn?: string[]; healthCheckExprs?: HealthCheck[] } }
interface PackageSource { apiVersion: string; kind: string; metadata: { name: string }; spec: { sourceRef: { kind: string; name: string; namespace: string; path?: string }; variants: Array<{ name: string; dependsOn?: string[]; components: Component[] }> } }
interface Package { apiVersion: string; kind: string; metadata: { name: string }; spec: { variant: string; components?: Record<string, { values?: Record<string, unknown>; enabled?: boolean }> } }

const docs = <T>(file: string): T[] => YAML.parseAllDocuments(readFileSync(join(PKG, file), 'utf8')).map((d) => d.toJSON() as T).filter(Boolean);
const sources = docs<PackageSource>('packagesources.yaml');
const packages = docs<Package>('packages.yaml');
const [repo] = docs<{ kind: string; metadata: { name: string; namespace: string }; spec: { ignore: string } }>('source.yaml');

/** Package sources of Cozystack main that ours depend on (cozystack/cozystack@3c780acd:packages/core/platform/sources/). */
const UPSTREAM_PACKAGES = ['cozystack.kubevirt', 'cozystack.kubevirt-cdi', 'cozystack.cert-manager', 'cozystack.vm-disk-application', 'cozystack.vm-instance-application'];
/** The packages Cozystack's own bundle enables for VM import (the seed's bundles.enabledPackages). */
const BUNDLE_PACKAGES = ['cozystack.forklift-operator', 'cozystack.forklift', 'cozystack.migration-controller'];

function helm(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync('bash', [join(ROOT, 'scripts/helm.sh'), ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { code: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

test('every component is a chart in this repository, under a path the GitRepository keeps, and renders', () => {
  assert.equal(repo?.kind, 'GitRepository');
  assert.deepEqual(sources.map((s) => s.metadata.name).sort(), [...BUNDLE_PACKAGES].sort());
  const kept = repo!.spec.ignore.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('!/')).map((l) => l.slice(2));
  for (const s of sources) {
    assert.equal(s.apiVersion, 'cozystack.io/v1alpha1');
    assert.deepEqual({ ...s.spec.sourceRef }, { kind: 'GitRepository', name: repo!.metadata.name, namespace: repo!.metadata.namespace, path: '/' });
    for (const v of s.spec.variants) {
      const names = v.components.map((c) => c.name);
      for (const c of v.components) {
        assert.ok(existsSync(join(ROOT, c.path, 'Chart.yaml')), `${s.metadata.name}/${c.name}: ${c.path} is a chart`);
        assert.ok(kept.some((k) => `${c.path}/`.startsWith(k)), `${c.path} is not ignored by the GitRepository`);
        assert.ok(c.install?.namespace, `${c.name} names its namespace (the operator refuses an empty one)`);
        for (const d of c.install?.dependsOn ?? []) assert.ok(names.includes(d), `${c.name} depends on a component of its own variant`);
        const r = helm(['template', c.install!.releaseName ?? c.name, join(ROOT, c.path), '-n', c.install!.namespace!, '-f', join(ROOT, 'test/fixtures/cozystack-values.yaml')]);
        assert.equal(r.code, 0, `${c.path} with the injected values: ${r.stderr}`);
      }
    }
  }
});

test("the packages are the three Cozystack's own bundle enables, and cert-manager comes before Forklift's operator and the controller", () => {
  assert.deepEqual(packages.map((p) => p.metadata.name), BUNDLE_PACKAGES);
  const deps = (name: string) => sources.find((s) => s.metadata.name === name)!.spec.variants[0]!.dependsOn ?? [];
  assert.ok(deps('cozystack.forklift-operator').includes('cozystack.cert-manager'));
  assert.ok(deps('cozystack.forklift').includes('cozystack.forklift-operator'));
  assert.ok(deps('cozystack.migration-controller').includes('cozystack.cert-manager'));
});

test('the Forklift package is Ready only once the operator reports its ForkliftController reconciled, and failed when it reports a failure', () => {
  const forklift = sources.find((s) => s.metadata.name === 'cozystack.forklift')!.spec.variants[0]!.components.find((c) => c.name === 'forklift')!;
  const checks = forklift.install?.healthCheckExprs ?? [];
  assert.equal(checks.length, 1);
  const [h] = checks;
  assert.equal(`${h!.apiVersion}/${h!.kind}`, 'forklift.konveyor.io/v1beta1/ForkliftController');
  // The kind the check names is the one the component renders.
  const r = helm(['template', 'forklift', join(ROOT, forklift.path), '-n', 'cozy-forklift']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /apiVersion: forklift\.konveyor\.io\/v1beta1\nkind: ForkliftController/);
  assert.match(h!.current!, /c\.type == 'Successful' && c\.status == 'True'/);
  assert.match(h!.failed!, /c\.type == 'Failure' && c\.status == 'True'/);
  assert.ok(h!.inProgress);
});

test('in the Cozystack package cert-manager issues the webhook certificate', () => {
  const mc = packages.find((p) => p.metadata.name === 'cozystack.migration-controller')!;
  const values = structuredClone(mc.spec.components!['migration-controller']!.values!) as { image: { repository: string }; webhook: { certificate: { mode: string } } };
  assert.equal(values.webhook.certificate.mode, 'certManager');
  values.image.repository = 'registry.corp.lan/cozystack/migration-controller';
  const f = tmp('values.yaml');
  writeFileSync(f, YAML.stringify(values));
  const r = helm(['template', 'migration-controller', join(ROOT, 'charts/migration-controller'), '-n', 'cozy-migration-controller', '-f', join(ROOT, 'test/fixtures/cozystack-values.yaml'), '-f', f]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /kind: Certificate\n/);
  assert.match(r.stdout, /cert-manager\.io\/inject-ca-from: cozy-migration-controller\//);
});

test('package dependencies name only our package sources or ones Cozystack main defines', () => {
  const ours = sources.map((s) => s.metadata.name);
  for (const s of sources) for (const v of s.spec.variants) for (const d of v.dependsOn ?? []) assert.ok(ours.includes(d) || UPSTREAM_PACKAGES.includes(d), `${s.metadata.name} depends on unknown ${d}`);
  const mc = sources.find((s) => s.metadata.name === 'cozystack.migration-controller')!;
  assert.ok(mc.spec.variants[0]!.dependsOn!.includes('cozystack.forklift'));
});

test("each Package enables a package source's variant, and its component values pass the chart's schema merged over cozystack-values", () => {
  for (const p of packages) {
    const s = sources.find((x) => x.metadata.name === p.metadata.name);
    assert.ok(s, `a PackageSource named ${p.metadata.name}`);
    const v = s.spec.variants.find((x) => x.name === p.spec.variant);
    assert.ok(v, `variant ${p.spec.variant}`);
    for (const [name, comp] of Object.entries(p.spec.components ?? {})) {
      const c = v.components.find((x) => x.name === name);
      assert.ok(c, `component ${name}`);
      if (!comp.values) continue;
      const f = tmp('values.yaml');
      writeFileSync(f, YAML.stringify(comp.values));
      // helm-controller: valuesFrom (the cozystack-values Secret) first, then spec.values over it.
      const template = (file: string): ReturnType<typeof helm> => helm(['template', c.install!.releaseName!, join(ROOT, c.path), '-n', c.install!.namespace!, '-f', join(ROOT, 'test/fixtures/cozystack-values.yaml'), '-f', file]);
      const image = (comp.values.image ?? {}) as { repository?: string; tag?: string };
      let r = template(f);
      if (image.repository?.includes('example.com')) {
        // The image is where the admin pushed it: as shipped, the placeholder is refused, saying so.
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /is a placeholder, not an image your nodes can pull/);
        image.repository = 'registry.corp.lan/cozystack/migration-controller';
        writeFileSync(f, YAML.stringify({ ...comp.values, image }));
        r = template(f);
      }
      assert.equal(r.code, 0, r.stderr);
      if (image.repository) assert.match(r.stdout, new RegExp(`image: "${image.repository}:${image.tag}"`));
    }
  }
});

test("Forklift's operator manifests are filled for a cluster without OLM: no placeholder, no Namespace, images pinned by digest, watching cozy-forklift", () => {
  const text = readFileSync(join(PKG, 'charts/forklift-operator/files/forklift-operator.yaml'), 'utf8');
  assert.doesNotMatch(text, /\$\{[A-Z0-9_]+\}/);
  const objs = YAML.parseAllDocuments(text).map((d) => d.toJSON() as { kind: string; metadata: { namespace?: string } });
  assert.equal(objs.filter((o) => o.kind === 'Namespace').length, 0);
  assert.ok(objs.filter((o) => o.kind === 'CustomResourceDefinition').length >= 10);
  for (const o of objs) if (o.metadata.namespace) assert.equal(o.metadata.namespace, FORKLIFT_NS);
  // Every image the operator runs or deploys (its container, and the *_IMAGE env it passes to the
  // operands) is pinned by digest; CRD schema examples may say :latest.
  const deploys = objs.filter((o) => o.kind === 'Deployment') as unknown as Array<{ spec: { template: { spec: { containers: Array<{ image: string; env?: Array<{ name: string; value?: string }> }> } } } }>;
  const refs = deploys.flatMap((d) => d.spec.template.spec.containers.flatMap((c) => [c.image, ...(c.env ?? []).filter((e) => e.name.endsWith('_IMAGE') || e.name.endsWith('_IMAGE_RHEL9')).map((e) => e.value ?? '')]));
  assert.ok(refs.length >= 10, `images found: ${refs.length}`);
  for (const ref of refs) assert.match(ref, /@sha256:[a-f0-9]{64}$/, ref);
  assert.match(text, /name: WATCH_NAMESPACE\n\s+value: cozy-forklift/);
  // The generator refuses a placeholder it does not know instead of shipping it.
  assert.throws(() => renderForkliftOperator('kind: Deployment\nmetadata: {name: x}\nspec: {image: "${NEW_IMAGE}"}\n'), /unknown placeholder \$\{NEW_IMAGE\}/);
  assert.match(renderForkliftOperator('kind: Deployment\nmetadata: {name: x, namespace: konveyor-forklift}\nspec: {image: "${OPERATOR_IMAGE}"}\n---\nkind: Namespace\nmetadata: {name: konveyor-forklift}\n'), /namespace: cozy-forklift[\s\S]*forklift-operator:release-2\.11@sha256:/);
});
