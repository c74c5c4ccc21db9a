// `npm run test:unit`: the unit tests (src/**/*.test.ts, test/unit/**/*.test.ts) in three shards run side
// by side, each shard's files one after another in one Node.js process (`--test-isolation=none`). A process
// per file, as `node --test` runs them by default, loads the TypeScript sources and their dependencies
// again for each of ~75 files: ~125 CPU s for the whole set, against ~52 CPU s in three processes.
// `--test-force-exit`: a handle a test leaves open cannot keep its shard from ending. Each shard's output
// is printed whole when it ends; the run fails if any shard fails.
//
//   node scripts/test-unit.ts                  # every unit test
//   node scripts/test-unit.ts --shards 1       # in one process
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { shards: { type: 'string', default: '3' } } });
// Three: the machine this runs on has two cores and shares them with the e2e suite, so more processes
// only load the same modules more often; fewer leaves a core idle while one shard is starved.
const shards = Math.max(1, Number(values.shards));
const PATTERNS = ['src/**/*.test.ts', 'test/unit/**/*.test.ts'];

function runShard(i: number): Promise<number> {
  return new Promise((resolve) => {
    const args = ['--test', '--test-isolation=none', '--test-force-exit', '--test-reporter=spec', ...(shards > 1 ? [`--test-shard=${i}/${shards}`] : []), ...PATTERNS];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => out.push(c));
    child.on('close', (code, sig) => {
      const rc = code ?? (sig ? 1 : 0);
      process.stdout.write(`\n── unit shard ${i}/${shards}: ${rc === 0 ? 'passed' : `FAILED (exit ${rc})`}\n${Buffer.concat(out).toString('utf8')}`);
      resolve(rc);
    });
  });
}

const codes = await Promise.all(Array.from({ length: shards }, (_, i) => runShard(i + 1)));
process.exit(codes.some((c) => c !== 0) ? 1 : 0);
