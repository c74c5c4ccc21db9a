// The cost of a cache list by namespace and labels, the informer store of the working tree side by side
// with the store of a git ref (default `main`): a store filled as a scale run fills the claims cache (per
// task, 2 VMs × a claim for the transfer and one for the handoff, labelled with the task, its Plan and
// the VM), then one list per task by its own labels — what every pass of every task does. Prints the
// figures and writes bench/results/cache-index.json. Pure CPU: no control plane. Asserts nothing.
//
//   node bench/cache-index.ts [--sizes 200,2000] [--baseline main] [--rounds 3]
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { isMain, log, numList, parseFlags, revOf, round, sourceOfRef, writeResult } from './lib.ts';
import { Store } from '../src/runtime/informer.ts';
import type { KubeObject } from '../src/runtime/kube.ts';

interface StoreLike {
  items: Map<string, KubeObject>;
  list(namespace?: string, labelSelector?: Record<string, string>): KubeObject[];
}

const NAMESPACES = 20;
const OBJECTS_PER_TASK = 4;

function fill(store: StoreLike, tasks: number): void {
  for (let t = 0; t < tasks; t++) {
    const ns = `ns-${t % NAMESPACES}`;
    for (let j = 0; j < OBJECTS_PER_TASK; j++) {
      const name = `task-${t}-obj-${j}`;
      store.items.set(`${ns}/${name}`, {
        metadata: { name, namespace: ns, resourceVersion: String(t * 10 + j), labels: { 'forklift.cozystack.io/task-uid': `uid-${t}`, plan: `plan-${t}`, 'vm-id': `vm-${t}-${j % 2}` } },
      } as KubeObject);
    }
  }
}

/** Microseconds per list, over one list per task by its own namespace and labels. */
function measure(make: () => StoreLike, tasks: number, rounds: number): { usPerList: number; msPerPassOverAllTasks: number } {
  const store = make();
  fill(store, tasks);
  let best = Infinity;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    let found = 0;
    for (let t = 0; t < tasks; t++) found += store.list(`ns-${t % NAMESPACES}`, { 'forklift.cozystack.io/task-uid': `uid-${t}` }).length;
    const ms = performance.now() - t0;
    if (found !== tasks * OBJECTS_PER_TASK) throw new Error(`bench: lists found ${found} objects, expected ${tasks * OBJECTS_PER_TASK}`);
    best = Math.min(best, ms);
  }
  return { usPerList: round((best * 1000) / tasks, 2), msPerPassOverAllTasks: round(best, 2) };
}

export async function benchCacheIndex(o: { sizes: number[]; baseline: string; rounds: number }): Promise<Record<string, unknown>> {
  const mod = (await import(pathToFileURL(join(sourceOfRef(o.baseline), 'src/runtime/informer.ts')).href)) as { Store: new () => StoreLike };
  const rows = o.sizes.map((tasks) => {
    const current = measure(() => new Store(), tasks, o.rounds);
    const baseline = measure(() => new mod.Store(), tasks, o.rounds);
    log(`cache-index ${tasks} tasks: ${current.usPerList} µs per list (before: ${baseline.usPerList} µs)`);
    return { tasks, objects: tasks * OBJECTS_PER_TASK, current, baseline, ratio: round(baseline.usPerList / current.usPerList, 1) };
  });
  const first = rows[0]!;
  const last = rows[rows.length - 1]!;
  return {
    baseline: { ref: o.baseline, rev: revOf(o.baseline) },
    rows,
    // Per-list cost growth from the smallest to the largest size (1.0 = flat).
    growthPerList: { current: round(last.current.usPerList / first.current.usPerList, 2), baseline: round(last.baseline.usPerList / first.baseline.usPerList, 2), tasks: round(last.tasks / first.tasks, 1) },
  };
}

if (isMain(import.meta)) {
  const flags = parseFlags(process.argv.slice(2));
  const sizes = numList(flags.get('sizes'), [200, 2000]);
  const baseline = flags.get('baseline') ?? 'main';
  const rounds = Number(flags.get('rounds') ?? 3);
  const f = await benchCacheIndex({ sizes, baseline, rounds });
  console.log(JSON.stringify(f, null, 2));
  console.log(`  → ${writeResult('cache-index', { sizes, baseline, rounds, namespaces: NAMESPACES, objectsPerTask: OBJECTS_PER_TASK, quick: flags.has('quick') }, f)}`);
}
