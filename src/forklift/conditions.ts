// Pure readers of Forklift conditions (docs/forklift-contract.md): Forklift only ever writes status "True";
// "not ready" is the absence of Ready plus some blocker (category Critical or Error). We translate the
// verdict into our reasons and keep Forklift's own words in the message.
import { SourceReason } from '../api/conditions.ts';
import type { KubeObject } from '../runtime/kube.ts';

export interface ForkliftCondition {
  type: string;
  status: string;
  reason?: string;
  category?: string;
  message?: string;
  suggestion?: string;
  items?: string[];
  durable?: boolean;
  lastTransitionTime?: string;
}

export const BLOCKING_CATEGORIES: readonly string[] = ['Critical', 'Error'];

/** Conditions that hold (status "True"). */
export function activeConditions(obj: KubeObject | undefined): ForkliftCondition[] {
  const st = obj?.status as { conditions?: ForkliftCondition[] } | undefined;
  return (st?.conditions ?? []).filter((c) => c && c.status === 'True');
}

export function findCondition(obj: KubeObject | undefined, type: string): ForkliftCondition | undefined {
  return activeConditions(obj).find((c) => c.type === type);
}

export function byCategory(obj: KubeObject | undefined, ...categories: string[]): ForkliftCondition[] {
  return activeConditions(obj).filter((c) => categories.includes(c.category ?? ''));
}

/** Conditions that block Ready (Critical or Error). */
export function blockers(obj: KubeObject | undefined): ForkliftCondition[] {
  return byCategory(obj, ...BLOCKING_CATEGORIES);
}

/** Ready only when the Ready condition holds and nothing blocks it. */
export function isForkliftReady(obj: KubeObject | undefined): boolean {
  return !!findCondition(obj, 'Ready') && blockers(obj).length === 0;
}

/** Forklift's own words for a condition: message, items and suggestion. */
export function forkliftWords(c: ForkliftCondition): string {
  let s = `${c.type}${c.reason ? ` (${c.reason})` : ''}: ${c.message ?? ''}`.trim();
  if (c.items?.length) s += ` [${c.items.join(', ')}]`;
  if (c.suggestion) s += ` — ${c.suggestion}`;
  return s;
}

export interface Verdict {
  ready: boolean;
  reason: SourceReason;
  message: string;
}

/** A caCert that is not PEM but looks like a SHA-1 thumbprint (AA:BB:… or 40 hex digits). */
export function looksLikeThumbprint(caCert: string | undefined): boolean {
  if (!caCert) return false;
  // A thumbprint pasted between PEM armour lines is still a thumbprint.
  const t = caCert.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').trim();
  return /^([0-9a-f]{2}[:\s-]?){19}[0-9a-f]{2}$/i.test(t);
}

const X509 = /x509|certificate|unknown authority|tls:/i;

