// Regenerates charts/forklift-operator/files/forklift-operator.yaml from Konveyor Forklift's own operator
// manifests (operator/config/default, built with `kubectl kustomize`) at the pinned release, for
// installation without OLM:
//
//   node packaging/cozystack/update-forklift-operator.ts                 # clones the pinned tag
//   node packaging/cozystack/update-forklift-operator.ts /path/to/forklift   # an existing checkout
//
// Forklift ships no Helm chart; its kustomization leaves ${VAR} placeholders that OLM fills at install
// time. Without OLM they are filled here: images pinned by digest, tunables at the defaults of
// Forklift's Ansible role, WATCH_NAMESPACE set to the install namespace (OLM's targetNamespaces
// annotation does not exist without OLM, and the operator would deploy into konveyor-forklift), and the
// Namespace object dropped (Cozystack's package operator creates the namespace). The same substitutions
// as cozystack/cozystack@370a377e:packages/system/forklift-operator/Makefile (branch feat/vm-import-api),
// whose digests are taken as they are.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

export const FORKLIFT_VERSION = 'v2.11.5';
export const NAMESPACE = 'cozy-forklift';
const IMAGES: Record<string, string> = {
  OPERATOR_IMAGE: 'quay.io/kubev2v/forklift-operator:release-2.11@sha256:6d91046e8e8d50869db67699779c5ff76d0efddeecafdd26c1de8a819e67afe4',
  CONTROLLER_IMAGE: 'quay.io/kubev2v/forklift-controller:release-2.11@sha256:abad06ff5110ee23502f86d0a8d6ed53348a7a03da53956b94ba0ea146be2de3',
  API_IMAGE: 'quay.io/kubev2v/forklift-api:release-2.11@sha256:64efe1504f51046df89d49e8d6321893afd19be9c34d1afbc681f324bff3920d',
  MUST_GATHER_IMAGE: 'quay.io/kubev2v/forklift-must-gather:v2.7.1@sha256:62eecec1408be00e907fbde6b13be9223fdbca116933ecba85cd87d68d6acfbb',
  UI_PLUGIN_IMAGE: 'quay.io/kubev2v/forklift-console-plugin:release-v2.6.7@sha256:99c34ac714604853f4abf589e1ccddb13cd9eaf1bd1eae2c928c622deb22304d',
  CLI_DOWNLOAD_IMAGE: 'quay.io/kubev2v/forklift-cli-download:release-2.11@sha256:91fec2c426773196b87632b8f27bf7482c664be5689d03e9dc324233f0a060a5',
  VALIDATION_IMAGE: 'quay.io/kubev2v/forklift-validation:release-2.11@sha256:a1d0c310db0341fc6608c2b2b955b7699327355c6506cbea5c1a2aabd5e96a2c',
  VIRT_V2V_IMAGE: 'quay.io/kubev2v/forklift-virt-v2v:release-2.11@sha256:e5280a54920c4eed86a85ab9b5d255c9ba008c7030c8334ff3c21dd5cbf24075',
  VIRT_V2V_IMAGE_RHEL9: 'quay.io/kubev2v/forklift-virt-v2v-xfs:release-2.11@sha256:2b9140edaca17e9c5c414a9c42ef422096186ebbf032dd378ed9d93b967550b9',
  POPULATOR_CONTROLLER_IMAGE: 'quay.io/kubev2v/populator-controller:release-2.11@sha256:d42c7f97b7dea571c0fc111b628a59c5ec45a66225fec11052730a35b7c3cb43',
  OVIRT_POPULATOR_IMAGE: 'quay.io/kubev2v/ovirt-populator:release-2.11@sha256:4cf3f458c5975c36f4cdf87daf3460a8cc37080487b88bb652f37d9445c11df4',
  OPENSTACK_POPULATOR_IMAGE: 'quay.io/kubev2v/openstack-populator:release-2.11@sha256:00a0c95aed4e3114b2f60e33d9f9ae5ea7ff19f823be194dae4dd623ffe39ca8',
  OVA_PROVIDER_SERVER_IMAGE: 'quay.io/kubev2v/forklift-ova-provider-server:release-2.11@sha256:7254926ed5fcb4fe90868672fb2997ffe426c2968466c450172e3c3372805b5b',
  OVA_PROXY_IMAGE: 'quay.io/kubev2v/forklift-ova-proxy:release-2.11@sha256:1b307c9283c4b328f74381b0b89c138f4475bb2d31ba3a88d3e0b1d5b276a27e',
  VSPHERE_XCOPY_VOLUME_POPULATOR_IMAGE: 'quay.io/kubev2v/vsphere-xcopy-volume-populator:release-2.11@sha256:b9008754d42c314ea3aa6362a397a7c0a93fae88444faa3234c08c75b8902f93',
  HYPERV_PROVIDER_SERVER_IMAGE: 'quay.io/kubev2v/forklift-hyperv-provider-server:release-2.11@sha256:4c7b9df841f0f29320763ff2586ff22be4ed2e509bf5148583ef3bad5936469c',
};
/**
 * The operator Deployment's tunables, at the defaults of Forklift's Ansible role
 * (kubev2v/forklift@v2.11.5:operator/roles/forkliftcontroller/defaults/main.yml: snapshot removal 120,
 * status check 10, cleanup retries 10, filesystem overhead 10 (%), block overhead 0; virt-v2v may request
 * KVM). A ForkliftController's spec overrides them.
 */
