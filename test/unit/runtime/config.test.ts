import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, parseConfig } from '../../../src/config.ts';

test('defaults with a kubeconfig: no leader election, Forklift in cozy-forklift, VDDK not configured', () => {
  const c = parseConfig(['--kubeconfig', '/k'], {});
  assert.equal(c.kubeconfig, '/k');
  assert.equal(c.leaderElect, false);
  assert.equal(c.forkliftNamespace, 'cozy-forklift');
  assert.equal(c.inventoryURL, 'https://forklift-inventory.cozy-forklift.svc:8443');
  assert.equal(c.inventoryCASecret, 'forklift-inventory-serving-cert');
  assert.equal(c.vddkImage, '');
  assert.equal(c.namespace, '');
  assert.equal(c.serviceCIDR, undefined);
});

test('in-cluster defaults to leader election with the lease in the pod namespace', () => {
  const c = parseConfig([], { KUBERNETES_SERVICE_HOST: '10.0.0.1', POD_NAMESPACE: 'cozy-migration', VDDK_IMAGE: 'r/vddk:8' });
  assert.equal(c.kubeconfig, undefined);
  assert.equal(c.leaderElect, true);
  assert.equal(c.leaseNamespace, 'cozy-migration');
  assert.equal(c.vddkImage, 'r/vddk:8');
});

test('flags win over environment; the inventory URL follows the Forklift namespace', () => {
  const c = parseConfig(['--kubeconfig=/k', '--vddk-image', 'x/y:1', '--forklift-namespace', 'fk', '--leader-elect', '--workers', '7', '--namespace', 'tenant-a', '--health-port', '0', '--service-cidr', '10.0.0.0/16'], { VDDK_IMAGE: 'env/img', WATCH_NAMESPACE: 'b' });
  assert.equal(c.vddkImage, 'x/y:1');
  assert.equal(c.inventoryURL, 'https://forklift-inventory.fk.svc:8443');
  assert.equal(c.leaderElect, true);
  assert.equal(c.workers, 7);
  assert.equal(c.namespace, 'tenant-a');
  assert.equal(c.healthPort, 0);
  assert.equal(c.serviceCIDR, '10.0.0.0/16');
});

test('an empty VDDK image is a supported state, not an error', () => {
  assert.equal(parseConfig(['--kubeconfig', '/k', '--vddk-image', ''], {}).vddkImage, '');
});

test('unknown flags, bad numbers and no cluster at all are refused with usage', () => {
  assert.throws(() => parseConfig(['--kubeconfig', '/k', '--nope', '1'], {}), ConfigError);
  assert.throws(() => parseConfig(['--kubeconfig', '/k', '--workers', '0'], {}), ConfigError);
  assert.throws(() => parseConfig(['--kubeconfig', '/k', '--health-port', 'x'], {}), ConfigError);
  assert.throws(() => parseConfig([], {}), /not running in a cluster/);
});

test('guest conversion is off unless the platform turns it on, by flag or GUEST_CONVERSION_ENABLED; a non-boolean is refused', () => {
  assert.equal(parseConfig(['--kubeconfig', '/k'], {}).guestConversion, false);
  assert.equal(parseConfig(['--kubeconfig', '/k', '--guest-conversion'], {}).guestConversion, true);
  assert.equal(parseConfig(['--kubeconfig', '/k', '--guest-conversion=false'], { GUEST_CONVERSION_ENABLED: 'true' }).guestConversion, false);
  assert.equal(parseConfig(['--kubeconfig', '/k'], { GUEST_CONVERSION_ENABLED: 'true' }).guestConversion, true);
  assert.throws(() => parseConfig(['--kubeconfig', '/k', '--guest-conversion=maybe'], {}), ConfigError);
});

