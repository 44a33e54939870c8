/**
 * Backtest and backtest statistics (methodology §21): buy and hold on hand-built prices, every
 * closed form §21 lists, the periods, the benchmark, risk-free and projection series, and each 400.
 */
import { type BacktestRequest, runBacktest } from '../../calc/backtest';
import { dayNumber, daysFromCivil, formatDay, type PriceSeries } from '../../calc/market-data';
import { runMarginalTrackingError } from '../../calc/tracking-error';
import { realMarket } from './support/market-csv';

/** Weekdays from Monday 2021-01-04. */
function weekdays(count: number): Int32Array {
  const days: number[] = [];
  for (let day = daysFromCivil(2021, 1, 4); days.length < count; day++) {
    const weekday = ((((day % 7) + 7) % 7) + 3) % 7; // day 0 was a Thursday; 0 = Monday
    if (weekday < 5) days.push(day);
  }
  return Int32Array.from(days);
}

const DAYS = weekdays(130);
const at = (row: number) => formatDay(DAYS[row]!);
const series = (f: (t: number) => number): PriceSeries => ({
  dates: DAYS,
  values: Float64Array.from(DAYS, (_, t) => f(t)),
});
const spx = (t: number) => 3000 * Math.exp(0.004 * Math.sin(t * 0.9) + 0.0005 * t);

function market(extra: Record<string, (t: number) => number> = {}) {
  const source = new Map<string, PriceSeries>([['IND:SPX', series(spx)]]);
  for (const [symbol, f] of Object.entries(extra)) source.set(symbol, series(f));
  return source;
}

const run = (
  source: Map<string, PriceSeries>,
  request: Partial<BacktestRequest> & { securities?: object[] },
) =>
  runBacktest(
    {
      portfolio: { securities: (request.securities ?? []) as never, date: at(129) },
      ...request,
    } as BacktestRequest,
    source,
  );

