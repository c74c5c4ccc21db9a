// Our kinds' short names, plurals and singulars collide with nothing the projects running beside us on
// a Cozystack cluster define: `kubectl get <name>` must name one kind only (a collision makes kubectl
// pick one of them silently — `vmis` was KubeVirt's VirtualMachineInstance before it was ours).
// The names below are copied from those projects' CRD definitions, file and tag cited per block.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Plural, singular and short names of each upstream kind: [plural, singular, ...shortNames]. */
const UPSTREAM: Record<string, string[][]> = {
  // kubevirt/kubevirt@v1.9.0:pkg/virt-operator/resource/generate/components/crds.go (Names of each
  // New…Crd), with the constants of staging/src/kubevirt.io/api/{instancetype,clone,migrations}/….
  KubeVirt: [
    ['virtualmachineinstances', 'virtualmachineinstance', 'vmi', 'vmis'],
    ['virtualmachines', 'virtualmachine', 'vm', 'vms'],
    ['virtualmachineinstancepresets', 'virtualmachineinstancepreset', 'vmipreset', 'vmipresets'],
    ['virtualmachineinstancereplicasets', 'virtualmachineinstancereplicaset', 'vmirs', 'vmirss'],
    ['virtualmachineinstancemigrations', 'virtualmachineinstancemigration', 'vmim', 'vmims'],
    ['kubevirts', 'kubevirt', 'kv', 'kvs'],
    ['virtualmachinepools', 'virtualmachinepool', 'vmpool', 'vmpools'],
    ['virtualmachinesnapshots', 'virtualmachinesnapshot', 'vmsnapshot', 'vmsnapshots'],
    ['virtualmachinesnapshotcontents', 'virtualmachinesnapshotcontent', 'vmsnapshotcontent', 'vmsnapshotcontents'],
    ['virtualmachinerestores', 'virtualmachinerestore', 'vmrestore', 'vmrestores'],
    ['virtualmachineexports', 'virtualmachineexport', 'vmexport', 'vmexports'],
    ['virtualmachinebackups', 'virtualmachinebackup', 'vmbackup', 'vmbackups'],
    ['virtualmachinebackuptrackers', 'virtualmachinebackuptracker', 'vmbackuptracker', 'vmbackuptrackers'],
    ['virtualmachineinstancetypes', 'virtualmachineinstancetype', 'vminstancetype', 'vminstancetypes', 'vmf', 'vmfs'],
    ['virtualmachineclusterinstancetypes', 'virtualmachineclusterinstancetype', 'vmclusterinstancetype', 'vmclusterinstancetypes', 'vmcf', 'vmcfs'],
    ['virtualmachinepreferences', 'virtualmachinepreference', 'vmpref', 'vmprefs', 'vmp', 'vmps'],
    ['virtualmachineclusterpreferences', 'virtualmachineclusterpreference', 'vmcp', 'vmcps'],
    ['migrationpolicies', 'migrationpolicy'],
    ['virtualmachineclones', 'virtualmachineclone', 'vmclone', 'vmclones'],
    ['plugins', 'plugin'],
  ],
  // kubevirt/containerized-data-importer@v1.64.0:pkg/operator/resources/crds_generated.go, and
  // pkg/apiserver/apiserver.go (the upload API's uploadtokenrequests).
  CDI: [
    ['cdis', 'cdi', 'cdi', 'cdis'],
    ['cdiconfigs', 'cdiconfig'],
    ['dataimportcrons', 'dataimportcron', 'dic', 'dics'],
    ['datasources', 'datasource', 'das'],
    ['datavolumes', 'datavolume', 'dv', 'dvs'],
    ['objecttransfers', 'objecttransfer', 'ot', 'ots'],
    ['openstackvolumepopulators', 'openstackvolumepopulator', 'osvp', 'osvps'],
    ['ovirtvolumepopulators', 'ovirtvolumepopulator', 'ovvp', 'ovvps'],
    ['storageprofiles', 'storageprofile'],
    ['volumeclonesources', 'volumeclonesource'],
    ['volumeimportsources', 'volumeimportsource'],
    ['volumeuploadsources', 'volumeuploadsource'],
    ['uploadtokenrequests', 'uploadtokenrequest', 'utr', 'utrs'],
  ],
  // kubev2v/forklift@v2.12.5:operator/config/crd/bases/forklift.konveyor.io_*.yaml
  Forklift: [
    ['conversions', 'conversion'],
    ['forkliftcontrollers', 'forkliftcontroller'],
    ['hooks', 'hook'],
    ['hosts', 'host'],
    ['hypervproviderservers', 'hypervproviderserver'],
    ['migrations', 'migration'],
    ['networkmaps', 'networkmap'],
    ['openstackvolumepopulators', 'openstackvolumepopulator', 'osvp', 'osvps'],
    ['ovaproviderservers', 'ovaproviderserver'],
    ['ovirtvolumepopulators', 'ovirtvolumepopulator', 'ovvp', 'ovvps'],
    ['plans', 'plan'],
    ['providers', 'provider'],
    ['storagemaps', 'storagemap'],
    ['vspherexcopyvolumepopulators', 'vspherexcopyvolumepopulator', 'vxvp', 'vxvps'],
  ],
  // cozystack/cozystack@v1.6.2: its own CRDs (internal/crdinstall/manifests/cozystack.io_*.yaml,
  // packages/system/{cozystack-controller,backup-controller,backupstrategy-controller,
  // application-definition-crd,cozystack-scheduler,etcd-operator-crds}/…), the kinds its aggregated API
  // serves from ApplicationDefinitions (packages/system/*-rd/cozyrds/*.yaml; pkg/cmd/server/start.go
  // serves them with no short names), and the VictoriaMetrics kinds it installs
  // (packages/system/victoria-metrics-operator/charts/victoria-metrics-operator/crd.yaml), which share
  // our "vm" prefix.
  Cozystack: [
    ['packages', 'package', 'pkg', 'pkgs'],
    ['packagesources', 'packagesource', 'pks'],
    ['applicationdefinitions', 'applicationdefinition'],
    ['schedulingclasses', 'schedulingclass'],
    ['workloadmonitors', 'workloadmonitor'],
    ['workloads', 'workload'],
    ['tenantgateways', 'tenantgateway', 'tgw'],
    ['backupclasses', 'backupclass'],
    ['backupjobs', 'backupjob'],
    ['backups', 'backup'],
    ['restorejobs', 'restorejob'],
    ['etcdclusters', 'etcdcluster'],
    ['etcdmembers', 'etcdmember'],
    ['etcdsnapshots', 'etcdsnapshot'],
    ['vmdisks', 'vmdisk'],
    ['vminstances', 'vminstance'],
    ['virtualprivateclouds', 'virtualprivatecloud'],
    ['vpns', 'vpn'],
    ['bootboxes', 'bootbox'],
    ['buckets', 'bucket'],
    ['infos', 'info'],
    ['tcpbalancers', 'tcpbalancer'],
    ['vmagents', 'vmagent'],
    ['vmalertmanagerconfigs', 'vmalertmanagerconfig'],
    ['vmalertmanagers', 'vmalertmanager', 'vma'],
    ['vmalerts', 'vmalert'],
    ['vmanomalies', 'vmanomaly'],
    ['vmauths', 'vmauth'],
    ['vmclusters', 'vmcluster'],
    ['vmdistributed', 'vmdistributed'],
    ['vmnodescrapes', 'vmnodescrape'],
    ['vmpodscrapes', 'vmpodscrape'],
    ['vmprobes', 'vmprobe'],
    ['vmrules', 'vmrule'],
    ['vmscrapeconfigs', 'vmscrapeconfig'],
    ['vmservicescrapes', 'vmservicescrape'],
    ['vmsingles', 'vmsingle'],
    ['vmstaticscrapes', 'vmstaticscrape'],
    ['vmusers', 'vmuser'],
  ],
};

