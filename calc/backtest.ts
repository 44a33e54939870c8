/**
 * Backtest and backtest statistics (methodology §21): the book's current quantities held unchanged
 * over a date range (buy and hold: no rebalancing, no trades, no cash flows), valued every day of the
 * benchmark's calendar in base currency, sampled daily, weekly or monthly, and measured against the
 * benchmark, a risk-free rate and projection tickers.
 */
import { blackScholes, impliedVolatility, type OptionRight } from './black-scholes';
import { type CalcSecurity, check } from './calculation-request';
import { ewmaWeights, weightedVariance } from './estimation';
import { binaryScale, checkFigures, overflowError } from './figures';
import { CalcInputError } from './input-error';
import {
  defaultMultiplier,
  fxRateAt,
  marginTraded,
  parseOptionSymbol,
  quantityIsAmount,
} from './instruments';
import {
  alignToCalendar,
  civilFromDays,
  daysFromCivil,
  type DaySeries,
  formatDay,
  isLevelSeries,
  latestPrice,
  type SeriesSource,
  toDaySeries,
  upperBound,
  WINDOW_RETURNS,
} from './market-data';
import { classify } from './portfolio-model';
import type { BookInput } from './tracking-error';

const { sqrt, max, log } = Math;

export const PERIODICITIES = ['daily', 'weekly', 'monthly'] as const;
export type Periodicity = (typeof PERIODICITIES)[number];
export const PERIODS_PER_YEAR: Record<Periodicity, number> = { daily: 252, weekly: 52, monthly: 12 };
export const OUTPUT_TYPES = ['full', 'summary', 'detailed'] as const;
export type OutputType = (typeof OUTPUT_TYPES)[number];
export const MAX_PROJECTION_TICKERS = 15;
export const DEFAULT_BENCHMARK = 'IND:SPX';
export const MIN_PERIODS = 3;
/** A standard deviation below this per period is rounding, not variation: 0. */
export const ZERO_DEVIATION = 1e-14;

export interface BacktestRequest {
  readonly portfolio: BookInput;
  /** `YYYYMMDD` or `YYYY-MM-DD`; default date2 less one year. */
  readonly backtest_date1?: string | null;
  /** Default the book's date (the latest when null). */
  readonly backtest_date2?: string | null;
  readonly backtest_periodicity?: string | null;
  /** Default IND:SPX (no benchmark when that has no series); null takes the default. */
  readonly backtest_benchmark_ticker?: string | null;
  readonly backtest_rfrate_ticker?: string | null;
  readonly projection_tickers?: readonly string[] | null;
  readonly output_type?: string | null;
}

export interface PeriodReturn {
  date: string;
  return: number;
}

export interface BacktestStatistics {
  total_return: number;
  annualized_return: number;
  volatility: number;
  sharpe: number | null;
  sortino: number | null;
  max_drawdown: number;
  max_drawdown_peak: string | null;
  max_drawdown_trough: string | null;
  beta: number | null;
  alpha: number | null;
  correlation: number | null;
  tracking_error: number | null;
  information_ratio: number | null;
  hit_rate: number;
  best_period: PeriodReturn;
  worst_period: PeriodReturn;
  benchmark: {
    total_return: number;
    annualized_return: number;
    volatility: number;
    max_drawdown: number;
  } | null;
  projections: Array<{ symbol: string; beta: number | null; correlation: number | null }>;
}

export interface BacktestSeries {
  dates: string[];
  portfolio: number[];
  benchmark: number[] | null;
  returns: number[];
  benchmark_returns: number[] | null;
  rf_returns: number[];
  projections: Array<{ symbol: string; values: number[] }>;
}

/** The `backtest` (or `backtest_statistics`) object of §21. */
export interface BacktestResult {
  start: string;
  end: string;
  periodicity: Periodicity;
  periods: number;
  base_currency: string;
  nlv: number;
  benchmark_ticker: string | null;
  rfrate_ticker: string | null;
  unmapped_tickers: string[];
  statistics: BacktestStatistics;
  series?: BacktestSeries;
}