describe('backtest closed forms (§21)', () => {
  test('one position growing by g a day, rf 0: T = (1+g)^m − 1, no volatility, sharpe and sortino null', () => {
    const g = 0.001;
    const result = run(market({ GROW: (t) => 50 * (1 + g) ** t }), {
      securities: [{ id: 'g', symbol: 'GROW', quantity: 10 }],
      backtest_date1: at(10),
      backtest_date2: at(60),
    });
    expect(result).toMatchObject({ start: at(10), end: at(60), periodicity: 'daily', periods: 50 });
    expect(result.statistics.total_return).toBeCloseTo((1 + g) ** 50 - 1, 12);
    expect(result.statistics).toMatchObject({
      volatility: 0,
      sharpe: null,
      sortino: null,
      max_drawdown: 0,
      max_drawdown_peak: null,
      max_drawdown_trough: null,
      hit_rate: 1,
    });
    expect(result.statistics.annualized_return).toBeCloseTo((1 + g) ** 252 - 1, 10);
    expect(result.nlv).toBeCloseTo(10 * 50 * (1 + g) ** 10, 9);
    expect(result.series!.portfolio[0]).toBe(100);
    expect(result.series!.rf_returns.every((x) => x === 0)).toBe(true);
  });

  test('two equal positions, one doubling and one flat: the final index is 150 (no rebalancing)', () => {
    const result = run(market({ UP: (t) => 10 * 2 ** (t / 20), FLAT: () => 10 }), {
      securities: [
        { id: 'u', symbol: 'UP', quantity: 5 },
        { id: 'f', symbol: 'FLAT', quantity: 5 },
      ],
      backtest_date1: at(0),
      backtest_date2: at(20),
    });
    expect(result.series!.portfolio.at(-1)).toBeCloseTo(150, 10);
    expect(result.statistics.total_return).toBeCloseTo(0.5, 12);
  });

  test('sampled NAV [100, 120, 90, 130, 80]: max_drawdown 80/130 − 1, peak t_3, trough t_4', () => {
    const path = [100, 120, 90, 130, 80];
    const result = run(market({ P: (t) => path[t - 40] ?? 100 }), {
      securities: [{ id: 'p', symbol: 'P', quantity: 1 }],
      backtest_date1: at(40),
      backtest_date2: at(44),
    });
    expect(result.series!.portfolio).toEqual(path);
    expect(result.statistics.max_drawdown).toBeCloseTo(80 / 130 - 1, 14);
    expect(result.statistics.max_drawdown_peak).toBe(at(43));
    expect(result.statistics.max_drawdown_trough).toBe(at(44));
    expect(result.statistics.best_period).toEqual({ date: at(43), return: 130 / 90 - 1 });
    expect(result.statistics.worst_period).toEqual({ date: at(44), return: 80 / 130 - 1 });
    expect(result.statistics.hit_rate).toBe(0.5);
  });

  test('one unit of the benchmark: beta 1, alpha 0, correlation 1, tracking error 0', () => {
    const result = run(market(), {
      securities: [{ id: 's', symbol: 'IND:SPX', quantity: 1 }],
      backtest_date1: at(5),
    });
    const s = result.statistics;
    expect(s.beta).toBeCloseTo(1, 12);
    expect(s.alpha).toBeCloseTo(0, 12);
    expect(s.correlation).toBeCloseTo(1, 12);
    expect(s.tracking_error).toBe(0);
    expect(s.information_ratio).toBeNull();
    expect(s.benchmark!.total_return).toBeCloseTo(s.total_return, 14);
    expect(s.benchmark!.volatility).toBeCloseTo(s.volatility, 14);
    expect(result.series!.benchmark).toEqual(result.series!.portfolio.map((x) => expect.closeTo(x, 10)));
    expect(result.benchmark_ticker).toBe('IND:SPX');
  });

  test('a constant rate of 5 gives rf_k = 0.05/N; a price series gives its price return', () => {
    const source = market({ A: (t) => 20 + Math.sin(t), 'RATE:US3M': () => 5, TBILL: (t) => 100 + 0.01 * t });
    const base = { securities: [{ id: 'a', symbol: 'A', quantity: 3 }], backtest_date1: at(5) };
    for (const [periodicity, N] of [
      ['daily', 252],
      ['weekly', 52],
      ['MONTHLY', 12],
    ] as const) {
      const result = run(source, {
        ...base,
        backtest_periodicity: periodicity,
        backtest_rfrate_ticker: 'RATE:US3M',
      });
      expect(result.periodicity).toBe(periodicity.toLowerCase());
      expect(result.series!.rf_returns).toEqual(result.series!.returns.map(() => 0.05 / N));
      const ex = result.series!.returns.map((r) => r - 0.05 / N);
      const mean = ex.reduce((s, x) => s + x, 0) / ex.length;
      const sd = Math.sqrt(ex.reduce((s, x) => s + (x - mean) ** 2, 0) / (ex.length - 1));
      expect(result.statistics.sharpe).toBeCloseTo((Math.sqrt(N) * mean) / sd, 10);
    }
    const bill = run(source, { ...base, backtest_rfrate_ticker: 'TBILL' });
    expect(bill.series!.rf_returns[0]).toBeCloseTo((100 + 0.01 * 6) / (100 + 0.01 * 5) - 1, 14);
  });

  test('monthly r_k = Π(1 + daily r) − 1 (1e-12); weekly ends on the last day of each ISO week', () => {
    const source = market({ A: (t) => 20 + 3 * Math.sin(t / 4) });
    const request = {
      securities: [{ id: 'a', symbol: 'A', quantity: 3 }],
      backtest_date1: at(0),
      backtest_date2: at(129),
    };
    const daily = run(source, request);
    const monthly = run(source, { ...request, backtest_periodicity: 'monthly' });
    expect(monthly.series!.dates).toEqual([
      '20210104',
      '20210129',
      '20210226',
      '20210331',
      '20210430',
      '20210531',
      '20210630',
      '20210702',
    ]);
    monthly.series!.returns.forEach((r, k) => {
      const [from, to] = [monthly.series!.dates[k]!, monthly.series!.dates[k + 1]!];
      let compounded = 1;
      daily.series!.dates.forEach((d, i) => {
        if (i > 0 && d > from && d <= to) compounded *= 1 + daily.series!.returns[i - 1]!;
      });
      expect(r).toBeCloseTo(compounded - 1, 12);
    });
    const weekly = run(source, { ...request, backtest_periodicity: 'weekly' });
    expect(weekly.series!.dates.slice(0, 3)).toEqual(['20210104', '20210108', '20210115']);
    expect(weekly.periods).toBe(26);
  });

  test('statistics by their definitions: volatility, sortino, beta, correlation, projections', () => {
    const source = market({
      A: (t) => 20 + 3 * Math.sin(t / 3) + t / 10,
      B: (t) => 40 + 5 * Math.cos(t / 5),
    });
    const result = run(source, {
      securities: [{ id: 'a', symbol: 'A', quantity: 3 }],
      backtest_date1: at(0),
      projection_tickers: ['B'],
    });
    const r = result.series!.returns;
    const b = result.series!.benchmark_returns!;
    const n = r.length;
    const mean = (x: number[]) => x.reduce((s, v) => s + v, 0) / x.length;
    const cov = (x: number[], y: number[]) => {
      const [mx, my] = [mean(x), mean(y)];
      return x.reduce((s, v, i) => s + (v - mx) * (y[i]! - my), 0) / (x.length - 1);
    };
    const s = result.statistics;
    expect(s.volatility).toBeCloseTo(Math.sqrt(252 * cov(r, r)), 12);
    const downside = Math.sqrt(r.reduce((acc, x) => acc + Math.min(x, 0) ** 2, 0) / n);
    expect(s.sortino).toBeCloseTo((Math.sqrt(252) * mean(r)) / downside, 10);
    expect(s.beta).toBeCloseTo(cov(r, b) / cov(b, b), 12);
    expect(s.correlation).toBeCloseTo(cov(r, b) / Math.sqrt(cov(r, r) * cov(b, b)), 12);
    expect(s.alpha).toBeCloseTo(252 * (mean(r) - s.beta! * mean(b)), 10);
    const active = r.map((x, i) => x - b[i]!);
    expect(s.tracking_error).toBeCloseTo(Math.sqrt(252 * cov(active, active)), 12);
    expect(s.information_ratio).toBeCloseTo(
      (Math.sqrt(252) * mean(active)) / Math.sqrt(cov(active, active)),
      10,
    );
    const pB = result.series!.projections[0]!.values;
    const rB = pB.slice(1).map((v, k) => v / pB[k]! - 1);
    expect(s.projections).toEqual([
      {
        symbol: 'B',
        beta: expect.closeTo(cov(r, rB) / cov(rB, rB), 12),
        correlation: expect.closeTo(cov(r, rB) / Math.sqrt(cov(r, r) * cov(rB, rB)), 12),
      },
    ]);
    expect(pB[0]).toBe(100);
  });

  test('nlv gives a riskless cash balance; margin-traded positions count only their P&L', () => {
    const source = market({ A: (t) => 10 + t / 10, FUT: (t) => 100 + t });
    const withCash = run(source, {
      portfolio: { securities: [{ id: 'a', symbol: 'A', quantity: 10 }], date: at(129), nlv: 1000 },
      backtest_date1: at(0),
    } as never);
    // C = 1000 − 10·A(D); NAV(t) = C + 10·A(t).
    const cash = 1000 - 10 * (10 + 12.9);
    expect(withCash.nlv).toBeCloseTo(cash + 10 * 10, 10);
    expect(withCash.statistics.total_return).toBeCloseTo((cash + 10 * 22.9) / (cash + 100) - 1, 12);
    const futureSource = new Map(source);
    const attributes = (symbol: string) => (symbol === 'FUT' ? { instrument_type: 'FUTURE' } : {});
    const withFuture = runBacktest(
      {
        portfolio: {
          securities: [
            { id: 'a', symbol: 'A', quantity: 10 },
            { id: 'f', symbol: 'FUT', quantity: 2 },
          ],
          date: at(129),
        },
        backtest_date1: at(0),
      },
      Object.assign(futureSource, { attributes }),
    );
    expect(withFuture.nlv).toBeCloseTo(100, 10);
    expect(withFuture.series!.portfolio.at(-1)).toBeCloseTo((100 * (10 * 22.9 + 2 * 129)) / 100, 9);
  });

  test('a position unpriced on a day of the range is unmapped and left out', () => {
    const source = market({ A: () => 10, LATE: (t) => (t < 50 ? NaN : 5) });
    const result = run(source, {
      securities: [
        { id: 'a', symbol: 'A', quantity: 1 },
        { id: 'l', symbol: 'LATE', quantity: 1 },
        { id: 'x', symbol: 'NOPE', quantity: 1 },
      ],
      backtest_date1: at(0),
    });
    expect(result.unmapped_tickers).toEqual(['LATE', 'NOPE']);
    expect(result.statistics.total_return).toBe(0);
  });

  test('without the default benchmark: no benchmark, its figures null, Monday to Friday', () => {
    const source = new Map([['A', series((t) => 10 + t)]]);
    const result = run(source, {
      securities: [{ id: 'a', symbol: 'A', quantity: 1 }],
      backtest_date1: at(0),
    });
    expect(result.benchmark_ticker).toBeNull();
    expect(result.statistics).toMatchObject({
      beta: null,
      alpha: null,
      correlation: null,
      tracking_error: null,
      benchmark: null,
    });
    expect(result.series!.benchmark).toBeNull();
    expect(result.periods).toBe(129);
  });

  test('output_type summary leaves the series out; detailed is full', () => {
    const source = market({ A: (t) => 10 + t });
    const base = { securities: [{ id: 'a', symbol: 'A', quantity: 1 }] };
    expect(run(source, { ...base, output_type: 'summary' }).series).toBeUndefined();
    expect(run(source, { ...base, output_type: 'detailed' }).series).toBeDefined();
    expect(
      runBacktest({ portfolio: { securities: base.securities as never, date: at(129) } }, source, 'summary')
        .series,
    ).toBeUndefined();
  });

  test('both date forms agree; date1 defaults to a year before date2', () => {
    const source = market({ A: (t) => 10 + Math.sin(t) });
    const base = { securities: [{ id: 'a', symbol: 'A', quantity: 1 }] };
    const plain = run(source, { ...base, backtest_date1: '20210201', backtest_date2: '20210430' });
    const dashed = run(source, { ...base, backtest_date1: '2021-02-01', backtest_date2: '2021-04-30' });
    expect(dashed).toEqual(plain);
    expect(run(source, base).start).toBe(at(0));
  });

  test('each 400 with its message', () => {
    const source = market({ A: (t) => 10 + t, NEG: () => 10 });
    const base = { securities: [{ id: 'a', symbol: 'A', quantity: 1 }] };
    const refusal = (request: object) => {
      try {
        run(source, { ...base, ...request });
      } catch (error) {
        return (error as Error).message;
      }
      return 'no error';
    };
    expect(refusal({ backtest_date1: '20210301', backtest_date2: '20210301' })).toBe(
      'backtest_date1 must be before backtest_date2.',
    );
    expect(
      refusal({ backtest_date1: '20210104', backtest_date2: '20210226', backtest_periodicity: 'monthly' }),
    ).toBe('fewer than 3 monthly periods from 20210104 to 20210226.');
    expect(refusal({ backtest_date2: '20300101' })).toBe('backtest_date2 must not be after date.');
    expect(refusal({ backtest_benchmark_ticker: 'X' })).toBe('backtest_benchmark_ticker: unknown symbol X.');
    expect(refusal({ backtest_rfrate_ticker: 'RATE:NONE' })).toBe(
      'backtest_rfrate_ticker: unknown symbol RATE:NONE.',
    );
    expect(refusal({ projection_tickers: ['A', 'Y'] })).toBe('projection_tickers: unknown symbol Y.');
    expect(refusal({ backtest_date1: '2021-13-01' })).toBe(
      'backtest_date1: must be a date as YYYYMMDD or YYYY-MM-DD.',
    );
    expect(refusal({ backtest_periodicity: 'hourly' })).toBe(
      'backtest_periodicity: must be daily, weekly or monthly.',
    );
    expect(refusal({ output_type: 'all' })).toBe('output_type: must be full, summary or detailed.');
    expect(refusal({ securities: [{ id: 'n', symbol: 'NEG', quantity: -1 }], backtest_date1: at(3) })).toBe(
      `portfolio: the book's value is -10 on ${at(3)}; a backtest needs a positive value on every day.`,
    );
  });
});

