// The short chaos run: the controller talks to the real API server only through a fault-injecting proxy
// (5% error answers — 500, 429 with Retry-After, 409 on writes —, resets mid-response, 2 s latency spikes,
// every watch cut after a few seconds) while it imports several VMs, one of them multi-disk. Every VM ends
// Succeeded, with exactly one of each output, every disk on the very volume its transfer filled.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { CONTENT_ANNOTATION, createStorageClass, startSim, vcenter, type Sim } from '../sim/index.ts';
import { parseConfig } from '../../src/config.ts';
import { runController, type RunningController } from '../../src/app.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { LABEL_TASK_UID } from '../../src/api/labels.ts';
import { freshNamespace, installOurCRDs, testEnv, waitFor, writeKubeconfig } from './env/index.ts';
import { adminClient, createSource, waitForReason } from './source-helpers.ts';
import { startFaultProxy, type FaultProxy } from './chaos/faultproxy.ts';

const URL_VC = 'https://vcenter-chaos.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.71' }],
  vms: [
    { id: 'vm-1', name: 'chaos1', disks: [{ capacityGiB: 2 }, { capacityGiB: 1 }, { capacityGiB: 1 }] },
    { id: 'vm-2', name: 'chaos2', disks: [{ capacityGiB: 1 }] },
    { id: 'vm-3', name: 'chaos3', disks: [{ capacityGiB: 1 }, { capacityGiB: 2 }] },
    { id: 'vm-4', name: 'chaos4', disks: [{ capacityGiB: 1 }] },
  ],
});
const DISKS = world.vms.reduce((a, v) => a + v.disks.length, 0);
const CLASS = 'chaos';

let sim: Sim;
let proxy: FaultProxy;
let ctl: RunningController;
let c: KubeClient;

before(async () => {
  const env = await testEnv();
  await installOurCRDs();
  await createStorageClass(env.admin.kubeconfigPath, { name: CLASS, reclaimPolicy: 'Delete' });
  // The simulator moves slowly enough that the run spans several watch cuts.
  sim = await startSim({ kubeconfigPath: env.admin.kubeconfigPath, worlds: [world], mbPerSecond: 1024 });
  proxy = await startFaultProxy(env.server, env.caPEM, { error: 0.05, reset: 0.02, latency: 0.02, latencyMs: 2_000, watchCutMs: 3_000 });
  const kubeconfig = join(env.dir, `chaos-${process.pid}.kubeconfig`);
  writeKubeconfig(kubeconfig, proxy.url, proxy.caPEM, env.admin.name, env.admin.token);
  const cfg = {
    ...parseConfig(['--kubeconfig', kubeconfig, '--leader-elect=false', '--health-port', '0', '--metrics-port', '0'], {}),
    vddkImage: 'registry.example.com/vddk:8.0.3',
    inventoryURL: sim.inventory.url,
  };
  // The controller's own namespace (its credentials key lives there) exists wherever it runs.
  c = await adminClient();
  await c.create(GVRs.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: cfg.podNamespace } } as KubeObject).catch((e: Error) => {
    if (!/already exists/.test(e.message)) throw e;
  });
  ctl = await runController(cfg, { logger: createLogger({ level: process.env.MC_LOG_LEVEL ?? 'silent' }) });
});

after(async () => {
  await ctl?.stop();
  await proxy?.close();
  await sim?.stop();
  c?.close();
});

test('under injected API faults and watch cuts, every VM of a multi-disk import ends Succeeded with exactly one of each output on its own volume', { timeout: 600_000 }, async () => {
  const ns = await freshNamespace('chaos');
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected', 120_000);
  // Volumes as first seen bound to a transfer claim: the handoff must end on these very objects.
  const filled = new Map<string, string>();
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      for (const pv of (await c.list(GVRs.PersistentVolume)).items) {
        const ref = (pv.spec as { claimRef?: { namespace?: string } }).claimRef;
        if (ref?.namespace === ns && !filled.has(pv.metadata!.name!)) filled.set(pv.metadata!.name!, pv.metadata!.uid!);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 't', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: CLASS, vms: world.vms.map((v) => ({ id: v.id })) } } as KubeObject);
  let t: VMImportTask;
  try {
    t = await waitFor('the task to end', async () => {
      const x = (await c.get(GVRs.VMImportTask, ns, 't')) as unknown as VMImportTask | undefined;
      return x?.status?.completedAt ? x : undefined;
    }, { timeoutMs: 480_000, intervalMs: 500 });
  } finally {
    watching = false;
    await watcher;
  }
  assert.deepEqual(t.status?.vms?.map((v) => v.phase), world.vms.map(() => 'Succeeded'), JSON.stringify(t.status?.vms?.map((v) => [v.id, v.phase, v.reason, v.message])));
  const sel = { labelSelector: `${LABEL_TASK_UID}=${t.metadata.uid}` };
  assert.equal((await c.list(GVRs.VMDisk, ns, sel)).items.length, DISKS, 'one VMDisk per disk');
  assert.equal((await c.list(GVRs.VMInstance, ns, sel)).items.length, world.vms.length, 'one VMInstance per VM');
  assert.equal((await c.list(GVRs.PersistentVolumeClaim, ns)).items.length, DISKS, 'one claim per disk, nothing else left');
  const pvs = (await c.list(GVRs.PersistentVolume, undefined, sel)).items;
  assert.equal(pvs.length, DISKS);
  for (const pv of pvs) {
    assert.equal((pv.status as { phase?: string }).phase, 'Bound', `volume ${pv.metadata?.name} Bound (no Released volume)`);
    assert.equal(filled.get(pv.metadata!.name!), pv.metadata?.uid, `volume ${pv.metadata?.name} is the one its transfer filled`);
    assert.ok(pv.metadata?.annotations?.[CONTENT_ANNOTATION], 'and carries the transferred content');
  }
  // The faults were really injected.
  for (const k of ['500', '429', 'watchCut']) assert.ok((proxy.counts[k] ?? 0) > 0, `faults of kind ${k} were injected (${JSON.stringify(proxy.counts)})`);
  console.log(`chaos-short: ${proxy.requests} requests through the proxy; injected ${JSON.stringify(proxy.counts)}`);
});
