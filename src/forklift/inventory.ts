// Client of Forklift's inventory service (REST over HTTPS). The only network code in src/forklift.
// The server certificate is verified against the CA Forklift publishes (Secret
// forklift-inventory-serving-cert, key ca.crt); the caller's bearer token authenticates.
import https from 'node:https';
import type { SourceInventorySummary, VMVerdict } from '../api/types.ts';
import { summarise } from './assess.ts';

export interface Ref {
  kind: string;
  id: string;
}

export interface InventoryVMSummary {
  id: string;
  name: string;
  path?: string;
  [k: string]: unknown;
}

export interface InventoryDisk {
  key: number;
  file: string;
  datastore: Ref;
  /** Bytes. */
  capacity: number;
  [k: string]: unknown;
}

export interface InventoryConcern {
  category?: string;
  label?: string;
  assessment?: string;
  [k: string]: unknown;
}

export interface InventoryVM extends InventoryVMSummary {
  path: string;
  /** Host id (host-N). */
  host: string;
  powerState: string;
  firmware: 'efi' | 'bios';
  secureBoot?: boolean;
  cpuCount: number;
  coresPerSocket: number;
  memoryMB: number;
  disks: InventoryDisk[];
  networks: Ref[];
  nics: Array<{ mac: string; network: Ref; [k: string]: unknown }>;
  concerns: InventoryConcern[];
}

export interface InventoryHost {
  id: string;
  /** The address vCenter advertises for the host. */
  name: string;
  inMaintenance: boolean;
  managementServerIp?: string;
  networkAdapters?: Array<{ name: string; ipAddress: string; [k: string]: unknown }>;
  [k: string]: unknown;
}

export interface InventoryNetwork {
  id: string;
  name: string;
  [k: string]: unknown;
}

export interface InventoryDatastore {
  id: string;
  name: string;
  [k: string]: unknown;
}

export interface InventoryClientOptions {
  baseURL: string;
  /**
   * PEM CA the server certificate must chain to, asked for per request (Forklift rotates it; a
   * `CachedCA` answers from memory).
   */
  ca: () => Promise<string | undefined> | string | undefined;
  /**
   * Called when the server's certificate does not chain to the CA: re-reads the CA and says whether it
   * changed, in which case the request is tried once more with the new one.
   */
  refreshCA?: () => Promise<boolean>;
  /** Bearer token; read per request (projected tokens rotate). */
  token: () => Promise<string | undefined> | string | undefined;
  /** Forklift's namespace, named in the fix of a CA mismatch. */
  forkliftNamespace?: string;
  timeoutMs?: number;
}

export class InventoryError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(code: string, status: number, message: string) {
    super(message);
    this.name = 'InventoryError';
    this.code = code;
    this.status = status;
  }
}

// Node's TLS error codes meaning "this certificate does not chain to the CA we were given".
const CA_MISMATCH_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_HAS_EXPIRED',
  'CERT_UNTRUSTED',
]);

/** The fix for a stale inventory certificate (docs/forklift-contract.md). */
export function inventoryCAFix(ns = 'cozy-forklift'): string {
  return `kubectl -n ${ns} rollout restart deploy/forklift-controller`;
}

/** The inventory CA Secret as read: its resourceVersion and the PEM under `ca.crt` (absent: undefined). */
export interface CASecretRead {
  resourceVersion?: string;
  pem?: string;
}

/**
 * Forklift rotates its inventory serving certificate and the CA Secret with it, but rarely; a re-read
 * every 5 minutes bounds how long a CA that was removed or replaced (while the old one still validates)
 * lingers. A rotation that breaks the handshake is not waited for: `refresh()` runs at once.
 */
export const INVENTORY_CA_TTL_MS = 5 * 60_000;

/**
 * The inventory CA, cached by the Secret's resourceVersion: read at most once per TTL (a burst of
 * inventory calls shares one read), and re-read at once when the inventory's certificate does not
 * validate against it. The Secret is read by name (the controller may not watch Secrets). An absent
 * Secret or key is not cached: the next call reads again.
 */
