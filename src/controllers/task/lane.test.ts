import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { DiskStatus, VMStatus } from '../../api/types.ts';
import type { KubeObject } from '../../runtime/kube.ts';
import { DISK_DONE, Step } from '../handoff/steps.ts';
import { PassLane, finishCandidates, finishable } from './lane.ts';

const vm = (id: string, phase: VMStatus['phase'] = 'Creating'): VMStatus => ({ id, name: id, phase });
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('PassLane', () => {
  it('never lets both lanes act on a VM at once, nor the main pass after the finisher held it in the pass', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ op: fc.constantFrom('main', 'main-ends', 'finisher', 'finisher-releases'), k: fc.integer({ min: 0, max: 3 }) }), { maxLength: 40 }), (ops) => {
        const lane = new PassLane<null>('uid');
        lane.open(null);
        const main = new Set<number>();
        const finisher = new Set<number>();
        const finisherHeld = new Set<number>();
        for (const { op, k } of ops) {
          if (op === 'main-ends') {
            if (main.delete(k)) lane.mainEnded(k);
          } else if (op === 'finisher-releases') {
            // Given back only when it found nothing to do: it never acted on the VM.
            if (finisher.delete(k)) {
              lane.release(k);
              finisherHeld.delete(k);
            }
          } else if (op === 'main') {
            if (lane.claimForMain(k)) {
              assert.ok(!finisher.has(k), `VM ${k}: the main pass acts while the finisher does`);
              assert.ok(!finisherHeld.has(k), `VM ${k}: the main pass acts on a decision older than the finisher's`);
              assert.ok(!main.has(k), `VM ${k}: two main actions at once`);
              main.add(k);
            }
          } else if (lane.claimForFinisher(k, vm(String(k)))) {
            assert.ok(!main.has(k), `VM ${k}: the finisher acts while the main pass does`);
            assert.ok(!finisherHeld.has(k), `VM ${k}: the finisher takes a VM twice in a pass`);
            finisher.add(k);
            finisherHeld.add(k);
          }
        }
      }),
    );
  });

  it("lets a finisher wait for the main pass's action on a VM to end, and take the VM then", async () => {
    const lane = new PassLane<null>('uid');
    lane.open(null);
    assert.equal(lane.claimForMain(0), true);
    assert.equal(lane.claimForFinisher(0, vm('a')), false, 'the main pass is acting on it');
    let settled = false;
    const waiting = lane.mainSettled(0).then(() => (settled = true));
    await tick();
    assert.equal(settled, false);
    lane.mainEnded(0);
    await waiting;
    assert.equal(lane.claimForFinisher(0, vm('a')), true, 'taken once the main action ended');
    await lane.mainSettled(1);
  });

  it('gives the finisher nothing before the lane opens, after it closes, or that is terminal on the board', async () => {
    const lane = new PassLane<string>('uid');
    assert.equal(lane.claimForFinisher(0, vm('a')), false, 'not yet open');
    lane.open('pass');
    assert.equal(lane.claimForFinisher(1, vm('b', 'Succeeded')), false, 'ended');
    assert.equal(lane.claimForFinisher(2, vm('c', 'Failed')), false, 'ended');
    assert.equal(lane.claimForFinisher(3, undefined), false, 'no such VM');
    assert.equal(lane.claimForFinisher(0, vm('a')), true);
    await lane.close();
    assert.equal(lane.claimForFinisher(4, vm('d')), false, 'closed');
    assert.equal(lane.claimForMain(0), false, 'the main pass skips what the finisher held in this pass');
  });

  it('answers a finisher that waits on it with the pass once open, or with nothing once closed unopened', async () => {
    const a = new PassLane<string>('uid');
    const early = a.opened();
    a.open('the pass');
    assert.equal(await early, 'the pass');
    assert.equal(await a.opened(), 'the pass');
    const b = new PassLane<string>('uid');
    const waiting = b.opened();
    await b.close();
    assert.equal(await waiting, undefined);
  });

  it('closes only once the finisher work in flight has settled, failed work included', async () => {
    const lane = new PassLane<null>('uid');
    lane.open(null);
    const order: string[] = [];
    let finishOk!: () => void;
    let finishBad!: (e: Error) => void;
    void lane.track(new Promise<void>((r) => (finishOk = r)).then(() => void order.push('ok')));
    void lane.track(new Promise<void>((_, j) => (finishBad = j))).catch(() => order.push('failed'));
    const closed = lane.close().then(() => order.push('closed'));
    await tick();
    assert.deepEqual(order, [], 'close waits');
    finishBad(new Error('x'));
    await tick();
    finishOk();
    await closed;
    assert.deepEqual(order, ['failed', 'ok', 'closed']);
  });
});

