// Small helpers shared by the VMImportSource e2e files.
import { KubeClient, type KubeObject } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { VMImportSource, VMImportSourceSpec } from '../../src/api/types.ts';
import { adminKubeConfig, waitFor } from './env/index.ts';
import { DEFAULT_CONTROLLER_NAMESPACE } from '../../src/config.ts';
import { projectedSecretName } from '../../src/forklift/names.ts';

/** Where an e2e controller keeps projected Secrets (its own namespace, POD_NAMESPACE unset). */
export const CONTROLLER_NS = DEFAULT_CONTROLLER_NAMESPACE;

/** The Forklift Secret projected for a source (or one of its hosts), from the controller's namespace. */
export async function projectedSecret(c: KubeClient, ns: string, source: string, hostId?: string, controllerNs = CONTROLLER_NS): Promise<(KubeObject & { data?: Record<string, string> }) | undefined> {
  const name = await projectedSecretNameOf(c, ns, source, hostId);
  return name ? await c.get(GVRs.Secret, controllerNs, name) : undefined;
}

/** The name of a source's projected Secret (derived from the source's UID); undefined while the source does not exist. */
export async function projectedSecretNameOf(c: KubeClient, ns: string, source: string, hostId?: string): Promise<string | undefined> {
  const uid = (await c.get(GVRs.VMImportSource, ns, source))?.metadata?.uid;
  return uid ? projectedSecretName(uid, hostId) : undefined;
}

export async function adminClient(): Promise<KubeClient> {
  return new KubeClient(await adminKubeConfig(), { fieldManager: 'e2e' });
}

export async function createSource(c: KubeClient, ns: string, name: string, spec: VMImportSourceSpec): Promise<VMImportSource> {
  return (await c.create(GVRs.VMImportSource, { apiVersion: 'forklift.cozystack.io/v1alpha1', kind: 'VMImportSource', metadata: { name, namespace: ns }, spec } as KubeObject)) as unknown as VMImportSource;
}

export async function getSource(c: KubeClient, ns: string, name: string): Promise<VMImportSource | undefined> {
  return (await c.get(GVRs.VMImportSource, ns, name)) as unknown as VMImportSource | undefined;
}

export function readyOf(s: VMImportSource | undefined): { status: string; reason: string; message: string } | undefined {
  return s?.status?.conditions?.find((c) => c.type === 'Ready');
}

/** Waits until the source's Ready condition has `reason` (and the generation is observed); returns the source. */
export async function waitForReason(c: KubeClient, ns: string, name: string, reason: string, timeoutMs = 30_000): Promise<VMImportSource> {
  let last: string | undefined;
  try {
    return await waitFor(
      `source ${ns}/${name} Ready reason ${reason}`,
      async () => {
        const s = await getSource(c, ns, name);
        const r = readyOf(s);
        last = r ? `${r.status}/${r.reason}: ${r.message}` : 'no Ready condition';
        return r?.reason === reason && s?.status?.observedGeneration === s?.metadata.generation ? s : undefined;
      },
      { timeoutMs },
    );
  } catch (e) {
    throw new Error(`${(e as Error).message} (last: ${last})`);
  }
}
