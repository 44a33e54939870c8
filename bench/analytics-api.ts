/**
 * The analytics of calc-methodology §16–§19 at L (3000 securities × 15 projections) through the API:
 * the real app on an embedded PostgreSQL holding the synthetic market, each endpoint called with
 * `app.inject` (schema validation, credentials, the market read, the calculation, the audit record,
 * serialisation). The first call of each warms the JIT and PostgreSQL's buffers; the figures are the
 * calls after it. Beside each, the same request split in two: the market read from PostgreSQL
 * (`loadMarket` through the process's series cache, as the endpoints read it) and the calculation on
 * the market once in memory (the calc/ function alone); and once, the read straight from PostgreSQL.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildApp } from '../api/app';
import type { SimulationBackend } from '../calc/backends/backend';
import { runExposure } from '../calc/exposure';
import type { PriceSeries } from '../calc/market-data';
import { runParametricRiskAttribution } from '../calc/parametric-risk';
import type { CalcSecurity } from '../calc/calculation-request';
import { prepareProperties } from '../calc/properties';
import { runSensitivity, runUnderlyingStressSensitivity } from '../calc/sensitivity';
import { createAccount, createApiKey } from '../engine/identity/account-store';
import { connectDatabase, migrateLatest } from '../engine/platform/database';
import { seriesCacheOf } from '../engine/calculations/series-cache';
import { loadMarket } from '../engine/market-data/price-store';
import { startEmbeddedPostgres } from '../engine/runtime/embedded-postgres';
import type { WorkflowRunner } from '../engine/workflows/workflow-runner';
import { noWorkflowSchedules } from '../engine/workflows/workflow-schedules';

export interface AnalyticsBook {
  readonly market: ReadonlyMap<string, PriceSeries>;
  readonly securities: readonly CalcSecurity[];
  readonly projection: readonly string[];
  readonly date: string;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Wall-clock ms, sorted, and this process's CPU ms (user + system), sorted, of each run. */
async function timed(
  runs: number,
  run: () => Promise<unknown> | unknown,
): Promise<number[] & { cpu: number[] }> {
  await run(); // warm-up: JIT, PostgreSQL buffers, the series cache
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const before = process.cpuUsage();
    await run();
    const used = process.cpuUsage(before);
    times.push(performance.now() - started);
    cpu.push((used.user + used.system) / 1000);
  }
  return Object.assign(
    times.sort((a, b) => a - b),
    { cpu: cpu.sort((a, b) => a - b) },
  );
}

