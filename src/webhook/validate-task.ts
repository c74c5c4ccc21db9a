// VMImportTask admission rules (issue 7). Pure: the object, the old object on update, and the facts the
// async layer gathered (source, storage classes, Service CIDR, inventory, quotas). A fact that could not
// be gathered never denies by itself: the check is skipped with a warning and the task reconciler
// repeats it before anything is created.
import { checkStorageClass, type StorageClassLike } from '../preflight/storage.ts';
import { defaultVMName, isDNS1035Label, outputNameProblems } from '../preflight/names.ts';
import { collisionMessage, hostAddressCollision } from '../preflight/cidr.ts';
import { importBudget, quotaVerdict } from '../preflight/quota.ts';
import { guestConversionProblem } from '../preflight/conversion.ts';
import { verdict, type Verdict } from './review.ts';
import { asArray, asObject, asString, factError, factValue, nonEmpty, sameValue, show, type Fact, type JsonObject } from './fields.ts';
import type { Operation } from './validate-source.ts';
import { TASK_MODES, type VMConcern, type VMImportTaskStatus } from '../api/types.ts';
import { CUTOVER_STARTED_PHASES, cutoverLock, parseRFC3339 } from '../api/warm.ts';
import { concernSentence, concernsFor } from '../forklift/assess.ts';
import { warmVerdict, type WarmDiskLike, type WarmVMLike } from '../preflight/warm.ts';
import { destinationFor, multusDuplicateProblem, type InventoryNetworkLike } from '../forklift/maps.ts';
import type { VMImportTask } from '../api/types.ts';

/** What the webhook needs from the Forklift inventory (src/forklift/inventory.ts implements more). */
export interface InventoryVM extends WarmVMLike {
  name: string;
  /** ESXi host id (host-N) the VM runs on. */
  host?: string;
  disks: Array<{ capacity: number } & WarmDiskLike>;
  /**
   * The VM's readiness concerns as assessed (src/forklift/assess.ts vmConcerns, from the raw record's
   * facts and `concerns`); absent: not assessed.
   */
  assessed?: VMConcern[];
  /** The network id of each NIC, in order (two NICs on one network count twice); absent: not served. */
  nicNetworks?: string[];
}
export interface InventoryHost {
  id: string;
  /** The address vCenter advertises for the host. */
  name: string;
}
export interface InventoryReader {
  /** undefined (or a 404-like error) when the VM is not in the inventory. */
  getVM(providerUID: string, id: string): Promise<InventoryVM | undefined>;
  listHosts(providerUID: string): Promise<InventoryHost[]>;
  /** The source's networks (id and name: spec.networks may name one either way). */
  listNetworks?(providerUID: string): Promise<InventoryNetworkLike[]>;
}

export interface QuotaLike {
  metadata?: { name?: string };
  spec?: { hard?: Record<string, string> };
  status?: { hard?: Record<string, string>; used?: Record<string, string> };
}

export interface TaskFacts {
  /** The VMImportSource named by spec.sourceRef; value undefined when it does not exist. */
  source: Fact<JsonObject | undefined>;
  storageClasses: Fact<StorageClassLike[]>;
  serviceCIDRs: Fact<string[] | undefined>;
  /**
   * VMs by id (null: not in the inventory) and the hosts, for the VMs the task names; the networks when the
   * task maps one to Multus (undefined otherwise: nothing of the networks is judged then).
   */
  inventory: Fact<{ vms: Record<string, InventoryVM | null>; hosts: InventoryHost[]; networks?: InventoryNetworkLike[] }>;
  quotas: Fact<QuotaLike[]>;
}

/** The facts the webhook caches, which a denial resting on a cached one re-reads before it stands. */
export type CachedFact = 'source' | 'storageClasses' | 'quotas' | 'inventory';

/**
 * The facts among `candidates` that a denial rests on: those whose loss (what a failed read gives, which
 * the checks turn into a warning) drops one of the verdict's problems. Only these are re-read before a
 * denial is returned: a task refused for a missing storage class re-lists the classes, not the source,
 * the quotas (which only ever warn) or the inventory.
 */
