// Prometheus metrics. One registry, one prefix for the whole project; later code registers its domain
// metrics on `registry` with `metricName()` so every series shares the prefix.
import { getHeapStatistics } from 'node:v8';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const METRIC_PREFIX = 'migration_controller_';

export function metricName(suffix: string): string {
  return `${METRIC_PREFIX}${suffix}`;
}

export class Metrics {
  readonly registry: Registry;
  readonly reconcileTotal: Counter<'controller' | 'result'>;
  readonly reconcileDuration: Histogram<'controller'>;
  readonly reconcileErrors: Counter<'controller' | 'reason'>;
  readonly queueDepth: Gauge<'name'>;
  readonly queueAdds: Counter<'name'>;
  readonly queueRetries: Counter<'name'>;
  readonly wakeups: Counter<'controller' | 'cause'>;
  readonly timerWakeups: Counter;
  readonly queueLatency: Histogram<'name'>;
  readonly queueWorkDuration: Histogram<'name'>;
  readonly apiRequests: Counter<'verb' | 'resource' | 'code'>;
  readonly rateLimiterWait: Histogram<'client'>;
  readonly leader: Gauge;
  readonly cacheObjects: Gauge<'cache'>;
  /** What cache_objects reports (the manager's cache sizes); set once the manager exists. */
  cacheSizes: (() => Record<string, number>) | undefined;
  readonly informerLists: Counter<'kind'>;
  // Domain metrics the chart's PrometheusRule alerts on (charts/migration-controller/templates/monitoring.yaml).
  readonly imports: Counter<'namespace' | 'outcome' | 'reason'>;
  readonly vmStalled: Gauge<'namespace' | 'task' | 'vm'>;
  /**
   * Each source's readiness, kept per source and published per namespace only
   * (`migration_controller_sources{namespace,ready}`): a cluster-wide series naming every tenant's
   * sources would map the platform for whoever reads the metrics.
   */
  readonly sourceReady: SourceReadiness;

