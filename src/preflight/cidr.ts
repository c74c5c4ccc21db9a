// Service-CIDR collision. An ESXi address vCenter advertises that lies inside the cluster's Service
// CIDR is captured by service routing: the packets never leave the node and the transfer dies late with
// a misleading NBD error (docs/cozystack-contract.md, "The Service CIDR").
import ipaddr from 'ipaddr.js';
import { GVRs, type GVR } from '../runtime/gvr.ts';
import { memoize } from './memo.ts';
import { ApiError, type KubeClient, type KubeObject } from '../runtime/kube.ts';

// Parsed once per distinct string (src/preflight/memo.ts): every task review checks each host against
// each Service CIDR. The parsed objects are shared: callers only read them (kind(), match()).
const parseIP = memoize((s: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined => {
  try {
    // process() turns IPv4-mapped IPv6 (::ffff:10.96.0.1) into IPv4.
    return ipaddr.process(s.trim());
  } catch {
    return undefined;
  }
});

const parseRange = memoize((cidr: string): [ipaddr.IPv4 | ipaddr.IPv6, number] | undefined => {
  let range: [ipaddr.IPv4 | ipaddr.IPv6, number];
  try {
    range = ipaddr.parseCIDR(cidr.trim());
  } catch {
    return undefined;
  }
  const net = range[0];
  if (net.kind() === 'ipv6' && (net as ipaddr.IPv6).isIPv4MappedAddress() && range[1] >= 96) return [(net as ipaddr.IPv6).toIPv4Address(), range[1] - 96];
  return range;
});

export function isIP(s: string): boolean {
  return typeof s === 'string' && /^[0-9a-fA-F:.]+$/.test(s.trim()) && ipaddr.isValid(s.trim()) && parseIP(s) !== undefined;
}

export function ipInCIDR(ip: string, cidr: string): boolean {
  if (typeof ip !== 'string' || typeof cidr !== 'string') return false;
  const a = parseIP(ip);
  if (!a) return false;
  const range = parseRange(cidr);
  if (!range) return false;
  if (a.kind() !== range[0].kind()) return false;
  return a.match(range);
}

/**
 * The range(s) from the API server's refusal of an out-of-range clusterIP, e.g. "... provided IP is not
 * in the valid range. The range of valid IPs is 10.96.0.0/12" (dual-stack: "... is 10.96.0.0/12 and fd00::/108").
 */
export function serviceCIDRFromRefusal(message: string): string[] | undefined {
  if (typeof message !== 'string') return undefined;
  const m = /range of valid IPs is\s+([0-9A-Fa-f:./]+(?:\s*(?:,|and)\s*[0-9A-Fa-f:./]+)*)/.exec(message);
  if (!m) return undefined;
  const cidrs = m[1]!
    .split(/\s*(?:,|\band\b)\s*/)
    .map((s) => s.trim().replace(/\.+$/, ''))
    .filter((s) => s && ipaddr.isValidCIDR(s));
  return cidrs.length ? cidrs : undefined;
}

export type ServiceCIDRSource = 'config' | 'ServiceCIDR' | 'apiserver-refusal';

export interface ServiceCIDRResult {
  cidrs: string[];
  source: ServiceCIDRSource;
}

/** An address no sane Service CIDR contains (public, anycast); its refusal names the valid range. */
export const PROBE_CLUSTER_IP = '1.1.1.1';

// ServiceCIDR is GA (v1) from 1.33 and beta before; try both so a 1.31/1.32 cluster with the beta
// enabled still answers without creating anything.
const SERVICE_CIDR_BETA: GVR = { ...GVRs.ServiceCIDR, version: 'v1beta1' };

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ApiError(0, 'Timeout', `${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

export class ServiceCIDRResolver {
  private readonly client: KubeClient;
  private readonly override: string | undefined;
  private readonly ttlMs: number;
  private readonly timeoutMs: number;
  private cached: { at: number; value: ServiceCIDRResult } | undefined;
  /** Failures per probe namespace: one unusable namespace (absent, forbidden) must not blind the others. */
  private readonly failedAt = new Map<string, number>();
  private readonly inflight = new Map<string, Promise<ServiceCIDRResult | undefined>>();
  private readonly now: () => number;

  constructor(client: KubeClient, opts: { override?: string; ttlMs?: number; timeoutMs?: number; now?: () => number } = {}) {
    this.client = client;
    this.override = opts.override?.trim() || undefined;
    // The range changes only when an administrator adds a ServiceCIDR; a few minutes is fresh enough and
    // keeps the probe Service create off the hot path of every admission.
    this.ttlMs = opts.ttlMs ?? 5 * 60_000;
    this.timeoutMs = opts.timeoutMs ?? 2_000;
    this.now = opts.now ?? Date.now;
  }

  /** Forget the cached answer. */
  invalidate(): void {
    this.cached = undefined;
    this.failedAt.clear();
  }

  async resolve(probeNamespace: string): Promise<ServiceCIDRResult | undefined> {
    if (this.override) {
      const cidrs = this.override.split(/[\s,]+/).filter((s) => ipaddr.isValidCIDR(s));
      if (cidrs.length) return { cidrs, source: 'config' };
    }
    const now = this.now();
    if (this.cached && now - this.cached.at < this.ttlMs) return this.cached.value;
    // A failed discovery is retried sooner than a success is refreshed: a transient API error must not
    // switch the collision check off for a whole TTL.
    const failed = this.failedAt.get(probeNamespace);
    if (failed !== undefined && now - failed < Math.min(this.ttlMs, 10_000)) return undefined;
    let p = this.inflight.get(probeNamespace);
    if (!p) {
      p = this.discover(probeNamespace)
        .then((value) => {
          if (value) {
            this.cached = { at: this.now(), value };
            this.failedAt.clear();
          } else {
            // Bounded: a flood of distinct namespaces cannot grow this without limit.
            if (this.failedAt.size > 1000) this.failedAt.clear();
            this.failedAt.set(probeNamespace, this.now());
          }
          return value;
        })
        .finally(() => this.inflight.delete(probeNamespace));
      this.inflight.set(probeNamespace, p);
    }
    return await p;
  }

  private async discover(probeNamespace: string): Promise<ServiceCIDRResult | undefined> {
    for (const gvr of [GVRs.ServiceCIDR, SERVICE_CIDR_BETA]) {
      try {
        // A probe: where the kind is not served (a bare 404), the next way is tried at once.
        const list = await withTimeout(this.client.list<KubeObject & { spec?: { cidrs?: string[] } }>(gvr, undefined, { probe: true }), this.timeoutMs, 'listing ServiceCIDRs');
        const cidrs = [...new Set(list.items.flatMap((i) => (Array.isArray(i.spec?.cidrs) ? i.spec.cidrs : [])).filter((s) => typeof s === 'string' && ipaddr.isValidCIDR(s)))];
        if (cidrs.length) return { cidrs, source: 'ServiceCIDR' };
      } catch {
        // not served (404), not allowed (403) or slow: try the next way
      }
    }
    if (!probeNamespace) return undefined;
    // A REAL create: 1.20 skips IP allocation on dry-run and accepts any clusterIP (verified on the v1.20.2 control plane of test/e2e/env).
    const probe = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { generateName: 'mc-servicecidr-probe-', namespace: probeNamespace, labels: { 'app.kubernetes.io/managed-by': 'migration-controller' } },
      spec: { type: 'ClusterIP', clusterIP: PROBE_CLUSTER_IP, ports: [{ name: 'probe', port: 1, protocol: 'TCP' }] },
    };
    try {
      const created = await withTimeout(this.client.create<KubeObject>(GVRs.Service, probe), this.timeoutMs, 'probing the Service CIDR');
      // 1.1.1.1 was inside the range: nothing learnt, and the Service must not stay.
      if (created?.metadata?.name) {
        await withTimeout(this.client.delete(GVRs.Service, probeNamespace, created.metadata.name), this.timeoutMs, 'deleting the probe Service').catch(() => undefined);
      }
      return undefined;
    } catch (e) {
      const cidrs = e instanceof Error ? serviceCIDRFromRefusal(e.message) : undefined;
      return cidrs ? { cidrs, source: 'apiserver-refusal' } : undefined;
    }
  }
}

export interface AddressCollision {
  hostId: string;
  address: string;
  cidr: string;
}

export function hostAddressCollision(hostId: string, advertisedAddress: string, cidrs: string[], overriddenHostIds: string[]): AddressCollision | undefined {
  if ((overriddenHostIds ?? []).includes(hostId)) return undefined;
  if (typeof advertisedAddress !== 'string' || !isIP(advertisedAddress)) return undefined;
  for (const cidr of cidrs ?? []) {
    if (ipInCIDR(advertisedAddress, cidr)) return { hostId, address: advertisedAddress.trim(), cidr };
  }
  return undefined;
}

export function collisionMessage(c: AddressCollision, vmName?: string): string {
  const who = vmName ? `VM "${vmName}" runs on ESXi host ${c.hostId}, which vCenter advertises` : `vCenter advertises ESXi host ${c.hostId}`;
  return (
    `${who} at ${c.address}, inside the cluster's Service CIDR ${c.cidr}: service routing would capture the transfer's traffic and it would fail late. ` +
    `Add spec.hosts[] on the VMImportSource with id: ${c.hostId}, an address the cluster can reach, and the ESXi host's own credentials`
  );
}
