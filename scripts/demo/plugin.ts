// `kubectl vmimport` from this checkout: a folder holding `kubectl-vmimport` (and the completion helper
// kubectl 1.26+ looks for, `kubectl_complete-vmimport`), each running on this Node.js the one-file bundle
// of src/plugin/main.ts that the single executable (scripts/build-plugin.ts) carries: the same esbuild
// build, so what the demo and the e2e tests run is what that file runs. Put the folder first on PATH and
// kubectl finds the plugin as it finds an installed one.
//
// A bundle, not src/plugin/main.ts itself: run from its sources, every command that talks to the API
// server loads @kubernetes/client-node's ~1,100 modules one by one (about 2 CPU s a command); the bundle
// is one file, parsed once (about 0.5 CPU s).
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSync, type BuildOptions } from 'esbuild';
import { REPO_ROOT } from './tools.ts';

/** The bundle's file name inside the folder. */
export const PLUGIN_BUNDLE = 'kubectl-vmimport.cjs';

/**
 * esbuild's options for the plugin's bundle: src/plugin/main.ts and every module it loads, its npm
 * dependencies included, as one CommonJS script that needs nothing but Node.js's own modules (what a
 * single executable application's main script may load).
 */
export function pluginBundleOptions(outfile: string): BuildOptions {
  return {
    entryPoints: [join(REPO_ROOT, 'src/plugin/main.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    logLevel: 'error',
    // Licences of the bundled packages stay with them: kept as comments at the end.
    legalComments: 'eof',
  };
}

/** A word quoted for sh: inside single quotes, each single quote closed, escaped and reopened. */
export function shQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** Bundles the plugin into `dir` (created if missing), writes the two executables beside it, returns `dir`. */
export function installPluginShims(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const bundle = join(dir, PLUGIN_BUNDLE);
  buildSync(pluginBundleOptions(bundle));
  const shim = (extra: string): string => `#!/bin/sh\nexec ${shQuote(process.execPath)} ${shQuote(bundle)}${extra} "$@"\n`;
  writeFileSync(join(dir, 'kubectl-vmimport'), shim(''));
  writeFileSync(join(dir, 'kubectl_complete-vmimport'), shim(' __complete'));
  for (const f of ['kubectl-vmimport', 'kubectl_complete-vmimport']) chmodSync(join(dir, f), 0o755);
  return dir;
}
