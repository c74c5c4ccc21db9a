// Robustness: at least 5,000 random and mutated AdmissionReviews sent straight to the server over HTTPS.
// Every answer must be HTTP 200 with a well-formed AdmissionReview (allowed, or denied with a message)
// echoing the uid when there was one — never a 5xx, a hang or a crash.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import fc from 'fast-check';
import { adminKubeConfig, freshNamespace, installOurCRDs } from './env/index.ts';
import { KubeClient } from '../../src/runtime/kube.ts';
import { generateCA } from '../../src/webhook/certs.ts';
import { PATHS } from '../../src/webhook/config.ts';
import { isWellFormedResponse } from '../../src/webhook/review.ts';
import { startTestWebhook, type TestWebhook } from '../../src/webhook/testkit.ts';
import type { InventoryReader } from '../../src/webhook/validate-task.ts';

const TOTAL = 6000;
const CONCURRENCY = 16;
/** Per-request bound: the API server gives up after 5 s, so anything slower is a hang. */
const HANG_MS = 5000;
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);

let client: KubeClient;
let wh: TestWebhook;
let ns: string;
let agent: https.Agent;

// An inventory that answers with junk, throws, or hangs past the read timeout now and then.
const junk = fc.sample(fc.anything({ maxDepth: 3 }), { numRuns: 50, seed: SEED });
let calls = 0;
const inventory: InventoryReader = {
  async getVM(_p, id) {
    const n = calls++;
    if (n % 7 === 0) throw new Error('inventory down');
    if (n % 11 === 0) return await new Promise(() => undefined);
    if (n % 3 === 0) return junk[n % junk.length] as never;
    return { name: `vm ${id}`, host: 'host-1', disks: [{ capacity: 2 ** 34 }] };
  },
  async listHosts() {
    const n = calls++;
    if (n % 13 === 0) throw new Error('inventory down');
    return (n % 5 === 0 ? junk[n % junk.length] : [{ id: 'host-1', name: '10.96.0.9' }]) as never;
  },
};

const ca = generateCA({ commonName: 'fuzz', validityMs: 86_400_000 });

function validSource(namespace: string) {
  return {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportSource',
    metadata: { name: 'vc', namespace },
    spec: {
      type: 'vsphere',
      url: 'https://vc.example/sdk',
      credentials: { username: 'u@vsphere.local', password: 'p', caCert: ca.certPEM },
      hosts: [{ id: 'host-1', address: '10.0.0.1', credentials: { username: 'root', password: 'p', insecureSkipVerify: true } }],
    },
  };
}
function validTask(namespace: string) {
  return {
    apiVersion: 'forklift.cozystack.io/v1alpha1',
    kind: 'VMImportTask',
    metadata: { name: 't', namespace },
    spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1', name: 'web' }, { id: 'vm-2' }], storageClass: 'fast', networks: [{ source: 'network-1', type: 'multus', name: 'br' }] },
  };
}
function review(kind: 'VMImportSource' | 'VMImportTask', operation: string, object: unknown, oldObject: unknown, uid: string, namespace: string) {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: 'forklift.cozystack.io', version: 'v1alpha1', kind },
      resource: { group: 'forklift.cozystack.io', version: 'v1alpha1', resource: kind === 'VMImportSource' ? 'vmimportsources' : 'vmimporttasks' },
      name: 'x',
      namespace,
      operation,
      userInfo: { username: 'tenant-a' },
      object,
      oldObject,
      dryRun: false,
    },
  };
}

type Path = (string | number)[];
/** Applies mutations (set a value or delete a key at a random path) to a deep copy. */
function mutate(root: unknown, muts: Array<{ path: number[]; del: boolean; value: unknown }>): unknown {
  const copy = structuredClone(root) as Record<string, unknown>;
  for (const m of muts) {
    let cur: unknown = copy;
    const trail: Path = [];
    for (const step of m.path) {
      if (cur === null || typeof cur !== 'object') break;
      const keys = Object.keys(cur as object);
      if (!keys.length) break;
      const k = keys[step % keys.length]!;
      trail.push(k);
      if (trail.length === m.path.length) {
        if (m.del) delete (cur as Record<string, unknown>)[k];
        else (cur as Record<string, unknown>)[k] = m.value;
        break;
      }
      cur = (cur as Record<string, unknown>)[k];
    }
  }
  return copy;
}

function post(path: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port: wh.server.port, path, method: 'POST', agent, ca: wh.caPEM, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) }, timeout: HANG_MS },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${HANG_MS} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

