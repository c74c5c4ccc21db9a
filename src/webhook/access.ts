// Who is asking: SubjectAccessReviews on the AdmissionReview's userInfo, so that the webhook never puts
// facts about a namespace (source readiness, VM and disk counts, ESXi addresses, quota figures) into an
// answer for a user who cannot read that namespace's imports, and never lets a source name a Secret its
// author could not read. Answers are cached briefly: a burst of reviews by one user costs one review.
import { TTLCache, withTimeout } from './facts.ts';
import type { KubeClient, KubeObject } from '../runtime/kube.ts';
import type { GVR } from '../runtime/gvr.ts';

export const SUBJECT_ACCESS_REVIEW: GVR = { group: 'authorization.k8s.io', version: 'v1', plural: 'subjectaccessreviews', kind: 'SubjectAccessReview', namespaced: false };

/**
 * A permission granted or revoked is honoured within this: long enough to absorb a burst of
 * `kubectl apply` calls, short enough that a revoked tenant stops learning facts almost at once.
 */
export const ACCESS_TTL_MS = 10_000;
/**
 * Past this age an answer is still served but asked again behind it, so a tenant's steady stream of
 * reviews never waits on a SubjectAccessReview (at 200 reviews a second, the one that found its answer
 * expired waited a round trip to the API server: the latency tail). No answer older than ACCESS_TTL_MS
 * is ever served.
 */
export const ACCESS_REFRESH_MS = ACCESS_TTL_MS / 2;

export interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface ResourceAttributes {
  namespace: string;
  verb: string;
  group: string;
  resource: string;
  name?: string;
}

export interface AccessChecker {
  /** True when the user may do it; false when not or when the review could not be made (fail closed). */
  allowed(user: UserInfo | undefined, attrs: ResourceAttributes): Promise<boolean>;
}

export class SARAccessChecker implements AccessChecker {
  private readonly client: KubeClient;
  private readonly cache: TTLCache;
  private readonly timeoutMs: number;
  constructor(o: { client: KubeClient; timeoutMs?: number; now?: () => number }) {
    this.client = o.client;
    this.cache = new TTLCache({ now: o.now });
    this.timeoutMs = o.timeoutMs ?? 1500;
  }

  async allowed(user: UserInfo | undefined, attrs: ResourceAttributes): Promise<boolean> {
    if (!user?.username) return false;
    const key = JSON.stringify([user.username, user.uid ?? '', [...(user.groups ?? [])].sort(), attrs]);
    try {
      const r = await this.cache.get(key, ACCESS_REFRESH_MS, async () => {
        const review = await withTimeout(
          this.client.create<KubeObject & { status?: { allowed?: boolean } }>(SUBJECT_ACCESS_REVIEW, {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: { user: user.username, uid: user.uid, groups: user.groups, extra: user.extra, resourceAttributes: attrs },
          } as KubeObject),
          this.timeoutMs,
          'SubjectAccessReview',
        );
        return review.status?.allowed === true;
      }, { staleMs: ACCESS_TTL_MS });
      return r.value;
    } catch {
      return false;
    }
  }
}

/** Everyone may do everything (unit tests of the validators that are not about access). */
export const ALLOW_ALL: AccessChecker = { allowed: () => Promise.resolve(true) };
