/** Prometheus metrics: the request-duration histogram by route, method and status, the PostgreSQL pool, plus process defaults. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Gauge, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import { observeResponses } from './route-hooks.ts';

export function createRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** What the pool metrics read of a PostgreSQL pool (pg.Pool has these). */
export interface PoolCounts {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/**
 * The PostgreSQL pool as a scrape finds it: connections in use and idle, and requests queued for one
 * (above zero for long: the pool is too small for the load, or PostgreSQL too slow; see docs/3-postgresql.md).
 */
export function registerPoolMetrics(registry: Registry, pool: PoolCounts): void {
  new Gauge({
    name: 'cps_db_pool_connections',
    help: 'PostgreSQL connections of this process by state (in_use, idle)',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      this.set({ state: 'in_use' }, pool.totalCount - pool.idleCount);
      this.set({ state: 'idle' }, pool.idleCount);
    },
  });
  new Gauge({
    name: 'cps_db_pool_waiting',
    help: 'Requests of this process waiting for a PostgreSQL connection',
    registers: [registry],
    collect() {
      this.set(pool.waitingCount);
    },
  });
}

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

interface Labels {
  route: string;
  method: string;
  status: string;
}

/** One line of the exposition, in the shape prom-client's Histogram hands its registry. */
interface Value {
  labels: { le?: number | string };
  sharedLabels: Labels;
  value: number;
  metricName: string;
  exemplar: null | undefined;
}

/** The counts of one route, method and status. */
class Series {
  readonly labels: Labels;
  /** Observations per bucket (the exposition makes them cumulative); slower than the last bound: only in count. */
  readonly buckets = new Float64Array(BUCKETS.length);
  sum = 0;
  count = 0;

  constructor(labels: Labels) {
    this.labels = labels;
  }

  observe(seconds: number): void {
    let i = 0;
    while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++;
    if (i < BUCKETS.length) this.buckets[i]!++;
    this.sum += seconds;
    this.count++;
  }
}

/**
 * http_request_duration_seconds. Counted here rather than by prom-client's Histogram, whose
 * observe() rebuilds and hashes a label key and turns the bucket bound into a property name on
 * every call (about a microsecond, 3-4 % of the CPU of a small request); here a request finds its
 * series through a map per route. The registry renders it exactly as it renders a Histogram
 * (test/http/metrics.test.ts compares the two).
 */
export class RequestDurations {
  readonly name = 'http_request_duration_seconds';
  readonly help = 'HTTP request duration in seconds, by route template, method and status';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** Series in the order of their first observation, as prom-client lists them. */
  #series: Series[] = [];
  readonly #routes = new Map<string, Map<string, Map<number, Series>>>();

  /** The observer of one route template: finds the series of a response's method and status. */
  observer(route: string): (request: FastifyRequest, reply: FastifyReply) => void {
    let byMethod = this.#routes.get(route);
    if (!byMethod) this.#routes.set(route, (byMethod = new Map()));
    const methods = byMethod;
    return (request, reply) => {
      let byStatus = methods.get(request.method);
      if (!byStatus) methods.set(request.method, (byStatus = new Map()));
      let series = byStatus.get(reply.statusCode);
      if (!series) {
        byStatus.set(reply.statusCode, (series = new Series({ route, method: request.method, status: String(reply.statusCode) })));
        this.#series.push(series);
      }
      series.observe(reply.elapsedTime / 1000);
    };
  }

  /** What the registry renders (prom-client's Histogram.getForPromString shape). */
  getForPromString() {
    const values: Value[] = [];
    for (const series of this.#series) {
      const sharedLabels = series.labels;
      let cumulative = 0;
      for (let i = 0; i < BUCKETS.length; i++) {
        cumulative += series.buckets[i]!;
        values.push({ labels: { le: BUCKETS[i]! }, sharedLabels, value: cumulative, metricName: `${this.name}_bucket`, exemplar: null });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels, value: series.count, metricName: `${this.name}_bucket`, exemplar: null });
      values.push({ labels: {}, sharedLabels, value: series.sum, metricName: `${this.name}_sum`, exemplar: undefined });
      values.push({ labels: {}, sharedLabels, value: series.count, metricName: `${this.name}_count`, exemplar: undefined });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The same values with each value's labels in one object (registry.getMetricsAsJSON). */
  async get() {
    const metric = this.getForPromString();
    return { ...metric, values: metric.values.map(({ sharedLabels, labels, ...value }) => ({ ...value, labels: { ...labels, ...sharedLabels } })) };
  }

  reset(): void {
    this.#series = [];
    for (const byMethod of this.#routes.values()) byMethod.clear();
  }
}

export function registerRequestMetrics(app: FastifyInstance, registry: Registry): void {
  const durations = new RequestDurations();
  // The registry takes any object with a metric's get() and names; its types list only its own classes.
  registry.registerMetric(durations as unknown as Metric);

  // By route template: ids in raw paths would make unbounded label sets.
  observeResponses(app, (url) => durations.observer(url), durations.observer('unmatched'));
}
