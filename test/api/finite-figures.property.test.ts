/**
 * Issue 43, item 6: no calculation answers a figure that is not a finite number. schemathesis found
 * `POST /v2/calculations/underlying_stress_sensitivity` with `stress_values: [9.96e306]` answering 200
 * with `"value": null` everywhere (JSON writes Infinity and NaN as null). Here every calculation takes
 * schema-valid bodies whose numbers are extreme (near their schema's bounds, 1e306, 5e-324, ±MAX) on
 * the shared real prices, and must answer either a 200 that its response schema accepts (so no null
 * where a number is due) or a 400 `{code, message}` naming one of its parameters.
 */
import path from 'node:path';
import fc from 'fast-check';
import { type TObject, type TSchema, Type } from '@sinclair/typebox';
import { RiskAttribution, StressTest } from '../../api/routes/calculations';
import {
  Backtest,
  BacktestStatisticsResult,
  Exposure,
  MarginalTrackingError,
  ParametricRiskAttribution,
  Properties,
  Sensitivity,
  UnderlyingStressSensitivity,
} from '../../api/schemas/analytics';
import { ErrorBody } from '../../api/schemas/common';
import { normalAt, seedFromNumber } from '../../calc/random';
import { CALCULATION_BODIES, type CalculationName } from '../../engine/calculations/calculation-schemas';
import { importMarketCsv } from '../../engine/market-data/csv-import';
import { mergeSeries } from '../../engine/market-data/price-store';
import { bodyValidator } from '../../engine/platform/schema-validator';
import { useTestApp } from '../support/use-test-app';

const MARKET = path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'market');
const DATE = '20221228';
const MAX = Number.MAX_VALUE;

/** Each calculation's 200 body: `{<name>: <its response schema>}`, exactly. */
const RESPONSES: Record<CalculationName, TSchema> = {
  stress_test: StressTest,
  risk_attribution: RiskAttribution,
  exposure: Exposure,
  parametric_risk_attribution: ParametricRiskAttribution,
  sensitivity: Sensitivity,
  underlying_stress_sensitivity: UnderlyingStressSensitivity,
  properties: Properties,
  marginal_tracking_error: MarginalTrackingError,
  backtest: Backtest,
  backtest_statistics: BacktestStatisticsResult,
};
const responseValidators = Object.fromEntries(
  Object.entries(RESPONSES).map(([name, schema]) => [
    name,
    bodyValidator(Type.Object({ [name]: Type.Ref(schema.$id!) }, { additionalProperties: false }), [schema]),
  ]),
) as Record<CalculationName, (value: unknown) => void>;
const errorValidator = bodyValidator(Type.Object(ErrorBody.properties, { additionalProperties: false }));

/** The top-level fields a calculation's body declares: a 400 names one of them first. */
function parameterNames(name: CalculationName): string[] {
  const schema: TSchema = CALCULATION_BODIES[name];
  return Object.keys(((schema.allOf?.[0] ?? schema) as TObject).properties);
}

/** calc-methodology §21's refusal of a range with fewer than 3 periods: it names the dates, not the field. */
const TOO_FEW_PERIODS = /^fewer than 3 (daily|weekly|monthly) periods from \d{8} to \d{8}\.$/;

/** Why `validate` refuses `value`, or null when it accepts it. */
function refusal(validate: (value: unknown) => void, value: unknown): string | null {
  try {
    validate(value);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

// ------------------------------------------------------------------------------------- the numbers

const HUGE = [1e100, 1e155, 1e200, 1e306, 9.96e306, MAX];
const TINY = [1e-155, 1e-300, 5e-324];
/** Any finite number, most often an extreme one. */
const extreme = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(...HUGE, ...HUGE.map((x) => -x), ...TINY, ...TINY.map((x) => -x), 0),
  },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
);
/** Any number > 0, most often an extreme one. */
const positive = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HUGE, ...TINY) },
  { weight: 1, arbitrary: fc.double({ min: 5e-324, max: MAX, noNaN: true }) },
);
/** A plain number half the time, else an extreme one: bodies must reach the calculation too. */
const mostly = <T>(plain: fc.Arbitrary<T>, wild: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 1, arbitrary: plain }, { weight: 1, arbitrary: wild });
/** Left out (the default) half the time. */
const maybe = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined });
/** A relative move of the schemas' stress_values and price magnitude: > -1, ≤ 100, often at the edges. */
const relativeMove = fc.oneof(
  fc.constantFrom(100, 99.99999999999999, -0.9999999999999999, 5e-324, -5e-324, 0, 1e-300),
  fc.double({ min: -1, max: 100, minExcluded: true, noNaN: true }),
);

