// What grew between two V8 heap snapshots of the same process (node ids are stable within a process):
// the objects of the second snapshot absent from the first, grouped by kind and constructor, and for the
// largest groups the shortest path from a GC root to a few of their objects — which map, cache or closure
// holds them. The soak benchmark writes the snapshots (`node bench/soak.ts --heap-snapshots DIR`). Given
// one snapshot, every object in it counts: what the heap is made of (`node bench/scale.ts --heap-snapshot DIR`).
//
//   node bench/heapdiff.ts [before.heapsnapshot] after.heapsnapshot [--top 25] [--paths 3] [--json out.json]
import { readFileSync, writeFileSync } from 'node:fs';
import { parseFlags } from './lib.ts';

interface RawSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]]; edge_fields: string[]; edge_types: [string[], ...unknown[]] }; node_count: number };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** A parsed snapshot with the indexes the diff needs (positions are node ordinals, not array offsets). */
export class Heap {
  readonly n: number;
  private readonly nf: number;
  private readonly ef: number;
  readonly type: Uint8Array;
  readonly name: Uint32Array;
  readonly id: Uint32Array;
  readonly size: Float64Array;
  /** First edge (as an edge ordinal) of each node; edges of node i are firstEdge[i] .. firstEdge[i+1]-1. */
  private readonly firstEdge: Uint32Array;
  readonly types: string[];
  private readonly edgeTypes: string[];
  readonly strings: string[];
  private readonly edges: number[];
  /** Distance from the root (BFS over strong edges); retainers of the path are the nodes one step closer. */
  private dist?: Int32Array;
  private retainers?: { start: Uint32Array; from: Uint32Array; edge: Uint32Array };

  constructor(raw: RawSnapshot) {
    const m = raw.snapshot.meta;
    this.nf = m.node_fields.length;
    this.ef = m.edge_fields.length;
    this.types = m.node_types[0];
    this.edgeTypes = m.edge_types[0];
    this.strings = raw.strings;
    this.edges = raw.edges;
    const f = (k: string): number => m.node_fields.indexOf(k);
    const [ti, ni, ii, si, ei] = [f('type'), f('name'), f('id'), f('self_size'), f('edge_count')];
    this.n = raw.nodes.length / this.nf;
    this.type = new Uint8Array(this.n);
    this.name = new Uint32Array(this.n);
    this.id = new Uint32Array(this.n);
    this.size = new Float64Array(this.n);
    this.firstEdge = new Uint32Array(this.n + 1);
    let e = 0;
    for (let i = 0; i < this.n; i++) {
      const o = i * this.nf;
      this.type[i] = raw.nodes[o + ti]!;
      this.name[i] = raw.nodes[o + ni]!;
      this.id[i] = raw.nodes[o + ii]!;
      this.size[i] = raw.nodes[o + si]!;
      this.firstEdge[i] = e;
      e += raw.nodes[o + ei]!;
    }
    this.firstEdge[this.n] = e;
  }

  /** A node's group: its kind and, for objects and closures, its constructor or function name. */
  label(i: number): string {
    const t = this.types[this.type[i]!]!;
    if (t === 'string' || t === 'concatenated string' || t === 'sliced string' || t === 'number' || t === 'bigint') return `(${t})`;
    const nm = this.strings[this.name[i]!] ?? '';
    return t === 'object' || t === 'closure' || t === 'native' ? `${nm} (${t})` : `(${t}) ${nm.slice(0, 60)}`;
  }

  private edgeName(e: number): string {
    const t = this.edgeTypes[this.edges[e * this.ef]!]!;
    const v = this.edges[e * this.ef + 1]!;
    return t === 'element' || t === 'hidden' ? `[${v}]` : t === 'context' ? `ctx.${this.strings[v]}` : String(this.strings[v]).slice(0, 60);
  }

  private edgeTarget(e: number): number {
    return this.edges[e * this.ef + 2]! / this.nf;
  }

  private isWeak(e: number): boolean {
    const t = this.edgeTypes[this.edges[e * this.ef]!];
    return t === 'weak' || t === 'shortcut';
  }

  private index(): void {
    if (this.dist) return;
    const dist = new Int32Array(this.n).fill(-1);
    const queue = new Uint32Array(this.n);
    let head = 0;
    let tail = 0;
    dist[0] = 0;
    queue[tail++] = 0;
    while (head < tail) {
      const i = queue[head++]!;
      for (let e = this.firstEdge[i]!; e < this.firstEdge[i + 1]!; e++) {
        if (this.isWeak(e)) continue;
        const j = this.edgeTarget(e);
        if (dist[j] === -1) {
          dist[j] = dist[i]! + 1;
          queue[tail++] = j;
        }
      }
    }
    // Reverse edges, bucketed by target.
    const count = new Uint32Array(this.n + 1);
    const total = this.firstEdge[this.n]!;
    for (let e = 0; e < total; e++) count[this.edgeTarget(e) + 1]!++;
    for (let i = 0; i < this.n; i++) count[i + 1]! += count[i]!;
    const start = count.slice();
    const from = new Uint32Array(total);
    const edge = new Uint32Array(total);
    const fill = count.slice();
    for (let i = 0; i < this.n; i++) {
      for (let e = this.firstEdge[i]!; e < this.firstEdge[i + 1]!; e++) {
        const j = this.edgeTarget(e);
        const k = fill[j]!++;
        from[k] = i;
        edge[k] = e;
      }
    }
    this.dist = dist;
    this.retainers = { start, from, edge };
  }

