// When credentials were refused: Forklift's Secret webhook logs in to vCenter (or to an ESXi host) with
// every create/update of a labelled Secret and refuses a wrong password with 403 on the write itself
// (kubev2v/forklift@v2.11.5:pkg/forklift-api/webhooks/validating-webhook/admitters/secret-admitter.go).
// Presenting the same refused password again every few seconds would lock the account out (vCenter SSO
// locks an account after 5 failed logins within 3 minutes by default; ESXi after 5 failures), for every
// other user of that service account too. So a refused password is presented again only when the
// source's spec changes — the user fixed it — or after a long backoff that status shows.
// Pure: the state lives in status.credentialsRejected.
import type { CredentialsRejection, VMImportSource } from '../../api/types.ts';

/** First wait after a refusal: well beyond the lockout windows above (3 min count, 5–15 min lock). */
export const CREDENTIALS_RETRY_BASE_MS = 15 * 60_000;
/** The wait doubles per refusal of the same spec, up to this: a wrong password rotated outside the spec is still retried a few times a day. */
export const CREDENTIALS_RETRY_MAX_MS = 6 * 60 * 60_000;

/** The wait after the `attempts`-th refusal of one spec. */
export function credentialsBackoffMs(attempts: number): number {
  return Math.min(CREDENTIALS_RETRY_MAX_MS, CREDENTIALS_RETRY_BASE_MS * 2 ** Math.max(0, attempts - 1));
}

/** The held-back refusal when this spec's credentials were refused and the wait is not over; else undefined. */
export function heldBack(src: VMImportSource, now: Date): CredentialsRejection | undefined {
  const r = src.status?.credentialsRejected;
  if (!r || r.generation !== src.metadata.generation) return undefined;
  const at = Date.parse(r.retryAfter);
  return Number.isFinite(at) && now.getTime() < at ? r : undefined;
}

/** The record of one more refusal of this spec's credentials. */
export function recordRejection(src: VMImportSource, now: Date): CredentialsRejection {
  const prev = src.status?.credentialsRejected;
  const attempts = prev && prev.generation === src.metadata.generation ? prev.attempts + 1 : 1;
  return { generation: src.metadata.generation ?? 0, attempts, retryAfter: new Date(now.getTime() + credentialsBackoffMs(attempts)).toISOString() };
}

/**
 * The refusal's own words, then the note on the next attempt, as two sentences: Forklift's refusals end
 * without a full stop ("Invalid credentials"), which ran them into the note.
 */
export function withRetryNote(refusal: string, r: CredentialsRejection): string {
  const head = refusal.trimEnd();
  return (head === '' || /[.!?]$/.test(head) ? head : `${head}.`) + retryNote(r);
}

/** What the Ready message says about the next attempt. */
export function retryNote(r: CredentialsRejection): string {
  return ` These credentials are not presented again until the source's spec changes (correct them there) or at ${r.retryAfter} (refusal ${r.attempts} of this spec): repeated failed logins would lock the account out.`;
}
