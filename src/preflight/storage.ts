// Storage-class preflight: the class a task names (or the cluster default) must exist and bind
// Immediate. On a WaitForFirstConsumer class, CDI with HonorWaitForFirstConsumer (Cozystack enables it)
// leaves each transfer DataVolume in PendingPopulation, and Forklift counts PendingPopulation as copied for a
// vSphere source (kubev2v/forklift@v2.11.5 and @v2.12.5:pkg/controller/plan/migration.go updateCopyProgress;
// the upstream fix, forklift#4286, is not merged): the copy step reads Completed with nothing copied, the VM
// is built on empty claims that never bind, and the handoff would wait for them for ever. So the class is
// refused at preflight and checked again right before each Plan is created (recheckStorageClass).

export interface StorageClassLike {
  metadata: { name?: string; annotations?: Record<string, string> };
  provisioner?: string;
  volumeBindingMode?: string;
  reclaimPolicy?: string;
}

export type StorageCheck =
  | { ok: true; className: string; reclaimPolicy: 'Delete' | 'Retain'; isDefault: boolean }
  | { ok: false; reason: 'StorageClassNotFound' | 'StorageClassWaitForFirstConsumer' | 'NoDefaultStorageClass'; message: string };

export const DEFAULT_CLASS_ANNOTATION = 'storageclass.kubernetes.io/is-default-class';
/** Still honoured by the PV controller's admission plugin; clusters upgraded from old releases carry it. */
export const DEFAULT_CLASS_ANNOTATION_BETA = 'storageclass.beta.kubernetes.io/is-default-class';

export function isDefaultClass(sc: StorageClassLike): boolean {
  const a = sc.metadata.annotations ?? {};
  return a[DEFAULT_CLASS_ANNOTATION] === 'true' || a[DEFAULT_CLASS_ANNOTATION_BETA] === 'true';
}

/** Binding mode as the API server defaults it (an absent field means Immediate). */
export function bindingMode(sc: StorageClassLike): string {
  return sc.volumeBindingMode || 'Immediate';
}

/**
 * The cluster default class. When several are marked default, the DefaultStorageClass admission plugin
 * picks the newest; we cannot see creation order in StorageClassLike, so pick deterministically (by
 * name) — the check is the same either way unless the defaults disagree on binding mode.
 */
export function defaultStorageClass(classes: StorageClassLike[]): StorageClassLike | undefined {
  const defaults = classes.filter(isDefaultClass);
  if (defaults.length === 0) return undefined;
  return [...defaults].sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''))[0];
}

/** Names of the classes that bind Immediate, sorted (for messages). */
export function immediateClassNames(classes: StorageClassLike[]): string[] {
  return classes
    .filter((c) => bindingMode(c) === 'Immediate' && c.metadata.name)
    .map((c) => c.metadata.name!)
    .sort();
}

function available(classes: StorageClassLike[]): string {
  const names = immediateClassNames(classes);
  return names.length ? `storage classes that bind Immediate: ${names.join(', ')}` : 'no storage class in this cluster binds Immediate; ask the cluster administrator for one';
}

export function checkStorageClass(requested: string | undefined, classes: StorageClassLike[]): StorageCheck {
  let sc: StorageClassLike | undefined;
  let isDefault = false;
  if (requested) {
    sc = classes.find((c) => c.metadata.name === requested);
    if (!sc) {
      return { ok: false, reason: 'StorageClassNotFound', message: `storage class "${requested}" does not exist; ${available(classes)}` };
    }
    isDefault = isDefaultClass(sc);
  } else {
    sc = defaultStorageClass(classes);
    if (!sc) {
      return { ok: false, reason: 'NoDefaultStorageClass', message: `spec.storageClass is empty and the cluster has no default storage class; name one in spec.storageClass (${available(classes)})` };
    }
    isDefault = true;
  }
  const name = sc.metadata.name ?? '';
  const mode = bindingMode(sc);
  if (mode !== 'Immediate') {
    const which = requested ? `storage class "${name}"` : `the cluster default storage class "${name}"`;
    return {
      ok: false,
      reason: 'StorageClassWaitForFirstConsumer',
      message: `${which} has volumeBindingMode ${mode}; the import needs a class that binds Immediate, or its transfer volumes never bind (${available(classes)})`,
    };
  }
  return { ok: true, className: name, reclaimPolicy: sc.reclaimPolicy === 'Retain' ? 'Retain' : 'Delete', isDefault };
}

/**
 * The class frozen at preflight, read again right before a Plan is created (its binding mode is immutable,
 * but it may have been deleted and created again under the same name). Undefined when it still binds
 * Immediate. Pure.
 */
export function recheckStorageClass(name: string, sc: StorageClassLike | undefined): { reason: 'StorageClassNotFound' | 'StorageClassWaitForFirstConsumer'; message: string } | undefined {
  if (!sc) return { reason: 'StorageClassNotFound', message: `storage class "${name}", chosen at preflight, no longer exists; create a new task with an existing class that binds Immediate` };
  const mode = bindingMode(sc);
  if (mode === 'Immediate') return undefined;
  return {
    reason: 'StorageClassWaitForFirstConsumer',
    message: `storage class "${name}" now has volumeBindingMode ${mode} (it was replaced after preflight): on it Forklift would count the disks as copied with nothing copied (CDI leaves them PendingPopulation); create a new task with a class that binds Immediate`,
  };
}
