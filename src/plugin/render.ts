// Pure rendering of live import progress: sizes, rates, durations, progress bars, one line per VM, and the
// in-place redraw of a block of lines. No I/O here: `kubectl vmimport watch` (src/plugin/watch.ts) and the
// demo (scripts/demo.ts) print what these return.
import type { VMImportTask, VMStatus } from '../api/types.ts';

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/** 0 → "0 B", 1536 → "1.5 KiB", 17179869184 → "16.0 GiB" (binary units, one decimal above bytes). */
export function formatBytes(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n) || n < 0) return '—';
  let v = n;
  let i = 0;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${Math.round(v)} B` : `${v.toFixed(1)} ${UNITS[i]}`;
}

/** Bytes per second as "1.5 GiB/s"; nothing measured yet → "—". */
export function formatRate(bytesPerSecond: number | undefined): string {
  if (bytesPerSecond === undefined || !Number.isFinite(bytesPerSecond) || bytesPerSecond <= 0) return '—';
  return `${formatBytes(bytesPerSecond)}/s`;
}

/** Seconds as "7s", "1m05s", "2h03m"; unknown → "—". Rounds up: an ETA of 0.2 s is "1s", not "0s". */
export function formatDuration(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return '—';
  const s = Math.ceil(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** A bar of `width` cells for a percentage (clamped to 0–100): `[#####-----]`. */
export function progressBar(percent: number | undefined, width = 24): string {
  const p = Math.max(0, Math.min(100, Number.isFinite(percent) ? (percent as number) : 0));
  const full = Math.round((p / 100) * width);
  return `[${'#'.repeat(full)}${'-'.repeat(width - full)}]`;
}

/** Percentage of a VM: its reported progress, else derived from bytes. */
export function derivePercent(vm: Pick<VMStatus, 'progress' | 'bytesDone' | 'bytesTotal' | 'phase'>): number {
  if (vm.phase === 'Succeeded') return 100;
  if (typeof vm.progress === 'number') return Math.max(0, Math.min(100, vm.progress));
  if (vm.bytesTotal && vm.bytesDone !== undefined) return Math.max(0, Math.min(100, (vm.bytesDone / vm.bytesTotal) * 100));
  return 0;
}

/**
 * One line per VM:
 * `  web-01   Transferring  [######------------------]  25%   4.0 GiB / 16.0 GiB  1.5 GiB/s  ETA 8s`
 * A failed VM shows its reason instead of the rate and ETA.
 */
export function renderVMLine(vm: VMStatus, nameWidth = 10, barWidth = 24, now = Date.now()): string {
  const pct = derivePercent(vm);
  const bytes = `${formatBytes(vm.bytesDone ?? (vm.phase === 'Succeeded' ? vm.bytesTotal : 0)).padStart(9)} / ${formatBytes(vm.bytesTotal).padEnd(9)}`;
  const head = `  ${vm.name.padEnd(nameWidth)} ${vm.phase.padEnd(12)} ${progressBar(pct, barWidth)} ${`${Math.floor(pct)}%`.padStart(4)}  ${bytes}`;
  if (vm.phase === 'Failed') return `${head}  ${vm.reason ?? 'Failed'}: ${vm.message ?? ''}`.trimEnd();
  if (vm.phase === 'Succeeded') return `${head}  done, downtime ${formatDuration(vm.downtimeSeconds)}`;
  if (vm.phase === 'Precopying' || vm.phase === 'CuttingOver') return `${head}  ${renderWarm(vm, now)}`;
  const live = vm.phase === 'Transferring' || vm.phase === 'Creating';
  return `${head}  ${formatRate(live ? vm.bytesPerSecond : undefined).padStart(10)}  ETA ${live && vm.phase === 'Transferring' ? formatDuration(vm.etaSeconds) : '—'}`;
}

/**
 * A warm VM's tail: `precopies 3, last 2s, next in 4s` while the source runs; `cutting over (source off)`
 * once the cutover started.
 */
export function renderWarm(vm: Pick<VMStatus, 'phase' | 'warm'>, now: number): string {
  const w = vm.warm;
  if (vm.phase === 'CuttingOver') return `cutting over after ${w?.precopies ?? 0} precopies (source powered off)`;
  const parts = [`precopies ${w?.precopies ?? 0}`];
  if (w?.lastPrecopySeconds !== undefined) parts.push(`last ${formatDuration(w.lastPrecopySeconds)}`);
  const next = w?.nextPrecopyAt ? Date.parse(w.nextPrecopyAt) : NaN;
  if (Number.isFinite(next)) parts.push(`next in ${formatDuration(Math.max(0, (next - now) / 1000))}`);
  if (w?.cutoverAt) parts.push(`cutover at ${w.cutoverAt}`);
  return parts.join(', ');
}

/** The task's block: a header line, then one line per VM (the spec's VMs before the controller reports them). */
export function renderTask(task: Pick<VMImportTask, 'metadata' | 'spec' | 'status'>, elapsedSeconds: number): string[] {
  const st = task.status;
  const ready = st?.conditions?.find((c) => c.type === 'Ready');
  const header = `${task.metadata.name}: phase ${st?.phase ?? 'Pending'}, ${Math.floor(st?.progress ?? 0)}% overall` + (ready ? `, Ready=${ready.status} (${ready.reason})` : '') + `, ${formatDuration(elapsedSeconds)} elapsed`;
  const reported = st?.vms ?? [];
  const vms: VMStatus[] = task.spec.vms.map((s) => reported.find((v) => v.id === s.id) ?? { id: s.id, name: s.name ?? s.id, phase: 'Pending' });
  const width = Math.max(6, ...vms.map((v) => v.name.length));
  return [header, ...vms.map((v) => renderVMLine(v, width))];
}

/**
 * What to write to a terminal to replace the previous block of `previousLines` lines with `lines`:
 * cursor up, then each line cleared and rewritten (so a shorter line leaves no tail behind).
 */
export function redraw(previousLines: number, lines: string[]): string {
  const up = previousLines > 0 ? `\x1b[${previousLines}A` : '';
  return up + lines.map((l) => `\r\x1b[2K${l}\n`).join('');
}

/** What changes a reader must see at once in plain (non-TTY) output: the task's and each VM's phase. */
export function phaseKey(task: Pick<VMImportTask, 'status'>): string {
  // A warm VM's precopy count is part of it: each precopy is a step the reader should see.
  return `${task.status?.phase ?? 'Pending'}|${(task.status?.vms ?? []).map((v) => `${v.id}=${v.phase}${v.warm ? `#${v.warm.precopies}` : ''}`).join(',')}`;
}

/** Non-TTY output: print a block when a phase changed, or when `everyMs` passed and the text changed. */
export function shouldPrintPlain(prev: { key: string; text: string; at: number } | undefined, key: string, text: string, now: number, everyMs: number): boolean {
  if (!prev) return true;
  if (prev.key !== key) return true;
  return now - prev.at >= everyMs && text !== prev.text;
}

/** A plain table: columns padded to the widest cell. */
export function renderTable(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const fmt = (r: string[]): string => r.map((c, i) => (c ?? '').padEnd(widths[i]!)).join('   ').trimEnd();
  return [fmt(header), ...rows.map(fmt)];
}

/** A storage quantity for reading: plain bytes ("17179869184") as "16.0 GiB"; anything else ("16Gi") as is. */
export function formatQuantity(q: string | number | undefined): string {
  if (q === undefined || q === '') return '—';
  const s = String(q);
  return /^\d+$/.test(s) ? formatBytes(Number(s)) : s;
}
