// Forklift's inventory concerns, computed from a VM fixture as Forklift's policy agent computes them
// from the inventory VM: one function per policy of kubev2v/forklift@v2.11.5:validation/policies/io/konveyor/forklift/vmware/
// (file named beside each), with the policy's id, category, label and assessment verbatim. Policies whose
// input the fixture does not model (DRS/DPM cluster flags, affinities, hot-plug, guest filesystems,
// snapshots) raise nothing, as they do on a VM without those settings.
import type { VMFixture } from './world.ts';

export interface Concern {
  id: string;
  category: 'Critical' | 'Warning' | 'Information';
  label: string;
  assessment: string;
}

/** The controller key of the sim's SCSI controller (vSphere numbers the first SCSI controller 1000). */
export const SCSI_CONTROLLER_KEY = 1000;

const SUPPORTED_OS = /.*(rhel7guest|rhel7_64guest|rhel8guest|rhel8_64guest|rhel9guest|rhel9_64guest|rhel10guest|rhel10_64guest|windows10.*guest|windows11.*guest|windows2016.*guest|windows2019.*guest|windows2022.*guest|windows2025.*guest).*/;

export function forkliftConcerns(vm: VMFixture): Concern[] {
  const out: Concern[] = [];
  // changed_block_tracking.rego
  if (!vm.changeTrackingEnabled) {
    out.push({ id: 'vmware.changed_block_tracking.disabled', category: 'Warning', label: 'Changed Block Tracking (CBT) not enabled', assessment: 'For VM warm migration, Changed Block Tracking (CBT) must be enabled in VMware.' });
  }
  // changed_block_tracking_per_disk.rego: deviceKey = <bus><controllerKey - (controllerKey/100)*100>:<unitNumber>
  vm.disks.forEach((d, unit) => {
    if (d.changeTrackingEnabled) return;
    out.push({
      id: 'vmware.changed_block_tracking.disk.disabled',
      category: 'Warning',
      label: `Disk - scsi0:${unit} does not have CBT enabled`,
      assessment: 'Changed Block Tracking (CBT) has not been enabled for this device. This feature is a prerequisite for VM warm migration.',
    });
  });
  // datastore.rego
  if (vm.disks.some((d) => !d.datastore)) {
    out.push({ id: 'vmware.datastore.missing', category: 'Critical', label: 'Disk is not located on a datastore', assessment: 'The VM is configured with a disk that is not located on a datastore. The VM cannot be migrated.' });
  }
  // disk_mode.rego
  if (vm.disks.some((d) => d.mode === 'independent_persistent' || d.mode === 'independent_nonpersistent')) {
    out.push({
      id: 'vmware.disk_mode.independent',
      category: 'Critical',
      label: 'Independent disk detected',
      assessment: "Independent disks cannot be transferred using recent versions of VDDK. The VM cannot be migrated unless disks are changed to 'Dependent' mode in VMware.",
    });
  }
  // disk_size.rego
  for (const d of vm.disks.filter((x) => x.capacity <= 0)) {
    out.push({
      id: 'vmware.disk.capacity.invalid',
      category: 'Critical',
      label: `Disk '${d.file}' has an invalid capacity of ${d.capacity} bytes`,
      assessment: `Disk '${d.file}' has a capacity of ${d.capacity} bytes, which is not allowed. Capacity must be greater than zero.`,
    });
  }
  // hostname.rego
  if (vm.hostName === '') out.push({ id: 'vmware.hostname.empty', category: 'Warning', label: 'Empty Host Name', assessment: "The 'hostname' field is missing or empty. The hostname might be renamed during migration." });
  if (vm.hostName === 'localhost.localdomain') {
    out.push({ id: 'vmware.hostname.default', category: 'Warning', label: 'Default Host Name', assessment: "The 'hostname' is set to 'localhost.localdomain', which is a default value. The hostname might be renamed during migration." });
  }
  // ip_state.rego
  if (vm.guestIPs.length === 0) {
    out.push({ id: 'vmware.vm_missing_ip.detected', category: 'Warning', label: 'VM is missing IP addresses', assessment: 'Static IP preservation requires the VM to be powered on and running VMware tools.' });
  }
  // name.rego
  if (!(/^(([A-Za-z0-9][-A-Za-z0-9.]*)?[A-Za-z0-9])?$/.test(vm.name) && vm.name.length < 64)) {
    out.push({
      id: 'vmware.vm.name.invalid',
      category: 'Warning',
      label: 'Invalid VM Name',
      assessment:
        'The VM name does not comply with the DNS subdomain name format. Edit the name or it will be renamed automatically during the migration to meet RFC 1123. The VM name must be a maximum of 63 characters containing lowercase letters (a-z), numbers (0-9), periods (.), and hyphens (-). The first and last character must be a letter or number. The name cannot contain uppercase letters, spaces or special characters.',
    });
  }
  // passthrough_device.rego
  if (vm.devices.includes('VirtualPCIPassthrough')) {
    out.push({
      id: 'vmware.passthrough_device.detected',
      category: 'Critical',
      label: 'Passthrough device detected',
      assessment: 'SCSI or PCI passthrough devices are not currently supported by Migration Toolkit for Virtualization. The VM cannot be migrated unless the passthrough device is removed.',
    });
  }
  // rdm_disk.rego
  if (vm.disks.some((d) => d.rdm)) {
    out.push({
      id: 'vmware.disk.rdm.detected',
      category: 'Critical',
      label: 'Raw Device Mapped disk detected',
      assessment: 'RDM disks are not currently supported by Migration Toolkit for Virtualization. The VM cannot be migrated unless the RDM disks are removed. You can reattach them to the VM after migration.',
    });
  }
  // sriov_device.rego
  if (vm.devices.includes('VirtualSriovEthernetCard')) {
    out.push({
      id: 'vmware.device.sriov.detected',
      category: 'Warning',
      label: 'SR-IOV passthrough adapter configuration detected',
      assessment: 'SR-IOV passthrough adapter configuration is not currently supported by Migration Toolkit for Virtualization. Administrators can configure this after migration.',
    });
  }
  // tpm_enabled.rego
  if (vm.tpmEnabled) out.push({ id: 'vmware.tpm.detected', category: 'Warning', label: 'TPM detected', assessment: 'The VM is configured with a TPM device. TPM data will not be transferred during the migration.' });
  // usb_controller.rego
  if (vm.devices.includes('VirtualUSBController')) {
    out.push({
      id: 'vmware.usb_controller.detected',
      category: 'Warning',
      label: 'USB controller detected',
      assessment:
        'USB controllers are not currently supported by Migration Toolkit for Virtualization. The VM can be migrated but the devices attached to the USB controller will not be migrated. Administrators can configure this after migration.',
    });
  }
  // vm_os.rego (the guest id; the sim reports no guest name from Tools)
  if (!SUPPORTED_OS.test(vm.guestId.toLowerCase())) {
    out.push({ id: 'vmware.os.unsupported', category: 'Warning', label: 'Unsupported operating system detected', assessment: 'The guest operating system is not currently supported by the Migration Toolkit for Virtualization' });
  }
  return out;
}
