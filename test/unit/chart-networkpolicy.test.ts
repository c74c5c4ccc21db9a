// Who may call the admission webhook, as the chart renders it (real helm): only the API server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CHART = join(ROOT, 'charts/migration-controller');

interface Obj {
  kind: string;
  spec: Record<string, unknown>;
}

function render(values: object, extra: string[] = []): { code: number; objs: Obj[]; stderr: string } {
  const f = join(mkdtempSync(join(tmpdir(), 'mc-np-')), 'values.yaml');
  writeFileSync(f, YAML.stringify(values));
  const r = spawnSync('bash', [join(ROOT, 'scripts/helm.sh'), 'template', 'mc', CHART, '--namespace', 'cozy-migration-controller', '-f', f, ...extra], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const objs = r.status === 0 ? YAML.parseAllDocuments(r.stdout).map((d) => d.toJSON() as Obj | null).filter((o): o is Obj => !!o && typeof o.kind === 'string') : [];
  return { code: r.status ?? 1, objs, stderr: r.stderr };
}

type Rule = { ports?: Array<{ port: string | number }>; from?: Array<{ ipBlock?: { cidr: string } }> };

test("the webhook port admits only the API server's addresses, and nothing wider is rendered", () => {
  const { objs } = render({ networkPolicy: { enabled: true, apiServerCIDRs: ['172.18.0.2/32', 'fd00::2/128'] } });
  const np = objs.find((o) => o.kind === 'NetworkPolicy')!;
  const ingress = np.spec.ingress as Rule[];
  const webhook = ingress.filter((r) => r.ports?.some((p) => p.port === 'webhook'));
  assert.equal(webhook.length, 1);
  assert.deepEqual(webhook[0]!.from, [{ ipBlock: { cidr: '172.18.0.2/32' } }, { ipBlock: { cidr: 'fd00::2/128' } }]);
  // No other rule opens the webhook port (a rule without ports would open every port).
  for (const r of ingress) assert.ok(r.ports && r.ports.length > 0, 'every ingress rule names its ports');
  assert.equal(objs.filter((o) => o.kind === 'CiliumNetworkPolicy').length, 0, 'no CiliumNetworkPolicy without Cilium');
});

test("enabling the policy without the API server's addresses is refused with the reason, unless Cilium admits it by entity", () => {
  const r = render({ networkPolicy: { enabled: true } });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /networkPolicy\.apiServerCIDRs must list the API server's addresses/);
  const cilium = render({ networkPolicy: { enabled: true } }, ['--api-versions', 'cilium.io/v2/CiliumNetworkPolicy']);
  assert.equal(cilium.code, 0, cilium.stderr);
  const cnp = cilium.objs.find((o) => o.kind === 'CiliumNetworkPolicy')!;
  assert.deepEqual(cnp.spec.ingress, [{ fromEntities: ['kube-apiserver'], toPorts: [{ ports: [{ port: '9443', protocol: 'TCP' }] }] }]);
  const np = cilium.objs.find((o) => o.kind === 'NetworkPolicy')!;
  assert.ok(!(np.spec.ingress as Rule[]).some((r) => r.ports?.some((p) => p.port === 'webhook')), 'the NetworkPolicy opens the webhook port to nobody');
});
