// The crash-safety proof of the copy-free handoff, parameterised by the path: a raw copy
// (handoff-crash-raw.test.ts) and guest conversion (handoff-crash-converted.test.ts: the volumes virt-v2v
// filled in Forklift's conversion pod).
// For every step boundary the handoff declares (HANDOFF_STEPS, so a new step cannot escape this test),
// and in the middle of the multi-disk loop, the controller is killed right after that step's API write,
// before anything after it (its status write included) happens, and a fresh controller carries on.
// One import walks every kill point:
//   - the first point kills the real controller process (src/main.ts, the kill-point module preloaded:
//     kill-after-step.ts, MC_KILL_AFTER_STEP): a real SIGKILL, after which a fresh controller finishes;
//   - each later point kills an in-process controller: its client is fenced and its requests in flight
//     cancelled at that instant, so nothing it decided after the step reaches the API server, and it is
//     thrown away; a new controller (new reconcilers, a new Handoff, new caches and queues: nothing of the
//     old one's memory) resumes from what the API server holds — as a restarted process does.
// At the end: the volumes are the very objects the transfer filled (same UID, same content), Bound to
// vm-disk-<…>; one claim, DataVolume, VMDisk and VMInstance per output; the class's reclaim policy; no
// Released volume, no transfer claim, no scaffolding VirtualMachine; the task Ready=True; the VMInstance's
// buses match the path (virtio when converted, SATA for a raw copy). A kill point that duplicated or lost
// anything leaves it so to the end: the later steps never delete an extra output or make a lost one.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { CONTENT_ANNOTATION, contentIdentity, createStorageClass, startSim, type Sim, type WorldFixture } from '../sim/index.ts';
import { R, Rest } from '../sim/testing.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import { isAlreadyExists, type KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import { Informer } from '../../src/runtime/informer.ts';
import type { ManagerOptions } from '../../src/runtime/manager.ts';
import { DEFAULT_CONTROLLER_NAMESPACE, parseConfig } from '../../src/config.ts';
import { runController, type RunningController } from '../../src/app.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import type { VMImportTask } from '../../src/api/types.ts';
import { LABEL_TASK_UID, LABEL_VM_ID } from '../../src/api/labels.ts';
import { HANDOFF_STEPS, Step, VM_STEPS, handoffHooks, type StepName } from '../../src/controllers/handoff/index.ts';
import { ENV_KILL_AFTER_STEP, killPointMatches } from './kill-after-step.ts';
import { REPO_ROOT, freshNamespace, installOurCRDs, testEnv, waitFor } from './env/index.ts';
import { adminClient, createSource, waitForReason } from './source-helpers.ts';

export interface HandoffCrashSuite {
  /** The vCenter, holding the two-disk VM `vmId`. */
  world: WorldFixture;
  url: string;
  vmId: string;
  className: string;
  /** The task asks for guest conversion (and the controller runs with the platform flag). */
  converted: boolean;
  /** The VMInstance firmware the source VM's gives. */
  firmware: Record<string, unknown>;
}

const VM_NAME = 'crash';
const DISKS = 2;

/** Every kill point, in the order one import reaches them (`<step>` or `<step>:<disk>`). */
export function crashKillPoints(): string[] {
  const points = [
    // Every step boundary, on the first disk of a two-disk VM (disk steps) or the VM (VM steps)…
    ...HANDOFF_STEPS.map((step) => (VM_STEPS.includes(step) ? step : `${step}:${step === Step.DeleteTransferDataVolume ? 1 : 0}`)),
    // …and in the middle of the multi-disk loop.
    `${Step.RetainVolume}:1`,
    `${Step.SettleVolume}:1`,
  ];
  // Disk 0's steps, then disk 1's, then the VM's: the order of the handoff (disk 1 starts once disk 0 settled).
  const rank = (p: string): number => {
    const [step, disk] = p.split(':') as [StepName, string | undefined];
    return (disk === undefined ? 2 * HANDOFF_STEPS.length : Number(disk) * HANDOFF_STEPS.length) + HANDOFF_STEPS.indexOf(step);
  };
  return points.sort((a, b) => rank(a) - rank(b));
}

/** Thrown from the handoff's step hook in place of the process's death: the pass ends there. */
class Killed extends Error {
  constructor(point: string) {
    super(`killed right after ${point}`);
    this.name = 'Killed';
  }
}

