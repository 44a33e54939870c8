/**
 * On real history (../shared/data/market, read in place): IND:SPX is the SP500 column of
 * sp500_index_1990_2022.csv; after 2022 SPY stands in for it (the data README's advice).
 */
import { distressMask } from '../../calc/estimation';
import { dayNumber, type PriceSeries } from '../../calc/market-data';
import { runRiskAttribution } from '../../calc/risk-attribution';
import { prepareStressTest, runStressTest, type StressTestRequest } from '../../calc/stress-test';
import { simulate } from '../../calc/simulation';
import { realMarket } from './support/market-csv';
import { naiveModel } from './support/naive-estimates';

const market = realMarket();
const STOCKS = ['AAPL', 'JPM', 'XOM', 'WMT', 'PFE', 'GE'];
/** Positions of about $100,000 each. */
function portfolio(date: string) {
  return STOCKS.map((symbol) => {
    const series = market.get(symbol)!;
    const dates = series.dates as Int32Array;
    let i = dates.length - 1;
    while (dates[i]! > dayNumber(date)) i--;
    return { id: symbol.toLowerCase(), symbol, quantity: Math.round(100_000 / series.values[i]!) };
  });
}

/** Daily log-returns over the last 1260 calendar (index) dates on or before `date`, by a direct loop. */
function directReturns(
  symbols: string[],
  calendarSymbol: string,
  date: string,
  source: ReadonlyMap<string, PriceSeries> = market,
) {
  const calendar = Array.from(source.get(calendarSymbol)!.dates as Int32Array).filter(
    (d) => d <= dayNumber(date),
  );
  const window = calendar.slice(-1261);
  return symbols.map((symbol) => {
    const s = source.get(symbol)!;
    const byDay = new Map(Array.from(s.dates as Int32Array, (d, i) => [d, s.values[i]!]));
    return Float64Array.from(window.slice(1), (d, t) => Math.log(byDay.get(d)! / byDay.get(window[t]!)!));
  });
}

describe('S&P 500 −10% on a stock portfolio', () => {
  test.each(['20221228', '20191231'])(
    'on %s: EV per position is the beta-weighted shock, exactly v·(e^{βc + r·h/2} − 1) (100,000 paths)',
    (date) => {
      const securities = portfolio(date);
      const magnitude = -0.1;
      const request: StressTestRequest = { securities, date, magnitude };
      const prepared = prepareStressTest(request, market);
      const sim = simulate(prepared.scenario, prepared.simulation);
      const result = prepared.finish(sim);
      expect(result.implied_horizon).toBe(5);
      expect(result.implied_magnitudes[0]).toBeCloseTo(magnitude, 14);

      // Betas and residuals by the naive double loop on directly computed returns.
      const [spx, ...stocks] = directReturns(['IND:SPX', ...STOCKS], 'IND:SPX', date);
      const naive = naiveModel([spx!], stocks, 2, 6, 1);
      const c = Math.log1p(magnitude);
      const h = 5;
      const nlv = prepared.nlv;
      let betaWeighted = 0;
      result.results.forEach((position, i) => {
        const beta = naive.betas[i]![0]!;
        const r = naive.residualVariance[i]!;
        const v = prepared.scenario.exposure[i]!;
        expect(Math.abs(prepared.scenario.beta[i]! - beta)).toBeLessThan(1e-10);
        const ev = position.ev.reduce((s, x) => s + x.value, 0);
        // The shock is the only projection, so f = c in both regimes and x = β·c + e, e ~ N(0, r·h).
        const expected = (v * Math.expm1(beta * c + (r * h) / 2)) / nlv;
        const sd = Math.exp(beta * c) * Math.sqrt(Math.exp(2 * r * h) - Math.exp(r * h));
        const se = (Math.abs(v) * sd) / nlv / Math.sqrt(sim.paths);
        expect(Math.abs(ev - expected)).toBeLessThanOrEqual(3 * se);
        // "close to the beta-weighted shock": within 15% of v·β·magnitude.
        expect(Math.abs(ev - (v * beta * magnitude) / nlv)).toBeLessThan(
          0.15 * Math.abs((v * beta * magnitude) / nlv),
        );
        betaWeighted += (v * beta * magnitude) / nlv;
      });
      const portfolioEv = sim.ev.portfolio / nlv;
      expect(Math.abs(portfolioEv - betaWeighted)).toBeLessThan(0.1 * Math.abs(betaWeighted));
      // The tails straddle the mean, and the −10% shock is extrapolated at 5 days but within history.
      expect(sim.cvarNeg.portfolio / nlv).toBeLessThan(portfolioEv);
      expect(sim.cvarPos.portfolio / nlv).toBeGreaterThan(portfolioEv);
      expect(result.extrapolated).toBe(true);
      expect(result.out_of_range).toBe(false);
    },
  );
});

