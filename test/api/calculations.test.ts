import path from 'node:path';
import { blackScholes } from '../../calc/black-scholes';
import { normalAt, seedFromNumber } from '../../calc/random';
import { startSimulationEngine } from '../../engine/calculations/simulation-engine';
import { importMarketCsv } from '../../engine/market-data/csv-import';
import { mergeSeries } from '../../engine/market-data/price-store';
import { createTestApp } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

/** The shared real data, read in place (never copied into the repository). */
const MARKET = path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'market');
const DATE = '20221228';
const BOOK = [
  { id: 'p1', symbol: 'AAPL', quantity: 100 },
  { id: 'p2', symbol: 'JPM', quantity: 200 },
  { id: 'p3', symbol: 'XOM', quantity: 150 },
  { id: 'p4', symbol: 'WMT', quantity: 120 },
];

type Values = Array<{ projection: string; value: number }>;
const total = (values: Values) => values.reduce((s, v) => s + v.value, 0);

describe('calculations', () => {
  const h = useTestApp({
    setUp: async ({ db }) => {
      await importMarketCsv(db, path.join(MARKET, 'sp500_index_1990_2022.csv'));
      await importMarketCsv(db, path.join(MARKET, 'us_stocks_daily.csv'), {
        columns: ['AAPL', 'JPM', 'XOM', 'WMT', 'PFE'],
      });
      // The shared data has no FX: a synthetic EURUSD random walk on the S&P's dates (0.5% a day).
      const spx = (await db('price_series').where({ symbol: 'IND:SPX' }).first('dates')) as {
        dates: number[];
      };
      const seed = seedFromNumber(42);
      let rate = 1.1;
      const values = spx.dates.map((_, t) => (rate *= Math.exp(0.005 * normalAt(seed, t, 0))));
      await mergeSeries(db, 'FX:EURUSD', { dates: spx.dates, values }, 'test');
      // And a 10-year yield in percent moving by ±5 basis points a day.
      let level = 4;
      const yields = spx.dates.map((_, t) => (level += 0.05 * normalAt(seed, t, 1)));
      await mergeSeries(db, 'RATE:US10Y', { dates: spx.dates, values: yields }, 'test');
    },
  });

  const post = (url: string, payload: object) =>
    h.app.inject({ method: 'POST', url, payload, headers: { authorization: h.account.bearer } });
  const stress = (payload: object) => post('/v2/calculations/stress_test', payload);
  const attribution = (payload: object) => post('/v2/calculations/risk_attribution', payload);

  /** Daily log returns of a stored series up to DATE, newest last. */
  async function logReturns(symbol: string): Promise<Map<number, number>> {
    const row = (await h.db('price_series').where({ symbol }).first('dates', 'values')) as {
      dates: number[];
      values: number[];
    };
    const out = new Map<number, number>();
    for (let i = 1; i < row.dates.length; i++) {
      if (row.dates[i]! <= 19354) out.set(row.dates[i]!, Math.log(row.values[i]! / row.values[i - 1]!));
    }
    return out;
  }

  test('S&P −10%: EV close to the beta-weighted shock; the exact shape of the spec', async () => {
    const res = await stress({ securities: BOOK, date: DATE, magnitude: -0.1 });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Object.keys(body)).toEqual(['stress_test']);
    const st = body.stress_test;
    expect(Object.keys(st).sort()).toEqual(
      [
        'dynamic_range',
        'extrapolated',
        'implied_horizon',
        'implied_magnitudes',
        'magnitude',
        'out_of_range',
        'results',
        'unmapped_tickers',
      ].sort(),
    );
    expect(st).toMatchObject({ magnitude: -0.1, unmapped_tickers: [], implied_horizon: 5 });
    expect(st.implied_magnitudes).toHaveLength(1);
    // The projection is the shocked index itself: its implied move is the shock.
    expect(st.implied_magnitudes[0]).toBeCloseTo(-0.1, 6);
    expect(st.dynamic_range).toHaveLength(2);
    expect(st.dynamic_range[0]).toBeLessThan(0);
    expect(st.dynamic_range[1]).toBeGreaterThan(0);
    expect(st.results.map((r: { id: string }) => r.id)).toEqual(['p1', 'p2', 'p3', 'p4']);
    for (const r of st.results) {
      expect(Object.keys(r).sort()).toEqual(['cvar_neg', 'cvar_pos', 'ev', 'id']);
      for (const key of ['ev', 'cvar_neg', 'cvar_pos'] as const) {
        expect(r[key].map((v: { projection: string }) => v.projection)).toEqual(['IND:SPX', 'residual']);
      }
    }

    // Expected: Σ w_i β_i × shock, with plain (unweighted) 5-year OLS betas of daily log returns. The
    // service's betas are EWMA-weighted and its P&L is not linear, so the bound is loose (±35%).
    const spx = await logReturns('IND:SPX');
    const last = await h
      .db('price_series')
      .whereIn('symbol', ['AAPL', 'JPM', 'XOM', 'WMT'])
      .select('symbol', 'dates', 'values');
    let expected = 0;
    let nlv = 0;
    const exposures: Array<[string, number]> = [];
    for (const p of BOOK) {
      const row = last.find((r: { symbol: string }) => r.symbol === p.symbol) as {
        dates: number[];
        values: number[];
      };
      const i = row.dates.findLastIndex((d) => d <= 19354);
      exposures.push([p.symbol, p.quantity * row.values[i]!]);
      nlv += p.quantity * row.values[i]!;
    }
    for (const [symbol, exposure] of exposures) {
      const own = await logReturns(symbol);
      const pairs = [...own].filter(([d]) => spx.has(d)).slice(-1260);
      const xs = pairs.map(([d]) => spx.get(d)!);
      const ys = pairs.map(([, r]) => r);
      const mx = xs.reduce((a, b) => a + b) / xs.length;
      const my = ys.reduce((a, b) => a + b) / ys.length;
      let sxy = 0;
      let sxx = 0;
      xs.forEach((x, k) => {
        sxy += (x - mx) * (ys[k]! - my);
        sxx += (x - mx) ** 2;
      });
      expected += (exposure / nlv) * (sxy / sxx) * -0.1;
    }
    const ev = st.results.reduce((s: number, r: { ev: Values }) => s + total(r.ev), 0);
    expect(expected).toBeLessThan(-0.05);
    expect(ev).toBeLessThan(expected * 0.65);
    expect(ev).toBeGreaterThan(expected * 1.35);
    // The tails straddle the expectation.
    const cvarNeg = st.results.reduce((s: number, r: { cvar_neg: Values }) => s + total(r.cvar_neg), 0);
    const cvarPos = st.results.reduce((s: number, r: { cvar_pos: Values }) => s + total(r.cvar_pos), 0);
    expect(cvarNeg).toBeLessThan(ev);
    expect(cvarPos).toBeGreaterThan(ev);
  });

  test('unknown symbols land in unmapped_tickers and out of results', async () => {
    const res = await stress({
      securities: [...BOOK.slice(0, 2), { id: 'x', symbol: 'NOPE', quantity: 10, market_price: 5 }],
      date: DATE,
      magnitude: -0.1,
      confidence: '99%',
    });
    expect(res.statusCode).toBe(200);
    const st = res.json().stress_test;
    expect(st.unmapped_tickers).toEqual(['NOPE']);
    expect(st.results.map((r: { id: string }) => r.id)).toEqual(['p1', 'p2']);
  });

  test('horizon null: the smallest horizon that holds the magnitude, so it is not extrapolated', async () => {
    const res = await stress({ securities: BOOK.slice(0, 1), date: DATE, magnitude: -0.25, horizon: null });
    expect(res.statusCode).toBe(200);
    const st = res.json().stress_test;
    expect(st.implied_horizon).toBeGreaterThan(5);
    expect(st.extrapolated).toBe(false);
    expect(st.dynamic_range[0]).toBeLessThanOrEqual(-0.25);
  });

  test('portfolio_id: the stored book, date and nlv give the very numbers of the same body', async () => {
    const created = await h.app.inject({
      method: 'POST',
      url: '/v2/portfolios',
      headers: { authorization: h.account.bearer },
      payload: { name: 'Stress book', date: DATE, securities: BOOK, workspace: 'desk' },
    });
    expect(created.statusCode).toBe(200);
    const id = created.json().portfolio.id;
    const viaPortfolio = await stress({ portfolio_id: id, workspace: 'desk', magnitude: -0.1 });
    expect(viaPortfolio.statusCode).toBe(200);
    const viaBody = await stress({ securities: BOOK, date: DATE, magnitude: -0.1 });
    expect(viaPortfolio.json()).toEqual(viaBody.json());
    // The workspace may come as a query parameter too; in another workspace it is not found.
    const viaQuery = await post('/v2/calculations/risk_attribution?workspace=desk', { portfolio_id: id });
    expect(viaQuery.statusCode).toBe(200);
    const missing = await stress({ portfolio_id: id, magnitude: -0.1 });
    expect(missing.statusCode).toBe(404);

    const audit = await h
      .db('audit_logs')
      .where({ account_id: h.account.accountId, entity_type: 'Calculation' })
      .orderBy('created_at')
      .select('operation', 'status', 'entity_id', 'entity_name', 'activity', 'workspace');
    expect(audit).toEqual(
      expect.arrayContaining([
        {
          operation: 'EXECUTE',
          status: 'SUCCESS',
          entity_id: id,
          entity_name: 'Stress book',
          activity: 'Ran stress test on portfolio Stress book',
          workspace: 'desk',
        },
        {
          operation: 'EXECUTE',
          status: 'SUCCESS',
          entity_id: null,
          entity_name: 'stress_test',
          activity: 'Ran stress test on 4 securities',
          workspace: null,
        },
        expect.objectContaining({ operation: 'EXECUTE', status: 'ERROR', entity_id: null }),
      ]),
    );
  });

  test('no look-ahead: rewriting every price after the date changes nothing', async () => {
    const request = { securities: BOOK.slice(0, 2), date: '20191231', magnitude: -0.05 };
    const before = (await stress(request)).json();
    const row = (await h.db('price_series').where({ symbol: 'AAPL' }).first('dates', 'values')) as {
      dates: number[];
      values: number[];
    };
    const cut = 18261; // 2019-12-31
    const scrambled = row.values.map((v, i) => (row.dates[i]! > cut ? v * (1 + (i % 7) / 10) : v));
    await h.db('price_series').where({ symbol: 'AAPL' }).update({ values: scrambled });
    try {
      expect((await stress(request)).json()).toEqual(before);
    } finally {
      await h.db('price_series').where({ symbol: 'AAPL' }).update({ values: row.values });
    }
  });

  test.each(['vol', 'var', 'cvar'])(
    'risk attribution %s: shape and a sum of the right sign',
    async (measure) => {
      const res = await attribution({ securities: BOOK, date: DATE, risk_measure: measure });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(Object.keys(body)).toEqual(['risk_attribution']);
      expect(Object.keys(body.risk_attribution).sort()).toEqual(['results', 'unmapped_tickers']);
      const { results } = body.risk_attribution;
      expect(results.map((r: { id: string }) => r.id)).toEqual(['p1', 'p2', 'p3', 'p4']);
      for (const r of results) {
        expect(Object.keys(r).sort()).toEqual(['id', 'mctr']);
        expect(r.mctr.map((v: { projection: string }) => v.projection)).toEqual(['IND:SPX', 'residual']);
      }
      const sum = results.reduce((s: number, r: { mctr: Values }) => s + total(r.mctr), 0);
      // An annualised vol of a diversified long book in 2022 is 15–60%; VaR and CVaR are losses.
      if (measure === 'vol') {
        expect(sum).toBeGreaterThan(0.15);
        expect(sum).toBeLessThan(0.6);
      } else {
        expect(sum).toBeLessThan(0);
        expect(sum).toBeGreaterThan(-0.3);
      }
    },
  );

  test('cvar is a deeper loss than var at the same confidence', async () => {
    const sumOf = async (risk_measure: string) => {
      const { results } = (
        await attribution({ securities: BOOK, date: DATE, risk_measure, confidence: '95%' })
      ).json().risk_attribution;
      return results.reduce((s: number, r: { mctr: Values }) => s + total(r.mctr), 0);
    };
    expect(await sumOf('cvar')).toBeLessThan(await sumOf('var'));
  });

  const securities = BOOK.slice(0, 1);
  const base = { securities, date: DATE, magnitude: -0.1 };
  test.each<[string, object, string]>([
    ['magnitude missing', { securities }, 'magnitude is required.'],
    ['magnitude not a number', { ...base, magnitude: '-0.1' }, 'magnitude must be a number.'],
    [
      'magnitude -100%',
      { ...base, magnitude: -1 },
      'magnitude must be a decimal shock greater than -1 (-0.10 for -10%).',
    ],
    ['securities missing', { magnitude: -0.1 }, 'securities is required unless portfolio_id is given.'],
    [
      'securities and portfolio_id null',
      { securities: null, portfolio_id: null, magnitude: -0.1 },
      'securities is required unless portfolio_id is given.',
    ],
    [
      'magnitude -1 on the default shock (shock null)',
      { ...base, shock: null, magnitude: -1 },
      'magnitude must be a decimal shock greater than -1 (-0.10 for -10%).',
    ],
    ['securities not an array', { ...base, securities: {} }, 'securities must be an array or null.'],
    [
      'security without quantity',
      { ...base, securities: [{ id: 'a', symbol: 'AAPL' }] },
      'securities[0].quantity is required.',
    ],
    ['date malformed', { ...base, date: '2022-12-28' }, 'date must be a date in the format YYYYMMDD.'],
    ['date impossible', { ...base, date: '20220230' }, 'date must be a date in the format YYYYMMDD.'],
    [
      'base_currency malformed',
      { ...base, base_currency: 'usd' },
      'base_currency must be a 3-letter ISO 4217 currency code.',
    ],
    ['nlv not a number', { ...base, nlv: 'lots' }, 'nlv must be a number or null.'],
    ['horizon 10', { ...base, horizon: 10 }, 'horizon must be one of 1, 5, 20, 60, null.'],
    ['sampling 2', { ...base, sampling: 2 }, 'sampling must be one of 1, 5, null.'],
    ['projection empty', { ...base, projection: [] }, 'projection must hold at least 1 item.'],
    ['projection not symbols', { ...base, projection: 'IND:SPX' }, 'projection must be an array or null.'],
    [
      'projection over 15',
      { ...base, projection: Array.from({ length: 16 }, (_, i) => `S${i}`) },
      'projection must hold at most 15 items.',
    ],
    [
      'projection twice',
      { ...base, projection: ['IND:SPX', 'IND:SPX'] },
      'projection must not hold the same value twice (items 0 and 1).',
    ],
    [
      'volatility_half_life 3',
      { ...base, volatility_half_life: 3 },
      'volatility_half_life must be one of 0, 2, 6, 12, 24, 48, null.',
    ],
    [
      'correlation_half_life 36',
      { ...base, correlation_half_life: 36 },
      'correlation_half_life must be one of 0, 2, 6, 12, 24, 48, null.',
    ],
    ['shock empty', { ...base, shock: '' }, 'shock must not be empty.'],
    [
      'confidence 80%',
      { ...base, confidence: '80%' },
      'confidence must be one of "1sigma", "2sigma", "3sigma", "85%", "90%", "95%", "97%", "99%", null.',
    ],
    [
      'aggregation unknown',
      { ...base, aggregation: 'planet' },
      expect.stringMatching(/^aggregation must be one of "custom", "position", /) as unknown as string,
    ],
    ['portfolio_id not a string', { ...base, portfolio_id: 7 }, 'portfolio_id must be a string or null.'],
    ['shock unknown (from calc/)', { ...base, shock: 'NOPE' }, 'shock: unknown symbol NOPE.'],
    [
      'projection without data (from calc/)',
      { ...base, projection: ['NOPE'] },
      'projection: no price series for NOPE.',
    ],
    [
      'too many securities without nlv',
      {
        ...base,
        securities: Array.from({ length: 251 }, (_, i) => ({ id: `s${i}`, symbol: 'AAPL', quantity: 1 })),
      },
      'At most 250 securities are allowed without nlv (up to 3000 with nlv), got 251.',
    ],
    [
      'too many securities with nlv',
      {
        ...base,
        nlv: 1e6,
        securities: Array.from({ length: 3001 }, (_, i) => ({ id: `s${i}`, symbol: 'AAPL', quantity: 1 })),
      },
      'securities must hold at most 3000 items.',
    ],
    [
      'forecast years 0',
      { ...base, forecasts: [{ symbol: 'AAPL', years: 0, targets: [200], probabilities: [1] }] },
      'forecasts[0].years must be a number of years greater than 0.',
    ],
    [
      'forecast without targets',
      { ...base, forecasts: [{ symbol: 'AAPL', years: 1, probabilities: [1] }] },
      'forecasts[0].targets is required.',
    ],
    [
      'forecast probability above 1',
      { ...base, forecasts: [{ symbol: 'AAPL', years: 1, targets: [200, 100], probabilities: [1.5, -0.5] }] },
      'forecasts[0].probabilities[0] must be a probability from 0 to 1.',
    ],
    [
      'forecast target not a price',
      { ...base, forecasts: [{ symbol: 'AAPL', years: 1, targets: [-3], probabilities: [1] }] },
      'forecasts[0].targets[0] must be a price greater than 0.',
    ],
    [
      'surface without volatilities',
      { ...base, volatility_surface: [{ symbol: 'AAPL', time_to_expiration: [0.5], moneyness: [1] }] },
      'volatility_surface[0].volatilities is required.',
    ],
    [
      'surface moneyness 0',
      {
        ...base,
        volatility_surface: [
          { symbol: 'AAPL', time_to_expiration: [0.5], moneyness: [0], volatilities: [[0.2]] },
        ],
      },
      'volatility_surface[0].moneyness[0] must be a ratio K/S greater than 0.',
    ],
    ['drift not a boolean', { ...base, drift: 'sometimes' }, 'drift must be true or false (or null).'],
    ['filter not a string', { ...base, filter: 5 }, 'filter must be a string or null.'],
  ])('stress test, %s → 400 naming the parameter', async (_case, payload, message) => {
    const res = await stress(payload);
    expect(res.json()).toEqual({ code: 400, message });
    expect(res.statusCode).toBe(400);
  });

  test.each<[string, object, string]>([
    ['horizon null', { horizon: null }, 'horizon must be one of 1, 5, 20, 60.'],
    ['risk_measure es', { risk_measure: 'es' }, 'risk_measure must be one of "vol", "var", "cvar", null.'],
    [
      'confidence 50%',
      { risk_measure: 'var', confidence: '50%' },
      'confidence must be one of "1sigma", "2sigma", "3sigma", "85%", "90%", "95%", "97%", "99%", null.',
    ],
  ])('risk attribution, %s → 400', async (_case, extra, message) => {
    const res = await attribution({ securities, date: DATE, ...extra });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message });
  });

  test('the document states the rules across fields a schema can; checked after each field’s own', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
    const body = doc.paths['/calculations/stress_test'].post.requestBody.content['application/json'].schema;
    const [fields, securities, magnitude] = body.allOf;
    expect(fields.required).toEqual(['magnitude']);
    expect(securities).toMatchObject({
      anyOf: [{ required: ['securities'] }, { required: ['portfolio_id'] }],
      'x-message': 'securities is required unless portfolio_id is given.',
    });
    expect(magnitude).toMatchObject({
      if: { required: ['shock'], properties: { shock: { pattern: '^(RATE|SPREAD):' } } },
      else: { properties: { magnitude: { exclusiveMinimum: -1 } } },
    });
    // A body breaking a field's rule and a rule across fields is told about the field, as before.
    expect((await stress({})).json()).toEqual({ code: 400, message: 'magnitude is required.' });
    expect((await stress({ magnitude: 'x' })).json()).toEqual({
      code: 400,
      message: 'magnitude must be a number.',
    });
  });

  test('the service backends answer the reference model’s numbers: typed bit for bit, threads to 1e-12', async () => {
    const bodies: Array<[string, object]> = [
      ['/v2/calculations/stress_test', { securities: BOOK, date: DATE, magnitude: -0.1 }],
      ['/v2/calculations/risk_attribution', { securities: BOOK, date: DATE, risk_measure: 'cvar' }],
      ['/v2/calculations/risk_attribution', { securities: BOOK, date: DATE, risk_measure: 'var' }],
    ];
    const reference = await Promise.all(bodies.map(async ([url, body]) => (await post(url, body)).json()));
    /** Same shape and strings; numbers within `relative` of each other (0: identical). */
    const near = (actual: unknown, expected: unknown, relative: number, where = '$'): void => {
      if (typeof expected === 'number') {
        expect(typeof actual).toBe('number');
        const scale = Math.max(Math.abs(expected), 1e-12);
        if (Math.abs((actual as number) - expected) > relative * scale) {
          throw new Error(`${where}: ${String(actual)} differs from ${expected}`);
        }
      } else if (expected !== null && typeof expected === 'object') {
        expect(Object.keys(actual as object)).toEqual(Object.keys(expected));
        for (const [key, value] of Object.entries(expected)) {
          near((actual as Record<string, unknown>)[key], value, relative, `${where}.${key}`);
        }
      } else {
        expect(actual).toEqual(expected);
      }
    };
    for (const [setting, relative] of [
      ['typed', 0],
      ['threads', 1e-12],
    ] as const) {
      const simulation = await startSimulationEngine({ calcBackend: setting, calcThreads: 2 });
      const other = await createTestApp(h.db, { simulation });
      try {
        const health = await other.app.inject({ method: 'GET', url: '/v2/health_check' });
        expect(health.json().calculation_backend).toMatchObject({ name: setting, chosen_by: 'configured' });
        for (const [i, [url, body]] of bodies.entries()) {
          const run = () =>
            other.app.inject({
              method: 'POST',
              url,
              payload: body,
              headers: { authorization: h.account.bearer },
            });
          const first = await run();
          expect(first.statusCode).toBe(200);
          near(first.json(), reference[i], relative);
          // Same request, same backend: the very same numbers again.
          expect((await run()).json()).toEqual(first.json());
        }
      } finally {
        await other.close();
        await simulation.backend.close();
      }
    }
  });

  test('CALC_BACKEND=wasm: the health check names it and its kernel; a stress test answers', async () => {
    const simulation = await startSimulationEngine({ calcBackend: 'wasm', calcThreads: 2 });
    const other = await createTestApp(h.db, { simulation });
    try {
      const health = await other.app.inject({ method: 'GET', url: '/v2/health_check' });
      expect(health.json().calculation_backend).toMatchObject({ name: 'wasm', chosen_by: 'configured' });
      expect(health.json().calculation_backend.detail).toMatch(/^WebAssembly SIMD f32x4/);
      const res = await other.app.inject({
        method: 'POST',
        url: '/v2/calculations/stress_test',
        payload: { securities: BOOK.slice(0, 2), date: DATE, magnitude: -0.1, horizon: 20 },
        headers: { authorization: h.account.bearer },
      });
      expect(res.statusCode).toBe(200);
      expect(res.json().stress_test.results).toHaveLength(2);
    } finally {
      await other.close();
      await simulation.backend.close();
    }
  });

  test('defaults written out give the same numbers as left out', async () => {
    const explicit = await attribution({
      securities: BOOK.slice(0, 2),
      date: DATE,
      base_currency: 'USD',
      nlv: null,
      horizon: 5,
      sampling: 1,
      aggregation: 'position',
      projection: ['IND:SPX'],
      volatility_half_life: 2,
      correlation_half_life: 6,
      filter: null,
      risk_measure: 'vol',
    });
    const implicit = await attribution({ securities: BOOK.slice(0, 2), date: DATE });
    expect(explicit.statusCode).toBe(200);
    expect(explicit.json()).toEqual(implicit.json());
  });

  describe('currencies, cash, options, forecasts and drift', () => {
    const EXPIRY = '20230317';
    const priceOn = async (symbol: string, day = 19354): Promise<number> => {
      const row = (await h.db('price_series').where({ symbol }).first('dates', 'values')) as {
        dates: number[];
        values: number[];
      };
      let last = NaN;
      row.dates.forEach((d, i) => {
        if (d <= day) last = row.values[i]!;
      });
      return last;
    };
    const mixed = [
      { id: 'aapl', symbol: 'AAPL', quantity: 100 },
      { id: 'jpm-eur', symbol: 'JPM', quantity: 50, currency: 'EUR' },
      { id: 'cash-eur', symbol: 'CASH:EUR', quantity: 10_000 },
      { id: 'call', symbol: `AAPL ${EXPIRY} C130`, quantity: 2 },
      { id: 'put', symbol: `AAPL ${EXPIRY} P120`, quantity: -1, market_price: 4.5 },
    ];
    const surface = {
      symbol: 'AAPL',
      time_to_expiration: [0.1, 0.5],
      moneyness: [0.9, 1.1],
      volatilities: [
        [0.4, 0.35],
        [0.38, 0.33],
      ],
    };

    test.each([
      ['stress test', '/v2/calculations/stress_test', { magnitude: -0.1 }],
      ['risk attribution vol', '/v2/calculations/risk_attribution', {}],
      ['risk attribution cvar', '/v2/calculations/risk_attribution', { risk_measure: 'cvar' }],
    ])(
      '%s: a foreign position, cash and options, with a surface, forecasts and drift → 200',
      async (_, url, extra) => {
        const res = await post(url, {
          securities: mixed,
          date: DATE,
          volatility_surface: [surface],
          forecasts: [{ symbol: 'JPM', years: 1, targets: [120, 160], probabilities: [0.4, 0.6] }],
          drift: true,
          ...extra,
        });
        expect(res.statusCode).toBe(200);
        const out = res.json().stress_test ?? res.json().risk_attribution;
        expect(out.unmapped_tickers).toEqual([]);
        expect(out.results.map((r: { id: string }) => r.id)).toEqual(mixed.map((m) => m.id));
        const key = 'ev' in out.results[0] ? 'ev' : 'mctr';
        for (const r of out.results) expect(total(r[key])).not.toBe(0);
      },
    );

    test('EUR cash has exactly the vol of holding FX:EURUSD itself, on either endpoint’s vol', async () => {
      const cash = await attribution({
        securities: [{ id: 'c', symbol: 'CASH:EUR', quantity: 1000 }],
        date: DATE,
      });
      const pair = await attribution({
        securities: [{ id: 'c', symbol: 'FX:EURUSD', quantity: 1000 }],
        date: DATE,
      });
      expect(cash.statusCode).toBe(200);
      expect(cash.json()).toEqual(pair.json());
      expect(total(cash.json().risk_attribution.results[0].mctr)).toBeGreaterThan(0.01);
    });

    test('an option against Black–Scholes: shocking AAPL moves every path to S(1 + m)', async () => {
      const S = await priceOn('AAPL');
      const T = (19433 - 19354) / 365; // 2023-03-17 − 2022-12-28
      const vol = (() => {
        const u = (T - 0.1) / 0.4;
        const w = (130 / S - 0.9) / 0.2;
        return (1 - u) * ((1 - w) * 0.4 + w * 0.35) + u * ((1 - w) * 0.38 + w * 0.33);
      })();
      const nlv = 1e5;
      const res = await stress({
        securities: [{ id: 'call', symbol: `AAPL ${EXPIRY} C130`, quantity: 3 }],
        date: DATE,
        shock: 'AAPL',
        magnitude: -0.12,
        horizon: 20,
        nlv,
        volatility_surface: [surface],
      });
      expect(res.statusCode).toBe(200);
      const pnl =
        300 * (blackScholes('C', S * 0.88, 130, T - 20 / 252, vol) - blackScholes('C', S, 130, T, vol));
      const [row] = res.json().stress_test.results;
      for (const set of ['ev', 'cvar_neg', 'cvar_pos']) expect(total(row[set])).toBeCloseTo(pnl / nlv, 12);
    });

    test('an option priced from its market price, and one from the EWMA vol, on both endpoints', async () => {
      for (const security of [
        { id: 'o', symbol: `AAPL ${EXPIRY} P120`, quantity: 1, market_price: 4.5 },
        { id: 'o', symbol: `AAPL ${EXPIRY} P120`, quantity: 1 },
      ]) {
        const book = [{ id: 's', symbol: 'AAPL', quantity: 100 }, security];
        const a = await stress({ securities: book, date: DATE, magnitude: -0.05 });
        const b = await attribution({ securities: book, date: DATE });
        expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
        // A long put is short AAPL (delta ≈ −30 shares): it gains in a fall and offsets the stock's vol.
        expect(total(a.json().stress_test.results[1].ev)).toBeGreaterThan(0);
        expect(total(b.json().risk_attribution.results[1].mctr)).toBeLessThan(0);
      }
      const bad = await attribution({
        securities: [{ id: 'o', symbol: `AAPL ${EXPIRY} P120`, quantity: 1, market_price: 500 }],
        date: DATE,
      });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().message).toMatch(
        /^securities\[0\]\.market_price: 500 is outside the Black–Scholes bounds/,
      );
    });

    test('base currency EUR: a book with no currencies is domestic there and gives the USD numbers', async () => {
      const usd = await attribution({ securities: BOOK, date: DATE });
      const eur = await attribution({ securities: BOOK, date: DATE, base_currency: 'EUR' });
      expect(eur.statusCode).toBe(200);
      expect(eur.json()).toEqual(usd.json());
      // In EUR, the USD positions carry the USD→EUR risk (the inverse of the stored EURUSD).
      const fx = await attribution({
        securities: BOOK.map((b) => ({ ...b, currency: 'USD' })),
        date: DATE,
        base_currency: 'EUR',
      });
      expect(fx.statusCode).toBe(200);
      expect(fx.json()).not.toEqual(usd.json());
    });

    test('a position without a currency takes the securities master’s (§9) and carries its FX risk', async () => {
      // The price import made PFE's master row; say it is quoted in EUR for this test.
      const before = (await h.db('securities_master').where({ symbol: 'PFE' }).first('currency')) as {
        currency: string | null;
      };
      await h.db('securities_master').where({ symbol: 'PFE' }).update({ currency: 'EUR' });
      try {
        const book = (currency?: string) => ({
          securities: [
            ...BOOK.slice(0, 2),
            { id: 'pfe', symbol: 'PFE', quantity: 50, ...(currency ? { currency } : {}) },
          ],
          date: DATE,
          magnitude: -0.1,
        });
        // vol is analytic: the same book gives the same numbers (the simulated measures' seed is the
        // request's hash, so a spelled-out currency would draw other paths).
        const fromMaster = await attribution(book());
        expect(fromMaster.statusCode).toBe(200);
        expect(fromMaster.json()).toEqual((await attribution(book('EUR'))).json());
        expect(fromMaster.json()).not.toEqual((await attribution(book('USD'))).json());
        for (const call of [stress, attribution]) {
          const grouped = (await call({ ...book(), aggregation: 'currency' })).json();
          const out = grouped.stress_test ?? grouped.risk_attribution;
          expect(out.results.map((r: { id: string }) => r.id)).toEqual(['EUR', 'USD']);
        }
      } finally {
        await h.db('securities_master').where({ symbol: 'PFE' }).update({ currency: before.currency });
      }
    });

    test('a rate shock below −1 (−150 points) is accepted; the same magnitude on a price is not', async () => {
      const rate = await stress({
        securities: BOOK,
        date: DATE,
        shock: 'RATE:US10Y',
        magnitude: -1.5,
        projection: ['IND:SPX', 'RATE:US10Y'],
      });
      expect(rate.statusCode).toBe(200);
      expect(rate.json().stress_test.implied_magnitudes[1]).toBeCloseTo(-1.5, 12);
      const price = await stress({ securities: BOOK, date: DATE, shock: 'AAPL', magnitude: -1.5 });
      expect(price.statusCode).toBe(400);
    });

    test('a currency with no FX series: the position is in unmapped_tickers', async () => {
      for (const call of [stress, attribution]) {
        const res = await call({
          securities: [...BOOK.slice(0, 2), { id: 'chf', symbol: 'XOM', quantity: 5, currency: 'CHF' }],
          date: DATE,
          magnitude: -0.1,
        });
        expect(res.statusCode).toBe(200);
        const out = res.json().stress_test ?? res.json().risk_attribution;
        expect(out.unmapped_tickers).toEqual(['XOM']);
        expect(out.results.map((r: { id: string }) => r.id)).toEqual(['p1', 'p2']);
      }
    });

    test('drift and forecasts change the simulated numbers; vol is a dispersion and does not move', async () => {
      const body = { securities: BOOK, date: DATE, risk_measure: 'cvar' };
      const plain = (await attribution(body)).json();
      expect((await attribution({ ...body, drift: true })).json()).not.toEqual(plain);
      const view = { forecasts: [{ symbol: 'XOM', years: 0.5, targets: [150], probabilities: [1] }] };
      expect((await attribution({ ...body, ...view })).json()).not.toEqual(plain);
      const vol = (await attribution({ securities: BOOK, date: DATE })).json();
      expect((await attribution({ securities: BOOK, date: DATE, drift: true, ...view })).json()).toEqual(vol);
      const st = await stress({ securities: BOOK, date: DATE, magnitude: -0.1, drift: true, ...view });
      expect(st.statusCode).toBe(200);
    });

    test.each<[string, object, string]>([
      [
        'probabilities not summing to 1',
        { forecasts: [{ symbol: 'XOM', years: 1, targets: [100, 120], probabilities: [0.5, 0.4] }] },
        'forecasts[0].probabilities: must sum to 1 (within 1e-9), got 0.9.',
      ],
      [
        'lengths that differ',
        { forecasts: [{ symbol: 'XOM', years: 1, targets: [100, 120], probabilities: [1] }] },
        'forecasts[0].probabilities: must hold one probability per target (2), got 1.',
      ],
      [
        'years 0',
        { forecasts: [{ symbol: 'XOM', years: 0, targets: [100], probabilities: [1] }] },
        'forecasts[0].years must be a number of years greater than 0.',
      ],
      ['forecasts not an array', { forecasts: {} }, 'forecasts must be an array or null.'],
      ['drift not a boolean', { drift: 'yes' }, 'drift must be true or false (or null).'],
      [
        'a ragged surface',
        { volatility_surface: [{ ...surface, volatilities: [[0.4], [0.38, 0.33]] }] },
        'volatility_surface[0].volatilities: must hold one row per time to expiration and one non-negative volatility per moneyness.',
      ],
    ])('%s → 400 naming the field, on both endpoints', async (_case, extra, message) => {
      for (const call of [stress, attribution]) {
        const res = await call({ securities: BOOK, date: DATE, magnitude: -0.1, ...extra });
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({ code: 400, message });
      }
    });
  });
});
