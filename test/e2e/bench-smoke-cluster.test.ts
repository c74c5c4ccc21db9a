// The benchmark smoke run (bench-smoke.ts), its cluster-shape part (bench/cluster.ts): CRDs installed,
// 429s from API Priority and Fairness, watches told "too large resource version" — each for the current
// code and the baseline commit side by side.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { benchSmoke } from './bench-smoke.ts';

const bench = benchSmoke(['cluster'], [
  // The smallest form that still runs every scenario on both sides: 10 CRDs (--quick installs 50, each
  // scenario's figures are the same code either way), 4 one-VM imports under 429s, a 5 s restore fault.
  '--crds', '10', '--tasks', '4', '--fault-seconds', '5',
]);

type Sides = Record<'current' | 'baseline', Record<string, unknown> | undefined>;

test('a controller starts up to /readyz with and without CRDs installed, the current code and the baseline side by side', () => {
  const f = bench.figures<{ crds: number; withoutCRDs: Sides; withCRDs: Sides }>('cluster-crds');
  assert.equal(f.crds, 10);
  for (const runs of [f.withoutCRDs, f.withCRDs]) for (const side of ['current', 'baseline'] as const) assert.ok(Number(runs[side]?.readyMsMedian) > 0, JSON.stringify(runs));
});

test('one-VM imports under 429s all end without failing, for the current code and the baseline', () => {
  const f = bench.figures<Sides>('cluster-apf429');
  for (const side of ['current', 'baseline'] as const) {
    const s = f[side] as { tasks: number; ended: number; failed: number; answered429: number };
    assert.equal(s.ended, s.tasks, JSON.stringify(s));
    assert.equal(s.failed, 0, JSON.stringify(s));
    assert.ok(s.answered429 > 0, `the proxy shed requests with 429: ${JSON.stringify(s)}`);
  }
});

test('a task created while watches are told "too large resource version" gets a status and ends, for the current code and the baseline', () => {
  const f = bench.figures<Sides>('cluster-toolarge');
  for (const side of ['current', 'baseline'] as const) {
    const s = f[side] as { blindSeconds: number; ended: number };
    assert.ok(s.blindSeconds >= 0, JSON.stringify(s));
    assert.equal(s.ended, 1, JSON.stringify(s));
  }
});