/** Translates the source Provider's state into the source's Ready verdict. Pure. */
export function providerVerdict(provider: KubeObject | undefined, spec: { username: string; caCert?: string }): Verdict {
  if (!provider) return { ready: false, reason: SourceReason.Connecting, message: 'Waiting for the Forklift Provider to be created.' };
  const block = blockers(provider);
  const phase = (provider.status as { phase?: string } | undefined)?.phase;
  const first = (type: string): ForkliftCondition | undefined => block.find((c) => c.type === type);

  const auth = first('ConnectionAuthFailed');
  if (auth) {
    const sso = spec.username.includes('@')
      ? ''
      : ` The username "${spec.username}" has no SSO domain: vCenter wants it in the form user@vsphere.local and rejects a bare account name with the same message it uses for a wrong password.`;
    return { ready: false, reason: SourceReason.AuthenticationFailed, message: `vCenter rejected the credentials.${sso} Forklift: ${forkliftWords(auth)}` };
  }
  const secret = first('SecretNotValid');
  if (secret) {
    if (looksLikeThumbprint(spec.caCert) || (spec.caCert && secret.items?.some((i) => i === 'cacert' || i === 'ca.crt'))) {
      return {
        ready: false,
        reason: SourceReason.InvalidCACertificate,
        message: `credentials.caCert is not a PEM certificate authority (a SHA-1 thumbprint does not work here); give the PEM CA that signed the vCenter certificate (or insecureSkipVerify). Forklift: ${forkliftWords(secret)}`,
      };
    }
    return { ready: false, reason: SourceReason.CredentialsMissing, message: `The credentials Secret is incomplete. Forklift: ${forkliftWords(secret)}` };
  }
  const conn = first('ConnectionTestFailed');
  if (conn) {
    // Forklift parses the CA before it connects (kubev2v/forklift@v2.11.5:pkg/lib/util/util.go tlsConfig): a
    // CA that is no PEM certificate — a SHA-1 thumbprint, say — fails the connection test with "failed to parse
    // the specified certificate", which says nothing about vCenter's certificate.
    if (looksLikeThumbprint(spec.caCert) || /failed to parse the specified certificate/i.test(conn.message ?? '')) {
      return {
        ready: false,
        reason: SourceReason.InvalidCACertificate,
        message: `credentials.caCert is not a PEM certificate authority (a SHA-1 thumbprint does not work here); give the PEM CA that signed the vCenter certificate (or insecureSkipVerify). Forklift: ${forkliftWords(conn)}`,
      };
    }
    if (X509.test(conn.message ?? '')) {
      return { ready: false, reason: SourceReason.InvalidCACertificate, message: `The vCenter certificate is not signed by credentials.caCert. Forklift: ${forkliftWords(conn)}` };
    }
    return { ready: false, reason: SourceReason.ConnectionFailed, message: `Forklift cannot connect to vCenter. Forklift: ${forkliftWords(conn)}` };
  }
  if (block.length) {
    return { ready: false, reason: SourceReason.ConnectionFailed, message: `Forklift: ${block.map(forkliftWords).join('; ')}` };
  }
  if (isForkliftReady(provider)) {
    const warn = byCategory(provider, 'Warn').filter((c) => c.type !== 'ConnectionInsecure');
    const extra = warn.length ? ` Warnings: ${warn.map(forkliftWords).join('; ')}` : '';
    return { ready: true, reason: SourceReason.Connected, message: `Connected to vCenter; inventory loaded.${extra}` };
  }
  const loading = findCondition(provider, 'LoadInventory');
  return {
    ready: false,
    reason: SourceReason.Connecting,
    message: loading ? `Forklift is loading the inventory. Forklift: ${forkliftWords(loading)}` : `Waiting for Forklift to test the connection${phase ? ` (phase ${phase})` : ''}.`,
  };
}

export interface HostVerdict {
  ready: boolean;
  /** Undefined while Forklift has not tested the host yet. */
  reason?: SourceReason;
  message: string;
}

/** Translates a Forklift Host's state. Pure. */
export function hostVerdict(host: KubeObject | undefined): HostVerdict {
  if (!host) return { ready: false, message: 'Waiting for the Forklift Host to be created.' };
  const block = blockers(host);
  // The host's own state in vCenter (kubev2v/forklift@v2.11.5 and @v2.12.5:pkg/controller/host/validation.go:
  // NotHealthy when its overall status is not green, InMaintenance; both Critical): the address is not the
  // fault, and Forklift never uses the override until vCenter says otherwise. Meanwhile new disk transfers of
  // the host's VMs go to vCenter's advertised address (plan/adapter/vsphere/builder.go loadHosts skips a
  // Host that is not Ready).
  const state = block.filter((c) => c.type === 'NotHealthy' || c.type === 'InMaintenance');
  if (state.length) {
    const what = state.some((c) => c.type === 'NotHealthy') ? "vCenter reports the ESXi host not healthy (its overall status is not green: fix or acknowledge the host's alarms in vSphere)" : 'the ESXi host is in maintenance mode (take it out in vSphere)';
    return {
      ready: false,
      reason: SourceReason.HostUnreachable,
      message: `${what}; Forklift does not use this host override until then, and transfers it starts meanwhile go to the address vCenter advertises for the host, or remove the entry from spec.hosts. Forklift: ${block.map(forkliftWords).join('; ')}`,
    };
  }
  if (block.length) return { ready: false, reason: SourceReason.HostUnreachable, message: `Forklift: ${block.map(forkliftWords).join('; ')}` };
  if (isForkliftReady(host)) return { ready: true, message: 'Host connection tested.' };
  const maint = findCondition(host, 'InMaintenance');
  if (maint) return { ready: false, reason: SourceReason.HostUnreachable, message: `Forklift: ${forkliftWords(maint)}` };
  return { ready: false, message: 'Waiting for Forklift to test the host.' };
}
