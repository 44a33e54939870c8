/**
 * A stress test and a cvar attribution through the HTTP API, computed by CALC_BACKEND=gpujs, equal
 * to CALC_BACKEND=wasm's within the tolerance of docs/calculations.md ("The GPU's answers"). In the
 * ordinary run gpu.js has no adapter and runs its webasm mode; gpujs-lavapipe.test.ts runs this file
 * again with PAS_TEST_WEBGPU=lavapipe, where it runs in webgpu mode on Mesa's lavapipe.
 */
import path from 'node:path';
import { type SimulationEngine, startSimulationEngine } from '../../engine/calculations/simulation-engine';
import { importMarketCsv } from '../../engine/market-data/csv-import';
import { mergeSeries } from '../../engine/market-data/price-store';
import { normalAt, seedFromNumber } from '../../calc/random';
import { createTestApp, type TestApp } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

const ON_LAVAPIPE = process.env.PAS_TEST_WEBGPU === 'lavapipe';
const MARKET = path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'market');
const DATE = '20221228';
const BOOK = [
  { id: 'p1', symbol: 'AAPL', quantity: 100 },
  { id: 'p2', symbol: 'JPM', quantity: -200 },
  { id: 'p3', symbol: 'XOM', quantity: 150, currency: 'EUR' },
  { id: 'p4', symbol: 'WMT', quantity: 120 },
];

type Values = { projection: string; value: number }[];
type Row = Record<string, Values | string>;

describe(`the HTTP API with CALC_BACKEND=gpujs (${ON_LAVAPIPE ? 'webgpu on lavapipe' : 'no adapter: webasm'}) against wasm`, () => {
  const h = useTestApp({
    setUp: async ({ db }) => {
      await importMarketCsv(db, path.join(MARKET, 'sp500_index_1990_2022.csv'));
      await importMarketCsv(db, path.join(MARKET, 'us_stocks_daily.csv'), {
        columns: ['AAPL', 'JPM', 'XOM', 'WMT'],
      });
      // The shared data has no FX: a synthetic EURUSD random walk on the S&P's dates (0.5 % a day).
      const spx = (await db('price_series').where({ symbol: 'IND:SPX' }).first('dates')) as {
        dates: number[];
      };
      const seed = seedFromNumber(42);
      let rate = 1.1;
      const values = spx.dates.map((_, t) => (rate *= Math.exp(0.005 * normalAt(seed, t, 0))));
      await mergeSeries(db, 'FX:EURUSD', { dates: spx.dates, values }, 'test');
    },
  });

  const engines: Record<'gpujs' | 'wasm', { engine: SimulationEngine; app: TestApp }> = {} as never;
  beforeAll(async () => {
    for (const name of ['gpujs', 'wasm'] as const) {
      const engine = await startSimulationEngine({ calcBackend: name, calcThreads: 2 });
      engines[name] = { engine, app: await createTestApp(h.db, { simulation: engine }) };
    }
  }, 120_000);
  afterAll(async () => {
    for (const { engine, app } of Object.values(engines)) {
      await app.close();
      await engine.backend.close();
    }
  });

  const post = async (name: 'gpujs' | 'wasm', url: string, payload: object) => {
    const res = await engines[name].app.app.inject({
      method: 'POST',
      url,
      payload,
      headers: { authorization: h.account.bearer },
    });
    expect(res.statusCode).toBe(200);
    return res.json() as Record<string, { results: Row[] }>;
  };

  /** Every value of `sets` in gpujs's rows within 1e-4 of the largest of wasm's (f32 apart). */
  function expectNear(gpujs: Row[], wasm: Row[], sets: string[]): void {
    expect(gpujs.map((r) => r.id)).toEqual(wasm.map((r) => r.id));
    for (const set of sets) {
      const scale = Math.max(...wasm.flatMap((r) => (r[set] as Values).map((v) => Math.abs(v.value))));
      expect(scale).toBeGreaterThan(0);
      wasm.forEach((row, i) => {
        const mine = gpujs[i]![set] as Values;
        expect(mine.map((v) => v.projection)).toEqual((row[set] as Values).map((v) => v.projection));
        (row[set] as Values).forEach((v, j) =>
          expect(Math.abs(mine[j]!.value - v.value)).toBeLessThanOrEqual(1e-4 * scale),
        );
      });
    }
  }

  test('the health check names gpu.js and its mode (and, on lavapipe, warns it is no GPU)', async () => {
    const health = await engines.gpujs.app.app.inject({ method: 'GET', url: '/v2/health_check' });
    const backend = health.json().calculation_backend;
    expect(backend).toMatchObject({ name: 'gpujs', chosen_by: 'configured' });
    if (ON_LAVAPIPE) {
      expect(backend.detail).toMatch(
        /^gpu\.js webgpu on mesa software \(llvmpipe.*WARNING: a software adapter/,
      );
      console.log(`gpujs through the API on: ${backend.detail}`);
    } else {
      expect(backend.detail).toMatch(/^gpu\.js (webasm|cpu), one thread per path/);
    }
  });

  test('POST /v2/calculations/stress_test (an FX-denominated line, a short): ev and both cvars match wasm', async () => {
    const body = { securities: BOOK, date: DATE, magnitude: -0.1, horizon: 20 };
    const url = '/v2/calculations/stress_test';
    const [gpujs, wasm] = [await post('gpujs', url, body), await post('wasm', url, body)];
    expectNear(gpujs.stress_test!.results, wasm.stress_test!.results, ['ev', 'cvar_neg', 'cvar_pos']);
    // The same request on the same backend: the same bits.
    expect(await post('gpujs', url, body)).toEqual(gpujs);
  });

  test('POST /v2/calculations/risk_attribution with risk_measure cvar: each mctr matches wasm', async () => {
    const body = { securities: BOOK, date: DATE, risk_measure: 'cvar', confidence: '95%' };
    const url = '/v2/calculations/risk_attribution';
    const [gpujs, wasm] = [await post('gpujs', url, body), await post('wasm', url, body)];
    expectNear(gpujs.risk_attribution!.results, wasm.risk_attribution!.results, ['mctr']);
  });
});