  constructor(o: { defaultMetrics?: boolean } = {}) {
    this.registry = new Registry();
    const registers = [this.registry];
    // Reconcile latencies span a cache hit (ms) to a slow API server (tens of seconds).
    const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
    this.reconcileTotal = new Counter({ name: metricName('reconcile_total'), help: 'Reconciles by controller and result (success, requeue, error, terminal).', labelNames: ['controller', 'result'], registers });
    this.reconcileDuration = new Histogram({ name: metricName('reconcile_duration_seconds'), help: 'Time spent in one reconcile.', labelNames: ['controller'], buckets, registers });
    this.reconcileErrors = new Counter({ name: metricName('reconcile_errors_total'), help: 'Failed reconciles by controller and reason.', labelNames: ['controller', 'reason'], registers });
    this.queueDepth = new Gauge({ name: metricName('workqueue_depth'), help: 'Keys waiting in the work queue.', labelNames: ['name'], registers });
    this.queueAdds = new Counter({ name: metricName('workqueue_adds_total'), help: 'Keys added to the work queue.', labelNames: ['name'], registers });
    this.queueRetries = new Counter({ name: metricName('workqueue_retries_total'), help: 'Rate-limited re-adds (retries after error).', labelNames: ['name'], registers });
    this.wakeups = new Counter({
      name: metricName('wakeups_total'),
      help: 'Why keys were queued: watch:<Kind> (a watched object changed; watch:<Kind>:filtered when the change was ignored), requeue:<delay> (a timed look a reconcile asked for came due: now, le100ms, le2s, le30s, gt30s), retry (after an error).',
      labelNames: ['controller', 'cause'],
      registers,
    });
    this.timerWakeups = new Counter({
      name: metricName('timer_wakeups_total'),
      help: 'Wake-ups of the one timer every timed requeue and retry of the work queues shares (deadlines that fall together cost one).',
      registers,
    });
    this.queueLatency = new Histogram({ name: metricName('workqueue_queue_duration_seconds'), help: 'Time a key waits in the queue before a worker takes it.', labelNames: ['name'], buckets, registers });
    this.queueWorkDuration = new Histogram({ name: metricName('workqueue_work_duration_seconds'), help: 'Time a worker holds a key.', labelNames: ['name'], buckets, registers });
    this.apiRequests = new Counter({ name: metricName('api_requests_total'), help: 'Kubernetes API requests by verb, resource and HTTP code (0 = connection error).', labelNames: ['verb', 'resource', 'code'], registers });
    // client-go's rest_client_rate_limiter_duration_seconds: from a few ms (a burst spent) to seconds (a
    // queue behind the limit).
    this.rateLimiterWait = new Histogram({ name: metricName('rest_client_rate_limiter_duration_seconds'), help: 'Time a request to the API server waited for the client-side rate limiter (--kube-api-qps/--kube-api-burst), by client (reconcilers, webhook); requests that did not wait are not observed.', labelNames: ['client'], buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers });
    this.informerLists = new Counter({ name: metricName('informer_lists_total'), help: 'Full lists by informers (1 at start; more = relists after 410 Gone or a long outage).', labelNames: ['kind'], registers });
    this.leader = new Gauge({ name: metricName('leader'), help: '1 while this instance holds the leader lease.', registers });
    this.imports = new Counter({ name: metricName('imports_total'), help: 'VM imports that reached a final phase, by namespace, outcome (succeeded, failed) and reason.', labelNames: ['namespace', 'outcome', 'reason'], registers });
    this.vmStalled = new Gauge({ name: metricName('vm_stalled'), help: '1 while a VM transfer has made no progress for the stall timeout (series removed when it moves again or ends).', labelNames: ['namespace', 'task', 'vm'], registers });
    this.sourceReady = new SourceReadiness(
      new Gauge({ name: metricName('sources'), help: 'VMImportSources by namespace and readiness (ready = true when Ready=True); the series of a namespace goes with its last source.', labelNames: ['namespace', 'ready'], registers }),
    );
    const sizes = (): Record<string, number> => this.cacheSizes?.() ?? {};
    this.cacheObjects = new Gauge({
      name: metricName('cache_objects'),
      help: 'Objects held by each informer cache, by kind and label selector (read when scraped).',
      labelNames: ['cache'],
      registers,
      collect() {
        this.reset();
        for (const [cache, n] of Object.entries(sizes())) this.set({ cache }, n);
      },
    });
    // prom-client reports the heap's size and use but not its ceiling, which Node derives from the
    // container's memory limit (512 MiB gives about 259 MiB): used / limit is the headroom before
    // "JavaScript heap out of memory", the crash a growing number of tasks would otherwise end in.
    new Gauge({
      name: metricName('nodejs_heap_size_limit_bytes'),
      help: 'The V8 heap size limit (v8.getHeapStatistics().heap_size_limit): the process fails once the heap in use reaches it.',
      registers,
      collect() {
        this.set(getHeapStatistics().heap_size_limit);
      },
    });
    // The RSS beyond the heap is native memory no heap snapshot shows; what V8 itself allocated with
    // malloc (compiler zones, handles, its own tables) is the one part of it V8 can name, and tells it
    // apart from the Buffers (external) and from OpenSSL, libuv and malloc's slack.
    new Gauge({
      name: metricName('nodejs_malloced_memory_bytes'),
      help: 'Memory V8 allocated outside its heap with malloc (v8.getHeapStatistics().malloced_memory); peak: peak_malloced_memory.',
      labelNames: ['kind'],
      registers,
      collect() {
        const h = getHeapStatistics();
        this.set({ kind: 'current' }, h.malloced_memory);
        this.set({ kind: 'peak' }, h.peak_malloced_memory);
      },
    });
    if (o.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: METRIC_PREFIX });
  }
}

/**
 * Sources' readiness, counted per namespace. Takes the calls a per-source gauge would (set, remove, by
 * namespace and source name) so its users need not know that the name never reaches a series.
 */
export class SourceReadiness {
  private readonly gauge: Gauge<'namespace' | 'ready'>;
  private readonly byNamespace = new Map<string, Map<string, boolean>>();
  constructor(gauge: Gauge<'namespace' | 'ready'>) {
    this.gauge = gauge;
  }
  set(labels: { namespace: string; source: string }, value: number): void {
    let m = this.byNamespace.get(labels.namespace);
    if (!m) this.byNamespace.set(labels.namespace, (m = new Map()));
    m.set(labels.source, value === 1);
    this.publish(labels.namespace);
  }
  remove(labels: { namespace: string; source: string }): void {
    const m = this.byNamespace.get(labels.namespace);
    if (!m?.delete(labels.source)) return;
    this.publish(labels.namespace);
  }
  private publish(namespace: string): void {
    const m = this.byNamespace.get(namespace);
    if (!m?.size) {
      this.byNamespace.delete(namespace);
      this.gauge.remove({ namespace, ready: 'true' });
      this.gauge.remove({ namespace, ready: 'false' });
      return;
    }
    let ready = 0;
    for (const r of m.values()) if (r) ready++;
    this.gauge.set({ namespace, ready: 'true' }, ready);
    this.gauge.set({ namespace, ready: 'false' }, m.size - ready);
  }
}
