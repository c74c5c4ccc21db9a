// The README reads in the order a newcomer needs it: what it is, how to try it, what it does to their
// VMs, how to install it, how a tenant uses it, what each failure reason means, and how to develop it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../scripts/demo/tools.ts';

const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');

test('the README sections come in the order a newcomer needs them', () => {
  const h2 = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
  assert.deepEqual(h2, ['Try it', 'What it does to your VMs', 'Install', 'Tenant quickstart', 'Troubleshooting by reason', 'Development']);
  // What it is: one paragraph between the title and the first section.
  const intro = readme.slice(readme.indexOf('\n') + 1, readme.indexOf('\n## ')).trim();
  assert.equal(intro.split(/\n\s*\n/).length, 1);
});

test('the install section has a compatibility table marking each version tested or not, then upgrade and uninstall', () => {
  const install = readme.slice(readme.indexOf('## Install'), readme.indexOf('## Tenant quickstart'));
  assert.deepEqual([...install.matchAll(/^### (.+)$/gm)].map((m) => m[1]), ['Compatibility', 'Helm', 'Cozystack', 'Upgrade', 'Uninstall']);
  const rows = install.split('\n').filter((l) => /^\| (Kubernetes|Konveyor Forklift|CDI|KubeVirt|Cozystack) \|/.test(l));
  for (const component of ['Kubernetes', 'Konveyor Forklift', 'CDI', 'Cozystack']) assert.ok(rows.some((r) => r.startsWith(`| ${component} |`)), component);
  for (const r of rows) assert.match(r, /\*\*tested\*\*|not tested/, r);
  assert.match(install, /forklift\.cozystack\.io\/finalizer/);
});
