// Two controllers must never reconcile the same objects: on a PRIVATE control plane, the chart refuses
// to install (helm install --dry-run=server, which runs the chart's lookups against the cluster) while
// Cozystack's own controller serves these kinds — its release owning the CRDs, its Lease held, its
// Deployment running — or has served them (tasks holding its finalizer), each time naming what it found
// and where the switch is described; following docs/install.md's switch steps, it then installs.
// Cozystack's own CRD files are not part of this repository: ours, at the same names, stand in for them,
// stamped with the ownership annotations a Helm release of that controller gives them.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import YAML from 'yaml';
import { readFileSync } from 'node:fs';
import { ControlPlane, REPO_ROOT, waitFor } from './env/index.ts';
import { findKubectl } from '../../scripts/demo/tools.ts';
import { UPSTREAM_TASK_FINALIZER } from '../../src/api/labels.ts';

const CHART = join(REPO_ROOT, 'charts/migration-controller');
const RELEASE = 'migration-controller';
const RELEASE_NS = 'cozy-migration-controller';
/** Where the stand-in for Cozystack's own controller's release lives. */
const THEIRS_NS = 'cozy-vm-import';
const CRDS = ['vmimportsources.forklift.cozystack.io', 'vmimporttasks.forklift.cozystack.io'];

let cp: ControlPlane;

function exec(bin: string, args: string[], input?: string, timeoutMs = 120_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = execFile(bin, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      res({ code, stdout: String(stdout), stderr: String(stderr) });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}
const KUBECTL = findKubectl();
const kubectl = (args: string[], input?: string) => exec(KUBECTL, ['--kubeconfig', cp.kubeconfigPath, ...args], input);
const dryRun = (...set: string[]) =>
  exec('bash', [join(REPO_ROOT, 'scripts/helm.sh'), 'install', RELEASE, CHART, '-n', RELEASE_NS, '--create-namespace', '--dry-run=server', ...set.flatMap((s) => ['--set', s]), '--kubeconfig', cp.kubeconfigPath]);
const apply = async (obj: unknown) => {
  const r = await kubectl(['apply', '-f', '-'], JSON.stringify(obj));
  assert.equal(r.code, 0, r.stderr);
};
/** A Lease renewal time as the API server writes one (RFC 3339 with microseconds). */
const microTime = (d: Date) => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

before(async () => {
  cp = await ControlPlane.start();
  for (const f of ['forklift.cozystack.io_vmimportsources.yaml', 'forklift.cozystack.io_vmimporttasks.yaml']) {
    const crd = YAML.parse(readFileSync(join(REPO_ROOT, 'crds', f), 'utf8')) as { metadata: { annotations?: Record<string, string>; labels?: Record<string, string> } };
    crd.metadata.annotations = { ...crd.metadata.annotations, 'meta.helm.sh/release-name': 'migration-controller', 'meta.helm.sh/release-namespace': THEIRS_NS };
    crd.metadata.labels = { ...crd.metadata.labels, 'app.kubernetes.io/managed-by': 'Helm' };
    await apply(crd);
  }
  const est = await kubectl(['wait', '--for=condition=Established', ...CRDS.map((c) => `crd/${c}`), '--timeout=60s']);
  assert.equal(est.code, 0, est.stderr);
  await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: THEIRS_NS } });
});

after(async () => {
  await cp?.stop();
});

test("the chart refuses to install beside Cozystack's own controller, naming what it found each time, and installs once the documented switch steps are done", async () => {
  // 1. Its release owns the CRDs.
  let r = await dryRun();
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, new RegExp(`the CRD vmimportsources\\.forklift\\.cozystack\\.io belongs to Helm release ${THEIRS_NS}/migration-controller`));
  assert.match(r.stderr, /two controllers must never serve these kinds/);
  assert.match(r.stderr, /docs\/install\.md, "Switching from Cozystack's own controller"/);

  // The switch hands the CRDs over to this release (docs/install.md).
  for (const crd of CRDS) {
    const a = await kubectl(['annotate', `crd/${crd}`, '--overwrite', `meta.helm.sh/release-name=${RELEASE}`, `meta.helm.sh/release-namespace=${RELEASE_NS}`]);
    assert.equal(a.code, 0, a.stderr);
  }

  // 2. Its Lease is held: it is running.
  const lease = (renew: Date) => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'forklift.cozystack.io', namespace: THEIRS_NS },
    spec: { holderIdentity: 'migration-controller-6d4f9_1f2e', leaseDurationSeconds: 15, renewTime: microTime(renew), acquireTime: microTime(renew) },
  });
  await apply(lease(new Date()));
  r = await dryRun();
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, new RegExp(`its leader-election Lease ${THEIRS_NS}/forklift\\.cozystack\\.io is held by "migration-controller-6d4f9_1f2e"`));

  // Stopped ten minutes ago: its Lease is stale.
  await apply(lease(new Date(Date.now() - 10 * 60_000)));

  // 3. Its Deployment still runs its image.
  const deployment = (replicas: number) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'migration-controller', namespace: THEIRS_NS },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'migration-controller' } },
      template: { metadata: { labels: { app: 'migration-controller' } }, spec: { containers: [{ name: 'migration-controller', image: 'ghcr.io/cozystack/cozystack/migration-controller:v1.7.0' }] } },
    },
  });
  await apply(deployment(1));
  r = await dryRun();
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, new RegExp(`Deployment ${THEIRS_NS}/migration-controller runs ghcr\\.io/cozystack/cozystack/migration-controller:v1\\.7\\.0`));
  await apply(deployment(0));

  // 4. A task it served holds its finalizer.
  await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tenant-switch' } });
  await apply({
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name: 'import-web-tier', namespace: 'tenant-switch', finalizers: [UPSTREAM_TASK_FINALIZER] },
    spec: { sourceRef: { name: 'vcenter-prod' }, vms: [{ id: 'vm-1234', name: 'web-01' }], storageClass: 'replicated' },
  });
  r = await dryRun();
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /1 VMImportTask\(s\) hold the finalizer of Cozystack's own migration controller \(forklift\.cozystack\.io\/cleanup-transfer-volumes\), for example tenant-switch\/import-web-tier/);
  assert.match(r.stderr, /install with coexistence\.takeOver=true/);

  // Told to take them over, with that controller stopped: the chart installs.
  r = await dryRun('coexistence.takeOver=true');
  assert.equal(r.code, 0, r.stderr);

  // Nothing was written by the dry runs: the task is as it was, its finalizer the only one.
  const t = await waitFor('the task', async () => {
    const g = await kubectl(['get', 'vmimporttask', '-n', 'tenant-switch', 'import-web-tier', '-o', 'json']);
    return g.code === 0 ? (JSON.parse(g.stdout) as { metadata: { finalizers?: string[] } }) : undefined;
  });
  assert.deepEqual(t.metadata.finalizers, [UPSTREAM_TASK_FINALIZER]);
});
