// Forklift's and CDI's failure texts translated into our reasons, with a message a tenant can act on.
// Forklift's own words are always kept (after "Forklift said:") so nothing is lost in translation.
import { TaskReason } from '../api/conditions.ts';
import { describeCondition, type ForkliftCondition } from './plan.ts';
import { WARM_PRIVILEGES_TEXT } from '../api/warm.ts';
import { blockerFailure } from './blocker.ts';

export interface Translation {
  reason: TaskReason;
  message: string;
}

export interface FailureContext {
  /** e.g. `ESXi host host-10 at 10.96.0.15 (advertised by vCenter)`. */
  hostDescription?: string;
  /** The Service-CIDR diagnosis, when the host address collides with it. */
  hostDiagnosis?: string;
  sourceName?: string;
}

interface Rule {
  /** Tested against the whole failure text. */
  match: RegExp;
  reason: TaskReason;
  advice: (c: FailureContext) => string;
}

const ADD_HOSTS = (c: FailureContext): string =>
  `the ESXi host address vCenter advertises${c.hostDescription ? ` (${c.hostDescription})` : ''} is unreachable from the cluster or lies inside the Service CIDR; ` +
  `add spec.hosts[] to VMImportSource${c.sourceName ? ` "${c.sourceName}"` : ''} with an address the cluster can reach and the host's own credentials, then create a new task` +
  (c.hostDiagnosis ? `. ${c.hostDiagnosis}` : '');