interface CRD {
  spec: { names: { kind: string; plural: string; singular: string; shortNames?: string[] } };
}
const ours = ['forklift.cozystack.io_vmimportsources.yaml', 'forklift.cozystack.io_vmimporttasks.yaml'].map((f) => YAML.parse(readFileSync(join(ROOT, 'crds', f), 'utf8')) as CRD);

test('every short name, plural and singular of our kinds collides with nothing KubeVirt, CDI, Forklift or Cozystack define', () => {
  const taken = new Map<string, string>();
  for (const [project, kinds] of Object.entries(UPSTREAM)) for (const names of kinds) for (const n of names) taken.set(n, `${project} ${names[0]}`);
  const clashes: string[] = [];
  for (const crd of ours) {
    const { kind, plural, singular, shortNames = [] } = crd.spec.names;
    assert.ok(shortNames.length > 0, `${kind} has a short name`);
    for (const n of [plural, singular, ...shortNames]) {
      const owner = taken.get(n);
      if (owner) clashes.push(`${kind}: "${n}" is also ${owner}`);
    }
  }
  assert.deepEqual(clashes, []);
});

test("our two kinds' names do not collide with each other", () => {
  const all = ours.flatMap((c) => [c.spec.names.plural, c.spec.names.singular, ...(c.spec.names.shortNames ?? [])]);
  assert.equal(new Set(all).size, all.length);
});
