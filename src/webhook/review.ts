// AdmissionReview (admission.k8s.io/v1) on the wire: the request shape we accept (checked with ajv
// before anything reads it, so garbage gets a denial, never a crash) and the response we build.
import { Ajv } from 'ajv';

export const ADMISSION_API_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const;

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  resource?: { group: string; version: string; resource: string };
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  userInfo?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  object?: unknown;
  oldObject?: unknown;
  dryRun?: boolean;
}

export interface AdmissionReview {
  apiVersion: string;
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code?: number; reason?: string; message?: string };
  warnings?: string[];
  patch?: string;
  patchType?: 'JSONPatch';
}

/** What a validator decides. Denials carry every problem found, each naming its field. */
export interface Verdict {
  allowed: boolean;
  problems: string[];
  warnings: string[];
  /** JSON patch for an allowed request on a mutating path (RFC 6902 operations). */
  patch?: unknown[];
}

export function verdict(problems: string[], warnings: string[]): Verdict {
  return { allowed: problems.length === 0, problems, warnings };
}

const gvk = {
  type: 'object',
  required: ['group', 'version', 'kind'],
  properties: { group: { type: 'string' }, version: { type: 'string' }, kind: { type: 'string' } },
};

const reviewSchema = {
  type: 'object',
  required: ['apiVersion', 'kind', 'request'],
  properties: {
    apiVersion: { enum: [...ADMISSION_API_VERSIONS] },
    kind: { const: 'AdmissionReview' },
    request: {
      type: 'object',
      required: ['uid', 'kind', 'operation'],
      properties: {
        uid: { type: 'string', minLength: 1, maxLength: 256 },
        kind: gvk,
        name: { type: 'string' },
        namespace: { type: 'string' },
        operation: { enum: ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'] },
        dryRun: { type: 'boolean' },
        object: { type: ['object', 'null'] },
        oldObject: { type: ['object', 'null'] },
      },
    },
  },
} as const;

const ajv = new Ajv({ allErrors: false, strict: false });
const validateReviewShape = ajv.compile(reviewSchema);

/** The request when `body` is a well-formed AdmissionReview; otherwise why not (for the denial). */
export function parseReview(body: unknown): { ok: true; review: AdmissionReview & { request: AdmissionRequest } } | { ok: false; error: string; uid: string; apiVersion: string } {
  if (validateReviewShape(body)) return { ok: true, review: body as unknown as AdmissionReview & { request: AdmissionRequest } };
  const err = validateReviewShape.errors?.[0];
  const where = err ? `${err.instancePath || '(root)'} ${err.message ?? 'is invalid'}` : 'is invalid';
  // Echo what can be echoed: the API server matches responses by uid.
  const b = body as { apiVersion?: unknown; request?: { uid?: unknown } } | null;
  const uid = b && typeof b === 'object' && b.request && typeof b.request === 'object' && typeof b.request.uid === 'string' ? b.request.uid.slice(0, 256) : '';
  const apiVersion = b && typeof b === 'object' && b.apiVersion === 'admission.k8s.io/v1beta1' ? 'admission.k8s.io/v1beta1' : 'admission.k8s.io/v1';
  return { ok: false, error: `malformed AdmissionReview: ${where}`, uid, apiVersion };
}

/** Kubernetes caps warnings at 120 characters each before truncating; keep a few and keep them whole. */
export const MAX_WARNINGS = 10;

export function buildResponse(apiVersion: string, uid: string, v: Verdict): AdmissionReview {
  const response: AdmissionResponse = { uid, allowed: v.allowed };
  if (!v.allowed) {
    response.status = { code: 403, reason: 'Forbidden', message: v.problems.join('; ') || 'denied' };
  }
  if (v.warnings.length) response.warnings = v.warnings.slice(0, MAX_WARNINGS);
  if (v.allowed && v.patch?.length) {
    response.patch = Buffer.from(JSON.stringify(v.patch), 'utf8').toString('base64');
    response.patchType = 'JSONPatch';
  }
  return { apiVersion: ADMISSION_API_VERSIONS.includes(apiVersion as never) ? apiVersion : 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}

const responseSchema = {
  type: 'object',
  required: ['apiVersion', 'kind', 'response'],
  properties: {
    apiVersion: { enum: [...ADMISSION_API_VERSIONS] },
    kind: { const: 'AdmissionReview' },
    response: {
      type: 'object',
      required: ['uid', 'allowed'],
      properties: {
        uid: { type: 'string' },
        allowed: { type: 'boolean' },
        status: { type: 'object', properties: { code: { type: 'integer' }, message: { type: 'string', minLength: 1 } } },
        warnings: { type: 'array', items: { type: 'string' } },
      },
      if: { properties: { allowed: { const: false } } },
      then: { required: ['status'], properties: { status: { required: ['message'] } } },
    },
  },
} as const;
const validateResponseShape = ajv.compile(responseSchema);

/** True when `x` is a well-formed AdmissionReview response (used by tests and the fuzzer). */
export function isWellFormedResponse(x: unknown): boolean {
  return validateResponseShape(x) as boolean;
}
