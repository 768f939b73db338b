/**
 * The request-duration histogram: one series per route template, method and status, and `unmatched`;
 * rendered exactly as prom-client renders its own Histogram.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Histogram, Registry, type Metric } from 'prom-client';
import { RequestDurations, registerPoolMetrics } from '../../src/http/metrics.ts';
import { bearer, createTestApp, createTestClient, DIALECT, type TestApp } from '../support.ts';

function count(metrics: string, labels: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith(`http_request_duration_seconds_count{${labels}}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe(`request metrics (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('counts each request under its route template, method and status', async () => {
    const client = await createTestClient(t.ctx, { scopes: ['clinic:write'] });
    await t.app.inject({ url: '/cdr/v1/clinic/c_1', headers: bearer(client.token) });
    await t.app.inject({ url: '/cdr/v1/clinic/c_2', headers: bearer(client.token) });
    await t.app.inject({ url: '/cdr/v1/clinic/c_3' });
    await t.app.inject({ method: 'HEAD', url: '/health' });
    await t.app.inject({ url: '/no/such/route/c_4' });
    await t.app.inject({ method: 'POST', url: '/health' });
    const metrics = (await t.app.inject({ url: '/metrics' })).body;
    assert.equal(count(metrics, 'route="/cdr/v1/clinic/:id",method="GET",status="404"'), 2);
    assert.equal(count(metrics, 'route="/cdr/v1/clinic/:id",method="GET",status="401"'), 1);
    assert.equal(count(metrics, 'route="/health",method="HEAD",status="200"'), 1);
    assert.equal(count(metrics, 'route="unmatched",method="GET",status="404"'), 1);
    assert.equal(count(metrics, 'route="unmatched",method="POST",status="404"'), 1);
    assert.ok(!metrics.includes('c_1') && !metrics.includes('c_4'), 'no raw URL in labels');
    assert.match(metrics, /http_request_duration_seconds_bucket\{le="\+Inf",route="\/cdr\/v1\/clinic\/:id",method="GET",status="404"\} 2/);
  });
});

describe(`PostgreSQL pool metrics (${DIALECT})`, () => {
  it('are on /metrics with PostgreSQL only, read from the pool at each scrape', async () => {
    const t = await createTestApp();
    try {
      const metrics = (await t.app.inject({ url: '/metrics' })).body;
      if (DIALECT === 'postgres') {
        // The workers and the access log use connections too, so the counts move: their sum is the pool's size.
        const count = (state: string) => Number(new RegExp(`^cps_db_pool_connections\\{state="${state}"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
        const open = count('in_use') + count('idle');
        assert.ok(open >= 1 && open <= t.ctx.storage.pgPool!.options.max, `${open} connections`);
        assert.match(metrics, /^cps_db_pool_waiting \d+$/m);
      } else {
        assert.doesNotMatch(metrics, /cps_db_pool/);
      }
    } finally {
      await t.close();
    }
  });

  it('say how many connections are in use and idle and how many requests wait for one', async () => {
    const registry = new Registry();
    const pool = { totalCount: 5, idleCount: 2, waitingCount: 0 };
    registerPoolMetrics(registry, pool);
    pool.waitingCount = 7;
    const metrics = await registry.metrics();
    assert.match(metrics, /^cps_db_pool_connections\{state="in_use"\} 3$/m);
    assert.match(metrics, /^cps_db_pool_connections\{state="idle"\} 2$/m);
    assert.match(metrics, /^cps_db_pool_waiting 7$/m);
  });
});

describe('request durations', () => {
  it('render as prom-client renders a Histogram of the same observations', async () => {
    const ours = new Registry();
    const durations = new RequestDurations();
    ours.registerMetric(durations as unknown as Metric);
    const theirs = new Registry();
    const histogram = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration in seconds, by route template, method and status',
      labelNames: ['route', 'method', 'status'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [theirs],
    });
    const observers = new Map<string, ReturnType<RequestDurations['observer']>>();
    const observations: Array<[string, string, number, number]> = [
      ['/health', 'GET', 200, 0.31],
      ['/a/:id', 'POST', 201, 5],
      ['/health', 'GET', 200, 0.5],
      ['/health', 'HEAD', 200, 7.25],
      ['unmatched', 'GET', 404, 0.0001],
      ['/a/:id', 'POST', 400, 6000],
      ['/health', 'GET', 500, 2.5],
      ['/a/:id', 'POST', 201, 1.7],
    ];
    for (const [route, method, status, ms] of observations) {
      if (!observers.has(route)) observers.set(route, durations.observer(route));
      observers.get(route)!({ method } as FastifyRequest, { statusCode: status, elapsedTime: ms } as FastifyReply);
      histogram.observe({ route, method, status: String(status) }, ms / 1000);
    }
    assert.equal(await ours.metrics(), await theirs.metrics());
    assert.deepEqual(await ours.getMetricsAsJSON(), await theirs.getMetricsAsJSON());
    ours.resetMetrics();
    theirs.resetMetrics();
    observers.get('/health')!({ method: 'GET' } as FastifyRequest, { statusCode: 200, elapsedTime: 3 } as FastifyReply);
    histogram.observe({ route: '/health', method: 'GET', status: '200' }, 0.003);
    assert.equal(await ours.metrics(), await theirs.metrics());
  });
});
