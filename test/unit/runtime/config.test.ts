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