const TUNABLES: Record<string, string> = {
  VIRT_V2V_DONT_REQUEST_KVM: 'false',
  SNAPSHOT_REMOVAL_TIMEOUT: '120',
  SNAPSHOT_STATUS_CHECK_RATE: '10',
  CLEANUP_RETRIES: '10',
  CDI_EXPORT_TOKEN_TTL: '',
  FILESYSTEM_OVERHEAD: '10',
  BLOCK_OVERHEAD: '0',
  OVIRT_OS_MAP: '',
  VSPHERE_OS_MAP: '',
  VIRT_CUSTOMIZE_MAP: '',
};
const UPSTREAM_NAMESPACES = ['forklift-operator-system', 'konveyor-forklift'];

interface Obj { kind?: string; metadata?: { namespace?: string }; [k: string]: unknown }

/** The manifests with every placeholder filled; throws on a placeholder this file does not know. */
export function render(kustomized: string): string {
  const values: Record<string, string> = { ...IMAGES, ...TUNABLES };
  const docs = YAML.parseAllDocuments(kustomized).map((d) => d.toJSON() as Obj | null).filter((o): o is Obj => !!o && o.kind !== 'Namespace');
  const fill = (v: unknown): unknown => {
    if (typeof v === 'string') {
      return v.replace(/\$\{([A-Z0-9_]+)\}/g, (_, name: string) => {
        if (!(name in values)) throw new Error(`unknown placeholder \${${name}}`);
        return values[name]!;
      });
    }
    if (Array.isArray(v)) return v.map(fill);
    if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      // WATCH_NAMESPACE comes from OLM's annotation; without OLM it is the install namespace.
      if (o.name === 'WATCH_NAMESPACE' && o.valueFrom) return { name: 'WATCH_NAMESPACE', value: NAMESPACE };
      return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, k === 'namespace' && typeof x === 'string' && UPSTREAM_NAMESPACES.includes(x) ? NAMESPACE : fill(x)]));
    }
    return v;
  };
  const out = docs.map(fill);
  return `# Generated by packaging/cozystack/update-forklift-operator.ts from kubev2v/forklift@${FORKLIFT_VERSION}:operator/config/default. Do not edit.\n` + out.map((o) => YAML.stringify(o, { lineWidth: 0 })).join('---\n');
}

if (import.meta.main) {
  const here = dirname(fileURLToPath(import.meta.url));
  let src = process.argv[2];
  let tmp: string | undefined;
  if (!src) {
    tmp = mkdtempSync(join(tmpdir(), 'forklift-'));
    execFileSync('git', ['clone', '--quiet', '--depth', '1', '--branch', FORKLIFT_VERSION, 'https://github.com/kubev2v/forklift.git', tmp], { stdio: 'inherit' });
    src = tmp;
  }
  try {
    const kustomized = execFileSync('kubectl', ['kustomize', join(src, 'operator/config/default')], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    writeFileSync(join(here, 'charts/forklift-operator/files/forklift-operator.yaml'), render(kustomized));
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}
