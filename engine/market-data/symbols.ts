import { dayNumber, formatDay, type PriceSeries } from '../../calc';
import type { Database } from '../platform/database';
import { InvalidInput } from '../platform/errors';
import { loadMarket } from './price-store';
import { MASTER_COLUMNS } from './securities-master';

/**
 * What the PyPI clients' `MarketData` helpers ask of the stored market: search the securities
 * master, check a book's symbols at a date (the same verdict a calculation gives in
 * `unmapped_tickers`), one price per symbol at a date, and the stored series over a period.
 * The account's CUSTOM: indexes and PRIVATE: securities count as symbols, as in a calculation.
 */

export const SYMBOLS_MAX = 100;
export const SEARCH_LIMIT_MAX = 100;
export const HISTORICAL_POINTS_MAX = 200_000;
/** 1 to 200 characters, not blank, no control characters (an option symbol holds spaces). */
export function isSymbol(value: unknown): value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 200 || value.trim() === '')
    return false;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return false;
  }
  return true;
}

export function symbolList(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new InvalidInput(`${field} must be a non-empty array of symbols.`);
  }
  if (value.length > SYMBOLS_MAX) {
    throw new InvalidInput(`${field} holds at most ${SYMBOLS_MAX} symbols, got ${value.length}.`);
  }
  return value.map((symbol, i) => {
    if (!isSymbol(symbol)) {
      throw new InvalidInput(`${field}[${i}] must be a symbol (1 to 200 characters, no control characters).`);
    }
    return symbol;
  });
}

export function optionalDate(value: unknown, field: string): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string' || !/^\d{8}$/.test(value)) {
    throw new InvalidInput(`${field} must be a date in the format YYYYMMDD.`);
  }
  try {
    dayNumber(value);
  } catch {
    throw new InvalidInput(`${field} must be a real calendar day (YYYYMMDD).`);
  }
  return value;
}

/** `symbols` as sent, or the `symbol` of each of `securities` (symbols_check takes a book). */
export function requestedSymbols(body: Record<string, unknown>): string[] {
  if (body.symbols !== undefined && body.symbols !== null) return symbolList(body.symbols, 'symbols');
  if (Array.isArray(body.securities)) {
    return symbolList(
      body.securities.map((s: unknown) =>
        s !== null && typeof s === 'object' ? (s as { symbol?: unknown }).symbol : s,
      ),
      'securities[].symbol',
    );
  }
  throw new InvalidInput('symbols (an array of symbols) or securities (each with a symbol) is required.');
}

export function lastOnOrBefore(series: PriceSeries | undefined, lastDay: number | null) {
  if (!series) return null;
  for (let i = series.dates.length - 1; i >= 0; i--) {
    const day = dayNumber(series.dates[i]!);
    if (lastDay !== null && day > lastDay) continue;
    const price = series.values[i]!;
    if (Number.isFinite(price)) return { date: formatDay(day), price };
  }
  return null;
}

export interface SymbolMatch {
  symbol: string;
  name: string | null;
  currency: string | null;
  instrument_type: string | null;
  exchange: string | null;
  country: string | null;
  sector: string | null;
  priced: boolean;
}

/** symbols_search: symbols whose code or name starts with the text (or whose name contains it), priced first. */
export async function searchSymbols(db: Database, body: Record<string, unknown>): Promise<SymbolMatch[]> {
  const text = body.query ?? body.search ?? body.text;
  if (typeof text !== 'string' || text.trim() === '' || text.length > 200) {
    throw new InvalidInput('query must be a search text of 1 to 200 characters.');
  }
  const limit = body.limit ?? 10;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > SEARCH_LIMIT_MAX) {
    throw new InvalidInput(`limit must be an integer from 1 to ${SEARCH_LIMIT_MAX}.`);
  }
  const escaped = text.trim().replace(/[\\%_]/g, (c) => '\\' + c);
  const rows = (await db('securities_master as s')
    .leftJoin('price_series as p', 'p.symbol', 's.symbol')
    .where((q) =>
      q
        .whereRaw(`upper(s.symbol) LIKE upper(?) ESCAPE '\\'`, [escaped + '%'])
        .orWhereRaw(`s.name ILIKE ? ESCAPE '\\'`, ['%' + escaped + '%']),
    )
    .select(...MASTER_COLUMNS.map((c) => `s.${c}`), db.raw('(p.symbol IS NOT NULL) AS priced'))
    .orderByRaw(`(upper(s.symbol) = upper(?)) DESC, (p.symbol IS NOT NULL) DESC, s.symbol`, [text.trim()])
    .limit(limit)) as SymbolMatch[];
  return rows;
}

/** symbols_price: the last price on or before the date (latest stored when no date), or null. */
export async function symbolPrices(
  db: Database,
  accountId: string,
  body: Record<string, unknown>,
): Promise<Record<string, { date: string; price: number } | null>> {
  const symbols = requestedSymbols(body);
  const date = optionalDate(body.date, 'date');
  const market = await loadMarket(db, accountId, symbols, date);
  const lastDay = date === null ? null : dayNumber(date);
  return Object.fromEntries(symbols.map((s) => [s, lastOnOrBefore(market.get(s), lastDay)]));
}

/** symbols_historical: `[YYYYMMDD, price]` pairs from start_date to end_date (both inclusive, optional). */
export async function symbolHistories(
  db: Database,
  accountId: string,
  body: Record<string, unknown>,
): Promise<Record<string, Array<[string, number]>>> {
  const symbols = requestedSymbols(body);
  const start = optionalDate(body.start_date ?? body.start, 'start_date');
  const end = optionalDate(body.end_date ?? body.end, 'end_date');
  if (start !== null && end !== null && start > end) {
    throw new InvalidInput('start_date is after end_date.');
  }
  const market = await loadMarket(db, accountId, symbols, end);
  const firstDay = start === null ? null : dayNumber(start);
  const out: Record<string, Array<[string, number]>> = {};
  let points = 0;
  for (const symbol of symbols) {
    const series = market.get(symbol);
    const pairs: Array<[string, number]> = [];
    if (series) {
      for (let i = 0; i < series.dates.length; i++) {
        const day = dayNumber(series.dates[i]!);
        if (firstDay !== null && day < firstDay) continue;
        if (Number.isFinite(series.values[i]!)) pairs.push([formatDay(day), series.values[i]!]);
      }
    }
    points += pairs.length;
    if (points > HISTORICAL_POINTS_MAX) {
      throw new InvalidInput(
        `The answer would hold more than ${HISTORICAL_POINTS_MAX} prices: ask for fewer symbols or a shorter period.`,
      );
    }
    out[symbol] = pairs;
  }
  return out;
}
