// A memory cgroup for the controller's process, so a benchmark can run it under the limit its pod has
// (the chart's `resources.limits.memory`). Node sizes its heap from the cgroup's limit
// (`process.constrainedMemory()`: 512 MiB gives a 259 MiB heap limit, against 4 GiB unconstrained here),
// so RSS measured without the limit describes a process the pod never runs. Needs root and a writable
// cgroup file system (v1 `memory` controller or v2 with `memory` enabled); without either it says why.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface MemoryCgroup {
  /** The file a process writes its pid to, to join the group. */
  readonly procsFile: string;
  readonly limitMiB: number;
  /** Times the kernel's OOM killer acted in the group. */
  oomKills(): number;
  /** The group's peak memory charge (RSS and page cache of its processes), MiB. */
  peakMiB(): number;
  remove(): void;
}

const ROOT = '/sys/fs/cgroup';

export function memoryCgroup(name: string, limitMiB: number): MemoryCgroup {
  const bytes = limitMiB * 2 ** 20;
  const read = (p: string): string => {
    try {
      return readFileSync(p, 'utf8');
    } catch {
      return '';
    }
  };
  if (existsSync(join(ROOT, 'memory', 'memory.limit_in_bytes'))) {
    const dir = join(ROOT, 'memory', name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'memory.limit_in_bytes'), String(bytes));
    return {
      procsFile: join(dir, 'cgroup.procs'),
      limitMiB,
      // v1 counts OOM kills in memory.oom_control (`oom_kill N`, kernels ≥ 4.13).
      oomKills: () => Number(/^oom_kill (\d+)/m.exec(read(join(dir, 'memory.oom_control')))?.[1] ?? 0),
      peakMiB: () => Number(read(join(dir, 'memory.max_usage_in_bytes')) || 0) / 2 ** 20,
      remove: () => rmdirSync(dir),
    };
  }
  if (read(join(ROOT, 'cgroup.controllers')).split(/\s+/).includes('memory')) {
    const dir = join(ROOT, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'memory.max'), String(bytes));
    return {
      procsFile: join(dir, 'cgroup.procs'),
      limitMiB,
      oomKills: () => Number(/^oom_kill (\d+)/m.exec(read(join(dir, 'memory.events')))?.[1] ?? 0),
      // memory.peak exists from Linux 5.19.
      peakMiB: () => Number(read(join(dir, 'memory.peak')) || 0) / 2 ** 20,
      remove: () => rmdirSync(dir),
    };
  }
  throw new Error(`no writable memory cgroup under ${ROOT} (a memory limit needs root and the cgroup memory controller)`);
}