/** Order matters: the first match wins. Kept in step with the table in docs/forklift-contract.md. */
export const FAILURE_RULES: readonly Rule[] = [
  {
    // Forklift's only words for a failed or vanished virt-v2v pod (kubev2v/forklift@v2.11.5:
    // pkg/controller/plan/migration.go, updateConversionProgress); the cause is in the pod's log. First: the
    // pod's failure must not be read as a transfer fault by the rules below.
    match: /Guest conversion failed|Guest conversion pod not found/i,
    reason: TaskReason.TransferFailed,
    advice: () =>
      'guest conversion (virt-v2v) failed; the log of the conversion pod (label app=virt-v2v, named after the Forklift Plan and VM id, in this namespace) names the cause: passt denied by the node\'s seccomp profile (tell the platform administrator), a guest virt-v2v cannot convert, or a disk missing on its datastore (docs/conversion.md). Import without spec.guestConversion for a raw copy, or fix the cause, then create a new task',
  },
  // Warm imports. A snapshot call vCenter refuses fails the precopy step with vCenter's NoPermission text
  // (kubev2v/forklift@v2.11.5:pkg/controller/plan/migration.go, PhaseCreateInitialSnapshot/…: step.AddError
  // of the CreateSnapshot / RemoveSnapshot error of pkg/controller/plan/adapter/vsphere/client.go).
  {
    match: /(snapshot[\s\S]*(NoPermission|Permission to perform this operation was denied))|((NoPermission|Permission to perform this operation was denied)[\s\S]*snapshot)/i,
    reason: TaskReason.SnapshotFailed,
    advice: (c) =>
      `vCenter refused to create or remove the warm import's snapshot: the account of VMImportSource${c.sourceName ? ` "${c.sourceName}"` : ''} lacks the warm-only privileges ${WARM_PRIVILEGES_TEXT} on the VM; grant them (docs/warm.md), then create a new task`,
  },
  {
    match: /VMMissingChangedBlockTracking|MissingChangedBlockTracking|CBT\) has not been enabled/i,
    reason: TaskReason.ChangeTrackingDisabled,
    advice: () => 'changed block tracking (CBT) is not enabled on the VM; enable it in vSphere (advanced parameters ctkEnabled=TRUE and <disk>.ctkEnabled=TRUE, see docs/warm.md), then create a new task, or import it cold',
  },
  {
    match: /VMHasSnapshots|pre-existing snapshots/i,
    reason: TaskReason.SnapshotsPresent,
    advice: () => "the VM has snapshots, which a warm import cannot start from; delete or consolidate them in vSphere, then create a new task, or import it cold",
  },
  {
    match: /shared disks cannot be used with warm/i,
    reason: TaskReason.DiskNotWarmCapable,
    advice: () => 'a shared (multi-writer) disk cannot be copied warm; import this VM cold',
  },
  {
    match: /CreateSnapshot|RemoveSnapshot|forklift-migration-precopy|(create|remove|removing|creating) (the )?snapshot/i,
    reason: TaskReason.SnapshotFailed,
    advice: () => "vCenter could not create or remove the warm import's precopy snapshot; check the VM's snapshot tasks in vSphere (datastore space, a snapshot tree locked by a backup tool), then create a new task",
  },
  // Before HostUnreachable (same VixDiskLib_Open call): the host's NFC service is out of connection buffers
  // — VDDK's VIX_E_OUT_OF_MEMORY with DiskLib error 802 NBD_ERR_INSUFFICIENT_RESOURCES (VMware VDDK
  // Programming Guide, "NFC Session Limits and Timeouts": 48 MB of buffers per ESXi host by default), past
  // the transfers every client together has open on that host. The host is reachable; it is busy.
  {
    match: /NBD_ERR_INSUFFICIENT_RESOURCES|DiskLib error 802|VixDiskLib_Open:[^\n]*Memory allocation failed/i,
    reason: TaskReason.HostTransferLimit,
    advice: (c) =>
      `the ESXi host${c.hostDescription ? ` (${c.hostDescription})` : ''} refused another disk transfer: its NFC service has no connection buffers left for the transfers open on it (every client's, not only this platform's; the default limit is about 48 per host). Ask the platform operator to keep the transfer budget on (chart value transfer.maxDisksPerHost, below the host's limit, less what other tools such as backups hold), then create a new task`,
  },
  { match: /nbd_connect_uri|has no export named|VixDiskLib_Open|server refused connection|NfcNewAuthdConnectionEx|Failed to connect to .*:902/i, reason: TaskReason.HostUnreachable, advice: ADD_HOSTS },
  {
    match: /AwaitingVDDK|VDDKInitImageUnavailable|VDDKInvalid|vddk.*(not (set|configured)|image)/i,
    reason: TaskReason.VDDKNotConfigured,
    advice: () => 'no usable VDDK image is configured for the source; the platform operator must set the migration-controller chart value vddkImage to an image built from VMware\'s VDDK, then create a new task',
  },
  {
    match: /x509|certificate signed by unknown authority|certificate has expired/i,
    reason: TaskReason.TransferFailed,
    advice: (c) => `a TLS certificate was rejected; check spec.credentials.caCert of VMImportSource${c.sourceName ? ` "${c.sourceName}"` : ''} (a PEM CA, not a thumbprint), then create a new task`,
  },
  {
    match: /incorrect user name or password|ConnectionAuthFailed|Cannot complete login/i,
    reason: TaskReason.TransferFailed,
    advice: () => 'vCenter rejected the credentials; a username without its SSO domain (user@vsphere.local) fails exactly like a wrong password. Fix the source, then create a new task',
  },
  {
    match: /SecretNotValid|secret is not valid/i,
    reason: TaskReason.TransferFailed,
    advice: () => 'the source credentials were refused as invalid; a SHA-1 thumbprint where a PEM CA is expected fails this way — give caCert (PEM) or insecureSkipVerify, then create a new task',
  },
  {
    match: /exceeded quota|exceeds quota|forbidden: exceeded/i,
    reason: TaskReason.QuotaExceeded,
    advice: () => 'the namespace quota cannot hold the transfer volumes (each disk needs about twice its size while it imports); raise requests.storage or free space, then create a new task',
  },
  {
    match: /VMMultiplePodNetworkMappings/i,
    reason: TaskReason.PlanNotValid,
    advice: () => 'at most one NIC may use the pod network; map the others to a Multus attachment in spec.networks, then create a new task',
  },
  {
    match: /VMNotFound|VM not found/i,
    reason: TaskReason.VMNotFound,
    advice: (c) => `the VM is not in the inventory of VMImportSource${c.sourceName ? ` "${c.sourceName}"` : ''}; check the id (vm-N from the vSphere client URL or \`govc ls -i\`)`,
  },
  {
    match: /VMAlreadyExists/i,
    reason: TaskReason.OutputExists,
    advice: () => 'a KubeVirt VirtualMachine with the source VM\'s name already exists in this namespace; remove it or import into another namespace',
  },
];

