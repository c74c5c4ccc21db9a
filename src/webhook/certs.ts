// Serving certificates for the admission server, in two modes:
// - self-managed (SelfManagedCerts): a CA (its key in a Secret of its own) and a serving certificate (in
//   the serving Secret) that every replica agrees on (create-if-absent, then optimistic concurrency on
//   resourceVersion), the CA bundle
//   injected into our webhook configurations, the serving certificate rotated before expiry and reloaded
//   without a restart;
// - cert-manager (FileCerts): read the mounted tls.crt/tls.key and reload when the files change.
// Keys come from node:crypto (native and fast); node-forge builds and signs the certificates.
import { generateKeyPairSync, randomBytes, X509Certificate, createPrivateKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import tls from 'node:tls';
import forge from 'node-forge';
import type { Logger } from 'pino';
import { GVRs, type GVR } from '../runtime/gvr.ts';
import { isAlreadyExists, isConflict, type KubeClient, type KubeObject } from '../runtime/kube.ts';

export interface ServingCert {
  cert: string;
  key: string;
}

/** Where the server gets its certificate; onChange fires after a rotation or a file update. */
export interface CertSource {
  start(): Promise<void>;
  current(): ServingCert;
  onChange(cb: (c: ServingCert) => void): void;
  stop(): void;
}

export interface PEMPair {
  certPEM: string;
  keyPEM: string;
}

export const VALIDATING_WEBHOOK_GVR: GVR = { group: 'admissionregistration.k8s.io', version: 'v1', plural: 'validatingwebhookconfigurations', kind: 'ValidatingWebhookConfiguration', namespaced: false };
export const MUTATING_WEBHOOK_GVR: GVR = { group: 'admissionregistration.k8s.io', version: 'v1', plural: 'mutatingwebhookconfigurations', kind: 'MutatingWebhookConfiguration', namespaced: false };

const DAY = 24 * 3600_000;

function newKey(): { pub: forge.pki.rsa.PublicKey; priv: forge.pki.rsa.PrivateKey; privPEM: string } {
  const kp = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privPEM = kp.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const pubPEM = kp.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return { pub: forge.pki.publicKeyFromPem(pubPEM), priv: forge.pki.privateKeyFromPem(privPEM), privPEM };
}

function baseCert(cn: string, pub: forge.pki.rsa.PublicKey, notBefore: Date, notAfter: Date): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = pub;
  // Positive serial (leading 01): a negative DER integer is rejected by Go's x509 parser.
  cert.serialNumber = '01' + randomBytes(12).toString('hex');
  cert.validity.notBefore = notBefore;
  cert.validity.notAfter = notAfter;
  cert.setSubject([{ name: 'commonName', value: cn }]);
  return cert;
}

/** Clock skew between replicas and the API server: certificates are valid from a minute ago. */
const BACKDATE_MS = 60_000;

