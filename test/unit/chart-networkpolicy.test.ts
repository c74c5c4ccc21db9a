// Who may call the admission webhook, as the chart renders it (real helm): only the API server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { scratch } from './scratch.ts';

const tmp = scratch('mc-np-');

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CHART = join(ROOT, 'charts/migration-controller');

interface Obj {
  kind: string;
  spec: Record<string, unknown>;
}

function render(values: object, extra: string[] = []): { code: number; objs: Obj[]; stderr: string } {
  const f = tmp('values.yaml');
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

test("without the API server's addresses and without Cilium the webhook port stays open, and NOTES says so; on Cilium it admits the kube-apiserver entity alone", () => {
  const r = render({});
  assert.equal(r.code, 0, r.stderr);
  const np = r.objs.find((o) => o.kind === 'NetworkPolicy')!;
  const webhook = (np.spec.ingress as Rule[]).filter((x) => x.ports?.some((p) => p.port === 'webhook'));
  assert.deepEqual(webhook, [{ ports: [{ port: 'webhook', protocol: 'TCP' }] }]);
  const notes = spawnSync('bash', [join(ROOT, 'scripts/helm.sh'), 'install', 'mc', CHART, '--dry-run', '--namespace', 'cozy-migration-controller'], { encoding: 'utf8' });
  assert.match(notes.stdout, /Webhook callers: NOT RESTRICTED/);
  const cilium = render({}, ['--api-versions', 'cilium.io/v2/CiliumNetworkPolicy']);
  assert.equal(cilium.code, 0, cilium.stderr);
  const cnp = cilium.objs.find((o) => o.kind === 'CiliumNetworkPolicy')!;
  assert.deepEqual(cnp.spec.ingress, [{ fromEntities: ['kube-apiserver'], toPorts: [{ ports: [{ port: '9443', protocol: 'TCP' }] }] }]);
  const cnpNp = cilium.objs.find((o) => o.kind === 'NetworkPolicy')!;
  assert.ok(!(cnpNp.spec.ingress as Rule[]).some((x) => x.ports?.some((p) => p.port === 'webhook')), 'the NetworkPolicy opens the webhook port to nobody');
});

test('by default an unauthenticated scrape from outside the monitoring namespace is not admitted: the metrics port admits Cozystack\'s monitoring namespace alone', () => {
  const np = render({}).objs.find((o) => o.kind === 'NetworkPolicy')!;
  const metrics = (np.spec.ingress as Array<Rule & { from?: unknown[] }>).filter((x) => x.ports?.some((p) => p.port === 'metrics'));
  assert.deepEqual(metrics, [{ ports: [{ port: 'metrics', protocol: 'TCP' }], from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'cozy-monitoring' } } }] }]);
});

test("with webhook.clientAuth the controller is given the API server's client CA and the accepted names", () => {
  const r = render({ webhook: { clientAuth: { caConfigMap: 'apiserver-webhook-client-ca', names: ['kube-apiserver-webhook-client'] } } });
  assert.equal(r.code, 0, r.stderr);
  const d = r.objs.find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { spec: { containers: Array<{ env: Array<{ name: string; value?: string }>; volumeMounts: Array<{ name: string; mountPath: string }> }>; volumes: Array<{ name: string; configMap?: { name: string } }> } } } };
  const pod = d.spec.template.spec;
  const env = Object.fromEntries(pod.containers[0]!.env.map((e) => [e.name, e.value]));
  assert.equal(env.WEBHOOK_CLIENT_CA_FILE, '/etc/migration-controller/webhook-client-ca/ca.crt');
  assert.equal(env.WEBHOOK_CLIENT_NAMES, 'kube-apiserver-webhook-client');
  assert.deepEqual(pod.volumes.find((v) => v.name === 'webhook-client-ca')?.configMap, { name: 'apiserver-webhook-client-ca' });
  assert.ok(pod.containers[0]!.volumeMounts.some((m) => m.name === 'webhook-client-ca' && m.mountPath === '/etc/migration-controller/webhook-client-ca'));
});
