/**
 * Options (methodology §11) against Black–Scholes closed forms: a stress test pinned on the underlying
 * moves S to S(1+m) on every path, so the option's P&L is exactly BS(S(1+m), K, T_h, σ) − P0 with σ
 * from the surface (bilinear), the market price (implied) or the EWMA vol; the zero-volatility and
 * deep in/out-of-the-money limits; expiry inside the horizon; put–call parity against the stock;
 * repricing per simulated path; delta-adjusted exposure and the analytic vol.
 */
import { blackScholes, blackScholesDelta, impliedVolatility } from '../../calc/black-scholes';
import { LinePricer } from '../../calc/kernels/line-pricing';
import { dayNumber, formatDay } from '../../calc/market-data';
import type { CalcSecurity } from '../../calc/calculation-request';
import { prepareRiskAttribution, runRiskAttribution } from '../../calc/risk-attribution';
import { seedFromNumber } from '../../calc/random';
import { PathGenerator, simulate } from '../../calc/simulation';
import { runStressTest, type StressTestRequest } from '../../calc/stress-test';
import { fxMarket, lastLogReturns } from './support/fx-market';
import { naiveVariance, naiveWeights } from './support/naive-estimates';

const { source, date, row } = fxMarket();
const projection = ['IND:SPX', 'IND:F2'];
const S = source.get('AAA')!.values[row]!;
const K = Math.round(S);
const expiryDay = dayNumber(date) + 146;
const expiry = formatDay(expiryDay);
const T = 146 / 365;
const call = `AAA ${expiry} C${K}`;
const put = `AAA ${expiry} P${K}`;
const ewmaVol = Math.sqrt(
  naiveVariance(lastLogReturns(source.get('AAA')!, row, 1260), naiveWeights(1260, 2, 1)) * 252,
);
const sumOf = (values: { value: number }[]) => values.reduce((s, v) => s + v.value, 0);
const NLV = 1e4;

/** A stress test shocking the underlying: every path has S_h = S(1 + m) exactly. */
function pinned(securities: CalcSecurity[], extra: Partial<StressTestRequest> = {}, horizon = 20) {
  return runStressTest(
    { securities, date, projection, shock: 'AAA', magnitude: -0.08, horizon, nlv: NLV, ...extra },
    source,
    { paths: 500, seed: 1 },
  );
}
const expectedPnl = (right: 'C' | 'P', vol: number, p0: number, horizon = 20, q = 2, m = -0.08) =>
  q * 100 * (blackScholes(right, S * (1 + m), K, Math.max(T - horizon / 252, 0), vol) - p0);

describe('a single option against Black–Scholes at the horizon (pinned underlying)', () => {
  const surface = {
    symbol: 'AAA',
    time_to_expiration: [0.25, 0.5],
    moneyness: [0.9, 1.1],
    volatilities: [
      [0.3, 0.22],
      [0.34, 0.26],
    ],
  };

  test('volatility_surface: σ bilinear in (T, K/S); P0 = BS(S, K, T, σ)', () => {
    const u = (T - 0.25) / 0.25;
    const w = (K / S - 0.9) / 0.2;
    const vol = (1 - u) * ((1 - w) * 0.3 + w * 0.22) + u * ((1 - w) * 0.34 + w * 0.26);
    const result = pinned([{ id: 'c', symbol: call, quantity: 2 }], { volatility_surface: [surface] });
    const pnl = expectedPnl('C', vol, blackScholes('C', S, K, T, vol));
    for (const set of ['ev', 'cvar_neg', 'cvar_pos'] as const) {
      expect(sumOf(result.results[0]![set])).toBeCloseTo(pnl / NLV, 12);
    }
  });

  test('market_price: σ implied from it; P0 = the market price', () => {
    const price = blackScholes('P', S, K, T, 0.41) + 0.01;
    const vol = impliedVolatility('P', S, K, T, price)!;
    expect(blackScholes('P', S, K, T, vol)).toBeCloseTo(price, 9);
    const result = pinned([{ id: 'p', symbol: put, quantity: 2, market_price: price }]);
    expect(sumOf(result.results[0]!.ev)).toBeCloseTo(expectedPnl('P', vol, price) / NLV, 10);
  });

  test('neither: the underlying’s EWMA vol annualised', () => {
    const result = pinned([{ id: 'c', symbol: call, quantity: 2 }]);
    const pnl = expectedPnl('C', ewmaVol, blackScholes('C', S, K, T, ewmaVol));
    expect(sumOf(result.results[0]!.cvar_neg)).toBeCloseTo(pnl / NLV, 10);
  });

  test('a surface on another underlying is not used', () => {
    const other = pinned([{ id: 'c', symbol: call, quantity: 2 }], {
      volatility_surface: [{ ...surface, symbol: 'BBB' }],
    });
    expect(other.results).toEqual(pinned([{ id: 'c', symbol: call, quantity: 2 }]).results);
  });

  test('zero volatility: intrinsic at both ends', () => {
    const flat = {
      ...surface,
      volatilities: [
        [0, 0],
        [0, 0],
      ],
    };
    const result = pinned([{ id: 'p', symbol: put, quantity: 2 }], { volatility_surface: [flat] });
    const pnl = 2 * 100 * (Math.max(K - S * 0.92, 0) - Math.max(K - S, 0));
    expect(sumOf(result.results[0]!.ev)).toBeCloseTo(pnl / NLV, 12);
  });

  test('deep in the money moves like the stock, deep out of the money not at all', () => {
    const deepIn = `AAA ${expiry} C${(S / 4).toFixed(2)}`;
    const deepOut = `AAA ${expiry} C${(S * 4).toFixed(2)}`;
    const result = pinned([
      { id: 'in', symbol: deepIn, quantity: 1 },
      { id: 'out', symbol: deepOut, quantity: 1 },
    ]);
    expect(sumOf(result.results[0]!.ev)).toBeCloseTo((100 * S * -0.08) / NLV, 8);
    expect(Math.abs(sumOf(result.results[1]!.ev))).toBeLessThan(1e-12);
  });

  test('expiring inside the horizon pays its intrinsic value (T_h = 0)', () => {
    const soon = `AAA ${formatDay(dayNumber(date) + 10)} C${K}`;
    const result = pinned([{ id: 'c', symbol: soon, quantity: 2 }], {}, 20);
    const p0 = blackScholes('C', S, K, 10 / 365, ewmaVol);
    const pnl = 2 * 100 * (Math.max(S * 0.92 - K, 0) - p0);
    expect(sumOf(result.results[0]!.ev)).toBeCloseTo(pnl / NLV, 10);
  });
});

