// VMImportSource admission rules (issue 7). Pure: the object, the old object on update, and the facts
// the async layer gathered (only the Service CIDR for a source).
import { caCertProblem, caCertWarnings, tlsChoiceProblem } from '../preflight/tls.ts';
import { ipInCIDR } from '../preflight/cidr.ts';
import { checkHost, isIPLiteral, notAllowedMessage, urlDestination, type EgressPolicy } from '../preflight/egress.ts';
import { verdict, type Verdict } from './review.ts';
import { asArray, asObject, asString, at, factError, factValue, isDNSName, isIPAddress, nonEmpty, sameValue, show, type Fact } from './fields.ts';

export interface SourceFacts {
  /** The cluster's Service CIDR(s); value undefined when no way of learning it worked. */
  serviceCIDRs: Fact<string[] | undefined>;
  /**
   * The egress policy and what the cluster says of its own addresses (pod CIDRs, node addresses, the API
   * server's endpoints); absent → no egress checks (validator unit tests).
   */
  egress?: { policy: EgressPolicy; cluster: Fact<{ podCIDRs: string[]; nodeAddresses: string[]; apiServerAddresses: string[] }> };
}

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** Does this source need the cluster's networks (the URL or a host override given as an IP)? Saves a probe otherwise. */
export function sourceNeedsServiceCIDR(object: unknown): boolean {
  const spec = asObject(asObject(object)?.spec);
  const hosts = asArray(spec?.hosts) ?? [];
  return (
    (urlHost(spec?.url) !== undefined && isIPLiteral(urlHost(spec?.url)!)) ||
    hosts.some((h) => {
      const a = asString(asObject(h)?.address);
      return a !== undefined && isIPAddress(a.trim());
    })
  );
}

function urlHost(u: unknown): string | undefined {
  if (typeof u !== 'string') return undefined;
  try {
    return new URL(u.trim()).hostname.replace(/^\[|\]$/g, '') || undefined;
  } catch {
    return undefined;
  }
}

/** The egress rules for one destination field (spec.url's host, or a host override's address). */
function checkEgress(field: string, host: string, facts: SourceFacts, problems: string[], skipServiceCIDR = false): void {
  if (!facts.egress) return;
  const serviceCIDRs = skipServiceCIDR ? [] : (factValue(facts.serviceCIDRs) ?? []);
  const cluster = factValue(facts.egress.cluster);
  const v = checkHost(host, facts.egress.policy, { serviceCIDRs, podCIDRs: cluster?.podCIDRs ?? [], nodeAddresses: cluster?.nodeAddresses ?? [], apiServerAddresses: cluster?.apiServerAddresses ?? [] });
  if (!v.allowed) problems.push(notAllowedMessage(field, host, v.rule));
}

function checkCredentials(field: string, c: unknown, problems: string[], warnings: string[], who: 'vCenter' | 'ESXi'): void {
  const cred = asObject(c);
  if (!cred) {
    problems.push(`${field} is required: username, password and exactly one of caCert or insecureSkipVerify: true`);
    return;
  }
  const username = cred.username;
  if (!nonEmpty(username)) problems.push(`${field}.username is required`);
  const ref = cred.secretRef;
  if (ref !== undefined) {
    const name = asString(asObject(ref)?.name);
    if (cred.password !== undefined) problems.push(`${field}: set exactly one of password or secretRef, not both`);
    if (!nonEmpty(name) || !isDNSName(name)) problems.push(`${field}.secretRef.name must name a Secret in this namespace`);
    const key = asObject(ref)?.key;
    if (key !== undefined && (!nonEmpty(key) || !/^[-._a-zA-Z0-9]+$/.test(key))) problems.push(`${field}.secretRef.key must be a Secret data key`);
  } else if (!nonEmpty(cred.password)) problems.push(`${field}.password is required (or secretRef naming a Secret that holds it)`);
  if (who === 'vCenter' && nonEmpty(username) && !username.includes('@') && !username.includes('\\')) {
    warnings.push(
      `${field}.username ${show(username, 64)} has no @domain: vCenter reports a user without its SSO domain as a wrong password; use for example ${show(`${username}@vsphere.local`, 80)}`,
    );
  }
  if (cred.caCert !== undefined && typeof cred.caCert !== 'string') problems.push(`${field}.caCert must be a string holding a PEM certificate`);
  if (cred.insecureSkipVerify !== undefined && typeof cred.insecureSkipVerify !== 'boolean') problems.push(`${field}.insecureSkipVerify must be true or false`);
  const caCert = asString(cred.caCert);
  const both = cred.insecureSkipVerify === true && caCert !== undefined && caCert.trim() !== '';
  // Both set: accepted, as Cozystack's own controller accepts them (its CRD's rule is has(caCert) ||
  // insecureSkipVerify), with that meaning: Forklift skips verification and never reads the CA
  // (kubev2v/forklift@v2.11.5:pkg/controller/provider/container/vsphere/collector.go, connect).
  const tls = both ? undefined : tlsChoiceProblem(field, { caCert, insecureSkipVerify: cred.insecureSkipVerify === true });
  if (tls) problems.push(tls);
  if (both) {
    warnings.push(
      `${field}: both caCert and insecureSkipVerify: true are set; as with Cozystack's own controller, insecureSkipVerify wins: the ${who} certificate is not verified and caCert is not used; remove insecureSkipVerify to verify against caCert`,
    );
  }
  if (caCert !== undefined && caCert.trim() !== '') {
    const p = caCertProblem(caCert);
    if (p) problems.push(at(`${field}.caCert`, p));
    else for (const w of caCertWarnings(caCert)) warnings.push(`${field}.caCert: ${w}`);
  }
  if (cred.insecureSkipVerify === true && !tls && !both) {
    warnings.push(`${field}.insecureSkipVerify is true: the ${who} certificate is not verified and the credentials travel over that unverified connection; prefer caCert outside a lab`);
  }
}

