/**
 * The analytics of methodology §16–§19 against closed forms on the synthetic FX market (known
 * prices, no look-ahead): a single equity's parametric VaR is z·σ·v, a two-asset book's variance is
 * the hand-computed vᵀΣv, parametric volatility is the risk attribution's vol, Greeks are finite
 * differences of Black–Scholes, stresses revalue exactly, an option's exposure is its Δ-notional and
 * a domestic book does not see its base currency.
 */
import { blackScholes, blackScholesDelta, normalCdf } from '../../calc/black-scholes';
import { CalcInputError } from '../../calc/input-error';
import { runExposure } from '../../calc/exposure';
import { blackScholesGreeks } from '../../calc/greeks';
import { dayNumber, formatDay } from '../../calc/market-data';
import { confidenceLevel, runParametricRiskAttribution } from '../../calc/parametric-risk';
import type { CalcSecurity, Confidence } from '../../calc/calculation-request';
import { runProperties } from '../../calc/properties';
import { runRiskAttribution } from '../../calc/risk-attribution';
import { runSensitivity, runUnderlyingStressSensitivity } from '../../calc/sensitivity';
import { fxMarket, lastLogReturns } from './support/fx-market';
import { naiveCorrelation, naiveVariance, naiveWeights } from './support/naive-estimates';

const { source, date, row } = fxMarket();
const projection = ['IND:SPX', 'IND:F2'];
const price = (symbol: string) => source.get(symbol)!.values[row]!;
const S = price('AAA');
const K = Math.round(S);
const expiry = formatDay(dayNumber(date) + 146);
const T = 146 / 365;
const call = `AAA ${expiry} C${K}`;
const put = `AAA ${expiry} P${K}`;
const SURFACE = {
  symbol: 'AAA',
  time_to_expiration: [0.25, 0.5],
  moneyness: [0.9, 1.1],
  volatilities: [
    [0.3, 0.3],
    [0.3, 0.3],
  ],
};
const VOL = 0.3;
const sum = (values: readonly { value: number }[]) => values.reduce((s, v) => s + v.value, 0);
const relative = (a: number, b: number) => Math.abs(a - b) / Math.max(Math.abs(b), 1e-300);

describe('Greeks (§18) against Black–Scholes', () => {
  const cases = [
    ['C', 100, 100, 0.4, 0.3],
    ['P', 100, 100, 0.4, 0.3],
    ['C', 120, 100, 0.1, 0.2],
    ['P', 80, 100, 1.5, 0.45],
    ['C', 50, 70, 2, 0.6],
  ] as const;

  test.each(cases)('%s S=%d K=%d T=%d σ=%d: central finite differences of the price', (right, s, k, t, v) => {
    const g = blackScholesGreeks(right, s, k, t, v);
    const price = (ss: number = s, tt: number = t, vv: number = v) => blackScholes(right, ss, k, tt, vv);
    const h = s * 1e-4;
    expect(g.delta).toBeCloseTo((price(s + h) - price(s - h)) / (2 * h), 7);
    expect(g.gamma).toBeCloseTo((price(s + h) - 2 * price() + price(s - h)) / (h * h), 5);
    // Vega per volatility point: the price change for σ + 0.01, to first order.
    expect(g.vega).toBeCloseTo(((price(s, t, v + 1e-5) - price(s, t, v - 1e-5)) / 2e-5) * 0.01, 8);
    // θ per calendar day: minus the change of price as T shrinks by one day, to first order.
    const day = 1 / 365;
    expect(g.theta).toBeCloseTo((price(s, t - day * 1e-3) - price(s, t + day * 1e-3)) / 2e-3, 8);
    expect(g.theta).toBeLessThan(0);
  });

  test('put–call parity: Δ_call − Δ_put = 1, equal Γ, vega and θ (r = q = 0)', () => {
    for (const [s, k, t, v] of [
      [100, 100, 0.4, 0.3],
      [130, 100, 0.05, 0.15],
      [70, 100, 3, 0.8],
    ] as const) {
      const c = blackScholesGreeks('C', s, k, t, v);
      const p = blackScholesGreeks('P', s, k, t, v);
      expect(c.delta - p.delta).toBeCloseTo(1, 14);
      expect(c.gamma).toBe(p.gamma);
      expect(c.vega).toBe(p.vega);
      expect(c.theta).toBe(p.theta);
    }
  });

  test('no time value (T = 0 or σ = 0): Γ, vega, θ are 0 and Δ the intrinsic one', () => {
    expect(blackScholesGreeks('C', 110, 100, 0, 0.3)).toEqual({ delta: 1, gamma: 0, vega: 0, theta: 0 });
    expect(blackScholesGreeks('P', 110, 100, 0.5, 0)).toEqual({ delta: 0, gamma: 0, vega: 0, theta: 0 });
  });
});