export function generateCA(o: { commonName: string; validityMs: number; now?: Date }): PEMPair {
  const now = o.now ?? new Date();
  const k = newKey();
  const cert = baseCert(o.commonName, k.pub, new Date(now.getTime() - BACKDATE_MS), new Date(now.getTime() + o.validityMs));
  cert.setIssuer(cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(k.priv, forge.md.sha256.create());
  return { certPEM: forge.pki.certificateToPem(cert), keyPEM: k.privPEM };
}

/**
 * A leaf certificate signed by `ca`, backdated like the CA and never outliving it (a certificate valid past
 * its issuer fails verification the day the CA expires), with `usage` as its extended key usage.
 */
function issueLeaf(ca: PEMPair, o: { commonName: string; validityMs: number; now?: Date }, usage: Record<string, unknown>, altNames?: unknown[]): PEMPair {
  const now = o.now ?? new Date();
  const caCert = forge.pki.certificateFromPem(ca.certPEM);
  const caKey = forge.pki.privateKeyFromPem(ca.keyPEM);
  const k = newKey();
  const notAfter = new Date(Math.min(now.getTime() + o.validityMs, caCert.validity.notAfter.getTime()));
  const cert = baseCert(o.commonName, k.pub, new Date(now.getTime() - BACKDATE_MS), notAfter);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', ...usage },
    ...(altNames ? [{ name: 'subjectAltName', altNames }] : []),
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return { certPEM: forge.pki.certificateToPem(cert), keyPEM: k.privPEM };
}

export function generateServingCert(ca: PEMPair, o: { commonName: string; dnsNames: string[]; ipAddresses: string[]; validityMs: number; now?: Date }): PEMPair {
  // Go's TLS ignores the CN: every name the API server dials must be a SAN.
  return issueLeaf(ca, o, { serverAuth: true }, [...o.dnsNames.map((value) => ({ type: 2, value })), ...o.ipAddresses.map((ip) => ({ type: 7, ip }))]);
}

/**
 * A client certificate (extKeyUsage clientAuth): what an API server presents to the webhook when its
 * admission configuration names one (docs/security.md). The webhook checks the chain and the name.
 */
export function generateClientCert(ca: PEMPair, o: { commonName: string; validityMs: number; now?: Date }): PEMPair {
  return issueLeaf(ca, o, { clientAuth: true });
}

export function certValidity(pem: string): { notBefore: Date; notAfter: Date; serial: string } {
  const c = new X509Certificate(pem);
  return { notBefore: new Date(c.validFrom), notAfter: new Date(c.validTo), serial: c.serialNumber };
}

/**
 * Rotate when less than `rotateBeforeMs` of the validity remains, capped at half the lifetime so a short
 * lived certificate (tests) is not rotated on every check.
 */
export function needsRotation(pem: string, now: Date, rotateBeforeMs: number): boolean {
  try {
    const v = certValidity(pem);
    // The lifetime as issued, without the back-dating (else a 20 s test certificate would look due at once).
    const lifetime = Math.max(0, v.notAfter.getTime() - v.notBefore.getTime() - BACKDATE_MS);
    const margin = Math.min(rotateBeforeMs, lifetime / 2);
    return v.notAfter.getTime() - now.getTime() <= margin;
  } catch {
    return true;
  }
}

/** True when the serving certificate names every DNS name and IP required and was signed by `caPEM`. */
export function servingCertFits(certPEM: string, caPEM: string, dnsNames: string[], ipAddresses: string[]): boolean {
  try {
    const c = new X509Certificate(certPEM);
    const ca = new X509Certificate(caPEM);
    if (!c.checkIssued(ca) || !c.verify(ca.publicKey)) return false;
    const san = c.subjectAltName ?? '';
    const names = new Set(san.split(/,\s*/).map((s) => s.replace(/^(DNS|IP Address):/, '')));
    return dnsNames.every((d) => names.has(d)) && ipAddresses.every((ip) => names.has(ip));
  } catch {
    return false;
  }
}

function keyMatches(certPEM: string, keyPEM: string): boolean {
  try {
    return new X509Certificate(certPEM).checkPrivateKey(createPrivateKey(keyPEM));
  } catch {
    return false;
  }
}

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
const unb64 = (s: unknown): string => (typeof s === 'string' ? Buffer.from(s, 'base64').toString('utf8') : '');

/**
 * Keys of the self-managed Secrets. The serving Secret (type kubernetes.io/tls, so tools recognise
 * tls.crt/tls.key) holds the serving pair and only the public CA certificates; the CA's private keys live
 * in a Secret of their own (`caSecretName`), so whatever may read the serving pair — a mount, a backup, a
 * role granted for the serving certificate — cannot mint certificates the API server trusts.
 */
export const SECRET_KEYS = { cert: 'tls.crt', key: 'tls.key', ca: 'ca.crt', caKey: 'ca.key', bundle: 'ca-bundle.crt', nextCA: 'ca-next.crt', nextCAKey: 'ca-next.key', nextSince: 'ca-next.since' } as const;

/** The CA Secret's name when none is given: beside the serving Secret. */
export const caSecretNameFor = (servingSecretName: string): string => `${servingSecretName}-ca`;

interface CAState {
  ca: PEMPair;
  /**
   * CA rotation happens in two passes: the next CA is first published in the bundle (next), and only a
   * while later (when every API server has the new caBundle) does a serving certificate signed by it get
   * served. Switching in one step would let the API server, still holding the old bundle, reject the new
   * certificate with "x509: certificate signed by unknown authority" — and failurePolicy Fail denies.
   */
  next?: PEMPair & { since: number };
  /** Every CA the API server must trust now: the current one and, after a CA rotation, the previous. */
  bundle: string;
}

interface SecretState extends CAState {
  serving: PEMPair;
}

type SecretObject = KubeObject & { data?: Record<string, string>; type?: string };

/** The CA part of a Secret's data (the CA Secret, or a combined Secret written by an earlier version). */
function readCA(s: SecretObject | undefined): CAState | undefined {
  const data = s?.data ?? {};
  const ca = { certPEM: unb64(data[SECRET_KEYS.ca]), keyPEM: unb64(data[SECRET_KEYS.caKey]) };
  if (!ca.certPEM || !ca.keyPEM || !keyMatches(ca.certPEM, ca.keyPEM)) return undefined;
  const st: CAState = { ca, bundle: unb64(data[SECRET_KEYS.bundle]) || ca.certPEM };
  const next = { certPEM: unb64(data[SECRET_KEYS.nextCA]), keyPEM: unb64(data[SECRET_KEYS.nextCAKey]), since: Number(unb64(data[SECRET_KEYS.nextSince])) };
  if (next.certPEM && next.keyPEM && Number.isFinite(next.since) && keyMatches(next.certPEM, next.keyPEM)) st.next = next;
  return st;
}

function readServing(s: SecretObject | undefined): PEMPair | undefined {
  const data = s?.data ?? {};
  const p = { certPEM: unb64(data[SECRET_KEYS.cert]), keyPEM: unb64(data[SECRET_KEYS.key]) };
  return p.certPEM && p.keyPEM && keyMatches(p.certPEM, p.keyPEM) ? p : undefined;
}

function caSecretData(st: CAState): Record<string, string> {
  return {
    [SECRET_KEYS.ca]: b64(st.ca.certPEM),
    [SECRET_KEYS.caKey]: b64(st.ca.keyPEM),
    [SECRET_KEYS.bundle]: b64(st.bundle),
    ...(st.next ? { [SECRET_KEYS.nextCA]: b64(st.next.certPEM), [SECRET_KEYS.nextCAKey]: b64(st.next.keyPEM), [SECRET_KEYS.nextSince]: b64(String(st.next.since)) } : {}),
  };
}

/** The serving Secret: the pair and public certificates only — never a CA private key. */
function servingSecretData(serving: PEMPair, ca: CAState): Record<string, string> {
  return {
    [SECRET_KEYS.cert]: b64(serving.certPEM),
    [SECRET_KEYS.key]: b64(serving.keyPEM),
    [SECRET_KEYS.ca]: b64(ca.ca.certPEM),
    [SECRET_KEYS.bundle]: b64(ca.bundle),
  };
}

const sameData = (a: Record<string, string> | undefined, b: Record<string, string>): boolean => {
  const ak = Object.keys(a ?? {}).sort();
  const bk = Object.keys(b).sort();
  return ak.length === bk.length && ak.every((k, i) => k === bk[i] && a![k] === b[k]);
};

export interface SelfManagedCertsOptions {
  client: KubeClient;
  /** Namespace and name of the serving Secret every replica shares. */
  namespace: string;
  secretName: string;
  /** The Secret holding the CA's private key, apart from the serving pair; default `<secretName>-ca`. */
  caSecretName?: string;
  /** The webhook Service: its in-cluster DNS names go into the certificate. */
  serviceName?: string;
  dnsNames?: string[];
  ipAddresses?: string[];
  /** Webhook configurations whose clientConfig.caBundle is kept equal to the CA bundle. */
  validatingWebhookConfigurations?: string[];
  mutatingWebhookConfigurations?: string[];
  /** Default 10 years. */
  caValidityMs?: number;
  /** Default 1 year. */
  certValidityMs?: number;
  /** Rotate a certificate when this little validity remains; default 30 days. */
  rotateBeforeMs?: number;
  /** How often the Secrets are re-read (another replica may have rotated), default 60 s. */
  checkIntervalMs?: number;
  /**
   * How long a new CA sits in the bundle before certificates it signs are served: long enough for every
   * replica to inject it and every API server to reload its webhook configuration. Default 2 × checkIntervalMs.
   */
  caPublishDelayMs?: number;
  logger?: Logger;
  now?: () => Date;
}

const LABELS = { 'app.kubernetes.io/managed-by': 'migration-controller', 'app.kubernetes.io/component': 'webhook' };

/** Another replica writing the same Secret at the same moment: re-read and retry this many times. */
const MAX_ATTEMPTS = 5;

export class SelfManagedCerts implements CertSource {
  private readonly o: SelfManagedCertsOptions;
  private readonly dnsNames: string[];
  private readonly ips: string[];
  private state: SecretState | undefined;
  private readonly listeners: Array<(c: ServingCert) => void> = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** Set by the last sync: a configuration named in the options did not exist yet. */
  missingConfigurations: string[] = [];

  constructor(o: SelfManagedCertsOptions) {
    this.o = o;
    const svc = o.serviceName;
    this.dnsNames = [...new Set([...(o.dnsNames ?? []), ...(svc ? [svc, `${svc}.${o.namespace}`, `${svc}.${o.namespace}.svc`, `${svc}.${o.namespace}.svc.cluster.local`] : [])])];
    this.ips = [...new Set(o.ipAddresses ?? [])];
    if (this.dnsNames.length === 0 && this.ips.length === 0) throw new Error('SelfManagedCerts needs serviceName, dnsNames or ipAddresses');
  }

  private now(): Date {
    return this.o.now?.() ?? new Date();
  }

  private get caSecretName(): string {
    return this.o.caSecretName ?? caSecretNameFor(this.o.secretName);
  }

  current(): ServingCert {
    if (!this.state) throw new Error('certificates not loaded yet: call start() first');
    return { cert: this.state.serving.certPEM, key: this.state.serving.keyPEM };
  }

  /** The CA bundle (PEM) the API server must trust. */
  caBundle(): string {
    if (!this.state) throw new Error('certificates not loaded yet');
    return this.state.bundle;
  }

  onChange(cb: (c: ServingCert) => void): void {
    this.listeners.push(cb);
  }

  async start(): Promise<void> {
    await this.sync();
    if (this.timer) return;
    const every = this.o.checkIntervalMs ?? 60_000;
    this.timer = setInterval(() => {
      this.sync().catch((e: unknown) => this.o.logger?.warn({ err: (e as Error).message }, 'webhook certificate sync failed; retrying'));
    }, every);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One pass: load or create the Secrets, rotate what is due, inject the bundle, reload if changed. */
  sync(): Promise<void> {
    // One pass at a time per replica; overlapping timer ticks join the running one.
    if (!this.running) this.running = this.syncOnce().finally(() => (this.running = undefined));
    return this.running;
  }

  private newServing(ca: PEMPair): PEMPair {
    return generateServingCert(ca, {
      commonName: this.dnsNames[0] ?? this.ips[0] ?? 'migration-controller-webhook',
      dnsNames: this.dnsNames,
      ipAddresses: this.ips,
      validityMs: this.o.certValidityMs ?? 365 * DAY,
      now: this.now(),
    });
  }

  private publishDelay(): number {
    return this.o.caPublishDelayMs ?? 2 * (this.o.checkIntervalMs ?? 60_000);
  }

  private newCA(): PEMPair {
    return generateCA({ commonName: `migration-controller-webhook-ca-${randomBytes(3).toString('hex')}`, validityMs: this.o.caValidityMs ?? 3650 * DAY, now: this.now() });
  }

  /** Creates `name` with `data`, or replaces the object read; false when another replica wrote first. */
  private async write(existing: SecretObject | undefined, name: string, type: string, data: Record<string, string>): Promise<boolean> {
    const { client, namespace } = this.o;
    try {
      if (existing) await client.replace<KubeObject>(GVRs.Secret, { ...existing, type, data });
      else await client.create<KubeObject>(GVRs.Secret, { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace, labels: LABELS }, type, data });
      return true;
    } catch (e) {
      if (isConflict(e) || isAlreadyExists(e)) return false;
      throw e;
    }
  }

  /**
   * Step 1: the CA Secret. Created from the CA of a combined Secret written by an earlier version (read
   * once; step 2 then drops the key there), else from a new CA; then the two CA rotation phases.
   */
  private async syncCA(serving: SecretObject | undefined): Promise<CAState | undefined> {
    const { client, namespace } = this.o;
    const caSecret = await client.get<SecretObject>(GVRs.Secret, namespace, this.caSecretName);
    const cur = readCA(caSecret);
    const now = this.now();
    let next: CAState | undefined;
    if (!cur) {
      const legacy = readCA(serving);
      if (legacy) {
        this.o.logger?.info({ secret: `${namespace}/${this.caSecretName}` }, 'moving the webhook CA key out of the serving certificate Secret');
        next = legacy;
      } else {
        const ca = this.newCA();
        next = { ca, bundle: ca.certPEM };
      }
    } else if (cur.next && now.getTime() - cur.next.since >= this.publishDelay()) {
      // Phase 2 of a CA rotation: the next CA has been trusted long enough; serve a certificate it signs.
      const ca = { certPEM: cur.next.certPEM, keyPEM: cur.next.keyPEM };
      next = { ca, bundle: pruneBundle(cur.bundle, ca.certPEM, now) };
    } else if (!cur.next && needsRotation(cur.ca.certPEM, now, this.o.rotateBeforeMs ?? 30 * DAY)) {
      // Phase 1: publish the next CA beside the current one; keep serving certificates of the current.
      const n = this.newCA();
      next = { ...cur, next: { ...n, since: now.getTime() }, bundle: `${cur.bundle.trim()}\n${n.certPEM.trim()}\n` };
    } else {
      const pruned = pruneBundle(cur.bundle, cur.ca.certPEM, now, cur.next?.certPEM);
      if (pruned.trim() === cur.bundle.trim()) return cur;
      next = { ...cur, bundle: pruned };
    }
    // Replaces a CA Secret that exists (even one that no longer parses), creates it otherwise.
    return (await this.write(caSecret, this.caSecretName, 'Opaque', caSecretData(next))) ? next : undefined;
  }

  private async syncOnce(): Promise<void> {
    const { client, namespace, secretName } = this.o;
    const rotateBefore = this.o.rotateBeforeMs ?? 30 * DAY;
    let st: SecretState | undefined;
    for (let attempt = 0; attempt < MAX_ATTEMPTS && !st; attempt++) {
      const secret = await client.get<SecretObject>(GVRs.Secret, namespace, secretName);
      const ca = await this.syncCA(secret);
      if (!ca) continue;
      // Step 2: the serving Secret, signed by the CA in use, with public certificates only.
      const cur = readServing(secret);
      const serving = !cur || needsRotation(cur.certPEM, this.now(), rotateBefore) || !servingCertFits(cur.certPEM, ca.ca.certPEM, this.dnsNames, this.ips) ? this.newServing(ca.ca) : cur;
      const data = servingSecretData(serving, ca);
      if (!sameData(secret?.data, data) || secret?.type !== 'kubernetes.io/tls') {
        if (!(await this.write(secret, secretName, 'kubernetes.io/tls', data))) continue;
        if (serving !== cur) this.o.logger?.info({ secret: `${namespace}/${secretName}`, notAfter: certValidity(serving.certPEM).notAfter.toISOString() }, 'wrote a new webhook serving certificate');
      }
      st = { ...ca, serving };
    }
    if (!st) throw new Error(`webhook certificate Secrets ${namespace}/${secretName} and ${this.caSecretName}: changed by another writer ${MAX_ATTEMPTS} times in a row`);
    await this.inject(st.bundle);
    const changed = !this.state || this.state.serving.certPEM !== st.serving.certPEM;
    this.state = st;
    if (changed) for (const cb of this.listeners) cb(this.current());
  }

  private async inject(bundle: string): Promise<void> {
    const want = b64(bundle);
    const missing: string[] = [];
    const targets: Array<[GVR, string]> = [
      ...(this.o.validatingWebhookConfigurations ?? []).map((n): [GVR, string] => [VALIDATING_WEBHOOK_GVR, n]),
      ...(this.o.mutatingWebhookConfigurations ?? []).map((n): [GVR, string] => [MUTATING_WEBHOOK_GVR, n]),
    ];
    for (const [gvr, name] of targets) {
      for (let attempt = 0; ; attempt++) {
        const cfg = await this.o.client.get<KubeObject & { webhooks?: Array<{ clientConfig?: { caBundle?: string } }> }>(gvr, undefined, name);
        if (!cfg) {
          missing.push(name);
          break;
        }
        const hooks = cfg.webhooks ?? [];
        if (hooks.every((h) => h.clientConfig?.caBundle === want)) break;
        for (const h of hooks) h.clientConfig = { ...(h.clientConfig ?? {}), caBundle: want };
        try {
          await this.o.client.replace(gvr, cfg);
          break;
        } catch (e) {
          if (isConflict(e) && attempt < 5) continue;
          throw e;
        }
      }
    }
    this.missingConfigurations = missing;
  }
}

/** Drops expired CAs from a bundle; always keeps `currentCA` (and `nextCA` while it is being published). */
function pruneBundle(bundle: string, currentCA: string, now: Date, nextCA?: string): string {
  const blocks = bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const keep = blocks.filter((b) => {
    try {
      return new Date(new X509Certificate(b).validTo).getTime() > now.getTime();
    } catch {
      return false;
    }
  });
  // The CA in use leads (tools that read only the first certificate see the right one).
  const others = keep.filter((b) => b.trim() !== currentCA.trim());
  keep.splice(0, keep.length, currentCA.trim(), ...others);
  if (nextCA && !keep.some((b) => b.trim() === nextCA.trim())) keep.push(nextCA.trim());
  return `${keep.join('\n')}\n`;
}

export interface FileCertsOptions {
  certFile: string;
  keyFile: string;
  /** Kubelet updates mounted Secrets by swapping a symlink, which fs.watch misses; poll instead. Default 10 s. */
  pollIntervalMs?: number;
  logger?: Logger;
}

/** cert-manager mode: the serving pair comes from mounted files and is reloaded when they change. */
export class FileCerts implements CertSource {
  private readonly o: FileCertsOptions;
  private cur: ServingCert | undefined;
  private readonly listeners: Array<(c: ServingCert) => void> = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(o: FileCertsOptions) {
    this.o = o;
  }

  private async load(): Promise<ServingCert> {
    const [cert, key] = await Promise.all([readFile(this.o.certFile, 'utf8'), readFile(this.o.keyFile, 'utf8')]);
    // Throws when the pair does not match or does not parse: keep serving the old one meanwhile
    // (cert-manager writes the two files one after the other).
    tls.createSecureContext({ cert, key });
    return { cert, key };
  }

  async start(): Promise<void> {
    this.cur = await this.load();
    this.timer = setInterval(() => void this.poll(), this.o.pollIntervalMs ?? 10_000);
    this.timer.unref();
  }

  async poll(): Promise<void> {
    try {
      const next = await this.load();
      if (this.cur && next.cert === this.cur.cert && next.key === this.cur.key) return;
      this.cur = next;
      this.o.logger?.info({ certFile: this.o.certFile }, 'reloaded the webhook certificate from disk');
      for (const cb of this.listeners) cb(next);
    } catch (e) {
      this.o.logger?.warn({ err: (e as Error).message }, 'webhook certificate files unreadable or mismatched; keeping the current pair');
    }
  }

  current(): ServingCert {
    if (!this.cur) throw new Error('certificates not loaded yet: call start() first');
    return this.cur;
  }

  onChange(cb: (c: ServingCert) => void): void {
    this.listeners.push(cb);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

/** A fixed pair (tests, benchmarks). */
export class StaticCerts implements CertSource {
  private cur: ServingCert;
  private readonly listeners: Array<(c: ServingCert) => void> = [];
  constructor(c: ServingCert) {
    this.cur = c;
  }
  async start(): Promise<void> {}
  current(): ServingCert {
    return this.cur;
  }
  set(c: ServingCert): void {
    this.cur = c;
    for (const cb of this.listeners) cb(c);
  }
  onChange(cb: (c: ServingCert) => void): void {
    this.listeners.push(cb);
  }
  stop(): void {}
}

/** How the admission server gets its certificate (a chart value picks the mode). */
export type WebhookCertConfig =
  | ({ mode: 'self-managed' } & Omit<SelfManagedCertsOptions, 'client' | 'logger' | 'now'>)
  | ({ mode: 'cert-manager' } & Omit<FileCertsOptions, 'logger'>);

export function certSourceFor(client: KubeClient, cfg: WebhookCertConfig, logger?: Logger): CertSource {
  if (cfg.mode === 'cert-manager') {
    const { mode: _mode, ...o } = cfg;
    return new FileCerts({ ...o, logger });
  }
  const { mode: _mode, ...o } = cfg;
  return new SelfManagedCerts({ ...o, client, logger });
}
