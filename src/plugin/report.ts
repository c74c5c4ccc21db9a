// `kubectl vmimport report`: per VM of one or more tasks, what happened and what came out of it, with
// totals, as a table, CSV, JSON or Markdown. Everything is read from the tasks' status. Pure.
import type { SourceInventoryVM, VMImportTask } from '../api/types.ts';
import { readVMDisks } from '../api/disks.ts';
import { formatBytes, formatDuration, renderTable } from './render.ts';

export interface ReportRow {
  task: string;
  vm: string;
  id: string;
  outcome: string;
  reason: string;
  message: string;
  bytes: number | null;
  transferSeconds: number | null;
  downtimeSeconds: number | null;
  vmInstance: string | null;
  vmDisks: string[];
  /** What the platform could not carry over: the assessment's warnings (short labels), the NICs' MACs. */
  notCarried: string[];
}

export interface ReportTotals {
  tasks: number;
  vms: number;
  succeeded: number;
  failed: number;
  running: number;
  bytes: number;
  /** The longest downtime of a VM, and their sum. */
  maxDowntimeSeconds: number | null;
  sumDowntimeSeconds: number | null;
}

export interface Report {
  rows: ReportRow[];
  totals: ReportTotals;
}

function seconds(from: string | undefined, to: string | undefined): number | null {
  const a = from ? Date.parse(from) : NaN;
  const b = to ? Date.parse(to) : NaN;
  return Number.isFinite(a) && Number.isFinite(b) && b >= a ? Math.round((b - a) / 1000) : null;
}

