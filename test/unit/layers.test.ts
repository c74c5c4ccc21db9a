// The layering of src/: the lower layers import nothing above them. src/api/ (our kinds, labels,
// conditions) imports only itself; src/runtime/ (client, informers, queue, manager) imports itself,
// src/api/ and the two leaf telemetry modules (logger, metrics). Whatever wires the process together
// (controllers, webhook, credentials, config) lives above, in src/app.ts. Imports are read by TypeScript's
// own pre-processor, so dynamic imports and re-exports count too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [p] : [];
  });
}

/** Every relative import of a file, as a path under src/ (`runtime/kube.ts`). */
export function srcImports(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles.map((f) => f.fileName).filter((n) => n.startsWith('.')).map((n) => relative(SRC, resolve(dirname(file), n)));
}

const ALLOWED: Record<string, (target: string) => boolean> = {
  api: (t) => t.startsWith('api/'),
  runtime: (t) => t.startsWith('runtime/') || t.startsWith('api/') || t === 'telemetry/logger.ts' || t === 'telemetry/metrics.ts',
};

for (const [layer, allowed] of Object.entries(ALLOWED)) {
  test(`src/${layer}/ imports nothing above it`, () => {
    const files = sources(join(SRC, layer));
    assert.ok(files.length > 0, `no sources found under src/${layer}`);
    const bad = files.flatMap((f) => srcImports(f).filter((t) => !allowed(t)).map((t) => `${relative(SRC, f)} → ${t}`));
    assert.deepEqual(bad, []);
  });
}

test('the leaf telemetry modules the runtime may use import nothing of src/', () => {
  for (const f of ['telemetry/logger.ts', 'telemetry/metrics.ts']) assert.deepEqual(srcImports(join(SRC, f)), [], f);
});

test('the import reader sees static, type-only, re-exported and dynamic imports (so the layer checks cannot pass by not reading)', () => {
  const probe = srcImports(join(SRC, 'app.ts'));
  assert.ok(probe.includes('controllers/index.ts'), 'app.ts wires the controllers');
  assert.ok(probe.includes('runtime/reconciler.ts'), 'a type-only import is read');
  const info = ts.preProcessFile("export { a } from './x.ts';\nconst m = await import('./y.ts');\nimport type { T } from './z.ts';", true, true);
  assert.deepEqual(info.importedFiles.map((f) => f.fileName).sort(), ['./x.ts', './y.ts', './z.ts']);
});
