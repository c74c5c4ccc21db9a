// Bounded memory (short soak): rounds of imports created and deleted leave the controller's in-memory maps
// and informer caches where they were, and its heap about where it was. The long figure (thousands of
// tasks) belongs in bench/, not here.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createStorageClass, startSim, vcenter, type Sim } from '../sim/index.ts';
import { parseConfig } from '../../src/config.ts';
import { runController, type RunningController } from '../../src/app.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { handoffMemory } from '../../src/controllers/handoff/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { freshNamespace, installOurCRDs, testEnv, waitFor } from './env/index.ts';
import { adminClient, createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-soak.example.com/sdk';
const TASKS = 10;
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.61' }],
  vms: Array.from({ length: TASKS }, (_, i) => ({ id: `vm-${i + 1}`, name: `soak${i + 1}`, disks: [{ capacityGiB: 1 }] })),
});
const CLASS = 'soak';

let sim: Sim;
let ctl: RunningController;
let c: KubeClient;

before(async () => {
  const env = await testEnv();
  await installOurCRDs();
  await createStorageClass(env.admin.kubeconfigPath, { name: CLASS, reclaimPolicy: 'Delete' });
  sim = await startSim({ kubeconfigPath: env.admin.kubeconfigPath, worlds: [world] });
  const cfg = {
    ...parseConfig(['--kubeconfig', env.admin.kubeconfigPath, '--leader-elect=false', '--health-port', '0', '--metrics-port', '0'], {}),
    vddkImage: 'registry.example.com/vddk:8.0.3',
    inventoryURL: sim.inventory.url,
  };
  // The controller's own namespace (its credentials key lives there) exists wherever it runs.
  c = await adminClient();
  await c.create(GVRs.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: cfg.podNamespace } } as KubeObject).catch((e: Error) => {
    if (!/already exists/.test(e.message)) throw e;
  });
  ctl = await runController(cfg, { logger: createLogger({ level: process.env.MC_LOG_LEVEL ?? 'warn' }) });
});

after(async () => {
  await ctl?.stop();
  await sim?.stop();
  c?.close();
});

/** One round: a namespace, a source, TASKS one-VM imports to the end, then the namespace deleted. */
async function round(): Promise<void> {
  const ns = await freshNamespace('soak');
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  for (let i = 1; i <= TASKS; i++) {
    await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: `t${i}`, namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: CLASS, vms: [{ id: `vm-${i}` }] } } as KubeObject);
  }
  await waitFor('every import Succeeded', async () => {
    const ts = (await c.list(GVRs.VMImportTask, ns)).items as unknown as VMImportTask[];
    return ts.length === TASKS && ts.every((t) => t.status?.phase === 'Succeeded');
  }, { timeoutMs: 180_000, intervalMs: 250 });
  await c.delete(GVRs.Namespace, undefined, ns);
  await waitFor('the namespace gone', async () => !(await c.get(GVRs.Namespace, undefined, ns)), { timeoutMs: 180_000, intervalMs: 250 });
  // Cluster-scoped leftovers of the round: the handed-off volumes, deleted with their claims (Delete).
  await waitFor('its volumes gone', async () => (await c.list(GVRs.PersistentVolume)).items.every((pv) => (pv.spec as { claimRef?: { namespace?: string } })?.claimRef?.namespace !== ns), { timeoutMs: 120_000, intervalMs: 250 });
}

function heapAfterGC(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Everything whose size must not grow with the number of tasks ever seen. */
function sizes(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [r, m] of Object.entries(ctl.manager.memory())) {
    // Expectations lapse after their TTL (a minute) and are swept then: bounded by one TTL of writes,
    // checked by their unit test rather than waited for here.
    for (const [k, v] of Object.entries(m)) if (!/Expectations$/.test(k)) out[`${r}.${k}`] = v;
  }
  out['handoff.knownVMDisks'] = handoffMemory().knownVMDisks ?? 0;
  for (const [k, v] of Object.entries(ctl.manager.cacheSizes())) out[`cache.${k}`] = v;
  return out;
}

test('rounds of imports created and deleted leave the in-memory maps and informer caches at their baseline, and the heap near it', { timeout: 900_000 }, async () => {
  // A warm-up round first: what is allocated once (caches of cluster-wide kinds, code paths) is baseline.
  await round();
  const baseline = sizes();
  const heap0 = heapAfterGC();
  await round();
  await round();
  // Watch events of the deletions may still be on their way: the caches settle within moments.
  const after = await waitFor('maps and caches back at their baseline', () => {
    const now = sizes();
    return Object.keys({ ...baseline, ...now }).every((k) => (now[k] ?? 0) <= (baseline[k] ?? 0)) ? now : undefined;
  }, { timeoutMs: 30_000, intervalMs: 250 }).catch(() => sizes());
  assert.deepEqual(
    Object.fromEntries(Object.entries(after).filter(([k, v]) => v > (baseline[k] ?? 0))),
    {},
    `nothing grew (baseline ${JSON.stringify(baseline)})`,
  );
  assert.ok(Object.keys(baseline).some((k) => k.startsWith('cache.PersistentVolumeClaim{')), `claims are cached by selector, not unfiltered: ${Object.keys(baseline).join(', ')}`);
  assert.ok(!('cache.PersistentVolumeClaim' in baseline), 'no unfiltered claim cache');
  const heap1 = heapAfterGC();
  // The test process also holds the simulator; 2 × TASKS imports leaking even a few kilobytes each would
  // not show against its noise, but a leak of the caches' or maps' size class (an object per object) would.
  assert.ok(heap1 <= heap0 * 1.3 + 16 * 2 ** 20, `heap after GC: ${Math.round(heap0 / 2 ** 20)} MiB → ${Math.round(heap1 / 2 ** 20)} MiB`);
});