describe('distress regime on real S&P 500 history (§4)', () => {
  /** An independent reading of §4: RMS over t−21…t−1, numpy-style 90th percentile, ≥ threshold. */
  function independentMask(r: Float64Array): number[] {
    const rms = Array.from(r, (_, t) =>
      t < 21 ? NaN : Math.sqrt(r.slice(t - 21, t).reduce((s, x) => s + x * x, 0) / 21),
    );
    const sorted = rms.filter((x) => !isNaN(x)).sort((a, b) => a - b);
    const pos = 0.9 * (sorted.length - 1);
    const lo = Math.floor(pos);
    const threshold = sorted[lo]! + (pos - lo) * (sorted[lo + 1]! - sorted[lo]!);
    return rms.map((x) => (x >= threshold ? 1 : 0));
  }

  test.each(['20201231', '20091231'])('window ending %s: the mask matches t−21…t−1, never t', (date) => {
    const [spx] = directReturns(['IND:SPX'], 'IND:SPX', date);
    const mask = Array.from(distressMask(spx!));
    expect(mask).toEqual(independentMask(spx!));
    expect(mask.slice(0, 21).every((m) => m === 0)).toBe(true);
    // A day's own move does not classify it: the mask is unchanged when one day's return is
    // replaced, except through the days after it (and the threshold, which we keep fixed by
    // replacing it with a return of the same size and opposite sign).
    const worst = spx!.reduce((w, x, t) => (Math.abs(x) > Math.abs(spx![w]!) ? t : w), 0);
    const flipped = Float64Array.from(spx!);
    flipped[worst] = -flipped[worst]!;
    expect(Array.from(distressMask(flipped))).toEqual(mask);
  });

  test('the first day of the 2020 sell-off (2020-02-24, −3.4%) is calm: its own move does not count', () => {
    const date = '20201231';
    const calendar = Array.from(market.get('IND:SPX')!.dates as Int32Array).filter(
      (d) => d <= dayNumber(date),
    );
    const window = calendar.slice(-1261).slice(1);
    const [spx] = directReturns(['IND:SPX'], 'IND:SPX', date);
    const t = window.indexOf(dayNumber('20200224'));
    expect(spx![t]!).toBeLessThan(-0.03);
    const mask = distressMask(spx!);
    expect(mask[t]).toBe(0);
    // Under the old rule (t−20…t) the day's own move would have classified it.
    const own = Math.sqrt(spx!.slice(t - 20, t + 1).reduce((s, x) => s + x * x, 0) / 21);
    const previous = Math.sqrt(spx!.slice(t - 21, t).reduce((s, x) => s + x * x, 0) / 21);
    expect(own).toBeGreaterThan(1.3 * previous);
    // The next day's value includes the −3.4% move and the week after is distress.
    expect(mask[window.indexOf(dayNumber('20200302'))]).toBe(1);
  });
});

