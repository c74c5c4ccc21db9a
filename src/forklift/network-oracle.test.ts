// Upstream's own table for NIC duplicates, carried as facts (inputs and expected verdicts), run against our
// preflight checks: kubev2v/forklift@v2.11.5:pkg/controller/plan/adapter/base/network_test.go
// (TestValidateNetworkDuplicates_*), which pins ValidateNetworkDuplicates — the check behind Forklift's
// VMMultiplePodNetworkMappings and VMDuplicateNADMappings. Our mapping is the task's spec.networks (every
// network a VM uses is mapped: an unmapped one goes to the pod network), so upstream's "unmapped NIC
// ignored" case has no counterpart here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TaskNetworkMapping, VMImportTask } from '../api/types.ts';
import { multusDuplicateProblem, podNetworkProblem } from './maps.ts';

interface Case {
  upstream: string;
  networks: TaskNetworkMapping[];
  nics: string[];
  nadDup: boolean;
  podDup: boolean;
}

const CASES: Case[] = [
  { upstream: 'SinglePod', networks: [], nics: ['net-1'], nadDup: false, podDup: false },
  { upstream: 'DuplicatePod', networks: [{ source: 'net-2', type: 'pod' }], nics: ['net-1', 'net-2'], nadDup: false, podDup: true },
  { upstream: 'DuplicateNAD_ByID', networks: [{ source: 'net-1', type: 'multus', name: 'ns/nad-a' }], nics: ['net-1', 'net-1'], nadDup: true, podDup: false },
  { upstream: 'DuplicateNAD_ByNameNamespace', networks: [{ source: 'net-1', type: 'multus', name: 'ns/nad-a' }, { source: 'net-2', type: 'multus', name: 'ns/nad-a' }], nics: ['net-1', 'net-2'], nadDup: true, podDup: false },
  { upstream: 'DistinctNADs', networks: [{ source: 'net-1', type: 'multus', name: 'ns/nad-a' }, { source: 'net-2', type: 'multus', name: 'ns/nad-b' }], nics: ['net-1', 'net-2'], nadDup: false, podDup: false },
  { upstream: 'NoNICs', networks: [], nics: [], nadDup: false, podDup: false },
];

const task = (networks: TaskNetworkMapping[]): VMImportTask => ({
  apiVersion: 'forklift.cozystack.io/v1alpha1',
  kind: 'VMImportTask',
  metadata: { name: 't', namespace: 'ns', uid: 'u' },
  spec: { sourceRef: { name: 'vc' }, vms: [{ id: 'vm-1' }], networks },
});

for (const c of CASES) {
  test(`upstream ValidateNetworkDuplicates ${c.upstream}: a NAD duplicate ${c.nadDup ? 'is' : 'is not'} refused, a pod duplicate ${c.podDup ? 'is' : 'is not'}`, () => {
    const vm = { id: 'vm-1', nics: c.nics.map((id) => ({ network: { id } })), networks: [...new Set(c.nics)].map((id) => ({ id })) };
    const nets = [{ id: 'net-1', name: 'one' }, { id: 'net-2', name: 'two' }];
    assert.equal(multusDuplicateProblem(task(c.networks), vm, nets) !== undefined, c.nadDup);
    assert.equal(podNetworkProblem(task(c.networks), vm, nets) !== undefined, c.podDup);
  });
}

test('the Multus duplicate names the attachment and the NICs on it, and Forklift\'s condition', () => {
  const vm = { id: 'vm-1', nics: [{ network: { id: 'net-1' } }, { network: { id: 'net-2' } }] };
  const p = multusDuplicateProblem(task([{ source: 'net-1', type: 'multus', name: 'lan' }, { source: 'two', type: 'multus', name: 'lan' }]), vm, [{ id: 'net-1', name: 'one' }, { id: 'net-2', name: 'two' }]);
  assert.match(p ?? '', /ns\/lan: one \(net-1\), two \(net-2\).*VMDuplicateNADMappings/);
});
