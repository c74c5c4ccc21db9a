// Simulated storage side: an external provisioner for SIM_PROVISIONER classes (the real kube-controller-manager
// binds what it provisions), CDI DataVolumes (claim creation, blank/adopted volumes) and Cozystack's apps
// rendering (VMDisk → DataVolume vm-disk-<name>, VMInstance → VirtualMachine vm-instance-<name>).
// Upstream: kubevirt/containerized-data-importer@v1.64.0 (pkg/controller/datavolume/*, pkg/apiserver/webhooks/
// datavolume-validate.go), cozystack/cozystack@v1.6.2 (packages/apps/vm-disk, packages/apps/vm-instance),
// kubevirt/kubevirt@v1.8.4 (VirtualMachine status). What is simplified is listed in test/sim/README.md.
import { isDeepStrictEqual } from 'node:util';
import type { Ctx } from './context.ts';
import { VDDK_WAITING_MESSAGE } from './forklift.ts';
import { type Obj, Queue, R, keyOf, notFound, conflict, HttpError } from './rest.ts';
import { FLUX_NAME_LABEL, fluxOriginLabels } from './lineage.ts';

export const SIM_PROVISIONER = 'sim.cozystack.io/provisioner';
/** The chart version the simulated releases report (Cozystack stamps the real one at build time). */
export const SIM_CHART_VERSION = '0.12.0';
export const POPULATED_FOR = 'cdi.kubevirt.io/storage.populatedFor';
export const ALLOW_ADOPTION = 'cdi.kubevirt.io/allowClaimAdoption';
const SELECTED_NODE = 'volume.kubernetes.io/selected-node';
/** The CSI provisioner's PV deletion-protection finalizer (sig-storage-lib-external-provisioner, finalizerPV). */
export const CSI_PV_FINALIZER = 'external-provisioner.volume.kubernetes.io/finalizer';
const finalizersOf = (o: Obj): string[] => (Array.isArray(o.metadata.finalizers) ? (o.metadata.finalizers as string[]) : []);

export class Storage {
  private readonly ctx: Ctx;
  private readonly pvcq: Queue;
  private readonly pvq: Queue;
  private readonly dvq: Queue;
  private readonly appq: Queue;

  constructor(ctx: Ctx) {
    this.ctx = ctx;
    this.pvcq = new Queue((k) => this.provision(k));
    this.pvq = new Queue((k) => this.reclaim(k));
    this.dvq = new Queue((k) => this.reconcileDV(k));
    this.appq = new Queue((k) => this.reconcileApp(k));
    const inf = ctx.inf;
    inf.pvc.on((t, o) => {
      if (t !== 'DELETED') this.pvcq.add(keyOf(o));
      this.dvq.add(keyOf(o));
    });
    inf.sc.on(() => {
      for (const c of inf.pvc.list()) if (c.status?.phase === 'Pending') this.pvcq.add(keyOf(c));
    });
    inf.pv.on((t, o) => {
      if (t !== 'DELETED') this.pvq.add(o.metadata.name);
    });
    inf.dv.on((t, o) => {
      if (t !== 'DELETED') this.dvq.add(keyOf(o));
    });
    inf.vm.on((t, o) => {
      if (t !== 'DELETED') void this.kubevirtStatus(o);
    });
    inf.vmdisk.on((t, o) => this.appq.add(`VMDisk|${t === 'DELETED' ? 'DELETED|' : ''}${keyOf(o)}`));
    inf.vminstance.on((t, o) => this.appq.add(`VMInstance|${t === 'DELETED' ? 'DELETED|' : ''}${keyOf(o)}`));
  }

  stop(): void {
    for (const q of [this.pvcq, this.pvq, this.dvq, this.appq]) q.stop();
  }

  // ------------------------------------------------------------ provisioner

