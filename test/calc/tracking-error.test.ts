/**
 * Marginal tracking error (methodology §20): the closed forms on hand-built returns, the Euler
 * identity (fast-check over random books, λ and weekly returns), symmetry, scale invariance, the
 * common-sample rule and no look-ahead.
 */
import fc from 'fast-check';
import { CalcInputError } from '../../calc';
import type { PriceSeries } from '../../calc/market-data';
import { observationWeights, runMarginalTrackingError } from '../../calc/tracking-error';
import { fxMarket } from './support/fx-market';

/** 300 weekdays of prices from given daily log-returns (row 0 = the first price). */
function handMarket(returns: Record<string, (t: number) => number>, rows = 300) {
  const days = new Int32Array(rows);
  let day = 18_000; // a Monday-ish start; only the order matters
  for (let t = 0; t < rows; t++) {
    days[t] = day;
    day += (t + 1) % 5 === 0 ? 3 : 1;
  }
  const source = new Map<string, PriceSeries>();
  for (const [symbol, r] of Object.entries(returns)) {
    const values = new Float64Array(rows);
    let level = 100;
    for (let t = 0; t < rows; t++) {
      if (t > 0) level *= Math.exp(r(t));
      values[t] = level;
    }
    source.set(symbol, { dates: days, values });
  }
  return { source, days };
}

const xA = (t: number) => 0.01 * Math.sin(t * 0.7) + 0.002 * Math.cos(t * 3.1);
const xB = (t: number) => 0.008 * Math.sin(t * 0.7 + 0.4) - 0.003 * Math.cos(t * 1.3);
const hand = handMarket({ 'IND:SPX': (t) => 0.005 * Math.sin(t), A: xA, B: xB });
const one = (symbol: string, value = 1) => [{ id: symbol.toLowerCase(), symbol, quantity: value }];

