// How `npm run test:e2e` hands the e2e files to its lanes (test/e2e/run.ts). Pure.

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
 * The files still to run, handed to lanes as they free up (a plan dealt in advance ran short: the lane
 * without a plane finished its files at 690 s of a 1,290 s run and then sat empty). Lane 0 takes the Forklift
 * reinstallers first. After them, a lane with a plane takes the longest file that needs one, else the
 * longest that starts its own planes; a lane without a plane takes the longest that starts its own, else
 * nothing, and must then get a plane to take the rest. `seconds` is keyed by `key(file)`; a file never
 * measured counts as the median of those that were.
 */
export class FileQueue {
  private readonly first: string[];
  private readonly rest: string[];
  private readonly ownPlanes: (f: string) => boolean;

  constructor(files: string[], seconds: Record<string, number>, key: (f: string) => string = (f) => f, ownPlanes: (f: string) => boolean = () => false) {
    const known = Object.values(seconds).sort((a, b) => a - b);
    const median = known.length ? known[Math.floor(known.length / 2)]! : 1;
    const cost = (f: string): number => seconds[key(f)] ?? median;
    this.first = files.filter(reinstallsForklift);
    this.rest = files.filter((f) => !reinstallsForklift(f)).sort((a, b) => cost(b) - cost(a) || a.localeCompare(b));
    this.ownPlanes = ownPlanes;
  }

  /** The next file for `lane`, or undefined when none is left that it may run. */
  next(lane: number, hasPlane: boolean): string | undefined {
    if (lane === 0 && hasPlane && this.first.length) return this.first.shift();
    const take = (want: (f: string) => boolean): string | undefined => {
      const i = this.rest.findIndex(want);
      return i < 0 ? undefined : this.rest.splice(i, 1)[0];
    };
    if (!hasPlane) return take(this.ownPlanes);
    return take((f) => !this.ownPlanes(f)) ?? take(this.ownPlanes);
  }

  /** True while a file is left that needs a plane (a lane without one would have to start one). */
  get needsPlane(): boolean {
    return this.first.length > 0 || this.rest.some((f) => !this.ownPlanes(f));
  }

  get size(): number {
    return this.first.length + this.rest.length;
  }
}
