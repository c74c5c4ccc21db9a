// Cozystack's platform as the controller reads it: the `vm-instance` ApplicationDefinition, whose values
// schema says what the VMInstance's chart takes (src/cozystack/platform.ts). The simulator serves it as
// the release it plays states it, so a file chooses the platform its VMs are imported onto.
import { HttpError, type Obj, type Res, type Rest } from './rest.ts';

export const APPLICATION_DEFINITION: Res = { group: 'cozystack.io', version: 'v1alpha1', plural: 'applicationdefinitions', kind: 'ApplicationDefinition', namespaced: false };

const quantity = { anyOf: [{ type: 'integer' }, { type: 'string' }], 'x-kubernetes-int-or-string': true };
const named = { type: 'array', default: [], items: { type: 'object', properties: { name: { type: 'string' } } } };

/**
 * The values schema of v1.6.2's vm-instance chart, descriptions and option sources dropped
 * (cozystack/cozystack@v1.6.2:packages/system/vm-instance-rd/cozyrds/vm-instance.yaml,
 * spec.application.openAPISchema): no `firmware`, and `networks[]` items carry a name only.
 */
const V162_PROPERTIES: Record<string, unknown> = {
  external: { type: 'boolean', default: false },
  externalMethod: { type: 'string', default: 'PortList', enum: ['PortList', 'WholeIP'] },
  externalPorts: { type: 'array', default: [22], items: { type: 'integer' } },
  externalAllowICMP: { type: 'boolean', default: true },
  runStrategy: { type: 'string', default: 'Always', enum: ['Always', 'Halted', 'Manual', 'RerunOnFailure', 'Once'] },
  instanceType: { type: 'string', default: 'u1.medium' },
  instanceProfile: { type: 'string', default: 'ubuntu' },
  disks: { type: 'array', default: [], items: { type: 'object', required: ['name'], properties: { bus: { type: 'string' }, name: { type: 'string' } } } },
  networks: named,
  subnets: named,
  gpus: { type: 'array', default: [], items: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } },
  cpuModel: { type: 'string', default: '' },
  resources: { type: 'object', default: {}, properties: { cpu: quantity, memory: quantity, sockets: quantity } },
  sshKeys: { type: 'array', default: [], items: { type: 'string' } },
  cloudInit: { type: 'string', default: '' },
  cloudInitSeed: { type: 'string', default: '' },
};

/**
 * The firmware value of cozystack/cozystack PR #3002 (branch feat/vm-instance-firmware, 68cf49102:
 * packages/apps/vm-instance/values.schema.json), not in a release: `firmware.bootloader`, `secureBoot`,
 * `efiPersistent`. Its networks[] items still carry a name only.
 */
const FIRMWARE_PROPERTY = {
  type: 'object',
  default: {},
  properties: { bootloader: { type: 'string' }, efiPersistent: { type: 'boolean' }, secureBoot: { type: 'boolean' } },
};

/**
 * Which vm-instance chart the platform has: `v1.6.2` (the release: no firmware value, an EFI guest boots
 * with BIOS unless an EFI instance profile stands in) or `firmware-pr3002` (PR #3002's firmware value).
 */
export type VMInstanceChart = 'v1.6.2' | 'firmware-pr3002';

export function vmInstanceSchema(chart: VMInstanceChart): Record<string, unknown> {
  return { title: 'Chart Values', type: 'object', properties: { ...V162_PROPERTIES, ...(chart === 'firmware-pr3002' ? { firmware: FIRMWARE_PROPERTY } : {}) } };
}

export function vmInstanceDefinition(chart: VMInstanceChart): Obj {
  return {
    apiVersion: 'cozystack.io/v1alpha1',
    kind: 'ApplicationDefinition',
    metadata: { name: 'vm-instance' },
    spec: {
      application: { kind: 'VMInstance', singular: 'vminstance', plural: 'vminstances', openAPISchema: JSON.stringify(vmInstanceSchema(chart)) },
      release: { prefix: 'vm-instance-' },
    },
  };
}

/** Creates or replaces the `vm-instance` ApplicationDefinition (cluster-scoped: the file's choice stands until the next file's sim). */
export async function serveVMInstanceDefinition(rest: Rest, chart: VMInstanceChart): Promise<void> {
  const want = vmInstanceDefinition(chart);
  const cur = await rest.get(APPLICATION_DEFINITION, undefined, 'vm-instance');
  if (cur) {
    await rest.replace(APPLICATION_DEFINITION, { ...want, metadata: { ...want.metadata, resourceVersion: cur.metadata.resourceVersion } });
    return;
  }
  await rest.create(APPLICATION_DEFINITION, want).catch((e) => {
    if (!(e instanceof HttpError && e.code === 409)) throw e;
  });
}