export function deniedOn(operation: Operation, object: unknown, oldObject: unknown, facts: TaskFacts, platform: TaskPlatform, v: Verdict, candidates: Iterable<CachedFact>): Set<CachedFact> {
  const cached = new Set(candidates);
  const out = new Set<CachedFact>();
  for (const name of cached) {
    const without = validateTask(operation, object, oldObject, { ...facts, [name]: { error: 'not read' } }, platform);
    if (v.problems.some((p) => !without.problems.includes(p))) out.add(name);
  }
  // The inventory is read through the source (its provider, and the ESXi addresses its spec.hosts
  // override), and a changed override can lift a problem that losing the source would not: a denial
  // resting on the inventory rests on the source too.
  if (out.has('inventory') && cached.has('source')) out.add('source');
  return out;
}

/**
 * Disk count assumed when the inventory cannot be read: names are checked as if every VM had this many
 * disks (indices 0–99, so `<name>-disk-99` must fit 45 → name ≤ 37; one to ten disks allow 38). Only a
 * VM with more disks can still fail on its names, and the task's own preflight catches that before
 * anything is created.
 */
export const CONSERVATIVE_DISK_COUNT = 100;

const IMMUTABLE = ['sourceRef', 'vms', 'storageClass', 'networks', 'mode', 'guestConversion', 'preserveStaticIPs'] as const;

/** An example RFC 3339 time for messages. */
const CUTOVER_EXAMPLE = '2026-12-01T02:00:00Z';

/** Problems of spec.mode and spec.cutover as the object shows them (create and update alike). */
function modeProblems(spec: JsonObject): string[] {
  const problems: string[] = [];
  if (spec.mode !== undefined && !(TASK_MODES as readonly unknown[]).includes(spec.mode)) {
    problems.push(`spec.mode must be cold or warm (got ${show(spec.mode)}); leave it out for cold`);
  }
  if (spec.cutover !== undefined && spec.cutover !== null) {
    if (parseRFC3339(spec.cutover) === undefined) {
      problems.push(`spec.cutover must be an RFC 3339 time such as ${CUTOVER_EXAMPLE} (got ${show(spec.cutover)}); leave it out to cut over only once you set it`);
    } else if (spec.mode !== 'warm') {
      problems.push('spec.cutover applies to warm imports only (spec.mode: warm); a cold import powers each source VM off when its transfer starts, so there is no cutover to schedule');
    }
  }
  return problems;
}

/**
 * The only change an accepted task takes: spec.cutover set, or moved earlier, while its cutover has not
 * started. Postponing is refused because Forklift may already be acting on the earlier time
 * (kubev2v/forklift@v2.11.5:pkg/controller/plan/migration.go, PhaseCopyingPaused: a VM leaves the
 * precopy loop for cutover at its next pass once Migration.spec.cutover is not after now); removing it
 * would leave a cutover already requested half-cancelled.
 */
function cutoverChangeProblems(oldSpec: JsonObject, spec: JsonObject, oldStatus: unknown): string[] {
  const before = oldSpec.cutover ?? undefined;
  const after = spec.cutover ?? undefined;
  if (sameValue(before, after)) return [];
  const lock = cutoverLock(asObject(oldStatus) as VMImportTaskStatus | undefined);
  if (lock?.kind === 'ended') return ['spec.cutover cannot change: the task has ended'];
  if (lock?.kind === 'started') {
    const evidence = CUTOVER_STARTED_PHASES.includes(lock.phase) ? `VM ${show(lock.vm)} is ${lock.phase}` : `the source of VM ${show(lock.vm)} was powered off at ${lock.sourcePoweredOff}`;
    return [`spec.cutover cannot change: cutover has started (${evidence}), so the source VMs are being powered off for the final copy`];
  }
  if (after === undefined) {
    return [`spec.cutover cannot be removed once set (it is ${show(before)}): a cutover can be moved earlier but not cancelled or postponed; delete the task to abandon the import`];
  }
  const t1 = parseRFC3339(after);
  const t0 = parseRFC3339(before);
  if (t1 !== undefined && t0 !== undefined && t1 > t0) {
    return [`spec.cutover may only be moved earlier: ${show(after)} is later than the scheduled ${show(before)}; a scheduled cutover can be brought forward (set it to the current time to cut over now) but not postponed`];
  }
  return [];
}

// Cozystack's own controller for these kinds takes a VM name of up to 46 characters that may start with a
// digit (cozystack/cozystack@4dc7d04ca:api/migration/v1alpha1/vmimporttask_types.go, VMImportRequest.Name).
// Such a name passes its admission and fails only when the platform refuses the VMInstance or VMDisk
// created after the transfer; a tenant moving a manifest across is told why it is refused here.
const UPSTREAM_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A label value's limit (the task's name is one: LABEL_TASK). */
const TASK_NAME_MAX = 63;
const UPSTREAM_NAME_MAX = 46;
const upstreamAcceptsName = (name: string): boolean => name.length <= UPSTREAM_NAME_MAX && UPSTREAM_NAME.test(name);
export const UPSTREAM_NAME_NOTE =
  "Cozystack's own controller admits this name (up to 46 characters, may start with a digit) and its import then fails after the transfer, when the platform refuses the VMInstance or VMDisk; this controller refuses it before anything is copied";