/** `YYYYMMDD` or `YYYY-MM-DD` (a real calendar day) → day number; a 400 naming `parameter` otherwise. */
export function backtestDay(value: unknown, parameter: string): number {
  const text =
    typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) ? value.replace(/-/g, '') : value;
  const match = typeof text === 'string' ? /^(\d{4})(\d{2})(\d{2})$/.exec(text) : null;
  if (match !== null) {
    const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
    const days = daysFromCivil(year, month, day);
    const back = civilFromDays(days);
    if (back.year === year && back.month === month && back.day === day) return days;
  }
  throw new CalcInputError(parameter, 'must be a date as YYYYMMDD or YYYY-MM-DD.');
}

/** One year earlier, the same month and day (29 February → 28 February). */
function yearBefore(day: number): number {
  const { year, month, day: dom } = civilFromDays(day);
  const target = daysFromCivil(year - 1, month, dom);
  return civilFromDays(target).month === month ? target : daysFromCivil(year - 1, month, dom - 1);
}

function tickerOf(value: unknown, parameter: string): string | null {
  if (value === undefined || value === null) return null;
  check(typeof value === 'string' && value.trim() !== '', parameter, 'must be a symbol.');
  return value;
}

interface Normalised {
  periodicity: Periodicity;
  outputType: OutputType;
  projections: string[];
  rf: string | null;
  benchmark: string | null;
  benchmarkNamed: boolean;
}

function normalise(request: BacktestRequest, defaultOutput: 'full' | 'summary'): Normalised {
  const periodicity = (request.backtest_periodicity ?? 'daily') as string;
  check(
    typeof periodicity === 'string' &&
      (PERIODICITIES as readonly string[]).includes(periodicity.toLowerCase()),
    'backtest_periodicity',
    'must be daily, weekly or monthly.',
  );
  const outputType = request.output_type ?? defaultOutput;
  check(
    typeof outputType === 'string' && (OUTPUT_TYPES as readonly string[]).includes(outputType),
    'output_type',
    'must be full, summary or detailed.',
  );
  const projections = request.projection_tickers ?? [];
  check(
    Array.isArray(projections) &&
      projections.length <= MAX_PROJECTION_TICKERS &&
      projections.every((p) => typeof p === 'string' && p.trim() !== ''),
    'projection_tickers',
    `must be an array of at most ${MAX_PROJECTION_TICKERS} symbols.`,
  );
  check(new Set(projections).size === projections.length, 'projection_tickers', 'holds a symbol twice.');
  const named = tickerOf(request.backtest_benchmark_ticker, 'backtest_benchmark_ticker');
  return {
    periodicity: periodicity.toLowerCase() as Periodicity,
    outputType: outputType === 'detailed' ? 'full' : (outputType as OutputType),
    projections: [...projections],
    rf: tickerOf(request.backtest_rfrate_ticker, 'backtest_rfrate_ticker'),
    benchmark: named ?? DEFAULT_BENCHMARK,
    benchmarkNamed: named !== null,
  };
}

/** Mean, sample sd (n − 1) and covariance helpers over equal-length arrays. */
function mean(x: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += x[i]!;
  return sum / x.length;
}
function covariance(x: ArrayLike<number>, y: ArrayLike<number>): number {
  const mx = mean(x);
  const my = mean(y);
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += (x[i]! - mx) * (y[i]! - my);
  return sum / (x.length - 1);
}
function deviation(x: ArrayLike<number>): number {
  const sd = sqrt(max(covariance(x, x), 0));
  return sd < ZERO_DEVIATION ? 0 : sd;
}
const ratio = (num: number, den: number): number | null => (den === 0 ? null : num / den);
const difference = (a: readonly number[], b: readonly number[]) => a.map((x, i) => x - b[i]!);

