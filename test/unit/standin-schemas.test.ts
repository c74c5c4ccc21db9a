// The stand-in CRDs of test/crds are the upstream schemas of the kinds we do not own (Forklift, CDI, KubeVirt,
// Cozystack's apps), written strict: every object the controller renders must fit them with no field the
// upstream kind lacks. The API server prunes such a field silently (and Cozystack's charts ignore it), so
// this is the test that makes it loud. Also: the schemas stay structural and never preserve unknown fields.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv, type ValidateFunction } from 'ajv';
import type { VMImportSource, VMImportTask } from '../../src/api/types.ts';
import { readScaffoldingShape } from '../../src/cozystack/kubevirt.ts';
import { renderHandoffDataVolume, renderVMDisk, renderVMInstance, volumeFacts, type OutputMarkers } from '../../src/cozystack/render.ts';
import { renderNetworkMap, renderStorageMap } from '../../src/forklift/maps.ts';
import { renderMigration } from '../../src/forklift/migration.ts';
import { renderPlan } from '../../src/forklift/plan.ts';
import { renderDestinationProvider, renderHost, renderSourceProvider } from '../../src/forklift/provider.ts';
import type { KubeObject } from '../../src/runtime/kube.ts';
import { standInCRDs } from '../sim/index.ts';

type Schema = Record<string, unknown> & { type?: string; properties?: Record<string, Schema>; items?: Schema; additionalProperties?: Schema | boolean };

/**
 * The CRD's openAPIV3Schema as a JSON Schema that refuses what the API server would prune: an object node
 * lists its fields (or is a map via additionalProperties), and nothing else is allowed. `metadata` at the
 * root is ObjectMeta, which the API server validates itself.
 */
function strict(s: Schema, root = true): Schema {
  const out: Schema = {};
  for (const [k, v] of Object.entries(s)) {
    if (k.startsWith('x-kubernetes-') || k === 'description') continue;
    if (k === 'properties') {
      out.properties = Object.fromEntries(Object.entries(v as Record<string, Schema>).map(([n, p]) => [n, root && n === 'metadata' ? { type: 'object' } : strict(p, false)]));
    } else if (k === 'items' || (k === 'additionalProperties' && typeof v === 'object')) {
      out[k] = strict(v as Schema, false);
    } else if (k === 'anyOf') {
      out.anyOf = (v as Schema[]).map((x) => strict(x, false));
    } else if (k !== 'default' && k !== 'nullable' && k !== 'format') {
      out[k] = v;
    }
  }
  if (s.type === 'object' && !s.additionalProperties && !s['x-kubernetes-preserve-unknown-fields']) out.additionalProperties = false;
  return out;
}

const ajv = new Ajv({ allErrors: true, strict: false });
const validators = new Map<string, ValidateFunction>();
const crdsByKind = new Map<string, Schema>();
for (const crd of standInCRDs()) {
  const v = (crd.spec as { versions: Array<{ name: string; schema: { openAPIV3Schema: Schema } }> }).versions[0]!;
  const kind = (crd.spec as { names: { kind: string } }).names.kind;
  crdsByKind.set(kind, v.schema.openAPIV3Schema);
  validators.set(kind, ajv.compile(strict(v.schema.openAPIV3Schema)));
}

function assertFits(o: KubeObject): void {
  const v = validators.get(o.kind ?? '');
  assert.ok(v, `a stand-in schema exists for ${o.kind}`);
  const ok = v(o);
  assert.ok(ok, `${o.kind} ${o.metadata?.name}: ${ajv.errorsText(v.errors, { separator: '\n  ' })}`);
}

const source: VMImportSource = {
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportSource',
  metadata: { name: 'vcenter-prod', namespace: 'tenant-a', uid: 'src-uid', generation: 1 },
  spec: {
    type: 'vsphere',
    url: 'https://vc.example.com/sdk',
    credentials: { username: 'mtv@vsphere.local', password: 'pw', caCert: 'PEM' },
    hosts: [{ id: 'host-10', address: '10.31.0.29', credentials: { username: 'root', password: 'pw', insecureSkipVerify: true } }],
  },
};
const task: VMImportTask = {
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportTask',
  metadata: { name: 'import-web', namespace: 'tenant-a', uid: 'task-uid' },
  spec: { sourceRef: { name: 'vcenter-prod' }, vms: [{ id: 'vm-1' }], networks: [{ source: 'network-2', type: 'multus', name: 'lan' }] },
};
const providers = { source: { name: 'vmimport-vcenter-prod', namespace: 'tenant-a' }, destination: { name: 'vmimport-vcenter-prod-destination', namespace: 'tenant-a' } };
const inventoryVM = { id: 'vm-1', nics: [{ network: { id: 'network-1' } }, { network: { id: 'network-2' } }], disks: [{ datastore: { id: 'datastore-1' }, capacity: 2 ** 30 }] };
const M: OutputMarkers = { taskUid: 'task-uid', taskName: 'import-web', vmId: 'vm-1' };
const volume = volumeFacts({ metadata: { name: 'pvc-1' }, spec: { capacity: { storage: '16Gi' }, storageClassName: 'replicated', volumeMode: 'Block', accessModes: ['ReadWriteOnce'] } })!;

