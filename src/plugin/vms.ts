// `kubectl vmimport vms` and the name resolution of `create`: over the inventory a source publishes in its
// status (status.inventory, src/forklift/assess.ts inventoryEntry) — what a tenant can read. Forklift's
// inventory Service is not reachable by tenants, and the inventory ConfigMap is not readable on Cozystack
// (its tenant roles grant no ConfigMaps). Pure.
import type { SourceInventoryStatus, SourceInventoryVM, VMImportSource } from '../api/types.ts';
import { formatBytes, renderTable } from './render.ts';

export interface VMFilter {
  /** Inventory folder: the VM's path is this folder or below it. */
  folder?: string;
  /** Substring of the VM's name. */
  name?: string;
  blocked?: boolean;
  ready?: boolean;
}

/** The folder a VM's path is in: `/dc/vm/web/web-01` → `/dc/vm/web`. */
function folderOf(vm: SourceInventoryVM): string {
  const p = vm.path ?? '';
  // Forklift's path ends with the VM's own name (model/vsphere: the VM's path in its folder tree).
  return p.endsWith(`/${vm.name}`) ? p.slice(0, -vm.name.length - 1) : p;
}

export function matches(vm: SourceInventoryVM, f: VMFilter): boolean {
  if (f.folder !== undefined) {
    const want = f.folder.replace(/\/+$/, '');
    const dir = folderOf(vm);
    if (dir !== want && !dir.startsWith(`${want}/`)) return false;
  }
  if (f.name !== undefined && !vm.name.toLowerCase().includes(f.name.toLowerCase())) return false;
  if (f.blocked && vm.verdict !== 'Blocked') return false;
  if (f.ready && vm.verdict !== 'Ready' && vm.verdict !== 'ReadyWithWarnings') return false;
  return true;
}

export function filterVMs(inv: SourceInventoryStatus | undefined, f: VMFilter): SourceInventoryVM[] {
  return (inv?.vms ?? []).filter((vm) => matches(vm, f));
}

function diskSummary(vm: SourceInventoryVM): [string, string] {
  const disks = vm.disks ?? [];
  return [String(disks.length), formatBytes(disks.reduce((s, d) => s + (d.capacity || 0), 0))];
}

/** The table of `vms`: one line per VM (wide: more columns). */
export function vmTable(vms: readonly SourceInventoryVM[], wide: boolean): string[] {
  const header = ['NAME', 'ID', 'POWER', 'OS', 'FIRMWARE', 'DISKS', 'SIZE', 'HOST', 'VERDICT', ...(wide ? ['FOLDER', 'TOOLS', 'CBT', 'NICS', 'CONCERN'] : [])];
  const rows = vms.map((vm) => {
    const [n, size] = diskSummary(vm);
    const base = [vm.name, vm.id, vm.power ?? '', vm.os ?? '', `${vm.firmware ?? ''}${vm.secureBoot ? '+secureboot' : ''}`, n, size, vm.host ?? '', vm.verdict ?? ''];
    if (!wide) return base;
    const concern = (vm.concerns ?? []).find((c) => c.category !== 'Information');
    return [...base, folderOf(vm), vm.tools ?? '', vm.cbt ? 'yes' : 'no', String((vm.nics ?? []).length), concern ? `${concern.category}: ${concern.label}` : ''];
  });
  return renderTable(header, rows);
}

/** What `vms` says below the table when the published list is cut short or empty. */
export function inventoryNotes(src: Pick<VMImportSource, 'metadata' | 'status'>): string[] {
  const inv = src.status?.inventory;
  const name = src.metadata.name ?? '';
  if (!inv) {
    const ready = src.status?.conditions?.find((c) => c.type === 'Ready');
    return [`source ${name} has published no inventory yet${ready ? ` (Ready=${ready.status}, ${ready.reason}: ${ready.message})` : ''}`];
  }
  return inv.truncated ? [`source ${name} lists the first ${inv.listed} of its ${inv.total} VMs (by folder path); narrow with --folder, or give VMs by id`] : [];
}

export type Resolution = { ok: true; id: string; name: string } | { ok: false; message: string };

/** The id (vm-N) form of a vSphere managed-object reference. */
const VM_ID = /^vm-\d{1,12}$/;

/**
 * Resolves one `--vm` argument: an id of the inventory, else the exact name of one VM. A name several VMs
 * share is refused with the candidates. An id the (truncated) list lacks is passed on as written: the
 * admission webhook checks it against the whole inventory.
 */
export function resolveVM(inv: SourceInventoryStatus | undefined, arg: string, source: string): Resolution {
  const vms = inv?.vms ?? [];
  const byId = vms.find((v) => v.id === arg);
  if (byId) return { ok: true, id: byId.id, name: byId.name };
  const named = vms.filter((v) => v.name === arg);
  if (named.length === 1) return { ok: true, id: named[0]!.id, name: named[0]!.name };
  if (named.length > 1) {
    return { ok: false, message: `VM name "${arg}" is ambiguous in source ${source}: ${named.length} VMs carry it; give one by id:\n${named.map((v) => `  ${v.id}  ${v.path}`).join('\n')}` };
  }
  if (VM_ID.test(arg)) return { ok: true, id: arg, name: '' };
  const close = vms.filter((v) => v.name.toLowerCase().includes(arg.toLowerCase())).slice(0, 5);
  const hint = close.length ? `; similar: ${close.map((v) => `${v.name} (${v.id})`).join(', ')}` : '';
  const cut = inv?.truncated ? ` (it lists ${inv.listed} of ${inv.total} VMs: give a VM beyond them by id)` : '';
  return { ok: false, message: `no VM named "${arg}" in source ${source}'s inventory${cut}${hint}` };
}
