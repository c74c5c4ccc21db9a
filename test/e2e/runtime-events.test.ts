// Events on the real API server: repeats aggregate into one Event with a growing count.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeObject } from '../../src/runtime/kube.ts';
import { KubeEventRecorder } from '../../src/telemetry/events.ts';
import { freshNamespace, testEnv } from './env/index.ts';
import { adminClient } from './source-helpers.ts';

test('a repeated Event is aggregated into one with a count; a different message is a new Event', async () => {
  await testEnv();
  const ns = await freshNamespace('events');
  const c = await adminClient();
  try {
    const cm = await c.create(GVRs.ConfigMap, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'subject', namespace: ns } } as KubeObject);
    const rec = new KubeEventRecorder(c, 'e2e');
    for (let i = 0; i < 3; i++) rec.event({ ...cm, apiVersion: 'v1', kind: 'ConfigMap' }, 'Warning', 'ConnectionFailed', 'vCenter did not answer');
    rec.event({ ...cm, apiVersion: 'v1', kind: 'ConfigMap' }, 'Normal', 'Connected', 'connected');
    await rec.flush();
    const events = (await c.list(GVRs.Event, ns)).items as Array<KubeObject & { reason: string; count: number; type: string; involvedObject: { uid: string; name: string } }>;
    assert.equal(events.length, 2);
    const failed = events.find((e) => e.reason === 'ConnectionFailed')!;
    assert.equal(failed.count, 3);
    assert.equal(failed.type, 'Warning');
    assert.equal(failed.involvedObject.uid, cm.metadata?.uid);
    assert.equal(events.find((e) => e.reason === 'Connected')!.count, 1);
  } finally {
    c.close();
  }
});
