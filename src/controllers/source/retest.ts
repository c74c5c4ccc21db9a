// When to ask Forklift to test the source's credentials again (pure). After ConnectionAuthFailed Forklift
// stops reconciling the Provider (kubev2v/forklift@v2.11.5 and @v2.12.5:pkg/controller/provider/controller.go,
// RequeueAfter = 0 on ConnectionAuthFailed) and reacts only to a spec change or to a change of the Secret it
// references (predicate.go; the Secret watch). A password sealed by our webhook projects to the same bytes
// on every pass, so after a transient refusal — an SSO restart, an identity source briefly down — nothing
// would ever re-test it. The re-test is asked for by annotating the projected Secret (ANNOTATION_RETEST),
// no more often than RETEST_AFTER_MS: every Secret write is a login (Forklift's Secret webhook), and failed
// logins lock the account out.
import { ANNOTATION_RETEST } from '../../forklift/provider.ts';
import type { KubeObject } from '../../runtime/kube.ts';
import { CREDENTIALS_RETRY_BASE_MS } from './credentials.ts';

/** The least time between two re-tests Forklift is asked for: the credentials' own backoff base (15 min). */
export const RETEST_AFTER_MS = CREDENTIALS_RETRY_BASE_MS;

function authFailed(provider: KubeObject | undefined): boolean {
  const conds = ((provider?.status as { conditions?: Array<{ type?: string; status?: string }> } | undefined)?.conditions ?? []);
  return conds.some((c) => c.type === 'ConnectionAuthFailed' && c.status !== 'False');
}

/** The annotation value (now) when a re-test is due; undefined otherwise. Pure. */
export function retestDue(provider: KubeObject | undefined, secret: KubeObject | undefined, now: Date): string | undefined {
  if (!secret || !authFailed(provider)) return undefined;
  const last = Date.parse(secret.metadata?.annotations?.[ANNOTATION_RETEST] ?? '');
  // The refusal may be older than the Secret's last write: wait from that write too (creationTimestamp
  // stands in for a Secret never annotated).
  const since = Number.isFinite(last) ? last : Date.parse(secret.metadata?.creationTimestamp ?? '');
  if (Number.isFinite(since) && now.getTime() - since < RETEST_AFTER_MS) return undefined;
  return now.toISOString();
}