export class CachedCA {
  private readonly read: () => Promise<CASecretRead | undefined>;
  private readonly ttlMs: number;
  private readonly now: () => number;
  private entry: { at: number; resourceVersion?: string; pem: string } | undefined;
  private inflight: Promise<CASecretRead | undefined> | undefined;

  constructor(o: { read: () => Promise<CASecretRead | undefined>; ttlMs?: number; now?: () => number }) {
    this.read = o.read;
    this.ttlMs = o.ttlMs ?? INVENTORY_CA_TTL_MS;
    this.now = o.now ?? Date.now;
  }

  /** The resourceVersion of the Secret the cached CA came from. */
  get resourceVersion(): string | undefined {
    return this.entry?.resourceVersion;
  }

  async get(): Promise<string | undefined> {
    if (this.entry && this.now() - this.entry.at < this.ttlMs) return this.entry.pem;
    await this.load();
    return this.entry?.pem;
  }

  /** Reads the Secret now; true when it holds a different CA than the cached one (a new resourceVersion). */
  async refresh(): Promise<boolean> {
    const before = this.entry;
    await this.load();
    const after = this.entry;
    return !!after && (!before || after.resourceVersion !== before.resourceVersion || after.pem !== before.pem);
  }

  private async load(): Promise<void> {
    this.inflight ??= this.read().finally(() => (this.inflight = undefined));
    const s = await this.inflight;
    if (!s?.pem) {
      this.entry = undefined;
      return;
    }
    // Same resourceVersion: same CA; only the freshness clock moves.
    if (this.entry && s.resourceVersion !== undefined && s.resourceVersion === this.entry.resourceVersion) this.entry.at = this.now();
    else this.entry = { at: this.now(), resourceVersion: s.resourceVersion, pem: s.pem };
  }
}

export class InventoryClient {
  private readonly o: InventoryClientOptions;
  constructor(o: InventoryClientOptions) {
    this.o = o;
  }

  async get<T>(path: string): Promise<T> {
    try {
      return await this.getOnce<T>(path);
    } catch (e) {
      // A rotated serving certificate: the CA Secret may already hold the new CA; try once with it.
      if (e instanceof InventoryError && e.code === 'CAMismatch' && this.o.refreshCA && (await this.o.refreshCA())) return await this.getOnce<T>(path);
      throw e;
    }
  }

  private async getOnce<T>(path: string): Promise<T> {
    const ca = await this.o.ca();
    const token = await this.o.token();
    const ns = this.o.forkliftNamespace ?? 'cozy-forklift';
    if (!ca) throw new InventoryError('NoCA', 0, `the Forklift inventory CA is not published (Secret ${ns}/forklift-inventory-serving-cert, key ca.crt)`);
    const url = new URL(this.o.baseURL.replace(/\/$/, '') + path);
    return await new Promise<T>((resolve, reject) => {
      const req = https.request(
        url,
        {
          method: 'GET',
          ca,
          headers: { Accept: 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
          timeout: this.o.timeoutMs ?? 30_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', (e) => reject(new InventoryError('ConnectionError', 0, `Forklift inventory ${url.pathname}: ${e.message}`)));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            if (status === 206) {
              // Forklift answers 206 Partial Content while the provider's inventory is still loading.
              reject(new InventoryError('Loading', status, `Forklift inventory ${url.pathname}: still loading`));
              return;
            }
            if (status < 200 || status >= 300) {
              reject(new InventoryError(status === 404 ? 'NotFound' : status === 401 || status === 403 ? 'Unauthorized' : 'HTTPError', status, `Forklift inventory ${url.pathname}: HTTP ${status} ${text.slice(0, 200)}`));
              return;
            }
            try {
              resolve(JSON.parse(text) as T);
            } catch {
              reject(new InventoryError('BadResponse', status, `Forklift inventory ${url.pathname}: response is not JSON`));
            }
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('request timed out')));
      req.on('error', (e: NodeJS.ErrnoException) => {
        if (e.code && CA_MISMATCH_CODES.has(e.code)) {
          reject(
            new InventoryError(
              'CAMismatch',
              0,
              `the Forklift inventory at ${url.host} serves a certificate that its published CA (Secret ${ns}/forklift-inventory-serving-cert, ca.crt) does not validate (${e.code}): Forklift rotated its serving certificate without restarting its pods. Fix: ${inventoryCAFix(ns)}`,
            ),
          );
          return;
        }
        reject(new InventoryError('ConnectionError', 0, `Forklift inventory at ${url.host}: ${e.message}`));
      });
      req.end();
    });
  }

