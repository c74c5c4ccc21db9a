// The shape of a real cluster, each scenario side by side with a baseline commit (--baseline, default
// f63458f: the code before the runtime learned these behaviours):
//  - crds: 500 CustomResourceDefinitions of realistic schema size installed (a Cozystack cluster has
//    hundreds; KubeVirt's, CDI's and the Prometheus operator's run to hundreds of KB each): the
//    controller's start-up (spawn to /readyz), its CPU to get there, its RSS at ready and its peak RSS;
//  - apf429: the API server answering 429 under load, as API Priority and Fairness does when the
//    controller's priority level is full (the fault proxy admits `--server-qps` requests a second and sheds
//    the rest with Retry-After 1): N one-VM imports created at once, the wall time until every one ended,
//    the 429s the controller met and the requests it sent;
//  - toolarge: watches getting "too large resource version", as after an etcd restore from a backup
//    (every resourceVersion handed out before it is newer than the restored store): the proxy ends every
//    watch and, for `--fault-seconds`, answers any watch or list at such a version "too large"; a task
//    created meanwhile shows how long the controller was blind, and the requests sent meanwhile how hard it
//    hammered the API server.
// Each scenario starts its own control plane; a --quick run starts one for all of them.
// Writes bench/results/cluster-<scenario>.json.
//
//   node bench/cluster.ts [--only crds,apf429,toolarge] [--crds 500] [--repeats 3] [--tasks 40] [--server-qps 20]
//                         [--fault-seconds 60] [--baseline f63458f] [--quick]
import { join } from 'node:path';
import { GVRs } from '../src/runtime/gvr.ts';
import type { KubeObject } from '../src/runtime/kube.ts';
import { writeKubeconfig } from '../test/e2e/env/index.ts';
import { NO_FAULTS, TOO_LARGE_RESOURCE_VERSION, startFaultProxy, type FaultProxy } from '../test/e2e/chaos/faultproxy.ts';
import { isMain, log, median, metricSum, mib, outcome, parseFlags, pool, revOf, round, spawnController, startEnv, taskObject, until, writeResult, type BenchEnv, type EnvOptions } from './lib.ts';

const DEFAULT_BASELINE = 'f63458f';

interface Side {
  name: 'current' | 'baseline';
  ref?: string;
}

// ---------------------------------------------------------------- 500 CRDs

/**
 * Schema sizes of the CRDs installed, in KB, cycling: most CRDs are small (20 KB), some mid-sized (100 KB:
 * cert-manager's Certificate, Cilium's policies) and one in twenty large (600 KB: KubeVirt's
 * VirtualMachine, the Prometheus operator's Prometheus). About 60 KB on average, 30 MB for 500.
 */
const SCHEMA_KB = [20, 20, 20, 20, 100, 20, 20, 20, 20, 100, 20, 20, 20, 20, 100, 20, 20, 20, 20, 600];

/** A CRD whose schema is about `kb` KB of nested properties with descriptions, as generated CRDs are. */
function bigCRD(i: number, kb: number): KubeObject {
  const group = `bench${i % 25}.example.com`;
  const plural = `things${i}`;
  const props: Record<string, unknown> = {};
  const per = 400; // bytes per property, description included
  for (let p = 0; p < Math.ceil((kb * 1024) / per); p++) {
    props[`field${p}`] = { type: 'object', description: `Field ${p} of a generated API type. `.padEnd(300, 'x'), properties: { value: { type: 'string' }, count: { type: 'integer' } } };
  }
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: { group, scope: 'Namespaced', names: { plural, singular: `thing${i}`, kind: `Thing${i}` }, versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: props } } } } }] },
  };
}

interface StartupRun {
  readyMs: number;
  cpuSeconds: number;
  rssAtReadyMiB: number;
  peakRssMiB: number;
}

