// The readiness assessment, end to end on the real API server with the simulator: a source publishes each
// VM's facts, concerns and verdict with a per-verdict summary in its printer columns.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import type { KubeClient } from '../../src/runtime/kube.ts';
import type { SourceInventoryVM, VMImportSource } from '../../src/api/types.ts';
import { freshNamespace, kubectl, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { createSource, getSource, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-assess.example.com/sdk';
const world = vcenter({
  url: URL_VC,
  hosts: [{ id: 'host-1', address: '192.0.2.10' }],
  vms: [
    // Nothing to say: CBT on, a supported guest running its Tools.
    { id: 'vm-1', name: 'web01', changeTrackingEnabled: true, disks: [{ capacityGiB: 2 }] },
    // Forklift's rdm_disk policy: Critical.
    { id: 'vm-2', name: 'db01', changeTrackingEnabled: true, disks: [{ capacityGiB: 2 }, { capacityGiB: 1, rdm: true }] },
    // Ours: a shared (multi-writer) disk cannot be handed to one VMInstance.
    { id: 'vm-3', name: 'cluster01', changeTrackingEnabled: true, disks: [{ capacityGiB: 2 }, { capacityGiB: 1, shared: true }] },
    // UEFI with Secure Boot and a TPM (Forklift's tpm_enabled policy): Warnings only.
    { id: 'vm-4', name: 'app01', changeTrackingEnabled: true, firmware: 'efi', secureBoot: true, tpmEnabled: true, disks: [{ capacityGiB: 2 }] },
  ],
});

let booted: BootedWorld;
let c: KubeClient;

before(async () => {
  booted = await bootWorld({ worlds: [world], storageClasses: [{ name: 'assess-fast' }] });
  ({ c } = booted);
});

after(async () => {
  await booted?.shutdown();
});

const creds = { username: world.user, password: world.password, caCert: world.caPEM };
const entry = (s: VMImportSource | undefined, id: string): SourceInventoryVM | undefined => s?.status?.inventory?.vms.find((v) => v.id === id);

async function assessedSource(ns: string): Promise<VMImportSource> {
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: creds });
  await waitForReason(c, ns, 'vc', 'Connected');
  return await waitFor('the assessed inventory', async () => {
    const s = await getSource(c, ns, 'vc');
    return s?.status?.inventory?.summary ? s : undefined;
  }, { timeoutMs: 30_000 });
}

test('a source publishes each VM\'s facts, concerns and verdict, and kubectl get shows the VMs per verdict', async () => {
  const ns = await freshNamespace('assess');
  const s = await assessedSource(ns);
  assert.deepEqual(s.status?.inventory?.summary, { ready: 1, readyWithWarnings: 1, blocked: 2 });
  assert.deepEqual(s.status?.inventory?.vms.map((v) => [v.id, v.verdict]), [['vm-4', 'ReadyWithWarnings'], ['vm-3', 'Blocked'], ['vm-2', 'Blocked'], ['vm-1', 'Ready']]);

  const web = entry(s, 'vm-1')!;
  assert.deepEqual(
    { power: web.power, os: web.os, guestId: web.guestId, firmware: web.firmware, tools: web.tools, cbt: web.cbt, disks: web.disks, nics: web.nics, concerns: web.concerns },
    { power: 'poweredOn', os: 'linux', guestId: 'rhel9_64Guest', firmware: 'bios', tools: 'running', cbt: true, disks: [{ capacity: 2 * 2 ** 30, bus: 'scsi', mode: 'persistent' }], nics: [{ network: 'network-1' }], concerns: [] },
  );
  // Forklift's concern, as its inventory computed it, with its category.
  const db = entry(s, 'vm-2')!;
  assert.deepEqual(db.disks?.[1], { capacity: 2 ** 30, bus: 'scsi', mode: 'persistent', rdm: true });
  assert.deepEqual(db.concerns?.map((x) => [x.id, x.category, x.label]), [['vmware.disk.rdm.detected', 'Critical', 'Raw Device Mapped disk detected']]);
  // Ours: Forklift raises nothing for a shared disk.
  assert.deepEqual(entry(s, 'vm-3')!.concerns?.map((x) => [x.id, x.category]), [['cozystack.disk.shared', 'Critical']]);
  const app = entry(s, 'vm-4')!;
  assert.deepEqual([app.firmware, app.secureBoot], ['efi', true]);
  assert.deepEqual(app.concerns?.map((x) => [x.id, x.category]), [['vmware.tpm.detected', 'Warning'], ['cozystack.firmware.efi', 'Warning'], ['cozystack.firmware.secure_boot', 'Warning']]);

  const r = await kubectl(['get', 'vmimportsource', 'vc', '-n', ns]);
  assert.equal(r.code, 0, r.stderr);
  const [head, row] = r.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/));
  const col = (name: string) => row![head!.indexOf(name)];
  assert.deepEqual([col('VMS'), col('READY-VMS'), col('WARNINGS'), col('BLOCKED')], ['4', '1', '1', '2']);
});
