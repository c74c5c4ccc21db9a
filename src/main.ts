// CLI entry: `node src/main.ts --kubeconfig ~/.kube/config` (or in-cluster with no flags); the image runs
// dist/main.js. It imports nothing but node: modules and the version check, so an unsupported runtime is
// refused with a clear message before any library (which may not even load there) is evaluated.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runtimeProblem } from './node-version.ts';

/**
 * Whether this module is the process's entry point. `import.meta.main` (Node.js >= 24.2) is undefined on
 * older runtimes; the argv comparison answers there too, so an old runtime is refused below instead of
 * exiting 0 having done nothing.
 */
function isEntryPoint(): boolean {
  const meta = import.meta as ImportMeta & { main?: boolean };
  if (typeof meta.main === 'boolean') return meta.main;
  const argv1 = process.argv[1];
  if (!argv1) return false;
  try {
    return realpathSync(argv1) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  const problem = runtimeProblem(process.version);
  if (problem) {
    console.error(JSON.stringify({ level: 'fatal', msg: problem }));
    process.exit(1);
  }
  import('./cli.ts')
    .then((cli) => cli.main())
    .catch((e: Error) => {
      console.error(JSON.stringify({ level: 'fatal', msg: 'controller failed to start', err: e.message }));
      process.exit(1);
    });
}
