import fc from 'fast-check';
import { CalcInputError } from '../../calc/input-error';
import {
  alignToCalendar,
  buildCalendar,
  dayNumber,
  extremeMoves,
  formatDay,
  loadWindow,
  pricesFromReturns,
  returnGrid,
  toDaySeries,
  windowReturns,
} from '../../calc/market-data';
import { businessDays } from './support/synthetic-market';

const series = (days: number[], values: number[]) => ({
  days: Int32Array.from(days),
  values: Float64Array.from(values),
});

describe('dates', () => {
  test('YYYYMMDD and day numbers round-trip; impossible dates are refused', () => {
    expect(dayNumber('19700101')).toBe(0);
    expect(dayNumber('20000229')).toBe(11016);
    expect(formatDay(dayNumber('20221228'))).toBe('20221228');
    expect(dayNumber(11016)).toBe(11016);
    for (const bad of ['20230229', '2022-12-28', '20221301', '2022122'])
      expect(() => dayNumber(bad)).toThrow(RangeError);
    fc.assert(
      fc.property(fc.integer({ min: -100_000, max: 100_000 }), (day) => dayNumber(formatDay(day)) === day),
    );
  });

  test('series dates must be strictly ascending', () => {
    expect(() => toDaySeries('X', { dates: ['20200102', '20200102'], values: new Float64Array(2) })).toThrow(
      CalcInputError,
    );
  });
});

describe('calendar and carry-forward', () => {
  const calendar = Int32Array.from([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);

  test('a missing price is carried forward for at most 5 calendar rows', () => {
    const prices = alignToCalendar(series([10], [100]), calendar, 0, 9);
    expect(Array.from(prices)).toEqual([100, 100, 100, 100, 100, 100, NaN, NaN, NaN, NaN]);
  });

  test('NaN and non-positive prices are missing; a price between calendar rows is known on the next row', () => {
    const withHoliday = Int32Array.from([10, 11, 12, 13, 15, 16, 17, 18, 19, 20]);
    const prices = alignToCalendar(series([10, 11, 12, 14], [1, NaN, 0, 3]), withHoliday, 0, 9);
    expect(Array.from(prices)).toEqual([1, 1, 1, 1, 3, 3, 3, 3, 3, 3]);
  });

  test('aligning a row range gives exactly the rows of a full alignment (property)', () => {
    const days = Array.from(businessDays(60));
    const cal = Int32Array.from(days);
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.integer({ min: days[0]! - 5, max: days[59]! + 3 }),
            fc.double({ min: -1, max: 10, noNaN: false }),
          ),
          {
            maxLength: 40,
          },
        ),
        fc.integer({ min: 0, max: 59 }),
        fc.integer({ min: 0, max: 59 }),
        (points, a, b) => {
          const unique = [...new Map(points.map(([d, v]) => [d, v])).entries()].sort((x, y) => x[0] - y[0]);
          const s = series(
            unique.map(([d]) => d),
            unique.map(([, v]) => v),
          );
          const [from, to] = a <= b ? [a, b] : [b, a];
          const full = alignToCalendar(s, cal, 0, 59);
          expect(Array.from(alignToCalendar(s, cal, from, to))).toEqual(
            Array.from(full.subarray(from, to + 1)),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  test('date null is the latest date of the first projection; a date cuts the calendar', () => {
    const s = series([100, 101, 102, 105], [1, 2, 3, 4]);
    expect(buildCalendar(s, null).anchorDay).toBe(105);
    const cut = buildCalendar(s, 103);
    expect(Array.from(cut.days)).toEqual([100, 101, 102]);
    expect(cut.anchorDay).toBe(102);
    expect(() => buildCalendar(s, 99)).toThrow(CalcInputError);
  });
});

describe('returns over the window', () => {
  const days = businessDays(1400);
  const prices = Float64Array.from(days, (_, t) => 100 * Math.exp(0.001 * t + 0.01 * Math.sin(t)));
  const s = { days, values: prices };

  test('s = 1: the last 1260 daily log-returns', () => {
    const calendar = buildCalendar(s, null);
    const grid = returnGrid(calendar, 1);
    expect(grid.length).toBe(1260);
    const r = windowReturns(s, calendar, grid);
    expect(r[1259]).toBeCloseTo(Math.log(prices[1399]! / prices[1398]!), 15);
    expect(r[0]).toBeCloseTo(Math.log(prices[140]! / prices[139]!), 15);
    expect(grid.observationDays[1259]).toBe(days[1399]);
  });

  test('s = 5: 252 non-overlapping 5-day returns anchored on the calculation date', () => {
    const date = formatDay(days[1390]!);
    const calendar = buildCalendar(s, date);
    const grid = returnGrid(calendar, 5);
    expect(grid.length).toBe(252);
    const r = windowReturns(s, calendar, grid);
    expect(grid.observationDays[251]).toBe(days[1390]);
    expect(grid.observationDays[250]).toBe(days[1385]);
    expect(r[251]).toBeCloseTo(Math.log(prices[1390]! / prices[1385]!), 15);
    expect(r[0]).toBeCloseTo(Math.log(prices[1390 - 251 * 5]! / prices[1390 - 252 * 5]!), 15);
  });

  test('a short history gives a shorter window', () => {
    const short = { days: days.subarray(0, 100), values: prices.subarray(0, 100) };
    expect(returnGrid(buildCalendar(short, null), 1).length).toBe(99);
    expect(returnGrid(buildCalendar(short, null), 5).length).toBe(19);
  });

  test('fewer than 60 returns or no data at all → unmapped, in the order asked', () => {
    const source = new Map([
      ['IND:F', { dates: days, values: prices }],
      ['YOUNG', { dates: days.subarray(1340), values: prices.subarray(1340) }], // 59 returns
      ['OK', { dates: days.subarray(1339), values: prices.subarray(1339) }], // 60 returns
    ]);
    const window = loadWindow(source, ['IND:F', 'NONE', 'YOUNG', 'OK', 'NONE'], null, 1);
    expect(window.unmapped).toEqual(['NONE', 'YOUNG']);
    expect([...window.returns.keys()]).toEqual(['IND:F', 'OK']);
    expect(window.latestPrices.get('YOUNG')).toBe(prices[1399]);
  });
});

describe('custom indexes and history', () => {
  test('RETURN and RETURN_100 series become prices from base_price', () => {
    const dates = ['20200102', '20200103', '20200106', '20200107'];
    const decimal = pricesFromReturns(
      { dates, values: Float64Array.from([0.1, -0.5, NaN, 1]) },
      'RETURN',
      10,
    );
    expect(Array.from(decimal.values)).toEqual([11, 5.5, NaN, 11]);
    const percent = pricesFromReturns(
      { dates, values: Float64Array.from([10, -50, NaN, 100]) },
      'RETURN_100',
    );
    expect(Array.from(percent.values)).toEqual([1.1, 0.55, NaN, 1.1]);
  });

  test('worst and best h-observation moves use nothing after the date', () => {
    const s = series([1, 2, 3, 4, 5, 6], [100, 90, 99, 80, 120, 10]);
    expect(extremeMoves(s, 5, 1)).toEqual({ worst: 80 / 99 - 1, best: 120 / 80 - 1 });
    expect(extremeMoves(s, 5, 2)).toEqual({ worst: 80 / 90 - 1, best: 120 / 99 - 1 });
    expect(extremeMoves(s, 2, 2)).toBeNull();
  });
});
