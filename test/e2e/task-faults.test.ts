// Injected engine faults end in their reason with a message a tenant can act on (real API server + simulator).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask, VMImportTaskSpec } from '../../src/api/types.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-faults.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [
    { id: 'host-1', address: '192.0.2.10' },
    { id: 'host-2', address: '192.0.2.20', reachable: false },
  ],
  vms: [
    { id: 'vm-1', name: 'broken01', disks: [{ capacityGiB: 64 }], faults: { failTransferAtPercent: 40 } },
    { id: 'vm-2', name: 'convert01', disks: [{ capacityGiB: 16 }], faults: { conversionFreeze: true } },
    { id: 'vm-3', name: 'novddk01', disks: [{ capacityGiB: 4 }], faults: { awaitingVddk: true } },
    { id: 'vm-4', name: 'far01', host: 'host-2', disks: [{ capacityGiB: 4 }] },
    { id: 'vm-5', name: 'trap01', disks: [{ capacityGiB: 4 }] },
    { id: 'vm-6', name: 'hang01', disks: [{ capacityGiB: 16 }], faults: { stallTransferAtPercent: 30 } },
  ],
});

let booted: BootedWorld;
let c: KubeClient;
before(async () => {
  booted = await bootWorld({
    worlds: [world],
    // A stall after 2 s of no progress (the default is 10 min).
    controller: { extra: { taskStallAfterSeconds: 2 } },
    storageClasses: [{ name: 'fault-fast' }],
    // 8 GiB/s: the 64 GiB disk reaches 40% in ~3 s, in many progress ticks; conversion freezes for 4 s
    // (twice the stall time: read as a stall it would fail the test); an unreachable host fails after
    // 8 s — long enough to watch the controller call it stalled first; a Plan validates its VDDK image for
    // 3 s — long enough for a test to give it a history before its Migration starts.
    sim: { mbPerSecond: 8192, timings: { conversionMs: 4000, unreachableFailMs: 8000, validatingVddkMs: 3000 } },
  });
  c = booted.c;
});

after(async () => {
  await booted?.shutdown();
});

async function setup(prefix: string, vms: VMImportTaskSpec['vms']): Promise<string> {
  const ns = await freshNamespace(prefix);
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
  await waitForReason(c, ns, 'vc', 'Connected');
  await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 't', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'fault-fast', vms } } as KubeObject);
  return ns;
}

async function getTask(ns: string): Promise<VMImportTask | undefined> {
  return (await c.get(GVRs.VMImportTask, ns, 't')) as unknown as VMImportTask | undefined;
}

async function waitForEnd(ns: string): Promise<VMImportTask> {
  return await waitFor('the task to end', async () => {
    const t = await getTask(ns);
    return t?.status?.completedAt ? t : undefined;
  }, { timeoutMs: 90_000 });
}

