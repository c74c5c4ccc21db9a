// Typed, validated models of our two kinds (@kubernetes-models/base): `new VMImportTaskModel({...})` fills
// apiVersion and kind, `.validate()` checks the object against the very openAPIV3Schema the API server
// enforces — the CRD in crds/ (shipped in the image beside dist/, and by the chart) — and `isVMImportTask`
// is the type-meta guard. One schema, read from one place: a field added to a CRD is validated here with
// no second copy to drift.
//
// Who relies on it: the admission webhook's early (mutating) pass, which sees an object before the API
// server's schema validation does, so a structurally wrong object is denied with the field and the rule
// it breaks before any semantic rule reads it; and the demo and tests that build our objects.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Model, createTypeMetaGuard, setValidateFunc, type ModelData } from '@kubernetes-models/base';
import { formats, type ValidateFunc } from '@kubernetes-models/validate';
import { Ajv, type ErrorObject } from 'ajv';
import YAML from 'yaml';
import { API_VERSION, GROUP, KIND_SOURCE, KIND_TASK, PLURAL_SOURCE, PLURAL_TASK, type VMImportSource, type VMImportTask } from './types.ts';

/** src/api/ (or dist/api/ in the image) → the repository's (or image's) crds/ folder. */
const CRD_DIR = new URL('../../crds/', import.meta.url);

// The Kubernetes structural-schema extensions carry no validation ajv can perform: list semantics are the
// API server's merge rules, CEL rules (x-kubernetes-validations) run only in the API server. They are
// declared as annotations so that ajv's strict mode still rejects any other unknown keyword (a typo in a
// CRD fails loudly here instead of silently validating nothing).
const K8S_ANNOTATION_KEYWORDS = [
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-int-or-string',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-validations',
];

type Schema = Record<string, unknown>;

/** The served, stored version's openAPIV3Schema of `crds/<group>_<plural>.yaml`. */
export function crdSchema(plural: string): Schema {
  const file = fileURLToPath(new URL(`${GROUP}_${plural}.yaml`, CRD_DIR));
  const crd = YAML.parse(readFileSync(file, 'utf8')) as { spec?: { versions?: Array<{ name: string; storage?: boolean; schema?: { openAPIV3Schema?: Schema } }> } };
  const version = crd.spec?.versions?.find((v) => v.storage) ?? crd.spec?.versions?.[0];
  const schema = version?.schema?.openAPIV3Schema;
  if (!schema) throw new Error(`${file} has no openAPIV3Schema`);
  return schema;
}

/**
 * The API server treats `metadata` of a custom resource by ObjectMeta's own rules, whatever the CRD says
 * (a CRD may only constrain name and generateName); the model does the same and checks no more of it than
 * that it is an object.
 */
function forModel(schema: Schema): Schema {
  const properties = { ...((schema.properties as Record<string, Schema> | undefined) ?? {}), metadata: { type: 'object' } };
  return { ...schema, properties };
}

let ajv: Ajv | undefined;
function compiler(): Ajv {
  ajv ??= new Ajv({ allErrors: true, strict: true, formats, keywords: K8S_ANNOTATION_KEYWORDS });
  return ajv;
}

function compile<T>(plural: string): ValidateFunc<T> {
  return compiler().compile<T>(forModel(crdSchema(plural))) as ValidateFunc<T>;
}

/** One line per schema violation, each naming its field as a path (`spec.vms[0].id: must be string`). */
export function describeSchemaErrors(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => {
    const path = e.instancePath
      .split('/')
      .slice(1)
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
    const missing = e.keyword === 'required' ? (e.params as { missingProperty?: string }).missingProperty : undefined;
    const field = missing ? (path ? `${path}.${missing}` : missing) : path || '(the object)';
    const allowed = e.keyword === 'enum' ? `: ${((e.params as { allowedValues?: unknown[] }).allowedValues ?? []).map((v) => JSON.stringify(v)).join(', ')}` : '';
    return missing ? `${field}: required` : `${field}: ${e.message ?? 'is invalid'}${allowed}`;
  });
}

/** Compiled on first use (reading and compiling a CRD costs ~10 ms; a process that never validates pays nothing). */
function validatorFor<T>(plural: string): { fn: ValidateFunc<T>; problems: (obj: unknown) => string[] } {
  let fn: ValidateFunc<T> | undefined;
  const get = (): ValidateFunc<T> => (fn ??= compile<T>(plural));
  const wrapped = ((data: unknown): data is T => get()(data)) as ValidateFunc<T>;
  Object.defineProperty(wrapped, 'errors', { get: () => get().errors });
  return {
    fn: wrapped,
    problems: (obj) => (get()(obj) ? [] : describeSchemaErrors(get().errors)),
  };
}

const taskValidator = validatorFor<VMImportTask>(PLURAL_TASK);
const sourceValidator = validatorFor<VMImportSource>(PLURAL_SOURCE);

/** A VMImportTask built in code: apiVersion and kind filled in; `validate()` throws the library's ValidationError. */
export class VMImportTaskModel extends Model<VMImportTask> {
  static readonly apiVersion = API_VERSION;
  static readonly kind = KIND_TASK;
  constructor(data?: ModelData<VMImportTask>) {
    super({ apiVersion: API_VERSION, kind: KIND_TASK, ...data } as ModelData<VMImportTask>);
  }
}

/** A VMImportSource built in code: apiVersion and kind filled in; `validate()` throws the library's ValidationError. */
export class VMImportSourceModel extends Model<VMImportSource> {
  static readonly apiVersion = API_VERSION;
  static readonly kind = KIND_SOURCE;
  constructor(data?: ModelData<VMImportSource>) {
    super({ apiVersion: API_VERSION, kind: KIND_SOURCE, ...data } as ModelData<VMImportSource>);
  }
}

// Model.validate() runs these (the library's hook): it throws a ValidationError carrying ajv's errors.
setValidateFunc(VMImportTaskModel as never, taskValidator.fn as ValidateFunc<unknown>);
setValidateFunc(VMImportSourceModel as never, sourceValidator.fn as ValidateFunc<unknown>);

export const isVMImportTask = createTypeMetaGuard<VMImportTask>({ apiVersion: API_VERSION, kind: KIND_TASK });
export const isVMImportSource = createTypeMetaGuard<VMImportSource>({ apiVersion: API_VERSION, kind: KIND_SOURCE });

/** Schema violations of an arbitrary object as a VMImportTask (empty: it matches the CRD's schema). */
export const taskSchemaProblems = (obj: unknown): string[] => taskValidator.problems(obj);
/** Schema violations of an arbitrary object as a VMImportSource (empty: it matches the CRD's schema). */
export const sourceSchemaProblems = (obj: unknown): string[] => sourceValidator.problems(obj);
