// The pods' address ranges, from the nodes' spec.podCIDRs (spec.podCIDR on nodes that predate it).
import { GVRs } from '../runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../runtime/kube.ts';

export async function listPodCIDRs(client: KubeClient): Promise<string[]> {
  const nodes = (await client.listAll<KubeObject & { spec?: { podCIDR?: string; podCIDRs?: string[] } }>(GVRs.Node)).items;
  const out = new Set<string>();
  for (const n of nodes) for (const c of n.spec?.podCIDRs ?? (n.spec?.podCIDR ? [n.spec.podCIDR] : [])) out.add(c);
  return [...out].sort();
}