describe('put–call parity and the exact component split', () => {
  // Long call + short put (same K, T, σ) is a forward: P&L = 100·(S_h − S), as 100 shares.
  const pair: CalcSecurity[] = [
    { id: 'c', symbol: call, quantity: 1 },
    { id: 'p', symbol: put, quantity: -1 },
  ];
  const stock: CalcSecurity[] = [{ id: 's', symbol: 'AAA', quantity: 100 }];
  const options = { paths: 4000, seed: 17 };

  test.each(['cvar', 'var'] as const)('%s: call − put = 100 shares, per projection', (risk_measure) => {
    const a = runRiskAttribution(
      { securities: pair, date, projection, risk_measure, nlv: NLV },
      source,
      options,
    );
    const b = runRiskAttribution(
      { securities: stock, date, projection, risk_measure, nlv: NLV },
      source,
      options,
    );
    b.results[0]!.mctr.forEach((v, j) => {
      expect(a.results[0]!.mctr[j]!.value + a.results[1]!.mctr[j]!.value).toBeCloseTo(v.value, 10);
    });
    expect(sumOf(b.results[0]!.mctr)).not.toBe(0);
  });

  test('per path: the option line is q·m·(BS(S·e^x, K, T_h, σ) − P0); components sum to it', () => {
    const prepared = prepareRiskAttribution(
      { securities: pair, date, projection, risk_measure: 'cvar', horizon: 20, nlv: NLV },
      source,
      { paths: 1000 },
    );
    if (prepared.kind !== 'simulation') throw new Error('cvar simulates');
    const { scenario } = prepared;
    const lines = scenario.lines!;
    const generator = new PathGenerator(scenario, seedFromNumber(2));
    const pricer = new LinePricer(lines);
    const Th = T - 20 / 252;
    const k = scenario.k;
    for (let p = 0; p < 100; p++) {
      generator.draw(p);
      const x = generator.x[lines.primary[0]!]!;
      const sh = S * Math.exp(x);
      const expected =
        100 * (blackScholes('C', sh, K, Th, ewmaVol) - blackScholes('C', S, K, T, ewmaVol)) -
        100 * (blackScholes('P', sh, K, Th, ewmaVol) - blackScholes('P', S, K, T, ewmaVol));
      expect(pricer.price(generator.x, generator.e)).toBeCloseTo(expected, 8);
      // Component split: Σ_j β_j f_j G + G e = G x = unit P&L, per line.
      for (let l = 0; l < 2; l++) {
        const d = lines.primary[l]!;
        let sum = pricer.r[l]!;
        for (let j = 0; j < k; j++) sum += scenario.beta[d * k + j]! * generator.f[j]! * pricer.g[l]!;
        const unit =
          blackScholes(l === 0 ? 'C' : 'P', sh, K, Th, ewmaVol) -
          blackScholes(l === 0 ? 'C' : 'P', S, K, T, ewmaVol);
        expect(sum).toBeCloseTo(unit, 9);
      }
    }
  });
});