  private async provision(key: string): Promise<void> {
    const [ns, name] = key.split('/') as [string, string];
    const c = this.ctx.inf.pvc.get(ns, name);
    if (!c || c.metadata.deletionTimestamp || c.status?.phase !== 'Pending' || c.spec?.volumeName) return;
    const sc = this.ctx.inf.sc.get(undefined, c.spec?.storageClassName ?? '');
    if (!sc || sc.provisioner !== SIM_PROVISIONER) return;
    // WaitForFirstConsumer: a real provisioner waits for the scheduler's selected-node, which never comes here.
    if (sc.volumeBindingMode === 'WaitForFirstConsumer' && !c.metadata.annotations?.[SELECTED_NODE]) return;
    const pvName = `pvc-${c.metadata.uid}`;
    if (this.ctx.inf.pv.get(undefined, pvName)) return;
    try {
      await this.ctx.rest.create(R.PV, {
        metadata: { name: pvName, annotations: { 'pv.kubernetes.io/provisioned-by': SIM_PROVISIONER }, labels: { 'sim.cozystack.io/provisioned': 'true' } },
        spec: {
          capacity: { storage: c.spec.resources?.requests?.storage ?? '1Gi' },
          accessModes: c.spec.accessModes ?? ['ReadWriteOnce'],
          volumeMode: c.spec.volumeMode ?? 'Filesystem',
          persistentVolumeReclaimPolicy: sc.reclaimPolicy ?? 'Delete',
          storageClassName: sc.metadata.name,
          claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: ns, name, uid: c.metadata.uid },
          csi: { driver: 'sim.cozystack.io', volumeHandle: pvName },
        },
      });
    } catch (e) {
      if (!(e instanceof HttpError && e.code === 409)) throw e;
    }
  }

  /**
   * The external provisioner's volume loop (kubernetes-sigs/sig-storage-lib-external-provisioner, the
   * library kubernetes-csi/external-provisioner v5 runs: controller/controller.go, syncVolume). A
   * Released volume whose policy is Delete is deleted, with its data.
   *
   * With `csiPVFinalizer` it plays Kubernetes 1.33's PV deletion protection (HonorPVReclaimPolicy, GA in
   * 1.33; external-provisioner ≥ 5.0.1): handleProtectionFinalizer adds
   * `external-provisioner.volume.kubernetes.io/finalizer` to a Bound volume whose policy is Delete and
   * removes it as soon as the policy is Retain (or Recycle) — so every flip of the reclaim policy the
   * handoff makes is answered by a write of the provisioner's own to the same PV; shouldDelete then skips
   * a volume being deleted whose finalizer is gone, and deleteVolumeOperation deletes the backing volume,
   * the PV (unless already being deleted) and then removes the finalizer. A PV deleted while its policy
   * is Delete therefore loses its data even if it was Bound; one deleted while Retain keeps it.
   */
  private async reclaim(name: string): Promise<void> {
    let pv = this.ctx.inf.pv.get(undefined, name);
    if (!pv || pv.metadata.annotations?.['pv.kubernetes.io/provisioned-by'] !== SIM_PROVISIONER) return;
    const finalizing = this.ctx.csiPVFinalizer === true;
    if (finalizing) {
      pv = await this.handleProtectionFinalizer(pv);
      if (!pv) return;
    }
    const has = finalizersOf(pv).includes(CSI_PV_FINALIZER);
    if (finalizing ? !has && pv.metadata.deletionTimestamp : pv.metadata.deletionTimestamp) return;
    if (pv.status?.phase !== 'Released' || pv.spec?.persistentVolumeReclaimPolicy !== 'Delete') return;
    if (!pv.metadata.deletionTimestamp) {
      try {
        await this.ctx.rest.del(R.PV, undefined, name, { uid: pv.metadata.uid });
      } catch (e) {
        if (!notFound(e) && !conflict(e)) throw e;
      }
    }
    if (finalizing && has) await this.setFinalizers(name, (f) => f.filter((x) => x !== CSI_PV_FINALIZER));
  }

  /** handleProtectionFinalizer (as above); returns the volume as written, undefined when it is gone. */
  private async handleProtectionFinalizer(pv: Obj): Promise<Obj | undefined> {
    const policy = pv.spec?.persistentVolumeReclaimPolicy;
    const has = finalizersOf(pv).includes(CSI_PV_FINALIZER);
    if (policy === 'Delete' && !pv.metadata.deletionTimestamp && pv.status?.phase === 'Bound' && !has) {
      return await this.setFinalizers(pv.metadata.name, (f) => [...f, CSI_PV_FINALIZER]);
    }
    if ((policy === 'Retain' || policy === 'Recycle') && has) return await this.setFinalizers(pv.metadata.name, (f) => f.filter((x) => x !== CSI_PV_FINALIZER));
    return pv;
  }

  /**
   * The provisioner's finalizer patch (patchPersistentVolumeWithFinalizers: a strategic merge patch of
   * the list, which leaves other controllers' finalizers, such as kubernetes.io/pv-protection, alone):
   * played as a read-modify-write of the list under the PV's resourceVersion, retried on Conflict.
   */
  private async setFinalizers(name: string, edit: (f: string[]) => string[]): Promise<Obj | undefined> {
    for (let attempt = 0; ; attempt++) {
      const cur = (await this.ctx.rest.get(R.PV, undefined, name)) as Obj | undefined;
      if (!cur) return undefined;
      try {
        return (await this.ctx.rest.patch(R.PV, undefined, name, { metadata: { resourceVersion: cur.metadata.resourceVersion, finalizers: edit(finalizersOf(cur)) } })) as Obj;
      } catch (e) {
        if (notFound(e)) return undefined;
        if (!conflict(e) || attempt >= 5) throw e;
      }
    }
  }

  // ------------------------------------------------------------ CDI

  private async dvStatus(dv: Obj, status: Record<string, unknown>, precondition = false): Promise<void> {
    const cur = dv.status ?? {};
    // Compared as values, not as text: the API server returns a custom resource's keys sorted (see sameStatus).
    const plain = (x: unknown): unknown => (x === undefined ? undefined : JSON.parse(JSON.stringify(x)));
    if (Object.entries(status).every(([k, v]) => isDeepStrictEqual(plain(cur[k]), plain(v)))) return;
    try {
      await this.ctx.rest.patch(R.DataVolume, dv.metadata.namespace, dv.metadata.name, { ...(precondition ? { metadata: { resourceVersion: dv.metadata.resourceVersion } } : {}), status }, 'status');
    } catch (e) {
      if (!notFound(e) && !conflict(e)) throw e;
    }
  }

  /**
   * CDI's DataVolume controller (containerized-data-importer@v1.64.0:pkg/controller/datavolume/controller-base.go
   * and import-controller.go): creates the claim named after the DataVolume, controlled by it; a claim that
   * exists already is adopted only when annotated cdi.kubevirt.io/storage.populatedFor=<DataVolume> or when the
   * DataVolume allows claim adoption (AllowClaimAdoption), and then the DataVolume is Succeeded without an
   * import. Simplified: no populator prime claim and no importer pod (the simulated Forklift moves the bytes).
   */
  private async reconcileDV(key: string): Promise<void> {
    const [ns, name] = key.split('/') as [string, string];
    const dv = this.ctx.inf.dv.get(ns, name);
    if (!dv || dv.metadata.deletionTimestamp) return;
    const pvc = this.ctx.inf.pvc.get(ns, name);
    const owned = (c: Obj): boolean => (c.metadata.ownerReferences ?? []).some((r) => r.uid === dv.metadata.uid);
    const vddk = dv.spec?.source?.vddk;
    if (dv.status?.phase === 'Succeeded' && pvc && !owned(pvc)) return; // handed over (Forklift moved the claim to its VM)
    if (!pvc) {
      const fresh = await this.ctx.rest.get(R.DataVolume, ns, name);
      if (!fresh || fresh.metadata.deletionTimestamp || fresh.metadata.uid !== dv.metadata.uid) return;
      // No claim: create it (also when it vanished after success — CDI re-runs the import into a fresh claim).
      const st = dv.spec?.storage ?? dv.spec?.pvc ?? {};
      try {
        await this.ctx.rest.create(R.PVC, {
          metadata: {
            name,
            namespace: ns,
            labels: { ...(dv.metadata.labels ?? {}), 'app.kubernetes.io/managed-by': 'cdi-controller' },
            annotations: { 'cdi.kubevirt.io/storage.import.source': vddk ? 'vddk' : 'none', 'cdi.kubevirt.io/createdForDataVolume': dv.metadata.uid! },
            ownerReferences: [{ apiVersion: 'cdi.kubevirt.io/v1beta1', kind: 'DataVolume', name, uid: dv.metadata.uid!, controller: true, blockOwnerDeletion: true }],
          },
          spec: {
            accessModes: st.accessModes ?? ['ReadWriteOnce'],
            ...(st.volumeMode ? { volumeMode: st.volumeMode } : {}),
            ...(st.storageClassName ? { storageClassName: st.storageClassName } : {}),
            resources: { requests: { storage: st.resources?.requests?.storage ?? '1Gi' } },
          },
        });
      } catch (e) {
        if (!(e instanceof HttpError && e.code === 409)) throw e;
      }
      await this.dvStatus(dv, { phase: vddk ? 'ImportScheduled' : 'Pending', progress: 'N/A', claimName: name }, true);
      return;
    }
    if (!owned(pvc)) {
      const adopt = pvc.metadata.annotations?.[POPULATED_FOR] === name || dv.metadata.annotations?.[ALLOW_ADOPTION] === 'true';
      if (!adopt) {
        await this.dvStatus(dv, { phase: 'Failed', conditions: [{ type: 'Ready', status: 'False', reason: 'ErrClaimNotValid', message: `Destination PVC ${ns}/${name} already exists` }] });
        return;
      }
      // Adoption: the claim is already populated; the DataVolume becomes its controller owner and Succeeded at once.
      const refs = [...(pvc.metadata.ownerReferences ?? []).filter((r) => !r.controller), { apiVersion: 'cdi.kubevirt.io/v1beta1', kind: 'DataVolume', name, uid: dv.metadata.uid!, controller: true, blockOwnerDeletion: true }];
      try {
        await this.ctx.rest.patch(R.PVC, ns, name, { metadata: { ownerReferences: refs, resourceVersion: pvc.metadata.resourceVersion } });
      } catch (e) {
        // The claim changed under us: its next watch event brings this DataVolume back here.
        if (conflict(e) || notFound(e)) return;
        throw e;
      }
      await this.dvStatus(dv, adoptedStatus(name, pvc));
      return;
    }
    if (dv.status?.phase === 'Succeeded' && pvc.status?.phase === 'Bound') return;
    const sc = this.ctx.inf.sc.get(undefined, pvc.spec?.storageClassName ?? '');
    if (pvc.status?.phase !== 'Bound') {
      if (sc?.volumeBindingMode === 'WaitForFirstConsumer') await this.dvStatus(dv, { phase: 'WaitForFirstConsumer', progress: 'N/A', claimName: name });
      return;
    }
    if (vddk) {
      // The transfer itself is driven by the simulated Forklift; CDI only reports a missing VDDK image.
      if (!vddk.initImageURL && dv.status?.phase !== 'Succeeded') {
        await this.dvStatus(dv, {
          phase: 'ImportScheduled',
          claimName: name,
          conditions: [{ type: 'Running', status: 'False', reason: 'AwaitingVDDK', message: VDDK_WAITING_MESSAGE }],
        });
      }
      return;
    }
    await this.dvStatus(dv, adoptedStatus(name, pvc));
  }

  // ------------------------------------------------------------ KubeVirt (status only: nothing ever runs here)
  // printableStatus Stopped for a Halted VM, Starting otherwise (kubevirt@v1.8.4:staging/src/kubevirt.io/api/
  // core/v1/types.go VirtualMachinePrintableStatus); no VirtualMachineInstance is ever created.

  private async kubevirtStatus(vm: Obj): Promise<void> {
    const halted = vm.spec?.runStrategy === 'Halted' || vm.spec?.running === false;
    const want = halted ? { printableStatus: 'Stopped', ready: false, created: false } : { printableStatus: 'Starting', ready: false, created: false };
    if (vm.status?.printableStatus === want.printableStatus) return;
    await this.ctx.rest.patch(R.VirtualMachine, vm.metadata.namespace, vm.metadata.name, { status: want }, 'status').catch((e) => {
      if (!notFound(e) && !conflict(e) && !this.ctx.stopping) console.error(`[sim] VirtualMachine status: ${(e as Error).message}`);
    });
  }

  // ------------------------------------------------------------ Cozystack apps

  private async reconcileApp(k: string): Promise<void> {
    const parts = k.split('|');
    const kind = parts[0]!;
    const deleted = parts[1] === 'DELETED';
    const [ns, name] = parts[parts.length - 1]!.split('/') as [string, string];
    // Cozystack's aggregated API installs a Helm release <prefix><name> per application
    // (cozystack@v1.6.2:packages/system/vm-disk-rd/cozyrds/vm-disk.yaml, vm-instance-rd/cozyrds/vm-instance.yaml).
    if (kind === 'VMDisk') {
      const release = `vm-disk-${name}`;
      if (deleted) {
        // helm uninstall: removes the DataVolume of its release (and with it the claim it controls).
        const dv = this.ctx.inf.dv.get(ns, release);
        if (dv && dv.metadata.labels?.['app.kubernetes.io/instance'] === release) await this.ctx.rest.del(R.DataVolume, ns, release);
        return;
      }
      const d = this.ctx.inf.vmdisk.get(ns, name);
      if (!d) return;
      // packages/apps/vm-disk/templates/dv.yaml at v1.6.2: a DataVolume of the release's name that already exists
      // (pre-created by the handoff) keeps its spec verbatim.
      const existing = this.ctx.inf.dv.get(ns, release) ?? (await this.ctx.rest.get(R.DataVolume, ns, release));
      if (existing) {
        // Flux's helm-controller labels every object of the release with its origin (lineage: what
        // Cozystack's lineage webhook follows); the adopted DataVolume gets them on the release's install.
        if (this.ctx.lineage && existing.metadata.labels?.[FLUX_NAME_LABEL] !== release) {
          await this.ctx.rest.patch(R.DataVolume, ns, release, { metadata: { labels: fluxOriginLabels(release, ns) } });
        }
        return await this.releaseStatus(R.VMDisk, d, 'vm-disk', release);
      }
      const spec = d.spec ?? {};
      const src = spec.source ?? {};
      const source = src.http ? { http: { url: src.http.url } } : src.image ? { pvc: { name: `vm-default-images-${src.image.name}`, namespace: 'cozy-public' } } : src.upload ? { upload: {} } : src.disk ? { pvc: { name: `vm-disk-${src.disk.name}`, namespace: ns } } : { blank: {} };
      await this.ctx.rest.create(R.DataVolume, {
        metadata: {
          name: release,
          namespace: ns,
          labels: { 'app.kubernetes.io/managed-by': 'Helm', 'app.kubernetes.io/instance': release, ...(this.ctx.lineage ? fluxOriginLabels(release, ns) : {}) },
          annotations: { 'meta.helm.sh/release-name': release, 'meta.helm.sh/release-namespace': ns, 'vm-disk.cozystack.io/optical': String(!!spec.optical) },
        },
        spec: {
          contentType: 'kubevirt',
          source,
          storage: { resources: { requests: { storage: spec.storage ?? '5Gi' } }, ...(spec.storageClass ? { storageClassName: spec.storageClass } : {}) },
        },
      }).catch((e) => {
        if (!(e instanceof HttpError && e.code === 409)) throw e;
      });
      return await this.releaseStatus(R.VMDisk, d, 'vm-disk', release);
    }
    const release = `vm-instance-${name}`;
    if (deleted) {
      const vm = this.ctx.inf.vm.get(ns, release);
      if (vm && vm.metadata.labels?.['app.kubernetes.io/instance'] === release) await this.ctx.rest.del(R.VirtualMachine, ns, release);
      return;
    }
    const inst = this.ctx.inf.vminstance.get(ns, name);
    if (!inst) return;
    const spec = inst.spec ?? {};
    // The chart's own refusals, at template time: nothing is rendered and the install fails
    // (cozystack/cozystack@v1.6.2:packages/apps/vm-instance/templates/vm.yaml, lines 1-8).
    const chartError =
      spec.instanceType && this.ctx.instanceTypes && !this.ctx.instanceTypes.has(spec.instanceType)
        ? `execution error at (vm-instance/templates/vm.yaml:2:6): Specified instanceType does not exist in the cluster: ${spec.instanceType}`
        : spec.instanceProfile && this.ctx.instancePreferences && !this.ctx.instancePreferences.has(spec.instanceProfile)
          ? `execution error at (vm-instance/templates/vm.yaml:5:6): Specified instanceProfile does not exist in the cluster: ${spec.instanceProfile}`
          : undefined;
    if (chartError) return await this.releaseStatus(R.VMInstance, inst, 'vm-instance', release, chartError);
    const res = spec.resources ?? {};
    const disks = (spec.disks ?? []) as Array<{ name: string; bus?: string }>;
    const networks = ((spec.networks ?? spec.subnets ?? []) as Array<{ name?: string }>).filter((n) => n.name);
    // cozystack@v1.6.2:packages/apps/vm-instance/templates/vm.yaml: disks `disk-<name>` with bootOrder index+1
    // on the given bus, volumes from DataVolume vm-disk-<name>; interface `default` (bridge) on the pod network
    // plus one bridge interface per networks[] entry on Multus <release namespace>/<name>. The v1.6.2 chart has
    // no firmware value (firmware.uuid only): spec.firmware is ignored, as the chart ignores it.
    const body = {
      metadata: {
        name: release,
        namespace: ns,
        labels: { 'app.kubernetes.io/managed-by': 'Helm', 'app.kubernetes.io/instance': release, ...(this.ctx.lineage ? fluxOriginLabels(release, ns) : {}) },
        annotations: { 'meta.helm.sh/release-name': release, 'meta.helm.sh/release-namespace': ns },
      },
      spec: {
        runStrategy: spec.runStrategy ?? 'Always',
        ...(spec.instanceType ? { instancetype: { kind: 'VirtualMachineClusterInstancetype', name: spec.instanceType } } : {}),
        ...(spec.instanceProfile ? { preference: { kind: 'VirtualMachineClusterPreference', name: spec.instanceProfile } } : {}),
        template: {
          metadata: { labels: { 'app.kubernetes.io/instance': release } },
          spec: {
            domain: {
              ...(spec.instanceType ? {} : { cpu: { cores: Number(res.cpu ?? 1), sockets: Number(res.sockets ?? 1) }, resources: { requests: { memory: res.memory ?? '1Gi' } } }),
              devices: {
                disks: disks.map((x, i) => ({ name: `disk-${x.name}`, disk: x.bus ? { bus: x.bus } : {}, bootOrder: i + 1 })),
                interfaces: [{ name: 'default', bridge: {} }, ...networks.map((n) => ({ name: n.name!, bridge: {} }))],
              },
            },
            networks: [{ name: 'default', pod: {} }, ...networks.map((n) => ({ name: n.name!, multus: { networkName: `${ns}/${n.name}` } }))],
            volumes: disks.map((x) => ({ name: `disk-${x.name}`, dataVolume: { name: `vm-disk-${x.name}` } })),
          },
        },
      },
    };
    const existing = this.ctx.inf.vm.get(ns, release) ?? (await this.ctx.rest.get(R.VirtualMachine, ns, release));
    if (!existing) {
      await this.ctx.rest.create(R.VirtualMachine, body).catch((e) => {
        if (!(e instanceof HttpError && e.code === 409)) throw e;
      });
    } else if (!isDeepStrictEqual(existing.spec, JSON.parse(JSON.stringify(body.spec)))) {
      // helm upgrade
      await this.ctx.rest.replace(R.VirtualMachine, { ...existing, spec: body.spec });
    }
    await this.releaseStatus(R.VMInstance, inst, 'vm-instance', release);
  }

  /**
   * The application's status as Cozystack's aggregated API shows it: the HelmRelease's Ready and Released
   * conditions copied, and status.version = its lastAttemptedRevision
   * (cozystack/cozystack@v1.6.2:pkg/registry/apps/application/rest.go, convertHelmReleaseToApplication).
   * A chart error fails the install: Flux's helm-controller reports Ready/Released False with reason
   * InstallFailed and Helm's error in the message. Written once per outcome (its own update wakes this loop).
   */
  private async releaseStatus(res: typeof R.VMDisk, app: Obj, chart: string, release: string, chartError?: string): Promise<void> {
    const ns = app.metadata.namespace;
    const at = app.status?.conditions?.find((c: { type?: string }) => c.type === 'Ready')?.lastTransitionTime ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const ok = !chartError;
    const reason = ok ? 'InstallSucceeded' : 'InstallFailed';
    const message = ok ? `Helm install succeeded for release ${ns}/${release}.v1 with chart ${chart}@${SIM_CHART_VERSION}` : `Helm install failed for release ${ns}/${release} with chart ${chart}@${SIM_CHART_VERSION}: ${chartError}`;
    const status = {
      version: SIM_CHART_VERSION,
      conditions: [
        { type: 'Ready', status: ok ? 'True' : 'False', reason, message, lastTransitionTime: at },
        { type: 'Released', status: ok ? 'True' : 'False', reason, message, lastTransitionTime: at },
      ],
    };
    const cur = app.status?.conditions?.find((c: { type?: string }) => c.type === 'Ready');
    if (cur?.reason === reason && cur?.message === message) return;
    await this.ctx.rest.patch(res, ns, app.metadata.name, { status }, 'status').catch((e) => {
      if (!notFound(e)) throw e;
    });
  }
}

function adoptedStatus(name: string, pvc: Obj): Record<string, unknown> {
  return {
    phase: 'Succeeded',
    progress: '100.0%',
    claimName: name,
    conditions: [
      { type: 'Bound', status: pvc.status?.phase === 'Bound' ? 'True' : 'False', reason: pvc.status?.phase === 'Bound' ? 'Bound' : 'Pending', message: `PVC ${name} ${pvc.status?.phase === 'Bound' ? 'Bound' : 'Pending'}` },
      { type: 'Ready', status: 'True', reason: '', message: '' },
      { type: 'Running', status: 'False', reason: 'Completed', message: '' },
    ],
  };
}
