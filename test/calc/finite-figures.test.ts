/**
 * Issue 43, item 6, in calc/: a figure past ±1.8e308 is refused naming the input that took it there
 * (calc/figures.ts), and what the model only squares on its way (money², NLV², r_a²) is scaled by
 * powers of two so that it changes no bit of a result and overflows nothing by itself.
 */
import { CalcInputError } from '../../calc/input-error';
import { binaryScale, nonFinitePath } from '../../calc/figures';
import { runExposure } from '../../calc/exposure';
import { runParametricRiskAttribution } from '../../calc/parametric-risk';
import { runRiskAttribution } from '../../calc/risk-attribution';
import { runSensitivity, runUnderlyingStressSensitivity } from '../../calc/sensitivity';
import { runStressTest } from '../../calc/stress-test';
import { runMarginalTrackingError } from '../../calc/tracking-error';
import { dayNumber, formatDay } from '../../calc/market-data';
import { finiteResult } from '../../engine/calculations/calculation-service';
import type { Security } from '../../engine/kinds/security-positions';
import { InvalidInput } from '../../engine/platform/errors';
import { fxMarket } from './support/fx-market';

const { source, date, row } = fxMarket();
const projection = ['IND:SPX', 'IND:F2'];
const S = source.get('AAA')!.values[row]!;
const expiry = formatDay(dayNumber(date) + 60);
const BOOK = [
  { id: 'a', symbol: 'AAA', quantity: 100 },
  { id: 'b', symbol: 'BBB', quantity: -50 },
  { id: 'e', symbol: 'AAA', quantity: 30, currency: 'EUR' },
];
const base = { securities: BOOK, date, projection };

/** The message of the CalcInputError `run` throws (fails if it throws anything else, or nothing). */
function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(CalcInputError);
    return (error as Error).message;
  }
  throw new Error('expected a CalcInputError');
}

test('nonFinitePath names the first figure that is not a finite number, walking arrays and typed arrays', () => {
  expect(nonFinitePath({ a: 1, b: [{ c: 2 }, { c: null }], d: 'x' })).toBeNull();
  expect(nonFinitePath({ a: 1, b: [{ c: 2 }, { c: Infinity }] })).toBe('b[1].c');
  expect(nonFinitePath({ v: Float64Array.from([1, NaN]) })).toBe('v[1]');
  expect(nonFinitePath(-Infinity)).toBe('(the figure)');
  expect(binaryScale(3e200)).toBe(2 ** Math.round(Math.log2(3e200)));
  expect([binaryScale(0), binaryScale(NaN), binaryScale(Infinity)]).toEqual([1, 1, 1]);
});

describe('underlying stress sensitivity', () => {
  test('a stress that takes the P&L past ±1.8e308 is refused naming it and the most this book takes', () => {
    const message = refusal(() =>
      runUnderlyingStressSensitivity({ ...base, stress_values: [0.1, 9.96e306] }, source),
    );
    expect(message).toMatch(
      /^stress_values\[1\]: a move of 9\.96e\+306 takes the P&L of positions worth [\d.e+]+ in all past ±1\.8e308; at most [\d.e+]+ for this book: the figures would overflow \(past ±1\.8e308\)\.$/,
    );
  });

  test('an NLV so small that the fractions overflow under a stress is refused naming nlv', () => {
    // Each fraction (≈ 5e307) is a number; a stress of 100 takes it past the range.
    const message = refusal(() =>
      runUnderlyingStressSensitivity({ ...base, nlv: 1e-302, stress_values: [100] }, source),
    );
    expect(message).toMatch(
      /^nlv: 1e-302 is small for positions worth [\d.e+]+ in all: the figures would overflow/,
    );
  });
});

test('an NLV whose fractions are past ±1.8e308 is refused naming nlv and the least it can be', () => {
  const message = refusal(() => runExposure({ ...base, nlv: 5e-324 }, source));
  expect(message).toMatch(
    /^nlv: 5e-324 is too small for the positions' values \(up to [\d.e+]+ in base currency\): \|nlv\| must be at least [\d.e+-]+, or as fractions of it the figures would overflow \(past ±1\.8e308\)\.$/,
  );
  const least = Number(/at least ([\d.e+-]+)/.exec(message)![1]);
  expect(runExposure({ ...base, nlv: least }, source).results.every((r) => Number.isFinite(r.exposure))).toBe(
    true,
  );
});

test('a position worth a finite amount whose delta-adjusted exposure is not is refused naming it', () => {
  // Priced at 5% of S at the money (Δ ≈ 0.5): its value is MAX / 2, its delta-adjusted exposure ≈ 5·MAX.
  const price = 0.05 * S;
  const call = {
    id: 'o',
    symbol: `AAA ${expiry} C${Math.round(S)}`,
    quantity: 1,
    market_price: price,
    multiplier: Number.MAX_VALUE / 2 / price,
  };
  const message = refusal(() => runExposure({ ...base, nlv: 1, securities: [BOOK[0]!, call] }, source));
  expect(message).toBe(
    "securities[1]: o's delta-adjusted exposure (quantity × multiplier × fx_rate × Δ × S) is Infinity: the figures would overflow (past ±1.8e308).",
  );
});

