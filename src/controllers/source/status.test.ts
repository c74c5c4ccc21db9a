import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { VMImportSource } from '../../api/types.ts';
import { deriveSourceStatus } from './status.ts';

const now = new Date('2026-02-01T10:00:00Z');
const source = (hosts: VMImportSource['spec']['hosts'] = [], status?: VMImportSource['status']): VMImportSource => ({
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportSource',
  metadata: { name: 's', namespace: 'ns', uid: 'u', generation: 4 },
  spec: { type: 'vsphere', url: 'https://vc/sdk', credentials: { username: 'u@vsphere.local', password: 'secret-pw', insecureSkipVerify: true }, hosts },
  status,
});
const readyProvider = { metadata: { name: 'vmimport-s', uid: 'p-uid' }, status: { phase: 'Ready', fingerprint: 'AA:BB', conditions: [{ type: 'Ready', status: 'True', category: 'Required' }] } };
const readyHost = { status: { conditions: [{ type: 'Ready', status: 'True', category: 'Required' }] } };
const badHost = { status: { conditions: [{ type: 'ConnectionTestFailed', status: 'True', category: 'Critical', message: 'dial tcp 10.1.1.1:443: connection refused' }] } };
const host = (id: string) => ({ id, address: '10.1.1.1', credentials: { username: 'root', password: 'esx-secret', insecureSkipVerify: true } });

test('a gate verdict (VDDK not configured) is Ready=False with that reason and no provider status', () => {
  const st = deriveSourceStatus({ source: source(), now, gate: { reason: 'VDDKNotConfigured', message: 'no VDDK' }, provider: readyProvider });
  assert.equal(st.observedGeneration, 4);
  assert.deepEqual(st.conditions, [{ type: 'Ready', status: 'False', reason: 'VDDKNotConfigured', message: 'no VDDK', lastTransitionTime: '2026-02-01T10:00:00Z', observedGeneration: 4 }]);
  assert.equal(st.provider, undefined);
});

test('a Ready provider with ready hosts is Connected and reports provider name, uid, phase, fingerprint and VM count', () => {
  const st = deriveSourceStatus({ source: source([host('host-1')]), now, provider: readyProvider, hosts: { 'host-1': readyHost }, vmCount: 12 });
  assert.equal(st.conditions![0]!.status, 'True');
  assert.equal(st.conditions![0]!.reason, 'Connected');
  assert.deepEqual(st.provider, { name: 'vmimport-s', uid: 'p-uid', phase: 'Ready', fingerprint: 'AA:BB' });
  assert.deepEqual(st.hosts, [{ id: 'host-1', address: '10.1.1.1', ready: true, message: 'Host connection tested.' }]);
  assert.equal(st.vmCount, 12);
});

test('a host override that is not Ready makes the source HostUnreachable naming the host and Forklift words', () => {
  const st = deriveSourceStatus({ source: source([host('host-1'), host('host-2')]), now, provider: readyProvider, hosts: { 'host-1': readyHost, 'host-2': badHost } });
  const c = st.conditions![0]!;
  assert.equal(c.reason, 'HostUnreachable');
  assert.match(c.message, /host-2 \(10\.1\.1\.1\)/);
  assert.match(c.message, /connection refused/);
  assert.equal(st.hosts![1]!.reason, 'HostUnreachable');
});

test('a host override whose ESXi account is refused makes the source AuthenticationFailed naming the host, not HostUnreachable', () => {
  const refusing = { status: { conditions: [{ type: 'ConnectionTestFailed', status: 'True', category: 'Critical', reason: 'Tested', message: 'Could not connect to the ESXi host: incorrect user name or password.' }] } };
  const st = deriveSourceStatus({ source: source([host('host-1'), host('host-2')]), now, provider: readyProvider, hosts: { 'host-1': readyHost, 'host-2': refusing } });
  const c = st.conditions![0]!;
  assert.equal(c.reason, 'AuthenticationFailed');
  assert.match(c.message, /host-2 \(10\.1\.1\.1\): .*incorrect user name or password/);
  assert.match(c.message, /spec\.hosts\[\]\.credentials/);
});

test('an untested host keeps the source Connecting', () => {
  const st = deriveSourceStatus({ source: source([host('host-1')]), now, provider: readyProvider, hosts: {} });
  assert.equal(st.conditions![0]!.reason, 'Connecting');
});

test('lastTransitionTime stays when only the reason changes', () => {
  const first = deriveSourceStatus({ source: source(), now, gate: { reason: 'ForkliftNotInstalled', message: 'x' } });
  const later = deriveSourceStatus({ source: source([], first), now: new Date('2026-02-01T11:00:00Z'), provider: { status: { conditions: [] } } });
  assert.equal(later.conditions![0]!.reason, 'Connecting');
  assert.equal(later.conditions![0]!.lastTransitionTime, '2026-02-01T10:00:00Z');
});

test('no password ever appears in the status', () => {
  const st = deriveSourceStatus({ source: source([host('host-1')]), now, provider: { status: { conditions: [{ type: 'ConnectionAuthFailed', status: 'True', category: 'Critical', message: 'bad' }] } } });
  const text = JSON.stringify(st);
  assert.doesNotMatch(text, /secret-pw|esx-secret/);
  assert.equal(st.conditions![0]!.reason, 'AuthenticationFailed');
});

test('a Ready source publishes the inventory read on this pass, keeps the last one when none was read, and a source not Ready publishes none', () => {
  const inv = { total: 1, listed: 1, truncated: false, vms: [{ id: 'vm-1', name: 'a', path: '/a' }] };
  const fresh = deriveSourceStatus({ source: source(), now, provider: readyProvider, inventory: inv });
  assert.deepEqual(fresh.inventory, inv);
  const kept = deriveSourceStatus({ source: source([], fresh), now, provider: readyProvider });
  assert.deepEqual(kept.inventory, inv);
  const gated = deriveSourceStatus({ source: source([], fresh), now, gate: { reason: 'VDDKNotConfigured', message: 'no VDDK' } });
  assert.equal(gated.inventory, undefined);
});
