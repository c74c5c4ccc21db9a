// Progress on a Forklift whose pipeline names its transfer step otherwise (DiskTransferV2v) or not at all:
// the DataVolumes' own progress shows the bytes moving, and a moving transfer is never called Stalled.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeObject } from '../../src/runtime/kube.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld } from './fixtures.ts';
import { createSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-steps.example.com/sdk';
const world = vcenter({ url: URL_VC, hosts: [{ id: 'host-1', address: '192.0.2.10' }], vms: [{ id: 'vm-1', name: 'steady01', disks: [{ capacityGiB: 24 }] }] });

for (const stepName of ['DiskTransferV2v', '']) {
  test(`with the transfer step ${stepName ? `named ${stepName}` : 'unnamed'}, a moving transfer shows its progress from the DataVolumes and is never called Stalled`, async () => {
    // A stall after 5 s without progress (default 10 min); the 24 GiB disk takes ~8 s at 3 GiB/s, in many
    // ticks, so a transfer whose bytes are not seen is called Stalled before it ends. 5 s rather than less:
    // on a loaded machine the first bytes can take over 2 s to appear after the run starts.
    const booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'steps-fast' }], sim: { mbPerSecond: 3072, transferStepName: stepName }, controller: { extra: { taskStallAfterSeconds: 5 } } });
    try {
      const c = booted.c;
      const ns = await freshNamespace('steps');
      await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
      await waitForReason(c, ns, 'vc', 'Connected');
      await c.create(GVRs.VMImportTask, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 't', namespace: ns }, spec: { sourceRef: { name: 'vc' }, storageClass: 'steps-fast', vms: [{ id: 'vm-1' }] } } as KubeObject);
      const seen: Array<{ reason?: string; progress?: number }> = [];
      const t = await waitFor(
        'the task to end',
        async () => {
          const cur = (await c.get(GVRs.VMImportTask, ns, 't')) as unknown as VMImportTask | undefined;
          const v = cur?.status?.vms?.[0];
          if (v) seen.push({ reason: v.reason, progress: v.progress });
          return cur?.status?.completedAt ? cur : undefined;
        },
        { timeoutMs: 90_000, intervalMs: 100 },
      );
      assert.equal(t.status?.vms?.[0]?.phase, 'Succeeded', JSON.stringify(t.status?.vms?.[0]));
      assert.deepEqual(seen.filter((s) => s.reason === 'Stalled'), [], 'never Stalled while bytes moved');
      const midway = seen.filter((s) => s.reason === 'Transferring' && (s.progress ?? 0) > 0 && (s.progress ?? 0) < 100);
      assert.ok(midway.length >= 2, `progress between 0 and 100% was shown while transferring (seen: ${JSON.stringify(seen.slice(0, 40))})`);
      assert.ok(midway.at(-1)!.progress! > midway[0]!.progress!, 'and it grew');
    } finally {
      await booted.shutdown();
    }
  });
}
