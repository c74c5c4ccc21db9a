// How `npm run test:e2e` deals the e2e files to its control planes (test/e2e/run.ts). Pure.

// The files that remove Forklift's CRDs and install them again ("absent or late Forklift") run first,
// together on the first plane: the garbage collector learns of the reinstalled kinds only at its next
// discovery resync (~30 s), which then passes while the other files run instead of stalling the first
// deletion of a file right after.
export const FORKLIFT_REINSTALLERS = ['sim-late-forklift.test.ts', 'source-forklift-late.test.ts'];
export const reinstallsForklift = (f: string): boolean => FORKLIFT_REINSTALLERS.some((n) => f === n || f.endsWith(`/${n}`));

// The files that start every control plane they use and never touch the shared one: the demo and two of
// the benchmark smoke runs (each starts planes of its own, as a newcomer's or a benchmark's does; the
// third runs the webhook's benchmark on the shared plane), the chart installs, and the tests that restart
// kube-apiserver or need API-server flags of their own. They run in a lane without a plane: while one of
// them ran on a shard, that shard's plane sat idle for its whole length (~0.05 CPU s a second; the four
// longest of them held planes idle for 1,100 s of a run). The runner gives them no shared plane to reach
// (MC_TESTENV=none), so a file wrongly listed here fails.
export const OWN_PLANE_FILES = [
  'bench-smoke-cluster.test.ts',
  'bench-smoke-scale.test.ts',
  'chart-coexistence.test.ts',
  'chart-image.test.ts',
  'chart-install.test.ts',
  'demo.test.ts',
  'private-plane.test.ts',
  'runtime-discovery.test.ts',
  'runtime-fencing.test.ts',
  'security-webhook-client-cert.test.ts',
  'sim-apiserver-restart-writes.test.ts',
  'sim-apiserver-restart.test.ts',
];
export const startsOwnPlanes = (f: string): boolean => OWN_PLANE_FILES.some((n) => f === n || f.endsWith(`/${n}`));

/**
 * Deals `files` to `n` shards with a control plane each and then `withoutPlane` lanes without one: the
 * Forklift reinstallers first on shard 0 (in the given order), then the rest longest first, each onto the
 * least loaded lane it may run in (longest-processing-time-first; on a tie, a file that starts its own
 * planes takes a lane without a plane). A file that needs the shared plane
 * goes to a shard; a file that starts its own planes (`ownPlanes`) to any lane. The result holds the `n`
 * shards first, then the lanes without a plane. `seconds` is keyed by `key(file)`; a file never measured
 * counts as the median of those that were.
 */
export function planShards(
  files: string[],
  n: number,
  seconds: Record<string, number>,
  key: (f: string) => string = (f) => f,
  o: { withoutPlane?: number; ownPlanes?: (f: string) => boolean } = {},
): string[][] {
  const known = Object.values(seconds).sort((a, b) => a - b);
  // Without any measurement every file weighs the same.
  const median = known.length ? known[Math.floor(known.length / 2)]! : 1;
  const cost = (f: string): number => seconds[key(f)] ?? median;
  const planes = Math.max(1, n);
  const shards: string[][] = Array.from({ length: planes + Math.max(0, o.withoutPlane ?? 0) }, () => []);
  const load = shards.map(() => 0);
  const ownPlanes = o.ownPlanes ?? ((): boolean => false);
  for (const f of files.filter(reinstallsForklift)) {
    shards[0]!.push(f);
    load[0]! += cost(f);
  }
  const rest = files.filter((f) => !reinstallsForklift(f)).sort((a, b) => cost(b) - cost(a) || a.localeCompare(b));
  for (const f of rest) {
    // A file that starts its own planes looks from the last lane back, so that on a tie it takes a lane
    // without a plane and leaves the planes to the files that need them.
    const own = ownPlanes(f);
    const order = own ? [...load.keys()].reverse() : [...Array(planes).keys()];
    let i = order[0]!;
    for (const j of order) if (load[j]! < load[i]!) i = j;
    shards[i]!.push(f);
    load[i]! += cost(f);
  }
  return shards;
}
