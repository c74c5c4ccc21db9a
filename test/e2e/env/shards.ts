// How `npm run test:e2e` deals the e2e files to its control planes (test/e2e/run.ts). Pure.

// The files that remove Forklift's CRDs and install them again ("absent or late Forklift") run first,
// together on the first plane: the garbage collector learns of the reinstalled kinds only at its next
// discovery resync (~30 s), which then passes while the other files run instead of stalling the first
// deletion of a file right after.
export const FORKLIFT_REINSTALLERS = ['sim-late-forklift.test.ts', 'source-forklift-late.test.ts'];
export const reinstallsForklift = (f: string): boolean => FORKLIFT_REINSTALLERS.some((n) => f === n || f.endsWith(`/${n}`));

/**
 * Deals `files` to `n` shards: the Forklift reinstallers first on shard 0 (in the given order), then the
 * rest longest first, each onto the shard with the least total so far (longest-processing-time-first).
 * `seconds` is keyed by `key(file)`; a file never measured counts as the median of those that were.
 */
export function planShards(files: string[], n: number, seconds: Record<string, number>, key: (f: string) => string = (f) => f): string[][] {
  const known = Object.values(seconds).sort((a, b) => a - b);
  // Without any measurement every file weighs the same.
  const median = known.length ? known[Math.floor(known.length / 2)]! : 1;
  const cost = (f: string): number => seconds[key(f)] ?? median;
  const shards: string[][] = Array.from({ length: Math.max(1, n) }, () => []);
  const load = shards.map(() => 0);
  for (const f of files.filter(reinstallsForklift)) {
    shards[0]!.push(f);
    load[0]! += cost(f);
  }
  const rest = files.filter((f) => !reinstallsForklift(f)).sort((a, b) => cost(b) - cost(a) || a.localeCompare(b));
  for (const f of rest) {
    const i = load.indexOf(Math.min(...load));
    shards[i]!.push(f);
    load[i]! += cost(f);
  }
  return shards;
}
