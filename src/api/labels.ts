// The one place that defines every label, annotation, finalizer and name this project stamps.
import { GROUP } from './types.ts';

export const FINALIZER = `${GROUP}/finalizer`;
/**
 * On each target claim the handoff creates, until the VM is complete: a claim deleted meanwhile (by a
 * tenant, or by the garbage collector after its DataVolume or VMDisk went) stays Terminating and its
 * volume Bound, so the handoff puts the volume back on Retain before the PV controller can release it
 * under Delete.
 */
export const CLAIM_FINALIZER = `${GROUP}/handoff-custody`;
/**
 * On a VMImportTask ("true"): the volumes it holds for failed VMs are kept on Retain when it is deleted,
 * for an admin to recover; otherwise deleting the task releases them under their class's reclaim policy.
 */
export const ANNOTATION_KEEP_VOLUMES = `${GROUP}/keep-volumes`;

// Cozystack's own controller for these kinds (cozystack/cozystack@4dc7d04ca:
// api/migration/v1alpha1/vmimporttask_types.go, cmd/migration-controller/main.go). A task it served
// carries its finalizer, which nothing removes once that controller is gone: this controller, taking
// the task over, does that controller's cleanup (the transfer DataVolumes of its Plans, which carry
// these labels and an owner reference to the task) and releases it. Its leader-election Lease is
// named after the group; the chart refuses to install while that Lease is held.
export const UPSTREAM_TASK_FINALIZER = `${GROUP}/cleanup-transfer-volumes`;
export const UPSTREAM_LABEL_TASK_NAME = `${GROUP}/owned-by.VMImportTaskName`;
export const UPSTREAM_LABEL_TASK_NAMESPACE = `${GROUP}/owned-by.VMImportTaskNamespace`;

/** Marks everything we create. */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY_VALUE = 'migration-controller';

/** Cozystack's marker for the projected credentials Secret; a same-named Secret without it is foreign. */
export const LABEL_COZY_MANAGED_BY = 'apps.cozystack.io/managed-by';
export const COZY_MANAGED_BY_VALUE = 'cozystack-migration';

export const LABEL_SOURCE = `${GROUP}/source`;
export const LABEL_SOURCE_UID = `${GROUP}/source-uid`;
export const LABEL_TASK = `${GROUP}/task`;
export const LABEL_TASK_UID = `${GROUP}/task-uid`;
/** Source VM id (vm-N) an output was imported from. */
export const LABEL_VM_ID = `${GROUP}/vm-id`;
/** Disk index in source order. */
export const LABEL_DISK_INDEX = `${GROUP}/disk-index`;
export const LABEL_HOST_ID = `${GROUP}/host-id`;

/**
 * On a task made by `kubectl vmimport retry`: the name of the task whose failed VMs it retries (the same
 * namespace). Informational: the controller does not act on it.
 */
export const ANNOTATION_RETRY_OF = `${GROUP}/retry-of`;
/** Annotation on the inventory ConfigMap when the VM list was capped. */
export const ANNOTATION_INVENTORY_TRUNCATED = `${GROUP}/inventory-truncated`;

// Forklift's Secret webhooks only act on Secrets with these labels (docs/forklift-contract.md).
export const FORKLIFT_LABEL_RESOURCE_TYPE = 'createdForResourceType';
export const FORKLIFT_LABEL_PROVIDER_TYPE = 'createdForProviderType';
/**
 * On a Host Secret: the ESXi host's inventory id. Forklift's Secret webhook refuses a Secret labelled
 * `createdForResourceType: hosts` without it, and looks the host up in the inventory by it for its
 * connection test (kubev2v/forklift@v2.11.5:pkg/forklift-api/webhooks/validating-webhook/admitters/secret-admitter.go).
 */
export const FORKLIFT_LABEL_RESOURCE = 'createdForResource';

// CDI adoption (docs/cozystack-contract.md, handoff step 4).
export const CDI_POPULATED_FOR = 'cdi.kubevirt.io/storage.populatedFor';
export const CDI_ALLOW_CLAIM_ADOPTION = 'cdi.kubevirt.io/allowClaimAdoption';