/** min_k (x_k / max_{j≤k} x_j − 1), with the earliest index of that running maximum and the trough. */
function maxDrawdown(values: readonly number[]): { depth: number; peak: number; trough: number } {
  let peak = 0;
  let depth = 0;
  let best = { depth: 0, peak: -1, trough: -1 };
  for (let k = 0; k < values.length; k++) {
    if (values[k]! > values[peak]!) peak = k;
    depth = values[k]! / values[peak]! - 1;
    if (depth < best.depth) best = { depth, peak, trough: k };
  }
  return best;
}

/** The calendar: the benchmark's days, else Monday to Friday. Includes the days before date1. */
function calendarDays(benchmark: DaySeries | null, from: number, to: number): Int32Array {
  if (benchmark !== null) return benchmark.days.subarray(0, upperBound(benchmark.days, to));
  const days: number[] = [];
  // 1970-01-01 (day 0) was a Thursday: day % 7 is 2 on Saturdays, 3 on Sundays.
  for (let day = from - 14; day <= to; day++) {
    const weekday = ((day % 7) + 7) % 7;
    if (weekday !== 2 && weekday !== 3) days.push(day);
  }
  return Int32Array.from(days);
}

/** Per calendar row from `fromRow`, the rate CCY→base: direct, inverse, else through USD (§9). */
function fxRows(
  market: SeriesSource,
  currency: string,
  base: string,
  calendar: Int32Array,
  fromRow: number,
  toRow: number,
): Float64Array {
  const rows = toRow - fromRow + 1;
  if (currency === base) return new Float64Array(rows).fill(1);
  const aligned = new Map<string, Float64Array | null>();
  const pair = (from: string, to: string): Float64Array | null => {
    const symbol = `FX:${from}${to}`;
    if (!aligned.has(symbol)) {
      const raw = market.get(symbol);
      aligned.set(
        symbol,
        raw === undefined ? null : alignToCalendar(toDaySeries(symbol, raw), calendar, fromRow, toRow),
      );
    }
    return aligned.get(symbol)!;
  };
  const leg = (from: string, to: string, t: number): number => {
    if (from === to) return 1;
    const direct = pair(from, to)?.[t] ?? NaN;
    if (Number.isFinite(direct)) return direct;
    const inverse = pair(to, from)?.[t] ?? NaN;
    return Number.isFinite(inverse) ? 1 / inverse : NaN;
  };
  const out = new Float64Array(rows);
  for (let t = 0; t < rows; t++) {
    const single = leg(currency, base, t);
    out[t] = Number.isFinite(single) ? single : leg(currency, 'USD', t) * leg('USD', base, t);
  }
  return out;
}

/** §11's EWMA vol of an underlying at D (its own daily log-returns, the §1 window, half-life 2 months). */
function ewmaVolatility(series: DaySeries, day: number): number {
  const end = upperBound(series.days, day);
  const prices: number[] = [];
  for (let i = end - 1; i >= 0 && prices.length <= WINDOW_RETURNS[1]; i--) {
    const p = series.values[i]!;
    if (Number.isFinite(p) && p > 0) prices.push(p);
  }
  prices.reverse();
  const returns = new Float64Array(max(prices.length - 1, 0));
  for (let t = 0; t < returns.length; t++) returns[t] = log(prices[t + 1]! / prices[t]!);
  return sqrt(weightedVariance(returns, ewmaWeights(returns.length, 2, 1)) * 252);
}

/** A held position valued on every row of the range, in base currency. */
interface Valued {
  readonly symbol: string;
  readonly margin: boolean;
  /** v_i at D (for C). */
  readonly atDate: number;
  readonly values: Float64Array;
}

