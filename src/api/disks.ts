// A VM's disks in its task's status, in the two shapes a stored task may hold.
//
// status.vms[].disks is what Cozystack's console reads (cozystack/cozystack PR #3931, its Migration
// pages): the VMDisk names of the VM in source order, each linked to /console/vmdisks/<name>. The
// handoff's per-disk evidence — the volume, the transfer claim, the capacity and the checkpoint reached —
// lives in status.vms[].diskHandoffs.
//
// A task written by an earlier version of this controller holds that evidence as objects in `disks`.
// Every reader goes through `readVMDisks`, which takes either shape: objects in `disks` are evidence,
// strings are names. The next status write carries both fields in the new shape in one request, so the
// evidence is never absent from the stored object: a handoff interrupted under the earlier version
// resumes at its checkpoint.
import type { DiskStatus, VMStatus } from './types.ts';

/** The disk fields of a VM status as stored: `disks` may hold names (this version) or evidence (earlier ones). */
export interface StoredVMDisks {
  phase?: string;
  vmInstance?: string;
  disks?: unknown;
  diskHandoffs?: unknown;
}

export interface VMDisks {
  /** VMDisk names in source order; empty until the handoff names them. */
  names: string[];
  /** The handoff's per-disk evidence, one entry per disk index, in index order. */
  evidence: DiskStatus[];
}

function asEvidence(x: unknown): DiskStatus | undefined {
  if (!x || typeof x !== 'object' || Array.isArray(x)) return undefined;
  const o = x as Record<string, unknown>;
  if (typeof o.index !== 'number' || !Number.isInteger(o.index) || o.index < 0 || typeof o.vmDisk !== 'string') return undefined;
  const out: DiskStatus = { index: o.index, vmDisk: o.vmDisk };
  if (typeof o.volumeName === 'string') out.volumeName = o.volumeName;
  if (typeof o.transferClaim === 'string') out.transferClaim = o.transferClaim;
  if (typeof o.capacityBytes === 'number') out.capacityBytes = o.capacityBytes;
  if (typeof o.handoff === 'string') out.handoff = o.handoff;
  return out;
}

/** The VMDisk names of the evidence, in source order. */
export function diskNames(evidence: readonly DiskStatus[]): string[] {
  return [...evidence].sort((a, b) => a.index - b.index).map((d) => d.vmDisk);
}

/**
 * An earlier version's evidence names the VMDisks once its handoff had begun: the VM reached Creating or
 * Succeeded, its VMInstance is named, or a disk carries what only the handoff writes (a volume, a
 * checkpoint). Before that the entries are the preflight's plan, and no VMDisk of that name exists.
 */
function namedByHandoff(v: StoredVMDisks, evidence: readonly DiskStatus[]): boolean {
  if (v.phase === 'Creating' || v.phase === 'Succeeded' || v.vmInstance) return true;
  return evidence.some((d) => d.handoff !== undefined || d.volumeName !== undefined);
}

/**
 * A VM status's disks, from either shape. Strings in `disks` are names; objects in `disks` are evidence
 * written by an earlier version and win over `diskHandoffs` at the same index (this version never writes
 * objects there, so they are the later record). Entries of neither kind are dropped. Pure.
 */
export function readVMDisks(v: StoredVMDisks): VMDisks {
  const stored = Array.isArray(v.disks) ? (v.disks as unknown[]) : [];
  const byIndex = new Map<number, DiskStatus>();
  for (const x of Array.isArray(v.diskHandoffs) ? (v.diskHandoffs as unknown[]) : []) {
    const d = asEvidence(x);
    if (d) byIndex.set(d.index, d);
  }
  const names: string[] = [];
  let legacy = false;
  for (const x of stored) {
    if (typeof x === 'string') {
      names.push(x);
      continue;
    }
    const d = asEvidence(x);
    if (d) {
      byIndex.set(d.index, d);
      legacy = true;
    }
  }
  const evidence = [...byIndex.values()].sort((a, b) => a.index - b.index);
  if (!names.length && legacy && namedByHandoff(v, evidence)) names.push(...diskNames(evidence));
  return { names, evidence };
}

/** Whether the stored status holds evidence in `disks` (written by an earlier version). Pure. */
export function hasLegacyDisks(v: StoredVMDisks): boolean {
  return Array.isArray(v.disks) && (v.disks as unknown[]).some((x) => typeof x !== 'string');
}

/** `v` with its disk fields set: names in `disks`, evidence in `diskHandoffs`; an empty list is left out. Pure. */
export function withVMDisks<T extends VMStatus>(v: T, d: VMDisks): T {
  const out = { ...v };
  delete out.disks;
  delete out.diskHandoffs;
  if (d.names.length) out.disks = d.names;
  if (d.evidence.length) out.diskHandoffs = d.evidence;
  return out;
}

/** A VM status as this version writes it, from either stored shape. Pure. */
export function normalizeVMDisks<T extends VMStatus>(v: T): T {
  return withVMDisks(v, readVMDisks(v));
}
