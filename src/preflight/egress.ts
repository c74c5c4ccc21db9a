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
  /** The nodes' own addresses (status.addresses InternalIP/ExternalIP): a kubelet listens on each. */
  nodeAddresses?: string[];
  /** The API server's addresses, from the `kubernetes` Service's endpoints in `default`. */
  apiServerAddresses?: string[];
}

/**
 * Always denied: the node itself, link-local (cloud metadata at 169.254.169.254), unspecified, multicast,
 * the carrier-grade NAT range and the clouds' metadata services outside link-local.
 */
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
  // RFC 6598 shared address space: Cozystack's join network between nodes and pods (Kube-OVN's default
  // join subnet 100.64.0.0/16) and Alibaba Cloud's metadata service 100.100.100.200 lie in it.
  { cidr: '100.64.0.0/10', rule: 'carrier-grade NAT (platform join network)' },
  // AWS EC2 User Guide, "Instance metadata service": the IPv6 endpoint fd00:ec2::254 (and the Amazon DNS
  // server fd00:ec2::253, the Time Sync Service fd00:ec2::123) in AWS's reserved fd00:ec2::/32.
  { cidr: 'fd00:ec2::/32', rule: 'cloud metadata (AWS)' },
  // Google Cloud, "About VM metadata": the metadata server's IPv6 address fd20:ce::254.
  { cidr: 'fd20:ce::254/128', rule: 'cloud metadata (Google Cloud)' },
  // Oracle Cloud Infrastructure, "Getting Instance Metadata": the IPv6 endpoint fd00:c1::a9fe:a9fe.
  { cidr: 'fd00:c1::a9fe:a9fe/128', rule: 'cloud metadata (Oracle Cloud)' },
  // Microsoft Azure, "What is IP address 168.63.129.16?": the WireServer (VM agent, DNS, health probes).
  { cidr: '168.63.129.16/32', rule: 'cloud platform endpoint (Azure WireServer)' },
];

/**
 * Always denied names: the cluster's own DNS (Services answer at <svc>.<ns>.svc[.cluster.local]), the API
 * server's well-known names, the node itself, and the clouds' metadata names (Google Cloud "About VM
 * metadata": metadata.google.internal; AWS EC2 User Guide: instance-data.ec2.internal; a bare
 * `metadata` or `instance-data` is a single label, denied below).
 */
export const BUILTIN_DENIED_NAMES: readonly string[] = [
  '*.svc',
  '*.svc.cluster.local',
  '*.cluster.local',
  'kubernetes',
  'kubernetes.default',
  'localhost',
  '*.localhost',
  'metadata.google.internal',
  'instance-data.ec2.internal',
];

/**
 * The IPv4 addresses an IPv6 address carries, by the standard embeddings: a packet to it may reach that
 * IPv4 host (through a NAT64 gateway, a 6to4 or Teredo relay, an ISATAP router, or the stack's own
 * mapping). Each is judged as well, so [64:ff9b::a9fe:a9fe] is the metadata service it stands for.
 */