/** The value of each position on rows [fromRow, toRow] (§21); null when unpriced on any day or at D. */
function valuePosition(
  security: CalcSecurity,
  i: number,
  base: string,
  market: SeriesSource,
  calendar: Int32Array,
  fromRow: number,
  toRow: number,
  dateDay: number,
): Valued | null {
  const c = classify(security, i, base, market);
  const rows = toRow - fromRow + 1;
  const fx = fxRows(market, c.currency, base, calendar, fromRow, toRow);
  const fxAtDate = security.fx_rate ?? fxRateAt(market, c.currency, base, dateDay) ?? NaN;
  const multiplier = security.multiplier ?? defaultMultiplier(c.type);
  const values = new Float64Array(rows);
  let atDate: number;
  // The row of D, where market_price and fx_rate apply (none when D is after the range).
  const dateRow = calendar[toRow] === dateDay ? rows - 1 : -1;
  if (c.driverSymbol === null) {
    // Cash: q·fx_t.
    for (let t = 0; t < rows; t++) values[t] = security.quantity * (t === dateRow ? fxAtDate : fx[t]!);
    atDate = security.quantity * fxAtDate;
  } else {
    const raw = market.get(c.driverSymbol);
    if (raw === undefined) return null;
    const series = toDaySeries(c.driverSymbol, raw);
    const prices = alignToCalendar(series, calendar, fromRow, toRow);
    const priceAtDate = latestPrice(series, dateDay);
    if (c.option !== null) {
      const { right, strike, expiry } = c.option;
      const expiryDay = backtestDay(expiry, `securities[${i}].symbol`);
      const years = (day: number) => max(expiryDay - day, 0) / 365;
      let volatility: number;
      if (security.market_price !== null && security.market_price !== undefined) {
        const implied = impliedVolatility(right, priceAtDate, strike, years(dateDay), security.market_price);
        if (implied === null) return null;
        volatility = implied;
      } else volatility = ewmaVolatility(series, dateDay);
      // After expiry the option is worth its intrinsic value at expiry, held.
      const expiryPrice = latestPrice(series, expiryDay);
      const intrinsic = right === 'C' ? max(expiryPrice - strike, 0) : max(strike - expiryPrice, 0);
      const price = (spot: number, day: number) =>
        day >= expiryDay
          ? intrinsic
          : blackScholes(right as OptionRight, spot, strike, years(day), volatility);
      const scale = security.quantity * multiplier;
      for (let t = 0; t < rows; t++) {
        values[t] =
          t === dateRow
            ? scale * (security.market_price ?? price(prices[t]!, dateDay)) * fxAtDate
            : scale * price(prices[t]!, calendar[fromRow + t]!) * fx[t]!;
      }
      atDate = scale * (security.market_price ?? price(priceAtDate, dateDay)) * fxAtDate;
    } else {
      const unitAtDate = security.market_price ?? priceAtDate;
      // An amount (§9) buys q / P_D units at D.
      const units = quantityIsAmount(c.type)
        ? security.quantity / unitAtDate
        : security.quantity * multiplier;
      for (let t = 0; t < rows; t++) {
        values[t] = t === dateRow ? units * unitAtDate * fxAtDate : units * prices[t]! * fx[t]!;
      }
      atDate = units * unitAtDate * fxAtDate;
    }
  }
  if (!Number.isFinite(atDate)) return null;
  for (let t = 0; t < rows; t++) if (!Number.isFinite(values[t]!)) return null;
  return { symbol: security.symbol, margin: marginTraded(c.type), atDate, values };
}

/** Period ends as row offsets into the range (t_0 = offset 0 is never one). */
function periodEnds(days: Int32Array, fromRow: number, toRow: number, periodicity: Periodicity): number[] {
  const key = (day: number): number => {
    if (periodicity === 'daily') return day;
    // ISO weeks start on Monday; day 4 (1970-01-05) was one.
    if (periodicity === 'weekly') return Math.floor((day + 3) / 7);
    const { year, month } = civilFromDays(day);
    return year * 12 + month;
  };
  const ends: number[] = [];
  for (let row = fromRow + 1; row <= toRow; row++) {
    if (row === toRow || key(days[row + 1]!) !== key(days[row]!)) ends.push(row - fromRow);
  }
  return ends;
}