describe('every array sums to the portfolio figure, options included (§6)', () => {
  test.each(['cvar', 'var'] as const)(
    '%s on a book of stocks, options and foreign positions',
    (risk_measure) => {
      const prepared = prepareRiskAttribution(
        {
          securities: [
            { id: 'c', symbol: call, quantity: 3 },
            { id: 'p', symbol: put, quantity: -2, currency: 'EUR' },
            { id: 'a', symbol: 'AAA', quantity: -150 },
            { id: 'b', symbol: 'BBB', quantity: 80, currency: 'JPY' },
            { id: 'cash', symbol: 'CASH:EUR', quantity: 500 },
          ],
          date,
          projection,
          risk_measure,
          horizon: 20,
        },
        source,
        { paths: 3000 },
      );
      if (prepared.kind !== 'simulation') throw new Error('simulates');
      const result = simulate(prepared.scenario, prepared.simulation);
      const shaped = prepared.finish(result);
      const total = shaped.results.reduce((s, r) => s + sumOf(r.mctr), 0);
      const portfolio = prepared.pick(result).portfolio / prepared.nlv;
      expect(Math.abs(total - portfolio)).toBeLessThan(1e-12 * Math.abs(portfolio) + 1e-15);
      expect(portfolio).not.toBe(0);
    },
  );
});

describe('exposure and value of an option', () => {
  test('delta-adjusted exposure q·m·Δ·S (a long put is short); value q·m·P0 in the NLV', () => {
    const prepared = prepareRiskAttribution(
      {
        securities: [
          { id: 'c', symbol: call, quantity: 3 },
          { id: 'p', symbol: put, quantity: 2 },
        ],
        date,
        projection,
      },
      source,
    );
    const [c, p] = prepared.facts;
    expect(c!.deltaExposure).toBeCloseTo(300 * blackScholesDelta('C', S, K, T, ewmaVol) * S, 8);
    expect(p!.deltaExposure).toBeCloseTo(200 * blackScholesDelta('P', S, K, T, ewmaVol) * S, 8);
    expect(p!.deltaExposure).toBeLessThan(0);
    expect(c!.exposure).toBeCloseTo(300 * blackScholes('C', S, K, T, ewmaVol), 8);
    expect([c!.instrumentType, c!.optionRight, p!.optionRight]).toEqual(['EQUITY_OPTION', 'C', 'P']);
  });

  test('vol (one regime): |q·m·Δ·S|·σ_AAA·√252 / NLV', () => {
    const result = runRiskAttribution(
      { securities: [{ id: 'c', symbol: call, quantity: 3 }], date, projection, nlv: NLV },
      source,
      { distress: false },
    );
    const delta = 300 * blackScholesDelta('C', S, K, T, ewmaVol) * S;
    expect(sumOf(result.results[0]!.mctr)).toBeCloseTo((delta * ewmaVol) / NLV, 10);
  });

  test('an option whose underlying has no data is unmapped; a market price outside the bounds is a 400', () => {
    const result = runRiskAttribution(
      {
        securities: [
          { id: 'x', symbol: `ZZZ ${expiry} C10`, quantity: 1 },
          { id: 's', symbol: 'AAA', quantity: 1 },
        ],
        date,
        projection,
      },
      source,
    );
    expect(result.unmapped_tickers).toEqual([`ZZZ ${expiry} C10`]);
    expect(() =>
      runRiskAttribution(
        { securities: [{ id: 'c', symbol: call, quantity: 1, market_price: S * 2 }], date, projection },
        source,
      ),
    ).toThrow(expect.objectContaining({ parameter: 'securities[0].market_price' }));
  });

  test('a foreign option: P&L = q·m·fx·(e^{x_fx}·BS_h − P0)', () => {
    const prepared = prepareRiskAttribution(
      {
        securities: [{ id: 'c', symbol: call, quantity: 1, currency: 'EUR' }],
        date,
        projection,
        risk_measure: 'cvar',
        nlv: NLV,
      },
      source,
      { paths: 100 },
    );
    if (prepared.kind !== 'simulation') throw new Error('cvar simulates');
    const { scenario } = prepared;
    const lines = scenario.lines!;
    const fx = source.get('FX:EURUSD')!.values[row]!;
    expect(lines.exposure[0]).toBeCloseTo(100 * fx, 9);
    const generator = new PathGenerator(scenario, seedFromNumber(2));
    const pricer = new LinePricer(lines);
    for (let p = 0; p < 20; p++) {
      generator.draw(p);
      const xu = generator.x[lines.primary[0]!]!;
      const xf = generator.x[lines.fx[0]!]!;
      const p0 = blackScholes('C', S, K, T, ewmaVol);
      const expected =
        100 * fx * (Math.exp(xf) * blackScholes('C', S * Math.exp(xu), K, T - 5 / 252, ewmaVol) - p0);
      expect(pricer.price(generator.x, generator.e)).toBeCloseTo(expected, 8);
    }
  });
});
