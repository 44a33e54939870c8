/**
 * Aggregation (methodology §14) and filters (§15) through both calculation endpoints, on the shared
 * real prices with a small securities master and volume series written for this suite.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { importMarketCsv } from '../../engine/market-data/csv-import';
import { mergeSeries } from '../../engine/market-data/price-store';
import { importSecuritiesCsv } from '../../engine/market-data/securities-master';
import { useTestApp } from '../support/use-test-app';

const MARKET = path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'market');
const DATE = '20221228';
/** Long AAPL, JPM, WMT; short XOM; PFE long with no master row (its attributes are missing). */
const BOOK = [
  { id: 'p1', symbol: 'AAPL', quantity: 100, label: 'core' },
  { id: 'p2', symbol: 'JPM', quantity: 200, label: 'core' },
  { id: 'p3', symbol: 'XOM', quantity: -150, label: 'hedge' },
  { id: 'p4', symbol: 'WMT', quantity: 120 },
  { id: 'p5', symbol: 'PFE', quantity: 300, label: 'hedge' },
];
const MASTER = [
  'symbol,name,currency,instrument_type,country,sector,market_cap,rating,dividend_yield,esg_score',
  'AAPL,Apple,USD,EQUITY,US,Technology,2100000000000,AA+,0.6,71',
  'JPM,JPMorgan,USD,EQUITY,US,Financials,390000000000,A-,3.1,45',
  'XOM,Exxon,USD,EQUITY,US,Energy,450000000000,AA-,3.4,30',
  'WMT,Walmart,USD,EQUITY,US,Consumer Staples,150000000000,AA,1.6,55',
].join('\n');

type Values = Array<{ projection: string; value: number }>;
type Row = { id: string } & Record<string, Values | string>;
const figures = ['ev', 'cvar_neg', 'cvar_pos'] as const;

