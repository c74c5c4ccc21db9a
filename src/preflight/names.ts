// Output names. Cozystack's aggregated API stores every VMDisk/VMInstance as a HelmRelease named
// `<prefix><name>`, and Helm release names are limited to 53 characters; the API server accepts longer
// names and the release then fails to install, long after the transfer (docs/cozystack-contract.md).
import { createHash } from 'node:crypto';
import { VMDISK_NAME_MAX, VMINSTANCE_NAME_MAX, vmDiskName } from '../api/labels.ts';

export { VMDISK_NAME_MAX, VMINSTANCE_NAME_MAX };

/** DNS-1035 label: the aggregated API's name rule (must start with a letter), at most 63 characters. */
const DNS1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_MAX = 63;

export function isDNS1035Label(s: string): boolean {
  return typeof s === 'string' && s.length <= DNS1035_MAX && DNS1035.test(s);
}

/** Longest VM name for which every `<name>-disk-<i>` (i = 0 … diskCount-1) fits in VMDISK_NAME_MAX. */
export function maxVMNameLength(diskCount: number): number {
  const lastIndex = Math.max(0, Math.floor(diskCount) - 1);
  return Math.min(VMINSTANCE_NAME_MAX, VMDISK_NAME_MAX - vmDiskName('', lastIndex).length);
}

/**
 * The source VM name sanitised to a DNS-1035 label short enough for the VMInstance and every VMDisk.
 * When it has to be shortened, a 5-hex-digit hash of the original name is appended so two long names
 * sharing a prefix do not collide on the same output (which would fail the second VM with OutputExists).
 */
export function defaultVMName(sourceVMName: string, diskCount: number): string {
  const max = maxVMNameLength(diskCount);
  let s = String(sourceVMName ?? '')
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (!s) s = 'vm';
  if (!/^[a-z]/.test(s)) s = `vm-${s}`;
  if (s.length > max) {
    const hash = createHash('sha256').update(String(sourceVMName)).digest('hex').slice(0, 5);
    s = `${s.slice(0, max - hash.length - 1).replace(/-+$/, '')}-${hash}`;
  }
  return s;
}

/** [] when the names are usable; otherwise one message per problem, naming the object, its length and the limit. */
export function outputNameProblems(vmName: string, diskCount: number): string[] {
  const problems: string[] = [];
  if (!isDNS1035Label(vmName)) {
    problems.push(
      `VMInstance name "${vmName}" is not a DNS-1035 label (lower-case letters, digits and '-', starting with a letter and ending with a letter or digit, at most ${DNS1035_MAX} characters)`,
    );
  }
  if (vmName.length > VMINSTANCE_NAME_MAX) {
    problems.push(
      `VMInstance name "${vmName}" is ${vmName.length} characters; the limit is ${VMINSTANCE_NAME_MAX} (Helm release names are limited to 53, minus the "vm-instance-" prefix)`,
    );
  }
  const n = Math.max(0, Math.floor(diskCount));
  if (n > 0) {
    // The longest disk name is the one with the largest index.
    const longest = vmDiskName(vmName, n - 1);
    if (longest.length > VMDISK_NAME_MAX) {
      problems.push(
        `VMDisk name "${longest}" is ${longest.length} characters; the limit is ${VMDISK_NAME_MAX} (Helm release names are limited to 53, minus the "vm-disk-" prefix); with ${n} disk${n === 1 ? '' : 's'} the VM name may have at most ${maxVMNameLength(n)} characters`,
      );
    }
  }
  return problems;
}
