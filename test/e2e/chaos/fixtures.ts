// What the chaos runs (the short one in the e2e suite, the long `npm run chaos`) share: the imported VMs,
// the ledger of volumes the simulated transfers filled, and the verdict on an import's outputs — every VM
// Succeeded, exactly one of each output, every disk on the very volume its transfer filled, no Released or
// orphaned volume, and the bytes copied more than once.
import { vcenter, SOURCE_ANNOTATION, CONTENT_ANNOTATION, type WorldFixture } from '../../sim/index.ts';
import { GVRs } from '../../../src/runtime/gvr.ts';
import { isAlreadyExists, type KubeClient, type KubeObject } from '../../../src/runtime/kube.ts';
import type { VMImportSource, VMImportTask } from '../../../src/api/types.ts';
import { LABEL_TASK_UID } from '../../../src/api/labels.ts';
import { parseQuantity } from '../../../src/cozystack/quantity.ts';
import { until } from '../../../bench/lib.ts';

export interface VMShape {
  id: string;
  name: string;
  disksGiB: number[];
}

/**
 * `n` VMs named `<prefix><i>` with ids from `vm-<firstId>`: every fourth VM has three disks and every fourth
 * (offset two) has two, the rest one; sizes vary so transfers end at different moments and the handoffs of
 * different VMs interleave with whatever fault is under way.
 */
export function mixedVMs(prefix: string, n: number, firstId = 1, maxGiB = 3): VMShape[] {
  return Array.from({ length: n }, (_, i) => {
    const count = i % 4 === 0 ? 3 : i % 4 === 2 ? 2 : 1;
    return { id: `vm-${firstId + i}`, name: `${prefix}${i + 1}`, disksGiB: Array.from({ length: count }, (_, d) => 1 + ((i + d) % maxGiB)) };
  });
}

export function importWorld(url: string, hostAddress: string, vms: VMShape[]): WorldFixture {
  return vcenter({ url, hosts: [{ id: 'host-1', address: hostAddress }], vms: vms.map((v) => ({ id: v.id, name: v.name, disks: v.disksGiB.map((capacityGiB) => ({ capacityGiB })) })) });
}

export function diskCount(world: WorldFixture, vmIds?: string[]): number {
  return world.vms.filter((v) => !vmIds || vmIds.includes(v.id)).reduce((a, v) => a + v.disks.length, 0);
}

/** The simulated Forklift's mark of the source disk a volume was filled from (`<vCenter url>#<vm id>/<file>`). */
export function sourceDiskKey(world: WorldFixture, vmId: string, file: string): string {
  return `${world.url}#${vmId}/${file}`;
}

export async function ensureNamespace(c: KubeClient, name: string, labels: Record<string, string> = {}): Promise<void> {
  try {
    await c.create(GVRs.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } } as KubeObject);
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
  }
}

// Polls with a deadline; errors (an API server restarting) count as "not yet". One definition, the benchmarks'.
export { until };

/** Creates source `name` in `ns` for the world's vCenter and waits until it is Ready. */
export async function createConnectedSource(c: KubeClient, ns: string, name: string, world: WorldFixture, timeoutMs = 120_000): Promise<void> {
  await c.create(GVRs.VMImportSource, {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportSource',
    metadata: { name, namespace: ns },
    spec: { type: 'vsphere', url: world.url, credentials: { username: world.user, password: world.password, caCert: world.caPEM } },
  } as KubeObject);
  await until(`source ${ns}/${name} Ready`, async () => {
    const s = (await c.get(GVRs.VMImportSource, ns, name)) as unknown as VMImportSource | undefined;
    return s?.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True');
  }, timeoutMs);
}

export interface TaskRef {
  namespace: string;
  name: string;
  vmIds: string[];
}

export async function createTask(c: KubeClient, t: TaskRef, source: string, storageClass: string): Promise<void> {
  await c.create(GVRs.VMImportTask, {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name: t.name, namespace: t.namespace },
    spec: { sourceRef: { name: source }, storageClass, vms: t.vmIds.map((id) => ({ id })) },
  } as KubeObject);
}

