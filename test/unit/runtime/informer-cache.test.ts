import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Informer } from '../../../src/runtime/informer.ts';
import type { KubeClient, KubeObject } from '../../../src/runtime/kube.ts';
import { GVRs } from '../../../src/runtime/gvr.ts';

const managed = [{ manager: 'kubectl', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:x': {} } } }];

function claim(name: string, rv: string, phase: string): KubeObject {
  return {
    metadata: { name, namespace: 'ns', resourceVersion: rv, labels: { app: 'x' }, annotations: { 'pv.kubernetes.io/bind-completed': 'yes' }, managedFields: structuredClone(managed) },
    spec: { volumeName: 'pv-1' },
    status: { phase },
  } as KubeObject;
}

/** A client whose list and watch serve fixed answers (the watch then stays open until the informer stops). */
function fakeClient(): KubeClient {
  return {
    listAll: async () => ({ metadata: { resourceVersion: '10' }, items: [claim('a', '5', 'Pending')] }),
    watch: async (_g: unknown, _n: unknown, _o: unknown, onEvent: (type: string, o: KubeObject) => void, signal?: AbortSignal) => {
      onEvent('MODIFIED', claim('a', '11', 'Bound'));
      onEvent('ADDED', claim('b', '12', 'Pending'));
      await new Promise<void>((r) => signal?.addEventListener('abort', () => r(), { once: true }));
    },
  } as unknown as KubeClient;
}

test('informer caches keep every object without its managedFields, from lists and watch events alike, and everything else whole', async () => {
  const inf = new Informer(fakeClient(), GVRs.PersistentVolumeClaim);
  const seen: KubeObject[] = [];
  inf.addHandlers({ add: (o) => seen.push(o), update: (_old, o) => seen.push(o) });
  inf.start();
  try {
    await inf.waitForSync();
    const deadline = Date.now() + 5_000;
    while (!inf.store.get('ns', 'b') && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    const a = inf.store.get('ns', 'a') as KubeObject & { status?: { phase?: string } };
    const b = inf.store.get('ns', 'b');
    assert.ok(a && b, 'both objects are cached');
    assert.equal(a.status?.phase, 'Bound', 'the watch event was applied');
    for (const o of [a, b, ...seen]) {
      assert.equal(o.metadata?.managedFields, undefined);
      assert.deepEqual(o.metadata?.labels, { app: 'x' });
      assert.deepEqual(o.metadata?.annotations, { 'pv.kubernetes.io/bind-completed': 'yes' });
      assert.deepEqual((o as { spec?: unknown }).spec, { volumeName: 'pv-1' });
    }
    assert.equal(seen.length, 3, 'handlers saw the list and both events');
  } finally {
    await inf.stop();
  }
});

test('an informer with a keep rule holds only what the rule wants: from the list, from watch events, and after a sweep once the rule changes its mind', async () => {
  const wanted = new Set(['a', 'b']);
  const inf = new Informer(fakeClient(), GVRs.PersistentVolumeClaim, { keep: (o) => wanted.has(o.metadata?.name ?? '') });
  const updates: string[] = [];
  inf.addHandlers({ update: (_old, o) => updates.push(o.metadata?.name ?? '') });
  wanted.delete('b');
  inf.start();
  try {
    await inf.waitForSync();
    const deadline = Date.now() + 5_000;
    // 'a' is listed and then modified; 'b' arrives by a watch event while the rule does not want it.
    while (!updates.includes('a') && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    assert.ok(inf.store.get('ns', 'a'), 'a wanted object is held');
    assert.equal(inf.store.get('ns', 'b'), undefined, 'an unwanted object is never held');
    assert.equal(inf.sweep(), 0, 'a sweep drops nothing while the rule wants all it holds');
    wanted.delete('a');
    assert.equal(inf.sweep(), 1, 'a sweep drops what the rule no longer wants');
    assert.equal(inf.store.get('ns', 'a'), undefined);
    assert.equal(inf.store.items.size, 0);
    assert.equal(inf.dropped, 1);
  } finally {
    await inf.stop();
  }
});