describe('marginal tracking error, closed forms (§20)', () => {
  const n = 60;
  const rows = hand.days.length;
  const window = Array.from({ length: n }, (_, i) => rows - n + i);
  const byHand = (weights: Float64Array) => {
    const ra = window.map((t) => xA(t) - xB(t));
    const te = Math.sqrt(252) * Math.sqrt(ra.reduce((s, r, i) => s + weights[i]! * r * r, 0));
    const mte = (x: (t: number) => number) =>
      (252 * window.reduce((s, t, i) => s + weights[i]! * x(t) * ra[i]!, 0)) / te;
    return { te, mteA: mte(xA), mteB: mte(xB) };
  };

  test.each([
    ['equal weights', false],
    ['EWMA λ = 0.9', true],
  ])('p1 = 100%% A, p2 = 100%% B: TE and each MTE by hand (%s)', (_, ewma) => {
    const result = runMarginalTrackingError(
      {
        portfolio1: { securities: one('A', 3) },
        portfolio2: { securities: one('B', 7) },
        nDays: n,
        EWMA: ewma,
        exponential_decay: 0.9,
      },
      hand.source,
    );
    const expected = byHand(observationWeights(n, ewma ? 0.9 : null));
    expect(result.observations).toBe(n);
    expect(result.te).toBeCloseTo(expected.te, 12);
    const [a, b] = result.results;
    expect(a).toMatchObject({ id: 'a', symbol: 'A', weight_active: 1 });
    expect(b).toMatchObject({ id: 'b', symbol: 'B', weight_active: -1 });
    expect(a!.mte).toBeCloseTo(expected.mteA, 12);
    expect(b!.mte).toBeCloseTo(expected.mteB, 12);
    expect(a!.cte + b!.cte).toBeCloseTo(result.te, 14);
  });

  test('EWMA weights are λ^(T−t) normalised, newest last', () => {
    const w = observationWeights(4, 0.5);
    expect([...w]).toEqual([1 / 15, 2 / 15, 4 / 15, 8 / 15]);
    expect([...observationWeights(4, null)]).toEqual([0.25, 0.25, 0.25, 0.25]);
  });

  test('identical books: te = 0 and every mte and cte 0', () => {
    const book = { securities: [...one('A', 2), ...one('B', 5)] };
    const result = runMarginalTrackingError({ portfolio1: book, portfolio2: book }, hand.source);
    expect(result.te).toBe(0);
    for (const row of result.results) expect(row).toMatchObject({ weight_active: 0, mte: 0, cte: 0 });
  });

  test('weekly: non-overlapping 5-row returns, annualised by 52', () => {
    const result = runMarginalTrackingError(
      {
        portfolio1: { securities: one('A') },
        portfolio2: { securities: one('B') },
        weekly: true,
        nWeeks: 12,
      },
      hand.source,
    );
    const ends = Array.from({ length: 12 }, (_, i) => rows - 1 - 5 * (11 - i));
    const log = (x: (t: number) => number, end: number) =>
      [0, 1, 2, 3, 4].reduce((s, k) => s + x(end - k), 0);
    const ra = ends.map((e) => log(xA, e) - log(xB, e));
    const te = Math.sqrt(52) * Math.sqrt(ra.reduce((s, r) => s + r * r, 0) / 12);
    expect(result).toMatchObject({ weekly: true, observations: 12 });
    expect(result.te).toBeCloseTo(te, 12);
  });

  test('a 6-row gap in a series unmaps its symbol from both books; its value still counts in the NLV', () => {
    const gapped = new Map(hand.source);
    const c = hand.source.get('A')!;
    const values = Float64Array.from(c.values);
    for (let t = rows - 20; t < rows - 14; t++) values[t] = NaN;
    gapped.set('C', { dates: c.dates, values });
    const result = runMarginalTrackingError(
      {
        portfolio1: { securities: [...one('A'), ...one('C')] },
        portfolio2: { securities: [...one('B'), ...one('C')] },
        nDays: 60,
      },
      gapped,
    );
    expect(result.unmapped_tickers).toEqual(['C']);
    expect(result.results.map((r) => r.symbol)).toEqual(['A', 'B']);
    // A and C are worth about the same, so A is about half of p1's NLV.
    expect(result.results[0]!.weight_active).toBeGreaterThan(0.3);
    expect(result.results[0]!.weight_active).toBeLessThan(0.7);
    // Five missing rows are carried forward: nothing is unmapped.
    for (let t = rows - 20; t < rows - 15; t++) values[t] = NaN;
    values[rows - 15] = c.values[rows - 15]!;
    expect(
      runMarginalTrackingError(
        { portfolio1: { securities: one('C') }, portfolio2: { securities: one('B') }, nDays: 60 },
        gapped,
      ).unmapped_tickers,
    ).toEqual([]);
  });

  test('too few returns in the calendar is a 400 naming nDays or nWeeks', () => {
    const run = (extra: object) => () =>
      runMarginalTrackingError(
        { portfolio1: { securities: one('A') }, portfolio2: { securities: one('B') }, ...extra },
        hand.source,
      );
    expect(run({ nDays: 400 })).toThrow(/^nDays: the IND:SPX calendar holds only 299 daily returns/);
    expect(run({ weekly: true, nWeeks: 100 })).toThrow(/^nWeeks: the IND:SPX calendar holds only 59 weekly/);
    expect(run({ nDays: 19 })).toThrow(
      new CalcInputError('nDays', 'must be a whole number from 20 to 5040.'),
    );
    expect(run({ exponential_decay: 1 })).toThrow(
      /^exponential_decay: must be a number greater than 0 and less than 1/,
    );
    expect(run({ portfolio2: { securities: [{ id: 'x', symbol: 'A', quantity: 0 }] } })).toThrow(
      /^portfolio2\.nlv: is zero/,
    );
  });
});

