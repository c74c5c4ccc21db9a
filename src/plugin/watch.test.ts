import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { VMImportTask, VMStatus } from '../api/types.ts';
import { ApiError, type KubeClient, type KubeObject } from '../runtime/kube.ts';
import { elapsedSeconds, frame, outcomeLine, watchTasks } from './watch.ts';

const GiB = 2 ** 30;
const finishedCond = { type: 'Finished', status: 'True' as const, reason: 'x', message: '', lastTransitionTime: '' };
function task(name: string, vms: VMStatus[], done: boolean): VMImportTask {
  return {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name, namespace: 'ns', creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: { sourceRef: { name: 'vc' }, vms: vms.map((v) => ({ id: v.id })) },
    status: { phase: done ? (vms.every((v) => v.phase === 'Succeeded') ? 'Succeeded' : 'Failed') : 'Transferring', startedAt: '2026-01-01T00:00:10Z', ...(done ? { completedAt: '2026-01-01T00:01:10Z', conditions: [finishedCond] } : {}), vms },
  };
}
const running = (id: string, name: string): VMStatus => ({ id, name, phase: 'Transferring', bytesDone: 4 * GiB, bytesTotal: 16 * GiB, bytesPerSecond: GiB, etaSeconds: 12 });
const ok = (id: string, name: string): VMStatus => ({ id, name, phase: 'Succeeded', bytesTotal: 16 * GiB, downtimeSeconds: 30 });
const failed = (id: string, name: string): VMStatus => ({ id, name, phase: 'Failed', reason: 'TransferFailed', message: 'disk broke' });

/** A client whose list answers `listed` and whose watch delivers `events`, then ends. */
function fakeClient(listed: VMImportTask[], events: Array<[string, VMImportTask]>): KubeClient {
  return {
    list: async () => ({ items: listed as unknown as KubeObject[], metadata: { resourceVersion: '1' } }),
    watch: async (_g: unknown, _ns: unknown, _o: unknown, on: (t: string, o: KubeObject) => void) => {
      for (const [t, o] of events) on(t, o as unknown as KubeObject);
    },
  } as unknown as KubeClient;
}

test('elapsed time runs from the start (else the creation) to the end (else now)', () => {
  const now = Date.parse('2026-01-01T00:00:40Z');
  assert.equal(elapsedSeconds(task('t', [running('vm-1', 'a')], false), now), 30);
  assert.equal(elapsedSeconds(task('t', [ok('vm-1', 'a')], true), now), 60);
  assert.equal(elapsedSeconds({ metadata: { creationTimestamp: '2026-01-01T00:00:00Z' } }, now), 40);
});

