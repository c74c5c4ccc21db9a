// API requests per imported VM, counted in the API server's audit log (the controller's own identity):
// connecting one source, then one import of a 1-disk VM and one of a 4-disk VM, each from creation to
// Ready=True plus the requests that trail it (until the controller has been quiet for a moment).
// Prints reads and writes separately, by verb and resource; writes bench/results/requests.json.
//
// With --baseline <git ref>, that ref's controller is measured first in the same environment (its own
// namespace and VMs) and the ratios baseline / current are written beside the figures.
//
//   node bench/requests.ts [--repeats 3] [--quick] [--baseline main]
import { GVRs } from '../src/runtime/gvr.ts';
import { isMain, log, median, namespaceNames, outcome, parseFlags, round, spawnController, startEnv, taskObject, until, writeResult, type BenchEnv, type RequestCount } from './lib.ts';

export interface RequestsOptions {
  repeats: number;
  /** No controller request for this long after Ready = the import's requests are all in. */
  quietMs?: number;
  /** The controller of this git ref (default: the working tree's). */
  ref?: string;
}

export interface ImportCount {
  disks: 1 | 4;
  runs: RequestCount[];
  medianTotal: number;
  medianReads: number;
  medianWrites: number;
}

export interface RequestsFigures {
  sourceConnect: RequestCount;
  imports: ImportCount[];
  /** With --baseline: the same figures of that ref's controller, measured in the same run. */
  baseline?: { ref: string; sourceConnect: RequestCount; imports: ImportCount[] };
  /** baseline median / current median, per import shape (total, reads, writes). */
  ratios?: Array<{ disks: 1 | 4; total: number; reads: number; writes: number }>;
}

/** Needs an environment with `repeats` 1-disk and `repeats` 4-disk VMs. */
export async function benchRequests(env: BenchEnv, o: RequestsOptions): Promise<RequestsFigures> {
  const quietMs = o.quietMs ?? 3000;
  const mStart = env.audit.mark();
  const ctl = await spawnController(env, { ref: o.ref });
  try {
    await ctl.waitReady();
    // Let the start-up lists and watches pass so they are not charged to the source.
    await env.audit.waitQuiet(mStart, 1000, 60_000);
    const [ns] = namespaceNames(`req${o.ref ? 'b' : ''}-${Date.now().toString(36)}`, 1) as [string];
    const m0 = env.audit.mark();
    await env.namespaceWithSource(ns);
    const end0 = await env.audit.waitQuiet(m0, quietMs, 60_000);
    const sourceConnect = env.audit.count(m0, undefined, end0);
    log(`requests${o.ref ? ` (${o.ref})` : ''}: source connected with ${sourceConnect.total} requests (${sourceConnect.reads} reads, ${sourceConnect.writes} writes)`);
    const imports: ImportCount[] = [];
    for (const disks of [1, 4] as const) {
      const runs: RequestCount[] = [];
      for (let i = 0; i < o.repeats; i++) {
        const name = `d${disks}-${i}`;
        const m = env.audit.mark();
        await env.admin.create(GVRs.VMImportTask, taskObject(ns, name, [env.takeVM(disks)]));
        const out = await until(`task ${ns}/${name} to end`, async () => outcome(await env.admin.get(GVRs.VMImportTask, ns, name)), 300_000, 100);
        if (out !== 'ready') throw new Error(`bench: import ${ns}/${name} failed; see the controller log ${ctl.logPath}`);
        const end = await env.audit.waitQuiet(m, quietMs, 120_000);
        const c = env.audit.count(m, undefined, end);
        runs.push(c);
        log(`requests${o.ref ? ` (${o.ref})` : ''}: ${disks}-disk import ${i + 1}/${o.repeats}: ${c.total} requests (${c.reads} reads, ${c.writes} writes)`);
      }
      imports.push({
        disks,
        runs,
        medianTotal: median(runs.map((r) => r.total)),
        medianReads: median(runs.map((r) => r.reads)),
        medianWrites: median(runs.map((r) => r.writes)),
      });
    }
    return { sourceConnect, imports };
  } finally {
    await ctl.stop();
  }
}

function fmt(c: RequestCount): string {
  return Object.entries(c.byVerbResource)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
}

export function printRequests(f: RequestsFigures): void {
  console.log('\n== API requests of the controller (audit log, its own identity)');
  if (f.baseline) {
    console.log(`  baseline ${f.baseline.ref}: connect ${f.baseline.sourceConnect.total}; ${f.baseline.imports.map((i) => `${i.disks}-disk ${i.medianTotal} (reads ${i.medianReads}, writes ${i.medianWrites})`).join('; ')}`);
    for (const i of f.baseline.imports) {
      const last = i.runs[i.runs.length - 1];
      if (last) console.log(`    baseline ${i.disks}-disk last run: ${fmt(last)}`);
    }
    console.log(`  ratios baseline / current: ${(f.ratios ?? []).map((r) => `${r.disks}-disk ${r.total}× (reads ${r.reads}×, writes ${r.writes}×)`).join('; ')}`);
  }
  console.log(`  connect one source: ${f.sourceConnect.total} (reads ${f.sourceConnect.reads}, writes ${f.sourceConnect.writes})`);
  console.log(`    ${fmt(f.sourceConnect)}`);
  for (const i of f.imports) {
    console.log(`  import one ${i.disks}-disk VM (median of ${i.runs.length}): ${i.medianTotal} (reads ${i.medianReads}, writes ${i.medianWrites})`);
    const last = i.runs[i.runs.length - 1];
    if (last) console.log(`    last run: ${fmt(last)}`);
  }
}

if (isMain(import.meta)) {
  const flags = parseFlags(process.argv.slice(2));
  const quick = flags.has('quick');
  const repeats = Number(flags.get('repeats') ?? (quick ? 1 : 3));
  const baseline = flags.get('baseline');
  const runs = baseline ? 2 : 1;
  const env = await startEnv({ pvSyncPeriod: flags.get('pv-sync-period'), oneDiskVMs: repeats * runs, fourDiskVMs: repeats * runs });
  try {
    const b = baseline ? await benchRequests(env, { repeats, ref: baseline }) : undefined;
    const f: RequestsFigures = await benchRequests(env, { repeats });
    if (b && baseline) {
      f.baseline = { ref: baseline, sourceConnect: b.sourceConnect, imports: b.imports };
      const r = (x: number, y: number): number => round(x / Math.max(1, y), 2);
      f.ratios = f.imports.map((i) => {
        const o = b.imports.find((x) => x.disks === i.disks)!;
        return { disks: i.disks, total: r(o.medianTotal, i.medianTotal), reads: r(o.medianReads, i.medianReads), writes: r(o.medianWrites, i.medianWrites) };
      });
    }
    printRequests(f);
    console.log(`  → ${writeResult('requests', { repeats, quick, pvSyncPeriod: flags.get('pv-sync-period') ?? '15s', baseline }, { ...f })}`);
  } finally {
    await env.stop();
  }
}