describe('parametric risk attribution (§17)', () => {
  test('confidence levels: z and the CVaR multiple φ(z)/(1 − c)', () => {
    const cases: [Confidence, number, number][] = [
      ['95%', 1.6448536269514722, 0.95],
      ['99%', 2.3263478740408408, 0.99],
      ['1sigma', 1, normalCdf(1)],
      ['3sigma', 3, normalCdf(3)],
    ];
    for (const [confidence, z, c] of cases) {
      const level = confidenceLevel(confidence);
      expect(level.z).toBeCloseTo(z, 12);
      expect(level.c).toBeCloseTo(c, 14);
      const density = Math.exp((-z * z) / 2) / Math.sqrt(2 * Math.PI);
      expect(relative(level.cvarMultiple, density / (1 - c))).toBeLessThan(1e-9);
    }
  });

  test('a single equity: VaR is exactly z·σ·v (σ its EWMA vol, one interval), CVaR φ(z)/(1−c)·σ·v', () => {
    const v = 100 * price('AAA');
    const sigma = Math.sqrt(
      naiveVariance(lastLogReturns(source.get('AAA')!, row, 1260), naiveWeights(1260, 2, 1)),
    );
    for (const nlv of [null, 3 * v]) {
      const result = runParametricRiskAttribution(
        { securities: [{ id: 'a', symbol: 'AAA', quantity: 100 }], date, projection, nlv, confidence: '99%' },
        source,
        { distress: false },
      );
      const money = nlv ?? v;
      expect(relative(-result.var * money, 2.3263478740408408 * sigma * v)).toBeLessThan(1e-12);
      expect(relative(-result.cvar * money, confidenceLevel('99%').cvarMultiple * sigma * v)).toBeLessThan(
        1e-12,
      );
      expect(relative(result.volatility * money, sigma * Math.sqrt(252) * v)).toBeLessThan(1e-12);
    }
  });

  test('two assets held as the projections: σ_p² = vᵀΣv / NLV² with Σ computed by hand', () => {
    const va = 100 * price('AAA');
    const vb = -70 * price('BBB');
    const ra = lastLogReturns(source.get('AAA')!, row, 1260);
    const rb = lastLogReturns(source.get('BBB')!, row, 1260);
    const volWeights = naiveWeights(1260, 2, 1);
    const sa = Math.sqrt(naiveVariance(ra, volWeights));
    const sb = Math.sqrt(naiveVariance(rb, volWeights));
    const rho = naiveCorrelation(ra, rb, naiveWeights(1260, 6, 1));
    const nlv = 1e6;
    const variance = (va * va * sa * sa + 2 * va * vb * rho * sa * sb + vb * vb * sb * sb) / (nlv * nlv);
    const result = runParametricRiskAttribution(
      {
        securities: [
          { id: 'a', symbol: 'AAA', quantity: 100 },
          { id: 'b', symbol: 'BBB', quantity: -70 },
        ],
        date,
        projection: ['AAA', 'BBB'],
        nlv,
        confidence: '95%',
      },
      source,
      { distress: false },
    );
    expect(relative(result.volatility, Math.sqrt(variance * 252))).toBeLessThan(1e-12);
    expect(relative(result.var, -1.6448536269514722 * Math.sqrt(variance))).toBeLessThan(1e-12);
    // Euler: a's part is v_a·(Σv)_a / (σ_p·NLV²), on its own projection; nothing is residual.
    const aPart = (va * (va * sa * sa + vb * rho * sa * sb)) / (Math.sqrt(variance) * nlv * nlv);
    const a = result.results[0]!;
    expect(a.var.map((p) => p.projection)).toEqual(['AAA', 'BBB', 'residual']);
    expect(relative(a.var[0]!.value, -1.6448536269514722 * aPart)).toBeLessThan(1e-12);
    expect(Math.abs(a.var[1]!.value)).toBe(0);
    expect(Math.abs(a.var[2]!.value)).toBe(0);
  });

  const mixed: CalcSecurity[] = [
    { id: 'a', symbol: 'AAA', quantity: 100, currency: 'EUR' },
    { id: 'b', symbol: 'BBB', quantity: -50 },
    { id: 'cash', symbol: 'CASH:JPY', quantity: 1_000_000 },
    { id: 'c', symbol: call, quantity: 3 },
    { id: 'p', symbol: put, quantity: -2 },
  ];

  test('volatility equals risk_attribution with risk_measure vol on the same body to 1e-12, per component', () => {
    const body = { securities: mixed, date, projection, volatility_surface: [SURFACE] };
    const parametric = runParametricRiskAttribution(body, source);
    const vol = runRiskAttribution({ ...body, risk_measure: 'vol' }, source);
    expect(parametric.results.map((r) => r.id)).toEqual(vol.results.map((r) => r.id));
    parametric.results.forEach((r, i) => {
      r.volatility.forEach((part, j) => {
        expect(part.projection).toBe(vol.results[i]!.mctr[j]!.projection);
        expect(Math.abs(part.value - vol.results[i]!.mctr[j]!.value)).toBeLessThan(1e-12);
      });
    });
    const total = vol.results.reduce((s, r) => s + sum(r.mctr), 0);
    expect(Math.abs(parametric.volatility - total)).toBeLessThan(1e-12);
  });

  test('Euler: every measure’s components sum to the portfolio figure; var and cvar are σ scaled', () => {
    const result = runParametricRiskAttribution(
      { securities: mixed, date, projection, volatility_surface: [SURFACE], confidence: '97%' },
      source,
    );
    for (const measure of ['volatility', 'var', 'cvar'] as const) {
      const total = result.results.reduce((s, r) => s + sum(r[measure]), 0);
      expect(relative(total, result[measure])).toBeLessThan(1e-12);
    }
    const { z, cvarMultiple } = confidenceLevel('97%');
    const sigma = result.volatility / Math.sqrt(252);
    expect(relative(result.var, -z * sigma)).toBeLessThan(1e-14);
    expect(relative(result.cvar, -cvarMultiple * sigma)).toBeLessThan(1e-14);
    expect(result.notes).toHaveLength(1);
  });

  test('historical_days and exponential_decay: the window and weights they name', () => {
    const single = { securities: [{ id: 'a', symbol: 'AAA', quantity: 100 }], date, projection };
    const returns = lastLogReturns(source.get('AAA')!, row, 500);
    const lambda = 0.97;
    const weights = Array.from({ length: 500 }, (_, t) => lambda ** (499 - t));
    const sigma = Math.sqrt(naiveVariance(returns, weights));
    const result = runParametricRiskAttribution(
      { ...single, historical_days: 500, exponential_decay: lambda },
      source,
      { distress: false },
    );
    expect(relative(result.volatility, sigma * Math.sqrt(252))).toBeLessThan(1e-12);
    // λ = 1 is equal weights: the half-lives 0 and 0.
    const equal = runParametricRiskAttribution({ ...single, exponential_decay: 1 }, source);
    const halfLivesZero = runParametricRiskAttribution(
      { ...single, volatility_half_life: 0, correlation_half_life: 0 },
      source,
    );
    expect(equal.volatility).toBe(halfLivesZero.volatility);
    const defaultWindow = runParametricRiskAttribution(single, source);
    expect(runParametricRiskAttribution({ ...single, historical_days: 1260 }, source).volatility).toBe(
      defaultWindow.volatility,
    );
  });

  test.each([
    [{ historical_days: 59 }, 'historical_days'],
    [{ historical_days: 100.5 }, 'historical_days'],
    [{ exponential_decay: 0 }, 'exponential_decay'],
    [{ exponential_decay: 1.01 }, 'exponential_decay'],
    [{ confidence: '96%' }, 'confidence'],
  ])('%j is refused naming %s', (extra, parameter) => {
    const run = () =>
      runParametricRiskAttribution(
        { securities: [{ id: 'a', symbol: 'AAA', quantity: 1 }], date, projection, ...(extra as object) },
        source,
      );
    expect(run).toThrow(CalcInputError);
    expect(run).toThrow(new RegExp(`^${parameter}: `));
  });
});

