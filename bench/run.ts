// `npm run bench`: every benchmark, one after another, each in its own process on its own control plane.
// Figures are printed and written to bench/results/<name>.json. Nothing asserts a timing.
//
//   npm run bench                                   # the full set (about 15 minutes on 2 cores)
//   npm run bench -- --quick                        # smallest form of each (a smoke run)
//   npm run bench -- --only latency,scale --sizes 50,200,800 --repeats 5
//   npm run bench -- --quick --parallel             # the smoke run: every benchmark at once, each still
//                                                   # in its own process on its own control plane
// Flags: --quick, --only <names>, --repeats <n> (startup, requests, latency), --objects <n> (startup/idle),
// --sizes <list> and --timeout-minutes <n> (scale), --pv-sync-period <d>, --poll-interval-ms <n> (latency),
// --idle-seconds <n>, --tasks <n> and --wave <n> (soak), --baseline <git ref> (webhook, cache-index, requests, latency: that ref's code measured side by side; default for cache-index: main),
// --parallel [N] (start the chosen benchmarks at once, at most N at a time, all when N is not given; the
// webhook's after them; each one's output is printed whole when it ends).
// --parallel is for smoke runs: benchmarks running side by side share the machine's cores, so their
// figures are not comparable with a sequential run's.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, RESULTS_DIR, parseFlags } from './lib.ts';

interface Bench {
  name: string;
  file: string;
  flags: string[];
  env?: Record<string, string>;
}

const flags = parseFlags(process.argv.slice(2));
const quick = flags.has('quick');
const pass = (...names: string[]): string[] => names.flatMap((n) => (flags.has(n) ? [`--${n}`, flags.get(n)!] : []));
const common = [...(quick ? ['--quick'] : []), ...pass('pv-sync-period')];

const all: Bench[] = [
  { name: 'startup', file: 'bench/startup.ts', flags: [...common, ...pass('repeats', 'objects', 'namespaces', 'idle-seconds')] },
  { name: 'requests', file: 'bench/requests.ts', flags: [...common, ...pass('repeats', 'baseline')] },
  { name: 'latency', file: 'bench/latency.ts', flags: [...common, ...pass('repeats', 'poll-interval-ms', 'baseline')] },
  // One 200-VM task: how long after the world changes a VM's phase the task's status shows it.
  { name: 'status-latency', file: 'bench/status-latency.ts', flags: [...(quick ? ['--quick'] : []), ...pass('vms', 'baseline', 'mb-per-second', 'kube-api-qps')] },
  { name: 'scale', file: 'bench/scale.ts', flags: [...common, ...pass('sizes', 'namespaces', 'timeout-minutes')] },
  // Bounded memory: --tasks (default 5000) one-VM imports created and deleted in rounds of --wave (100).
  { name: 'soak', file: 'bench/soak.ts', flags: [...common, ...pass('tasks', 'wave')] },
  // Downtime of the same VM imported cold and warm at the same simulated disk speed, side by side.
  { name: 'downtime', file: 'bench/downtime.ts', flags: [...common, ...pass('repeats')] },
  // Pure CPU, no control plane: the informer store's lists, side by side with main's (or --baseline's).
  // A real cluster's shape: 500 CRDs installed, 429s from API Priority and Fairness, watches told "too
  // large resource version"; side by side with --baseline (default f63458f).
  { name: 'cluster', file: 'bench/cluster.ts', flags: [...common, ...pass('baseline', 'crds', 'repeats', 'tasks', 'server-qps', 'fault-seconds')] },
  { name: 'cache-index', file: 'bench/cache-index.ts', flags: [...(quick ? ['--quick', '--sizes', '50,200', '--rounds', '1'] : []), ...pass('baseline')] },
  // Pure CPU, no control plane: a 200-VM, 3-tenant campaign through the transfer budget, simulated.
  { name: 'campaign', file: 'bench/campaign.ts', flags: [...(quick ? ['--quick'] : []), ...pass('seed')] },
];
// The admission webhook's benchmark (its own file, its own flags through the environment).
if (existsSync(join(REPO_ROOT, 'bench/webhook.ts'))) {
  all.push({ name: 'webhook', file: 'bench/webhook.ts', flags: [...(quick ? ['--quick'] : []), ...pass('baseline')], env: quick ? { BENCH_SECONDS: '2', BENCH_RATES: '50' } : {} });
}

const only = flags.get('only')?.split(',');
const chosen = only ? all.filter((b) => only.includes(b.name)) : all;
if (only && chosen.length !== only.length) {
  console.error(`unknown benchmark in --only; known: ${all.map((b) => b.name).join(', ')}`);
  process.exit(2);
}

const parallel = flags.has('parallel');
// `--parallel` alone: every benchmark at once; `--parallel 3`: at most three at a time.
const maxAtOnce = parallel && /^\d+$/.test(flags.get('parallel')!) ? Math.max(1, Number(flags.get('parallel'))) : Infinity;
const failed: string[] = [];
const running = new Set<ChildProcess>();
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    // Each benchmark stops its own control plane on these signals (test/e2e/env/controlplane.ts).
    for (const c of running) c.kill(sig);
  });
}

/** Runs one benchmark to its end; in parallel mode its output is collected and printed whole at the end. */
async function runBench(b: Bench): Promise<void> {
  const head = `#### ${b.name}: node ${b.file} ${b.flags.join(' ')}`;
  if (!parallel) console.log(`\n${head}`);
  const t0 = Date.now();
  const out: Buffer[] = [];
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, b.file), ...b.flags], { stdio: parallel ? ['ignore', 'pipe', 'pipe'] : 'inherit', env: { ...process.env, ...b.env }, cwd: REPO_ROOT });
    running.add(child);
    child.stdout?.on('data', (c: Buffer) => out.push(c));
    child.stderr?.on('data', (c: Buffer) => out.push(c));
    child.on('close', (c, sig) => {
      running.delete(child);
      resolve(c ?? (sig ? 1 : 0));
    });
  });
  const tail = `#### ${b.name}: ${code === 0 ? 'done' : `FAILED (exit ${code})`} in ${Math.round((Date.now() - t0) / 1000)} s`;
  if (parallel) process.stdout.write(`\n${head}\n${Buffer.concat(out).toString('utf8')}${tail}\n`);
  else console.log(tail);
  if (code !== 0) failed.push(b.name);
}

// In parallel mode the webhook benchmark still runs alone, after the others: it answers reviews against
// deadlines (the server ends a request after 15 s), and with four other benchmarks booting control planes
// beside it on a loaded machine, 3 of its 100 quick reviews were reset.
const alone = (b: Bench): boolean => b.name === 'webhook';
if (parallel) {
  const queue = chosen.filter((b) => !alone(b));
  const lane = async (): Promise<void> => {
    for (let b = queue.shift(); b; b = queue.shift()) await runBench(b);
  };
  await Promise.all(Array.from({ length: Math.min(maxAtOnce, queue.length) }, lane));
  for (const b of chosen.filter(alone)) await runBench(b);
} else for (const b of chosen) await runBench(b);
if (failed.length) {
  console.error(`\nbenchmarks that failed to run: ${failed.join(', ')}`);
  process.exit(1);
}
console.log(`\nresults in ${RESULTS_DIR}`);
