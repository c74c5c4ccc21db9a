import { test } from 'node:test';
import assert from 'node:assert/strict';
import YAML from 'yaml';
import type { VMImportTask } from '../api/types.ts';
import { buildReport, csvField, mdCell, reportCSV, reportJSON, reportMarkdown, reportTable, warningLabel } from './report.ts';

const GiB = 2 ** 30;
const t: VMImportTask = {
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportTask',
  metadata: { name: 'web-tier' },
  spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1' }, { id: 'vm-2' }, { id: 'vm-3', name: 'later' }] },
  status: {
    vms: [
      {
        id: 'vm-1',
        name: 'web-01',
        phase: 'Succeeded',
        bytesTotal: 16 * GiB,
        downtimeSeconds: 42,
        vmInstance: 'web-01',
        disks: ['web-01-disk-0'],
        diskHandoffs: [{ index: 0, vmDisk: 'web-01-disk-0', handoff: 'done' }],
        warnings: ['UEFI firmware (Warning, migration-controller): The VMInstance asks for UEFI. Fix: check the release.', 'TPM detected (Warning, Forklift): TPM data will not be transferred'],
        timestamps: { started: '2026-01-01T00:00:00Z', transferred: '2026-01-01T00:01:30Z' },
      },
      { id: 'vm-2', name: 'db-01', phase: 'Failed', reason: 'TransferFailed', message: 'disk 0: "nbd", broken, pipe', bytesTotal: 8 * GiB, downtimeSeconds: 10 },
    ],
  },
};

test('a report row per VM of the spec: outcome, reason, bytes, transfer time, downtime, outputs and what was not carried (warnings by label, the NICs\' MACs)', () => {
  const r = buildReport([t], new Map([['vm-1', { id: 'vm-1', name: 'web-01', path: '/', nics: [{ network: 'n1' }, { network: 'n2' }] }], ['vm-2', { id: 'vm-2', name: 'db-01', path: '/', nics: [] }]]));
  assert.deepEqual(r.rows[0], { task: 'web-tier', vm: 'web-01', id: 'vm-1', outcome: 'Succeeded', reason: '', message: '', bytes: 16 * GiB, transferSeconds: 90, downtimeSeconds: 42, vmInstance: 'web-01', vmDisks: ['web-01-disk-0'], notCarried: ['UEFI firmware', 'TPM detected', 'MAC addresses (2 NICs)'] });
  assert.deepEqual([r.rows[1]!.outcome, r.rows[1]!.reason, r.rows[1]!.vmInstance, r.rows[1]!.notCarried], ['Failed', 'TransferFailed', null, []]);
  assert.deepEqual([r.rows[2]!.vm, r.rows[2]!.outcome, r.rows[2]!.notCarried], ['later', 'Pending', ['MAC addresses']]);
  assert.deepEqual(r.totals, { tasks: 1, vms: 3, succeeded: 1, failed: 1, running: 1, bytes: 16 * GiB, maxDowntimeSeconds: 42, sumDowntimeSeconds: 52 });
});

test('the table ends with the failures in full and the totals', () => {
  const out = reportTable(buildReport([t]));
  assert.match(out, /^web-tier +web-01 +vm-1 +Succeeded +16\.0 GiB +1m30s +42s +web-01 +web-01-disk-0 +UEFI firmware; TPM detected; MAC addresses$/m);
  assert.match(out, /^db-01: TransferFailed: disk 0: "nbd", broken, pipe$/m);
  assert.match(out, /^Total: 3 VMs in 1 task: 1 succeeded, 1 failed, 1 not ended; 16\.0 GiB imported; downtime longest 42s, total 52s$/m);
});

test('CSV quotes a field holding a comma, quote or line break and doubles its quotes; numbers stay raw', () => {
  assert.equal(csvField('plain'), 'plain');
  assert.equal(csvField('a,b'), '"a,b"');
  assert.equal(csvField('say "hi"'), '"say ""hi"""');
  assert.equal(csvField('two\nlines'), '"two\nlines"');
  const lines = reportCSV(buildReport([t])).split('\r\n');
  assert.equal(lines[2], 'web-tier,db-01,vm-2,Failed,TransferFailed,"disk 0: ""nbd"", broken, pipe",8589934592,,10,,,MAC addresses');
  assert.equal(lines.at(-1), '', 'records end with CRLF');
});

test('Markdown escapes pipes and flattens line breaks in cells, and JSON parses back to the report', () => {
  assert.equal(mdCell('a|b\nc'), 'a\\|b c');
  const md = reportMarkdown(buildReport([t]));
  assert.match(md, /^\| TASK \| VM \| ID \| OUTCOME \|/);
  assert.match(md, /^\|---\|---\|/m);
  assert.match(md, /^\*\*Total:\*\* 3 VMs in 1 task/m);
  assert.deepEqual(JSON.parse(reportJSON(buildReport([t]))), YAML.parse(JSON.stringify(buildReport([t]))));
});

test('a warning sentence is reported by its label', () => {
  assert.equal(warningLabel('UEFI with Secure Boot (Warning, migration-controller): The VM starts'), 'UEFI with Secure Boot');
  assert.equal(warningLabel('spec says: something'), 'spec says');
  assert.equal(warningLabel('x'.repeat(500)).length, 120);
});
