import { databasePool, registry, startMetricsServer, watchPool } from '../../engine/platform/metrics';
import { useTestApp } from '../support/use-test-app';

/** A counter's or gauge's value for labels (0 when never observed). */
async function value(name: string, labels: Record<string, string>): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const found = values.find((v) => Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l));
  return found?.value ?? 0;
}

/** A histogram's observation count for labels. */
async function count(name: string, labels: Record<string, string>): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const found = values.find(
    (v) =>
      (v as { metricName?: string }).metricName === `${name}_count` &&
      Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l),
  );
  return found?.value ?? 0;
}

/**
 * Prometheus metrics of the API process (issue 32): request durations by route template and status
 * class, 429s, load shed by draining, calculation stages, the database pool, served on their own port.
 */
describe('the API process metrics', () => {
  const h = useTestApp({ rateLimitPerMinute: 5 });

  test('requests are counted by route template (not the raw URL), method and status class', async () => {
    const labels = { method: 'GET', route: '/v2/portfolios/:id', status_class: '4xx' };
    const before = await count('pas_http_request_duration_seconds', labels);
    expect((await h.call('GET', '/v2/portfolios/port_0000000000000000000000001')).statusCode).toBe(404);
    expect((await h.call('GET', '/v2/portfolios/port_0000000000000000000000002')).statusCode).toBe(404);
    expect(await count('pas_http_request_duration_seconds', labels)).toBe(before + 2);
    const unmatched = { method: 'GET', route: 'unmatched', status_class: '4xx' };
    const beforeUnmatched = await count('pas_http_request_duration_seconds', unmatched);
    await h.app.inject({ method: 'GET', url: '/v2/no/such/route' });
    expect(await count('pas_http_request_duration_seconds', unmatched)).toBe(beforeUnmatched + 1);
    const text = await registry.metrics();
    expect(text).not.toContain('port_0000000000000000000000001');
  });

  test('a calculation’s Server-Timing stages are observed per calculation and stage', async () => {
    const labels = { calculation: 'exposure', stage: 'checks' };
    const before = await count('pas_calculation_stage_duration_seconds', labels);
    // Refused in its checks stage (no market data here): the stages that ran are still observed.
    const res = await h.call('POST', '/v2/calculations/exposure', {
      securities: [{ id: 'a', symbol: 'AAPL', quantity: 1 }],
    });
    expect(res.statusCode).toBe(400);
    expect(await count('pas_calculation_stage_duration_seconds', labels)).toBe(before + 1);
  });

  test('429s move pas_http_rate_limited_total', async () => {
    const before = await value('pas_http_rate_limited_total', {});
    let limited = 0;
    for (let i = 0; i < 8; i++) {
      if ((await h.call('GET', '/v2/workspaces')).statusCode === 429) limited += 1;
    }
    expect(limited).toBeGreaterThan(0);
    expect(await value('pas_http_rate_limited_total', {})).toBe(before + limited);
  });

  test('the pool gauge reads the watched pools; GET /metrics on its own port; anything else 404', async () => {
    const unwatch = watchPool(h.db);
    const server = await startMetricsServer('127.0.0.1', 0);
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/plain');
      const text = await res.text();
      for (const name of [
        'pas_http_request_duration_seconds_bucket',
        'pas_http_rate_limited_total',
        'pas_db_pool_connections{state="idle"}',
        'process_cpu_seconds_total',
      ]) {
        expect(text).toContain(name);
      }
      const { values } = await databasePool.get();
      const idle = values.find((v) => v.labels.state === 'idle')!.value;
      expect(idle).toBeGreaterThanOrEqual(0);
      expect((await fetch(`http://127.0.0.1:${server.port}/other`)).status).toBe(404);
    } finally {
      await server.close();
      unwatch();
    }
  });

  test('draining: pas_draining is 1 and each refused GET is counted as shed', async () => {
    const before = await value('pas_http_load_shed_total', { reason: 'draining' });
    void h.app.drain({ quietMs: 200, maxMs: 500 });
    expect((await h.call('GET', '/v2/workspaces')).statusCode).toBe(503);
    expect(await value('pas_http_load_shed_total', { reason: 'draining' })).toBe(before + 1);
    expect(await value('pas_draining', {})).toBe(1);
  });
});