test('a frame is each watched task\'s block in the order named, with the demo\'s VM lines', () => {
  const tasks = new Map([['b', task('b', [running('vm-1', 'web-01')], false)]]);
  const lines = frame(['a', 'b'], tasks, Date.parse('2026-01-01T00:00:20Z'));
  assert.equal(lines[0], 'a: not found');
  assert.match(lines[1]!, /^b: phase Transferring, 0% overall, 10s elapsed$/);
  assert.match(lines[2]!, /^ {2}web-01 +Transferring +\[######-+\] +25% +4\.0 GiB \/ 16\.0 GiB +1\.0 GiB\/s +ETA 12s$/);
});

test('the closing line says every VM was imported, or which failed with which reason and how to retry them', () => {
  assert.equal(outcomeLine(task('t', [ok('vm-1', 'a'), ok('vm-2', 'b')], true)), 't: all 2 VMs imported');
  assert.equal(outcomeLine(task('t', [ok('vm-1', 'a'), failed('vm-2', 'b')], true)), 't: 1 of 2 VMs failed: b (TransferFailed); retry them with kubectl vmimport retry t');
});

test('watch exits 0 when every VM of every task succeeded and 1 when one failed, printing plain blocks without cursor movement off a terminal', async () => {
  let out = '';
  const good = await watchTasks({ client: fakeClient([task('t', [running('vm-1', 'a')], false)], [['MODIFIED', task('t', [ok('vm-1', 'a')], true)]]), namespace: 'ns', names: ['t'], write: (s) => (out += s), tty: false });
  assert.equal(good, 0);
  assert.ok(!out.includes('\x1b['), 'no escape sequence');
  assert.match(out, /^\[\w+\]\nt: phase Transferring/);
  assert.match(out, /\n\[1m00s\]\nt: phase Succeeded, 0% overall, 1m00s elapsed\n {2}a +Succeeded .* done, downtime 30s\nt: all 1 VM imported\n$/);

  out = '';
  const bad = await watchTasks({ client: fakeClient([task('t', [ok('vm-1', 'a')], true), task('u', [failed('vm-2', 'b')], true)], []), namespace: 'ns', names: ['t', 'u'], write: (s) => (out += s), tty: false });
  assert.equal(bad, 1);
  assert.match(out, /u: 1 of 1 VM failed: b \(TransferFailed\)/);
});

test('on a terminal the block is redrawn in place', async () => {
  let out = '';
  const code = await watchTasks({ client: fakeClient([task('t', [running('vm-1', 'a')], false)], [['MODIFIED', task('t', [ok('vm-1', 'a')], true)]]), namespace: 'ns', names: ['t'], write: (s) => (out += s), tty: true });
  assert.equal(code, 0);
  assert.ok(out.includes('\x1b[2A\r\x1b[2Kt: phase Succeeded'), 'the second frame moves up over the first two lines');
});

test('a task that is not there, or is deleted while watched, is an error naming it', async () => {
  await assert.rejects(watchTasks({ client: fakeClient([], []), namespace: 'ns', names: ['gone'], write: () => undefined, tty: false }), /"gone" not found in namespace ns/);
  await assert.rejects(watchTasks({ client: fakeClient([task('t', [running('vm-1', 'a')], false)], [['DELETED', task('t', [], false)]]), namespace: 'ns', names: ['t'], write: () => undefined, tty: false }), /vmimporttask t was deleted while it was watched/);
});

test('watch gives up at its timeout with exit 1, naming what still runs', async () => {
  let out = '';
  let t = 0;
  const code = await watchTasks({ client: fakeClient([task('t', [running('vm-1', 'a')], false)], []), namespace: 'ns', names: ['t'], write: (s) => (out += s), tty: false, timeoutMs: 5000, now: () => (t += 3000) });
  assert.equal(code, 1);
  assert.match(out, /timed out after 5s: t still running\n$/);
});

test('a watch stream that breaks is listed again and followed on; the end is still seen', async () => {
  let watches = 0;
  let lists = 0;
  const client = {
    list: async () => {
      lists++;
      const t = lists === 1 ? task('t', [running('vm-1', 'a')], false) : task('t', [ok('vm-1', 'a')], true);
      return { items: [t] as unknown as KubeObject[], metadata: { resourceVersion: String(lists) } };
    },
    watch: async () => {
      watches++;
      throw new ApiError(0, 'ConnectionError', 'socket hang up');
    },
  } as unknown as KubeClient;
  const code = await watchTasks({ client, namespace: 'ns', names: ['t'], write: () => undefined, tty: false });
  assert.equal(code, 0);
  assert.deepEqual([lists, watches], [2, 1]);
});

test('nothing is drawn before the first list answers: a slow start never shows an existing task as not found', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  let answer!: () => void;
  const listed = new Promise<void>((r) => (answer = r));
  const client = {
    list: async () => {
      await listed;
      return { items: [task('t', [ok('vm-1', 'a')], true)] as unknown as KubeObject[], metadata: { resourceVersion: '1' } };
    },
    watch: async () => undefined,
  } as unknown as KubeClient;
  let out = '';
  const code = watchTasks({ client, namespace: 'ns', names: ['t'], write: (s) => (out += s), tty: false });
  // Ten seconds of ticks while the list is still on its way.
  for (let i = 0; i < 20; i++) t.mock.timers.tick(500);
  assert.equal(out, '');
  answer();
  assert.equal(await code, 0);
  assert.doesNotMatch(out, /not found/);
  assert.match(out, /^\[1m00s\]\nt: phase Succeeded/);
});
