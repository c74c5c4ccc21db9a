// Indexes over an informer's store, the way client-go's Indexer keeps them: by namespace always, and by
// each label key a caller selects on (built on the first list that uses the key, then kept up to date on
// every add, update and delete). A list by namespace or labels then touches only the objects under its
// keys instead of scanning the whole kind: with thousands of tasks, every pass of every task listed
// every object of a kind.
import type { KubeObject } from './kube.ts';

type Index = Map<string, Set<string>>;

function addTo(index: Index, value: string, key: string): void {
  let s = index.get(value);
  if (!s) index.set(value, (s = new Set()));
  s.add(key);
}

function removeFrom(index: Index, value: string, key: string): void {
  const s = index.get(value);
  if (!s) return;
  s.delete(key);
  if (!s.size) index.delete(value);
}

/**
 * The store's object map: `set`/`delete`/`clear` keep the indexes in step, so whoever writes the map
 * (the informer's list and watch) needs no change.
 */
export class IndexedMap<T extends KubeObject = KubeObject> extends Map<string, T> {
  private byNamespace: Index | undefined;
  private readonly byLabel = new Map<string, Index>();

  override set(key: string, obj: T): this {
    const old = this.get(key);
    if (old && this.byNamespace) this.unindex(key, old);
    super.set(key, obj);
    if (this.byNamespace) this.index(key, obj);
    return this;
  }

  override delete(key: string): boolean {
    const old = this.get(key);
    if (old && this.byNamespace) this.unindex(key, old);
    return super.delete(key);
  }

  override clear(): void {
    this.byNamespace?.clear();
    for (const i of this.byLabel.values()) i.clear();
    super.clear();
  }

  private index(key: string, o: T): void {
    addTo(this.byNamespace!, o.metadata?.namespace ?? '', key);
    const labels = o.metadata?.labels;
    if (!labels) return;
    for (const [k, idx] of this.byLabel) {
      const v = labels[k];
      if (v !== undefined) addTo(idx, v, key);
    }
  }

  private unindex(key: string, o: T): void {
    removeFrom(this.byNamespace!, o.metadata?.namespace ?? '', key);
    const labels = o.metadata?.labels;
    if (!labels) return;
    for (const [k, idx] of this.byLabel) {
      const v = labels[k];
      if (v !== undefined) removeFrom(idx, v, key);
    }
  }

  /** Starts indexing (the namespace index, and `labelKey` when given) over what the map holds now. */
  private ensure(labelKey?: string): void {
    if (!this.byNamespace) {
      // Indexes exist only once someone lists: a map nobody lists (a get-only cache) pays nothing.
      this.byNamespace = new Map();
      for (const [k, o] of this) addTo(this.byNamespace, o.metadata?.namespace ?? '', k);
      for (const [lk, idx] of this.byLabel) for (const [k, o] of this) {
        const v = o.metadata?.labels?.[lk];
        if (v !== undefined) addTo(idx, v, k);
      }
    }
    if (labelKey !== undefined && !this.byLabel.has(labelKey)) {
      const idx: Index = new Map();
      for (const [k, o] of this) {
        const v = o.metadata?.labels?.[labelKey];
        if (v !== undefined) addTo(idx, v, k);
      }
      this.byLabel.set(labelKey, idx);
    }
  }

  /** Label keys indexed so far (tests, metrics). */
  indexedLabels(): string[] {
    return [...this.byLabel.keys()];
  }

  /**
   * The keys that can match `namespace` and `labels`: the smallest of the candidate sets the indexes
   * give (the namespace's, and each selected label value's); undefined when nothing narrows the search.
   * Callers still check every candidate against the whole selector.
   */
  candidates(namespace: string | undefined, labels: Record<string, string> | undefined): Set<string> | undefined {
    const keys = Object.keys(labels ?? {});
    if (!namespace && !keys.length) return undefined;
    this.ensure();
    const empty = new Set<string>();
    let best: Set<string> | undefined;
    if (namespace) best = this.byNamespace!.get(namespace) ?? empty;
    for (const k of keys) {
      this.ensure(k);
      const s = this.byLabel.get(k)!.get(labels![k]!) ?? empty;
      if (!best || s.size < best.size) best = s;
      if (!best.size) break;
    }
    return best;
  }
}