/** The level of a reference series (benchmark, projection, rate) on each range row, in base currency. */
function referenceLevels(
  market: SeriesSource,
  symbol: string,
  base: string,
  calendar: Int32Array,
  fromRow: number,
  toRow: number,
): Float64Array {
  const series = toDaySeries(symbol, market.get(symbol)!);
  const levels = new Float64Array(toRow - fromRow + 1);
  if (series.levels) {
    for (let t = 0; t < levels.length; t++) levels[t] = latestPrice(series, calendar[fromRow + t]!);
    return levels;
  }
  const reference = market as { attributes?: (s: string) => Record<string, unknown> };
  const currency = reference.attributes?.(symbol)?.currency;
  const fx =
    typeof currency === 'string' && /^[A-Za-z]{3}$/.test(currency)
      ? fxRows(market, currency.toUpperCase(), base, calendar, fromRow, toRow)
      : null;
  for (let t = 0; t < levels.length; t++) {
    // The last value on or before the row: a reference series is never left out.
    levels[t] = latestPrice(series, calendar[fromRow + t]!) * (fx === null ? 1 : fx[t]!);
  }
  return levels;
}

/** Without a benchmark, "the latest" is the latest day any held symbol (or an underlying) has. */
function latestHeldDay(book: BookInput, market: SeriesSource): number {
  let latest = -Infinity;
  for (const security of book.securities) {
    const symbol = parseOptionSymbol(security.symbol)?.underlying ?? security.symbol;
    const raw = market.get(symbol);
    if (raw === undefined || raw.values.length === 0) continue;
    const days = toDaySeries(symbol, raw).days;
    latest = max(latest, days[days.length - 1]!);
  }
  check(Number.isFinite(latest), 'date', 'no held symbol has a price series: give date.');
  return latest;
}

function hasSeriesBy(market: SeriesSource, symbol: string, day: number): boolean {
  const raw = market.get(symbol);
  return raw !== undefined && Number.isFinite(latestPrice(toDaySeries(symbol, raw), day));
}

const sample = (values: ArrayLike<number>, ends: readonly number[]) => [
  values[0]!,
  ...ends.map((e) => values[e]!),
];
const periodReturns = (levels: readonly number[]) => levels.slice(1).map((v, k) => v / levels[k]! - 1);
/** 100·v/v_0, on the levels divided by a power of two near v_0: the same bits, and 100·v cannot overflow. */
const indexed = (levels: readonly number[]) => {
  const scale = binaryScale(levels[0]!);
  const first = levels[0]! / scale;
  return levels.map((v) => (100 * (v / scale)) / first);
};