/** What the platform allows, from the controller's configuration (not from the cluster). */
export interface TaskPlatform {
  /** Chart value guestConversion.enabled (ControllerConfig.guestConversion). */
  guestConversion: boolean;
}

/** A platform without any opt-in: what the webhook judges by when told nothing. */
export const DEFAULT_PLATFORM: TaskPlatform = { guestConversion: false };

export { GUEST_CONVERSION_DISABLED_MESSAGE } from '../preflight/conversion.ts';

function isReady(source: JsonObject): { ready: boolean; reason?: string; message?: string } {
  const conds = asArray(asObject(source.status)?.conditions) ?? [];
  const ready = conds.map(asObject).find((c) => c?.type === 'Ready');
  return { ready: ready?.status === 'True', reason: asString(ready?.reason), message: asString(ready?.message) };
}

/**
 * The task's network mapping as the Plan's NetworkMap will read it (src/forklift/maps.ts destinationFor),
 * when it maps at least one network to Multus and every entry is well formed; undefined otherwise (nothing
 * can land twice on one attachment, or the entries are refused on their own below).
 */
function multusMapping(spec: JsonObject, namespace: string): VMImportTask | undefined {
  const nets = asArray(spec.networks);
  if (!nets) return undefined;
  const entries = nets.map(asObject);
  if (entries.some((n) => !n || !nonEmpty(n.source) || (n.type !== 'pod' && n.type !== 'multus'))) return undefined;
  if (!entries.some((n) => n?.type === 'multus' && nonEmpty(n.name))) return undefined;
  const networks = entries.map((n) => ({ source: asString(n!.source)!, type: n!.type as 'pod' | 'multus', ...(nonEmpty(n!.name) ? { name: n!.name } : {}) }));
  // Only metadata.namespace and spec.networks are read (maps.ts destinationFor).
  return { metadata: { namespace }, spec: { networks } } as unknown as VMImportTask;
}

/** True when the task maps some network to a Multus attachment (the only case the inventory's networks are read for). */
export function mapsToMultus(spec: JsonObject): boolean {
  return (asArray(spec.networks) ?? []).some((n) => asObject(n)?.type === 'multus');
}

/**
 * `facts` undefined: judge only what the object itself shows (the early pass that runs before the CRD
 * schema, and updates). Cluster-dependent rules are skipped, never guessed.
 */
