// A create answered 409 Conflict (not AlreadyExists) created nothing. The handoff must not record the step
// as taken: a VMDisk create answered Conflict and checkpointed as create-vmdisk made the next pass read the
// missing VMDisk as deleted by someone, and the VM failed OutputDeleted with its data left on Retain. The
// aggregated API behind VMDisk (and any API server under load) can answer a create so; here the fault proxy
// between the controller and the real API server answers each of the handoff's creates that way once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createStorageClass, startSim, type Sim } from '../sim/index.ts';
import { parseConfig } from '../../src/config.ts';
import { runController, type RunningController } from '../../src/app.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import type { KubeClient } from '../../src/runtime/kube.ts';
import { freshNamespace, installOurCRDs, testEnv, writeKubeconfig } from './env/index.ts';
import { adminClient } from './source-helpers.ts';
import { NO_FAULTS, startFaultProxy, type FaultProxy } from './chaos/faultproxy.ts';
import { VolumeLedger, createConnectedSource, createTask, ensureNamespace, importWorld, verifyImport, waitTasksEnded, type TaskRef } from './chaos/fixtures.ts';

const world = importWorld('https://vcenter-conflict.example.com/sdk', '192.0.2.73', [
  { id: 'vm-1', name: 'conflict01', disksGiB: [1, 1] },
]);
const CLASS = 'conflict';

let sim: Sim;
let proxy: FaultProxy;
let ctl: RunningController;
let c: KubeClient;

before(async () => {
  const env = await testEnv();
  await installOurCRDs();
  await createStorageClass(env.admin.kubeconfigPath, { name: CLASS, reclaimPolicy: 'Delete' });
  sim = await startSim({ kubeconfigPath: env.admin.kubeconfigPath, worlds: [world], mbPerSecond: 8192 });
  // Only forwarding, except for the targeted answers each test sets.
  proxy = await startFaultProxy(env.server, env.caPEM, NO_FAULTS);
  const kubeconfig = join(env.dir, `conflict-${process.pid}.kubeconfig`);
  writeKubeconfig(kubeconfig, proxy.url, proxy.caPEM, env.admin.name, env.admin.token);
  const cfg = {
    ...parseConfig(['--kubeconfig', kubeconfig, '--leader-elect=false', '--health-port', '0', '--metrics-port', '0'], {}),
    vddkImage: 'registry.example.com/vddk:8.0.3',
    inventoryURL: sim.inventory.url,
  };
  c = await adminClient();
  await ensureNamespace(c, cfg.podNamespace);
  ctl = await runController(cfg, { logger: createLogger({ level: process.env.MC_LOG_LEVEL ?? 'silent' }) });
});

after(async () => {
  await ctl?.stop();
  await proxy?.close();
  await sim?.stop();
  c?.close();
});

test('a handoff create answered 409 Conflict is not taken for done: the VM ends Succeeded with each VMDisk, claim and DataVolume created once', { timeout: 240_000 }, async () => {
  const ns = await freshNamespace('conflict');
  await createConnectedSource(c, ns, 'vc', world);
  // The first create of each output kind in this namespace is answered Conflict (claims: the handoff's own
  // target claims; the simulated Forklift writes through its own connection, not through the proxy).
  for (const plural of ['persistentvolumeclaims', 'datavolumes', 'vmdisks']) {
    proxy.failNext({ method: 'POST', path: new RegExp(`/namespaces/${ns}/${plural}$`), code: 409 });
  }
  const ledger = new VolumeLedger(c);
  ledger.start(100);
  const task: TaskRef = { namespace: ns, name: 't', vmIds: ['vm-1'] };
  await createTask(c, task, 'vc', CLASS);
  try {
    await waitTasksEnded(c, [task], 180_000);
  } finally {
    await ledger.stop();
  }
  const report = await verifyImport(c, world, [task], ledger);
  assert.deepEqual(report.problems, [], 'the import is whole');
  assert.equal(report.vmsSucceeded, 1, 'the VM Succeeded');
  assert.equal(proxy.counts['targeted:409'], 3, `each kind's first create was answered Conflict (${JSON.stringify(proxy.counts)})`);
});
