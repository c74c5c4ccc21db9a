// Preloaded (`--import`) into each e2e file's process by test/e2e/run.ts: when the process exits, it
// writes its own CPU seconds and those of every process it reaped (the controllers a crash test starts,
// kubectl, helm…) to the file named by MC_E2E_CPU_REPORT, which the runner adds to the file's figure.
// A process ended by a signal writes nothing; the runner then counts what it can still see of it.
import { writeFileSync } from 'node:fs';
import { procCpu } from './cpu.ts';

const target = process.env.MC_E2E_CPU_REPORT;
if (target) {
  process.once('exit', () => {
    const c = procCpu('self');
    if (c) writeFileSync(target, JSON.stringify({ self: c.self, reaped: c.reaped }));
  });
}
