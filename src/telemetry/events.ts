// Kubernetes Events (core/v1) for transitions and failures. Repeats of the same (object, type, reason,
// message) are aggregated into one Event whose `count` grows, the way client-go's recorder does: a
// reconcile loop retrying every few seconds must not flood etcd with thousands of identical Events.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { GVRs } from '../runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../runtime/kube.ts';
import type { EventRecorder as EventRecorderContract } from '../runtime/reconciler.ts';

/** The API server rejects an Event message over 1 KiB… in newer versions; keep well under. */
const MAX_MESSAGE = 1000;
/** Bounded memory: remember this many aggregation keys, oldest evicted first. */
const MAX_REMEMBERED = 4096;

interface Seen {
  name: string;
  namespace: string;
  count: number;
}

export class KubeEventRecorder implements EventRecorderContract {
  private readonly client: KubeClient;
  private readonly component: string;
  private readonly log: Logger | undefined;
  private readonly seen = new Map<string, Seen>();
  private chain: Promise<void> = Promise.resolve();

  constructor(client: KubeClient, component = 'migration-controller', log?: Logger) {
    this.client = client;
    this.component = component;
    this.log = log;
  }

  event(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    // Serialised so that two repeats racing each other do not both create an Event.
    this.chain = this.chain.then(() => this.write(obj, type, reason, message)).catch((e: Error) => {
      this.log?.warn({ err: e.message, reason }, 'could not record event');
    });
  }

  /** Resolves when every event recorded so far has been written (tests, shutdown). */
  flush(): Promise<void> {
    return this.chain;
  }

  private async write(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, rawMessage: string): Promise<void> {
    const md = obj.metadata ?? {};
    const namespace = md.namespace || 'default';
    const message = rawMessage.length > MAX_MESSAGE ? `${rawMessage.slice(0, MAX_MESSAGE - 1)}…` : rawMessage;
    const key = `${md.uid ?? `${namespace}/${md.name}`}|${type}|${reason}|${message}`;
    const now = new Date().toISOString();
    const prev = this.seen.get(key);
    if (prev) {
      prev.count++;
      try {
        await this.client.patch(GVRs.Event, prev.namespace, prev.name, { count: prev.count, lastTimestamp: now });
        return;
      } catch {
        // The Event expired (TTL) or was deleted: create a fresh one below.
        this.seen.delete(key);
      }
    }
    const name = `${md.name ?? 'object'}.${randomBytes(8).toString('hex')}`;
    await this.client.create(GVRs.Event, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: { apiVersion: obj.apiVersion, kind: obj.kind, name: md.name, namespace: md.namespace, uid: md.uid, resourceVersion: md.resourceVersion },
      reason,
      message,
      type,
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: this.component },
      reportingComponent: this.component,
    });
    this.seen.set(key, { name, namespace, count: 1 });
    if (this.seen.size > MAX_REMEMBERED) {
      const oldest = this.seen.keys().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
  }
}

/** Records nothing (unit tests). */
export class NullEventRecorder implements EventRecorderContract {
  readonly recorded: Array<{ name?: string; type: string; reason: string; message: string }> = [];
  event(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.recorded.push({ name: obj.metadata?.name, type, reason, message });
  }
}