// ----------------------------------------------------------------------------------------- the books

const position = fc.record({
  kind: fc.constantFrom('AAPL', 'JPM', 'XOM', 'IND:SPX', 'CASH:EUR', 'call', 'put'),
  quantity: mostly(fc.integer({ min: -500, max: 500 }), extreme),
  market_price: maybe(mostly(fc.double({ min: 1, max: 500, noNaN: true }), extreme)),
  multiplier: maybe(extreme),
  fx_rate: maybe(positive),
  euro: fc.boolean(),
});
const securities = fc.array(position, { minLength: 1, maxLength: 3 }).map((list) =>
  list.map((p, i) => {
    const option = p.kind === 'call' || p.kind === 'put';
    return {
      id: `p${i}`,
      symbol: option ? `AAPL 20230317 ${p.kind === 'call' ? 'C' : 'P'}130` : p.kind,
      quantity: p.quantity,
      ...(p.market_price === undefined
        ? {}
        : { market_price: option ? Math.abs(p.market_price) : p.market_price }),
      ...(p.multiplier === undefined ? {} : { multiplier: p.multiplier }),
      ...(p.euro ? { currency: 'EUR', ...(p.fx_rate === undefined ? {} : { fx_rate: p.fx_rate }) } : {}),
    };
  }),
);
const nlv = maybe(mostly(fc.constantFrom(1e4, 1e6, -1e5), extreme));
const book = fc.record({ securities, nlv }).map((b) => ({ ...b, date: DATE }));

const forecasts = maybe(
  fc
    .record({ symbol: fc.constantFrom('AAPL', 'JPM'), years: positive, target: positive })
    .map((f) => [{ symbol: f.symbol, years: f.years, targets: [f.target], probabilities: [1] }]),
);
const surfaces = maybe(
  fc
    .record({ years: mostly(fc.constantFrom(0.25), positive), moneyness: positive, vol: positive })
    .map((s) => [
      {
        symbol: 'AAPL',
        time_to_expiration: [s.years],
        moneyness: [s.moneyness],
        volatilities: [[s.vol]],
      },
    ]),
);
const confidence = maybe(fc.constantFrom('1sigma', '3sigma', '85%', '99%'));
const horizon = fc.constantFrom(1, 5, 20, 60);