/** Prints one Markdown table: per endpoint, API p50/p99, and the market read and calculation p50. */
export async function runAnalyticsOverApi(
  label: string,
  book: AnalyticsBook,
  backend: SimulationBackend,
  runs: number,
): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pas-bench-analytics-'));
  const postgres = await startEmbeddedPostgres({
    dataDir,
    port: 54000 + Math.floor(Math.random() * 900),
    database: 'bench',
  });
  const db = connectDatabase(postgres.url, 10);
  const noWorkflows: WorkflowRunner = {
    start: () => Promise.reject(new Error('workflows are not part of this benchmark')),
    startedDefinition: () => Promise.reject(new Error('workflows are not part of this benchmark')),
    schedules: noWorkflowSchedules('workflows are not part of this benchmark'),
  };
  try {
    await migrateLatest(db);
    const { accountId, owner } = await createAccount(db, { name: 'bench', ownerEmail: 'bench@example.com' });
    const key = await createApiKey(db, { accountId, userId: owner.id });
    // Bulk rows (what `market import` writes, without its per-symbol merge): 3015 merges take minutes here.
    const rows = [...book.market].map(([symbol, series]) => ({
      symbol,
      dates: Array.from(series.dates as Int32Array),
      values: Array.from(series.values),
      updated_at: new Date(),
    }));
    await db('securities_master').insert(rows.map((row) => ({ symbol: row.symbol, price_source: 'bench' })));
    for (let i = 0; i < rows.length; i += 200) await db('price_series').insert(rows.slice(i, i + 200));
    const app = await buildApp({
      config: {
        rateLimitPerMinute: 100_000_000,
        maxPayloadBytes: 104_857_600,
        logLevel: 'silent',
        trustProxy: false,
        publicUrl: 'http://127.0.0.1',
        // One L calculation holds the event loop for longer than the shedding threshold on a busy
        // machine; the benchmark times calls one at a time, so nothing should be shed.
        loadShedEventLoopDelayMs: 0,
      },
      db,
      workflows: noWorkflows,
      simulation: { backend, chosenBy: 'configured', probe: {}, chosenAt: null },
    });
    const headers = { authorization: `Bearer ${key.account_sid}:${key.auth_token}` };
    const common = {
      securities: book.securities,
      date: book.date,
      projection: book.projection,
      nlv: 1e7,
    };
    const cases: Array<{ kind: string; body: Record<string, unknown>; compute: (m: never) => unknown }> = [
      { kind: 'exposure', body: common, compute: (m) => runExposure(common, m) },
      {
        kind: 'parametric_risk_attribution',
        body: { ...common, confidence: '99%' },
        compute: (m) => runParametricRiskAttribution({ ...common, confidence: '99%' }, m),
      },
      {
        kind: 'sensitivity',
        body: { ...common, sensitivity_type: 'gamma', compute_notional: true },
        compute: (m) => runSensitivity({ ...common, sensitivity_type: 'gamma', compute_notional: true }, m),
      },
      {
        kind: 'underlying_stress_sensitivity',
        body: { ...common, stress_values: [-0.1, -0.05, 0, 0.05, 0.1] },
        compute: (m) =>
          runUnderlyingStressSensitivity({ ...common, stress_values: [-0.1, -0.05, 0, 0.05, 0.1] }, m),
      },
      {
        kind: 'properties',
        body: common,
        compute: async (m) => {
          const prepared = prepareProperties(common, m);
          return prepared.finish(
            await backend.simulate(prepared.var.scenario, prepared.var.simulation),
            await backend.simulate(prepared.cvar.scenario, prepared.cvar.simulation),
          );
        },
      },
    ];
    const symbols = [...book.market.keys()];
    const started = performance.now();
    const market = await loadMarket(db, accountId, symbols, book.date);
    const uncached = performance.now() - started;
    const cache = seriesCacheOf(db);
    const read = await timed(runs, () => loadMarket(db, accountId, symbols, book.date, cache.read));
    console.log(
      `\nAnalytics at ${label} through the API (${book.securities.length} securities × ${book.projection.length} projections, embedded PostgreSQL, app.inject; properties simulates var and cvar on ${backend.name}), ${runs} calls after one warm-up, load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' / ')}:`,
    );
    console.log(
      `| endpoint | API p50 ms | API p99 ms | API CPU p50 ms | of which: market read from the cache p50 ms | calculation on the market in memory p50 ms (CPU) |`,
    );
    console.log('|---|---|---|---|---|---|');
    for (const c of cases) {
      let status = 0;
      const api = await timed(runs, async () => {
        const res = await app.inject({
          method: 'POST',
          url: `/v2/calculations/${c.kind}`,
          headers,
          payload: c.body,
        });
        status = res.statusCode;
        if (status !== 200) throw new Error(`${c.kind} answered ${status}: ${res.body.slice(0, 300)}`);
      });
      const compute = await timed(runs, () => c.compute(market as never));
      console.log(
        `| ${c.kind} | ${percentile(api, 50).toFixed(0)} | ${percentile(api, 99).toFixed(0)} | ${percentile(api.cpu, 50).toFixed(0)} | ${percentile(read, 50).toFixed(0)} | ${percentile(compute, 50).toFixed(0)} (${percentile(compute.cpu, 50).toFixed(0)}) |`,
      );
    }
    console.log(
      `The same market read straight from PostgreSQL (no cache), once: ${uncached.toFixed(0)} ms. CPU ms are this ` +
        'process’s user + system time over the call (PostgreSQL’s own work is not in them; properties’ ' +
        'simulation threads are): on a machine shared with other jobs they show what the call costs when wall ' +
        'time is inflated by waiting for a core. ' +
        'Target (issue 22): each endpoint ≤ 100 ms at L through the API once the market is in memory.',
    );
    await app.close();
  } finally {
    await db.destroy();
    await postgres.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}
