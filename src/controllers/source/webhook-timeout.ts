// Forklift's Secret webhook timing out (pure parts and an in-memory backoff). The webhook logs in to
// vCenter with every create/update of a provider Secret, under a 30 s timeout with failurePolicy Fail
// (kubev2v/forklift@v2.11.5 and @v2.12.5: pkg/forklift-api/webhooks/validating-webhook/admitters/
// secret-admitter.go; operator/roles/forkliftcontroller/templates/api/validatingwebhookconfiguration-secrets.yml.j2).
// When packets to vCenter are dropped, the login hangs, the API server gives up on the webhook and the
// write fails "failed calling webhook … context deadline exceeded": vCenter is not reachable from the
// cluster. Retried on every pass, each attempt holds an API server request and a webhook call for 30 s;
// so a timed-out write is retried only after a wait that doubles (1 min up to 30 min).
import { ApiError } from '../../runtime/kube.ts';

/**
 * The Secret webhook's timeoutSeconds (validatingwebhookconfiguration-secrets.yml.j2 at both tags), equal to its
 * login's own ConnectionTimeout (pkg/controller/provider/container/vsphere/collector.go, Test): on a stall the
 * API server gives up on the webhook first, 30 s after it called it.
 */
export const FORKLIFT_SECRET_WEBHOOK_TIMEOUT_MS = 30_000;
/**
 * The deadline of our writes of the credentials Secret. With the client's default (30 s, started before the
 * API server called the webhook) our client gave up a moment before the API server's verdict arrived: the
 * write read as a bare client timeout, thrown and retried by the manager's fast backoff, each retry holding
 * the webhook another 30 s, and the source never said that vCenter is unreachable. 15 s past the webhook's
 * timeout leaves room for the API server's own work around the call (other webhooks, the etcd write), and
 * stays under the API server's default request timeout (60 s), past which it answers a bare 504 instead.
 */
export const PROVIDER_SECRET_WRITE_DEADLINE_MS = FORKLIFT_SECRET_WEBHOOK_TIMEOUT_MS + 15_000;

export const WEBHOOK_TIMEOUT_RETRY_BASE_MS = 60_000;
export const WEBHOOK_TIMEOUT_RETRY_MAX_MS = 30 * 60_000;

/** True for a write the API server failed because a webhook did not answer in time. */
export function isWebhookTimeout(e: unknown): e is ApiError {
  if (!(e instanceof ApiError) || (e.code !== 500 && e.code !== 504)) return false;
  return /failed calling webhook/i.test(e.message) && /context deadline exceeded|Client\.Timeout|i\/o timeout|timed? ?out/i.test(e.message);
}

export function webhookTimeoutBackoffMs(attempts: number): number {
  return Math.min(WEBHOOK_TIMEOUT_RETRY_MAX_MS, WEBHOOK_TIMEOUT_RETRY_BASE_MS * 2 ** Math.max(0, attempts - 1));
}

/** The message of the ConnectionFailed verdict. `host`: vCenter's host name; `said`: the error, redacted. */
export function webhookTimeoutMessage(host: string, retryAt: Date, said: string): string {
  return `vCenter is not reachable from the cluster: Forklift's Secret webhook tests the login to ${host} on every write of the credentials and gave up after its 30 s timeout, as it does when packets to vCenter are dropped (a firewall, a missing route or proxy). Check that the cluster's nodes reach ${host}:443. Next attempt at ${retryAt.toISOString()} (the wait doubles up to 30 min, so that the API server and the webhook are not held 30 s on every pass). Forklift said: ${said.slice(0, 500)}`;
}

interface Entry {
  generation: number;
  attempts: number;
  retryAt: number;
  message: string;
}

/** Timed-out attempts per source (by uid); lost on restart, which costs one early attempt. Bounded by the sources. */
export class WebhookTimeoutBackoff {
  private readonly entries = new Map<string, Entry>();

  /** The held verdict while the wait after a timeout of this spec (generation) is not over. */
  held(uid: string, generation: number, now: Date): { message: string; retryAfterMs: number } | undefined {
    const e = this.entries.get(uid);
    if (!e || e.generation !== generation || now.getTime() >= e.retryAt) return undefined;
    return { message: e.message, retryAfterMs: e.retryAt - now.getTime() };
  }

  /** One more timeout: the wait, and the message to show. */
  record(uid: string, generation: number, now: Date, message: (retryAt: Date) => string): { message: string; retryAfterMs: number } {
    const prev = this.entries.get(uid);
    const attempts = (prev?.generation === generation ? prev.attempts : 0) + 1;
    const wait = webhookTimeoutBackoffMs(attempts);
    const m = message(new Date(now.getTime() + wait));
    this.entries.set(uid, { generation, attempts, retryAt: now.getTime() + wait, message: m });
    return { message: m, retryAfterMs: wait };
  }

  clear(uid: string): void {
    this.entries.delete(uid);
  }

  get size(): number {
    return this.entries.size;
  }
}