function checkURL(u: unknown, problems: string[], warnings: string[]): void {
  if (!nonEmpty(u)) {
    problems.push('spec.url is required: the vCenter SDK endpoint, for example https://vcenter.example.com/sdk');
    return;
  }
  let parsed: URL;
  try {
    parsed = new URL(u.trim());
  } catch {
    problems.push(`spec.url ${show(u.replace(/\/\/[^/@\s]*@/, '//'))} is not a URL; expected for example https://vcenter.example.com/sdk`);
    return;
  }
  if (parsed.protocol !== 'https:') {
    problems.push(`spec.url must use https:// (got ${show(parsed.protocol.replace(/:$/, ''))}); vCenter's SDK is only served over TLS, for example https://${parsed.host || 'vcenter.example.com'}/sdk`);
    return;
  }
  if (!parsed.hostname) problems.push('spec.url has no host');
  if (parsed.username || parsed.password) problems.push('spec.url must not carry credentials; put them in spec.credentials');
  else if (parsed.hostname) {
    const d = urlDestination(u);
    if ('error' in d) problems.push(`spec.url ${d.error}`);
  }
  if (parsed.pathname !== '/sdk' && parsed.pathname !== '/sdk/') {
    warnings.push(`spec.url path is ${show(parsed.pathname)}, not /sdk: Forklift talks to vCenter's SDK endpoint, usually https://${parsed.host}/sdk`);
  }
}

