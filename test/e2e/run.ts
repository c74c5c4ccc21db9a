// `npm run test:e2e`: one control plane for the whole e2e run, shared by every test file.
// Starts it, runs `node --test` over test/e2e/**/*.test.ts with MC_TESTENV naming its descriptor, stops
// it on success, failure and interrupt, and fails the run if any component process outlived it.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeClient } from '../../src/runtime/kube.ts';
import { ControlPlane } from './env/controlplane.ts';
import { REPO_ROOT, adminKubeConfig, installOurCRDs } from './env/index.ts';
import { alive, installStandInCRDs } from './fixtures.ts';

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...findTests(p));
    else if (e.name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

// The files that remove Forklift's CRDs and install them again ("absent or late Forklift") run first:
// the garbage collector learns of the reinstalled kinds only at its next discovery resync (~30 s), which
// then passes while the other files run instead of stalling the first deletion of a file right after.
const FORKLIFT_REINSTALLERS = ['sim-late-forklift.test.ts', 'source-forklift-late.test.ts'];
const reinstallsForklift = (f: string): boolean => FORKLIFT_REINSTALLERS.some((n) => f.endsWith(`/${n}`));

const filter = process.argv.slice(2);
const found = findTests(join(REPO_ROOT, 'test/e2e'));
const files = filter.length ? filter : [...found.filter(reinstallsForklift), ...found.filter((f) => !reinstallsForklift(f))];

const cp = await ControlPlane.start();
const descriptor = join(cp.info.dir, 'testenv.json');
writeFileSync(descriptor, JSON.stringify(cp.info, null, 2));
process.env.MC_TESTENV = descriptor;

let code = 1;
try {
  // Every CRD a file uses, installed once before the first file: kube-controller-manager's garbage
  // collector learns of a new kind only at its discovery resync (~30 s), so a kind installed by a file
  // made that file's first Orphan/Background deletion of it wait up to 30 s. Files still install what
  // they need (idempotent), so each also runs on its own.
  await installOurCRDs();
  const admin = new KubeClient(await adminKubeConfig());
  try {
    await installStandInCRDs(admin);
  } finally {
    admin.close();
  }
  code = await new Promise<number>((resolve) => {
    const child = spawn(
      process.execPath,
      ['--test', '--test-reporter=spec', '--test-concurrency=1', `--test-timeout=${10 * 60_000}`, ...files],
      { stdio: 'inherit', env: process.env },
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