test('the analytic vol squares no money: a book 2^600 times larger gives the same bits, where it gave NaN', () => {
  const big = 2 ** 600;
  const scaled = {
    ...base,
    nlv: 1e6 * big,
    securities: BOOK.map((s) => ({ ...s, quantity: s.quantity * big })),
  };
  const plain = runParametricRiskAttribution({ ...base, nlv: 1e6 }, source);
  expect(runParametricRiskAttribution(scaled, source)).toEqual(plain);
  expect(runRiskAttribution(scaled, source)).toEqual(runRiskAttribution({ ...base, nlv: 1e6 }, source));
  // And an NLV 2^-700 times smaller multiplies every figure by exactly 2^700.
  const small = runParametricRiskAttribution({ ...base, nlv: 1e6 * 2 ** -700 }, source);
  expect(small.volatility).toBe(plain.volatility * 2 ** 700);
  expect(small.results[0]!.var).toEqual(
    plain.results[0]!.var.map((v) => ({ ...v, value: v.value * 2 ** 700 })),
  );
});

test('tracking error squares no weight: NLVs 2^-700 times smaller scale te and every cte by 2^700 exactly', () => {
  const request = (scale: number) => ({
    portfolio1: { securities: BOOK.slice(0, 2), date, nlv: 1e6 * scale },
    portfolio2: { securities: [BOOK[0]!], date, nlv: 3e4 * scale },
  });
  const plain = runMarginalTrackingError(request(1), source);
  const small = runMarginalTrackingError(request(2 ** -700), source);
  expect(plain.te).toBeGreaterThan(0);
  expect(small.te).toBe(plain.te * 2 ** 700);
  expect(small.results).toEqual(
    plain.results.map((r) => ({
      ...r,
      weight_active: r.weight_active * 2 ** 700,
      cte: r.cte * 2 ** 700,
    })),
  );
});

test('a Greek without bound (σ·√T vanishing at the money) is refused naming the position and its terms', () => {
  const strike = String(S);
  const call = { id: 'o', symbol: `AAA ${expiry} C${strike}`, quantity: 5 };
  const surface = {
    symbol: 'AAA',
    time_to_expiration: [0.1],
    moneyness: [1],
    volatilities: [[2e-323]],
  };
  const message = refusal(() =>
    runSensitivity(
      { ...base, securities: [call], nlv: 1e6, volatility_surface: [surface], sensitivity_type: 'gamma' },
      source,
    ),
  );
  expect(message).toMatch(
    /^securities\[0\]: o's gamma per unit is Infinity \(Black–Scholes at S = [\d.]+, K = [\d.]+, T = [\d.]+ years, σ = 2e-323 from volatility_surface\): the figures would overflow/,
  );
});

describe('a forecast over a vanishing number of years', () => {
  const forecasts = [{ symbol: 'AAA', years: 1e-300, targets: [S * 2], probabilities: [1] }];
  test.each(['IND:SPX', 'AAA'])('stress test shocking %s: refused naming the forecast', (shock) => {
    // On the shocked security itself the shift is refused before conditioning ("no volatility" otherwise).
    const message = refusal(() =>
      runStressTest({ ...base, forecasts, shock, magnitude: -0.1 }, source, { paths: 200 }),
    );
    expect(message).toMatch(
      /^forecasts\[0\]: its targets over 1e-300 years shift AAA's log-return at the horizon by [\d.e+]+: the figures would overflow/,
    );
  });
  test('a target far below the price is a finite log-return (ln target − ln price), not −Infinity', () => {
    const far = [{ symbol: 'AAA', years: 1e100, targets: [5e-324], probabilities: [1] }];
    const result = runStressTest({ ...base, forecasts: far, shock: 'IND:SPX', magnitude: 100 }, source, {
      paths: 200,
    });
    expect(nonFinitePath(result)).toBeNull();
  });
  test('risk attribution (cvar): refused naming the forecast', () => {
    const message = refusal(() =>
      runRiskAttribution({ ...base, forecasts, risk_measure: 'cvar' }, source, { paths: 200 }),
    );
    expect(message).toMatch(/^forecasts\[0\]: its targets over 1e-300 years shift AAA's log-return/);
  });
});

describe('the service’s last line (engine/calculations/calculation-service.ts)', () => {
  test('a finite result passes as it is', () => {
    const result = { total: [{ stress: 0.1, value: 0.5 }], note: null };
    expect(finiteResult('underlying_stress_sensitivity', result, {})).toBe(result);
  });

  test('a figure that slipped past calc/ is a 400 naming the request’s most extreme number', () => {
    const result = { results: [{ id: 'p1', values: [{ stress: 9.96e306, value: Infinity }] }] };
    const body = {
      securities: [{ id: 'p1', symbol: 'AAPL', quantity: 100 }],
      nlv: 1e6,
      stress_values: [9.96e306],
    };
    expect(() => finiteResult('underlying_stress_sensitivity', result, body)).toThrow(
      new InvalidInput(
        'stress_values[0]: 9.96e+306 makes underlying_stress_sensitivity.results[0].values[0].value not a finite number: the figures would overflow (past ±1.8e308).',
      ),
    );
  });

  test('a stored portfolio’s positions are named as the body’s would be', () => {
    const stored = [{ id: 'p1', symbol: 'AAPL', quantity: 1e300 }] as unknown as Security[];
    expect(() => finiteResult('exposure', { long: NaN }, { portfolio_id: 'x' }, stored)).toThrow(
      'securities[0].quantity: 1e+300 makes exposure.long not a finite number: the figures would overflow (past ±1.8e308).',
    );
  });
});
