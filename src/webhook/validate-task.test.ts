import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_PLATFORM, GUEST_CONVERSION_DISABLED_MESSAGE, UPSTREAM_NAME_NOTE, deniedOn, validateTask, type TaskFacts, type InventoryVM } from './validate-task.ts';

const Gi = 2 ** 30;
const immediate = { metadata: { name: 'replicated' }, provisioner: 'x', volumeBindingMode: 'Immediate' };
const wffc = { metadata: { name: 'local', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } }, provisioner: 'x', volumeBindingMode: 'WaitForFirstConsumer' };
const readySource = (hosts: unknown[] = []) => ({
  metadata: { name: 'vc', namespace: 't' },
  spec: { type: 'vsphere', hosts },
  status: { provider: { uid: 'p-1' }, conditions: [{ type: 'Ready', status: 'True', reason: 'Connected', message: '' }] },
});
const vm = (name: string, disks: number, host = 'host-1', gib = 10): InventoryVM => ({ name, host, disks: Array.from({ length: disks }, () => ({ capacity: gib * Gi })) });

function facts(o: Partial<TaskFacts> = {}): TaskFacts {
  return {
    source: { value: readySource() },
    storageClasses: { value: [immediate, wffc] },
    serviceCIDRs: { value: ['10.96.0.0/12'] },
    inventory: { value: { vms: { 'vm-1': vm('web', 1), 'vm-2': vm('db', 3) }, hosts: [{ id: 'host-1', name: '192.168.1.10' }, { id: 'host-2', name: '10.96.5.5' }] } },
    quotas: { value: [] },
    ...o,
  };
}
const task = (spec: Record<string, unknown>) => ({ metadata: { name: 'imp', namespace: 't' }, spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1' }], storageClass: 'replicated', ...spec } });

test('a valid task passes without warnings', () => {
  assert.deepEqual(validateTask('CREATE', task({ vms: [{ id: 'vm-1' }, { id: 'vm-2', name: 'db-01' }] }), undefined, facts()), { allowed: true, problems: [], warnings: [] });
});

test('a missing source denies; a source that is not Ready warns', () => {
  assert.deepEqual(validateTask('CREATE', task({}), undefined, facts({ source: { value: undefined } })).problems, [
    'spec.sourceRef.name: VMImportSource "vc" does not exist in namespace "t"; create it first or fix the name',
  ]);
  const notReady = readySource();
  notReady.status.conditions[0] = { type: 'Ready', status: 'False', reason: 'AuthenticationFailed', message: 'incorrect user name or password' };
  const v = validateTask('CREATE', task({}), undefined, facts({ source: { value: notReady } }));
  assert.equal(v.allowed, true);
  assert.deepEqual(v.warnings, ['VMImportSource "vc" is not Ready (AuthenticationFailed: incorrect user name or password); the task waits until it is']);
});

test('a WaitForFirstConsumer default class is refused naming it, its mode and the Immediate classes', () => {
  assert.deepEqual(validateTask('CREATE', task({ storageClass: undefined }), undefined, facts()).problems, [
    'spec.storageClass: the cluster default storage class "local" has volumeBindingMode WaitForFirstConsumer; the import needs a class that binds Immediate, or its transfer volumes never bind (storage classes that bind Immediate: replicated)',
  ]);
});

test('a name too long for the disks the inventory reports is refused; the same name with fewer disks passes', () => {
  const name = 'a'.repeat(38);
  const f = facts();
  (f.inventory as { value: { vms: Record<string, InventoryVM> } }).value.vms['vm-12'] = vm('big', 12);
  assert.deepEqual(validateTask('CREATE', task({ vms: [{ id: 'vm-12', name }] }), undefined, f).problems, [
    `spec.vms[0].name: VMDisk name "${name}-disk-11" is 46 characters; the limit is 45 (Helm release names are limited to 53, minus the "vm-disk-" prefix); with 12 disks the VM name may have at most 37 characters`,
  ]);
  assert.deepEqual(validateTask('CREATE', task({ vms: [{ id: 'vm-12', name }] }), undefined, f).warnings, [`spec.vms[0].name: ${UPSTREAM_NAME_NOTE}`]);
  assert.equal(validateTask('CREATE', task({ vms: [{ id: 'vm-2', name }] }), undefined, f).allowed, true);
});

test('without the inventory names are checked against 100 disks, with a warning saying so', () => {
  const v = validateTask('CREATE', task({ vms: [{ id: 'vm-1', name: 'a'.repeat(38) }] }), undefined, facts({ inventory: { error: 'connection refused' } }));
  assert.equal(v.allowed, false);
  assert.match(v.problems[0]!, /-disk-99" is 46 characters.*\(the inventory could not tell this VM's disk count, so 100 disks were assumed\)$/);
  assert.deepEqual(v.warnings, ['could not read the inventory of VMImportSource "vc" (connection refused); VM names were checked assuming up to 100 disks per VM, and host addresses and quota were not checked']);
  assert.equal(validateTask('CREATE', task({ vms: [{ id: 'vm-1', name: 'a'.repeat(37) }] }), undefined, facts({ inventory: { error: 'x' } })).allowed, true);
});

test('duplicate ids and two VMs with one output name are refused', () => {
  const v = validateTask('CREATE', task({ vms: [{ id: 'vm-1', name: 'x' }, { id: 'vm-1' }, { id: 'vm-2', name: 'x' }] }), undefined, facts());
  assert.deepEqual(v.problems, ['spec.vms[1].id "vm-1" is listed twice (also spec.vms[0])', 'spec.vms[2]: VMInstance name "x" is also the name of spec.vms[0]; give each VM its own name']);
});

test('a VM on a host advertised inside the Service CIDR is refused unless the source overrides the host', () => {
  const f = facts();
  (f.inventory as { value: { vms: Record<string, InventoryVM> } }).value.vms['vm-3'] = vm('app', 1, 'host-2');
  assert.deepEqual(validateTask('CREATE', task({ vms: [{ id: 'vm-3' }] }), undefined, f).problems, [
    'spec.vms[0]: VM "app" runs on ESXi host host-2, which vCenter advertises at 10.96.5.5, inside the cluster\'s Service CIDR 10.96.0.0/12: service routing would capture the transfer\'s traffic and it would fail late. Add spec.hosts[] on the VMImportSource with id: host-2, an address the cluster can reach, and the ESXi host\'s own credentials',
  ]);
  const overridden = { ...f, source: { value: readySource([{ id: 'host-2', address: '192.168.9.9' }]) } };
  assert.equal(validateTask('CREATE', task({ vms: [{ id: 'vm-3' }] }), undefined, overridden).allowed, true);
});

test('a quota that may not hold the import warns with the numbers; one that certainly cannot warns that the task will fail', () => {
  const quotas = { value: [{ metadata: { name: 'tenant' }, status: { hard: { 'requests.storage': '50Gi' }, used: { 'requests.storage': '0' } } }] };
  const v = validateTask('CREATE', task({ vms: [{ id: 'vm-2' }] }), undefined, facts({ quotas }));
  assert.equal(v.allowed, true);
  assert.deepEqual(v.warnings, [
    'storage quota: ResourceQuota "tenant" limits requests.storage to 50.0 GiB with 0.00 GiB used (50.0 GiB free); the import may need up to 63.6 GiB at its peak (on a CSI class CDI fills each disk through a second claim of the same size, plus filesystem overhead)',
  ]);
  const small = { value: [{ metadata: { name: 'tenant' }, status: { hard: { 'requests.storage': '30Gi' }, used: { 'requests.storage': '0' } } }] };
  const w = validateTask('CREATE', task({ vms: [{ id: 'vm-2' }] }), undefined, facts({ quotas: small }));
  assert.equal(w.allowed, true);
  assert.match(w.warnings[0] ?? '', /certainly needs 40\.0 GiB .*the task will fail with QuotaExceeded unless the quota is raised first/);
});

test('sourceRef, vms, storageClass and networks are immutable; status-only and finalizer writes pass', () => {
  const old = task({});
  assert.deepEqual(validateTask('UPDATE', task({ storageClass: 'other', vms: [{ id: 'vm-2' }] }), old, undefined).problems, [
    'spec.vms is immutable once the task is accepted; delete this task and create a new one to import differently',
    'spec.storageClass is immutable once the task is accepted; delete this task and create a new one to import differently',
  ]);
  assert.equal(validateTask('UPDATE', { ...old, metadata: { ...old.metadata, finalizers: ['f'] }, status: { phase: 'Failed' } }, old, undefined).allowed, true);
});

test('unreadable facts never deny by themselves', () => {
  const v = validateTask('CREATE', task({}), undefined, { source: { error: 'timeout' }, storageClasses: { error: 'timeout' }, serviceCIDRs: { error: 'timeout' }, inventory: { error: 'timeout' }, quotas: { error: 'timeout' } });
  assert.equal(v.allowed, true);
  assert.equal(v.warnings.length, 3);
});

test('garbage objects are denied with a message, never thrown on', () => {
  for (const o of [null, 1, 'x', [], {}, { spec: 1 }, { spec: { vms: [null, 3, { id: 7 }, { id: 'vm-1', name: 5 }], networks: [1, { type: 'multus' }], storageClass: 9 } }]) {
    const v = validateTask('CREATE', o, undefined, facts());
    assert.equal(v.allowed, false, JSON.stringify(o));
    assert.ok(v.problems.length > 0);
  }
});

test('without facts (the early pass) only what the object shows is judged', () => {
  assert.deepEqual(validateTask('CREATE', task({ vms: [{ id: 'vm-1', name: 'a'.repeat(38) }], sourceRef: { name: 'absent' }, storageClass: 'nope' }), undefined, undefined), { allowed: true, problems: [], warnings: [] });
  assert.deepEqual(validateTask('CREATE', task({ vms: [{ id: 'vm-1' }, { id: 'vm-1' }] }), undefined, undefined).problems, ['spec.vms[1].id "vm-1" is listed twice (also spec.vms[0])']);
});

test('a Multus attachment in another namespace is refused: the VMInstance attaches its own namespace’s only', () => {
  const v = validateTask('CREATE', task({ networks: [{ source: 'network-1', type: 'multus', name: 'infra/backup' }] }), undefined, facts());
  assert.equal(v.allowed, false);
  assert.match(v.problems.join('\n'), /spec\.networks\[0\]\.name "infra\/backup" is in another namespace: .*namespace "t" only/);
  // The same attachment named in the task's own namespace, or by its bare name, passes.
  for (const name of ['t/backup', 'backup']) assert.deepEqual(validateTask('CREATE', task({ networks: [{ source: 'network-1', type: 'multus', name }] }), undefined, facts()).problems, []);
});

// ---------------------------------------------------------------------------------------------------
// Warm imports: spec.mode and spec.cutover (issue 17)
// ---------------------------------------------------------------------------------------------------

const warm = (cutover?: string, extra: Record<string, unknown> = {}) => task({ mode: 'warm', ...(cutover === undefined ? {} : { cutover }), ...extra });
const withStatus = (t: ReturnType<typeof task>, status: Record<string, unknown>) => ({ ...t, status });

test('a warm task with or without a cutover time is admitted; a cold one is the default', () => {
  assert.deepEqual(validateTask('CREATE', warm(), undefined, facts()).problems, []);
  assert.deepEqual(validateTask('CREATE', warm('2026-12-01T02:00:00Z'), undefined, facts()).problems, []);
  assert.deepEqual(validateTask('CREATE', warm('2026-12-01T02:00:00.5+01:00'), undefined, undefined).problems, []);
  assert.deepEqual(validateTask('CREATE', task({ mode: 'cold' }), undefined, facts()).problems, []);
});

test('an unknown mode, a cutover that is not RFC 3339 and a cutover on a cold task are refused, each saying what to write', () => {
  assert.deepEqual(validateTask('CREATE', task({ mode: 'hot' }), undefined, undefined).problems, ['spec.mode must be cold or warm (got "hot"); leave it out for cold']);
  for (const bad of ['tomorrow', '2026-12-01', '2026-12-01 02:00', '2026-02-30T02:00:00Z', '2026-12-01T25:00:00Z', 1733018400]) {
    assert.deepEqual(validateTask('CREATE', warm(bad as string), undefined, undefined).problems, [
      `spec.cutover must be an RFC 3339 time such as 2026-12-01T02:00:00Z (got ${JSON.stringify(String(bad))}); leave it out to cut over only once you set it`,
    ], String(bad));
  }
  assert.deepEqual(validateTask('CREATE', task({ cutover: '2026-12-01T02:00:00Z' }), undefined, undefined).problems, [
    'spec.cutover applies to warm imports only (spec.mode: warm); a cold import powers each source VM off when its transfer starts, so there is no cutover to schedule',
  ]);
});

test('an accepted warm task takes a cutover set, or moved earlier, and nothing else', () => {
  const none = warm();
  const at2 = warm('2026-12-01T02:00:00Z');
  assert.deepEqual(validateTask('UPDATE', at2, none, undefined).problems, []);
  assert.deepEqual(validateTask('UPDATE', warm('2026-12-01T01:00:00Z'), at2, undefined).problems, []);
  // The same instant written in another offset is not a move.
  assert.deepEqual(validateTask('UPDATE', warm('2026-12-01T03:00:00+01:00'), at2, undefined).problems, []);
  assert.deepEqual(validateTask('UPDATE', warm('2026-12-01T03:00:00Z'), at2, undefined).problems, [
    'spec.cutover may only be moved earlier: "2026-12-01T03:00:00Z" is later than the scheduled "2026-12-01T02:00:00Z"; a scheduled cutover can be brought forward (set it to the current time to cut over now) but not postponed',
  ]);
  assert.deepEqual(validateTask('UPDATE', none, at2, undefined).problems, [
    'spec.cutover cannot be removed once set (it is "2026-12-01T02:00:00Z"): a cutover can be moved earlier but not cancelled or postponed; delete the task to abandon the import',
  ]);
  assert.deepEqual(validateTask('UPDATE', task({ mode: 'cold' }), none, undefined).problems, [
    'spec.mode is immutable once the task is accepted (it is "warm"); delete this task and create a new one to import differently',
  ]);
  assert.deepEqual(validateTask('UPDATE', task({ cutover: '2026-12-01T02:00:00Z' }), task({}), undefined).problems, [
    'spec.cutover applies to warm imports only (spec.mode: warm); a cold import powers each source VM off when its transfer starts, so there is no cutover to schedule',
  ]);
  assert.deepEqual(validateTask('UPDATE', warm('soon'), none, undefined).problems, [
    'spec.cutover must be an RFC 3339 time such as 2026-12-01T02:00:00Z (got "soon"); leave it out to cut over only once you set it',
  ]);
  // A task stored before spec.mode existed is cold; writing mode: cold explicitly changes nothing.
  assert.deepEqual(validateTask('UPDATE', task({ mode: 'cold' }), task({}), undefined).problems, []);
});

test('once a VM is cutting over, or the task has ended, the cutover no longer moves', () => {
  const at2 = warm('2026-12-01T02:00:00Z');
  const earlier = warm('2026-12-01T01:00:00Z');
  const precopying = withStatus(at2, { phase: 'Transferring', vms: [{ id: 'vm-1', name: 'web', phase: 'Precopying' }] });
  assert.deepEqual(validateTask('UPDATE', earlier, precopying, undefined).problems, []);
  const cutting = withStatus(at2, { phase: 'Transferring', vms: [{ id: 'vm-2', name: 'db', phase: 'Precopying' }, { id: 'vm-1', name: 'web', phase: 'CuttingOver' }] });
  assert.deepEqual(validateTask('UPDATE', earlier, cutting, undefined).problems, [
    'spec.cutover cannot change: cutover has started (VM "web" is CuttingOver), so the source VMs are being powered off for the final copy',
  ]);
  const ended = withStatus(at2, { phase: 'Failed', completedAt: '2026-12-01T00:00:00Z', vms: [{ id: 'vm-1', name: 'web', phase: 'Failed' }] });
  assert.deepEqual(validateTask('UPDATE', earlier, ended, undefined).problems, ['spec.cutover cannot change: the task has ended']);
  // Status and metadata writes of a locked task still pass: only a change of spec.cutover is refused.
  assert.equal(validateTask('UPDATE', { ...cutting, metadata: { ...cutting.metadata, finalizers: ['f'] } }, cutting, undefined).allowed, true);
});

test('spec.guestConversion: true is refused naming the chart value unless the platform enables guest conversion', () => {
  const off = validateTask('CREATE', task({ guestConversion: true }), undefined, facts());
  assert.equal(off.allowed, false);
  assert.deepEqual(off.problems, [GUEST_CONVERSION_DISABLED_MESSAGE]);
  assert.match(off.problems[0]!, /guestConversion\.enabled=true/);
  // the early pass (no facts) refuses it too, so the message comes before any schema or cluster check
  assert.deepEqual(validateTask('CREATE', task({ guestConversion: true }), undefined, undefined).problems, [GUEST_CONVERSION_DISABLED_MESSAGE]);
  const on = validateTask('CREATE', task({ guestConversion: true }), undefined, facts(), { guestConversion: true });
  assert.deepEqual([on.allowed, on.problems], [true, []]);
  // the NICs go to the pod network: the static IPs are not kept, and the author is told.
  assert.equal(on.warnings.length, 1);
  assert.match(on.warnings[0]!, /static IPs are not kept/);
  // false (or absent) is a raw copy and needs nothing from the platform
  assert.equal(validateTask('CREATE', task({ guestConversion: false }), undefined, facts()).allowed, true);
  assert.deepEqual(validateTask('CREATE', task({ guestConversion: 'yes' }), undefined, facts(), { guestConversion: true }).problems, ['spec.guestConversion must be true or false (got "yes")']);
});

test('spec.guestConversion is immutable once the task is accepted', () => {
  const v = validateTask('UPDATE', task({ guestConversion: true }), task({}), undefined, { guestConversion: true });
  assert.deepEqual(v.problems, ['spec.guestConversion is immutable once the task is accepted; delete this task and create a new one to import differently']);
});

test('a warm task asking for guest conversion is refused even where the platform enables conversion, naming both ways out', () => {
  const v = validateTask('CREATE', task({ mode: 'warm', guestConversion: true }), undefined, undefined, { guestConversion: true });
  assert.ok(v.problems.some((p) => p.includes('spec.guestConversion is not supported together with spec.mode: warm')), v.problems.join('\n'));
  assert.deepEqual(validateTask('CREATE', task({ mode: 'cold', guestConversion: true }), undefined, undefined, { guestConversion: true }).problems, []);
});

test("a task naming a Blocked VM is refused with the concern in Forklift's words and the fix; a warning comes back as a warning", () => {
  const rdm = { id: 'vmware.disk.rdm.detected', category: 'Critical' as const, label: 'Raw Device Mapped disk detected', assessment: 'RDM disks are not currently supported.' };
  const efi = { id: 'cozystack.firmware.efi', category: 'Warning' as const, label: 'UEFI firmware', assessment: 'The VM boots with UEFI.' };
  const cbtOff = { id: 'vmware.changed_block_tracking.disabled', category: 'Warning' as const, label: 'Changed Block Tracking (CBT) not enabled', assessment: 'For VM warm migration, CBT must be enabled.' };
  const inv = { vms: { 'vm-1': { ...vm('web', 1), assessed: [rdm] }, 'vm-2': { ...vm('db', 1), assessed: [efi, cbtOff] } }, hosts: [{ id: 'host-1', name: '192.168.1.10' }] };
  const blocked = validateTask('CREATE', task({}), undefined, facts({ inventory: { value: inv } }));
  assert.equal(blocked.allowed, false);
  assert.deepEqual(blocked.problems, [
    'spec.vms[0]: VM "web" (vm-1) is Blocked: Raw Device Mapped disk detected (Critical, Forklift): RDM disks are not currently supported. Fix: remove the RDM disk from the VM in vSphere (copy its data to a virtual disk if it must come along) and import again.',
  ]);
  // A cold task is not told about CBT; a warm one is.
  const cold = validateTask('CREATE', task({ vms: [{ id: 'vm-2' }] }), undefined, facts({ inventory: { value: inv } }));
  assert.equal(cold.allowed, true);
  assert.deepEqual(cold.warnings, [
    'spec.vms[0]: VM "db" (vm-2): UEFI firmware (Warning, migration-controller): The VM boots with UEFI. Fix: where the platform has no firmware value and the guest is neither Linux nor Windows, name an EFI instanceProfile for the VM in the task.',
  ]);
  const warmTask = validateTask('CREATE', task({ vms: [{ id: 'vm-2' }], mode: 'warm' }), undefined, facts({ inventory: { value: inv } }));
  assert.equal(warmTask.warnings.length, 2);
});

test('a warm task naming a VM without CBT or with snapshots is refused at admission with the fix; the same VM imports cold', () => {
  const f = facts();
  const inv = (f.inventory as { value: { vms: Record<string, InventoryVM> } }).value.vms;
  inv['vm-7'] = { ...vm('erp', 1), changeTrackingEnabled: false };
  inv['vm-8'] = { ...vm('db', 1), changeTrackingEnabled: true, snapshot: { kind: 'VirtualMachineSnapshot', id: 'snapshot-3' } };
  const v = validateTask('CREATE', warm(undefined, { vms: [{ id: 'vm-7' }, { id: 'vm-8' }, { id: 'vm-1' }] }), undefined, f);
  assert.equal(v.problems.length, 2);
  assert.match(v.problems[0]!, /^spec\.vms\[0\]: changed block tracking \(CBT\) is not enabled on VM "erp".*ctkEnabled=TRUE.*Forklift says: Changed Block Tracking/);
  assert.match(v.problems[1]!, /^spec\.vms\[1\]: VM "db" has snapshots \(current "snapshot-3"\)/);
  assert.deepEqual(validateTask('CREATE', task({ vms: [{ id: 'vm-7' }, { id: 'vm-8' }] }), undefined, f).problems, []);
});

test('a denial re-reads only the cached facts it rests on: a missing class the classes, a host collision the inventory and the source', () => {
  const all = ['source', 'storageClasses', 'quotas', 'inventory'] as const;
  const on = (o: unknown, f: TaskFacts, cached: Iterable<(typeof all)[number]> = all) => {
    const v = validateTask('CREATE', o, undefined, f);
    assert.equal(v.allowed, false, 'the case is a denial');
    return [...deniedOn('CREATE', o, undefined, f, DEFAULT_PLATFORM, v, cached)].sort();
  };
  // A class that does not exist: a class created since the cached list lifts it; nothing else can.
  assert.deepEqual(on(task({ storageClass: 'no-such-class' }), facts()), ['storageClasses']);
  // The same denial when the class list was read just now: nothing cached to re-read.
  assert.deepEqual(on(task({ storageClass: 'no-such-class' }), facts(), ['source', 'quotas', 'inventory']), []);
  // An ESXi host inside the Service CIDR: the inventory says where the VM runs, the source's spec.hosts
  // may override that host's address (an override added a second ago lifts the denial).
  const onHost2 = facts({ inventory: { value: { vms: { 'vm-1': vm('web', 1, 'host-2') }, hosts: [{ id: 'host-2', name: '10.96.5.5' }] } } });
  assert.deepEqual(on(task({}), onHost2), ['inventory', 'source']);
  // A name too long for the disks the inventory reports rests on the inventory (and so the source).
  assert.deepEqual(on(task({ vms: [{ id: 'vm-2', name: 'a'.repeat(43) }] }), facts()), ['inventory', 'source']);
  // Structural problems rest on no fact: the denial stands without a read.
  assert.deepEqual(on(task({ vms: [{ id: 'vm-1' }, { id: 'vm-1', name: 'b' }] }), facts()), []);
});

test('two NICs of one VM mapped to the same Multus attachment are refused at admission, naming the attachment and both networks', () => {
  const f = facts();
  const inv = (f.inventory as { value: { vms: Record<string, InventoryVM>; networks?: Array<{ id: string; name?: string }> } }).value;
  inv.vms['vm-1'] = { ...vm('web', 1), nicNetworks: ['network-1', 'network-2', 'network-3'] };
  inv.networks = [
    { id: 'network-1', name: 'VM Network' },
    { id: 'network-2', name: 'Backup' },
    { id: 'network-3', name: 'Storage' },
  ];
  const nets = (second: string) => [
    { source: 'VM Network', type: 'pod' },
    { source: 'network-2', type: 'multus', name: 'vlan10' },
    { source: 'Storage', type: 'multus', name: second },
  ];
  const v = validateTask('CREATE', task({ networks: nets('t/vlan10') }), undefined, f);
  assert.deepEqual(v.problems, [
    'spec.vms[0]: VM "web" (vm-1): VM has more than one NIC on one Multus attachment (t/vlan10: Backup (network-2), Storage (network-3)); Forklift refuses that (VMDuplicateNADMappings: OVN-Kubernetes keys a pod\'s networks by attachment). Give each NIC\'s network its own NetworkAttachmentDefinition in spec.networks',
  ]);
  assert.equal(validateTask('CREATE', task({ networks: nets('vlan20') }), undefined, f).allowed, true, 'one attachment per NIC');
  // Without the inventory's networks (not read, or no Multus mapping) nothing is judged here: the preflight judges it.
  delete inv.networks;
  assert.equal(validateTask('CREATE', task({ networks: nets('vlan10') }), undefined, f).allowed, true);
});

test('spec.preserveStaticIPs: true with NICs on the pod network is admitted with a warning naming the consequence; on Multus only, or false, silently', () => {
  const on = { guestConversion: true };
  const warned = (spec: Record<string, unknown>, f = facts()) => {
    const v = validateTask('CREATE', task(spec), undefined, f, on);
    assert.equal(v.allowed, true, v.problems.join('; '));
    return v.warnings.filter((w) => /preserveStaticIPs|static IPs/.test(w));
  };
  // Nothing mapped to Multus: every NIC is on the pod network.
  const [w] = warned({ guestConversion: true, preserveStaticIPs: true });
  assert.match(w!, /^spec\.preserveStaticIPs: true with NICs on the pod network: virt-v2v writes each guest's vSphere static IPs into the converted guest, but the pod network assigns its own addresses, so such a guest cannot reach it/);
  assert.match(w!, /NetMapPreservingIPsOnPodNetwork/);
  // The inventory tells which VM keeps a NIC on the pod network.
  const f = facts();
  const inv = (f.inventory as { value: { vms: Record<string, InventoryVM>; networks?: Array<{ id: string; name?: string }> } }).value;
  inv.vms['vm-1'] = { ...vm('web', 1), nicNetworks: ['network-1', 'network-2'] };
  inv.networks = [{ id: 'network-1', name: 'VM Network' }, { id: 'network-2', name: 'Backup' }];
  const one = [{ source: 'Backup', type: 'multus', name: 'vlan10' }];
  assert.match(warned({ guestConversion: true, preserveStaticIPs: true, networks: one }, f)[0]!, /pod network \(VMs "web" \(vm-1\)\)/);
  const both = [...one, { source: 'network-1', type: 'multus', name: 'vlan20' }];
  assert.deepEqual(warned({ guestConversion: true, preserveStaticIPs: true, networks: both }, f), []);
  assert.deepEqual(warned({ guestConversion: true, preserveStaticIPs: false }), [], 'the tenant chose new addresses');
  // Absent: the default rule and its own note (static IPs not kept on the pod network).
  assert.match(warned({ guestConversion: true })[0]!, /static IPs are not kept/);
  // Without conversion it does nothing, and says so; it is a boolean, and immutable.
  assert.deepEqual(validateTask('CREATE', task({ preserveStaticIPs: true }), undefined, facts()).warnings, ['spec.preserveStaticIPs has no effect without spec.guestConversion: a raw copy leaves the guest as it was, its network configuration included']);
  assert.deepEqual(validateTask('CREATE', task({ guestConversion: true, preserveStaticIPs: 'yes' }), undefined, facts(), on).problems, ['spec.preserveStaticIPs must be true or false']);
  assert.deepEqual(validateTask('UPDATE', task({ guestConversion: true, preserveStaticIPs: true }), task({ guestConversion: true }), undefined, on).problems, [
    'spec.preserveStaticIPs is immutable once the task is accepted; delete this task and create a new one to import differently',
  ]);
});
