import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runtimeProblem } from './node-version.ts';

test('a runtime without import.meta.main (Node.js < 24.2) is refused with a message naming the version needed', () => {
  for (const v of ['v20.19.0', 'v22.18.0', 'v24.0.0', 'v24.1.9']) {
    const p = runtimeProblem(v);
    assert.ok(p, `${v} refused`);
    assert.match(p, /too old/);
    assert.match(p, /24\.2/);
  }
});

test('Node.js 24.2 and later 24.x serve the controller; 25 and unparseable versions are refused', () => {
  for (const v of ['v24.2.0', 'v24.21.0', '24.11.1']) assert.equal(runtimeProblem(v), undefined, v);
  assert.match(runtimeProblem('v25.0.0')!, /not supported/);
  assert.match(runtimeProblem('nonsense')!, /cannot parse/);
});

test('the entry point, started on a supported runtime, reaches its own flag parsing (exit 2 on a bad flag, not 0)', () => {
  const main = fileURLToPath(new URL('./main.ts', import.meta.url));
  const r = spawnSync(process.execPath, [main, '--no-such-flag=1'], { encoding: 'utf8', env: { ...process.env, KUBERNETES_SERVICE_HOST: '' } });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /unknown flag --no-such-flag/);
});

test('the entry point on a runtime reporting Node.js 22 exits 1 with a fatal message instead of exiting 0 having done nothing', () => {
  const main = fileURLToPath(new URL('./main.ts', import.meta.url));
  // Preloaded before main.ts: the process reports an older version (the check reads process.version).
  const fake = "data:text/javascript,Object.defineProperty(process,'version',{value:'v22.12.0'})";
  const r = spawnSync(process.execPath, ['--import', fake, main, '--kubeconfig', '/nonexistent'], { encoding: 'utf8' });
  assert.equal(r.status, 1, r.stderr);
  const line = JSON.parse(r.stderr.trim().split('\n').pop()!) as { level: string; msg: string };
  assert.equal(line.level, 'fatal');
  assert.match(line.msg, /v22\.12\.0 is too old.*24\.2/);
});