/** A warning sentence's label: `UEFI firmware (Warning, migration-controller): …` → `UEFI firmware`. */
export function warningLabel(w: string): string {
  const cut = w.search(/ \((Warning|Critical|Information),|: /);
  return (cut > 0 ? w.slice(0, cut) : w).slice(0, 120);
}

/**
 * The report of `tasks`. `sourceVMs` (by id) tells how many NICs a VM has: each comes back a new device
 * with a new MAC (the VMInstance carries no MAC address), which the report lists as not carried.
 */
export function buildReport(tasks: ReadonlyArray<Pick<VMImportTask, 'metadata' | 'spec' | 'status'>>, sourceVMs: ReadonlyMap<string, SourceInventoryVM> = new Map()): Report {
  const rows: ReportRow[] = [];
  for (const t of tasks) {
    const status = new Map((t.status?.vms ?? []).map((v) => [v.id, v]));
    for (const s of t.spec.vms) {
      const v = status.get(s.id);
      const nics = sourceVMs.get(s.id)?.nics?.length;
      const notCarried = [...new Set((v?.warnings ?? []).map(warningLabel))];
      if (nics === undefined || nics > 0) notCarried.push(nics === undefined ? 'MAC addresses' : `MAC addresses (${nics} NIC${nics === 1 ? '' : 's'})`);
      rows.push({
        task: t.metadata.name ?? '',
        vm: v?.name ?? s.name ?? sourceVMs.get(s.id)?.name ?? s.id,
        id: s.id,
        outcome: v?.phase ?? 'Pending',
        reason: v?.phase === 'Succeeded' ? '' : (v?.reason ?? ''),
        message: v?.phase === 'Succeeded' ? '' : (v?.message ?? ''),
        bytes: v?.bytesTotal ?? null,
        transferSeconds: seconds(v?.timestamps?.started, v?.timestamps?.transferred),
        downtimeSeconds: v?.downtimeSeconds ?? null,
        vmInstance: v?.phase === 'Succeeded' ? (v.vmInstance ?? v.name) : (v?.vmInstance ?? null),
        vmDisks: v ? readVMDisks(v).names : [],
        notCarried,
      });
    }
  }
  const downtimes = rows.map((r) => r.downtimeSeconds).filter((d): d is number => d !== null);
  return {
    rows,
    totals: {
      tasks: tasks.length,
      vms: rows.length,
      succeeded: rows.filter((r) => r.outcome === 'Succeeded').length,
      failed: rows.filter((r) => r.outcome === 'Failed').length,
      running: rows.filter((r) => r.outcome !== 'Succeeded' && r.outcome !== 'Failed').length,
      bytes: rows.reduce((s, r) => s + (r.outcome === 'Succeeded' ? (r.bytes ?? 0) : 0), 0),
      maxDowntimeSeconds: downtimes.length ? Math.max(...downtimes) : null,
      sumDowntimeSeconds: downtimes.length ? downtimes.reduce((a, b) => a + b, 0) : null,
    },
  };
}

const COLUMNS = ['TASK', 'VM', 'ID', 'OUTCOME', 'REASON', 'BYTES', 'TRANSFER', 'DOWNTIME', 'VMINSTANCE', 'VMDISKS', 'NOT CARRIED'] as const;

function cells(r: ReportRow): string[] {
  const dur = (s: number | null): string => (s === null ? '—' : formatDuration(s));
  return [r.task, r.vm, r.id, r.outcome, r.reason, r.bytes === null ? '—' : formatBytes(r.bytes), dur(r.transferSeconds), dur(r.downtimeSeconds), r.vmInstance ?? '', r.vmDisks.join(' '), r.notCarried.join('; ')];
}

function totalsLine(t: ReportTotals): string {
  return (
    `${t.vms} VM${t.vms === 1 ? '' : 's'} in ${t.tasks} task${t.tasks === 1 ? '' : 's'}: ${t.succeeded} succeeded, ${t.failed} failed${t.running ? `, ${t.running} not ended` : ''}; ` +
    `${formatBytes(t.bytes)} imported; downtime ${t.maxDowntimeSeconds === null ? '—' : `longest ${formatDuration(t.maxDowntimeSeconds)}, total ${formatDuration(t.sumDowntimeSeconds ?? 0)}`}`
  );
}

export function reportTable(r: Report): string {
  const failed = r.rows.filter((x) => x.outcome === 'Failed' && x.message);
  return [...renderTable([...COLUMNS], r.rows.map(cells)), '', ...failed.map((x) => `${x.vm}: ${x.reason}: ${x.message}`), ...(failed.length ? [''] : []), `Total: ${totalsLine(r.totals)}`].join('\n');
}

/** One CSV field (RFC 4180): quoted when it holds a comma, quote or line break; a quote doubled. */
export function csvField(s: string): string {
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** CSV: a header, one record per VM with raw numbers (bytes, seconds), no totals line (a spreadsheet sums). */
export function reportCSV(r: Report): string {
  const header = ['task', 'vm', 'id', 'outcome', 'reason', 'message', 'bytes', 'transferSeconds', 'downtimeSeconds', 'vmInstance', 'vmDisks', 'notCarried'];
  const rec = (x: ReportRow): string[] => [x.task, x.vm, x.id, x.outcome, x.reason, x.message, x.bytes === null ? '' : String(x.bytes), x.transferSeconds === null ? '' : String(x.transferSeconds), x.downtimeSeconds === null ? '' : String(x.downtimeSeconds), x.vmInstance ?? '', x.vmDisks.join(' '), x.notCarried.join('; ')];
  return [header, ...r.rows.map(rec)].map((l) => l.map(csvField).join(',')).join('\r\n') + '\r\n';
}

/** A Markdown table cell: pipes escaped, line breaks flattened. */
export function mdCell(s: string): string {
  return s.replaceAll('\\', '\\\\').replaceAll('|', '\\|').replace(/\r?\n/g, ' ');
}

export function reportMarkdown(r: Report): string {
  const rows = r.rows.map(cells);
  return [
    `| ${COLUMNS.join(' | ')} |`,
    `|${COLUMNS.map(() => '---').join('|')}|`,
    ...rows.map((c) => `| ${c.map(mdCell).join(' | ')} |`),
    '',
    `**Total:** ${mdCell(totalsLine(r.totals))}`,
    '',
  ].join('\n');
}

export function reportJSON(r: Report): string {
  return `${JSON.stringify(r, null, 2)}\n`;
}