async function startups(env: BenchEnv, side: Side, repeats: number): Promise<{ runs: StartupRun[]; readyMsMedian: number; cpuSecondsMedian: number; rssAtReadyMiBMedian: number; peakRssMiBMedian: number }> {
  const runs: StartupRun[] = [];
  for (let i = 0; i < repeats; i++) {
    const ctl = await spawnController(env, { vddk: false, ref: side.ref });
    try {
      const readyMs = await ctl.waitReady(300_000);
      const s = ctl.stats();
      runs.push({ readyMs, cpuSeconds: round(s.cpuSeconds, 2), rssAtReadyMiB: mib(s.rssBytes), peakRssMiB: mib(s.peakRssBytes) });
      log(`crds: ${side.name} run ${i + 1}/${repeats}: /readyz after ${readyMs} ms, ${s.cpuSeconds.toFixed(2)} CPU s, RSS ${mib(s.rssBytes)} MiB (peak ${mib(s.peakRssBytes)})`);
    } finally {
      await ctl.stop();
    }
  }
  return {
    runs,
    readyMsMedian: median(runs.map((r) => r.readyMs)),
    cpuSecondsMedian: round(median(runs.map((r) => r.cpuSeconds)), 2),
    rssAtReadyMiBMedian: median(runs.map((r) => r.rssAtReadyMiB)),
    peakRssMiBMedian: median(runs.map((r) => r.peakRssMiB)),
  };
}

/** The env `shared` (a plane the caller stops), else one started for the scenario (stopped at its end). */
async function scenarioEnv(shared: BenchEnv | undefined, o: EnvOptions): Promise<{ env: BenchEnv; stop: () => Promise<void> }> {
  if (shared) return { env: shared, stop: async () => undefined };
  const env = await startEnv(o);
  return { env, stop: () => env.stop() };
}