test('the client-side rate limit defaults to 50/s with bursts of 100 and is set by flag or environment; a zero or negative rate is refused', async () => {
  const { DEFAULT_KUBE_API_QPS, DEFAULT_KUBE_API_BURST } = await import('../../../src/config.ts');
  const d = parseConfig(['--kubeconfig', '/k'], {});
  assert.equal(d.kubeAPIQPS, DEFAULT_KUBE_API_QPS);
  assert.equal(d.kubeAPIBurst, DEFAULT_KUBE_API_BURST);
  assert.equal(DEFAULT_KUBE_API_QPS, 50);
  const c = parseConfig(['--kubeconfig', '/k', '--kube-api-qps', '7.5', '--kube-api-burst=15'], { KUBE_API_QPS: '1' });
  assert.equal(c.kubeAPIQPS, 7.5);
  assert.equal(c.kubeAPIBurst, 15);
  assert.equal(parseConfig(['--kubeconfig', '/k'], { KUBE_API_QPS: '20' }).kubeAPIQPS, 20);
  assert.throws(() => parseConfig(['--kubeconfig', '/k', '--kube-api-qps', '0'], {}), ConfigError);
  assert.throws(() => parseConfig(['--kubeconfig', '/k', '--kube-api-qps', '-3'], {}), ConfigError);
  assert.throws(() => parseConfig(['--kubeconfig', '/k', '--kube-api-burst', '0'], {}), ConfigError);
});

test('the stall timeout is a flag, --task-stall-after-seconds (10 minutes by default), and a bound of 0 is refused', () => {
  assert.equal(parseConfig(['--kubeconfig', '/k'], {}).taskStallAfterSeconds, 600);
  assert.equal(parseConfig(['--kubeconfig', '/k', '--task-stall-after-seconds', '5'], {}).taskStallAfterSeconds, 5);
  assert.equal(parseConfig(['--kubeconfig', '/k'], { MC_TASK_STALL_AFTER_SECONDS: '7' }).taskStallAfterSeconds, 7);
  assert.throws(() => parseConfig(['--kubeconfig', '/k', '--task-stall-after-seconds', '0'], {}), ConfigError);
});

test('the benchmark mode is gone: --poll-only and --poll-interval-ms are unknown flags', () => {
  assert.throws(() => parseConfig(['--kubeconfig', '/k', '--poll-only'], {}), /poll-only/);
  assert.throws(() => parseConfig(['--kubeconfig', '/k', '--poll-interval-ms', '20000'], {}), /poll-interval-ms/);
});

test('booleans take --x, --no-x and --x=true|false; a positional argument or a flag without its value is refused', () => {
  assert.equal(parseConfig(['--kubeconfig', '/k', '--leader-elect'], {}).leaderElect, true);
  assert.equal(parseConfig(['--kubeconfig', '/k', '--no-leader-elect'], { LEADER_ELECT: 'true' }).leaderElect, false);
  assert.equal(parseConfig(['--kubeconfig', '/k', '--leader-elect=false'], {}).leaderElect, false);
  assert.throws(() => parseConfig(['--kubeconfig', '/k', '--leader-elect=perhaps'], {}), ConfigError);
  assert.throws(() => parseConfig(['--kubeconfig', '/k', 'extra'], {}), ConfigError);
  assert.throws(() => parseConfig(['--kubeconfig'], {}), ConfigError);
  assert.throws(() => parseConfig(['--help'], {}), /usage/);
});

test('every knob the webhook and the platform set by environment is also a flag, and the flag wins', () => {
  const c = parseConfig(['--kubeconfig', '/k', '--webhook-secret-name', 's', '--pod-namespace', 'p', '--egress-denied-networks', '10.0.0.0/8'], { WEBHOOK_SECRET_NAME: 'env', POD_NAMESPACE: 'envns' });
  assert.equal(c.webhookSecretName, 's');
  assert.equal(c.podNamespace, 'p');
  assert.deepEqual(c.egress.deniedNetworks, ['10.0.0.0/8']);
});

test('every flag and its environment variable are documented in the operations guide', async () => {
  const { readFileSync } = await import('node:fs');
  const { KNOBS } = await import('../../../src/config.ts');
  const doc = readFileSync(new URL('../../../docs/operations.md', import.meta.url), 'utf8');
  for (const k of KNOBS) {
    assert.ok(doc.includes(`\`--${k.flag}\``), `--${k.flag} is documented`);
    if (k.env) assert.ok(doc.includes(`\`${k.env}\``), `${k.env} is documented`);
  }
});