/** Registers the suite's hooks and its test (call at a test file's top level). */
export function handoffCrashSuite(cfg: HandoffCrashSuite): void {
  const world = cfg.world;
  let sim: Sim;
  let c: KubeClient;
  let rest: Rest;
  let kubeconfigPath: string;

  before(async () => {
    const env = await testEnv();
    kubeconfigPath = env.admin.kubeconfigPath;
    await installOurCRDs();
    await createStorageClass(kubeconfigPath, { name: cfg.className, reclaimPolicy: 'Delete' });
    sim = await startSim({ kubeconfigPath, worlds: [world] });
    c = await adminClient();
    rest = new Rest(kubeconfigPath);
    // The controller's own namespace (its credentials key ring, the projected Secrets) exists wherever it
    // runs; without it no source ever connects.
    await c.create(GVRs.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: DEFAULT_CONTROLLER_NAMESPACE } } as KubeObject).catch((e: unknown) => {
      if (!isAlreadyExists(e)) throw e;
    });
  });

  after(async () => {
    handoffHooks.afterStep = undefined;
    await sim?.stop();
    c?.close();
    rest?.close();
  });

  /** The controller's flags, the same for its process and for its in-process instances. */
  const controllerArgs = (): string[] => [
    '--kubeconfig', kubeconfigPath,
    '--leader-elect=false',
    '--health-port', '0',
    '--metrics-port', '0',
    '--webhook-port', '0',
    '--vddk-image', 'registry.example.com/vddk:8.0.3',
    '--inventory-url', sim.inventory.url,
    '--log-level', 'warn',
    ...(cfg.converted ? ['--guest-conversion'] : []),
  ];

  /**
   * The output's last 4,000 characters; with `ns`, of the lines that name that namespace only. The whole
   * output is kept (warn level: a few hundred lines at most): the controller watches every namespace of
   * the shared plane, and a source left by an earlier file, retrying against an inventory that no longer
   * knows it, filled a 4,000-character tail by itself while the test's own task stalled.
   */
  const tail = (out: string, ns?: string): string => (ns ? out.split('\n').filter((l) => l.includes(ns)).join('\n') : out).slice(-4000);

  interface Proc {
    child: ChildProcess;
    exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
    output: (ns?: string) => string;
  }

  /** The controller as its own process: `node src/main.ts --kubeconfig …`, SIGKILLing itself after `killAfter`. */
  function controllerProcess(killAfter: string): Proc {
    const child = spawn(process.execPath, ['--import', pathToFileURL(join(REPO_ROOT, 'test/e2e/kill-after-step.ts')).href, join(REPO_ROOT, 'src/main.ts'), ...controllerArgs()], {
      cwd: REPO_ROOT,
      env: { ...process.env, [ENV_KILL_AFTER_STEP]: killAfter },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
    return { child, exited, output: (ns) => tail(out, ns) };
  }

  async function stopProcess(p: Proc): Promise<void> {
    if (p.child.exitCode !== null || p.child.signalCode !== null) return;
    p.child.kill('SIGTERM');
    const t = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
    await p.exited;
    clearTimeout(t);
  }

  interface InProcess {
    ctl: RunningController;
    /** From this call on, nothing this controller sends changes the cluster: a process's SIGKILL. */
    kill: (point: string) => void;
    output: (ns?: string) => string;
  }

  /** A fresh controller in this process: new reconcilers, handoff, caches and queues (src/app.ts). */
  async function controllerObject(): Promise<InProcess> {
    let out = '';
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        out += chunk.toString();
        done();
      },
    });
    const config = parseConfig(controllerArgs(), {});
    const ctl = await runController(config, { logger: createLogger({ level: config.logLevel, destination }) });
    // The reconcilers' client (every write the reconcilers, the handoff, the manager and the event recorder
    // make goes through it; the lease's and the webhook's clients are unused here: no leader election, no
    // webhook with a kubeconfig). The manager keeps it private; only this test reaches in.
    const client = (ctl.manager as unknown as { o: ManagerOptions }).o.client;
    let killedAt: string | undefined;
    return {
      ctl,
      kill: (point) => {
        killedAt = point;
        client.setFence(() => `killed right after ${killedAt}`);
        client.abortInFlight();
      },
      output: (ns) => tail(out, ns),
    };
  }

  const S = (o: KubeObject | undefined): Record<string, unknown> => ((o?.spec ?? {}) as Record<string, unknown>);
  const St = (o: KubeObject | undefined): Record<string, unknown> => ((o?.status ?? {}) as Record<string, unknown>);
  const readyOf = (t: KubeObject | undefined) => ((t as unknown as VMImportTask | undefined)?.status?.conditions ?? []).find((x) => x.type === 'Ready');

  /**
   * Every PV of the namespace, name → UID as first seen: a replaced volume would show a new UID or name.
   * Watched (an informer sees every version of every volume, where a poll saw only those alive at a poll),
   * and listed once more when stopped. Polling the cluster's volumes every 25 ms instead made the API
   * server spend about as much CPU as the test itself.
   */
  function watchVolumes(ns: string): { seen: Map<string, string>; synced: Promise<void>; stop: () => Promise<void> } {
    const seen = new Map<string, string>();
    const note = (pv: KubeObject): void => {
      const ref = S(pv).claimRef as { namespace?: string } | undefined;
      if (ref?.namespace === ns && !seen.has(pv.metadata!.name!)) seen.set(pv.metadata!.name!, pv.metadata!.uid!);
    };
    const inf = new Informer(c, GVRs.PersistentVolume);
    inf.addHandlers({ add: note, update: (_old, pv) => note(pv) });
    inf.start();
    let stopped: Promise<void> | undefined;
    return {
      seen,
      synced: inf.waitForSync(),
      stop: () =>
        (stopped ??= (async () => {
          try {
            for (const pv of (await c.list(GVRs.PersistentVolume)).items) note(pv);
          } finally {
            await inf.stop();
          }
        })()),
    };
  }

  /**
   * Forklift deletes its DataVolumes when it creates the VM, so a real transfer never reaches the step that
   * deletes a leftover one. To reach it, this plays an older/interrupted Forklift: once the sim deleted its
   * DataVolume of disk `disk`, a DataVolume of the same name (the transfer claim's) is created again with
   * CDI's allowClaimAdoption, and the simulated CDI adopts the claim into it. Disk 1 is handed off only
   * after disk 0 settled, long after this is in place.
   */
  function leaveDataVolume(ns: string, disk: number): { stop: () => Promise<void>; done: () => boolean } {
    const { vmId, className } = cfg;
    let running = true;
    let made = false;
    const loop = (async () => {
      while (running && !made) {
        const vm = (await c.list(GVRs.VirtualMachine, ns, { labelSelector: `vmID=${vmId}` })).items[0];
        const claimName = (S(S(vm).template as KubeObject).volumes as Array<{ persistentVolumeClaim?: { claimName: string } }> | undefined)?.[disk]?.persistentVolumeClaim?.claimName;
        if (vm && claimName && !(await c.get(GVRs.DataVolume, ns, claimName))) {
          await c
            .create(GVRs.DataVolume, {
              apiVersion: 'cdi.kubevirt.io/v1beta1',
              kind: 'DataVolume',
              metadata: { name: claimName, namespace: ns, labels: { vmID: vmId }, annotations: { 'cdi.kubevirt.io/allowClaimAdoption': 'true' } },
              spec: { source: { blank: {} }, storage: { resources: { requests: { storage: '1Gi' } }, storageClassName: className } },
            } as KubeObject)
            .then(() => (made = true))
            .catch(() => undefined);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    return {
      stop: async () => {
        running = false;
        await loop;
      },
      done: () => made,
    };
  }

  const points = crashKillPoints();
  const [first, ...later] = points as [string, ...string[]];

  test(`one import, the controller killed right after every handoff step (${points.join(', ')}; the first a SIGKILL of its process): each restarted controller carries on, and the last finishes with the transferred volumes intact and nothing duplicated or left behind`, async () => {
    const ns = await freshNamespace(cfg.converted ? 'crash-conv' : 'crash');
    const volumes = watchVolumes(ns);
    const leftover = leaveDataVolume(ns, 1);
    const proc = controllerProcess(first);
    let current: InProcess | undefined;
    const reached: string[] = [];
    // The in-process kill: the first later point this pass reaches that no controller was killed at yet.
    // Only the current controller can reach one: a killed one's writes are refused before they are sent.
    let onKill: ((point: string) => void) | undefined;
    handoffHooks.afterStep = (step, disk) => {
      const point = later.find((p) => !reached.includes(p) && killPointMatches(p, step, disk));
      if (!point || !current) return;
      reached.push(point);
      current.kill(point);
      onKill?.(point);
      throw new Killed(point);
    };
    // Where the import stood, and what the controller said: a kill point not reached says why.
    const stuck = async (e: Error, output: (ns?: string) => string): Promise<never> => {
      const t = (await c.get(GVRs.VMImportTask, ns, 'import').catch(() => undefined)) as unknown as VMImportTask | undefined;
      const v = t?.status?.vms?.[0];
      throw new Error(`${e.message}; the VM: ${JSON.stringify({ phase: v?.phase, reason: v?.reason, message: v?.message, disks: v?.disks })}; controller output about ${ns}: ${output(ns) || '(none)'}; its last lines: ${output().slice(-1000)}`);
    };
    try {
      await volumes.synced;
      await createSource(c, ns, 'vc', { type: 'vsphere', url: cfg.url, credentials: { username: world.user, password: world.password, caCert: world.caPEM } });
      // A fresh controller process (Node loading the TypeScript sources) takes tens of seconds to connect
      // on a loaded machine: a generous bound, and its output when even that is not enough.
      await waitForReason(c, ns, 'vc', 'Connected', 180_000).catch((e: Error) => stuck(e, proc.output));
      await c.create(GVRs.VMImportTask, {
        apiVersion: 'forklift.cozystack.io/v1alpha1',
        kind: 'VMImportTask',
        metadata: { name: 'import', namespace: ns },
        spec: { sourceRef: { name: 'vc' }, storageClass: cfg.className, vms: [{ id: cfg.vmId, name: VM_NAME }], ...(cfg.converted ? { guestConversion: true } : {}) },
      } as KubeObject);
      // The process dies by its own SIGKILL after the first step; its exit is an event. The import from the
      // task's creation to this step on a machine running the whole suite: 12–26 s, one once past 90 s.
      const exit = await Promise.race([
        proc.exited,
        new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`the controller process did not kill itself after ${first} within 5 min`)), 300_000).unref()),
      ]).catch((e: Error) => stuck(e, proc.output));
      assert.equal(exit.signal, 'SIGKILL', `killed by the hook after ${first} (exit ${exit.code}): ${proc.output()}`);
      reached.unshift(first);

      // Each later kill point: a fresh controller object, killed at the next point it reaches; the last one
      // (after release-claims, the handoff's last step) finishes the task.
      for (;;) {
        const killed = new Promise<string>((res) => (onKill = res));
        current = await controllerObject();
        const ctl = current;
        const how = await Promise.race([
          killed.then((point) => ({ killed: point })),
          waitFor(
            'the task to be Ready=True',
            async () => (readyOf(await c.get(GVRs.VMImportTask, ns, 'import'))?.status === 'True' ? { finished: true } : undefined),
            // One kill point to the next: a few seconds (the PV binder's 1 s resync, CDI's adoption); 3 min
            // for a machine running the whole suite.
            { timeoutMs: 180_000, intervalMs: 250 },
          ).catch((e: Error) => stuck(new Error(`${e.message} (${reached.length ? `the last kill point ${reached.at(-1)}; ` : ''}not reached: ${later.filter((p) => !reached.includes(p)).join(', ') || 'none'})`), ctl.output)),
        ]);
        onKill = undefined;
        current = undefined;
        await ctl.ctl.stop();
        if ('finished' in how) break;
      }
      console.log(`[crash] killed right after ${reached.join(', ')}; ${reached.length + 1} controllers in all`);
      // Every point was reached. Only the bind request can be skipped: the PV binder's 1 s periodic resync
      // may bind the claim before the handoff asks for it.
      assert.deepEqual(points.filter((p) => !reached.includes(p) && !p.startsWith(`${Step.RequestBind}:`)), [], `kill points reached: ${reached.join(', ')}`);
      assert.ok(leftover.done(), 'the leftover DataVolume was in place');

      const task = (await c.get(GVRs.VMImportTask, ns, 'import')) as unknown as VMImportTask;
      await volumes.stop();
      const vmStatus = task.status!.vms![0]!;
      assert.equal(vmStatus.phase, 'Succeeded');
      assert.equal(vmStatus.vmInstance, VM_NAME);

      const sel = { labelSelector: `${LABEL_TASK_UID}=${task.metadata.uid},${LABEL_VM_ID}=${cfg.vmId}` };
      const source = sim.world(cfg.url).vm(cfg.vmId)!;
      for (let i = 0; i < DISKS; i++) {
        const claimName = `vm-disk-${VM_NAME}-disk-${i}`;
        const claim = await c.get(GVRs.PersistentVolumeClaim, ns, claimName);
        assert.equal(St(claim).phase, 'Bound', `${claimName} Bound`);
        const pv = await c.get(GVRs.PersistentVolume, undefined, S(claim).volumeName as string);
        assert.ok(pv, `the volume of disk ${i} exists`);
        assert.equal(volumes.seen.get(pv.metadata!.name!), pv.metadata!.uid, `disk ${i}: the same PersistentVolume object the transfer filled`);
        assert.equal(pv.metadata?.annotations?.[CONTENT_ANNOTATION], contentIdentity(cfg.url, cfg.vmId, source.disks[i]!), `disk ${i}: the transferred content`);
        assert.equal(St(pv).phase, 'Bound');
        assert.equal((S(pv).claimRef as { uid: string }).uid, claim!.metadata!.uid);
        assert.equal(S(pv).persistentVolumeReclaimPolicy, 'Delete', 'the class’s reclaim policy');
      }
      assert.equal(volumes.seen.size, DISKS, `no other volume was ever provisioned in the namespace: ${[...volumes.seen.keys()].join(', ')}`);
      const names = async (gvr: (typeof GVRs)[keyof typeof GVRs], o = {}): Promise<string[]> => (await c.list(gvr, ns, o)).items.map((x) => x.metadata!.name!).sort();
      const expectedClaims = Array.from({ length: DISKS }, (_, i) => `vm-disk-${VM_NAME}-disk-${i}`);
      assert.deepEqual(await names(GVRs.PersistentVolumeClaim), expectedClaims, 'exactly the output claims: no transfer claim left');
      assert.deepEqual(await names(GVRs.DataVolume), expectedClaims, 'one DataVolume per disk');
      assert.deepEqual(await names(GVRs.VMDisk, sel), expectedClaims.map((n) => n.slice('vm-disk-'.length)), 'one VMDisk per disk');
      assert.deepEqual(await names(GVRs.VMInstance, sel), [VM_NAME], 'one VMInstance');
      assert.deepEqual(await names(GVRs.VirtualMachine, { labelSelector: `vmID=${cfg.vmId}` }), [], 'no scaffolding VirtualMachine');
      const released = (await c.list(GVRs.PersistentVolume)).items.filter((p) => (S(p).claimRef as { namespace?: string } | undefined)?.namespace === ns && St(p).phase !== 'Bound');
      assert.deepEqual(released.map((p) => `${p.metadata?.name}:${String(St(p).phase)}`), [], 'no Released volume');
      const vmi = await c.get(GVRs.VMInstance, ns, VM_NAME);
      assert.equal(S(vmi).runStrategy, 'Halted');
      assert.deepEqual(S(vmi).firmware, cfg.firmware);
      // Buses: a converted guest has virtio drivers (all virtio); a raw copy boots from SATA.
      assert.deepEqual(S(vmi).disks, expectedClaims.map((n) => ({ name: n.slice('vm-disk-'.length), bus: cfg.converted ? 'virtio' : 'sata' })));
      // The path the transfer took: one virt-v2v pod for a converted guest (left Succeeded), none for a raw copy.
      const v2v = (await rest.list(R.Pod, ns)).items.filter((p) => p.metadata.labels?.app === 'virt-v2v' && p.metadata.labels?.vmID === cfg.vmId);
      assert.deepEqual(v2v.map((p) => p.status?.phase), cfg.converted ? ['Succeeded'] : []);
    } finally {
      handoffHooks.afterStep = undefined;
      await leftover.stop();
      await volumes.stop();
      await stopProcess(proc);
      if (current) await current.ctl.stop();
    }
  });
}