describe('exposure (§16) and sensitivities (§18)', () => {
  const book: CalcSecurity[] = [
    { id: 'a', symbol: 'AAA', quantity: 100 },
    { id: 'b', symbol: 'BBB', quantity: -40 },
    { id: 'c', symbol: call, quantity: 3 },
    { id: 'p', symbol: put, quantity: 2 },
  ];
  const body = { securities: book, date, projection, volatility_surface: [SURFACE] };

  test('an option’s exposure is its Δ-notional q·m·Δ·S; notional its premium; the sides and NLV', () => {
    const result = runExposure(body, source);
    const callDelta = blackScholesDelta('C', S, K, T, VOL);
    const putDelta = blackScholesDelta('P', S, K, T, VOL);
    const [a, b, c, p] = result.results;
    expect(c!.delta_notional).toBeCloseTo(3 * 100 * callDelta * S, 8);
    expect(p!.delta_notional).toBeCloseTo(2 * 100 * putDelta * S, 8);
    expect(p!.delta_notional).toBeLessThan(0); // a long put is short
    expect(c!.notional).toBeCloseTo(3 * 100 * blackScholes('C', S, K, T, VOL), 8);
    expect(a).toEqual({
      id: 'a',
      notional: 100 * S,
      delta_notional: 100 * S,
      exposure: (100 * S) / result.nlv,
    });
    expect(b!.notional).toBe(-40 * price('BBB'));
    // Listed options count in the NLV at their premium.
    expect(result.nlv).toBeCloseTo(a!.notional + b!.notional + c!.notional + p!.notional, 6);
    expect(result.long).toBeCloseTo(a!.exposure + c!.exposure, 14);
    expect(result.short).toBeCloseTo(b!.exposure + p!.exposure, 14);
    expect(result.gross).toBeCloseTo(result.long - result.short, 14);
    expect(result.net).toBeCloseTo(result.long + result.short, 14);
  });

  test('sensitivity: per-unit Greeks, notionals q·m × (Δ·S, Γ·S²·0.01, vega, θ), totals', () => {
    const g = blackScholesGreeks('C', S, K, T, VOL);
    const perUnit = runSensitivity({ ...body, sensitivity_type: 'gamma' }, source);
    expect(perUnit.results.map((r) => r.value)).toEqual([
      0,
      0,
      g.gamma,
      blackScholesGreeks('P', S, K, T, VOL).gamma,
    ]);
    expect(perUnit.total).toBeNull();
    const delta = runSensitivity({ ...body, sensitivity_type: 'delta' }, source);
    expect(delta.results.map((r) => r.value)).toEqual([
      1,
      1,
      g.delta,
      blackScholesGreeks('P', S, K, T, VOL).delta,
    ]);
    const exposure = runExposure(body, source);
    const deltaNotional = runSensitivity({ ...body, compute_notional: true }, source);
    expect(deltaNotional.results.map((r) => r.value)).toEqual(exposure.results.map((r) => r.delta_notional));
    expect(deltaNotional.total).toBeCloseTo(
      sum(exposure.results.map((r) => ({ value: r.delta_notional }))),
      6,
    );
    const expected = { gamma: g.gamma * S * S * 0.01, vega: g.vega, theta: g.theta };
    for (const type of ['gamma', 'vega', 'theta'] as const) {
      const result = runSensitivity({ ...body, sensitivity_type: type, compute_notional: true }, source);
      expect(result.results[0]!.value).toBe(0);
      expect(result.results[2]!.value).toBeCloseTo(300 * expected[type], 9);
      expect(relative(result.total!, 300 * expected[type] + 200 * expected[type])).toBeLessThan(1e-12);
    }
  });

  test('per-unit Greeks are not summed: groups and the total are null', () => {
    const result = runSensitivity(
      { ...body, sensitivity_type: 'vega' },
      source,
      {},
      {
        aggregation: 'security_type',
        filter: null,
      },
    );
    expect(result.results).toEqual([
      { id: 'EQUITY', value: null },
      { id: 'EQUITY_OPTION', value: null },
    ]);
    expect(result.total).toBeNull();
  });

  test('underlying stress: 0 at a zero stress; v·s/NLV for a linear book; Black–Scholes repricing', () => {
    const stresses = [-0.2, -0.05, 0, 0.1];
    const linear = runUnderlyingStressSensitivity(
      { securities: book.slice(0, 2), date, projection, stress_values: stresses, nlv: 1e5 },
      source,
    );
    linear.results.forEach((r, i) => {
      const v = i === 0 ? 100 * S : -40 * price('BBB');
      expect(r.values.map((x) => x.stress)).toEqual(stresses);
      r.values.forEach((x, j) => expect(x.value).toBe((v * stresses[j]!) / 1e5 + 0));
    });
    expect(linear.total[2]).toEqual({ stress: 0, value: 0 });
    const options = runUnderlyingStressSensitivity({ ...body, stress_values: stresses, nlv: 1e5 }, source);
    const c = options.results[2]!;
    expect(c.values[2]!.value).toBe(0);
    expect(c.values[0]!.value).toBeCloseTo(
      (300 * (blackScholes('C', S * 0.8, K, T, VOL) - blackScholes('C', S, K, T, VOL))) / 1e5,
      12,
    );
    options.total.forEach((t, j) => {
      expect(t.value).toBeCloseTo(
        options.results.reduce((s, r) => s + r.values[j]!.value, 0),
        14,
      );
    });
  });

  test.each([
    [[], 'stress_values'],
    [[-1], 'stress_values'],
    [Array.from({ length: 21 }, () => 0.01), 'stress_values'],
  ])('stress_values %j is refused', (values, parameter) => {
    expect(() =>
      runUnderlyingStressSensitivity({ securities: book, date, projection, stress_values: values }, source),
    ).toThrow(new RegExp(`^${parameter}: `));
  });

  test('a base-currency change leaves a domestic book’s figures unchanged', () => {
    const domestic = { securities: book, date, projection, volatility_surface: [SURFACE] };
    const inEur = { ...domestic, base_currency: 'EUR' };
    const usd = runExposure(domestic, source);
    const eur = runExposure(inEur, source);
    expect({ ...eur, base_currency: 'USD' }).toEqual(usd);
    expect(runParametricRiskAttribution(inEur, source)).toEqual(
      runParametricRiskAttribution(domestic, source),
    );
    expect(runSensitivity({ ...inEur, sensitivity_type: 'theta', compute_notional: true }, source)).toEqual(
      runSensitivity({ ...domestic, sensitivity_type: 'theta', compute_notional: true }, source),
    );
    expect(runUnderlyingStressSensitivity({ ...inEur, stress_values: [0.1] }, source)).toEqual(
      runUnderlyingStressSensitivity({ ...domestic, stress_values: [0.1] }, source),
    );
  });
});