  private base(providerUID: string): string {
    return `/providers/vsphere/${encodeURIComponent(providerUID)}`;
  }

  listVMs(providerUID: string): Promise<InventoryVMSummary[]> {
    return this.get<InventoryVMSummary[]>(`${this.base(providerUID)}/vms`);
  }
  /**
   * Every VM with its facts and concerns: detail 2 and above serve the full VM record
   * (kubev2v/forklift@v2.11.5:pkg/controller/provider/web/vsphere/vm.go, VM.Content; web/base/handler.go
   * setDetail reads the number). 4 leaves room for what later levels add.
   */
  listVMsDetailed(providerUID: string): Promise<InventoryVMSummary[]> {
    return this.get<InventoryVMSummary[]>(`${this.base(providerUID)}/vms?detail=4`);
  }
  getVM(providerUID: string, id: string): Promise<InventoryVM> {
    return this.get<InventoryVM>(`${this.base(providerUID)}/vms/${encodeURIComponent(id)}`);
  }
  listHosts(providerUID: string): Promise<InventoryHost[]> {
    return this.get<InventoryHost[]>(`${this.base(providerUID)}/hosts?detail=1`);
  }
  listNetworks(providerUID: string): Promise<InventoryNetwork[]> {
    return this.get<InventoryNetwork[]>(`${this.base(providerUID)}/networks?detail=1`);
  }
  listDatastores(providerUID: string): Promise<InventoryDatastore[]> {
    return this.get<InventoryDatastore[]>(`${this.base(providerUID)}/datastores?detail=1`);
  }
}

/** The inventory picker list: id/name/path, sorted by path then name then id, capped. Pure. */
export function pickerList(vms: InventoryVMSummary[], cap: number): { items: Array<{ id: string; name: string; path: string }>; truncated: boolean; total: number } {
  const items = vms
    .map((v) => ({ id: String(v.id), name: String(v.name ?? ''), path: String(v.path ?? '') }))
    .sort((a, b) => a.path.localeCompare(b.path) || a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  return { items: items.slice(0, cap), truncated: items.length > cap, total: items.length };
}

/**
 * The inventory as published in a VMImportSource's status: the picker list (ordered by path, name, id)
 * cut at `maxItems` entries and at `maxBytes` of JSON, whichever comes first, with counts and a
 * truncation flag. `entry` builds each published entry (default: id, name, path); with `assess`, the
 * summary counts every VM's verdict, listed or not. Pure.
 */
export function statusInventory<E extends { id: string; name: string; path: string; verdict?: VMVerdict } = { id: string; name: string; path: string }>(
  vms: InventoryVMSummary[],
  maxItems: number,
  maxBytes: number,
  entry?: (vm: InventoryVMSummary) => E,
): { total: number; listed: number; truncated: boolean; summary?: SourceInventorySummary; vms: E[] } {
  const make = entry ?? ((v: InventoryVMSummary) => ({ id: String(v.id), name: String(v.name ?? ''), path: String(v.path ?? '') }) as E);
  const all = vms
    .map(make)
    .sort((a, b) => a.path.localeCompare(b.path) || a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  const out: E[] = [];
  let bytes = 2;
  for (const v of all) {
    if (out.length >= maxItems) break;
    const size = Buffer.byteLength(JSON.stringify(v)) + 1;
    if (bytes + size > maxBytes) break;
    bytes += size;
    out.push(v);
  }
  return { total: all.length, listed: out.length, truncated: out.length < all.length, ...(entry ? { summary: summarise(all.map((v) => v.verdict)) } : {}), vms: out };
}
