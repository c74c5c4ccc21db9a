// The crash-safety proof of the copy-free handoff on the raw-copy path (the proof and its checks:
// handoff-crash-suite.ts): a UEFI, Secure Boot two-disk VM copied by CDI without conversion.
import { vcenter } from '../sim/index.ts';
import { handoffCrashSuite } from './handoff-crash-suite.ts';

const URL_VC = 'https://vcenter-crash.example.com/sdk';

handoffCrashSuite({
  world: vcenter({
    url: URL_VC,
    hosts: [{ id: 'host-1', address: '192.0.2.31' }],
    vms: [{ id: 'vm-7', name: 'crash01', firmware: 'efi', secureBoot: true, disks: [{ capacityGiB: 2 }, { capacityGiB: 1 }] }],
  }),
  url: URL_VC,
  vmId: 'vm-7',
  className: 'handoff-crash',
  converted: false,
  firmware: { bootloader: 'uefi', secureBoot: true },
});