describe('properties (§19)', () => {
  test('every figure equals the dedicated calculation’s on the same body', () => {
    const body = {
      securities: [
        { id: 'a', symbol: 'AAA', quantity: 100, currency: 'EUR' },
        { id: 'b', symbol: 'BBB', quantity: -40 },
        { id: 'c', symbol: call, quantity: 3 },
      ],
      date,
      projection,
      volatility_surface: [SURFACE],
      horizon: 20,
      confidence: '99%' as const,
    };
    const options = { paths: 3000 };
    const props = runProperties(body, source, options);
    const exposure = runExposure(body, source, options);
    expect([props.nlv, props.long, props.short, props.gross, props.net]).toEqual([
      exposure.nlv,
      exposure.long,
      exposure.short,
      exposure.gross,
      exposure.net,
    ]);
    const total = (measure: 'vol' | 'var' | 'cvar') =>
      runRiskAttribution({ ...body, risk_measure: measure }, source, options).results.reduce(
        (s, r) => s + sum(r.mctr),
        0,
      );
    expect(props.volatility).toBeCloseTo(total('vol'), 12);
    // The same components, added in another order.
    expect(relative(props.var, total('var'))).toBeLessThan(1e-14);
    expect(relative(props.cvar, total('cvar'))).toBeLessThan(1e-14);
    expect(props.cvar).toBeLessThan(props.var);
    const parametric = runParametricRiskAttribution(body, source, options);
    expect(props.parametric_var).toBe(parametric.var * Math.sqrt(20));
    expect(props.parametric_cvar).toBe(parametric.cvar * Math.sqrt(20));
    for (const type of ['delta', 'gamma', 'vega', 'theta'] as const) {
      expect(props[type]).toBe(
        runSensitivity({ ...body, sensitivity_type: type, compute_notional: true }, source).total,
      );
    }
    expect(props.betas.map((b) => b.projection)).toEqual(projection);
  });

  test('betas: Σ e_i·β_ij / NLV; a held projection has the unit vector', () => {
    const props = runProperties(
      {
        securities: [
          { id: 's', symbol: 'IND:SPX', quantity: 10 },
          { id: 'f', symbol: 'IND:F2', quantity: -5 },
        ],
        date,
        projection,
        nlv: 1e5,
      },
      source,
      { paths: 500 },
    );
    expect(props.betas).toEqual([
      { projection: 'IND:SPX', value: (10 * price('IND:SPX')) / 1e5 },
      { projection: 'IND:F2', value: (-5 * price('IND:F2')) / 1e5 },
    ]);
  });
});