describe('dynamic range, horizon search and history', () => {
  const date = '20221228';
  const securities = portfolio(date);
  const run = (extra: Partial<StressTestRequest>) =>
    runStressTest({ securities, date, magnitude: -0.1, ...extra }, market, { paths: 1000 });

  test('a shock inside dynamic_range is not extrapolated; one outside is', () => {
    const inside = run({ magnitude: -0.02 });
    expect(inside.dynamic_range[0]).toBeLessThan(-0.02);
    expect(inside.dynamic_range[1]).toBeGreaterThan(0.02);
    expect(inside.extrapolated).toBe(false);
    // The range is ±2σ√(h/s) in log space.
    expect(Math.log1p(inside.dynamic_range[0])).toBeCloseTo(-Math.log1p(inside.dynamic_range[1]), 14);
    const outside = run({ magnitude: inside.dynamic_range[0] * 1.01 });
    expect(outside.extrapolated).toBe(true);
  });

  test.each([1, 5] as const)(
    'horizon null picks the smallest horizon containing the magnitude (sampling %i)',
    (sampling) => {
      const found = run({ horizon: null, sampling });
      const h = found.implied_horizon;
      expect(h).toBeGreaterThan(5);
      expect(h % sampling).toBe(0);
      expect(found.extrapolated).toBe(false);
      expect(found.dynamic_range[0]).toBeLessThanOrEqual(-0.1);
      const shorter = run({ horizon: h - sampling, sampling });
      expect(shorter.dynamic_range[0]).toBeGreaterThan(-0.1);
      expect(shorter.extrapolated).toBe(true);
      expect(run({ horizon: h, sampling })).toMatchObject({
        dynamic_range: found.dynamic_range,
        implied_horizon: h,
      });
    },
  );

  test('out_of_range: beyond the worst h-day move of the whole history up to the date', () => {
    // The worst S&P day in 1990–2022 is 2020-03-16 (−12%); the worst week lies in October 2008.
    expect(run({ horizon: 1, magnitude: -0.1 }).out_of_range).toBe(false);
    expect(run({ horizon: 1, magnitude: -0.13 }).out_of_range).toBe(true);
    expect(run({ horizon: 5, magnitude: -0.35 }).out_of_range).toBe(true);
    expect(run({ horizon: 1, magnitude: -0.1, date: '20200131' }).out_of_range).toBe(true);
  });

  test('unknown symbols, and symbols without 60 returns up to the date, land in unmapped_tickers', () => {
    const result = runStressTest(
      {
        securities: [
          ...portfolio('20120601'),
          { id: 'meta', symbol: 'META', quantity: 10, market_price: 27 }, // listed 2012-05-18
          { id: 'baba', symbol: 'BABA', quantity: 10, market_price: 90 }, // listed 2014: only later data
          { id: 'nope', symbol: 'NOPE:XYZ', quantity: 1, market_price: 1 },
        ],
        date: '20120601',
        magnitude: -0.05,
      },
      market,
      { paths: 1000 },
    );
    expect(result.unmapped_tickers).toEqual(['META', 'BABA', 'NOPE:XYZ']);
    expect(result.results.map((r) => r.id)).toEqual(STOCKS.map((s) => s.toLowerCase()));
  });
});

describe('several projections on real data', () => {
  test('IND:SPX, SPY and the factor ETFs (nearly collinear): finite, exact decomposition', () => {
    const date = '20221228';
    const projection = ['IND:SPX', 'SPY', 'MTUM', 'QUAL', 'SIZE', 'USMV', 'VLUE'];
    const prepared = prepareStressTest(
      { securities: portfolio(date), date, magnitude: -0.1, projection },
      market,
      {
        paths: 5000,
      },
    );
    const sim = simulate(prepared.scenario, prepared.simulation);
    const result = prepared.finish(sim);
    expect(result.implied_magnitudes[0]).toBeCloseTo(-0.1, 14);
    expect(result.implied_magnitudes[1]).toBeCloseTo(-0.1, 2); // SPY tracks the index
    for (const key of ['ev', 'cvar_neg', 'cvar_pos'] as const) {
      const total = result.results.reduce((s, r) => s + r[key].reduce((t, v) => t + v.value, 0), 0);
      const figure =
        { ev: sim.ev, cvar_neg: sim.cvarNeg, cvar_pos: sim.cvarPos }[key].portfolio / prepared.nlv;
      expect(Math.abs(total - figure)).toBeLessThanOrEqual(1e-9 * Math.abs(figure));
    }
    for (const b of prepared.scenario.beta) expect(Math.abs(b)).toBeLessThan(10);
  });

  test('after 2022 SPY stands in for the index; risk attribution by vol sums to σ_p', () => {
    const date = '20241129';
    const securities = portfolio(date);
    const result = runRiskAttribution({ securities, date, projection: ['SPY'] }, market);
    const total = result.results.reduce((s, r) => s + r.mctr.reduce((t, v) => t + v.value, 0), 0);
    // A diversified large-cap book: annualised volatility between 10% and 30%.
    expect(total).toBeGreaterThan(0.1);
    expect(total).toBeLessThan(0.3);
    const stress = runStressTest(
      { securities, date, projection: ['SPY'], shock: 'SPY', magnitude: -0.1 },
      market,
      {
        paths: 2000,
      },
    );
    const ev = stress.results.reduce((s, r) => s + r.ev.reduce((t, v) => t + v.value, 0), 0);
    expect(ev).toBeLessThan(-0.05);
    expect(ev).toBeGreaterThan(-0.15);
  });
});