describe('on the shipped S&P 500 file and US stocks (§20, §21)', () => {
  const source = realMarket();
  const spxOn = (iso: string) => {
    const series = source.get('IND:SPX')!;
    const day = dayNumber(iso);
    const dates = series.dates as Int32Array;
    let row = 0;
    while (row + 1 < dates.length && dates[row + 1]! <= day) row++;
    return series.values[row]!;
  };

  test('one unit of the index over 2019: its own total return, beta 1; SPY tracks it closely', () => {
    const request = {
      portfolio: { securities: [{ id: 's', symbol: 'IND:SPX', quantity: 1 }], date: '20191231' },
      backtest_date1: '2018-12-31',
      backtest_date2: '2019-12-31',
    };
    const index = runBacktest(request, source);
    expect(index).toMatchObject({ start: '20181231', end: '20191231', periods: 252 });
    expect(index.statistics.total_return).toBeCloseTo(spxOn('20191231') / spxOn('20181231') - 1, 12);
    expect(index.statistics.total_return).toBeCloseTo(0.2888, 3);
    expect(index.statistics.beta).toBeCloseTo(1, 12);
    const spy = runBacktest(
      {
        ...request,
        portfolio: { ...request.portfolio, securities: [{ id: 'y', symbol: 'SPY', quantity: 100 }] },
      },
      source,
      'summary',
    );
    // SPY's prices are dividend-adjusted: a little more than the price index, almost the same path.
    expect(spy.statistics.correlation!).toBeGreaterThan(0.99);
    expect(spy.statistics.tracking_error!).toBeLessThan(0.03);
    expect(spy.statistics.total_return).toBeGreaterThan(index.statistics.total_return);
  });

  test('March 2020: the drawdown of the index from its February peak', () => {
    const result = runBacktest(
      {
        portfolio: { securities: [{ id: 's', symbol: 'IND:SPX', quantity: 1 }], date: '20200630' },
        backtest_date1: '20200102',
        backtest_date2: '20200630',
      },
      source,
      'summary',
    );
    expect(result.statistics.max_drawdown_peak).toBe('20200219');
    expect(result.statistics.max_drawdown_trough).toBe('20200323');
    expect(result.statistics.max_drawdown).toBeCloseTo(spxOn('20200323') / spxOn('20200219') - 1, 12);
  });

  test('marginal tracking error of ten stocks against SPY: Σ cte = te, a plausible size', () => {
    const stocks = ['AAPL', 'AMZN', 'BAC', 'GE', 'GOOG', 'JPM', 'PFE', 'T', 'WMT', 'XOM'];
    const result = runMarginalTrackingError(
      {
        portfolio1: {
          date: '20211231',
          securities: stocks.map((symbol) => ({ id: symbol, symbol, quantity: 1000 })),
        },
        portfolio2: { securities: [{ id: 'spy', symbol: 'SPY', quantity: 1000 }] },
      },
      source,
    );
    expect(result.date).toBe('20211231');
    expect(result.unmapped_tickers).toEqual([]);
    expect(result.te).toBeGreaterThan(0.02);
    expect(result.te).toBeLessThan(0.4);
    expect(result.results.reduce((s, r) => s + r.cte, 0)).toBeCloseTo(result.te, 12);
    expect(result.results.at(-1)).toMatchObject({ symbol: 'SPY', weight_active: -1 });
  });
});
