// Deterministic names of the Forklift scaffolding a task builds. Every name stays within 63 characters
// (MAX_CHILD_NAME) so it is also a valid label value and DNS-1123 label: a name that only fitted the
// 253-character object limit would break the label selectors that map a Plan back to its task.
import { createHash } from 'node:crypto';
import { MAX_CHILD_NAME } from '../api/labels.ts';

/** Characters of the hash suffix; 8 hex = 32 bits keeps two long task names from colliding in practice. */
const HASH_LEN = 8;

export function shortHash(s: string, len = HASH_LEN): string {
  return createHash('sha256').update(s).digest('hex').slice(0, len);
}

/** Lower-cases and replaces everything outside [a-z0-9-] with '-', trimming dashes at both ends. */
export function sanitizeLabel(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/**
 * Joins `parts` with '-' and sanitises. When the result exceeds `max`, it is truncated and suffixed with
 * `-<hash of the full untruncated name>`, so distinct long inputs stay distinct and the same input always
 * yields the same name (a controller restart must find the Plan it created before).
 */
export function boundedName(parts: string[], max = MAX_CHILD_NAME): string {
  const full = sanitizeLabel(parts.filter((p) => p !== '').join('-')) || 'x';
  if (full.length <= max) return full;
  const suffix = shortHash(parts.join('/'));
  const head = full.slice(0, max - suffix.length - 1).replace(/-+$/g, '');
  return `${head}-${suffix}`;
}

/**
 * The task's UID takes part in every Plan/Migration name: a task deleted and re-created under the same
 * name must never meet the old Plan (the retry trap: a Plan with history reports Succeeded and creates
 * nothing, docs/forklift-contract.md).
 */
function uidTag(taskUID: string): string {
  return shortHash(taskUID, 5);
}

export function networkMapName(taskName: string, taskUID: string): string {
  return boundedName(['vmimport', taskName, uidTag(taskUID), 'net']);
}

export function storageMapName(taskName: string, taskUID: string): string {
  return boundedName(['vmimport', taskName, uidTag(taskUID), 'storage']);
}

export function planName(taskName: string, taskUID: string, vmId: string): string {
  return boundedName(['vmimport', taskName, uidTag(taskUID), vmId]);
}

/** Migration of a VM's Plan (a different kind, so it may share the Plan's name). */
export function migrationName(taskName: string, taskUID: string, vmId: string): string {
  return planName(taskName, taskUID, vmId);
}

/**
 * The name of a projected Secret (the controller's namespace holds every tenant's): derived from the
 * source's UID, which the API server assigns and no tenant chooses, so no source of any tenant can be
 * given a name that maps onto another's Secret. A host's Secret adds 64 bits of the host id's SHA-256:
 * host ids are chosen within one source, so only that source's own hosts could meet. At most 62
 * characters (9 + 36 + 1 + 16), a valid DNS-1123 label.
 */
export function projectedSecretName(sourceUID: string, hostId?: string): string {
  const uid = sanitizeLabel(sourceUID) || 'x';
  return hostId === undefined ? `vmimport-${uid}` : `vmimport-${uid}-${shortHash(hostId, 16)}`;
}
