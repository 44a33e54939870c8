import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type TSchema, Type } from '@sinclair/typebox';
import fastJsonStringify from 'fast-json-stringify';
import { RiskAttribution, StressTest } from '../../api/routes/calculations';
import {
  Exposure,
  ParametricRiskAttribution,
  Properties,
  Sensitivity,
  UnderlyingStressSensitivity,
} from '../../api/schemas/analytics';
import { dayNumber } from '../../calc/market-data';
import { seriesCacheOf } from '../../engine/calculations/series-cache';
import { parseServerTiming } from '../../engine/calculations/stage-timing';
import { importMarketCsv } from '../../engine/market-data/csv-import';
import { yyyymmdd } from '../../engine/market-data/price-store';
import { connectDatabase, type Database } from '../../engine/platform/database';
import { pas } from '../support/pas-cli';
import { createTestApp, type TestApp } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

/**
 * The request path around the kernel (issue 20): every calculation endpoint names its stages in a
 * `Server-Timing` header; the price series and what is derived from them (window, factor model) are
 * kept in memory per process, and a price import by another process (`pas market import`) changes
 * the next answer of an app that had them in memory; the answer from memory equals a cold one.
 */
const MARKET = path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'market');
const DATE = '20221228';
const BOOK = [
  { id: 'p1', symbol: 'AAPL', quantity: 100 },
  { id: 'p2', symbol: 'JPM', quantity: 200 },
  { id: 'p3', symbol: 'XOM', quantity: -150 },
  { id: 'p4', symbol: 'AAPL 20230317 C130', quantity: 3 },
];

