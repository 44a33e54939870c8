/**
 * The input model of the calculations (methodology §1): daily price series per symbol, the calendar,
 * carry-forward of missing prices, and the log-return invariants over the estimation window.
 *
 * calc/ never fetches anything: the caller hands over the series (a Map<symbol, PriceSeries> fits
 * `SeriesSource`). Only values dated on or before the calculation date are ever read, so nothing after
 * `date` can influence a result (no look-ahead).
 */
import { CalcInputError } from './input-error';

// Bound once: under jest's vm sandbox every global lookup (Math, Number) in a hot loop costs ~25×.
const { log } = Math;
const { isFinite, isNaN } = Number;

/** A date as `YYYYMMDD` or as a day number (days since 1970-01-01). */
export type DateInput = string | number;

export interface PriceSeries {
  /** Strictly ascending dates. Day numbers (an Int32Array) are the cheap form for large inputs. */
  readonly dates: ArrayLike<DateInput>;
  /** One value per date; NaN marks a missing price. Non-positive prices count as missing. */
  readonly values: Float64Array;
}

/** Where the calculation finds a symbol's series; `undefined` = no data at all. */
export interface SeriesSource {
  get(symbol: string): PriceSeries | undefined;
  /**
   * Optional: a store for what is derived from these series alone (the window of returns, the
   * factor model), shared by every source that holds exactly the same series (the engine gives one
   * per version of the stored prices). A value is kept under a key naming every other input, so a
   * hit returns what the computation would return: reuse is exact.
   */
  readonly memo?: MarketMemo;
}

/** A bounded store of derived values; `get` answers undefined for a key it never held or dropped. */
export interface MarketMemo {
  get(key: string): unknown;
  set(key: string, value: unknown): void;
}

/** `compute()`, or the value `market.memo` holds under `key` (kept there on a miss). */
export function remember<T>(market: SeriesSource, key: string, compute: () => T): T {
  const memo = market.memo;
  if (memo === undefined) return compute();
  const known = memo.get(key);
  if (known !== undefined) return known as T;
  const value = compute();
  memo.set(key, value);
  return value;
}

export type Sampling = 1 | 5;

/** Methodology §1. */
export const MAX_CARRY_FORWARD_ROWS = 5;
export const MIN_RETURNS = 60;
export const WINDOW_RETURNS: Record<Sampling, number> = { 1: 1260, 5: 252 };

// ---------------------------------------------------------------------------------------------------
// Dates. Civil-calendar arithmetic by hand (H. Hinnant's algorithms) so nothing depends on a time zone.

export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

