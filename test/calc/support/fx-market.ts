import { formatDay, type PriceSeries } from '../../../calc/market-data';
import { syntheticMarket } from './synthetic-market';

/**
 * A synthetic market with currencies: two projections, two stocks, an option underlying and two FX
 * pairs (`FX:EURUSD` and `FX:USDJPY`, so EUR and JPY reach each other only through USD), each a
 * factor model with known parameters. The calculation date is row 1350 of 1400 business days.
 */
export function fxMarket() {
  const market = syntheticMarket({
    days: 1400,
    factors: [
      { symbol: 'IND:SPX', vol: 0.011 },
      { symbol: 'IND:F2', vol: 0.008 },
    ],
    correlation: 0.3,
    stocks: [
      { symbol: 'AAA', beta: [1.1, 0.3], residualVol: 0.012 },
      { symbol: 'BBB', beta: [0.6, -0.5], residualVol: 0.014 },
      { symbol: 'FX:EURUSD', beta: [0.15, -0.1], residualVol: 0.005 },
      { symbol: 'FX:USDJPY', beta: [-0.2, 0.25], residualVol: 0.006 },
    ],
    turbulence: [{ from: 700, to: 760, multiplier: 2.5 }],
    seed: 21,
  });
  const row = 1350;
  return { ...market, row, date: formatDay(market.days[row]!) };
}

/** The last `count` log-returns of a gap-free series up to and including row `row`. */
export function lastLogReturns(series: PriceSeries, row: number, count: number): number[] {
  const out: number[] = [];
  for (let t = row - count + 1; t <= row; t++) out.push(Math.log(series.values[t]! / series.values[t - 1]!));
  return out;
}

/** A new series whose every price is f(prices of the given series on that row). */
export function derivedSeries(
  inputs: readonly PriceSeries[],
  f: (...prices: number[]) => number,
): PriceSeries {
  const first = inputs[0]!;
  return {
    dates: first.dates,
    values: Float64Array.from(first.values, (_, t) => f(...inputs.map((s) => s.values[t]!))),
  };
}