/** Per calculation, its schema-valid bodies with extreme numbers. */
const BODIES: Record<CalculationName, fc.Arbitrary<object>> = {
  stress_test: fc
    .record({
      book,
      shock: fc.constantFrom('IND:SPX', 'AAPL', 'FX:EURUSD', 'RATE:US10Y'),
      price: relativeMove,
      level: fc.oneof(fc.constantFrom(10, -10, 5e-324), fc.double({ min: -10, max: 10, noNaN: true })),
      horizon: fc.constantFrom(1, 5, 20, 60, null),
      forecasts,
      volatility_surface: surfaces,
      drift: fc.boolean(),
      confidence,
    })
    .map(({ book, shock, price, level, ...rest }) => ({
      ...book,
      ...rest,
      shock,
      magnitude: shock.startsWith('RATE:') ? level : price,
    })),
  risk_attribution: fc
    .record({
      book,
      risk_measure: fc.constantFrom('vol', 'var', 'cvar'),
      forecasts,
      volatility_surface: surfaces,
      drift: fc.boolean(),
      horizon,
      confidence,
    })
    .map(({ book, ...rest }) => ({ ...book, ...rest })),
  exposure: fc
    .record({ book, volatility_surface: surfaces })
    .map(({ book, ...rest }) => ({ ...book, ...rest })),
  parametric_risk_attribution: fc
    .record({
      book,
      historical_days: maybe(fc.constantFrom(60, 5040)),
      exponential_decay: maybe(
        fc.oneof(fc.constantFrom(1, 5e-324, 1e-300), fc.double({ min: 5e-324, max: 1, noNaN: true })),
      ),
      confidence,
      volatility_surface: surfaces,
    })
    .map(({ book, ...rest }) => ({ ...book, ...rest })),
  sensitivity: fc
    .record({
      book,
      sensitivity_type: fc.constantFrom('delta', 'gamma', 'vega', 'theta'),
      compute_notional: fc.boolean(),
      volatility_surface: surfaces,
    })
    .map(({ book, ...rest }) => ({ ...book, ...rest })),
  underlying_stress_sensitivity: fc
    .record({
      book,
      stress_values: fc.array(relativeMove, { minLength: 1, maxLength: 4 }),
      volatility_surface: surfaces,
    })
    .map(({ book, ...rest }) => ({ ...book, ...rest })),
  properties: fc
    .record({ book, horizon, confidence, forecasts, volatility_surface: surfaces, drift: fc.boolean() })
    .map(({ book, ...rest }) => ({ ...book, ...rest })),
  marginal_tracking_error: fc.record({
    portfolio1: book,
    portfolio2: book,
    weekly: fc.boolean(),
    nDays: maybe(fc.constantFrom(20, 5040)),
    nWeeks: maybe(fc.constantFrom(12, 1008)),
    EWMA: fc.boolean(),
    exponential_decay: maybe(
      fc.oneof(
        fc.constantFrom(5e-324, 0.9999999999999999),
        fc.double({ min: 5e-324, max: 1, maxExcluded: true, noNaN: true }),
      ),
    ),
  }),
  backtest: fc
    .record({
      book,
      backtest_date1: fc.constantFrom('20221220', '2022-01-03', null),
      backtest_periodicity: fc.constantFrom('daily', 'weekly', 'MONTHLY'),
      backtest_rfrate_ticker: fc.constantFrom(null, 'RATE:US10Y'),
      projection_tickers: fc.constantFrom([], ['JPM']),
    })
    .map(({ book, ...rest }) => ({ ...book, ...rest })),
  backtest_statistics: fc
    .record({ book, backtest_date1: fc.constantFrom('20221220', '20220103') })
    .map(({ book, ...rest }) => ({ ...book, ...rest })),
};

/** Monte Carlo calculations simulate 100,000 paths a call: fewer runs. */
const RUNS: Record<CalculationName, number> = {
  stress_test: 20,
  risk_attribution: 20,
  exposure: 40,
  parametric_risk_attribution: 30,
  sensitivity: 40,
  underlying_stress_sensitivity: 40,
  properties: 15,
  marginal_tracking_error: 25,
  backtest: 25,
  backtest_statistics: 25,
};

