// The manager on the real API server with a reconciler of ConfigMaps: retries with backoff until success,
// never retries a TerminalError, honours requeueAfterMs, and never runs one key on two workers at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/config.ts';
import { runController } from '../../src/app.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeObject } from '../../src/runtime/kube.ts';
import { TerminalError, type ObjectKey, type Reconciler } from '../../src/runtime/reconciler.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { freshNamespace, testEnv, waitFor } from './env/index.ts';
import { adminClient } from './source-helpers.ts';

test('errors are retried with backoff until success, a TerminalError is not retried, requeueAfterMs comes back, and one key never runs twice at once', async () => {
  const env = await testEnv();
  const ns = await freshNamespace('mgr');
  const calls = new Map<string, number>();
  const running = new Set<string>();
  let overlaps = 0;
  const rec: Reconciler = {
    name: 'cm-test',
    primary: GVRs.ConfigMap,
    watches: [],
    async reconcile(key: ObjectKey, ctx) {
      const k = key.name;
      if (running.has(k)) overlaps++;
      running.add(k);
      try {
        const n = (calls.get(k) ?? 0) + 1;
        calls.set(k, n);
        const cm = ctx.cache(GVRs.ConfigMap)?.get(key.namespace, key.name);
        await new Promise((r) => setTimeout(r, 20));
        if (k === 'flaky' && n < 3) throw new Error('transient');
        if (k === 'terminal') throw new TerminalError('BadSpec', 'the user must fix it');
        if (k === 'requeue' && n < 3) return { requeueAfterMs: 50 };
        if (cm && k !== 'busy' && !cm.metadata?.annotations?.done) await ctx.client.patch(GVRs.ConfigMap, key.namespace, key.name, { metadata: { annotations: { done: String(n) } } });
        return {};
      } finally {
        running.delete(k);
      }
    },
  };
  const cfg = { ...parseConfig(['--kubeconfig', env.admin.kubeconfigPath, '--health-port', '0', '--metrics-port', '0', '--namespace', ns, '--workers', '4'], {}) };
  const ctl = await runController(cfg, { reconcilers: [rec], logger: createLogger({ level: 'silent' }) });
  const c = await adminClient();
  try {
    for (const name of ['flaky', 'terminal', 'requeue', 'busy']) await c.create(GVRs.ConfigMap, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns } } as KubeObject);
    // Many changes to one key while workers are busy.
    for (let i = 0; i < 20; i++) await c.patch(GVRs.ConfigMap, ns, 'busy', { data: { i: String(i) } });
    await waitFor('flaky succeeded on the third attempt', async () => (await c.get(GVRs.ConfigMap, ns, 'flaky'))?.metadata?.annotations?.done === '3');
    await waitFor('requeue came back until done', async () => (await c.get(GVRs.ConfigMap, ns, 'requeue'))?.metadata?.annotations?.done === '3');
    await waitFor('busy settled', async () => (calls.get('busy') ?? 0) >= 1 && !running.has('busy'));
    assert.equal(calls.get('terminal'), 1, 'a TerminalError is not retried');
    assert.equal(overlaps, 0, 'no key ran on two workers at once');
    assert.ok((calls.get('busy') ?? 0) <= 21);
    const text = await (await fetch(ctl.metricsURL)).text();
    assert.match(text, /migration_controller_reconcile_total\{controller="cm-test",result="terminal"\} 1/);
    assert.match(text, /migration_controller_reconcile_errors_total\{controller="cm-test",reason="BadSpec"\} 1/);
    assert.match(text, /migration_controller_reconcile_total\{controller="cm-test",result="error"\} 2/);
    assert.match(text, /migration_controller_workqueue_retries_total\{name="cm-test"\} 2/);
    const readyz = await fetch(ctl.healthURL + '/readyz');
    assert.equal(readyz.status, 200);
    assert.match(await readyz.text(), /disabled/);
  } finally {
    c.close();
    await ctl.stop();
  }
});