function join(advice: string, words: string): string {
  const w = words.trim();
  return w ? `${advice}. Forklift said: ${w}` : advice;
}

/** A VM's failure text (error reasons, failed step messages) → reason + actionable message. */
export function translateFailure(text: string, ctx: FailureContext = {}, fallback: TaskReason = TaskReason.TransferFailed): Translation {
  // First: a v2.12 blocker failure quotes the blockers' own words, which the rules below would misread.
  const blocked = blockerFailure(text, ctx.sourceName);
  if (blocked) return { reason: blocked.reason, message: blocked.message };
  for (const r of FAILURE_RULES) {
    if (r.match.test(text)) return { reason: r.reason, message: join(r.advice(ctx), text) };
  }
  return { reason: fallback, message: join('the transfer failed; create a new task once the cause is fixed', text) };
}

/** A Plan's blockers (Critical/Error conditions) → reason + message; `message`/`items` verbatim. */
export function translatePlanBlockers(blockers: ForkliftCondition[], ctx: FailureContext = {}): Translation {
  const text = blockers.map(describeCondition).join('; ');
  const types = blockers.map((b) => `${b.type} ${b.reason ?? ''}`).join(' ');
  for (const r of FAILURE_RULES) {
    if (r.match.test(types) || r.match.test(text)) return { reason: r.reason, message: join(r.advice(ctx), text) };
  }
  return { reason: TaskReason.PlanNotValid, message: join('Forklift refused the migration plan', text) };
}

/**
 * The retry trap (docs/forklift-contract.md): a Plan with history can report Succeeded while creating neither
 * the VirtualMachine nor its claims. True when the engine says Succeeded and nothing came out.
 */
export function engineSucceededWithoutOutput(o: { engineSucceeded: boolean; forkliftVM: unknown; transferClaims: unknown[]; expectedDisks: number }): boolean {
  if (!o.engineSucceeded) return false;
  return !o.forkliftVM || o.transferClaims.length === 0 || (o.expectedDisks > 0 && o.transferClaims.length < o.expectedDisks);
}

export const SUCCESS_WITHOUT_OUTPUT_MESSAGE =
  'Forklift reported the migration Succeeded but produced no VirtualMachine or transfer volumes (a Plan with a failed attempt in its history does this); create a new task, which builds a new Plan';

/**
 * Transfer claims still Pending although Forklift reports the copy done: on a WaitForFirstConsumer class CDI
 * (with HonorWaitForFirstConsumer) leaves the DataVolume PendingPopulation, which Forklift counts as copied
 * for vSphere (kubev2v/forklift@v2.11.5 and @v2.12.5:pkg/controller/plan/migration.go updateCopyProgress):
 * nothing was copied, and the claims never bind. Their names (sorted); empty when every claim is bound. Pure.
 */
export function claimsPendingAfterCopy(claims: ReadonlyArray<{ metadata?: { name?: string }; status?: unknown }>): string[] {
  return claims
    .filter((c) => (c.status as { phase?: string } | undefined)?.phase === 'Pending')
    .map((c) => c.metadata?.name ?? '')
    .sort();
}

export function pendingAfterCopyMessage(names: string[]): string {
  return `Forklift reported the disks copied, but the transfer claim${names.length === 1 ? '' : 's'} ${names.join(', ')} ${names.length === 1 ? 'is' : 'are'} still Pending: nothing was copied (on a WaitForFirstConsumer storage class CDI leaves the volume PendingPopulation, which Forklift counts as done). Create a new task with a storage class that binds Immediate`;
}
