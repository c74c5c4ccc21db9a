// The package publishes the plugin as its npm `bin`: the compiled src/plugin/main.ts, built before packing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(import.meta.url), '../../..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin?: Record<string, string>; scripts?: Record<string, string> };
const build = JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8')) as { compilerOptions: { outDir: string; rootDir: string } };

test('the package\'s bin kubectl-vmimport is what the build compiles src/plugin/main.ts to, a script with a node shebang, built before packing', () => {
  const main = join(root, 'src/plugin/main.ts');
  const compiled = join(build.compilerOptions.outDir, relative(join(root, build.compilerOptions.rootDir), main)).replace(/\.ts$/, '.js');
  assert.equal(pkg.bin?.['kubectl-vmimport'], compiled);
  assert.match(readFileSync(main, 'utf8'), /^#!\/usr\/bin\/env node\n/);
  assert.equal(pkg.scripts?.prepack, 'npm run build');
  assert.match(pkg.scripts?.build ?? '', /tsconfig\.build\.json/);
});
