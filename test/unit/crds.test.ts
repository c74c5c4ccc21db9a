// Our CRDs (crds/) are the wire contract: these tests keep them structural, self-documenting for
// `kubectl explain`, installable on Kubernetes 1.20, and identical in shape to src/api/types.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import ts from 'typescript';
import { TASK_MODES, TASK_PHASES, VM_PHASES, VM_VERDICTS } from '../../src/api/types.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface Schema {
  type?: string;
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  [k: string]: unknown;
}

interface CRD {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: {
    group: string;
    scope: string;
    names: { kind: string; plural: string; singular: string; listKind: string; shortNames?: string[]; categories?: string[] };
    versions: Array<{
      name: string;
      served: boolean;
      storage: boolean;
      subresources?: { status?: object };
      additionalPrinterColumns?: Array<{ name: string; type: string; jsonPath: string; priority?: number }>;
      schema: { openAPIV3Schema: Schema };
    }>;
  };
}

function loadCRD(file: string): CRD {
  const docs = YAML.parseAllDocuments(readFileSync(join(ROOT, 'crds', file), 'utf8'));
  assert.equal(docs.length, 1, `${file} holds exactly one document`);
  return docs[0]!.toJSON() as CRD;
}

const SOURCE = loadCRD('forklift.cozystack.io_vmimportsources.yaml');
const TASK = loadCRD('forklift.cozystack.io_vmimporttasks.yaml');

function schemaOf(crd: CRD): Schema {
  return crd.spec.versions[0]!.schema.openAPIV3Schema;
}

/** Visits every schema node with its path (properties and array items). */
function walk(s: Schema, path: string, visit: (s: Schema, path: string) => void): void {
  visit(s, path);
  for (const [k, v] of Object.entries(s.properties ?? {})) walk(v, `${path}.${k}`, visit);
  if (s.items) walk(s.items, `${path}[]`, visit);
}

for (const [crd, kind, plural, short] of [
  [SOURCE, 'VMImportSource', 'vmimportsources', ['vmisrc', 'vmimportsrc']],
  [TASK, 'VMImportTask', 'vmimporttasks', ['vmit']],
] as const) {
  test(`${kind} is a namespaced v1alpha1 kind with a status subresource, short names ${short.join(', ')} and category vmimport`, () => {
    assert.equal(crd.apiVersion, 'apiextensions.k8s.io/v1');
    assert.equal(crd.kind, 'CustomResourceDefinition');
    assert.equal(crd.metadata.name, `${plural}.forklift.cozystack.io`);
    assert.equal(crd.spec.group, 'forklift.cozystack.io');
    assert.equal(crd.spec.scope, 'Namespaced');
    assert.equal(crd.spec.names.kind, kind);
    assert.equal(crd.spec.names.plural, plural);
    assert.deepEqual(crd.spec.names.shortNames, [...short]);
    assert.deepEqual(crd.spec.names.categories, ['vmimport']);
    assert.equal(crd.spec.versions.length, 1);
    const v = crd.spec.versions[0]!;
    assert.equal(v.name, 'v1alpha1');
    assert.equal(v.served, true);
    assert.equal(v.storage, true);
    assert.deepEqual(v.subresources, { status: {} });
  });

  test(`every field of ${kind} carries a description, so kubectl explain teaches the API`, () => {
    const missing: string[] = [];
    walk(schemaOf(crd), kind, (s, path) => {
      if (path === `${kind}.metadata`) return; // explained by ObjectMeta
      if (!s.description || s.description.trim().length < 8) missing.push(path);
    });
    assert.deepEqual(missing, []);
  });

  test(`${kind}'s schema is structural and uses nothing Kubernetes 1.20 drops or rejects`, () => {
    const problems: string[] = [];
    walk(schemaOf(crd), kind, (s, path) => {
      if (!s.type && !s['x-kubernetes-preserve-unknown-fields']) problems.push(`${path}: no type`);
      if ('x-kubernetes-validations' in s) problems.push(`${path}: CEL rules are dropped by Kubernetes 1.20`);
      for (const j of ['oneOf', 'anyOf', 'allOf', 'not']) if (j in s) problems.push(`${path}: ${j} (cross-field rules belong to the webhook)`);
      if (s.type === 'object' && !s.properties && !s['x-kubernetes-preserve-unknown-fields'] && path !== `${kind}.metadata`) problems.push(`${path}: object without properties would be pruned empty`);
      if (s.type === 'array' && !s.items) problems.push(`${path}: array without items`);
      for (const r of s.required ?? []) if (!s.properties?.[r]) problems.push(`${path}: required ${r} is not declared`);
      // Kubernetes 1.20 rejects a list-map whose keys are not declared and required (or defaulted) in the item.
      if (s['x-kubernetes-list-type'] === 'map') {
        const keys = s['x-kubernetes-list-map-keys'] ?? [];
        if (!keys.length) problems.push(`${path}: list-map without keys`);
        for (const k of keys) {
          if (!s.items?.properties?.[k]) problems.push(`${path}: list-map key ${k} not declared`);
          if (!s.items?.required?.includes(k)) problems.push(`${path}: list-map key ${k} not required`);
        }
      }
      if (typeof s.pattern === 'string') {
        try {
          new RegExp(s.pattern);
        } catch (e) {
          problems.push(`${path}: bad pattern ${(e as Error).message}`);
        }
      }
    });
    assert.deepEqual(problems, []);
  });

  test(`${kind}'s conditions follow API conventions (type/status/reason/message/lastTransitionTime/observedGeneration, keyed by type)`, () => {
    const c = schemaOf(crd).properties!.status!.properties!.conditions!;
    assert.equal(c['x-kubernetes-list-type'], 'map');
    assert.deepEqual(c['x-kubernetes-list-map-keys'], ['type']);
    assert.deepEqual(Object.keys(c.items!.properties!).sort(), ['lastTransitionTime', 'message', 'observedGeneration', 'reason', 'status', 'type']);
    assert.deepEqual(c.items!.properties!.status!.enum, ['True', 'False', 'Unknown']);
    assert.equal(c.items!.properties!.lastTransitionTime!.format, 'date-time');
  });
}

