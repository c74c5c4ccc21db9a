// CPU accounting of e2e processes from /proc (Linux): what the runner reports per file and per plane.
// CPU seconds, unlike wall time, barely move when other work shares the machine, so they are the figure
// the suite's cost is judged by. Pure reads; off Linux every figure is undefined.
import { readFileSync, readdirSync } from 'node:fs';

// USER_HZ: the unit of /proc/<pid>/stat's times, 100 on every mainstream Linux.
const TICKS_PER_SECOND = 100;

export interface ProcCpu {
  /** utime + stime of the process itself. */
  self: number;
  /** cutime + cstime: every descendant it has reaped (waited for), recursively. */
  reaped: number;
  pgrp: number;
}

/** CPU seconds of one process (fields 14–17 of /proc/<pid>/stat), or undefined once it is gone. */
export function procCpu(pid: number | 'self'): ProcCpu | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const n = (i: number): number => Number(f[i]) / TICKS_PER_SECOND;
    return { pgrp: Number(f[2]), self: n(11) + n(12), reaped: n(13) + n(14) };
  } catch {
    return undefined;
  }
}

/** Every live process of a process group with its CPU (a scan of /proc). */
export function groupCpu(pgrp: number): Map<number, ProcCpu> {
  const out = new Map<number, ProcCpu>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return out;
  }
  for (const p of pids) {
    const c = procCpu(Number(p));
    if (c && c.pgrp === pgrp) out.set(Number(p), c);
  }
  return out;
}