export function validateSource(operation: Operation, object: unknown, oldObject: unknown, facts: SourceFacts): Verdict {
  const problems: string[] = [];
  const warnings: string[] = [];
  if (operation === 'DELETE' || operation === 'CONNECT') return verdict([], []);
  const obj = asObject(object);
  if (!obj) return verdict(['the request carries no VMImportSource object'], []);
  const spec = asObject(obj.spec);
  const meta = asObject(obj.metadata);

  if (operation === 'UPDATE') {
    const old = asObject(oldObject);
    const oldSpec = asObject(old?.spec);
    if (oldSpec && spec && oldSpec.type !== spec.type) {
      problems.push(`spec.type is immutable (was ${show(oldSpec.type)}); create a new VMImportSource instead`);
      return verdict(problems, warnings);
    }
    // Metadata-only writes (finalizers, labels) and writes to an object being deleted must pass: the
    // controller's own finalizer removal would otherwise be blocked by a rule that only concerns the spec.
    if (meta?.deletionTimestamp || (oldSpec && sameValue(oldSpec, spec))) return verdict([], []);
  }

  if (!spec) return verdict(['spec is required: type, url and credentials'], []);
  if (spec.type !== 'vsphere') problems.push(`spec.type must be vsphere (got ${show(spec.type)}); only VMware vCenter is supported`);
  checkURL(spec.url, problems, warnings);
  const host = urlHost(spec.url);
  if (host && problems.length === 0) checkEgress('spec.url', host, facts, problems);
  checkCredentials('spec.credentials', spec.credentials, problems, warnings, 'vCenter');

  if (spec.hosts !== undefined) {
    const hosts = asArray(spec.hosts);
    if (!hosts) problems.push('spec.hosts must be a list');
    const seen = new Map<string, number>();
    const cidrs = factValue(facts.serviceCIDRs);
    let cidrUnknownWarned = false;
    (hosts ?? []).forEach((h, i) => {
      const f = `spec.hosts[${i}]`;
      const host = asObject(h);
      if (!host) {
        problems.push(`${f} must be an object with id, address and credentials`);
        return;
      }
      const id = asString(host.id);
      if (!nonEmpty(id)) problems.push(`${f}.id is required: the ESXi host's id as the inventory names it (host-N)`);
      else if (seen.has(id)) problems.push(`${f}.id ${show(id)} is listed twice (also spec.hosts[${seen.get(id)}]); give each ESXi host one entry`);
      else seen.set(id, i);
      const address = asString(host.address)?.trim();
      if (!nonEmpty(address)) problems.push(`${f}.address is required: an IP address or DNS name of the ESXi host that the cluster can reach`);
      else if (isIPAddress(address)) {
        const hit = (cidrs ?? []).find((c) => ipInCIDR(address, c));
        if (hit) {
          problems.push(
            `${f}.address ${address} is inside the cluster's Service CIDR ${hit}: service routing would capture the transfer's traffic to it; give an address of the ESXi host outside ${hit}`,
          );
        } else {
          if (!cidrs && !cidrUnknownWarned) {
            cidrUnknownWarned = true;
            warnings.push(`could not learn the cluster's Service CIDR (${factError(facts.serviceCIDRs) ?? 'no method worked'}), so spec.hosts[].address was not checked against it`);
          }
          checkEgress(`${f}.address`, address, facts, problems, true);
        }
      } else if (!isDNSName(address)) {
        problems.push(`${f}.address ${show(address)} is neither an IP address nor a DNS name; give the bare address, without scheme, port or path`);
      } else {
        checkEgress(`${f}.address`, address, facts, problems);
      }
      checkCredentials(`${f}.credentials`, host.credentials, problems, warnings, 'ESXi');
    });
  }
  return verdict(problems, warnings);
}

/**
 * The secretRefs a write introduces or changes (field path and Secret name): those whose author must be
 * shown to be able to read the Secret. An unchanged reference on UPDATE was checked when it was written.
 */
export function secretRefsToCheck(object: unknown, oldObject: unknown): Array<{ field: string; name: string }> {
  const refs = (o: unknown): Map<string, { field: string; name: string }> => {
    const spec = asObject(asObject(o)?.spec);
    const out = new Map<string, { field: string; name: string }>();
    const add = (key: string, field: string, cred: unknown) => {
      const name = asString(asObject(asObject(cred)?.secretRef)?.name);
      if (name) out.set(key, { field, name });
    };
    add('vcenter', 'spec.credentials', spec?.credentials);
    (asArray(spec?.hosts) ?? []).forEach((h, i) => add(`host/${asString(asObject(h)?.id) ?? i}`, `spec.hosts[${i}].credentials`, asObject(h)?.credentials));
    return out;
  };
  const before = refs(oldObject);
  return [...refs(object)].filter(([k, r]) => before.get(k)?.name !== r.name).map(([, r]) => r);
}

/** True when an UPDATE changes spec.url (compared as written: a new host, port, path or scheme). */
export function sourceURLChanged(object: unknown, oldObject: unknown): boolean {
  const url = (o: unknown): unknown => asObject(asObject(o)?.spec)?.url;
  return oldObject !== undefined && oldObject !== null && url(object) !== url(oldObject);
}

/**
 * The refusal of a spec.url edit while tasks import over the source, or undefined. The controller would
 * hold the Provider's new URL until they end anyway (src/controllers/source/hold.ts), but an edited URL
 * would then point every later task at another vCenter while the running ones finish on the old one: the
 * author is told now. `tasks`: the tasks still importing over the source (inuse.ts), read fresh. Pure.
 */
export function urlEditRefusal(tasks: readonly string[]): string | undefined {
  if (!tasks.length) return undefined;
  const shown = tasks.slice(0, 10).join(', ') + (tasks.length > 10 ? ` and ${tasks.length - 10} more` : '');
  return `spec.url cannot change while tasks import over this source (${shown}): Forklift 2.11 cancels every running import of a Provider whose spec changes. Wait for them to end or delete them, then edit the URL; or create a new VMImportSource for the other vCenter`;
}