test("a task's per-VM status list, written whole by the controller alone, is atomic: no list-map the API server tracks entry by entry", () => {
  // A list-map keyed by VM id made the server track every field of every entry: a status write of a
  // 200-VM task cost ~0.7 s of kube-apiserver CPU (~0.07 s atomic), and each VM's change waited on it.
  const maps: string[] = [];
  walk(schemaOf(TASK).properties!.status!.properties!.vms!, 'status.vms', (s, path) => {
    // Unset is atomic too (the API server's default for a list).
    const t = s['x-kubernetes-list-type'];
    if (t === 'map' || t === 'set') maps.push(`${path}: ${t}`);
  });
  assert.deepEqual(maps, []);
});

const READY = '.status.conditions[?(@.type=="Ready")]';

test('kubectl get vmisrc shows Type, URL, Ready, Reason, the VMs per readiness verdict and Age', () => {
  const cols = SOURCE.spec.versions[0]!.additionalPrinterColumns!;
  assert.deepEqual(
    cols.map((c) => [c.name, c.jsonPath]),
    [
      ['Type', '.spec.type'],
      ['URL', '.spec.url'],
      ['Ready', `${READY}.status`],
      ['Reason', `${READY}.reason`],
      ['VMs', '.status.inventory.total'],
      ['Ready-VMs', '.status.inventory.summary.ready'],
      ['Warnings', '.status.inventory.summary.readyWithWarnings'],
      ['Blocked', '.status.inventory.summary.blocked'],
      ['Age', '.metadata.creationTimestamp'],
    ],
  );
});

test('kubectl get vmit shows Source, Mode, Phase, Progress, the whole task’s ETA, Ready and Age, and -o wide the precopies and downtime per VM, the cutover time and the message', () => {
  const cols = TASK.spec.versions[0]!.additionalPrinterColumns!;
  assert.deepEqual(
    cols.filter((c) => !c.priority).map((c) => [c.name, c.jsonPath]),
    [['Source', '.spec.sourceRef.name'], ['Mode', '.spec.mode'], ['Phase', '.status.phase'], ['Progress', '.status.progress'], ['ETA', '.status.transfer.eta'], ['Ready', `${READY}.status`], ['Age', '.metadata.creationTimestamp']],
  );
  assert.deepEqual(
    cols.filter((c) => c.priority).map((c) => [c.name, c.jsonPath]),
    [['Precopies', '.status.vms[*].warm.precopies'], ['Downtime', '.status.vms[*].downtimeSeconds'], ['Cutover', '.spec.cutover'], ['Message', '.status.message']],
  );
});

test('a source URL must be https and a VM id a managed-object reference', () => {
  const url = new RegExp(schemaOf(SOURCE).properties!.spec!.properties!.url!.pattern as string);
  assert.ok(url.test('https://vcenter.example.com/sdk'));
  assert.ok(!url.test('http://vcenter.example.com/sdk'));
  const id = new RegExp(schemaOf(TASK).properties!.spec!.properties!.vms!.items!.properties!.id!.pattern as string);
  assert.ok(id.test('vm-1234'));
  assert.ok(!id.test('web-01'));
});

// ---------------------------------------------------------------------------------------------------
// Field-for-field agreement with src/api/types.ts (read with the TypeScript compiler, not by hand).
// ---------------------------------------------------------------------------------------------------

const typesFile = join(ROOT, 'src/api/types.ts');
const sf = ts.createSourceFile(typesFile, readFileSync(typesFile, 'utf8'), ts.ScriptTarget.ES2022, true);
const interfaces = new Map<string, ts.InterfaceDeclaration>();
const aliases = new Map<string, ts.TypeAliasDeclaration>();
for (const st of sf.statements) {
  if (ts.isInterfaceDeclaration(st)) interfaces.set(st.name.text, st);
  if (ts.isTypeAliasDeclaration(st)) aliases.set(st.name.text, st);
}
/** Type aliases whose values are runtime arrays (`(typeof X)[number]`). */
const ENUM_ALIASES: Record<string, readonly string[]> = { TaskPhase: TASK_PHASES, VMPhase: VM_PHASES, TaskMode: TASK_MODES, VMVerdict: VM_VERDICTS };

