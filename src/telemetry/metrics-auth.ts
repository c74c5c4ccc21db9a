// Who may scrape /metrics, when the platform asks for it (METRICS_AUTH=kubernetes): the caller's bearer
// token is reviewed by the API server (TokenReview), and the user it names must be allowed `get` on the
// non-resource URL /metrics (SubjectAccessReview) — the check kube-rbac-proxy makes, in-process. The
// series name tenants' namespaces and tasks; an unauthenticated scrape gets 401.
import { createHash } from 'node:crypto';
import type { GVR } from '../runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../runtime/kube.ts';

const TOKEN_REVIEW: GVR = { group: 'authentication.k8s.io', version: 'v1', plural: 'tokenreviews', kind: 'TokenReview', namespaced: false };
const SUBJECT_ACCESS_REVIEW: GVR = { group: 'authorization.k8s.io', version: 'v1', plural: 'subjectaccessreviews', kind: 'SubjectAccessReview', namespaced: false };

/** A verdict is kept this long: a scraper every 30 s costs two reviews a minute, not two per scrape. */
export const METRICS_AUTH_TTL_MS = 60_000;
/** Verdicts kept at most (distinct tokens): a flood of made-up tokens cannot grow the map without end. */
const MAX_VERDICTS = 256;
/** A bearer token longer than this is no ServiceAccount token (a few KiB) and is refused unread. */
const MAX_TOKEN_LENGTH = 16 * 1024;

export type MetricsAuthorizer = (authorization: string | undefined) => Promise<boolean>;

export function kubernetesMetricsAuthorizer(client: Pick<KubeClient, 'create'>, now: () => number = Date.now): MetricsAuthorizer {
  const verdicts = new Map<string, { at: number; allowed: boolean }>();
  return async (authorization) => {
    const m = /^Bearer (\S+)$/.exec(authorization ?? '');
    const token = m?.[1];
    if (!token || token.length > MAX_TOKEN_LENGTH) return false;
    const key = createHash('sha256').update(token).digest('base64');
    const hit = verdicts.get(key);
    if (hit && now() - hit.at < METRICS_AUTH_TTL_MS) return hit.allowed;
    let allowed = false;
    try {
      const review = await client.create<KubeObject & { status?: { authenticated?: boolean; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } } }>(TOKEN_REVIEW, {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token },
      } as KubeObject);
      const user = review.status?.authenticated ? review.status.user : undefined;
      if (user?.username) {
        const sar = await client.create<KubeObject & { status?: { allowed?: boolean } }>(SUBJECT_ACCESS_REVIEW, {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: { user: user.username, uid: user.uid, groups: user.groups, extra: user.extra, nonResourceAttributes: { path: '/metrics', verb: 'get' } },
        } as KubeObject);
        allowed = sar.status?.allowed === true;
      }
    } catch {
      // The API server could not say: not allowed, and not remembered (the next scrape asks again).
      return false;
    }
    if (verdicts.size >= MAX_VERDICTS) verdicts.delete(verdicts.keys().next().value as string);
    verdicts.set(key, { at: now(), allowed });
    return allowed;
  };
}
