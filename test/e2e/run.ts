// `npm run test:e2e`: one control plane for the whole e2e run, shared by every test file.
// Starts it, runs `node --test` over test/e2e/**/*.test.ts with MC_TESTENV naming its descriptor, stops
// it on success, failure and interrupt, and fails the run if any component process outlived it.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ControlPlane } from './env/controlplane.ts';
import { REPO_ROOT } from './env/index.ts';

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...findTests(p));
    else if (e.name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const filter = process.argv.slice(2);
const files = filter.length ? filter : findTests(join(REPO_ROOT, 'test/e2e'));

const cp = await ControlPlane.start();
const descriptor = join(cp.info.dir, 'testenv.json');
writeFileSync(descriptor, JSON.stringify(cp.info, null, 2));

let code = 1;
try {
  code = await new Promise<number>((resolve) => {
    const child = spawn(
      process.execPath,
      ['--test', '--test-reporter=spec', '--test-concurrency=1', `--test-timeout=${10 * 60_000}`, ...files],
      { stdio: 'inherit', env: { ...process.env, MC_TESTENV: descriptor } },
    );
    const forward = (sig: NodeJS.Signals): void => {
      child.kill(sig);
    };
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    child.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0)));
  });
} finally {
  await cp.stop({ keepDir: code !== 0 });
}

const survivors = Object.entries(cp.info.pids).filter(([, pid]) => alive(pid));
if (survivors.length) {
  console.error(`[testenv] processes outlived the run: ${survivors.map(([n, p]) => `${n}(${p})`).join(', ')}`);
  code = code || 1;
} else {
  console.error('[testenv] every etcd/kube-* process of this run has exited');
}
if (code !== 0 && existsSync(cp.info.logsDir)) console.error(`[testenv] component logs: ${cp.info.logsDir}`);
process.exit(code);