  /** The shortest path from a GC root to node `i`, root first, as "label .edge" hops. */
  pathTo(i: number, maxHops = 14): string[] {
    this.index();
    const dist = this.dist!;
    const r = this.retainers!;
    const hops: string[] = [];
    let cur = i;
    if (dist[cur] === -1) return ['(unreachable from the roots: garbage the snapshot kept)'];
    while (dist[cur]! > 0 && hops.length < maxHops) {
      let next = -1;
      let via = -1;
      for (let k = r.start[cur]!; k < r.start[cur + 1]!; k++) {
        const f = r.from[k]!;
        if (dist[f] === dist[cur]! - 1 && !this.isWeak(r.edge[k]!)) {
          next = f;
          via = r.edge[k]!;
          break;
        }
      }
      if (next < 0) break;
      hops.push(`${this.label(next)} .${this.edgeName(via)}`);
      cur = next;
    }
    return hops.reverse();
  }
}

export function loadHeap(path: string): Heap {
  return new Heap(JSON.parse(readFileSync(path, 'utf8')) as RawSnapshot);
}

export interface Growth {
  group: string;
  count: number;
  bytes: number;
  /** Shortest root paths of a few of the group's new objects (the deepest hops last). */
  paths: string[][];
}

/** The new objects of `after` (ids absent from `before`; every object without `before`), grouped; the largest groups first. */
export function diff(before: Heap | undefined, after: Heap, top = 25, paths = 3): { newObjects: number; newBytes: number; groups: Growth[] } {
  const old = new Set<number>();
  for (let i = 0; i < (before?.n ?? 0); i++) old.add(before!.id[i]!);
  const groups = new Map<string, { count: number; bytes: number; samples: number[] }>();
  let newObjects = 0;
  let newBytes = 0;
  for (let i = 0; i < after.n; i++) {
    if (old.has(after.id[i]!)) continue;
    const t = after.types[after.type[i]!];
    if (t === 'synthetic' || t === 'hidden' && after.size[i] === 0) continue;
    newObjects++;
    newBytes += after.size[i]!;
    const g = after.label(i);
    const e = groups.get(g) ?? { count: 0, bytes: 0, samples: [] };
    e.count++;
    e.bytes += after.size[i]!;
    // Samples spread over the group (every 97th), so the paths are not all one neighbourhood.
    if (e.samples.length < paths && e.count % 97 === 1) e.samples.push(i);
    groups.set(g, e);
  }
  const sorted = [...groups.entries()].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, top);
  return {
    newObjects,
    newBytes,
    groups: sorted.map(([group, e]) => ({ group, count: e.count, bytes: e.bytes, paths: e.samples.map((i) => after.pathTo(i)) })),
  };
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const files = args.filter((a) => !a.startsWith('--') && a.endsWith('.heapsnapshot'));
  const flags = parseFlags(args.filter((a) => !files.includes(a)));
  if (files.length !== 1 && files.length !== 2) {
    console.error('usage: node bench/heapdiff.ts [before.heapsnapshot] after.heapsnapshot [--top 25] [--paths 3] [--json out.json]');
    process.exit(2);
  }
  const heaps = files.map(loadHeap);
  const [a, b] = heaps.length === 2 ? [heaps[0], heaps[1]!] : [undefined, heaps[0]!];
  const d = diff(a, b, Number(flags.get('top') ?? 25), Number(flags.get('paths') ?? 3));
  console.log(a ? `objects in the second snapshot and not the first: ${d.newObjects} (${(d.newBytes / 2 ** 20).toFixed(2)} MiB self size)` : `objects in the snapshot: ${d.newObjects} (${(d.newBytes / 2 ** 20).toFixed(2)} MiB self size)`);
  for (const g of d.groups) {
    console.log(`\n${(g.bytes / 1024).toFixed(0).padStart(8)} KiB ${String(g.count).padStart(8)} × ${g.group}`);
    for (const p of g.paths) console.log(`    ${p.join(' → ')}`);
  }
  if (flags.get('json')) writeFileSync(flags.get('json')!, JSON.stringify(d, null, 2));
}