/** Waits until every task has ended (completedAt set) and returns them. */
export async function waitTasksEnded(c: KubeClient, tasks: TaskRef[], timeoutMs: number): Promise<VMImportTask[]> {
  let last: Array<VMImportTask | undefined> = [];
  try {
    return await until(`${tasks.length} task(s) to end`, async () => {
      const got = await Promise.all(tasks.map((t) => c.get(GVRs.VMImportTask, t.namespace, t.name) as unknown as Promise<VMImportTask | undefined>));
      last = got;
      return got.every((x) => x?.status?.completedAt) ? (got as VMImportTask[]) : undefined;
    }, timeoutMs, 500);
  } catch (e) {
    // Where each unfinished task stood: the first thing anyone reading the failure needs.
    const where = last.filter((t) => !t?.status?.completedAt).map((t) => {
      const ready = t?.status?.conditions?.find((x) => x.type === 'Ready');
      const vms = (t?.status?.vms ?? []).map((v) => `${v.id} ${v.phase}${v.reason ? `/${v.reason}` : ''}${v.message ? ` "${v.message}"` : ''} disks ${(v.diskHandoffs ?? []).map((d) => d.handoff ?? '-').join(',')}`);
      return `${t?.metadata.namespace}/${t?.metadata.name}: ${t?.status?.phase} Ready=${ready?.status}/${ready?.reason} "${ready?.message ?? ''}"; ${vms.join('; ')}`;
    });
    throw new Error(`${(e as Error).message}; unfinished: ${where.join(' | ')}`);
  }
}

interface FilledVolume {
  uid: string;
  name: string;
  bytes: number;
}

/**
 * Every volume the simulated transfers filled, as observed by polling the API server (a volume is filled
 * once it carries the source-disk mark): a disk filled twice was copied twice. Polling, not watching, so an
 * API server restart or a compacted watch cannot hide a volume from it; a poll that fails is retried.
 */
export class VolumeLedger {
  private readonly c: KubeClient;
  private readonly filled = new Map<string, Map<string, FilledVolume>>();
  private running = false;
  private loop: Promise<void> | undefined;

  constructor(c: KubeClient) {
    this.c = c;
  }

  start(intervalMs = 200): void {
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        await this.poll().catch(() => undefined);
        await new Promise((r) => setTimeout(r, intervalMs));
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    // One last look: a volume filled just before the end.
    await this.poll().catch(() => undefined);
  }

  private async poll(): Promise<void> {
    for (const pv of (await this.c.list(GVRs.PersistentVolume)).items) {
      const src = pv.metadata?.annotations?.[SOURCE_ANNOTATION];
      if (!src) continue;
      let m = this.filled.get(src);
      if (!m) this.filled.set(src, (m = new Map()));
      if (!m.has(pv.metadata!.uid!)) {
        const cap = (pv.spec as { capacity?: { storage?: string } }).capacity?.storage;
        m.set(pv.metadata!.uid!, { uid: pv.metadata!.uid!, name: pv.metadata!.name!, bytes: parseQuantity(cap) ?? 0 });
      }
    }
  }

  /** Volumes filled from a source disk. */
  volumesOf(sourceDisk: string): FilledVolume[] {
    return [...(this.filled.get(sourceDisk)?.values() ?? [])];
  }

  /** Bytes filled beyond the first volume of each source disk (restricted to `keys` if given). */
  recopiedBytes(keys?: string[]): number {
    let sum = 0;
    for (const [k, m] of this.filled) if (!keys || keys.includes(k)) for (const v of [...m.values()].slice(1)) sum += v.bytes;
    return sum;
  }
}

export interface ImportReport {
  vms: number;
  vmsSucceeded: number;
  disks: number;
  /** Outputs beyond one per disk / VM (VMDisks, VMInstances, claims, volumes). */
  duplicates: number;
  /** Disks whose final volume is missing, or is not the volume their transfer filled. */
  lostDisks: number;
  /** Volumes of these namespaces left Released. */
  released: number;
  /** Claims, volumes or transfer DataVolumes left in these namespaces that belong to no output. */
  orphaned: number;
  bytesRecopied: number;
  /** One sentence per violation (empty when the import is whole). */
  problems: string[];
}

/**
 * The verdict on finished imports: tasks `tasks` of world `world`, each task alone in its namespace's
 * claims or sharing it with the others listed.
 */
