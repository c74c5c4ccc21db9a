// docs/install.md's build, push and install sequence is run as written, in bash: the steps that need a
// registry (npm's build of the image, skopeo's push and inspect) are stood in for by shell functions
// that record their arguments, and `helm install` renders with the real chart (`helm template`), so a
// sequence whose variables, archive path, tag or values do not fit together fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const DOC = readFileSync(join(ROOT, 'docs/install.md'), 'utf8');
const DIGEST = `sha256:${'c'.repeat(64)}`;

/** The sh block of "The image" that starts by setting REGISTRY. */
function sequence(): string {
  const blocks = [...DOC.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const found = blocks.filter((b) => /^REGISTRY=/.test(b));
  assert.equal(found.length, 1, 'one build, push and install sequence');
  return found[0]!;
}

test('the documented build, push and install sequence pushes the archive npm run image writes, by digest, and installs the chart on that digest', () => {
  const stubs = `
set -euo pipefail
cd ${JSON.stringify(ROOT)}
LOG="$(mktemp)"
npm() { echo "npm $*" >>"$LOG"; }
skopeo() {
  echo "skopeo $*" >>"$LOG"
  if [[ "$1" == inspect ]]; then echo ${JSON.stringify(DIGEST)}; fi
}
helm() {
  [[ "$1" == install ]] || { echo "unexpected helm $1" >&2; exit 2; }
  shift
  bash scripts/helm.sh template "$@"
}
`;
  const r = spawnSync('bash', ['-c', `${stubs}\n${sequence()}\necho '---'; sed 's/^/@@STUB@@ /' "$LOG"`], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  assert.equal(r.status, 0, r.stderr);
  const log = r.stdout.split('\n').filter((l) => l.startsWith('@@STUB@@ ')).map((l) => l.slice('@@STUB@@ '.length));
  const archive = spawnSync('bash', [join(ROOT, 'scripts/build-image.sh'), '--print-archive'], { encoding: 'utf8' }).stdout.trim();
  const ref = spawnSync('bash', [join(ROOT, 'scripts/build-image.sh'), '--print-ref'], { encoding: 'utf8' }).stdout.trim();
  const tag = ref.slice(ref.lastIndexOf(':') + 1);
  assert.deepEqual(log, [
    'npm ci',
    'npm run image',
    `skopeo copy oci-archive:${archive} docker://registry.corp.lan/cozystack/migration-controller:${tag}`,
    `skopeo inspect --format {{.Digest}} docker://registry.corp.lan/cozystack/migration-controller:${tag}`,
  ]);
  const deployments = YAML.parseAllDocuments(r.stdout)
    .map((d) => d.toJSON() as { kind?: string; spec?: { template: { spec: { containers: Array<{ image: string }> } } } } | null)
    .filter((o) => o?.kind === 'Deployment');
  assert.equal(deployments.length, 1);
  assert.equal(deployments[0]!.spec!.template.spec.containers[0]!.image, `registry.corp.lan/cozystack/migration-controller@${DIGEST}`);
});
