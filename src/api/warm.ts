// Warm-import rules shared by the admission webhook and the controller: what an RFC 3339 cutover time is,
// and when a task's cutover has started (after which spec.cutover is frozen). Pure; types only.
import type { VMImportTaskStatus } from './types.ts';

/**
 * RFC 3339 date-time (section 5.6): full date, `T`, full time with optional fraction, and a `Z` or
 * numeric offset. `Date.parse` alone accepts far more ("2026-12-01", "Dec 1 2026"), which would let a
 * tenant's typo become a cutover at a time they did not mean.
 */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-](\d{2}):(\d{2}))$/;

/** Milliseconds since the epoch of an RFC 3339 time, or undefined when `s` is not one. */
export function parseRFC3339(s: unknown): number | undefined {
  if (typeof s !== 'string') return undefined;
  const m = RFC3339.exec(s);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [number, number, number, number, number, number];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 60) return undefined;
  if (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return undefined;
  // A leap second (":60") is read as the next second, which Date.parse cannot do.
  const t = Date.parse(second === 60 ? s.replace(/:60(?=[.Zz+-])/, ':59') : s);
  return Number.isNaN(t) ? undefined : second === 60 ? t + 1000 : t;
}

/**
 * VM phases at or after the start of cutover: the source is being (or has been) powered off for the final
 * delta, so moving the cutover time can no longer change anything.
 */
export const CUTOVER_STARTED_PHASES: readonly string[] = ['CuttingOver', 'Creating', 'Succeeded'];

export type CutoverLock = { kind: 'ended' } | { kind: 'started'; vm: string; phase: string; sourcePoweredOff?: string };

/**
 * Why spec.cutover may no longer change, read from the task's status (as the controller wrote it), or
 * undefined while it may: the task has ended, or some VM's cutover has started (its phase is CuttingOver
 * or later, or its source was powered off for the transfer).
 */
export function cutoverLock(status: VMImportTaskStatus | undefined): CutoverLock | undefined {
  if (!status) return undefined;
  if (status.completedAt || status.phase === 'Succeeded' || status.phase === 'Failed') return { kind: 'ended' };
  for (const vm of Array.isArray(status.vms) ? status.vms : []) {
    const phase = String(vm?.phase ?? '');
    const off = vm?.timestamps?.sourcePoweredOff;
    if (CUTOVER_STARTED_PHASES.includes(phase) || off) return { kind: 'started', vm: String(vm?.name || vm?.id), phase, ...(off ? { sourcePoweredOff: String(off) } : {}) };
  }
  return undefined;
}

/**
 * vCenter privileges a warm import needs beyond a cold one: Forklift creates a snapshot before each
 * precopy and removes the previous one (kubev2v/forklift@v2.11.5:pkg/controller/plan/adapter/vsphere/client.go CreateSnapshot /
 * RemoveSnapshot). Named in docs/warm.md and in the failure that lacking them causes.
 */
export const WARM_PRIVILEGES = ['VirtualMachine.State.CreateSnapshot', 'VirtualMachine.State.RemoveSnapshot'] as const;
export const WARM_PRIVILEGES_TEXT = 'Virtual machine > Snapshot management > Create snapshot and Remove snapshot (VirtualMachine.State.CreateSnapshot, VirtualMachine.State.RemoveSnapshot)';
