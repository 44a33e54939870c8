import path from 'node:path';
import { importMarketCsv } from '../../engine/market-data/csv-import';
import { parseServerTiming } from '../../engine/calculations/stage-timing';
import { useTestApp } from '../support/use-test-app';

/**
 * POST /v2/calculations/{marginal_tracking_error, backtest, backtest_statistics} (calc-methodology
 * §20, §21) on the shared real prices: the shapes, ids against inline books, both date forms and both
 * endpoints agreeing, the clients' loose booleans, each 400 with its message, the 404 of an unknown
 * portfolio, Server-Timing stages and the audit records.
 */
const MARKET = path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'market');
const DATE = '20221228';
const BOOK = [
  { id: 'p1', symbol: 'AAPL', quantity: 100 },
  { id: 'p2', symbol: 'JPM', quantity: 200 },
  { id: 'p3', symbol: 'XOM', quantity: 150 },
];
const BENCH = [
  { id: 'b1', symbol: 'SPY', quantity: 100 },
  { id: 'b2', symbol: 'AAPL', quantity: 20 },
];

describe('marginal tracking error and backtests through the API (§20, §21)', () => {
  const h = useTestApp({
    setUp: async ({ db }) => {
      await importMarketCsv(db, path.join(MARKET, 'sp500_index_1990_2022.csv'));
      await importMarketCsv(db, path.join(MARKET, 'spy_daily.csv'));
      await importMarketCsv(db, path.join(MARKET, 'us_stocks_daily.csv'), {
        columns: ['AAPL', 'JPM', 'XOM'],
      });
    },
  });
  const post = (kind: string, payload: object) => h.call('POST', `/v2/calculations/${kind}`, payload);

  test('marginal tracking error: the shape, Σ cte = te, Server-Timing stages', async () => {
    const res = await post('marginal_tracking_error', {
      portfolio1: { securities: BOOK, date: DATE },
      portfolio2: { securities: BENCH },
    });
    expect(res.statusCode).toBe(200);
    const body = res.json().marginal_tracking_error;
    expect(Object.keys(body).sort()).toEqual(
      ['base_currency', 'date', 'observations', 'results', 'te', 'unmapped_tickers', 'weekly'].sort(),
    );
    expect(body).toMatchObject({
      date: DATE,
      base_currency: 'USD',
      weekly: false,
      observations: 252,
      unmapped_tickers: [],
    });
    expect(body.results.map((r: { id: string }) => r.id)).toEqual(['p1', 'p2', 'p3', 'b1']);
    expect(body.results.reduce((s: number, r: { cte: number }) => s + r.cte, 0)).toBeCloseTo(body.te, 12);
    const stages = [...parseServerTiming(String(res.headers['server-timing'])).keys()];
    expect(stages).toEqual(
      expect.arrayContaining(['parse', 'checks', 'market', 'estimation', 'audit', 'serialize']),
    );
  });

  test('stored portfolios by id answer as their inline books; the clients’ "True"; an unknown id is 404', async () => {
    const store = async (name: string, securities: object[], date: string | null) => {
      const res = await h.call('POST', '/v2/portfolios', { name, securities, date });
      expect(res.statusCode).toBe(200);
      return res.json().portfolio.id as string;
    };
    const p1 = await store('Book', BOOK, DATE);
    const p2 = await store('Benchmark', BENCH, null);
    const byId = await post('marginal_tracking_error', {
      portfolio1: p1,
      portfolio2: p2,
      weekly: 'True',
      EWMA: 'True',
    });
    const inline = await post('marginal_tracking_error', {
      portfolio1: { securities: BOOK, date: DATE },
      portfolio2: { securities: BENCH },
      weekly: true,
      EWMA: true,
    });
    expect(byId.statusCode).toBe(200);
    expect(byId.json()).toEqual(inline.json());
    expect(byId.json().marginal_tracking_error.observations).toBe(52);
    const missing = await post('marginal_tracking_error', {
      portfolio1: p1,
      portfolio2: 'port_0000000000000000000000000',
    });
    expect(missing.statusCode).toBe(404);

    const audit = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, entity_type: 'Calculation', entity_id: p1 })
      .select('operation', 'status', 'activity');
    expect(audit).toEqual(
      expect.arrayContaining([
        {
          operation: 'EXECUTE',
          status: 'SUCCESS',
          activity: 'Ran marginal tracking error on portfolio Book',
        },
      ]),
    );

    const backtest = await post('backtest', { portfolio: p1, backtest_date1: '20220103' });
    const backtestById = await post('backtest', { portfolio_id: p1, backtest_date1: '20220103' });
    expect(backtest.statusCode).toBe(200);
    expect(backtestById.json()).toEqual(backtest.json());
  });

  test('backtest and backtest_statistics agree; both date forms; full and summary', async () => {
    const body = {
      securities: BOOK,
      date: DATE,
      backtest_periodicity: 'Weekly',
      projection_tickers: ['SPY'],
    };
    const full = await post('backtest', { ...body, backtest_date1: '20210104', backtest_date2: '20221228' });
    const dashed = await post('backtest', {
      ...body,
      backtest_date1: '2021-01-04',
      backtest_date2: '2022-12-28',
    });
    const statistics = await post('backtest_statistics', {
      ...body,
      backtest_date1: '20210104',
      backtest_date2: '20221228',
    });
    expect(full.statusCode).toBe(200);
    expect(dashed.json()).toEqual(full.json());
    const b = full.json().backtest;
    expect(b).toMatchObject({
      start: '20210104',
      end: '20221228',
      periodicity: 'weekly',
      base_currency: 'USD',
      benchmark_ticker: 'IND:SPX',
      rfrate_ticker: null,
      unmapped_tickers: [],
    });
    expect(b.periods).toBe(b.series.returns.length);
    expect(b.series.portfolio[0]).toBe(100);
    expect(b.statistics.projections[0].symbol).toBe('SPY');
    const s = statistics.json().backtest_statistics;
    expect(s.series).toBeUndefined();
    const { series: _series, ...withoutSeries } = b;
    expect(s).toEqual(withoutSeries);
    const summary = await post('backtest', {
      ...body,
      output_type: 'summary',
      user_id: 7,
      user_role: 'analyst',
      time_zone: 'EST',
    });
    expect(summary.json().backtest.series).toBeUndefined();
    const detailed = await post('backtest_statistics', { ...body, output_type: 'detailed' });
    expect(detailed.json().backtest_statistics.series.dates.length).toBeGreaterThan(3);
  });

  test('each 400 with its message, and nothing is audited as a success', async () => {
    const book = { securities: BOOK, date: DATE };
    const cases: Array<[string, object, string]> = [
      ['marginal_tracking_error', { portfolio2: book }, 'portfolio1 is required.'],
      [
        'marginal_tracking_error',
        { portfolio1: book, portfolio2: {} },
        'portfolio2 must be a portfolio id or an object with securities.',
      ],
      ['marginal_tracking_error', { portfolio1: book, portfolio2: book, nDays: 19 }, 'nDays must be'],
      [
        'marginal_tracking_error',
        { portfolio1: { securities: BOOK, date: '19900601' }, portfolio2: book },
        'nDays: the IND:SPX calendar holds only',
      ],
      [
        'marginal_tracking_error',
        { portfolio1: book, portfolio2: book, exponential_decay: 1 },
        'exponential_decay must be',
      ],
      ['marginal_tracking_error', { portfolio1: book, portfolio2: book, weekly: 'maybe' }, 'weekly must be'],
      [
        'marginal_tracking_error',
        { portfolio1: book, portfolio2: { securities: [{ id: 'x', symbol: 'AAPL' }] } },
        'portfolio2.securities[0].quantity',
      ],
      [
        'backtest',
        { ...book, backtest_date1: '20220301', backtest_date2: '20220301' },
        'backtest_date1 must be before backtest_date2.',
      ],
      [
        'backtest',
        { ...book, backtest_date1: '20210104', backtest_date2: '20210226', backtest_periodicity: 'monthly' },
        'fewer than 3 monthly periods from 20210104 to 20210226.',
      ],
      ['backtest', { ...book, backtest_date2: '20230105' }, 'backtest_date2 must not be after date.'],
      [
        'backtest',
        { ...book, backtest_benchmark_ticker: 'NOPE' },
        'backtest_benchmark_ticker: unknown symbol NOPE.',
      ],
      [
        'backtest_statistics',
        { ...book, backtest_rfrate_ticker: 'RATE:NONE' },
        'backtest_rfrate_ticker: unknown symbol RATE:NONE.',
      ],
      [
        'backtest',
        { ...book, projection_tickers: ['SPY', 'NOPE'] },
        'projection_tickers: unknown symbol NOPE.',
      ],
      [
        'backtest',
        { ...book, backtest_date1: '2022-02-30' },
        'backtest_date1 must be a date as YYYYMMDD or YYYY-MM-DD',
      ],
      [
        'backtest',
        { ...book, backtest_periodicity: 'hourly' },
        'backtest_periodicity must be daily, weekly or monthly',
      ],
      ['backtest', { ...book, output_type: 'all' }, 'output_type must be'],
      [
        'backtest',
        { portfolio: book, securities: BOOK },
        'portfolio is the whole book: do not combine it with portfolio_id or securities.',
      ],
      ['backtest', { date: DATE }, 'securities is required unless portfolio or portfolio_id is given.'],
      [
        'backtest',
        { securities: [{ id: 's', symbol: 'AAPL', quantity: -1 }], date: DATE },
        "portfolio: the book's value is",
      ],
    ];
    const answers = [];
    for (const [kind, payload] of cases) {
      const res = await post(kind, payload);
      answers.push({ status: res.statusCode, message: res.json().message as string });
    }
    expect(answers).toEqual(
      cases.map(([, , message]) => ({ status: 400, message: expect.stringContaining(message) })),
    );
  });
});
