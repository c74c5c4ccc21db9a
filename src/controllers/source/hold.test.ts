import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../runtime/kube.ts';
import { holdProviderSpec, pendingMessage, specFieldsChanged } from './hold.ts';

const provider = (spec: Record<string, unknown>, annotations?: Record<string, string>): KubeObject & { spec: Record<string, unknown> } =>
  ({ apiVersion: 'forklift.konveyor.io/v1beta1', kind: 'Provider', metadata: { name: 'p', namespace: 'ns', ...(annotations ? { annotations } : {}) }, spec }) as KubeObject & { spec: Record<string, unknown> };
const SPEC = { type: 'vsphere', url: 'https://vc/sdk', secret: { name: 's', namespace: 'c' }, settings: { vddkInitImage: 'vddk:1', sdkEndpoint: 'vcenter' } };

test('a new VDDK image or URL while tasks import over the source is held: the stored spec is written back, the change reported pending', () => {
  const desired = provider({ ...SPEC, url: 'https://vc2/sdk', settings: { ...SPEC.settings, vddkInitImage: 'vddk:2' } }, { a: 'b' });
  const r = holdProviderSpec(desired, provider(SPEC), () => ['t1', 't2']);
  assert.deepEqual((r.write as { spec?: unknown }).spec, SPEC, 'the generation does not move');
  assert.deepEqual(r.write.metadata?.annotations, { a: 'b' }, 'metadata is still written');
  assert.deepEqual(r.pending, { fields: ['settings.vddkInitImage', 'url'], tasks: ['t1', 't2'] });
  assert.match(pendingMessage(r.pending!), /spec\.settings\.vddkInitImage, spec\.url\) waits until no task imports over this source \(t1, t2\)/);
});

test('with no task running, or nothing changed, the desired Provider is written as it is', () => {
  const desired = provider({ ...SPEC, url: 'https://vc2/sdk' });
  assert.equal(holdProviderSpec(desired, provider(SPEC), () => []).write, desired);
  assert.equal(holdProviderSpec(desired, undefined, () => ['t1']).write, desired, 'a Provider not yet created');
  let asked = false;
  const same = holdProviderSpec(provider(SPEC), provider(SPEC), () => {
    asked = true;
    return ['t1'];
  });
  assert.equal(same.pending, undefined);
  assert.equal(asked, false, 'the tasks are only listed when the spec differs');
});

test('the changed fields are named down to the leaf; a field added or removed counts', () => {
  assert.deepEqual(specFieldsChanged({ a: 1, b: { c: 2 } }, { a: 1, b: { c: 3 } }), ['b.c']);
  assert.deepEqual(specFieldsChanged({ a: 1 }, { a: 1, x: 2 }), ['x']);
  assert.deepEqual(specFieldsChanged({ l: [1, 2] }, { l: [1] }), ['l']);
});

test('a long list of holding tasks is cut in the message', () => {
  const m = pendingMessage({ fields: ['url'], tasks: Array.from({ length: 25 }, (_, i) => `t${i}`) });
  assert.match(m, /t9 and 15 more/);
});