describe('marginal tracking error on the synthetic FX market (§20)', () => {
  const { source, date } = fxMarket();
  const book = (quantities: number[], extra: object = {}) => ({
    date,
    securities: [
      { id: 'a', symbol: 'AAA', quantity: quantities[0]! },
      { id: 'b', symbol: 'BBB', quantity: quantities[1]!, currency: 'EUR' },
      { id: 'e', symbol: 'CASH:EUR', quantity: quantities[2]! },
      { id: 'j', symbol: 'CASH:JPY', quantity: quantities[3]! * 100 },
      { id: 's', symbol: 'IND:SPX', quantity: quantities[4]! / 10 },
    ],
    ...extra,
  });
  const quantities = fc.array(fc.integer({ min: 1, max: 1000 }), { minLength: 5, maxLength: 5 });

  test('Σ cte = te to 1e-12 (fast-check: random books, λ, weekly)', () => {
    fc.assert(
      fc.property(
        quantities,
        quantities,
        fc.boolean(),
        fc.boolean(),
        fc.double({ min: 0.5, max: 0.999, noNaN: true }),
        (q1, q2, weekly, ewma, lambda) => {
          const result = runMarginalTrackingError(
            { portfolio1: book(q1), portfolio2: book(q2), weekly, EWMA: ewma, exponential_decay: lambda },
            source,
          );
          const sum = result.results.reduce((s, r) => s + r.cte, 0);
          expect(Math.abs(sum - result.te)).toBeLessThanOrEqual(1e-12 * Math.max(result.te, 1e-3));
          expect(result.te).toBeGreaterThanOrEqual(0);
        },
      ),
      { numRuns: 40 },
    );
  });

  test('swapping the books keeps te and every cte and flips every mte', () => {
    const p1 = book([10, 20, 3000, 400, 5]);
    const p2 = book([40, 5, 100, 900, 20]);
    const forward = runMarginalTrackingError({ portfolio1: p1, portfolio2: p2, EWMA: true }, source);
    const back = runMarginalTrackingError({ portfolio1: p2, portfolio2: p1, EWMA: true }, source);
    expect(back.te).toBeCloseTo(forward.te, 14);
    const bySymbol = new Map(back.results.map((r) => [r.symbol, r]));
    for (const row of forward.results) {
      const other = bySymbol.get(row.symbol)!;
      expect(other.mte).toBeCloseTo(-row.mte, 13);
      expect(other.cte).toBeCloseTo(row.cte, 13);
      expect(other.weight_active).toBeCloseTo(-row.weight_active, 14);
    }
  });

  test('scaling a book’s quantities (and nlv) by c > 0 changes nothing', () => {
    const q = [10, 20, 3000, 400, 5];
    const base = runMarginalTrackingError(
      { portfolio1: book(q, { nlv: 50_000 }), portfolio2: book([1, 2, 3, 4, 5]) },
      source,
    );
    const scaled = runMarginalTrackingError(
      {
        portfolio1: book(
          q.map((x) => x * 2.5),
          { nlv: 125_000 },
        ),
        portfolio2: book([1, 2, 3, 4, 5].map((x) => x * 7)),
      },
      source,
    );
    expect(scaled.te).toBeCloseTo(base.te, 13);
    scaled.results.forEach((row, i) => {
      expect(row.weight_active).toBeCloseTo(base.results[i]!.weight_active, 13);
      expect(row.mte).toBeCloseTo(base.results[i]!.mte, 12);
    });
  });

  test('prices after the date change nothing (no look-ahead)', () => {
    const request = { portfolio1: book([10, 20, 30, 40, 50]), portfolio2: book([50, 40, 30, 20, 10]) };
    const before = runMarginalTrackingError(request, source);
    const changed = new Map(source);
    for (const [symbol, series] of source) {
      const values = Float64Array.from(series.values);
      for (let t = 1351; t < values.length; t++) values[t] = values[t]! * (1 + 0.3 * Math.sin(t));
      changed.set(symbol, { dates: series.dates, values });
    }
    expect(runMarginalTrackingError(request, changed)).toEqual(before);
    expect(before.date).toBe(date);
  });

  test('foreign positions carry their FX driver; base cash has no risk', () => {
    const result = runMarginalTrackingError(
      {
        portfolio1: {
          date,
          securities: [
            { id: 'e', symbol: 'CASH:EUR', quantity: 1000 },
            { id: 'u', symbol: 'CASH:USD', quantity: 1000 },
          ],
        },
        portfolio2: { date, securities: [{ id: 'u', symbol: 'CASH:USD', quantity: 1 }] },
        nDays: 252,
      },
      source,
    );
    const usd = result.results.find((r) => r.symbol === 'CASH:USD')!;
    expect(usd.mte).toBe(0);
    expect(result.te).toBeGreaterThan(0);
    expect(result.results.find((r) => r.symbol === 'CASH:EUR')!.cte).toBeCloseTo(result.te, 14);
  });
});
