// The pods' address ranges, from the nodes' spec.podCIDRs (spec.podCIDR on nodes that predate it).
import { GVRs } from '../runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../runtime/kube.ts';

export async function listPodCIDRs(client: KubeClient): Promise<string[]> {
  const nodes = (await client.listAll<KubeObject & { spec?: { podCIDR?: string; podCIDRs?: string[] } }>(GVRs.Node)).items;
  const out = new Set<string>();
  for (const n of nodes) for (const c of n.spec?.podCIDRs ?? (n.spec?.podCIDR ? [n.spec.podCIDR] : [])) out.add(c);
  return [...out].sort();
}

type NodeLike = { status?: { addresses?: Array<{ type?: string; address?: string }> } };

/** The nodes' own IP addresses (InternalIP, ExternalIP): a kubelet and host-network pods listen on each. Pure. */
export function nodeAddressesOf(nodes: NodeLike[]): string[] {
  const out = new Set<string>();
  for (const n of nodes) for (const a of n.status?.addresses ?? []) if ((a.type === 'InternalIP' || a.type === 'ExternalIP') && a.address) out.add(a.address);
  return [...out];
}

/** The pods' networks and the nodes' addresses, from one list of the nodes. */
export async function listNodeNetworks(client: KubeClient): Promise<{ podCIDRs: string[]; nodeAddresses: string[] }> {
  const nodes = (await client.listAll<KubeObject & { spec?: { podCIDR?: string; podCIDRs?: string[] } } & NodeLike>(GVRs.Node)).items;
  const pods = new Set<string>();
  for (const n of nodes) for (const c of n.spec?.podCIDRs ?? (n.spec?.podCIDR ? [n.spec.podCIDR] : [])) pods.add(c);
  return { podCIDRs: [...pods].sort(), nodeAddresses: nodeAddressesOf(nodes) };
}

/**
 * The API server's addresses: the EndpointSlice `kubernetes` in `default`, which the API servers keep
 * current themselves (k8s.io/kubernetes pkg/controlplane/reconcilers, the lease endpoint reconciler).
 * Absent (an API server that keeps none): no addresses, and the Service CIDR rule still holds the
 * `kubernetes` Service's own address.
 */
export async function apiServerAddresses(client: KubeClient): Promise<string[]> {
  const slice = await client.get<KubeObject & { endpoints?: Array<{ addresses?: string[] }> }>(GVRs.EndpointSlice, 'default', 'kubernetes');
  return [...new Set((slice?.endpoints ?? []).flatMap((e) => e.addresses ?? []))];
}
