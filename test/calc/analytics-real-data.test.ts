/**
 * The analytics of §16–§19 on real history (../shared/data/market, read in place): the parametric
 * risk of a long/short stock book against the naive estimates by direct loops, the exposure and
 * stresses of a real book against its CSV prices, an option's delta-notional against a finite
 * difference of the stress revaluation, and the parametric VaR against the Monte Carlo one.
 */
import { dayNumber, type PriceSeries } from '../../calc/market-data';
import { runExposure } from '../../calc/exposure';
import { confidenceLevel, runParametricRiskAttribution } from '../../calc/parametric-risk';
import { runProperties } from '../../calc/properties';
import { runSensitivity, runUnderlyingStressSensitivity } from '../../calc/sensitivity';
import { realMarket } from './support/market-csv';
import { naiveModel } from './support/naive-estimates';

const market = realMarket();
const STOCKS = ['AAPL', 'JPM', 'XOM', 'WMT', 'PFE', 'GE'];
const QUANTITIES = [300, 200, -400, 250, -600, 500];

function lastPrice(symbol: string, date: string): number {
  const series = market.get(symbol)!;
  const dates = series.dates as Int32Array;
  let i = dates.length - 1;
  while (dates[i]! > dayNumber(date)) i--;
  return series.values[i]!;
}

/** Daily log-returns over the last 1260 IND:SPX dates on or before `date`, by a direct loop. */
function directReturns(symbols: string[], date: string, source: ReadonlyMap<string, PriceSeries> = market) {
  const calendar = Array.from(source.get('IND:SPX')!.dates as Int32Array).filter((d) => d <= dayNumber(date));
  const window = calendar.slice(-1261);
  return symbols.map((symbol) => {
    const s = source.get(symbol)!;
    const byDay = new Map(Array.from(s.dates as Int32Array, (d, i) => [d, s.values[i]!]));
    return Float64Array.from(window.slice(1), (d, t) => Math.log(byDay.get(d)! / byDay.get(window[t]!)!));
  });
}

const book = STOCKS.map((symbol, i) => ({ id: symbol.toLowerCase(), symbol, quantity: QUANTITIES[i]! }));

describe.each(['20221228', '20191231'])('on %s', (date) => {
  test('parametric: σ_p² = eᵀBΣBᵀe + Σe²r from the naive estimates; VaR, CVaR and the Euler split', () => {
    const nlv = 1e6;
    const result = runParametricRiskAttribution({ securities: book, date, nlv, confidence: '99%' }, market, {
      distress: false,
    });
    const [spx, ...stocks] = directReturns(['IND:SPX', ...STOCKS], date);
    const naive = naiveModel([spx!], stocks, 2, 6, 1);
    const factorVariance = naive.factorCovariance[0]![0]!;
    const e = STOCKS.map((symbol, i) => QUANTITIES[i]! * lastPrice(symbol, date));
    const b = e.reduce((s, ei, i) => s + ei * naive.betas[i]![0]!, 0);
    const variance =
      (b * b * factorVariance + e.reduce((s, ei, i) => s + ei * ei * naive.residualVariance[i]!, 0)) /
      nlv ** 2;
    const sigma = Math.sqrt(variance);
    const { z, cvarMultiple } = confidenceLevel('99%');
    expect(Math.abs(result.volatility / (sigma * Math.sqrt(252)) - 1)).toBeLessThan(1e-9);
    expect(Math.abs(result.var / (-z * sigma) - 1)).toBeLessThan(1e-9);
    expect(Math.abs(result.cvar / (-cvarMultiple * sigma) - 1)).toBeLessThan(1e-9);
    result.results.forEach((position, i) => {
      const factor = (e[i]! * naive.betas[i]![0]! * factorVariance * b) / (sigma * nlv * nlv);
      const residual = (e[i]! ** 2 * naive.residualVariance[i]!) / (sigma * nlv * nlv);
      expect(position.var.map((p) => p.projection)).toEqual(['IND:SPX', 'residual']);
      expect(Math.abs(position.var[0]!.value - -z * factor)).toBeLessThan(1e-9 * z * sigma);
      expect(Math.abs(position.var[1]!.value - -z * residual)).toBeLessThan(1e-9 * z * sigma);
    });
  });

  test('exposure and stresses: v = q·price from the CSV, v·s/NLV per stress, sides and net', () => {
    const values = STOCKS.map((symbol, i) => QUANTITIES[i]! * lastPrice(symbol, date));
    const nlv = values.reduce((a, b) => a + b);
    const exposure = runExposure({ securities: book, date }, market);
    expect(exposure.nlv).toBeCloseTo(nlv, 6);
    expect(exposure.results.map((r) => r.notional)).toEqual(values);
    expect(exposure.net).toBeCloseTo(1, 12);
    expect(exposure.short).toBeCloseTo(values.filter((v) => v < 0).reduce((a, b) => a + b) / nlv, 12);
    const stresses = [-0.3, -0.01, 0, 0.02, 0.5];
    const stressed = runUnderlyingStressSensitivity(
      { securities: book, date, stress_values: stresses },
      market,
    );
    stressed.results.forEach((r, i) =>
      r.values.forEach((x, j) => expect(x.value).toBe((values[i]! * stresses[j]!) / exposure.nlv + 0)),
    );
    expect(stressed.total[2]!.value).toBe(0);
  });

  test('an AAPL put at the EWMA vol: delta-notional = the finite difference of its stress revaluation', () => {
    const spot = lastPrice('AAPL', date);
    const expiry = date.slice(0, 4) === '2022' ? '20230616' : '20200619';
    const put = { id: 'put', symbol: `AAPL ${expiry} P${Math.round(spot)}`, quantity: 10 };
    const body = { securities: [put], date, nlv: 1e5 };
    const delta = runSensitivity({ ...body, compute_notional: true }, market).total!;
    const h = 1e-5;
    const moves = runUnderlyingStressSensitivity({ ...body, stress_values: [-h, h] }, market).total;
    // P&L/NLV at S(1 ± h): (P(S(1+h)) − P(S(1−h)))·NLV / (2h) = ∂P/∂S · S = Δ·S·q·m.
    expect(((moves[1]!.value - moves[0]!.value) * 1e5) / (2 * h)).toBeCloseTo(delta, 4);
    expect(delta).toBeLessThan(0);
    expect(runExposure(body, market).results[0]!.delta_notional).toBe(delta);
  });

  test('properties: the parametric VaR at 1 day is the Monte Carlo VaR to within its sampling and e^x − 1', () => {
    const props = runProperties({ securities: book, date, nlv: 1e6, horizon: 1, confidence: '95%' }, market, {
      distress: false,
    });
    expect(Math.abs(props.var / props.parametric_var - 1)).toBeLessThan(0.03);
    expect(Math.abs(props.cvar / props.parametric_cvar - 1)).toBeLessThan(0.03);
  });
});
