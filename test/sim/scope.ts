// Which objects this process's simulator plays. Test files run one after another on a shared control plane
// and never delete their namespaces, so a simulator started by a later file would otherwise take over what
// earlier files left behind: Migrations still open (run again, for a vCenter this simulator does not know),
// DataVolumes still importing, claims still pending. Forklift, CDI and KubeVirt are cluster-wide, but each
// file plays a cluster of its own: a namespace made by `freshNamespace` carries its process's owner label,
// and a simulator ignores namespaces owned by another process. Namespaces without the label (the demo's, a
// private plane's, the controller's own) are everyone's, as before.
import { randomBytes } from 'node:crypto';
import type { Obj } from './rest.ts';

export const OWNER_LABEL = 'sim.cozystack.io/owner';
/** This process's owner token (never inherited by child processes: each process draws its own). */
export const PROCESS_OWNER = randomBytes(6).toString('hex');

/** The namespace an object lives in, for a PersistentVolume the namespace of the claim it is bound to. */
function namespaceOf(o: Obj): string | undefined {
  return o.metadata.namespace ?? (o.kind === 'PersistentVolume' ? (o.spec?.claimRef?.namespace as string | undefined) : undefined);
}

/**
 * True when the object is this process's to play: outside any namespace, or in one that is unlabelled, owned
 * by this process, or not (yet) known. A namespace another process made exists before this simulator
 * starts, so the namespace cache (synced first) always knows it.
 */
export function visibleIn(namespaces: (name: string) => Obj | undefined): (o: Obj) => boolean {
  return (o) => {
    const ns = namespaceOf(o);
    if (!ns) return true;
    const owner = namespaces(ns)?.metadata.labels?.[OWNER_LABEL];
    return !owner || owner === PROCESS_OWNER;
  };
}
