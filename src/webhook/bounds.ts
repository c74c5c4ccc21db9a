// Sizes before sense: every tenant-controlled string and list of a review's object is held against the
// bound the CRD declares for it (maxLength, maxItems) before any rule parses it. The mutating pass runs
// before the API server applies the CRD's schema, so without this a 627 KB caCert reached the PEM
// parser on the event loop every reconciler shares. One walk, linear in the object's size.
import { crdSchema } from '../api/models.ts';
import { asObject } from './fields.ts';

type Schema = Record<string, unknown>;

/**
 * Bound of a string the CRD leaves unbounded (metadata's names, labels, annotations; fields the schema
 * would prune): the API server's cap on all of an object's annotations together (256 KiB,
 * k8s.io/apimachinery/pkg/api/validation TotalAnnotationSizeLimitB). kubectl's last-applied annotation
 * is parsed (JSON.parse, linear); nothing longer is needed by any rule.
 */
export const MAX_UNSCHEMED_STRING = 256 * 1024;
/** Problems reported at most (the first says what to fix; the response stays small). */
const MAX_REPORTED = 5;

const schemas = new Map<string, Schema>();
function schemaOf(plural: string): Schema {
  let s = schemas.get(plural);
  if (!s) schemas.set(plural, (s = crdSchema(plural)));
  return s;
}

/**
 * Each string longer than its bound and each list with more items than its bound, named by field path,
 * in `object` (a VMImportSource or VMImportTask by its plural). Never echoes a value.
 */
export function boundProblems(plural: string, object: unknown): string[] {
  const out: string[] = [];
  // An explicit stack, not recursion: a deeply nested object cannot exhaust the call stack.
  const stack: Array<{ v: unknown; s: Schema | undefined; path: string }> = [{ v: object, s: schemaOf(plural), path: '' }];
  while (stack.length && out.length < MAX_REPORTED) {
    const { v, s, path } = stack.pop()!;
    if (typeof v === 'string') {
      const max = typeof s?.maxLength === 'number' ? s.maxLength : MAX_UNSCHEMED_STRING;
      // UTF-16 length ≥ code points: a string within its bound here is within the API server's too.
      if (v.length > max) out.push(`${path || '(root)'} is longer than ${max} characters (${v.length}); the VMImportSource/VMImportTask schema allows at most ${max}`);
      continue;
    }
    if (Array.isArray(v)) {
      const max = typeof s?.maxItems === 'number' ? s.maxItems : undefined;
      if (max !== undefined && v.length > max) {
        out.push(`${path} has ${v.length} items; at most ${max} are allowed`);
        continue;
      }
      const items = asObject(s?.items);
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], s: items, path: `${path}[${i}]` });
      continue;
    }
    const o = asObject(v);
    if (!o) continue;
    const props = asObject(s?.properties) as Record<string, Schema> | undefined;
    const extra = asObject(s?.additionalProperties);
    const keys = Object.keys(o);
    for (let i = keys.length - 1; i >= 0; i--) {
      const k = keys[i]!;
      if (k.length > MAX_UNSCHEMED_STRING) {
        out.push(`${path || '(root)'} has a key longer than ${MAX_UNSCHEMED_STRING} characters`);
        continue;
      }
      const shown = k.length > 64 ? `${k.slice(0, 64)}…` : k;
      stack.push({ v: o[k], s: props?.[k] ?? extra, path: path ? `${path}.${shown}` : shown });
    }
  }
  return out;
}