test('the CSV parser reads both date layouts', () => {
  const spx = market.get('IND:SPX') as PriceSeries;
  expect(spx.dates[0]).toBe(dayNumber('19900102'));
  expect(spx.values[0]).toBe(359.69);
  expect(market.get('BABA')!.dates[0]).toBeGreaterThan(dayNumber('20140901'));
});

describe('FX on real history (a synthetic EURUSD made from real prices, §10)', () => {
  // EURUSD := 1.1·(XOM/WMT)^0.3 on XOM's dates: real-looking moves, correlated with the market.
  const xom = market.get('XOM')!;
  const wmt = market.get('WMT')!;
  const wmtByDay = new Map(Array.from(wmt.dates as Int32Array, (d, i) => [d, wmt.values[i]!]));
  const fx: PriceSeries = {
    dates: xom.dates,
    values: Float64Array.from(xom.dates as Int32Array, (d, i) =>
      wmtByDay.has(d) ? 1.1 * Math.pow(xom.values[i]! / wmtByDay.get(d)!, 0.3) : NaN,
    ),
  };
  const withFx = new Map(market);
  withFx.set('FX:EURUSD', fx);
  const date = '20221228';
  const sum = (values: { value: number }[]) => values.reduce((s, v) => s + v.value, 0);

  test('EUR cash: vol (one regime) is the pair’s EWMA vol × √252; AAPL in EUR sums both drivers', () => {
    const [spx, aapl, eurusd] = directReturns(['IND:SPX', 'AAPL', 'FX:EURUSD'], 'IND:SPX', date, withFx);
    const cash = runRiskAttribution(
      { securities: [{ id: 'c', symbol: 'CASH:EUR', quantity: 1e5 }], date },
      withFx,
      { distress: false },
    );
    const naive = naiveModel([spx!], [aapl!, eurusd!], 2, 6, 1);
    expect(sum(cash.results[0]!.mctr)).toBeCloseTo(naive.securityVol[1]! * Math.sqrt(252), 10);
    const nlv = 1e6;
    const foreign = runRiskAttribution(
      { securities: [{ id: 'a', symbol: 'AAPL', quantity: 1000, currency: 'EUR' }], date, nlv },
      withFx,
      { distress: false },
    );
    const cross = naive.betas[0]![0]! * naive.factorCovariance[0]![0]! * naive.betas[1]![0]!;
    const variance = naive.securityVol[0]! ** 2 + naive.securityVol[1]! ** 2 + 2 * cross;
    const aaplPrice =
      market.get('AAPL')!.values[(market.get('AAPL')!.dates as Int32Array).indexOf(dayNumber(date))]!;
    const fxRate = fx.values[(fx.dates as Int32Array).indexOf(dayNumber(date))]!;
    const v = 1000 * aaplPrice * fxRate;
    expect(sum(foreign.results[0]!.mctr)).toBeCloseTo((v / nlv) * Math.sqrt(variance * 252), 10);
  });
});