before(async () => {
  await installOurCRDs();
  client = new KubeClient(await adminKubeConfig());
  wh = await startTestWebhook({ client, inventory, install: false, readTimeoutMs: 300 });
  ns = await freshNamespace('wh-fuzz');
  agent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY, ca: wh.caPEM });
});

after(async () => {
  agent?.destroy();
  await wh?.stop();
  client?.close();
});

test(`${TOTAL} random and mutated AdmissionReviews each get a well-formed answer, never a 5xx or a hang`, async () => {
  const paths = [PATHS.validateSource, PATHS.validateTask, PATHS.earlySource, PATHS.validateTask, PATHS.earlyTask];
  const mutation = fc.record({ path: fc.array(fc.nat(20), { minLength: 1, maxLength: 6 }), del: fc.boolean(), value: fc.anything({ maxDepth: 2, withNullPrototype: false }) });
  const kinds = fc.constantFrom('VMImportSource' as const, 'VMImportTask' as const);
  const arb = fc.oneof(
    // a valid review, mutated anywhere (envelope, object, old object)
    { weight: 5, arbitrary: fc.tuple(kinds, fc.constantFrom('CREATE', 'UPDATE', 'DELETE'), fc.array(mutation, { maxLength: 5 }), fc.uuid(), fc.constantFrom(ns, 'no-such-ns', '', 'a/b')).map(([k, op, muts, uid, n]) => {
      const obj = k === 'VMImportSource' ? validSource(n) : validTask(n);
      return { body: JSON.stringify(mutate(review(k, op, obj, op === 'UPDATE' ? obj : undefined, uid, n), muts)), uid };
    }) },
    // a well-formed envelope around a random object
    { weight: 2, arbitrary: fc.tuple(kinds, fc.anything({ maxDepth: 4 }), fc.uuid()).map(([k, o, uid]) => ({ body: JSON.stringify(review(k, 'CREATE', o, undefined, uid, ns)), uid })) },
    // any JSON at all
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((j) => ({ body: JSON.stringify(j), uid: undefined })) },
    // not JSON: random text, truncated reviews
    { weight: 1, arbitrary: fc.oneof(fc.string({ maxLength: 200 }), fc.nat(400).map((n) => JSON.stringify(review('VMImportTask', 'CREATE', validTask(ns), undefined, 'u', ns)).slice(0, n))).map((s) => ({ body: s, uid: undefined })) },
  );
  const cases = fc.sample(fc.tuple(arb, fc.constantFrom(...paths)), { numRuns: TOTAL, seed: SEED });
  const failures: string[] = [];
  let allowed = 0;
  let denied = 0;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < cases.length) {
      const [c, path] = cases[next++]!;
      try {
        const r = await post(path, c.body);
        if (r.status !== 200) {
          failures.push(`HTTP ${r.status} for ${c.body.slice(0, 200)}`);
          continue;
        }
        const out = JSON.parse(r.text) as { response?: { uid?: string; allowed?: boolean } };
        if (!isWellFormedResponse(out)) failures.push(`malformed answer ${r.text.slice(0, 200)} for ${c.body.slice(0, 200)}`);
        else if (out.response!.allowed) allowed++;
        else denied++;
        // A well-formed review's uid must come back unchanged.
        let sent: unknown;
        try {
          sent = JSON.parse(c.body);
        } catch {
          sent = undefined;
        }
        const sentUid = (sent as { request?: { uid?: unknown } } | undefined)?.request?.uid;
        if (typeof sentUid === 'string' && sentUid.length > 0 && sentUid.length <= 256 && out.response?.uid !== sentUid && (sent as { kind?: unknown }).kind === 'AdmissionReview') {
          const envelopeOk = (sent as { apiVersion?: unknown }).apiVersion === 'admission.k8s.io/v1';
          if (envelopeOk) failures.push(`uid ${sentUid} came back as ${out.response?.uid}`);
        }
      } catch (e) {
        failures.push(`${(e as Error).message} for ${c.body.slice(0, 200)}`);
      }
      if (failures.length > 20) return;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  console.log(`fuzz seed ${SEED}: ${cases.length} reviews, ${allowed} allowed, ${denied} denied, ${failures.length} failures`);
  assert.deepEqual(failures.slice(0, 10), [], `seed ${SEED}`);
  assert.ok(allowed + denied >= 5000);
  assert.ok(allowed > 100 && denied > 1000, 'the corpus exercises both outcomes');
  // The server is still up and answering.
  const health = await new Promise<number>((resolve, reject) => {
    https.get({ host: '127.0.0.1', port: wh.server.port, path: '/healthz', agent }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
  assert.equal(health, 200);
});
