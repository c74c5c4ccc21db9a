// `kubectl vmimport` from this checkout: a folder holding `kubectl-vmimport` (and the completion helper
// kubectl 1.26+ looks for, `kubectl_complete-vmimport`), each running src/plugin/main.ts on this Node.js.
// Put the folder first on PATH and kubectl finds the plugin as it finds an installed one. The demo and
// the e2e tests run the plugin this way; an installed package gets the same command from its npm `bin`.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './tools.ts';

/** A word quoted for sh: inside single quotes, each single quote closed, escaped and reopened. */
export function shQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** Writes the two executables into `dir` (created if missing) and returns `dir`. */
export function installPluginShims(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const main = join(REPO_ROOT, 'src/plugin/main.ts');
  const shim = (extra: string): string => `#!/bin/sh\nexec ${shQuote(process.execPath)} ${shQuote(main)}${extra} "$@"\n`;
  writeFileSync(join(dir, 'kubectl-vmimport'), shim(''));
  writeFileSync(join(dir, 'kubectl_complete-vmimport'), shim(' __complete'));
  for (const f of ['kubectl-vmimport', 'kubectl_complete-vmimport']) chmodSync(join(dir, f), 0o755);
  return dir;
}