export function civilFromDays(days: number): { year: number; month: number; day: number } {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

/** `YYYYMMDD` (validated, a real calendar day) or a day number → day number. */
export function dayNumber(date: DateInput): number {
  if (typeof date === 'number') {
    if (!Number.isInteger(date)) throw new RangeError(`A day number must be an integer, got ${date}.`);
    return date;
  }
  const match = /^(\d{4})(\d{2})(\d{2})$/.exec(date);
  if (match) {
    const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
    const days = daysFromCivil(year, month, day);
    const back = civilFromDays(days);
    if (back.year === year && back.month === month && back.day === day) return days;
  }
  throw new RangeError(`Not a YYYYMMDD date: ${JSON.stringify(date)}.`);
}

export function formatDay(days: number): string {
  const { year, month, day } = civilFromDays(days);
  return `${String(year).padStart(4, '0')}${String(month).padStart(2, '0')}${String(day).padStart(2, '0')}`;
}

// ---------------------------------------------------------------------------------------------------
// Series in day numbers.

export interface DaySeries {
  readonly days: Int32Array;
  readonly values: Float64Array;
  /**
   * Levels in percent (`RATE:*`, `SPREAD:*`, §12): the invariant is the change of level in points,
   * and a zero or negative level is a real value, not a missing price.
   */
  readonly levels?: boolean;
}

/** §12: rates and spreads move by absolute changes; everything else by log-returns. */
export function isLevelSeries(symbol: string): boolean {
  return symbol.startsWith('RATE:') || symbol.startsWith('SPREAD:');
}

/**
 * Day numbers, checked ascending; an Int32Array of day numbers and the values are used as they are,
 * never copied (strings cost a parse each: hand large inputs over as day numbers).
 */
export function toDaySeries(symbol: string, series: PriceSeries): DaySeries {
  const n = series.values.length;
  if (series.dates.length !== n) {
    throw new CalcInputError(symbol, `series has ${series.dates.length} dates but ${n} values.`);
  }
  let days: Int32Array;
  if (series.dates instanceof Int32Array) days = series.dates;
  else {
    days = new Int32Array(n);
    for (let i = 0; i < n; i++) days[i] = dayNumber(series.dates[i]!);
  }
  for (let i = 1; i < n; i++) {
    if (days[i]! <= days[i - 1]!) {
      throw new CalcInputError(symbol, `series dates are not strictly ascending at ${formatDay(days[i]!)}.`);
    }
  }
  return isLevelSeries(symbol)
    ? { days, values: series.values, levels: true }
    : { days, values: series.values };
}

/** Index of the first element of `days` greater than `day` (binary search). */
export function upperBound(days: Int32Array, day: number): number {
  let lo = 0;
  let hi = days.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (days[mid]! <= day) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function usable(price: number, levels = false): boolean {
  return isFinite(price) && (levels || price > 0);
}

/**
 * CUSTOM:* indexes of type RETURN (decimal) or RETURN_100 (percent) as prices:
 * p_t = base_price · Π_{u ≤ t} (1 + r_u). The first return has no start date in the series, so it only
 * sets the level, like any first price. A missing return leaves that date missing and the level
 * unchanged, so the next observed return is still the next step of the chain.
 */
export function pricesFromReturns(
  series: PriceSeries,
  dataType: 'RETURN' | 'RETURN_100',
  basePrice = 1,
): PriceSeries {
  const scale = dataType === 'RETURN_100' ? 0.01 : 1;
  const values = new Float64Array(series.values.length);
  let level = basePrice;
  for (let i = 0; i < values.length; i++) {
    const r = series.values[i]!;
    if (isFinite(r)) {
      level *= 1 + r * scale;
      values[i] = level;
    } else values[i] = NaN;
  }
  return { dates: series.dates, values };
}

// ---------------------------------------------------------------------------------------------------
// Calendar and returns.

export interface Calendar {
  /** Dates of the first projection series up to and including the calculation date. */
  readonly days: Int32Array;
  /** The calculation date: the last calendar day on or before the requested date. */
  readonly anchorDay: number;
}

/** `date` null = the latest date of the calendar series. */
export function buildCalendar(series: DaySeries, date: DateInput | null): Calendar {
  const end = date === null ? series.days.length : upperBound(series.days, dayNumber(date));
  if (end === 0) throw new CalcInputError('date', 'the first projection has no data on or before it.');
  const days = series.days.subarray(0, end);
  return { days, anchorDay: days[end - 1]! };
}

/**
 * Prices on calendar rows [fromRow, toRow], as a fresh array. A row takes the latest usable price
 * dated on or before it; a price dated between two calendar rows becomes known on the next row. It is
 * carried forward for at most MAX_CARRY_FORWARD_ROWS rows; beyond that the row stays NaN. Prices
 * before the calendar's first day are never used.
 */
export function alignToCalendar(
  series: DaySeries,
  calendar: Int32Array,
  fromRow: number,
  toRow: number,
): Float64Array {
  const out = new Float64Array(toRow - fromRow + 1).fill(NaN);
  // Observations known before startRow are too stale to reach fromRow, so the scan starts there.
  const startRow = Math.max(0, fromRow - MAX_CARRY_FORWARD_ROWS);
  let j =
    startRow === 0
      ? upperBound(series.days, calendar[0]! - 1)
      : upperBound(series.days, calendar[startRow - 1]!);
  let last = NaN;
  let lastRow = -Infinity;
  for (let t = startRow; t <= toRow; t++) {
    const day = calendar[t]!;
    while (j < series.days.length && series.days[j]! <= day) {
      const price = series.values[j]!;
      if (usable(price, series.levels)) {
        last = price;
        lastRow = t;
      }
      j++;
    }
    if (t >= fromRow && t - lastRow <= MAX_CARRY_FORWARD_ROWS) out[t - fromRow] = last;
  }
  return out;
}

export interface ReturnGrid {
  readonly sampling: Sampling;
  /** Number of return observations in the window (≤ 1260 for s = 1, ≤ 252 for s = 5). */
  readonly length: number;
  /** Calendar row of the first price needed (the start of the oldest return). */
  readonly fromRow: number;
  /** Calendar row of the calculation date. */
  readonly toRow: number;
  /** Day on which each return observation ends, oldest first. */
  readonly observationDays: Int32Array;
}

/**
 * s = 5 returns are non-overlapping and anchored on the calculation date: rows T, T−5, T−10, …
 * `windowLength` replaces the §1 window (1260 or 252 returns), e.g. parametric `historical_days` (§17).
 */
export function returnGrid(calendar: Calendar, sampling: Sampling, windowLength?: number): ReturnGrid {
  const toRow = calendar.days.length - 1;
  const length = Math.min(windowLength ?? WINDOW_RETURNS[sampling], Math.floor(toRow / sampling));
  const fromRow = toRow - length * sampling;
  const observationDays = new Int32Array(length);
  for (let t = 0; t < length; t++) observationDays[t] = calendar.days[fromRow + (t + 1) * sampling]!;
  return { sampling, length, fromRow, toRow, observationDays };
}

/** Log-returns over the window's sampling intervals, oldest first; NaN where a price is missing. */
export function windowReturns(series: DaySeries, calendar: Calendar, grid: ReturnGrid): Float64Array {
  const prices = alignToCalendar(series, calendar.days, grid.fromRow, grid.toRow);
  const out = new Float64Array(grid.length);
  for (let t = 0; t < grid.length; t++) {
    // NaN prices give NaN returns: missing observations, left out pairwise later.
    const next = prices[(t + 1) * grid.sampling]!;
    const previous = prices[t * grid.sampling]!;
    out[t] = series.levels ? next - previous : log(next / previous);
  }
  return out;
}

export function countPresent(returns: Float64Array): number {
  let count = 0;
  for (const r of returns) if (!isNaN(r)) count++;
  return count;
}

/** The latest usable price dated on or before `day`, or NaN. */
export function latestPrice(series: DaySeries, day: number): number {
  for (let i = upperBound(series.days, day) - 1; i >= 0; i--) {
    if (usable(series.values[i]!, series.levels)) return series.values[i]!;
  }
  return NaN;
}

/**
 * Worst and best simple move over `h` observations of the series' own history up to `day`
 * (methodology §7, `out_of_range`); null when the history is shorter than h + 1 prices.
 */
export function extremeMoves(
  series: DaySeries,
  day: number,
  h: number,
): { worst: number; best: number } | null {
  const end = upperBound(series.days, day);
  const prices: number[] = [];
  for (let i = 0; i < end; i++) if (usable(series.values[i]!, series.levels)) prices.push(series.values[i]!);
  if (prices.length <= h) return null;
  let worst = Infinity;
  let best = -Infinity;
  for (let i = h; i < prices.length; i++) {
    // A level series' move is in the unit of its magnitude: points ÷ 100 (§12).
    const move = series.levels ? (prices[i]! - prices[i - h]!) / 100 : prices[i]! / prices[i - h]! - 1;
    if (move < worst) worst = move;
    if (move > best) best = move;
  }
  return { worst, best };
}

// ---------------------------------------------------------------------------------------------------

export interface MarketWindow {
  readonly calendar: Calendar;
  readonly grid: ReturnGrid;
  /** Window returns of every symbol that had at least MIN_RETURNS of them. */
  readonly returns: ReadonlyMap<string, Float64Array>;
  /** Latest usable price on or before the calculation date of every symbol with data (NaN if none). */
  readonly latestPrices: ReadonlyMap<string, number>;
  /** Symbols with no data or fewer than MIN_RETURNS returns, in the order asked. */
  readonly unmapped: readonly string[];
}

/**
 * Returns over the window for each symbol. The calendar is the first of `symbols`' dates (the first
 * projection), so that one must come first. Only O(window) numbers are kept per symbol.
 */
export function loadWindow(
  source: SeriesSource,
  symbols: readonly string[],
  date: DateInput | null,
  sampling: Sampling,
  windowLength?: number,
): MarketWindow {
  const first = symbols[0];
  const firstRaw = first === undefined ? undefined : source.get(first);
  if (first === undefined || firstRaw === undefined) {
    throw new CalcInputError('projection', `no price series for ${String(first)}.`);
  }
  const firstDays = toDaySeries(first, firstRaw);
  const calendar = buildCalendar(firstDays, date);
  const grid = returnGrid(calendar, sampling, windowLength);
  const returns = new Map<string, Float64Array>();
  const latestPrices = new Map<string, number>();
  const unmapped: string[] = [];
  const seen = new Set<string>();
  for (const symbol of symbols) {
    if (seen.has(symbol)) continue;
    seen.add(symbol);
    const raw = source.get(symbol);
    if (raw === undefined) {
      unmapped.push(symbol);
      continue;
    }
    const days = symbol === first ? firstDays : toDaySeries(symbol, raw);
    latestPrices.set(symbol, latestPrice(days, calendar.anchorDay));
    const r = windowReturns(days, calendar, grid);
    if (countPresent(r) < MIN_RETURNS) unmapped.push(symbol);
    else returns.set(symbol, r);
  }
  return { calendar, grid, returns, latestPrices, unmapped };
}