const deployed = (name: string): KubeObject => ({ metadata: { name }, status: { conditions: [{ type: 'Ready', status: 'True' }] } }) as unknown as KubeObject;
const pending = (name: string): KubeObject => ({ metadata: { name }, status: { conditions: [{ type: 'Ready', status: 'False', reason: 'Progressing' }] } }) as unknown as KubeObject;
const disk = (i: number, handoff: string): DiskStatus => ({ index: i, vmDisk: `web-disk-${i}`, handoff });
const creating = (disks: DiskStatus[], vmInstance?: string): VMStatus => ({ ...vm('web'), ...(vmInstance ? { vmInstance } : {}), diskHandoffs: disks, disks: disks.map((d) => d.vmDisk) }) as VMStatus;

describe('finishable', () => {
  const all = (kind: string, name: string): KubeObject | undefined => deployed(`${kind}/${name}`);

  it('is a Creating VM whose disks are handed over and whose VMDisks and VMInstance all deployed', () => {
    assert.equal(finishable(creating([disk(0, DISK_DONE), disk(1, DISK_DONE)], 'web'), all), true);
  });

  it('is not a VM with a disk still in its handoff, no VMInstance recorded, no disk evidence, or not Creating', () => {
    assert.equal(finishable(creating([disk(0, DISK_DONE), disk(1, Step.CreateVMDisk)], 'web'), all), false);
    assert.equal(finishable(creating([disk(0, DISK_DONE)]), all), false);
    assert.equal(finishable({ ...creating([disk(0, DISK_DONE)], 'web'), phase: 'Succeeded' }, all), false);
    assert.equal(finishable({ ...vm('web'), vmInstance: 'web' }, all), false);
    assert.equal(finishable(undefined, all), false);
  });

  it('is not a VM with any output pending or absent from the cache', () => {
    const v = creating([disk(0, DISK_DONE), disk(1, DISK_DONE)], 'web');
    assert.equal(finishable(v, (kind, name) => (name === 'web-disk-1' ? pending(name) : deployed(name))), false);
    assert.equal(finishable(v, (kind, name) => (kind === 'VMInstance' ? pending(name) : deployed(name))), false);
    assert.equal(finishable(v, (kind, name) => (kind === 'VMInstance' ? undefined : deployed(name))), false);
  });
});

describe('finishCandidates', () => {
  it("offers the VMs not ended whose VMInstance, recorded or under the VM's name, deployed", () => {
    const vms: VMStatus[] = [
      { ...vm('a', 'Creating'), plan: 'p-a', vmInstance: 'a' },
      { ...vm('b', 'Creating'), plan: 'p-b' },
      { ...vm('c', 'Succeeded'), plan: 'p-c', vmInstance: 'c' },
      { ...vm('d', 'Creating'), plan: 'p-d', vmInstance: 'd' },
      { ...vm('e', 'Validating') },
    ];
    const cached = (kind: string, name: string): KubeObject | undefined => (kind !== 'VMInstance' ? undefined : name === 'd' ? pending(name) : deployed(name));
    assert.deepEqual(finishCandidates(vms, cached), [0, 1]);
  });
});
