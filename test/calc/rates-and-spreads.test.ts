/**
 * Rates and spreads (§12): their series are levels in percent, their invariant is the change of level
 * in points, and a shock of `magnitude` moves the level by exactly magnitude × 100 points.
 */
import {
  buildCalendar,
  returnGrid,
  toDaySeries,
  windowReturns,
  type PriceSeries,
} from '../../calc/market-data';
import { dynamicRange, prepareStressTest, runStressTest } from '../../calc/stress-test';
import { fixtureMarket } from './support/fixture-market';

const { source, date, days } = fixtureMarket();

/** A 10-year yield around 1.77% that crosses zero: daily changes of a few basis points, drawn by an LCG. */
function rateSeries(): PriceSeries {
  let state = 12345;
  const uniform = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
  const values = new Float64Array(days.length);
  let level = 1.77;
  for (let i = 0; i < days.length; i++) {
    // The SPX return of the day pulls yields up (risk on), plus noise: β of SPX to the rate ≠ 0.
    const spx = source.get('IND:SPX')!.values;
    const ret = i === 0 ? 0 : Math.log(spx[i]! / spx[i - 1]!);
    level += 2 * ret + 0.04 * (uniform() - 0.5);
    // A stretch around zero and below (like EUR rates in 2020): those levels are real values.
    values[i] = i >= 1300 && i < 1360 ? level - 2.2 : level;
  }
  return { dates: days, values };
}

const market = new Map(source);
market.set('RATE:US10Y', rateSeries());
market.set('SPREAD:IGOAS', { dates: days, values: Float64Array.from(days, (_, i) => 1 + 0.001 * (i % 50)) });
const securities = [
  { id: 'a', symbol: 'AAA', quantity: 100 },
  { id: 'c', symbol: 'CCC', quantity: -40 },
];

test('a level series’ returns are changes in points, and zero or negative levels are values', () => {
  const rate = toDaySeries('RATE:US10Y', market.get('RATE:US10Y')!);
  expect(rate.levels).toBe(true);
  expect(toDaySeries('AAA', market.get('AAA')!).levels).toBeUndefined();
  const calendar = buildCalendar(toDaySeries('IND:SPX', market.get('IND:SPX')!), date);
  const grid = returnGrid(calendar, 1);
  const r = windowReturns(rate, calendar, grid);
  const offset = grid.fromRow;
  for (let t = 0; t < r.length; t++) {
    const row = offset + t;
    expect(r[t]).toBe(rate.values[row + 1]! - rate.values[row]!);
  }
  expect(r.some((x) => Number.isNaN(x))).toBe(false);
  expect(Math.min(...Array.from(rate.values))).toBeLessThan(0);
});

describe('a rate shock', () => {
  const projection = ['IND:SPX', 'RATE:US10Y'];
  test.each([-0.01, 0.005, -0.02])(
    'magnitude %d moves the level by exactly magnitude × 100 points',
    (magnitude) => {
      const request = { securities, date, projection, shock: 'RATE:US10Y', magnitude, horizon: 5 };
      const result = runStressTest(request, market, { paths: 2000 });
      // The shocked projection's implied move is the shock itself, in the magnitude's unit.
      // (to rounding: the conditional mean is Σ·b / (bᵀΣb) · c).
      expect(result.implied_magnitudes[1]).toBeCloseTo(magnitude, 15);
      const prepared = prepareStressTest(request, market, { paths: 2000 });
      for (const regime of prepared.scenario.regimes) {
        expect(Math.abs(regime.mean[1]! - magnitude * 100)).toBeLessThan(1e-12);
      }
      // dynamic_range is symmetric in points ÷ 100.
      expect(result.dynamic_range[0]).toBeCloseTo(-result.dynamic_range[1], 15);
      expect(result.dynamic_range[1]).toBeLessThan(0.05);
    },
  );

  test('a magnitude below −1 is a valid rate shock (−100 points); for a price it is not', () => {
    const run = (shock: string, magnitude: number) => () =>
      runStressTest({ securities, date, projection, shock, magnitude, horizon: 5 }, market, { paths: 200 });
    expect(run('RATE:US10Y', -1.5)).not.toThrow();
    expect(run('RATE:US10Y', -1.5)().out_of_range).toBe(true);
    expect(run('IND:SPX', -1.5)).toThrow(expect.objectContaining({ parameter: 'magnitude' }));
  });

  test('out_of_range compares with the worst and best h-day changes in points ÷ 100', () => {
    const values = Array.from(market.get('RATE:US10Y')!.values).slice(0, 1450);
    let worst = Infinity;
    let best = -Infinity;
    for (let i = 5; i < values.length; i++) {
      worst = Math.min(worst, (values[i]! - values[i - 5]!) / 100);
      best = Math.max(best, (values[i]! - values[i - 5]!) / 100);
    }
    const run = (magnitude: number) =>
      runStressTest({ securities, date, projection, shock: 'RATE:US10Y', magnitude, horizon: 5 }, market, {
        paths: 200,
      }).out_of_range;
    expect(run(worst * 0.99)).toBe(false);
    expect(run(worst * 1.01)).toBe(true);
    expect(run(best * 0.99)).toBe(false);
    expect(run(best * 1.01)).toBe(true);
  });

  test('dynamicRange in points: ±2σ√(h/s) ÷ 100', () => {
    expect(dynamicRange(0.05, 4, 1, true)).toEqual([(-2 * 0.05 * 2) / 100, (2 * 0.05 * 2) / 100]);
  });

  test('a spread not in the projection is shocked the same way', () => {
    const result = runStressTest(
      { securities, date, projection: ['IND:SPX'], shock: 'SPREAD:IGOAS', magnitude: 0.001, horizon: 5 },
      market,
      { paths: 1000 },
    );
    expect(Number.isFinite(result.implied_magnitudes[0])).toBe(true);
    expect(result.dynamic_range[1]).toBeCloseTo(-result.dynamic_range[0], 15);
  });
});