function compareMembers(members: ts.NodeArray<ts.TypeElement>, s: Schema, path: string, out: string[]): void {
  if (s.type !== 'object') out.push(`${path}: schema type ${s.type}, expected object`);
  const tsFields = new Map<string, ts.PropertySignature>();
  for (const m of members) if (ts.isPropertySignature(m)) tsFields.set(m.name.getText(sf), m);
  const schemaFields = Object.keys(s.properties ?? {});
  for (const f of tsFields.keys()) if (!schemaFields.includes(f)) out.push(`${path}.${f}: in types.ts, missing from the CRD (the API server would prune it)`);
  for (const f of schemaFields) if (!tsFields.has(f)) out.push(`${path}.${f}: in the CRD, missing from types.ts`);
  const tsRequired = [...tsFields.entries()].filter(([, m]) => !m.questionToken).map(([k]) => k).sort();
  const schemaRequired = [...(s.required ?? [])].sort();
  if (JSON.stringify(tsRequired) !== JSON.stringify(schemaRequired)) out.push(`${path}: required ${JSON.stringify(schemaRequired)} vs types.ts ${JSON.stringify(tsRequired)}`);
  for (const [f, m] of tsFields) {
    const sub = s.properties?.[f];
    if (sub && m.type) compareType(m.type, sub, `${path}.${f}`, out);
  }
}

function compareType(t: ts.TypeNode, s: Schema, path: string, out: string[]): void {
  // An untyped node that keeps whatever it is given (status.vms[].disks[] while tasks an earlier version
  // wrote still hold objects there) admits every value types.ts declares.
  if (s.type === undefined && s['x-kubernetes-preserve-unknown-fields'] === true) return;
  if (t.kind === ts.SyntaxKind.StringKeyword) {
    if (s.type !== 'string') out.push(`${path}: ${s.type} vs string`);
  } else if (t.kind === ts.SyntaxKind.NumberKeyword) {
    if (s.type !== 'number' && s.type !== 'integer') out.push(`${path}: ${s.type} vs number`);
  } else if (t.kind === ts.SyntaxKind.BooleanKeyword) {
    if (s.type !== 'boolean') out.push(`${path}: ${s.type} vs boolean`);
  } else if (ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal)) {
    if (JSON.stringify(s.enum) !== JSON.stringify([t.literal.text])) out.push(`${path}: enum ${JSON.stringify(s.enum)} vs '${t.literal.text}'`);
  } else if (ts.isUnionTypeNode(t) && t.types.every((u) => ts.isLiteralTypeNode(u) && ts.isStringLiteral(u.literal))) {
    const values = t.types.map((u) => ((u as ts.LiteralTypeNode).literal as ts.StringLiteral).text);
    if (JSON.stringify(s.enum) !== JSON.stringify(values)) out.push(`${path}: enum ${JSON.stringify(s.enum)} vs ${JSON.stringify(values)}`);
  } else if (ts.isArrayTypeNode(t)) {
    if (s.type !== 'array' || !s.items) out.push(`${path}: ${s.type} vs array`);
    else compareType(t.elementType, s.items, `${path}[]`, out);
  } else if (ts.isTypeLiteralNode(t)) {
    compareMembers(t.members, s, path, out);
  } else if (ts.isTypeReferenceNode(t)) {
    const name = t.typeName.getText(sf);
    const iface = interfaces.get(name);
    const values = ENUM_ALIASES[name];
    if (iface) compareMembers(iface.members, s, path, out);
    else if (values) {
      if (s.type !== 'string' || JSON.stringify(s.enum) !== JSON.stringify(values)) out.push(`${path}: enum ${JSON.stringify(s.enum)} vs ${name} ${JSON.stringify(values)}`);
    } else out.push(`${path}: cannot compare type ${name}${aliases.has(name) ? ' (add it to ENUM_ALIASES)' : ''}`);
  } else {
    out.push(`${path}: cannot compare ${ts.SyntaxKind[t.kind]}`);
  }
}

function compareInterface(name: string, s: Schema): string[] {
  const out: string[] = [];
  const iface = interfaces.get(name);
  assert.ok(iface, `interface ${name} exists in src/api/types.ts`);
  compareMembers(iface.members, s, name, out);
  return out;
}

test('the VMImportSource CRD declares exactly the fields of VMImportSourceSpec and VMImportSourceStatus', () => {
  const root = schemaOf(SOURCE);
  assert.deepEqual([...compareInterface('VMImportSourceSpec', root.properties!.spec!), ...compareInterface('VMImportSourceStatus', root.properties!.status!)], []);
});

test('the VMImportTask CRD declares exactly the fields of VMImportTaskSpec and VMImportTaskStatus', () => {
  const root = schemaOf(TASK);
  assert.deepEqual([...compareInterface('VMImportTaskSpec', root.properties!.spec!), ...compareInterface('VMImportTaskStatus', root.properties!.status!)], []);
});