export async function verifyImport(c: KubeClient, world: WorldFixture, tasks: TaskRef[], ledger: VolumeLedger): Promise<ImportReport> {
  const problems: string[] = [];
  const r: ImportReport = { vms: 0, vmsSucceeded: 0, disks: 0, duplicates: 0, lostDisks: 0, released: 0, orphaned: 0, bytesRecopied: 0, problems };
  const namespaces = [...new Set(tasks.map((t) => t.namespace))];
  const sourceKeys: string[] = [];
  const extra = (what: string, got: number, want: number): void => {
    if (got > want) {
      r.duplicates += got - want;
      problems.push(`${got} ${what}, expected ${want}`);
    } else if (got < want) {
      problems.push(`only ${got} ${what}, expected ${want}`);
    }
  };
  for (const ref of tasks) {
    const t = (await c.get(GVRs.VMImportTask, ref.namespace, ref.name)) as unknown as VMImportTask | undefined;
    if (!t) {
      problems.push(`task ${ref.namespace}/${ref.name} is gone`);
      continue;
    }
    const vms = world.vms.filter((v) => ref.vmIds.includes(v.id));
    const disks = vms.reduce((a, v) => a + v.disks.length, 0);
    r.vms += vms.length;
    r.disks += disks;
    for (const v of t.status?.vms ?? []) {
      if (v.phase === 'Succeeded') r.vmsSucceeded++;
      else problems.push(`VM ${ref.namespace}/${ref.name}/${v.id} ended ${v.phase}: ${v.reason ?? ''} ${v.message ?? ''}`.trim());
    }
    const sel = { labelSelector: `${LABEL_TASK_UID}=${t.metadata.uid}` };
    extra(`VMDisks of ${ref.namespace}/${ref.name}`, (await c.list(GVRs.VMDisk, ref.namespace, sel)).items.length, disks);
    extra(`VMInstances of ${ref.namespace}/${ref.name}`, (await c.list(GVRs.VMInstance, ref.namespace, sel)).items.length, vms.length);
    const pvs = (await c.list(GVRs.PersistentVolume, undefined, sel)).items;
    extra(`volumes of ${ref.namespace}/${ref.name}`, pvs.length, disks);
    const onVolume = new Map(pvs.map((pv) => [pv.metadata?.annotations?.[SOURCE_ANNOTATION] ?? '', pv] as const));
    for (const vm of vms) {
      for (const d of vm.disks) {
        const key = sourceDiskKey(world, vm.id, d.file);
        sourceKeys.push(key);
        const pv = onVolume.get(key);
        const filled = ledger.volumesOf(key);
        if (!pv) {
          r.lostDisks++;
          problems.push(`disk ${key} has no volume among the task's outputs`);
        } else if ((pv.status as { phase?: string } | undefined)?.phase !== 'Bound') {
          r.lostDisks++;
          problems.push(`disk ${key}: volume ${pv.metadata?.name} is ${(pv.status as { phase?: string } | undefined)?.phase}, not Bound`);
        } else if (!filled.some((f) => f.uid === pv.metadata?.uid) || !pv.metadata?.annotations?.[CONTENT_ANNOTATION]) {
          r.lostDisks++;
          problems.push(`disk ${key}: volume ${pv.metadata?.name} (${pv.metadata?.uid}) is not the one its transfer filled (${filled.map((f) => `${f.name}/${f.uid}`).join(', ') || 'none seen'})`);
        }
      }
    }
  }
  r.bytesRecopied = ledger.recopiedBytes(sourceKeys);
  for (const ns of namespaces) {
    extra(`claims in ${ns}`, (await c.list(GVRs.PersistentVolumeClaim, ns)).items.length, tasks.filter((t) => t.namespace === ns).reduce((a, t) => a + diskCount(world, t.vmIds), 0));
    const leftDVs = (await c.list(GVRs.DataVolume, ns)).items.filter((dv) => dv.metadata?.annotations?.['forklift.konveyor.io/disk-source']);
    if (leftDVs.length) {
      r.orphaned += leftDVs.length;
      problems.push(`transfer DataVolumes left in ${ns}: ${leftDVs.map((d) => d.metadata?.name).join(', ')}`);
    }
  }
  for (const pv of (await c.list(GVRs.PersistentVolume)).items) {
    const ref = (pv.spec as { claimRef?: { namespace?: string } }).claimRef;
    if (!ref?.namespace || !namespaces.includes(ref.namespace)) continue;
    const phase = (pv.status as { phase?: string } | undefined)?.phase;
    if (phase === 'Released') {
      r.released++;
      problems.push(`volume ${pv.metadata?.name} is Released`);
    } else if (!pv.metadata?.labels?.[LABEL_TASK_UID]) {
      r.orphaned++;
      problems.push(`volume ${pv.metadata?.name} (${phase}) of ${ref.namespace} belongs to no task output`);
    }
  }
  return r;
}
