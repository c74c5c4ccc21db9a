// Downtime, cold vs warm: the same simulated VM shape at the same simulated disk speed, imported cold
// (the source is off for the whole copy) and warm (the source runs while Forklift precopies; it is off
// only for the cutover's final delta), side by side in one run. Downtime is taken two ways: by the
// benchmark's own clock (the simulated vCenter's VM seen powered off → the VMInstance seen by a watch)
// and as the controller reports it (status.vms[].downtimeSeconds, whole seconds). Writes
// bench/results/downtime.json with the machine's load average beside the figures.
//
//   node bench/downtime.ts [--repeats 3] [--mbps 256] [--quick]
import os from 'node:os';
import { GVRs } from '../src/runtime/gvr.ts';
import type { KubeObject } from '../src/runtime/kube.ts';
import { VC_URL, isMain, log, median, namespaceNames, outcome, parseFlags, round, spawnController, startEnv, taskObject, until, watchKind, writeResult, type BenchEnv } from './lib.ts';

export interface DowntimeRun {
  mode: 'cold' | 'warm';
  /** Source seen off → VMInstance seen, by the benchmark's clock (ms). */
  downtimeMs: number;
  /** The controller's status.vms[0].downtimeSeconds. */
  reportedSeconds?: number;
  /** Task creation → Ready (ms): what warm costs in import length. */
  importMs: number;
  precopies?: number;
}

export interface DowntimeFigures {
  disks: number;
  diskGiB: number;
  mbPerSecond: number;
  precopyIntervalMs: number;
  runs: DowntimeRun[];
  coldMedianMs: number;
  warmMedianMs: number;
  /** cold / warm median downtime. */
  ratio: number;
  loadAvg: number[];
}

type VMStat = { downtimeSeconds?: number; warm?: { precopies?: number } };

async function importOnce(env: BenchEnv, ns: string, name: string, mode: 'cold' | 'warm', vmId: string, warmForMs: number, vmInstances: Map<string, number>): Promise<DowntimeRun> {
  const world = env.sim!.world(VC_URL);
  const t0 = Date.now();
  const task = taskObject(ns, name, [vmId]);
  const spec = task.spec as Record<string, unknown>;
  spec.vms = [{ id: vmId, name }];
  if (mode === 'warm') Object.assign(spec, { mode: 'warm', cutover: new Date(t0 + warmForMs).toISOString().replace(/\.\d{3}Z$/, 'Z') });
  await env.admin.create(GVRs.VMImportTask, task);
  // The source's power-off as the simulated vCenter shows it, polled finely (its own record has no time).
  const off = until(`${name}: the source powered off`, () => (world.vm(vmId)!.powerState === 'poweredOff' ? Date.now() : undefined), 600_000, 10);
  const out = await until(`${name} to end`, async () => outcome(await env.admin.get(GVRs.VMImportTask, ns, name)), 600_000, 100);
  if (out !== 'ready') throw new Error(`bench: import ${ns}/${name} failed`);
  const offAt = await off;
  const seenAt = await until(`${name}: the VMInstance seen`, () => vmInstances.get(`${ns}/${name}`), 10_000);
  const t = (await env.admin.get(GVRs.VMImportTask, ns, name)) as (KubeObject & { status?: { vms?: VMStat[] } }) | undefined;
  const v = t?.status?.vms?.[0];
  return { mode, downtimeMs: seenAt - offAt, reportedSeconds: v?.downtimeSeconds, importMs: Date.now() - t0, precopies: v?.warm?.precopies };
}

export async function benchDowntime(env: BenchEnv, o: { repeats: number; disks: 1 | 4; mbPerSecond: number; precopyIntervalMs: number }): Promise<DowntimeFigures> {
  const [ns] = namespaceNames(`down-${Date.now().toString(36)}`, 1) as [string];
  const vmInstances = new Map<string, number>();
  const inf = await watchKind(env.admin, GVRs.VMInstance, (obj, at) => {
    const k = `${obj.metadata?.namespace}/${obj.metadata?.name}`;
    if (!vmInstances.has(k)) vmInstances.set(k, at);
  });
  const ctl = await spawnController(env);
  const runs: DowntimeRun[] = [];
  try {
    await ctl.waitReady();
    await env.namespaceWithSource(ns);
    for (let i = 0; i < o.repeats; i++) {
      // One after the other, never side by side: each import has the simulated disk speed to itself.
      for (const mode of ['cold', 'warm'] as const) {
        const r = await importOnce(env, ns, `${mode}-${i}`, mode, env.takeVM(o.disks), 3 * o.precopyIntervalMs, vmInstances);
        runs.push(r);
        log(`downtime: ${mode} run ${i + 1}/${o.repeats}: ${r.downtimeMs} ms (reported ${r.reportedSeconds} s), import ${r.importMs} ms${r.precopies !== undefined ? `, ${r.precopies} precopies` : ''}`);
      }
    }
  } finally {
    await ctl.stop();
    await inf.stop();
  }
  const coldMedianMs = median(runs.filter((r) => r.mode === 'cold').map((r) => r.downtimeMs));
  const warmMedianMs = median(runs.filter((r) => r.mode === 'warm').map((r) => r.downtimeMs));
  return { disks: o.disks, diskGiB: 1, mbPerSecond: o.mbPerSecond, precopyIntervalMs: o.precopyIntervalMs, runs, coldMedianMs, warmMedianMs, ratio: round(coldMedianMs / warmMedianMs, 1), loadAvg: os.loadavg().map((x) => round(x, 2)) };
}

export function printDowntime(f: DowntimeFigures): void {
  console.log(`\n== downtime: source off → VMInstance, ${f.disks}×${f.diskGiB} GiB VM at ${f.mbPerSecond} MiB/s (medians; load ${f.loadAvg.join(' ')})`);
  console.log(`  cold ${f.coldMedianMs} ms, warm ${f.warmMedianMs} ms → cold/warm ${f.ratio}×`);
  for (const r of f.runs) console.log(`  ${r.mode}: ${r.downtimeMs} ms (controller: ${r.reportedSeconds} s), import ${r.importMs} ms${r.precopies !== undefined ? `, ${r.precopies} precopies` : ''}`);
}

if (isMain(import.meta)) {
  const flags = parseFlags(process.argv.slice(2));
  const quick = flags.has('quick');
  const repeats = Number(flags.get('repeats') ?? (quick ? 1 : 3));
  const disks = quick ? 1 : 4;
  // Slow enough that a cold copy takes seconds (4 GiB at 256 MiB/s: 4 s per disk, in parallel).
  const mbPerSecond = Number(flags.get('mbps') ?? 256);
  const precopyIntervalMs = quick ? 1000 : 2000;
  const env = await startEnv({ pvSyncPeriod: flags.get('pv-sync-period') ?? '15s', oneDiskVMs: disks === 1 ? 2 * repeats : 0, fourDiskVMs: disks === 4 ? 2 * repeats : 0, changeTracking: true, mbPerSecond, simTimings: { precopyIntervalMs } });
  try {
    const f = await benchDowntime(env, { repeats, disks, mbPerSecond, precopyIntervalMs });
    printDowntime(f);
    console.log(`  → ${writeResult('downtime', { repeats, disks, mbPerSecond, precopyIntervalMs, quick }, { ...f })}`);
  } finally {
    await env.stop();
  }
}