describe('calculation request path: stage timing and the in-memory market', () => {
  const h = useTestApp({
    setUp: async ({ db }) => {
      await importMarketCsv(db, path.join(MARKET, 'sp500_index_1990_2022.csv'));
      await importMarketCsv(db, path.join(MARKET, 'us_stocks_daily.csv'), {
        columns: ['AAPL', 'JPM', 'XOM'],
      });
    },
  });

  /** Another app on its own pool: another process's series cache and memo. */
  async function otherApp(): Promise<{ db: Database; t: TestApp; close(): Promise<void> }> {
    const db = connectDatabase(h.databaseUrl, 4);
    const t = await createTestApp(db);
    return {
      db,
      t,
      close: async () => {
        await t.close();
        await db.destroy();
      },
    };
  }

  const post = (t: TestApp, kind: string, payload: object) =>
    t.app.inject({
      method: 'POST',
      url: `/v2/calculations/${kind}`,
      payload,
      headers: { authorization: h.account.bearer },
    });

  const common = { securities: BOOK, date: DATE, projection: ['IND:SPX'] };
  const CASES: Array<{ kind: string; body: object; stages: string[] }> = [
    {
      kind: 'stress_test',
      body: { ...common, magnitude: -0.1 },
      stages: ['parse', 'checks', 'market', 'estimation', 'simulation', 'report', 'audit', 'serialize'],
    },
    {
      kind: 'risk_attribution',
      body: { ...common, risk_measure: 'cvar' },
      stages: ['parse', 'checks', 'market', 'estimation', 'simulation', 'report', 'audit', 'serialize'],
    },
    {
      kind: 'risk_attribution',
      body: { ...common, risk_measure: 'vol' },
      stages: ['parse', 'checks', 'market', 'estimation', 'report', 'audit', 'serialize'],
    },
    ...['exposure', 'parametric_risk_attribution', 'sensitivity'].map((kind) => ({
      kind,
      body: common,
      stages: ['parse', 'checks', 'market', 'estimation', 'audit', 'serialize'],
    })),
    {
      kind: 'underlying_stress_sensitivity',
      body: { ...common, stress_values: [-0.1, 0.1] },
      stages: ['parse', 'checks', 'market', 'estimation', 'audit', 'serialize'],
    },
    {
      kind: 'properties',
      body: common,
      stages: ['parse', 'checks', 'market', 'estimation', 'simulation', 'audit', 'serialize'],
    },
  ];

  const RESPONSES: Record<string, TSchema> = {
    stress_test: StressTest,
    risk_attribution: RiskAttribution,
    exposure: Exposure,
    parametric_risk_attribution: ParametricRiskAttribution,
    sensitivity: Sensitivity,
    underlying_stress_sensitivity: UnderlyingStressSensitivity,
    properties: Properties,
  };

  test.each(CASES)(
    '$kind answers a Server-Timing header with its stages, in order, and exactly its schema',
    async ({ kind, body, stages }) => {
      const res = await post(h.t, kind, body);
      expect(res.statusCode).toBe(200);
      // Written by JSON.stringify (api/http/server-timing.ts): exactly the schema's fields, as the
      // schema-compiled serializer (which drops any other) would write them.
      const strict = fastJsonStringify(Type.Object({ [kind]: RESPONSES[kind]! }) as never);
      expect(JSON.parse(strict(res.json()))).toEqual(res.json());
      const header = res.headers['server-timing'];
      expect(typeof header).toBe('string');
      const timing = parseServerTiming(header as string);
      expect([...timing.keys()]).toEqual(stages);
      for (const ms of timing.values()) {
        expect(Number.isFinite(ms)).toBe(true);
        expect(ms).toBeGreaterThanOrEqual(0);
      }
    },
  );

  test('a request refused by its checks says which stages ran before the 400', async () => {
    const res = await post(h.t, 'stress_test', { ...common, magnitude: -0.1, shock: 'NOPE' });
    expect(res.statusCode).toBe(400);
    expect([...parseServerTiming(res.headers['server-timing'] as string).keys()]).toEqual([
      'parse',
      'checks',
      'market',
      'estimation',
      'serialize',
    ]);
    // Routes that are not calculations have no such header.
    const list = await h.app.inject({
      method: 'GET',
      url: '/v2/portfolios',
      headers: { authorization: h.account.bearer },
    });
    expect(list.headers['server-timing']).toBeUndefined();
  });

  test('an import by another process changes the next answer of an app that held the market in memory; memory equals cold', async () => {
    const warm = await otherApp();
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pas-speed-path-'));
    try {
      const bodies = [
        { kind: 'risk_attribution', body: { ...common, risk_measure: 'vol' } },
        { kind: 'parametric_risk_attribution', body: common },
        { kind: 'stress_test', body: { ...common, magnitude: -0.1 } },
      ];
      const answers = async (t: TestApp) => {
        const out: unknown[] = [];
        for (const { kind, body } of bodies) {
          const res = await post(t, kind, body);
          expect(res.statusCode).toBe(200);
          out.push(res.json());
        }
        return out;
      };
      const before = await answers(warm.t);
      // The second time from memory: the series cache and the derived values (window, model).
      expect(seriesCacheOf(warm.db).size().derived).toBeGreaterThan(0);
      expect(await answers(warm.t)).toEqual(before);

      // Another process (the real CLI) rewrites JPM's last 300 prices up to DATE: every other day +3 %.
      const row = (await h.db('price_series').where({ symbol: 'JPM' }).first('dates', 'values')) as {
        dates: number[];
        values: number[];
      };
      const last = row.dates.filter((d) => d <= dayNumber(DATE)).length;
      const lines = ['date,JPM'];
      for (let i = last - 300; i < last; i++) {
        const d = yyyymmdd(row.dates[i]!);
        const value = row.values[i]! * (i % 2 === 0 ? 1.03 : 1);
        lines.push(`${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6)},${value}`);
      }
      const file = path.join(dir, 'jpm.csv');
      await writeFile(file, lines.join('\n') + '\n');
      const imported = pas(h.databaseUrl, 'market', 'import', file);
      expect(imported.stderr).toBe('');
      expect(imported.status).toBe(0);

      const after = await answers(warm.t);
      after.forEach((answer, i) => expect(answer).not.toEqual(before[i]));
      // A cold process (empty caches) gives exactly what the warm one gives from memory.
      const cold = await otherApp();
      try {
        expect(await answers(cold.t)).toEqual(after);
        expect(await answers(warm.t)).toEqual(after);
      } finally {
        await cold.close();
      }
    } finally {
      await warm.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
