// Which objects this process's simulator plays. Test files run one after another on a shared control plane.
// A file deletes its namespaces as it ends (test/e2e/env/index.ts deleteOwnedNamespaces, from its fixtures
// while its controller runs, and from the runner once it has exited), but a namespace takes a while to go,
// and a simulator started by a later file would otherwise take over what is still there: Migrations still
// open (run again, for a vCenter this simulator does not know), DataVolumes still importing, claims still
// pending. Forklift, CDI and KubeVirt are cluster-wide, but each file plays a cluster of its own: a namespace
// made by `freshNamespace` carries its process's owner label, and a simulator ignores namespaces owned by
// another process. Namespaces without the label (the demo's, a private plane's, the controller's own) are
// everyone's, as before.
import { randomBytes } from 'node:crypto';
import type { Obj } from './rest.ts';

export const OWNER_LABEL = 'sim.cozystack.io/owner';
/**
 * This process's owner token: the one the e2e runner gave it (MC_E2E_OWNER, so the runner can delete the
 * file's namespaces once it has ended), else one of its own. Never inherited by child processes: the
 * variable is taken out of the environment, and a child draws its own.
 */
export const PROCESS_OWNER = takeOwner();

function takeOwner(): string {
  const given = process.env.MC_E2E_OWNER;
  delete process.env.MC_E2E_OWNER;
  return given && /^[0-9a-f]{12}$/.test(given) ? given : newOwner();
}

/** A fresh owner token (12 hex digits, a label value). */
export function newOwner(): string {
  return randomBytes(6).toString('hex');
}

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
