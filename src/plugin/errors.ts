// What the plugin prints when something fails: the API server's (or the webhook's) own words, as kubectl
// prints them, then the fix when the plugin knows one. Pure.
import { ApiError, isNotServed } from '../runtime/kube.ts';

/** A failure the plugin itself diagnosed (a VM name that resolves to nothing, a task still running). */
export class PluginError extends Error {
  readonly fix: string | undefined;
  constructor(message: string, fix?: string) {
    super(message);
    this.name = 'PluginError';
    this.fix = fix;
  }
}

export interface ErrorContext {
  namespace: string;
  /** The API server's URL (for a connection failure). */
  server?: string;
  /** The kubeconfig context in use. */
  context?: string;
}

/** The lines to print for `e`: `error: …` / `Error from server (Reason): …`, then `fix: …` when known. */
export function describeError(e: unknown, ctx: ErrorContext): string[] {
  if (e instanceof PluginError) return [`error: ${e.message}`, ...(e.fix ? [`fix: ${e.fix}`] : [])];
  if (!(e instanceof ApiError)) return [`error: ${(e as Error)?.message ?? String(e)}`];
  if (e.code === 0) {
    return [
      `error: ${e.message}`,
      `fix: the API server${ctx.server ? ` at ${ctx.server}` : ''} did not answer; check the kubeconfig context${ctx.context ? ` (${ctx.context})` : ''} with kubectl cluster-info`,
    ];
  }
  const out = [`Error from server (${e.reason}): ${e.message}`];
  const fix = fixFor(e, ctx);
  if (fix) out.push(`fix: ${fix}`);
  return out;
}

function fixFor(e: ApiError, ctx: ErrorContext): string | undefined {
  const m = e.message;
  if (/admission webhook .* denied the request/.test(m)) return undefined; // the webhook's message carries its own fix
  if (e.code === 401) return 'your credentials were refused: log in again (refresh the kubeconfig of the context)';
  if (e.code === 403) {
    if (/cannot (create|patch|update|delete)/.test(m)) return `creating or changing imports in ${ctx.namespace} needs a tenant admin role there (cozy:tenant:admin); ask the tenant's owner, or check the namespace with -n`;
    if (/cannot (get|list|watch)/.test(m)) return `reading imports in ${ctx.namespace} needs a tenant role there (cozy:tenant:view or above); check the namespace with -n`;
    return undefined;
  }
  if (e.code === 404) {
    if (/vmimportsources/.test(m)) return `list the sources of ${ctx.namespace} with kubectl get vmimportsources -n ${ctx.namespace}`;
    if (/vmimporttasks/.test(m)) return `list the tasks of ${ctx.namespace} with kubectl get vmimporttasks -n ${ctx.namespace}`;
    if (/the server could not find the requested resource/.test(m) || isNotServed(e)) return 'migration-controller is not installed on this cluster (its CRDs are missing), or the API server is still starting: try again, and if it persists ask the platform admin to enable it';
  }
  if (e.code === 409 && e.reason === 'AlreadyExists') return 'a task is one-shot and its name is taken: choose another name';
  return undefined;
}