// Each fault below has its own namespace, source, task and VM, and waits on its own engine timings (the
// simulated transfer, the stall period, the unreachable host's failure): they run side by side, against
// the one controller, as a cluster's imports do. The restart test comes after them, alone: it restarts
// that controller.
describe('injected engine faults, side by side', { concurrency: true }, () => {
  test('a transfer that fails midway ends TransferFailed keeping the engine\'s words and telling the user to create a new task', async () => {
    const ns = await setup('flt-xfer', [{ id: 'vm-1' }]);
    const t = await waitForEnd(ns);
    const v = t.status!.vms![0]!;
    assert.equal(v.phase, 'Failed');
    assert.equal(v.reason, 'TransferFailed');
    assert.match(v.message!, /create a new task/);
    assert.match(v.message!, /Forklift said: .*VixDiskLib_Read/);
    assert.ok((v.bytesDone ?? 0) > 0, 'the progress reached before the failure is kept');
    assert.equal(t.status?.conditions?.find((x) => x.type === 'Ready')?.reason, 'TransferFailed');
  });

  test('CDI\'s 99.92% plateau reads as Converting, not as a stall, and the VM then completes', async () => {
    const ns = await setup('flt-conv', [{ id: 'vm-2' }]);
    const conv = await waitFor('reason Converting', async () => {
      const v = (await getTask(ns))?.status?.vms?.[0];
      return v?.reason === 'Converting' ? v : undefined;
    }, { timeoutMs: 60_000 });
    assert.match(conv.message!, /converting/);
    assert.ok(conv.progress! >= 99.9 && conv.progress! < 100);
    const t = await waitForEnd(ns);
    assert.equal(t.status?.vms?.[0]?.phase, 'Succeeded', JSON.stringify(t.status?.vms?.[0]));
  });

  test('a DataVolume waiting for a VDDK image forever fails the VM with VDDKNotConfigured and cancels its migration', async () => {
    const ns = await setup('flt-vddk', [{ id: 'vm-3' }]);
    const t = await waitForEnd(ns);
    const v = t.status!.vms![0]!;
    assert.equal(v.reason, 'VDDKNotConfigured', v.message);
    assert.match(v.message!, /chart value vddkImage/);
    assert.match(v.message!, /AwaitingVDDK/);
    const mig = (await c.list(GVRs.Migration, ns)).items[0] as KubeObject & { spec?: { cancel?: Array<{ id: string }> } };
    assert.deepEqual(mig.spec?.cancel, [{ id: 'vm-3' }]);
  });

  test('a transfer stuck at 0% is reported Stalled with the claims\' events and the host diagnosis, then fails HostUnreachable', async () => {
    const ns = await setup('flt-far', [{ id: 'vm-4' }]);
    const stalled = await waitFor('reason Stalled', async () => {
      const v = (await getTask(ns))?.status?.vms?.[0];
      return v?.reason === 'Stalled' && /VixDiskLib_Open/.test(v.message ?? '') ? v : undefined;
    }, { timeoutMs: 60_000 });
    assert.match(stalled.message!, /no progress for/);
    assert.match(stalled.message!, /host-2 at 192\.0\.2\.20/);
    const t = await waitForEnd(ns);
    const v = t.status!.vms![0]!;
    assert.equal(v.reason, 'HostUnreachable');
    assert.match(v.message!, /spec\.hosts\[\]/);
  });

  test('a Plan that reports Succeeded without producing a VirtualMachine or claims fails the VM with EngineReportedSuccessWithoutOutput', async () => {
    const ns = await setup('flt-trap', [{ id: 'vm-5' }]);
    // The retry trap: give the Plan a history (a finished earlier attempt) while Forklift still validates it;
    // Forklift then "migrates" nothing and reports Succeeded.
    const plan = await waitFor('the Plan', async () => (await c.list(GVRs.Plan, ns)).items[0]);
    const conds = ((plan.status as { conditions?: unknown[] } | undefined)?.conditions ?? []) as unknown[];
    const ref = (name: string) => ({ name, namespace: ns, uid: `${name}-uid`, generation: 1 });
    await c.patch(
      GVRs.Plan,
      ns,
      plan.metadata!.name!,
      {
        status: {
          conditions: [...conds, { type: 'Failed', status: 'True', category: 'Advisory', reason: 'Completed', message: 'The plan execution has FAILED.', lastTransitionTime: new Date().toISOString() }],
          // A history entry is Forklift's full snapshot (the strict Plan schema requires every part of it).
          migration: {
            history: [{ migration: ref('earlier'), plan: ref(plan.metadata!.name!), provider: { source: ref('src'), destination: ref('dst') }, map: { network: ref('nm'), storage: ref('sm') } }],
            vms: [{ id: 'vm-5', phase: 'Completed', pipeline: [], conditions: [{ type: 'Succeeded', status: 'True', category: 'Advisory', lastTransitionTime: new Date().toISOString() }] }],
          },
        },
      },
      'merge',
      { subresource: 'status' },
    );
    const t = await waitForEnd(ns);
    const v = t.status!.vms![0]!;
    assert.equal(v.phase, 'Failed');
    assert.equal(v.reason, 'EngineReportedSuccessWithoutOutput', v.message);
    assert.match(v.message!, /create a new task/);
    assert.equal((await c.list(GVRs.VMInstance, ns)).items.length, 0);
  });
});

test('a controller restart keeps a stalled transfer Stalled: the stall clock is read back from status, not started over', async () => {
  const ns = await setup('flt-hang', [{ id: 'vm-6' }]);
  const stalled = await waitFor('reason Stalled', async () => {
    const v = (await getTask(ns))?.status?.vms?.[0];
    return v?.reason === 'Stalled' ? v : undefined;
  }, { timeoutMs: 60_000 });
  assert.ok((stalled.bytesDone ?? 0) > 0, 'the transfer moved before it hung');
  assert.ok(stalled.lastProgressTime, 'status records when the transfer last moved');
  assert.match(stalled.message!, /no progress for/);

  // Every status the task shows from here on.
  const seen: Array<{ reason?: string; lastProgressTime?: string }> = [];
  const abort = new AbortController();
  const rv = (await getTask(ns))!.metadata.resourceVersion;
  const watching = c
    .watch(GVRs.VMImportTask, ns, { resourceVersion: rv }, (_type, o) => {
      const v = (o as unknown as VMImportTask).status?.vms?.[0];
      if (v) seen.push({ reason: v.reason, lastProgressTime: v.lastProgressTime });
    }, abort.signal)
    .catch(() => undefined);
  await booted.restartController();
  // The restarted controller's own verdict: its vm_stalled gauge for this VM. Had it started the clock
  // over, its first pass would have written Transferring (seen by the watch) and the gauge would come
  // only a stall period later.
  await waitFor('the restarted controller to call the VM stalled', async () => {
    const text = await (await fetch(booted.ctl.metricsURL)).text();
    return new RegExp(`^migration_controller_vm_stalled\\{namespace="${ns}",task="t",vm="vm-6"\\} 1$`, 'm').test(text);
  }, { timeoutMs: 30_000 });
  const after = (await getTask(ns))!.status!.vms![0]!;
  abort.abort();
  await watching;
  assert.equal(after.reason, 'Stalled', after.message);
  assert.equal(after.lastProgressTime, stalled.lastProgressTime, 'the stall clock kept its origin');
  assert.deepEqual(seen.filter((x) => x.reason !== 'Stalled'), [], 'the restart flipped the VM out of Stalled');
  // Deleting the task cancels the hung transfer.
  await c.delete(GVRs.VMImportTask, ns, 't');
  await waitFor('the task to be gone', async () => !(await getTask(ns)), { timeoutMs: 30_000 });
});
