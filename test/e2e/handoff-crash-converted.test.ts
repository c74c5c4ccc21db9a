// The crash-safety proof of the copy-free handoff on the guest-conversion path (the proof and its checks:
// handoff-crash-suite.ts): a converted two-disk VM — its volumes filled by virt-v2v in Forklift's
// conversion pod, no CDI import — ends with virtio buses and survives the controller being killed after
// every handoff step.
import { vcenter } from '../sim/index.ts';
import { handoffCrashSuite } from './handoff-crash-suite.ts';

const URL_VC = 'https://vcenter-crash-conv.example.com/sdk';

handoffCrashSuite({
  world: vcenter({
    url: URL_VC,
    hosts: [{ id: 'host-1', address: '192.0.2.32' }],
    vms: [{ id: 'vm-8', name: 'convert01', firmware: 'bios', disks: [{ capacityGiB: 2 }, { capacityGiB: 1 }] }],
  }),
  url: URL_VC,
  vmId: 'vm-8',
  className: 'handoff-crash-conv',
  converted: true,
  firmware: { bootloader: 'bios' },
});