test('every Forklift object the controller renders fits the upstream v1beta1 schema, with no field Forklift lacks', () => {
  assertFits(renderSourceProvider(source, 'registry.example.com/vddk:8', 'cozy-migration-controller'));
  assertFits(renderDestinationProvider(source));
  assertFits(renderHost(source, source.spec.hosts![0]!, 'cozy-migration-controller'));
  assertFits(renderNetworkMap({ task, vms: [inventoryVM], networks: [{ id: 'network-1', name: 'VM Network' }, { id: 'network-2', name: 'LAN' }], providers }));
  assertFits(renderStorageMap({ task, vms: [inventoryVM], providers, storageClass: 'replicated' }));
  const plan = renderPlan({ task, vmId: 'vm-1', providers, networkMap: { name: 'nm', namespace: 'tenant-a' }, storageMap: { name: 'sm', namespace: 'tenant-a' } });
  assertFits(plan);
  assertFits(renderMigration(task, 'vm-1', { ...plan, metadata: { ...plan.metadata, uid: 'plan-uid' } }));
});

test('the handoff DataVolume fits CDI v1beta1, and the VMDisk and VMInstance fit the Cozystack charts', () => {
  assertFits(renderHandoffDataVolume({ namespace: 'tenant-a', diskName: 'web-disk-0', diskIndex: 0, volume, markers: M }));
  assertFits(renderVMDisk({ namespace: 'tenant-a', diskName: 'web-disk-0', diskIndex: 0, volume, markers: M }));
  const scaffold: KubeObject = {
    metadata: { name: 'web', namespace: 'tenant-a' },
    spec: {
      template: {
        spec: {
          domain: { cpu: { cores: 2, sockets: 2, threads: 1 }, memory: { guest: '8Gi' }, firmware: { bootloader: { efi: { secureBoot: true } } }, devices: {} },
          networks: [{ name: 'net-0', pod: {} }, { name: 'net-1', multus: { networkName: 'tenant-a/lan' } }],
          volumes: [{ name: 'vol-0', persistentVolumeClaim: { claimName: 'plan-vm-1-abcde' } }],
        },
      },
    },
  };
  assertFits({ apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', ...scaffold });
  for (const vm of [{ id: 'vm-1' }, { id: 'vm-1', instanceType: 'u1.large', instanceProfile: 'windows' }]) {
    const r = renderVMInstance({ namespace: 'tenant-a', name: 'web', vm, shape: readScaffoldingShape(scaffold), diskNames: ['web-disk-0'], markers: M });
    assert.ok(r.ok);
    assertFits(r.object);
  }
});

test('a field the upstream kind does not have is refused (a misspelt Plan field, an unknown DataVolume source)', () => {
  const plan = renderPlan({ task, vmId: 'vm-1', providers, networkMap: { name: 'nm', namespace: 'tenant-a' }, storageMap: { name: 'sm', namespace: 'tenant-a' } });
  assert.throws(() => assertFits({ ...plan, spec: { ...(plan.spec as object), targetPowerstate: 'off' } }), /targetPowerstate|additional/);
  const dv = renderHandoffDataVolume({ namespace: 'tenant-a', diskName: 'd', diskIndex: 0, volume, markers: M });
  assert.throws(() => assertFits({ ...dv, spec: { ...(dv.spec as object), source: { imported: {} } } }), /additional/);
  assert.throws(() => assertFits({ apiVersion: 'forklift.konveyor.io/v1beta1', kind: 'Provider', metadata: { name: 'p' }, spec: { type: 'openshift', url: '' } }), /secret/, 'Provider spec.secret is required upstream');
});

test('the stand-in schemas are structural and never keep unknown fields', () => {
  for (const [kind, s] of crdsByKind) {
    const walk = (n: Schema, path: string): void => {
      assert.notEqual(n['x-kubernetes-preserve-unknown-fields'], true, `${kind} ${path} preserves unknown fields`);
      assert.ok(n.type || n['x-kubernetes-int-or-string'], `${kind} ${path} has a type`);
      for (const [k, p] of Object.entries(n.properties ?? {})) walk(p, `${path}.${k}`);
      if (n.items) walk(n.items, `${path}[]`);
      if (n.additionalProperties && typeof n.additionalProperties === 'object') walk(n.additionalProperties, `${path}{}`);
    };
    walk(s, kind);
  }
});
