// The benchmark smoke run (bench-smoke.ts), its import-sized part: start-up and idle, request counts,
// handoff latency, and the admission webhook's load (alone, after the others).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IdleFigures, StartupFigures } from '../../bench/startup.ts';
import type { RequestsFigures } from '../../bench/requests.ts';
import type { LatencyFigures } from '../../bench/latency.ts';
import { benchSmoke } from './bench-smoke.ts';

const bench = benchSmoke(['startup', 'requests', 'latency', 'webhook'], ['--objects', '10', '--namespaces', '2', '--idle-seconds', '1', '--poll-interval-ms', '1000']);

test('an idle controller holding finished tasks makes no API requests once settled, and starts up to /readyz', () => {
  const idle = bench.figures<IdleFigures>('idle');
  assert.ok(idle.requestsToSettle > 0, 'the start-up lists and watches are seen in the audit log');
  assert.equal(idle.requestsInWindow, 0, JSON.stringify(idle.byVerbResource));
  const st = bench.figures<StartupFigures>('startup');
  assert.equal(st.readyMs.length, 1);
  assert.ok(st.readyMsMedian > 0 && st.rssAtReadyMiBMedian > 0);
});

test('the requests of connecting a source and importing a 1-disk and a 4-disk VM are counted, reads and writes apart', () => {
  const f = bench.figures<RequestsFigures>('requests');
  assert.ok(f.sourceConnect.writes > 0);
  assert.deepEqual(f.imports.map((i) => i.disks), [1, 4]);
  for (const i of f.imports) {
    const r = i.runs[0]!;
    assert.equal(r.reads + r.writes, r.total);
    assert.equal(Object.values(r.byVerbResource).reduce((a, b) => a + b, 0), r.total);
    assert.ok((r.byVerbResource['create vminstances'] ?? 0) >= 1, `an import creates its VMInstance: ${JSON.stringify(r.byVerbResource)}`);
  }
});

test('handoff latency is measured for the watching controller and the poll-only baseline side by side', () => {
  const f = bench.figures<LatencyFigures>('latency');
  for (const m of [f.watch, f.pollOnly]) {
    assert.equal(m.oneDisk.length, 1);
    assert.equal(m.fourDisk.length, 1);
    assert.ok(m.oneDiskMedianMs >= 0 && m.fourDiskMedianMs >= 0, JSON.stringify(m));
  }
  assert.ok(Number.isFinite(f.ratioOneDisk) && Number.isFinite(f.ratioFourDisk));
});

test('the admission webhook answers every review of its benchmark', () => {
  const f = bench.result<{ results: Array<{ current: { sent: number; ok: number; errorReasons: Record<string, number>; inventoryCallsPerReview: number } }> }>('webhook');
  assert.ok(f.results.length >= 1);
  for (const { current: r } of f.results) {
    assert.ok(r.sent > 0);
    assert.equal(r.ok, r.sent, JSON.stringify(r.errorReasons));
    assert.ok(r.inventoryCallsPerReview >= 0);
  }
});
