// Egress policy for sources: which addresses a VMImportSource may make Forklift connect to. Forklift runs
// with platform privileges and forwards the tenant's credentials to spec.url and spec.hosts[].address,
// then reports what happened; without a policy that is a port scanner and a credential-forwarding path
// into the platform's own network. Pure: the policy, the cluster's networks and the address come in.
import ipaddr from 'ipaddr.js';
import { memoize } from './memo.ts';

export interface EgressPolicy {
  /** When non-empty, an address must fall inside one of these (CIDRs). */
  allowedNetworks: string[];
  /** Denied in addition to the built-in networks (CIDRs). */
  deniedNetworks: string[];
  /** Denied host names in addition to the built-in ones: exact names, or `*.suffix`. */
  deniedNames: string[];
}

export interface ClusterNetworks {
  serviceCIDRs: string[];
  /** From the nodes' spec.podCIDRs. */
  podCIDRs: string[];
}

/** Always denied: the node itself, link-local (cloud metadata at 169.254.169.254), unspecified, multicast. */
export const BUILTIN_DENIED_NETWORKS: ReadonlyArray<{ cidr: string; rule: string }> = [
  { cidr: '127.0.0.0/8', rule: 'loopback' },
  { cidr: '::1/128', rule: 'loopback' },
  { cidr: '169.254.0.0/16', rule: 'link-local' },
  { cidr: 'fe80::/10', rule: 'link-local' },
  { cidr: '0.0.0.0/8', rule: 'unspecified' },
  { cidr: '::/128', rule: 'unspecified' },
  { cidr: '224.0.0.0/4', rule: 'multicast' },
  { cidr: 'ff00::/8', rule: 'multicast' },
  { cidr: '255.255.255.255/32', rule: 'broadcast' },
];

/**
 * Always denied names: the cluster's own DNS (Services answer at <svc>.<ns>.svc[.cluster.local]), the API
 * server's well-known names, and the node itself.
 */
export const BUILTIN_DENIED_NAMES: readonly string[] = ['*.svc', '*.svc.cluster.local', '*.cluster.local', 'kubernetes', 'kubernetes.default', 'localhost', '*.localhost'];

export const EMPTY_POLICY: EgressPolicy = { allowedNetworks: [], deniedNetworks: [], deniedNames: [] };

export type EgressVerdict = { allowed: true } | { allowed: false; rule: string };

// Parsed once per distinct string (src/preflight/memo.ts): a source review checks its host against
// every built-in and configured network. The parsed objects are shared: callers only read them.
const parse = memoize((ip: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined => {
  try {
    // process(): an IPv4-mapped IPv6 address (::ffff:127.0.0.1) is judged as the IPv4 address it is.
    return ipaddr.process(ip.trim().replace(/^\[|\]$/g, ''));
  } catch {
    return undefined;
  }
});

const parseRange = memoize((cidr: string): [ipaddr.IPv4 | ipaddr.IPv6, number] | undefined => {
  try {
    return ipaddr.parseCIDR(cidr.trim());
  } catch {
    return undefined;
  }
});

function inCIDR(addr: ipaddr.IPv4 | ipaddr.IPv6, cidr: string): boolean {
  const range = parseRange(cidr);
  return !!range && addr.kind() === range[0].kind() && addr.match(range);
}

export function isIPLiteral(host: string): boolean {
  // The character test first: a host name (the usual case) is never handed to the parser.
  return /^[[\]0-9a-fA-F:.]+$/.test(host.trim()) && parse(host) !== undefined;
}

/** The verdict on one IP address. `rule` names the network and why it is denied. */
export function checkAddress(ip: string, policy: EgressPolicy, cluster: ClusterNetworks): EgressVerdict {
  const addr = parse(ip);
  if (!addr) return { allowed: false, rule: 'not an IP address' };
  for (const b of BUILTIN_DENIED_NETWORKS) if (inCIDR(addr, b.cidr)) return { allowed: false, rule: `${b.rule} ${b.cidr}` };
  for (const c of cluster.serviceCIDRs) if (inCIDR(addr, c)) return { allowed: false, rule: `the cluster's Service CIDR ${c}` };
  for (const c of cluster.podCIDRs) if (inCIDR(addr, c)) return { allowed: false, rule: `the cluster's pod CIDR ${c}` };
  for (const c of policy.deniedNetworks) if (inCIDR(addr, c)) return { allowed: false, rule: `the platform's denied network ${c}` };
  if (policy.allowedNetworks.length && !policy.allowedNetworks.some((c) => inCIDR(addr, c))) {
    return { allowed: false, rule: `outside the platform's allowed networks ${policy.allowedNetworks.join(', ')}` };
  }
  return { allowed: true };
}

function nameMatches(name: string, pattern: string): boolean {
  const p = pattern.trim().toLowerCase().replace(/\.$/, '');
  if (p.startsWith('*.')) return name.endsWith(p.slice(1)) && name.length > p.length - 1;
  return name === p;
}

/** The verdict on a host name (not an IP): the cluster's DNS names are refused whatever they resolve to. */
export function checkName(host: string, policy: EgressPolicy): EgressVerdict {
  const name = host.trim().toLowerCase().replace(/\.$/, '');
  for (const p of [...BUILTIN_DENIED_NAMES, ...policy.deniedNames]) if (nameMatches(name, p)) return { allowed: false, rule: `cluster-internal name ${p}` };
  // A bare label is completed by each pod's DNS search path (<its namespace>.svc.cluster.local first):
  // it names a Service in Forklift's namespace there, whatever it resolves to here.
  if (!name.includes('.')) return { allowed: false, rule: "single-label name (completed by the cluster's DNS search path)" };
  return { allowed: true };
}

/** The verdict on what a field holds: an IP literal by the address rules, a name by the name rules. */
export function checkHost(host: string, policy: EgressPolicy, cluster: ClusterNetworks): EgressVerdict {
  return isIPLiteral(host) ? checkAddress(host, policy, cluster) : checkName(host, policy);
}

/** Parses the platform values (comma- or space-separated lists); refuses a CIDR that does not parse. */
export function parseEgressPolicy(env: { allowed?: string; denied?: string; deniedNames?: string }): EgressPolicy {
  const list = (s: string | undefined) => (s ?? '').split(/[\s,]+/).filter(Boolean);
  const cidrs = (s: string | undefined, what: string) =>
    list(s).map((c) => {
      if (!ipaddr.isValidCIDR(c)) throw new Error(`${what}: not a CIDR: ${c}`);
      return c;
    });
  return { allowedNetworks: cidrs(env.allowed, 'allowed networks'), deniedNetworks: cidrs(env.denied, 'denied networks'), deniedNames: list(env.deniedNames) };
}

/** The message a tenant reads: the field, the address, the rule. */
export function notAllowedMessage(field: string, host: string, rule: string, resolvedFrom?: string): string {
  const what = resolvedFrom ? `${resolvedFrom} resolves to ${host}, which` : `${host}`;
  return `${field}: ${what} is not an allowed destination (${rule}); a source must point at a vCenter or ESXi host outside the cluster's own networks`;
}
