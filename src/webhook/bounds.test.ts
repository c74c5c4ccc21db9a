// Item: one request must not freeze the controller. Every tenant-controlled string is held to its bound
// before any rule parses it, and the one parser that reads a large string (PEM) does work linear in it.
// Timing-independent: the bound is shown to act before the parser (a denial naming the bound, from a
// reviewer whose cluster client throws on any call), and the parser's work is counted, not timed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crdSchema } from '../api/models.ts';
import type { KubeClient } from '../runtime/kube.ts';
import { StaticKeyring } from '../credentials/keyring.ts';
import { scanPem } from '../preflight/tls.ts';
import { PATHS } from './config.ts';
import { createReviewer } from './server.ts';
import { MAX_UNSCHEMED_STRING, boundProblems } from './bounds.ts';

const noCluster = new Proxy({}, { get: () => () => { throw new Error('a review of an oversized object must not reach the cluster'); } }) as unknown as KubeClient;
const reviewer = createReviewer({ client: noCluster, keyring: new StaticKeyring() });

type Schema = { type?: string; maxLength?: number; properties?: Record<string, Schema>; items?: Schema };
type Step = string | 0;

/** Every string field of a schema that declares maxLength, as a path (array items at index 0). */
function boundedStrings(s: Schema, path: Step[] = []): Array<{ path: Step[]; max: number }> {
  if (s.type === 'string' && typeof s.maxLength === 'number') return [{ path, max: s.maxLength }];
  if (s.type === 'array' && s.items) return boundedStrings(s.items, [...path, 0]);
  return Object.entries(s.properties ?? {}).flatMap(([k, v]) => (k === 'status' && path.length === 0 ? [] : boundedStrings(v, [...path, k])));
}

function setAt(root: Record<string, unknown>, path: Step[], value: string): void {
  let cur: Record<string | number, unknown> = root;
  path.forEach((k, i) => {
    if (i === path.length - 1) {
      cur[k] = value;
      return;
    }
    cur[k] ??= path[i + 1] === 0 ? [] : {};
    if (Array.isArray(cur[k]) && (cur[k] as unknown[]).length === 0) (cur[k] as unknown[]).push({});
    cur = cur[k] as Record<string | number, unknown>;
  });
}

const base = {
  source: () => ({ apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name: 'vc', namespace: 'tenant-a' }, spec: { type: 'vsphere', url: 'https://vc.example.com/sdk', credentials: { username: 'u@vsphere.local', password: 'pw', insecureSkipVerify: true } } }),
  task: () => ({ apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportTask', metadata: { name: 't', namespace: 'tenant-a' }, spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1' }] } }),
};

async function answer(kind: 'VMImportSource' | 'VMImportTask', path: string, object: unknown) {
  const r = await reviewer.review(path, { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u', kind: { group: 'forklift.cozystack.io', version: 'v1alpha1', kind }, operation: 'CREATE', namespace: 'tenant-a', object } });
  return { allowed: r.response!.allowed, message: r.response!.status?.message ?? '' };
}

for (const [kind, plural, paths] of [
  ['VMImportSource', 'vmimportsources', [PATHS.earlySource, PATHS.validateSource]],
  ['VMImportTask', 'vmimporttasks', [PATHS.earlyTask, PATHS.validateTask]],
] as const) {
  const fields = boundedStrings(crdSchema(plural) as Schema);
  test(`every bounded string of a ${kind} at 10 times its bound is denied by the bound, naming the field, before any rule or cluster read`, async () => {
    assert.ok(fields.length >= 5, `the ${kind} schema bounds its strings (${fields.length} found)`);
    for (const f of fields) {
      const o = (kind === 'VMImportSource' ? base.source() : base.task()) as Record<string, unknown>;
      setAt(o, f.path, '-----BEGIN CERTIFICATE-----\n'.repeat(Math.ceil((10 * f.max) / 28)).slice(0, 10 * f.max));
      const field = f.path.map((k) => (k === 0 ? '[0]' : `.${k}`)).join('').slice(1);
      for (const p of paths) {
        const r = await answer(kind, p, o);
        assert.equal(r.allowed, false, `${p} ${field}`);
        assert.match(r.message, new RegExp(`^${field.replace(/[.[\]]/g, '\\$&')} is longer than ${f.max} characters \\(${10 * f.max}\\)`), `${p} ${field}: ${r.message.slice(0, 200)}`);
      }
    }
  });
  test(`every bounded string of a ${kind} at its bound passes the bound`, () => {
    for (const f of fields) {
      const o = (kind === 'VMImportSource' ? base.source() : base.task()) as Record<string, unknown>;
      setAt(o, f.path, 'x'.repeat(f.max));
      assert.deepEqual(boundProblems(plural, o), [], f.path.join('.'));
    }
  });
}

test('strings the schema leaves unbounded (metadata, annotations) are held to the API server\'s annotation cap', () => {
  const o = { ...base.source(), metadata: { name: 'vc', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': 'x'.repeat(MAX_UNSCHEMED_STRING + 1) } } };
  assert.match(boundProblems('vmimportsources', o)[0] ?? '', /^metadata\.annotations\.kubectl\.kubernetes\.io\/last-applied-configuration is longer than 262144 characters/);
});

test('the PEM scan visits each character of hostile input a bounded number of times, at the caCert bound and at 10 times it', () => {
  const max = 65536;
  const hostile: Array<(n: number) => string> = [
    (n) => '-----BEGIN CERTIFICATE-----\n'.repeat(n / 28 + 1).slice(0, n), // BEGINs never closed (the quadratic case of the old regex)
    (n) => `-----BEGIN ${'A'.repeat(n)}`, // a label that never ends
    (n) => '-'.repeat(n),
    (n) => '-----BEGIN A----------END B-----'.repeat(n / 32 + 1).slice(0, n), // labels that never match
    (n) => '-----BEGIN CERTIFICATE-----AAAA-----END CERTIFICATE-----'.repeat(n / 55 + 1).slice(0, n),
  ];
  for (const make of hostile) {
    const small = scanPem(make(max)).steps;
    const large = scanPem(make(10 * max)).steps;
    assert.ok(small <= 8 * max, `steps ${small} for ${max} characters`);
    assert.ok(large <= 8 * 10 * max, `steps ${large} for ${10 * max} characters`);
    assert.ok(large <= 11 * small, `10x the input costs ${large / small}x the steps`);
  }
});

test('the PEM scan finds the blocks a bundle holds, whatever precedes them', () => {
  const cert = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----';
  const key = '-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----';
  assert.deepEqual(scanPem(`junk\n-----BEGIN X-----\n${key}\n${cert}\n`).blocks.map((b) => [b.label, b.text]), [['RSA PRIVATE KEY', key], ['CERTIFICATE', cert]]);
  assert.deepEqual(scanPem('-----BEGIN CERTIFICATE-----\nno end').blocks, []);
});
