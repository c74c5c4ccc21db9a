// The key ring behind sealed credentials, kept in one Secret in the controller's own namespace (never a
// tenant's). The webhook seals with its newest key; the source reconciler opens with any key it holds.
// Rotation: add a key (a new, greater id, or name it in the active-key annotation); it is picked up
// within KEYRING_TTL_MS, and a value sealed under an id not yet seen triggers an immediate re-read.
import { randomBytes } from 'node:crypto';
import { GVRs } from '../runtime/gvr.ts';
import { isAlreadyExists, type KubeClient, type KubeObject } from '../runtime/kube.ts';
import { keyringFromSecretData, type Keyring } from './seal.ts';

/** Annotation on the key Secret naming the key new writes use (default: the greatest key id). */
export const ANNOTATION_ACTIVE_KEY = 'forklift.cozystack.io/active-key';
export const DEFAULT_KEY_SECRET = 'migration-controller-credentials-key';
/** The id of the key generated when the Secret does not exist yet. */
export const FIRST_KID = 'k1';
/** How long a read key ring is trusted: a key added by an operator is in use within this. */
export const KEYRING_TTL_MS = 30_000;

export interface KeyringSource {
  /** The current key ring; `fresh` re-reads it (a value named a key id the cached ring lacks). */
  get(o?: { fresh?: boolean }): Promise<Keyring>;
}

export class KeyringUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyringUnavailable';
  }
}

/** A fixed key ring (tests, benchmarks, a webhook run without a cluster key). */
export class StaticKeyring implements KeyringSource {
  private readonly ring: Keyring;
  constructor(ring?: Keyring) {
    this.ring = ring ?? { keys: new Map([[FIRST_KID, new Uint8Array(randomBytes(32))]]), active: FIRST_KID };
  }
  get(): Promise<Keyring> {
    return Promise.resolve(this.ring);
  }
}

interface SecretLike extends KubeObject {
  data?: Record<string, string>;
}

export class SecretKeyring implements KeyringSource {
  private readonly client: KubeClient;
  private readonly namespace: string;
  private readonly name: string;
  private readonly create: boolean;
  private readonly ttlMs: number;
  private readonly now: () => number;
  private cached: { at: number; ring: Keyring } | undefined;
  private inflight: Promise<Keyring> | undefined;

  constructor(o: { client: KubeClient; namespace: string; name?: string; create?: boolean; ttlMs?: number; now?: () => number }) {
    this.client = o.client;
    this.namespace = o.namespace;
    this.name = o.name ?? DEFAULT_KEY_SECRET;
    this.create = o.create ?? true;
    this.ttlMs = o.ttlMs ?? KEYRING_TTL_MS;
    this.now = o.now ?? Date.now;
  }

  async get(o: { fresh?: boolean } = {}): Promise<Keyring> {
    if (!o.fresh && this.cached && this.now() - this.cached.at < this.ttlMs) return this.cached.ring;
    this.inflight ??= this.load().finally(() => (this.inflight = undefined));
    return await this.inflight;
  }

  private async load(): Promise<Keyring> {
    let s = await this.client.get<SecretLike>(GVRs.Secret, this.namespace, this.name);
    if (!s && this.create) {
      const secret: SecretLike = {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: this.name, namespace: this.namespace, labels: { 'app.kubernetes.io/name': 'migration-controller', 'app.kubernetes.io/component': 'credentials-key' } },
        type: 'Opaque',
        data: { [FIRST_KID]: randomBytes(32).toString('base64') },
      } as SecretLike;
      try {
        s = await this.client.create<SecretLike>(GVRs.Secret, secret);
      } catch (e) {
        // Another replica created it first: use theirs, never a second key k1.
        if (!isAlreadyExists(e)) throw e;
        s = await this.client.get<SecretLike>(GVRs.Secret, this.namespace, this.name);
      }
    }
    if (!s) throw new KeyringUnavailable(`the credentials key Secret ${this.namespace}/${this.name} does not exist`);
    const r = keyringFromSecretData(s.data, s.metadata?.annotations?.[ANNOTATION_ACTIVE_KEY]);
    if ('error' in r) throw new KeyringUnavailable(`the credentials key Secret ${this.namespace}/${this.name} holds ${r.error}`);
    this.cached = { at: this.now(), ring: r.ring };
    return r.ring;
  }
}