// Names. Kubernetes object names in a namespace are limited to 253 (most kinds) or 63 (labels and
// DNS-1123 labels); we keep every child name within 63 so it is also a valid label value.
export const MAX_CHILD_NAME = 63;

/** On a projected Secret (in the controller's namespace): the namespace of the source it serves. */
export const LABEL_SOURCE_NAMESPACE = `${GROUP}/source-namespace`;

export function inventoryConfigMapName(source: string): string {
  return `vmimport-inventory-${source}`;
}

/** Aggregated-API prefixes: each VMDisk/VMInstance is a HelmRelease named <prefix><name>. */
export const VMDISK_RELEASE_PREFIX = 'vm-disk-';
export const VMINSTANCE_RELEASE_PREFIX = 'vm-instance-';
/** Helm release names are limited to 53 characters. */
export const HELM_RELEASE_MAX = 53;
export const VMDISK_NAME_MAX = HELM_RELEASE_MAX - VMDISK_RELEASE_PREFIX.length; // 45
export const VMINSTANCE_NAME_MAX = HELM_RELEASE_MAX - VMINSTANCE_RELEASE_PREFIX.length; // 41

export function vmDiskName(vmName: string, index: number): string {
  return `${vmName}-disk-${index}`;
}

/** The claim and DataVolume a VMDisk's chart expects. */
export function vmDiskClaimName(diskName: string): string {
  return `${VMDISK_RELEASE_PREFIX}${diskName}`;
}

// ---------------------------------------------------------------------------------------------------
// The copy-free handoff (src/controllers/handoff). Added by the handoff work; additive only.
// ---------------------------------------------------------------------------------------------------

/**
 * On the PersistentVolume: the reclaim policy it had before the handoff set Retain. Written once, by the
 * first handoff step, so a human (or a resumed controller) can always tell what the volume was.
 */
export const ANNOTATION_ORIGINAL_RECLAIM_POLICY = `${GROUP}/original-reclaim-policy`;
/**
 * On the PersistentVolume: `<namespace>/<name>` of the claim Forklift filled. With the task-uid, vm-id and
 * disk-index labels it makes the volume self-describing: a lost status write cannot lose which volume
 * is disk i once the transfer claim is deleted.
 */
export const ANNOTATION_TRANSFER_CLAIM = `${GROUP}/transfer-claim`;
/** On the PersistentVolume: `settled` once its reclaim policy went back to its class's (handoff done). */
export const ANNOTATION_HANDOFF = `${GROUP}/handoff`;
export const HANDOFF_SETTLED = 'settled';
/**
 * On the target claim: written after the volume's claimRef names the claim and the PV controller has
 * marked the volume Bound. The write is the claim event that makes the PV binder finish the bind at once;
 * without it the claim stays Pending until the binder's periodic resync (15 s by default).
 */
export const ANNOTATION_BIND_REQUESTED = `${GROUP}/bind-requested`;

// Helm ownership metadata the VMDisk chart expects on a DataVolume it adopts (docs/cozystack-contract.md).
export const LABEL_HELM_INSTANCE = 'app.kubernetes.io/instance';
export const HELM_MANAGED_BY_VALUE = 'Helm';
export const ANNOTATION_HELM_RELEASE_NAME = 'meta.helm.sh/release-name';
export const ANNOTATION_HELM_RELEASE_NAMESPACE = 'meta.helm.sh/release-namespace';
export const ANNOTATION_VMDISK_OPTICAL = 'vm-disk.cozystack.io/optical';

/** Cozystack's aggregated API returns user labels of VMDisk/VMInstance with this prefix. */
export const COZY_USER_LABEL_PREFIX = 'apps.cozystack.io-';

/** Labels Forklift puts on what a migration leaves behind (docs/forklift-contract.md). */
export const FORKLIFT_LABEL_VM_ID = 'vmID';
export const FORKLIFT_LABEL_PLAN = 'plan';
export const FORKLIFT_LABEL_MIGRATION = 'migration';
