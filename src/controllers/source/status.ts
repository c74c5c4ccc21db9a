// The VMImportSource status as a pure function of what the reconciler observed.
import { CONDITION_READY, SourceReason } from '../../api/conditions.ts';
import type { CredentialsRejection, SourceHostStatus, VMImportSource, VMImportSourceStatus } from '../../api/types.ts';
import { hostVerdict, providerVerdict, type Verdict } from '../../forklift/conditions.ts';
import type { KubeObject } from '../../runtime/kube.ts';
import { getCondition, setCondition } from '../../runtime/status.ts';
import { CONDITION_PROVIDER_UPDATE_PENDING, REASON_APPLIED, REASON_TASKS_RUNNING, pendingMessage } from './hold.ts';

export interface SourceObservation {
  source: VMImportSource;
  now: Date;
  /**
   * A verdict reached before Forklift was consulted (VDDKNotConfigured, ForkliftNotInstalled,
   * CredentialsMissing for a foreign Secret, AuthenticationFailed from Forklift's Secret webhook).
   */
  gate?: { reason: SourceReason; message: string };
  /** The source Provider as last observed (undefined: not created yet). */
  provider?: KubeObject;
  /** Forklift Host objects by spec.hosts[].id. */
  hosts?: Record<string, KubeObject | undefined>;
  /** VMs published in the inventory ConfigMap. */
  vmCount?: number;
  /** The bounded inventory read on this pass (absent: not read now; the previous one is kept). */
  inventory?: VMImportSourceStatus['inventory'];
  /** The inventory could not be read on this pass (not counting "still loading"): the fault to report. */
  inventoryFault?: unknown;
  /** Forklift refused this spec's credentials at the Secret write (the gate says so). */
  credentialsRejected?: CredentialsRejection;
  /** A gate that must not be retried sooner (webhook-timeout.ts). */
  retryAfterMs?: number;
  /** A source Provider spec update held back while tasks import over the source (hold.ts). */
  providerUpdatePending?: { fields: string[]; tasks: string[] };
}

export function deriveVerdict(o: SourceObservation): Verdict & { hosts: SourceHostStatus[] } {
  const specHosts = o.source.spec.hosts ?? [];
  if (o.gate) {
    return { ready: false, reason: o.gate.reason, message: o.gate.message, hosts: specHosts.map((h) => ({ id: h.id, address: h.address, ready: false })) };
  }
  const hosts: SourceHostStatus[] = specHosts.map((h) => {
    const v = hostVerdict(o.hosts?.[h.id]);
    return { id: h.id, address: h.address, ready: v.ready, ...(v.reason ? { reason: v.reason } : {}), message: v.message };
  });
  const pv = providerVerdict(o.provider, { username: o.source.spec.credentials?.username ?? '', caCert: o.source.spec.credentials?.caCert });
  if (!pv.ready) return { ...pv, hosts };
  const bad = hosts.filter((h) => h.reason === SourceReason.HostUnreachable);
  // A host that answered but refused its account: the ESXi credentials, not the address, are wrong. Our
  // host Secrets live in the controller's namespace, where Forklift's Secret webhook finds no Provider and
  // admits them untested, so the refusal arrives through the Host's own connection test.
  const refused = bad.filter((h) => /incorrect user name or password/i.test(h.message ?? ''));
  if (refused.length) {
    return {
      ready: false,
      reason: SourceReason.AuthenticationFailed,
      message: `vCenter is connected, but ${refused.length === 1 ? 'an ESXi host rejects its credentials' : 'ESXi hosts reject their credentials'} (spec.hosts[].credentials: the host's own account, usually root): ${refused.map((h) => `${h.id} (${h.address}): ${h.message}`).join('; ')}`,
      hosts,
    };
  }
  if (bad.length) {
    return {
      ready: false,
      reason: SourceReason.HostUnreachable,
      message: `vCenter is connected, but Forklift cannot use ${bad.length === 1 ? 'the host override' : 'these host overrides'}: ${bad.map((h) => `${h.id} (${h.address}): ${h.message}`).join('; ')}`,
      hosts,
    };
  }
  const pending = hosts.filter((h) => !h.ready);
  if (pending.length) {
    return { ready: false, reason: SourceReason.Connecting, message: `vCenter is connected; waiting for Forklift to test ${pending.map((h) => `${h.id} (${h.address})`).join(', ')}.`, hosts };
  }
  return { ...pv, hosts };
}

/** The full status to write. Pure: lastTransitionTime only moves when Ready flips. */
export function deriveSourceStatus(o: SourceObservation): VMImportSourceStatus {
  const v = deriveVerdict(o);
  const gen = o.source.metadata.generation;
  const prev = o.source.status;
  let conditions = setCondition(prev?.conditions, { type: CONDITION_READY, status: v.ready ? 'True' : 'False', reason: v.reason, message: v.message }, o.now, gen);
  // The Provider update held back for running tasks is said while it waits, and once it is written.
  if (o.providerUpdatePending) {
    conditions = setCondition(conditions, { type: CONDITION_PROVIDER_UPDATE_PENDING, status: 'True', reason: REASON_TASKS_RUNNING, message: pendingMessage(o.providerUpdatePending) }, o.now, gen);
  } else if (!o.gate && o.provider && getCondition(prev?.conditions, CONDITION_PROVIDER_UPDATE_PENDING)?.status === 'True') {
    conditions = setCondition(conditions, { type: CONDITION_PROVIDER_UPDATE_PENDING, status: 'False', reason: REASON_APPLIED, message: 'The held Forklift Provider update is written: no task imports over this source.' }, o.now, gen);
  }
  const status: VMImportSourceStatus = { observedGeneration: gen, conditions };
  if (o.provider && !o.gate) {
    const st = (o.provider.status ?? {}) as { phase?: string; fingerprint?: string };
    status.provider = {
      name: o.provider.metadata?.name,
      uid: o.provider.metadata?.uid,
      ...(st.phase ? { phase: st.phase } : {}),
      ...(st.fingerprint ? { fingerprint: st.fingerprint } : {}),
    };
  }
  if (v.hosts.length) status.hosts = v.hosts;
  if (o.gate && o.credentialsRejected) status.credentialsRejected = o.credentialsRejected;
  if (v.ready && o.vmCount !== undefined) status.vmCount = o.vmCount;
  // A pass that could not read the inventory (still loading, a transient error) keeps the last list
  // rather than blanking what tenants pick VMs from; a source that is not Ready publishes none.
  const inventory = o.inventory ?? prev?.inventory;
  if (v.ready && inventory) status.inventory = inventory;
  return status;
}