export async function benchCRDs(o: { crds: number; repeats: number; sides: Side[]; env?: BenchEnv }): Promise<Record<string, unknown>> {
  const { env, stop } = await scenarioEnv(o.env, { sim: false, auditLog: false });
  try {
    const without: Record<string, unknown> = {};
    for (const side of o.sides) without[side.name] = await startups(env, side, 1);
    log(`crds: installing ${o.crds} CRDs`);
    const t0 = Date.now();
    let bytes = 0;
    await pool(Array.from({ length: o.crds }, (_, i) => i), 4, async (i) => {
      const crd = bigCRD(i, SCHEMA_KB[i % SCHEMA_KB.length]!);
      bytes += JSON.stringify(crd).length;
      await env.admin.create(GVRs.CustomResourceDefinition, crd);
    });
    await until('every CRD Established', async () => {
      const l = await env.admin.listAll(GVRs.CustomResourceDefinition, undefined, { resourceVersion: '0' });
      const est = l.items.filter((c) => (c as { status?: { conditions?: Array<{ type: string; status: string }> } }).status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True'));
      return est.length >= o.crds;
    }, 600_000, 2_000);
    log(`crds: ${o.crds} CRDs (${mib(bytes)} MiB of JSON) installed and Established in ${Math.round((Date.now() - t0) / 1000)} s`);
    const withCRDs: Record<string, unknown> = {};
    for (const side of o.sides) withCRDs[side.name] = await startups(env, side, o.repeats);
    return { crds: o.crds, crdJSONMiB: mib(bytes), withoutCRDs: without, withCRDs };
  } finally {
    await stop();
  }
}

// ---------------------------------------------------------------- a proxy in front of the API server

async function viaProxy(env: BenchEnv): Promise<{ proxy: FaultProxy; kubeconfigPath: string }> {
  const proxy = await startFaultProxy(env.cp.info.server, env.cp.info.caPEM, NO_FAULTS);
  const kubeconfigPath = join(env.cp.info.dir, `controller-via-proxy-${Date.now()}.kubeconfig`);
  writeKubeconfig(kubeconfigPath, proxy.url, proxy.caPEM, env.cp.info.controller.name, env.cp.info.controller.token);
  return { proxy, kubeconfigPath };
}

async function waitTasks(env: BenchEnv, keys: Array<[string, string]>, timeoutMs: number): Promise<{ ended: number; failed: number }> {
  const ended = new Map<string, 'ready' | 'failed'>();
  await until(`${keys.length} tasks to end`, async () => {
    await pool(keys.filter(([ns, n]) => !ended.has(`${ns}/${n}`)), 8, async ([ns, n]) => {
      const out = outcome(await env.admin.get(GVRs.VMImportTask, ns, n));
      if (out) ended.set(`${ns}/${n}`, out);
    });
    return ended.size === keys.length;
  }, timeoutMs, 1_000).catch(() => undefined);
  return { ended: ended.size, failed: [...ended.values()].filter((v) => v === 'failed').length };
}

// ---------------------------------------------------------------- 429 under load

export async function benchAPF(o: { tasks: number; serverQPS: number; sides: Side[]; env?: BenchEnv }): Promise<Record<string, unknown>> {
  const namespaces = 4;
  const { env, stop } = await scenarioEnv(o.env, { oneDiskVMs: o.tasks * o.sides.length, auditLog: false, pvSyncPeriod: '1s' });
  const out: Record<string, unknown> = {};
  try {
    for (const side of o.sides) {
      const { proxy, kubeconfigPath } = await viaProxy(env);
      const ctl = await spawnController(env, { ref: side.ref, kubeconfigPath });
      try {
        await ctl.waitReady(300_000);
        const nss = Array.from({ length: namespaces }, (_, i) => `apf-${side.name}-${i}`);
        for (const ns of nss) await env.namespaceWithSource(ns);
        // From here the priority level is full: beyond serverQPS the API server sheds with 429.
        proxy.setServerLimit({ qps: o.serverQPS, burst: o.serverQPS });
        const r0 = proxy.requests;
        const s0 = ctl.stats();
        const t0 = Date.now();
        const keys: Array<[string, string]> = [];
        await pool(Array.from({ length: o.tasks }, (_, i) => i), 8, async (i) => {
          const ns = nss[i % namespaces]!;
          const name = `t${i}`;
          keys.push([ns, name]);
          await env.admin.create(GVRs.VMImportTask, taskObject(ns, name, [env.takeVM(1)]));
        });
        const res = await waitTasks(env, keys, 600_000);
        const wallSeconds = (Date.now() - t0) / 1000;
        const m = await ctl.metrics().catch(() => '');
        const s1 = ctl.stats();
        out[side.name] = {
          ref: side.ref ? revOf(side.ref) : 'working tree',
          tasks: o.tasks,
          ended: res.ended,
          failed: res.failed,
          wallSeconds: round(wallSeconds, 1),
          requests: proxy.requests - r0,
          answered429: proxy.counts.apf429 ?? 0,
          share429: round((proxy.counts.apf429 ?? 0) / Math.max(1, proxy.requests - r0), 3),
          controllerCPUSeconds: round(s1.cpuSeconds - s0.cpuSeconds, 1),
          reconcileErrors: metricSum(m, 'migration_controller_reconcile_errors_total'),
          rateLimiterWaitSeconds: round(metricSum(m, 'migration_controller_rest_client_rate_limiter_duration_seconds_sum'), 1),
        };
        log(`apf429: ${side.name}: ${res.ended}/${o.tasks} ended (${res.failed} failed) in ${round(wallSeconds, 1)} s; ${proxy.requests - r0} requests, ${proxy.counts.apf429 ?? 0} answered 429`);
      } finally {
        await ctl.stop();
        await proxy.close();
      }
    }
    return { serverQPS: o.serverQPS, ...out };
  } finally {
    await stop();
  }
}

// ---------------------------------------------------------------- too large resource version

export async function benchTooLarge(o: { faultSeconds: number; sides: Side[]; env?: BenchEnv }): Promise<Record<string, unknown>> {
  const { env, stop } = await scenarioEnv(o.env, { oneDiskVMs: 2 * o.sides.length, auditLog: false, pvSyncPeriod: '1s' });
  const out: Record<string, unknown> = {};
  try {
    for (const side of o.sides) {
      const { proxy, kubeconfigPath } = await viaProxy(env);
      const ctl = await spawnController(env, { ref: side.ref, kubeconfigPath });
      try {
        await ctl.waitReady(300_000);
        const ns = `toolarge-${side.name}`;
        await env.namespaceWithSource(ns);
        // The restore: every resourceVersion up to now is newer than what the restored store has.
        const restoredBelow = Number((await env.admin.list(GVRs.Namespace, undefined, { limit: 1 })).metadata.resourceVersion);
        const handedOut = (q: string): boolean => {
          const m = /(?:^|&)resourceVersion=(\d+)/.exec(q);
          return !!m && Number(m[1]) > 0 && Number(m[1]) <= restoredBelow;
        };
        proxy.setInterceptor((r) => (r.method === 'GET' && handedOut(r.query) ? { code: 504, status: TOO_LARGE_RESOURCE_VERSION, asWatchEvent: r.watch } : undefined));
        const r0 = proxy.requests;
        const cut = proxy.cutWatches();
        const t0 = Date.now();
        await env.admin.create(GVRs.VMImportTask, taskObject(ns, 'during', [env.takeVM(1)]));
        // Blind time: from the create to the first status the controller writes for it.
        let seenAt: number | undefined;
        let lifted = false;
        const liftAt = t0 + o.faultSeconds * 1000;
        await until('the task created during the fault to get a status', async () => {
          if (!lifted && Date.now() >= liftAt) {
            proxy.setInterceptor(undefined);
            lifted = true;
          }
          const t = (await env.admin.get(GVRs.VMImportTask, ns, 'during')) as (KubeObject & { status?: { phase?: string } }) | undefined;
          if (t?.status?.phase) seenAt = Date.now();
          return seenAt;
        }, o.faultSeconds * 1000 + 180_000, 200);
        const requestsDuringFault = proxy.requests - r0;
        proxy.setInterceptor(undefined);
        const res = await waitTasks(env, [[ns, 'during']], 300_000);
        out[side.name] = {
          ref: side.ref ? revOf(side.ref) : 'working tree',
          watchesCut: cut,
          blindSeconds: round((seenAt! - t0) / 1000, 1),
          answeredTooLarge: proxy.counts['intercepted:504'] ?? 0,
          requestsUntilSeen: requestsDuringFault,
          seenBeforeFaultLifted: seenAt! < liftAt,
          ended: res.ended,
        };
        log(`toolarge: ${side.name}: the task created during the fault got a status after ${round((seenAt! - t0) / 1000, 1)} s (fault lasts ${o.faultSeconds} s); ${proxy.counts['intercepted:504'] ?? 0} answers "too large"`);
      } finally {
        await ctl.stop();
        await proxy.close();
      }
    }
    return { faultSeconds: o.faultSeconds, ...out };
  } finally {
    await stop();
  }
}

if (isMain(import.meta)) {
  const flags = parseFlags(process.argv.slice(2));
  const quick = flags.has('quick');
  const baseline = flags.get('baseline') ?? DEFAULT_BASELINE;
  const sides: Side[] = [{ name: 'current' }, { name: 'baseline', ref: baseline }];
  const only = (flags.get('only') ?? 'crds,apf429,toolarge').split(',');
  const print = (name: string, f: Record<string, unknown>): void => {
    console.log(`\n== ${name} (baseline ${revOf(baseline)})\n${JSON.stringify(f, null, 2)}`);
  };
  const tasks = Number(flags.get('tasks') ?? (quick ? 8 : 40));
  // A quick run (the smoke run) puts every chosen scenario on one control plane, each in its own
  // namespaces: a plane costs ~9 CPU s to start and stop, and a quick run's figures are not compared. A
  // measured run keeps one plane per scenario, so that no scenario's figures carry another's leftovers (the
  // CRDs installed, the tasks imported, a simulator the crds scenario does not need).
  const shared = quick && only.filter((s) => ['crds', 'apf429', 'toolarge'].includes(s)).length > 1
    ? await startEnv({ oneDiskVMs: (tasks + 2) * sides.length, auditLog: false, pvSyncPeriod: '1s' })
    : undefined;
  if (shared) log('cluster: --quick: every scenario on this one control plane');
  try {
    if (only.includes('crds')) {
      const crds = Number(flags.get('crds') ?? (quick ? 50 : 500));
      const repeats = Number(flags.get('repeats') ?? (quick ? 1 : 3));
      const f = await benchCRDs({ crds, repeats, sides, env: shared });
      print('crds', f);
      console.log(`  → ${writeResult('cluster-crds', { crds, repeats, baseline, quick, sharedPlane: !!shared }, f)}`);
    }
    if (only.includes('apf429')) {
      const serverQPS = Number(flags.get('server-qps') ?? 20);
      const f = await benchAPF({ tasks, serverQPS, sides, env: shared });
      print('apf429', f);
      console.log(`  → ${writeResult('cluster-apf429', { tasks, serverQPS, baseline, quick, sharedPlane: !!shared }, f)}`);
    }
    if (only.includes('toolarge')) {
      const faultSeconds = Number(flags.get('fault-seconds') ?? (quick ? 10 : 60));
      const f = await benchTooLarge({ faultSeconds, sides, env: shared });
      print('toolarge', f);
      console.log(`  → ${writeResult('cluster-toolarge', { faultSeconds, baseline, quick, sharedPlane: !!shared }, f)}`);
    }
  } finally {
    await shared?.stop();
  }
}