export function embeddedIPv4(addr: ipaddr.IPv6): Array<{ ip: ipaddr.IPv4; form: string }> {
  const p = addr.parts; // eight 16-bit words
  const v4 = (hi: number, lo: number, xor = 0): ipaddr.IPv4 => {
    const n = (((hi << 16) | lo) ^ xor) >>> 0;
    return new ipaddr.IPv4([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
  };
  const out: Array<{ ip: ipaddr.IPv4; form: string }> = [];
  const zero = (from: number, to: number) => p.slice(from, to).every((w) => w === 0);
  if (zero(0, 5) && p[5] === 0xffff) out.push({ ip: v4(p[6]!, p[7]!), form: 'IPv4-mapped ::ffff:0:0/96' }); // RFC 4291 §2.5.5.2
  if (zero(0, 6)) out.push({ ip: v4(p[6]!, p[7]!), form: 'IPv4-compatible ::/96' }); // RFC 4291 §2.5.5.1
  if (zero(0, 4) && p[4] === 0xffff && p[5] === 0) out.push({ ip: v4(p[6]!, p[7]!), form: 'IPv4-translated ::ffff:0:0:0/96' }); // RFC 2765
  if (p[0] === 0x64 && p[1] === 0xff9b && zero(2, 6)) out.push({ ip: v4(p[6]!, p[7]!), form: 'NAT64 64:ff9b::/96' }); // RFC 6052
  if (p[0] === 0x64 && p[1] === 0xff9b && p[2] === 1) out.push({ ip: v4(p[6]!, p[7]!), form: 'local NAT64 64:ff9b:1::/48' }); // RFC 8215
  if (p[0] === 0x2002) out.push({ ip: v4(p[1]!, p[2]!), form: '6to4 2002::/16' }); // RFC 3056
  if (p[0] === 0x2001 && p[1] === 0) {
    // RFC 4380 Teredo: the server's IPv4 in words 2-3, the client's (bits inverted) in words 6-7.
    out.push({ ip: v4(p[2]!, p[3]!), form: 'Teredo server 2001::/32' });
    out.push({ ip: v4(p[6]!, p[7]!, 0xffffffff), form: 'Teredo client 2001::/32' });
  }
  if ((p[4] === 0 || p[4] === 0x200) && p[5] === 0x5efe) out.push({ ip: v4(p[6]!, p[7]!), form: 'ISATAP ::5efe:0:0/96' }); // RFC 5214
  return out;
}

export const EMPTY_POLICY: EgressPolicy = { allowedNetworks: [], deniedNetworks: [], deniedNames: [] };

export type EgressVerdict = { allowed: true } | { allowed: false; rule: string };

// Parsed once per distinct string (src/preflight/memo.ts): a source review checks its host against
// every built-in and configured network. The parsed objects are shared: callers only read them.
const parse = memoize((ip: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined => {
  try {
    return ipaddr.parse(ip.trim().replace(/^\[|\]$/g, ''));
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

function sameAddress(a: ipaddr.IPv4 | ipaddr.IPv6, s: string): boolean {
  const b = parse(s);
  return !!b && a.kind() === b.kind() && a.toNormalizedString() === b.toNormalizedString();
}

/** The denials of one address as it is (no embedded forms). */
function deniedAs(addr: ipaddr.IPv4 | ipaddr.IPv6, policy: EgressPolicy, cluster: ClusterNetworks): string | undefined {
  for (const b of BUILTIN_DENIED_NETWORKS) if (inCIDR(addr, b.cidr)) return `${b.rule} ${b.cidr}`;
  for (const c of cluster.serviceCIDRs) if (inCIDR(addr, c)) return `the cluster's Service CIDR ${c}`;
  for (const c of cluster.podCIDRs) if (inCIDR(addr, c)) return `the cluster's pod CIDR ${c}`;
  for (const a of cluster.nodeAddresses ?? []) if (sameAddress(addr, a)) return `a node's own address ${a}`;
  for (const a of cluster.apiServerAddresses ?? []) if (sameAddress(addr, a)) return `the API server's address ${a}`;
  for (const c of policy.deniedNetworks) if (inCIDR(addr, c)) return `the platform's denied network ${c}`;
  return undefined;
}

/**
 * The verdict on one IP address. `rule` names the network and why it is denied. An IPv6 address is
 * judged as itself and as every IPv4 address it embeds; the allow-list must hold each of them too.
 */
export function checkAddress(ip: string, policy: EgressPolicy, cluster: ClusterNetworks): EgressVerdict {
  const addr = parse(ip);
  if (!addr) return { allowed: false, rule: 'not an IP address' };
  const forms: Array<{ ip: ipaddr.IPv4 | ipaddr.IPv6; form?: string }> = [{ ip: addr }, ...(addr.kind() === 'ipv6' ? embeddedIPv4(addr as ipaddr.IPv6) : [])];
  for (const f of forms) {
    const rule = deniedAs(f.ip, policy, cluster);
    if (rule) return { allowed: false, rule: f.form ? `${rule}, embedded as ${f.ip.toString()} in the ${f.form} form` : rule };
  }
  if (policy.allowedNetworks.length && !forms.every((f) => policy.allowedNetworks.some((c) => inCIDR(f.ip, c)))) {
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

/**
 * The host a URL points at, judged the way every parser on its path reads it, or why it cannot be.
 * Node's WHATWG parser and Forklift's (Go's net/url) disagree on odd forms: Node rewrites 0x7f.1 to
 * 127.0.0.1 and decodes percent-escapes, Go keeps them and hands them to the resolver. A host is
 * accepted only when Node's canonical form is what is written (case aside), so both read the same
 * host; anything else, and a URL Node does not parse at all, is not judged and therefore not allowed.
 */
export function urlDestination(url: string): { host: string } | { error: string } {
  const t = url.trim();
  let parsed: URL;
  try {
    parsed = new URL(t);
  } catch {
    return { error: 'does not parse as a URL' };
  }
  const written = /^[a-z][a-z0-9+.-]*:\/\/(?:[^/?#@]*@)?([^/?#]*)/i.exec(t)?.[1] ?? '';
  if (!parsed.hostname) return { error: 'has no host' };
  // The scheme's default port is dropped by the parser, not changed: https://vc:443/ is https://vc/.
  const plain = parsed.protocol === 'https:' && parsed.port === '' ? written.toLowerCase().replace(/:443$/, '') : written.toLowerCase();
  if (plain !== parsed.host) return { error: `writes its host ${JSON.stringify(written.slice(0, 80))} in a form parsers read differently; write it as ${parsed.host}` };
  return { host: parsed.hostname.replace(/^\[|\]$/g, '') };
}