/** §21 on a book already resolved to its securities. `defaultOutput`: full (backtest) or summary (statistics). */
export function runBacktest(
  request: BacktestRequest,
  market: SeriesSource,
  defaultOutput: 'full' | 'summary' = 'full',
): BacktestResult {
  const settings = normalise(request, defaultOutput);
  const book = request.portfolio;
  check(
    book !== null && typeof book === 'object' && Array.isArray(book.securities),
    'portfolio',
    'must be a portfolio id or an object with securities.',
  );
  const base = (book.base_currency ?? 'USD').toUpperCase();
  check(/^[A-Z]{3}$/.test(base), 'base_currency', 'must be an ISO 4217 code.');

  // The benchmark (absent when the default has no series) and the calendar it gives.
  let benchmark = settings.benchmark;
  const benchmarkRaw = benchmark === null ? undefined : market.get(benchmark);
  if (benchmarkRaw === undefined) {
    check(!settings.benchmarkNamed, 'backtest_benchmark_ticker', `unknown symbol ${benchmark}.`);
    benchmark = null;
  }
  const benchmarkSeries = benchmarkRaw === undefined ? null : toDaySeries(benchmark!, benchmarkRaw);

  const given = book.date ?? null;
  const latest = benchmarkSeries?.days[benchmarkSeries.days.length - 1] ?? latestHeldDay(book, market);
  const dateDay = given === null ? latest : backtestDay(given, 'date');
  const date2 =
    request.backtest_date2 == null ? dateDay : backtestDay(request.backtest_date2, 'backtest_date2');
  const date1 =
    request.backtest_date1 == null
      ? yearBefore(date2)
      : backtestDay(request.backtest_date1, 'backtest_date1');
  if (date1 >= date2) {
    throw new CalcInputError('backtest_date1', 'backtest_date1 must be before backtest_date2.', true);
  }
  if (given !== null && date2 > dateDay) {
    throw new CalcInputError('backtest_date2', 'backtest_date2 must not be after date.', true);
  }

  const calendar = calendarDays(benchmarkSeries, date1, date2);
  const fromRow = upperBound(calendar, date1 - 1);
  const toRow = upperBound(calendar, date2) - 1;
  const t0 = calendar[fromRow];
  const ends = fromRow < toRow ? periodEnds(calendar, fromRow, toRow, settings.periodicity) : [];
  if (ends.length < MIN_PERIODS) {
    throw new CalcInputError(
      'backtest_date1',
      `fewer than ${MIN_PERIODS} ${settings.periodicity} periods from ${t0 === undefined ? formatDay(date1) : formatDay(t0)} to ${formatDay(date2)}.`,
      true,
    );
  }
  const start = t0!;
  if (benchmark !== null) {
    check(hasSeriesBy(market, benchmark, start), 'backtest_benchmark_ticker', `unknown symbol ${benchmark}.`);
  }
  if (settings.rf !== null) {
    check(
      hasSeriesBy(market, settings.rf, start),
      'backtest_rfrate_ticker',
      `unknown symbol ${settings.rf}.`,
    );
  }
  for (const symbol of settings.projections) {
    check(hasSeriesBy(market, symbol, start), 'projection_tickers', `unknown symbol ${symbol}.`);
  }

  // Buy and hold: each position valued on every day of the range.
  const unmapped: string[] = [];
  const kept: Valued[] = [];
  book.securities.forEach((security, i) => {
    const valued = valuePosition(security, i, base, market, calendar, fromRow, toRow, dateDay);
    if (valued === null) unmapped.push(security.symbol);
    else kept.push(valued);
  });
  const rows = toRow - fromRow + 1;
  let cash = 0;
  if (book.nlv !== null && book.nlv !== undefined) {
    cash = book.nlv;
    for (const position of kept) if (!position.margin) cash -= position.atDate;
  }
  const nav = new Float64Array(rows).fill(cash);
  for (const position of kept) {
    const v = position.values;
    if (position.margin) for (let t = 0; t < rows; t++) nav[t]! += v[t]! - v[0]!;
    else for (let t = 0; t < rows; t++) nav[t]! += v[t]!;
  }
  for (let t = 0; t < rows; t++) {
    if (!Number.isFinite(nav[t]!)) {
      throw overflowError(
        'portfolio',
        `the book's value is ${nav[t]} on ${formatDay(calendar[fromRow + t]!)} (its positions' values add up past the largest number)`,
      );
    }
    if (!(nav[t]! > 0)) {
      throw new CalcInputError(
        'portfolio',
        `the book's value is ${nav[t]} on ${formatDay(calendar[fromRow + t]!)}; a backtest needs a positive value on every day.`,
      );
    }
  }

  const N = PERIODS_PER_YEAR[settings.periodicity];
  const n = ends.length;
  const dates = sample(calendar.subarray(fromRow), ends).map(formatDay);
  const navs = sample(nav, ends);
  const r = periodReturns(navs);

  let rf = new Array<number>(n).fill(0);
  if (settings.rf !== null) {
    const levels = sample(referenceLevels(market, settings.rf, base, calendar, fromRow, toRow), ends);
    rf = isLevelSeries(settings.rf) ? levels.slice(0, n).map((y) => y / 100 / N) : periodReturns(levels);
  }
  const ex = difference(r, rf);
  const benchmarkLevels =
    benchmark === null
      ? null
      : sample(referenceLevels(market, benchmark, base, calendar, fromRow, toRow), ends);
  const b = benchmarkLevels === null ? null : periodReturns(benchmarkLevels);

  const annualise = (total: number) => (1 + total) ** (N / n) - 1;
  const total = navs[n]! / navs[0]! - 1;
  const sdEx = deviation(ex);
  const downside = sqrt(ex.reduce((sum, x) => sum + Math.min(x, 0) ** 2, 0) / n);
  const drawdown = maxDrawdown(navs);
  const against = (other: readonly number[]) => {
    const eo = difference(other, rf);
    const sdO = deviation(eo);
    const cov = covariance(ex, eo);
    const beta = ratio(cov, sdO * sdO);
    return { eo, beta, correlation: ratio(cov, sdEx * sdO) };
  };
  let relative: Pick<
    BacktestStatistics,
    'beta' | 'alpha' | 'correlation' | 'tracking_error' | 'information_ratio'
  > = { beta: null, alpha: null, correlation: null, tracking_error: null, information_ratio: null };
  let benchmarkStatistics: BacktestStatistics['benchmark'] = null;
  if (b !== null && benchmarkLevels !== null) {
    const { eo, beta, correlation } = against(b);
    const active = difference(r, b);
    const sdActive = deviation(active);
    relative = {
      beta,
      alpha: beta === null ? null : N * (mean(ex) - beta * mean(eo)),
      correlation,
      tracking_error: sqrt(N) * sdActive,
      information_ratio: ratio(sqrt(N) * mean(active), sdActive),
    };
    const benchmarkTotal = benchmarkLevels[n]! / benchmarkLevels[0]! - 1;
    benchmarkStatistics = {
      total_return: benchmarkTotal,
      annualized_return: annualise(benchmarkTotal),
      volatility: sqrt(N) * deviation(b),
      max_drawdown: maxDrawdown(benchmarkLevels).depth,
    };
  }
  const projectionLevels = settings.projections.map((symbol) => ({
    symbol,
    levels: sample(referenceLevels(market, symbol, base, calendar, fromRow, toRow), ends),
  }));
  let best = 0;
  let worst = 0;
  r.forEach((x, k) => {
    if (x > r[best]!) best = k;
    if (x < r[worst]!) worst = k;
  });
  const statistics: BacktestStatistics = {
    total_return: total,
    annualized_return: annualise(total),
    volatility: sqrt(N) * deviation(r),
    sharpe: ratio(sqrt(N) * mean(ex), sdEx),
    sortino: ratio(sqrt(N) * mean(ex), downside),
    max_drawdown: drawdown.depth,
    max_drawdown_peak: drawdown.depth === 0 ? null : dates[drawdown.peak]!,
    max_drawdown_trough: drawdown.depth === 0 ? null : dates[drawdown.trough]!,
    ...relative,
    hit_rate: r.filter((x) => x > 0).length / n,
    best_period: { date: dates[best + 1]!, return: r[best]! },
    worst_period: { date: dates[worst + 1]!, return: r[worst]! },
    benchmark: benchmarkStatistics,
    projections: projectionLevels.map(({ symbol, levels }) => {
      const { beta, correlation } = against(periodReturns(levels));
      return { symbol, beta, correlation };
    }),
  };
  const result: BacktestResult = {
    start: formatDay(start),
    end: dates[n]!,
    periodicity: settings.periodicity,
    periods: n,
    base_currency: base,
    nlv: navs[0]!,
    benchmark_ticker: benchmark,
    rfrate_ticker: settings.rf,
    unmapped_tickers: [...new Set(unmapped)],
    statistics,
  };
  // A figure past ±1.8e308 (a return over a value near zero, annualised): the book's values did it.
  const blame = (path: string) => {
    let low = Infinity;
    let high = -Infinity;
    for (const value of navs) {
      low = Math.min(low, value);
      high = Math.max(high, value);
    }
    return overflowError(
      'portfolio',
      `the book's value is ${low} to ${high} from ${result.start} to ${result.end}, so ${path} would not be a finite number`,
    );
  };
  if (settings.outputType === 'full') {
    result.series = {
      dates,
      portfolio: indexed(navs),
      benchmark: benchmarkLevels === null ? null : indexed(benchmarkLevels),
      returns: r,
      benchmark_returns: b,
      rf_returns: rf,
      projections: projectionLevels.map(({ symbol, levels }) => ({ symbol, values: indexed(levels) })),
    };
  }
  return checkFigures(result, blame);
}