describe('every calculation answers finite figures or a 400 naming a parameter (issue 43, item 6)', () => {
  const h = useTestApp({
    setUp: async ({ db }) => {
      await importMarketCsv(db, path.join(MARKET, 'sp500_index_1990_2022.csv'));
      await importMarketCsv(db, path.join(MARKET, 'us_stocks_daily.csv'), {
        columns: ['AAPL', 'JPM', 'XOM'],
      });
      // The shared data has no FX nor rates: a EURUSD random walk and a 10-year yield in percent.
      const spx = (await db('price_series').where({ symbol: 'IND:SPX' }).first('dates')) as {
        dates: number[];
      };
      const seed = seedFromNumber(42);
      let rate = 1.1;
      const fx = spx.dates.map((_, t) => (rate *= Math.exp(0.005 * normalAt(seed, t, 0))));
      await mergeSeries(db, 'FX:EURUSD', { dates: spx.dates, values: fx }, 'test');
      let level = 4;
      const yields = spx.dates.map((_, t) => (level += 0.05 * normalAt(seed, t, 1)));
      await mergeSeries(db, 'RATE:US10Y', { dates: spx.dates, values: yields }, 'test');
    },
  });
  const post = (name: string, body: object) => h.call('POST', `/v2/calculations/${name}`, body);

  /** The answer to `body`: 'answered' or 'refused', failing the test on anything else. */
  async function check(name: CalculationName, body: object): Promise<'answered' | 'refused'> {
    const res = await post(name, body);
    const json = JSON.parse(res.body) as Record<string, unknown>;
    if (res.statusCode === 400) {
      expect(refusal(errorValidator, json)).toBeNull();
      expect(json.code).toBe(400);
      // It names a parameter of this calculation: `nlv: …`, `securities[2]: …`, `portfolio1.nlv: …`,
      // or is §21's own sentence for a range too short (backtest_date1's rule, word for word).
      const names = parameterNames(name).join('|');
      expect(json.message).toMatch(new RegExp(`^(${names})\\b|${TOO_FEW_PERIODS.source}`));
      return 'refused';
    }
    expect({ status: res.statusCode, body: json }).toMatchObject({ status: 200 });
    // Against the response schema: a figure JSON wrote as null where a number is due fails here.
    expect(refusal(responseValidators[name], json)).toBeNull();
    expect(res.body).not.toMatch(/NaN|Infinity/);
    const answer = json[name] as {
      compute_notional?: boolean;
      results?: { value: unknown }[];
      total?: unknown;
    };
    if (name === 'sensitivity' && answer.compute_notional) {
      // Notional Greeks add up: no null stands for them.
      expect(answer.results!.every((r) => typeof r.value === 'number')).toBe(true);
      expect(typeof answer.total).toBe('number');
    }
    return 'answered';
  }

  test('the issue’s request: stress_values [9.96e306] is a 400 naming stress_values[0] and its bound', async () => {
    const body = { securities: [{ id: 'p1', symbol: 'AAPL', quantity: 100 }], date: DATE };
    const res = await post('underlying_stress_sensitivity', { ...body, stress_values: [9.96e306] });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      code: 400,
      message: 'stress_values[0] must be a relative move of at most 100 (+10,000%).',
    });
    // The words for a move of -100% or less are as they were.
    expect(
      (await post('underlying_stress_sensitivity', { ...body, stress_values: [0.1, -1] })).json(),
    ).toEqual({
      code: 400,
      message: 'stress_values[1] must be a relative move greater than -1.',
    });
    // At the bound, a plain book answers numbers: P&L / NLV = 100 for the stock.
    const res100 = await post('underlying_stress_sensitivity', { ...body, stress_values: [100] });
    expect(res100.statusCode).toBe(200);
    expect(res100.json().underlying_stress_sensitivity.total[0].value).toBeCloseTo(100, 10);
  });

  test('magnitude: at most 100 for a price, -10 to 10 for a RATE: or SPREAD: shock, each in its own words', async () => {
    const body = { securities: [{ id: 'p1', symbol: 'AAPL', quantity: 100 }], date: DATE };
    const cases: Array<[object, string]> = [
      [{ magnitude: 9.96e306 }, 'magnitude must be a decimal shock of at most 100 (+10,000%).'],
      [{ magnitude: -1 }, 'magnitude must be a decimal shock greater than -1 (-0.10 for -10%).'],
      [
        { magnitude: 10.5, shock: 'RATE:US10Y' },
        'magnitude must be from -10 to 10 for a RATE: or SPREAD: shock (at most 1,000 points either way).',
      ],
      [
        { magnitude: -1e306, shock: 'SPREAD:IGOAS' },
        'magnitude must be from -10 to 10 for a RATE: or SPREAD: shock (at most 1,000 points either way).',
      ],
    ];
    for (const [extra, message] of cases) {
      expect((await post('stress_test', { ...body, ...extra })).json()).toEqual({ code: 400, message });
    }
  });

  test('a book whose figures would overflow under a valid stress is a 400 naming nlv; its fractions alone too', async () => {
    const securities = [{ id: 'p1', symbol: 'AAPL', quantity: 100 }];
    const stressed = await post('underlying_stress_sensitivity', {
      securities,
      date: DATE,
      nlv: 1e-304,
      stress_values: [100],
    });
    expect(stressed.statusCode).toBe(400);
    expect(stressed.json().message).toMatch(
      /^nlv: 1e-304 is small for positions worth [\d.e+]+ in all: the figures would overflow \(past ±1\.8e308\)\.$/,
    );
    const exposure = await post('exposure', { securities, date: DATE, nlv: 5e-324 });
    expect(exposure.json().message).toMatch(
      /^nlv: 5e-324 is too small for the positions' values \(up to [\d.e+]+ in base currency\): \|nlv\| must be at least [\d.e+-]+, or as fractions of it the figures would overflow \(past ±1\.8e308\)\.$/,
    );
  });

  test('what the model only squares on its way is scaled, not refused: a book worth 1e200, an NLV of 9.96e306', async () => {
    const huge = [
      { id: 'p1', symbol: 'AAPL', quantity: 1e200 },
      { id: 'p2', symbol: 'JPM', quantity: 2e200 },
    ];
    const plain = [
      { id: 'p1', symbol: 'AAPL', quantity: 1 },
      { id: 'p2', symbol: 'JPM', quantity: 2 },
    ];
    for (const name of ['risk_attribution', 'parametric_risk_attribution'] as const) {
      const big = await post(name, { securities: huge, date: DATE });
      expect(big.statusCode).toBe(200);
      expect(refusal(responseValidators[name], big.json())).toBeNull();
      // Fractions of NLV: the same figures as the book 1e200 times smaller, to rounding.
      const small = (await post(name, { securities: plain, date: DATE })).json();
      const values = (json: Record<string, unknown>): number[] =>
        JSON.stringify(json[name])
          .match(/"value":(-?[\d.e+-]+)/g)!
          .map((match) => Number(match.slice('"value":'.length)));
      expect(values(big.json()).length).toBe(values(small).length);
      values(big.json()).forEach((v, i) => expect(v).toBeCloseTo(values(small)[i]!, 10));
    }
    const backtest = await post('backtest', { securities: plain, date: DATE, nlv: 9.96e306 });
    expect(backtest.statusCode).toBe(200);
    expect(backtest.json().backtest.series.portfolio[0]).toBe(100);
  });

  test('the document states the new bounds', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json();
    const schema = (name: string) =>
      doc.paths[`/calculations/${name}`].post.requestBody.content['application/json'].schema;
    const stress = schema('underlying_stress_sensitivity').allOf[0].properties.stress_values.items;
    expect(stress).toMatchObject({ exclusiveMinimum: -1, allOf: [{ maximum: 100 }] });
    const magnitude = schema('stress_test').allOf[2];
    expect(magnitude.then.properties.magnitude).toMatchObject({ minimum: -10, maximum: 10 });
    expect(magnitude.else.properties.magnitude).toMatchObject({
      exclusiveMinimum: -1,
      allOf: [{ maximum: 100 }],
    });
  });

  test.each(Object.keys(BODIES) as CalculationName[])(
    '%s: extreme numbers give finite figures or a 400 naming a parameter',
    async (name) => {
      const seen = { answered: 0, refused: 0 };
      await fc.assert(
        fc.asyncProperty(BODIES[name], async (body) => {
          seen[await check(name, body)] += 1;
        }),
        { numRuns: RUNS[name], seed: 43 },
      );
      // Both outcomes occur: the bodies reach the calculation, not only the checks before it.
      expect(seen.answered).toBeGreaterThan(0);
      expect(seen.refused).toBeGreaterThan(0);
    },
    120_000,
  );
});