export function validateTask(operation: Operation, object: unknown, oldObject: unknown, facts: TaskFacts | undefined, platform: TaskPlatform = DEFAULT_PLATFORM): Verdict {
  const problems: string[] = [];
  const warnings: string[] = [];
  if (operation === 'DELETE' || operation === 'CONNECT') return verdict([], []);
  const obj = asObject(object);
  if (!obj) return verdict(['the request carries no VMImportTask object'], []);
  const spec = asObject(obj.spec);

  if (operation === 'UPDATE') {
    const oldSpec = asObject(asObject(oldObject)?.spec) ?? {};
    for (const f of IMMUTABLE) {
      // A task stored before spec.mode existed reads as cold, as the CRD's default makes it.
      const [a, b] = f === 'mode' ? [oldSpec.mode ?? 'cold', spec?.mode ?? 'cold'] : [oldSpec[f], spec?.[f]];
      if (!sameValue(a, b)) {
        problems.push(
          f === 'mode'
            ? `spec.mode is immutable once the task is accepted (it is ${show(a)}); delete this task and create a new one to import differently`
            : `spec.${f} is immutable once the task is accepted; delete this task and create a new one to import differently`,
        );
      }
    }
    if (spec && !problems.length) {
      problems.push(...modeProblems(spec));
      if (!problems.length) problems.push(...cutoverChangeProblems(oldSpec, spec, asObject(oldObject)?.status));
    }
    // Everything else was checked at creation; the cluster may have changed since (a class deleted,
    // a quota filled), and the controller's status and finalizer writes must keep passing.
    return verdict(problems, []);
  }

  if (!spec) return verdict(['spec is required: sourceRef and vms'], []);
  // The task's name is the value of a label on every Forklift object built for it (LABEL_TASK), and a
  // label value has at most 63 characters: a longer name would pass here and fail at the first map.
  // Cozystack's own controller refuses it too, in these words
  // (cozystack/cozystack@4dc7d04ca:api/migration/v1alpha1/vmimporttask_types.go, the CEL rule on the kind).
  const taskName = asString(asObject(obj.metadata)?.name);
  if (taskName !== undefined && taskName.length > TASK_NAME_MAX) {
    problems.push(`metadata.name must be at most ${TASK_NAME_MAX} characters: the task's name is carried as a label value on the Forklift objects it owns, and Kubernetes limits label values to ${TASK_NAME_MAX}`);
  }
  problems.push(...modeProblems(spec));
  const namespace = asString(asObject(obj.metadata)?.namespace) ?? '';

  // guest conversion: a platform opt-in (the nodes must be able to run virt-v2v)
  const conversion = guestConversionProblem(spec.guestConversion, platform.guestConversion);
  if (conversion) problems.push(conversion);
  // Warm with conversion: Forklift converts in place after the final delta, a path the handoff does not
  // yet take over; refused rather than imported half-way.
  else if (spec.guestConversion === true && spec.mode === 'warm') {
    problems.push('spec.guestConversion is not supported together with spec.mode: warm yet; import warm as a raw copy (leave guestConversion out), or convert with a cold import');
  }
  // Unless the task chooses (spec.preserveStaticIPs, below), static IPs are kept only when every network
  // maps to Multus (src/forklift/plan.ts preserveStaticIPsFor, staticIPsOf):
  // a NIC on the pod network would keep a vSphere address it cannot use there. Networks not listed go to pod.
  else if (spec.guestConversion === true && spec.preserveStaticIPs === undefined && !(asArray(spec.networks) ?? []).some((n) => asObject(n)?.type === 'multus')) {
    warnings.push('spec.guestConversion with NICs on the pod network: the guests\' static IPs are not kept (an address from vSphere is unusable on the pod network; the guest must take one by DHCP). Map every network to a Multus attachment in spec.networks to keep them');
  }

  if (spec.preserveStaticIPs !== undefined && typeof spec.preserveStaticIPs !== 'boolean') problems.push('spec.preserveStaticIPs must be true or false');
  else if (spec.preserveStaticIPs !== undefined && spec.guestConversion !== true) {
    warnings.push('spec.preserveStaticIPs has no effect without spec.guestConversion: a raw copy leaves the guest as it was, its network configuration included');
  }

  // sourceRef
  const sourceName = asString(asObject(spec.sourceRef)?.name);
  let source: JsonObject | undefined;
  if (!nonEmpty(sourceName)) problems.push('spec.sourceRef.name is required: a VMImportSource in the same namespace');
  else if (facts) {
    const err = factError(facts.source);
    source = factValue(facts.source);
    if (err) warnings.push(`could not read VMImportSource ${show(sourceName)} (${err}); the task will check it before starting`);
    else if (!source) problems.push(`spec.sourceRef.name: VMImportSource ${show(sourceName)} does not exist in namespace ${show(namespace)}; create it first or fix the name`);
    else {
      const r = isReady(source);
      if (!r.ready) {
        warnings.push(`VMImportSource ${show(sourceName)} is not Ready${r.reason ? ` (${r.reason}${r.message ? `: ${r.message.slice(0, 200)}` : ''})` : ''}; the task waits until it is`);
      }
    }
  }

  // vms
  const vms = asArray(spec.vms);
  if (!vms || vms.length === 0) problems.push('spec.vms must list at least one VM (id: vm-N)');
  const inv = facts ? factValue(facts.inventory) : undefined;
  const invErr = facts ? factError(facts.inventory) : 'no facts';
  let conservativeUsed = false;
  const seenIds = new Map<string, number>();
  const seenNames = new Map<string, number>();
  const diskCapacities: number[] = [];
  const overridden = (asArray(asObject(source?.spec)?.hosts) ?? []).map((h) => asString(asObject(h)?.id)).filter((x): x is string => !!x);
  const cidrs = facts ? factValue(facts.serviceCIDRs) : undefined;
  let cidrWarned = false;
  const multusNetworks = multusMapping(spec, namespace);
  const keepIPs = spec.guestConversion === true && spec.preserveStaticIPs === true;
  const podVMs: string[] = [];
  (vms ?? []).forEach((v, i) => {
    const f = `spec.vms[${i}]`;
    const vm = asObject(v);
    if (!vm) {
      problems.push(`${f} must be an object with id (vm-N) and optionally name`);
      return;
    }
    const id = asString(vm.id);
    if (!nonEmpty(id)) {
      problems.push(`${f}.id is required: the VM's managed-object id (vm-N)`);
      return;
    }
    if (seenIds.has(id)) problems.push(`${f}.id ${show(id)} is listed twice (also spec.vms[${seenIds.get(id)}])`);
    else seenIds.set(id, i);

    const found = inv ? inv.vms[id] : undefined;
    if (inv && found === null) {
      warnings.push(`${f}.id ${show(id)} is not in the inventory of VMImportSource ${show(sourceName)}; unless it appears, that VM will fail with VMNotFound`);
    }
    if (found) for (const d of found.disks ?? []) diskCapacities.push(Number(d?.capacity) || 0);
    // The readiness assessment: a Critical concern refuses the task (in Forklift's words, with our fix),
    // Warnings are returned to the tenant; concerns only a warm import has are dropped for a cold one.
    if (found?.assessed) {
      const relevant = concernsFor(found.assessed, asString(spec.mode));
      const who = `VM ${show(found.name)} (${id})`;
      for (const c of relevant.filter((x) => x.category === 'Critical')) problems.push(`${f}: ${who} is Blocked: ${concernSentence(c)}`);
      for (const c of relevant.filter((x) => x.category === 'Warning')) warnings.push(`${f}: ${who}: ${concernSentence(c)}`);
    }
    // Two NICs on one Multus attachment: Forklift's Plan would carry a Critical VMDuplicateNADMappings
    // (the preflight refuses it too, maps.ts multusDuplicateProblem). Judged only where the task maps a
    // network to Multus and the inventory told the VM's NICs and the source's networks.
    if (found?.nicNetworks && inv?.networks && multusNetworks) {
      const dup = multusDuplicateProblem(multusNetworks, { id, nics: found.nicNetworks.map((n) => ({ network: { id: n } })) }, inv.networks);
      if (dup) problems.push(`${f}: VM ${show(found.name)} (${id}): ${dup}`);
    }
    // Static IPs kept by the task's choice: which VMs have a NIC the mapping leaves on the pod network.
    if (keepIPs && found?.nicNetworks?.length) {
      const mapping = multusNetworks;
      const nets = inv?.networks;
      const onPod = !mapping ? true : nets ? found.nicNetworks.some((n) => destinationFor(mapping, nets.find((x) => x.id === n) ?? { id: n }).type === 'pod') : false;
      if (onPod) podVMs.push(`${show(found.name)} (${id})`);
    }
    // Warm: what makes Forklift refuse a warm Plan for this VM, refused here with the fix.
    if (found && spec.mode === 'warm') {
      const w = warmVerdict(found);
      if (w) problems.push(`${f}: ${w.message}`);
    }
    // Without facts (the early pass, before the schema) only the VMInstance name is judged: 0 disks.
    const diskCount = found ? (found.disks ?? []).length : facts ? CONSERVATIVE_DISK_COUNT : 0;
    const conservative = !found && !!facts;

    const explicit = vm.name;
    let name: string | undefined;
    if (explicit !== undefined) {
      if (typeof explicit !== 'string') problems.push(`${f}.name must be a string`);
      else name = explicit;
    } else if (found) {
      name = defaultVMName(found.name, diskCount);
    }
    if (name !== undefined) {
      let ps = outputNameProblems(name, diskCount);
      if (conservative) {
        // Without the inventory only the disk-name length is uncertain.
        ps = ps.map((p) => (p.startsWith('VMDisk') ? `${p} (the inventory could not tell this VM's disk count, so ${CONSERVATIVE_DISK_COUNT} disks were assumed)` : p));
        if (ps.some((p) => p.startsWith('VMDisk'))) conservativeUsed = true;
      }
      for (const p of ps) problems.push(`${f}.name: ${p}`);
      if (ps.length && !conservative && upstreamAcceptsName(name)) warnings.push(`${f}.name: ${UPSTREAM_NAME_NOTE}`);
      if (isDNS1035Label(name)) {
        if (seenNames.has(name)) problems.push(`${f}: VMInstance name ${show(name)} is also the name of spec.vms[${seenNames.get(name)}]; give each VM its own name`);
        else seenNames.set(name, i);
      }
    }

    // Service-CIDR collision of the host the VM runs on.
    if (found?.host && inv) {
      const host = inv.hosts.find((h) => h.id === found.host);
      if (host && cidrs) {
        const c = hostAddressCollision(host.id, host.name, cidrs, overridden);
        if (c) problems.push(`${f}: ${collisionMessage(c, name ?? found.name)}`);
      } else if (host && !cidrs && !cidrWarned && facts) {
        cidrWarned = true;
        warnings.push(`could not learn the cluster's Service CIDR (${factError(facts.serviceCIDRs) ?? 'no method worked'}); the ESXi host addresses are checked again before the transfer`);
      }
    }
  });
  if (facts && !inv && (vms ?? []).length > 0) {
    warnings.push(
      `could not read the inventory of VMImportSource ${show(sourceName)} (${invErr}); VM names were checked assuming up to ${CONSERVATIVE_DISK_COUNT} disks per VM, and host addresses and quota were not checked`,
    );
  } else if (conservativeUsed) {
    warnings.push(`some VMs are not in the inventory; their names were checked assuming up to ${CONSERVATIVE_DISK_COUNT} disks`);
  }

  // spec.preserveStaticIPs: true with a NIC on the pod network is the tenant's call, told its consequence.
  // Known from the mapping alone when nothing maps to Multus or an entry maps to pod; else from the inventory.
  const podEntry = (asArray(spec.networks) ?? []).some((n) => asObject(n)?.type === 'pod');
  if (keepIPs && (podVMs.length || podEntry || !mapsToMultus(spec))) {
    warnings.push(
      `spec.preserveStaticIPs: true with NICs on the pod network${podVMs.length ? ` (VMs ${podVMs.join(', ')})` : ''}: virt-v2v writes each guest's vSphere static IPs into the converted guest, but the pod network assigns its own addresses, so such a guest cannot reach it (nor be reached) until it takes one by DHCP; Forklift only warns about this (NetMapPreservingIPsOnPodNetwork). Map those networks to Multus attachments in spec.networks to keep their addresses usable, or leave spec.preserveStaticIPs out`,
    );
  }

  // storage class
  if (spec.storageClass !== undefined && typeof spec.storageClass !== 'string') problems.push('spec.storageClass must be a string');
  let className: string | undefined;
  if (facts) {
    const classes = factValue(facts.storageClasses);
    if (!classes) warnings.push(`could not list storage classes (${factError(facts.storageClasses)}); the task will check spec.storageClass before starting`);
    else {
      const r = checkStorageClass(asString(spec.storageClass) || undefined, classes);
      if (r.ok) className = r.className;
      else problems.push(`spec.storageClass: ${r.message}`);
    }
  }

  // networks
  if (spec.networks !== undefined) {
    const nets = asArray(spec.networks);
    if (!nets) problems.push('spec.networks must be a list');
    (nets ?? []).forEach((n, i) => {
      const net = asObject(n);
      if (!net) {
        problems.push(`spec.networks[${i}] must be an object with source and type`);
        return;
      }
      if (!nonEmpty(net.source)) problems.push(`spec.networks[${i}].source is required: the source network's id or name`);
      if (net.type !== 'pod' && net.type !== 'multus') problems.push(`spec.networks[${i}].type must be pod or multus (got ${show(net.type)})`);
      if (net.type === 'multus' && !nonEmpty(net.name)) problems.push(`spec.networks[${i}].name is required when type is multus: a NetworkAttachmentDefinition in namespace ${show(namespace)}`);
      if (net.type === 'multus' && nonEmpty(net.name) && net.name.includes('/') && net.name.slice(0, net.name.indexOf('/')) !== namespace) {
        problems.push(
          `spec.networks[${i}].name ${show(net.name)} is in another namespace: the imported VMInstance attaches NetworkAttachmentDefinitions of namespace ${show(namespace)} only; name one there`,
        );
      }
      if (net.type === 'pod' && nonEmpty(net.name)) warnings.push(`spec.networks[${i}].name is ignored when type is pod`);
    });
  }

  // quota (a warning: quota can be raised while the task waits)
  if (facts && inv && className && diskCapacities.length) {
    const quotas = factValue(facts.quotas);
    if (quotas) {
      const q = quotaVerdict(quotas, className, importBudget(diskCapacities));
      if (q.fail) warnings.push(`storage quota: ${q.fail}; the task will fail with QuotaExceeded unless the quota is raised first`);
      else if (q.warn) warnings.push(`storage quota: ${q.warn}`);
    }
  }
  return verdict(problems, warnings);
}
