// npm run build:plugin — `kubectl-vmimport` as one executable file, through Node.js's single executable
// application support (Node.js's documentation, "Single executable applications"; the Node.js 24 way):
//   1. esbuild bundles src/plugin/main.ts and its dependencies into one CommonJS script (a SEA's main
//      script can load nothing but Node's built-in modules): the bundle the demo and the e2e tests run
//      (scripts/demo/plugin.ts, whose options this build uses);
//   2. `node --experimental-sea-config` turns the script into a blob;
//   3. a copy of this Node.js binary gets the blob injected with postject, at the fuse Node.js looks for.
// The result runs on machines of this one's OS and CPU architecture (the Node.js binary is theirs).
//
//   node scripts/build-plugin.ts [--out DIR]      # default dist/plugin-sea; prints the executable's path
import { execFileSync } from 'node:child_process';
import { copyFileSync, chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { inject } from 'postject';
import { PLUGIN_BUNDLE, pluginBundleOptions } from './demo/plugin.ts';
import { REPO_ROOT } from './demo/tools.ts';

/** The fuse Node.js's SEA loader searches its own binary for (the documented value for Node.js 18 and up). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

export async function buildPluginExecutable(outDir: string): Promise<string> {
  mkdirSync(outDir, { recursive: true });
  const bundle = join(outDir, PLUGIN_BUNDLE);
  await build(pluginBundleOptions(bundle));
  const blob = join(outDir, 'sea-prep.blob');
  const config = join(outDir, 'sea-config.json');
  writeFileSync(config, JSON.stringify({ main: bundle, output: blob, disableExperimentalSEAWarning: true }));
  execFileSync(process.execPath, ['--experimental-sea-config', config], { stdio: ['ignore', 'ignore', 'inherit'] });
  const exe = join(outDir, 'kubectl-vmimport');
  rmSync(exe, { force: true });
  copyFileSync(process.execPath, exe);
  chmodSync(exe, 0o755);
  await inject(exe, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: SEA_FUSE });
  rmSync(blob);
  rmSync(config);
  return exe;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  const exe = await buildPluginExecutable(resolve(values.out ?? join(REPO_ROOT, 'dist/plugin-sea')));
  process.stdout.write(`${exe}\n`);
}