describe('calculation aggregation and filters', () => {
  let dir = '';
  const h = useTestApp({
    setUp: async ({ db }) => {
      await importMarketCsv(db, path.join(MARKET, 'sp500_index_1990_2022.csv'));
      await importMarketCsv(db, path.join(MARKET, 'us_stocks_daily.csv'), {
        columns: ['AAPL', 'JPM', 'XOM', 'WMT', 'PFE'],
      });
      dir = await mkdtemp(path.join(os.tmpdir(), 'calc-reporting-'));
      await writeFile(path.join(dir, 'securities.csv'), MASTER);
      await importSecuritiesCsv(db, path.join(dir, 'securities.csv'));
      // 20-day volumes ending at DATE: AAPL trades 800 a day (100 shares is 62.5% of 0.2 × ADV20),
      // JPM 1,000,000 (0.1%); the others have no volume series.
      const spx = (await db('price_series').where({ symbol: 'IND:SPX' }).first('dates')) as {
        dates: number[];
      };
      const dates = spx.dates.filter((d) => d <= 19354).slice(-30);
      await mergeSeries(db, 'VOL:AAPL', { dates, values: dates.map(() => 800) }, 'test');
      await mergeSeries(db, 'VOL:JPM', { dates, values: dates.map(() => 1_000_000) }, 'test');
    },
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const post = (kind: string, payload: object) =>
    h.app.inject({
      method: 'POST',
      url: `/v2/calculations/${kind}`,
      payload,
      headers: { authorization: h.account.bearer },
    });
  const run = async (kind: 'stress_test' | 'risk_attribution', extra: object): Promise<Row[]> => {
    const payload = { securities: BOOK, date: DATE, ...(kind === 'stress_test' ? { magnitude: -0.1 } : {}) };
    const res = await post(kind, { ...payload, ...extra });
    expect(res.statusCode).toBe(200);
    return res.json()[kind].results as Row[];
  };
  const sumOf = (rows: Row[], ids: string[], figure: string, projection: string) =>
    rows
      .filter((r) => ids.includes(r.id))
      .reduce((s, r) => s + (r[figure] as Values).find((v) => v.projection === projection)!.value, 0);

  describe.each<['stress_test' | 'risk_attribution', readonly string[], object]>([
    ['stress_test', figures, {}],
    ['risk_attribution', ['mctr'], {}],
    ['risk_attribution', ['mctr'], { risk_measure: 'cvar' }],
  ])('%s %j %j', (kind, fields, options) => {
    test.each<[string, Record<string, string[]>]>([
      [
        'sector',
        {
          'Consumer Staples': ['p4'],
          Energy: ['p3'],
          Financials: ['p2'],
          Technology: ['p1'],
          Unclassified: ['p5'],
        },
      ],
      ['custom', { Unlabeled: ['p4'], core: ['p1', 'p2'], hedge: ['p3', 'p5'] }],
      ['exposure', { long: ['p1', 'p2', 'p4', 'p5'], short: ['p3'] }],
      ['market_capitalization', { Large: ['p4'], Mega: ['p1', 'p2', 'p3'], Unclassified: ['p5'] }],
      ['implied_rating', { A: ['p2'], AA: ['p1', 'p3', 'p4'], 'Not rated': ['p5'] }],
      ['liquidity', { '0-5%': ['p2'], '50-100%': ['p1'], Unclassified: ['p3', 'p4', 'p5'] }],
      ['currency', { USD: ['p1', 'p2', 'p3', 'p4', 'p5'] }],
      ['security_type_refined', { 'EQUITY long': ['p1', 'p2', 'p4', 'p5'], 'EQUITY short': ['p3'] }],
    ])(
      'aggregation %s: one element per group, sorted, each the exact sum of its positions',
      async (aggregation, groups) => {
        const positions = await run(kind, options);
        const grouped = await run(kind, { ...options, aggregation });
        expect(grouped.map((g) => g.id)).toEqual(Object.keys(groups));
        for (const group of grouped) {
          for (const field of fields) {
            for (const { projection, value } of group[field] as Values) {
              expect(value).toBe(sumOf(positions, groups[group.id]!, field, projection));
            }
          }
        }
      },
    );

    test('a filter reports only the matching positions; the numbers are those of the whole run', async () => {
      const positions = await run(kind, options);
      const shorts = await run(kind, { ...options, filter: "exposure('short')" });
      expect(shorts).toEqual(positions.filter((p) => p.id === 'p3'));
      const liquid = await run(kind, { ...options, filter: "liquidity('0-5%') OR liquidity('50-100%')" });
      expect(liquid.map((p) => p.id)).toEqual(['p1', 'p2']);
      const notLong = await run(kind, {
        ...options,
        filter: "not(exposure('long')) and currency('domestic securities')",
      });
      expect(notLong.map((p) => p.id)).toEqual(['p3']);
    });

    test('a filter matching no position reports the whole portfolio; an empty filter is none', async () => {
      const positions = await run(kind, options);
      expect(await run(kind, { ...options, filter: "currency('foreign securities')" })).toEqual(positions);
      expect(await run(kind, { ...options, filter: '' })).toEqual(positions);
      expect(await run(kind, { ...options, filter: null })).toEqual(positions);
    });

    test('filter and aggregation together: groups of the matching positions only', async () => {
      const positions = await run(kind, options);
      const grouped = await run(kind, { ...options, filter: "exposure('long')", aggregation: 'custom' });
      expect(grouped.map((g) => g.id)).toEqual(['Unlabeled', 'core', 'hedge']);
      const hedge = grouped.find((g) => g.id === 'hedge')!;
      for (const field of fields) {
        for (const { projection, value } of hedge[field] as Values) {
          expect(value).toBe(sumOf(positions, ['p5'], field, projection));
        }
      }
    });
  });

  test.each([
    [
      "exposure('long'",
      'filter: expected ")" to close exposure(, found the end of the expression at position 16.',
    ],
    [
      "sector('Energy')",
      'filter: unknown function "sector" (one of currency, exposure, type, liquidity) at position 1.',
    ],
    [
      "exposure('longish')",
      "filter: exposure does not take 'longish' (one of 'long', 'short') at position 10.",
    ],
  ])(
    'a malformed filter %j is a 400 naming the position, on both endpoints, before any work',
    async (filter, message) => {
      for (const kind of ['stress_test', 'risk_attribution']) {
        const res = await post(kind, { securities: BOOK, date: DATE, magnitude: -0.1, filter });
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({ code: 400, message });
      }
    },
  );

  test('an unknown aggregation is a 400 naming the allowed values', async () => {
    const res = await post('risk_attribution', { securities: BOOK, date: DATE, aggregation: 'planet' });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/^aggregation must be one of .*"sector"/);
  });
});
