// `npm test`: lint, unit tests and the e2e suite started side by side, each as the npm script of the same
// name. The e2e suite spends its first seconds starting control planes and much of its time waiting on
// the simulated engine and kube-controller-manager's periodic passes; lint and unit tests are pure CPU, so
// running them in those gaps takes minutes off the whole run instead of adding theirs to it. The e2e
// runner's output goes straight through (it prints each file whole as it ends, and a heartbeat); lint's
// and the unit tests' are printed whole when they end. The run fails if any part fails, and prints each
// part's wall time and the CPU time of the whole run (this process's children, every component process
// they reaped included). Arguments go to the e2e runner: `npm test -- --write-durations`.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { resourceUsage } from 'node:process';
import { fileURLToPath } from 'node:url';

const PARTS = ['lint', 'test:unit', 'test:e2e'] as const;
// V8's compile cache for every Node.js process of the run (ESLint, tsc, each unit test file, each e2e
// file and the controllers it starts): each loads its modules afresh, and with the cache a unit-test run
// takes ~28 CPU s instead of ~44. Keyed by each source's content, so an edited file is never served stale.
process.env.NODE_COMPILE_CACHE ??= join(dirname(fileURLToPath(import.meta.url)), '../node_modules/.cache/node-compile-cache');
const npm = 'npm';

const running = new Set<ChildProcess>();
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    for (const c of running) c.kill(sig);
  });
}

interface Result {
  part: string;
  code: number;
  seconds: number;
}

const e2eArgs = process.argv.slice(2);

function run(part: string): Promise<Result> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const args = ['run', '--silent', part, ...(part === 'test:e2e' && e2eArgs.length ? ['--', ...e2eArgs] : [])];
    const child = spawn(npm, args, { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    running.add(child);
    const out: Buffer[] = [];
    const live = part === 'test:e2e';
    child.stdout.on('data', (c: Buffer) => (live ? process.stdout.write(c) : out.push(c)));
    child.stderr.on('data', (c: Buffer) => (live ? process.stderr.write(c) : out.push(c)));
    child.on('close', (code, sig) => {
      running.delete(child);
      const r = { part, code: code ?? (sig ? 1 : 0), seconds: Math.round((Date.now() - t0) / 100) / 10 };
      process.stdout.write(`\n━━ npm run ${part}: ${r.code === 0 ? 'passed' : `FAILED (exit ${r.code})`} in ${r.seconds} s\n${Buffer.concat(out).toString('utf8')}`);
      resolve(r);
    });
  });
}

const t0 = Date.now();
const results = await Promise.all(PARTS.map(run));
const ru = resourceUsage();
// resourceUsage() covers this process only; the children's CPU comes from the kernel's accounting of
// reaped children (getrusage(RUSAGE_CHILDREN)), which Node does not expose: read it from /proc.
const cpu = childrenCpuSeconds();
console.log(`\n[test] ${results.map((r) => `${r.part} ${r.code === 0 ? 'passed' : 'FAILED'} in ${r.seconds} s`).join('; ')}`);
console.log(`[test] wall ${Math.round((Date.now() - t0) / 1000)} s${cpu === undefined ? '' : `, CPU ${Math.round(cpu + (ru.userCPUTime + ru.systemCPUTime) / 1e6)} s (user + system, every process of the run)`}`);
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);

/** cutime + cstime of this process (/proc/self/stat fields 16 and 17): CPU of every reaped descendant. */
function childrenCpuSeconds(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // USER_HZ is 100 on every mainstream Linux.
    return (Number(f[13]) + Number(f[14])) / 100;
  } catch {
    return undefined;
  }
}
