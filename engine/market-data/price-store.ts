import {
  type AttributeValue,
  dayNumber,
  formatDay,
  parseOptionSymbol,
  pricesFromReturns,
  type MarketMemo,
  type PriceSeries,
  type ReferenceSource,
} from '../../calc';
import { createHash } from 'node:crypto';
import type { Database } from '../platform/database';

/** A series as stored: ascending day numbers (days since 1970-01-01) and their observed prices. */
export interface StoredSeries {
  dates: number[];
  values: number[];
}

export interface MergeResult {
  symbol: string;
  /** Points in the file that were not stored before. */
  added: number;
  /** Points whose date was stored already: the file's value replaces the stored one. */
  replaced: number;
  total: number;
}

/**
 * Merges points into a symbol's series: a date already stored takes the new value, so importing the
 * same file twice leaves the series unchanged (idempotent) and a later file corrects earlier prices.
 * The row is locked while merging, so two imports of one symbol serialise instead of losing points.
 */
export async function mergeSeries(
  db: Database,
  symbol: string,
  points: StoredSeries,
  source: string,
): Promise<MergeResult> {
  return db.transaction(async (trx) => {
    await trx('securities_master')
      .insert({ symbol, price_source: source })
      .onConflict('symbol')
      .merge({ price_source: source });
    const row = (await trx('price_series').where({ symbol }).forUpdate().first('dates', 'values')) as
      StoredSeries | undefined;
    const merged = new Map<number, number>();
    if (row) row.dates.forEach((day, i) => merged.set(day, row.values[i]!));
    let replaced = 0;
    points.dates.forEach((day, i) => {
      if (merged.has(day)) replaced++;
      merged.set(day, points.values[i]!);
    });
    const dates = [...merged.keys()].sort((a, b) => a - b);
    const values = dates.map((day) => merged.get(day)!);
    await trx('price_series')
      .insert({ symbol, dates, values, updated_at: new Date() })
      .onConflict('symbol')
      .merge();
    return { symbol, added: points.dates.length - replaced, replaced, total: dates.length };
  });
}

export interface SymbolSummary {
  symbol: string;
  name: string | null;
  points: number;
  first_date: string | null;
  last_date: string | null;
  source: string | null;
}

/** Every symbol with stored prices, alphabetically, with its size and date range. */
export async function listPriceSymbols(db: Database): Promise<SymbolSummary[]> {
  const rows = (await db('price_series as p')
    .join('securities_master as s', 's.symbol', 'p.symbol')
    .select(
      'p.symbol',
      's.name',
      's.price_source as source',
      db.raw('cardinality(p.dates) AS points'),
      db.raw('p.dates[1] AS first_day'),
      db.raw('p.dates[cardinality(p.dates)] AS last_day'),
    )
    .orderBy('p.symbol')) as Array<{
    symbol: string;
    name: string | null;
    source: string | null;
    points: number;
    first_day: number | null;
    last_day: number | null;
  }>;
  return rows.map((r) => ({
    symbol: r.symbol,
    name: r.name,
    points: r.points,
    first_date: r.first_day === null ? null : yyyymmdd(r.first_day),
    last_date: r.last_day === null ? null : yyyymmdd(r.last_day),
    source: r.source,
  }));
}

/** Day number → YYYYMMDD (calc's civil-calendar arithmetic: no time zone can move a date). */
export function yyyymmdd(day: number): string {
  return formatDay(day);
}

/** YYYYMMDD → day number, or null when it is not a real calendar day. */
export function parseDay(date: string): number | null {
  try {
    return dayNumber(date);
  } catch {
    return null;
  }
}

/** Everything on or before `lastDay`: later prices never reach calc/ (no look-ahead by construction). */
function upTo(dates: ArrayLike<number>, values: ArrayLike<number>, lastDay: number | null): PriceSeries {
  let n = dates.length;
  if (lastDay !== null) while (n > 0 && dates[n - 1]! > lastDay) n--;
  // Typed arrays (the series cache's) are shared, not copied: calc/ never writes its inputs.
  if (dates instanceof Int32Array && values instanceof Float64Array) {
    return { dates: dates.subarray(0, n), values: values.subarray(0, n) };
  }
  const outDates = new Int32Array(n);
  const outValues = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    outDates[i] = dates[i]!;
    outValues[i] = values[i]!;
  }
  return { dates: outDates, values: outValues };
}

/**
 * [date, value] pairs → a series: dates as `YYYYMMDD` strings (or day numbers), sorted, each date
 * once (the last pair wins). Malformed pairs are skipped: the owner's document is free-form JSON.
 */
function seriesFromPairs(pairs: unknown): { dates: number[]; values: number[] } | null {
  if (!Array.isArray(pairs)) return null;
  const byDay = new Map<number, number>();
  for (const pair of pairs) {
    if (!Array.isArray(pair) || pair.length !== 2) continue;
    const [date, value] = pair as [unknown, unknown];
    if (typeof value !== 'number' || !Number.isFinite(value)) continue;
    const day = typeof date === 'string' ? parseDay(date) : null;
    if (day !== null) byDay.set(day, value);
  }
  if (byDay.size === 0) return null;
  const dates = [...byDay.keys()].sort((a, b) => a - b);
  return { dates, values: dates.map((d) => byDay.get(d)!) };
}

/** Master columns that are bookkeeping, not attributes of the security. */
const NOT_ATTRIBUTES = new Set(['symbol', 'attributes', 'price_source']);

/**
 * The attributes calc/ reads of each symbol (its `ReferenceSource.attributes`): the securities
 * master's columns (currency, instrument_type, country, sector, …) and its `attributes` in one
 * record, lower-case keys; an empty column is absent. Symbols not in the master are absent.
 */
export async function masterAttributes(
  db: Database,
  symbols: string[],
): Promise<Map<string, Record<string, AttributeValue>>> {
  const out = new Map<string, Record<string, AttributeValue>>();
  if (symbols.length === 0) return out;
  const rows = (await db('securities_master').whereIn('symbol', symbols).select('*')) as Array<
    Record<string, unknown> & { symbol: string; attributes: Record<string, unknown> | null }
  >;
  for (const row of rows) {
    const record: Record<string, AttributeValue> = {};
    for (const [key, value] of Object.entries(row.attributes ?? {})) {
      if (typeof value === 'string' || typeof value === 'number') record[key.toLowerCase()] = value;
    }
    for (const [column, value] of Object.entries(row)) {
      if (!NOT_ATTRIBUTES.has(column) && typeof value === 'string' && value !== '') record[column] = value;
    }
    out.set(row.symbol, record);
  }
  return out;
}

/**
 * The series of a calculation (a map, symbol → prices) together with what the reporting step reads
 * of each symbol (§14, §15): its securities-master attributes and its daily volumes (`VOL:<symbol>`).
 * Volumes are not series of the model, so they are kept out of the map itself.
 */
export class MarketSnapshot extends Map<string, PriceSeries> implements ReferenceSource {
  readonly master = new Map<string, Readonly<Record<string, AttributeValue>>>();
  readonly volumes = new Map<string, PriceSeries>();
  /** calc's store of derived values, when every series has a known version (see `loadMarket`). */
  memo?: MarketMemo;

  attributes(symbol: string): Readonly<Record<string, AttributeValue>> | undefined {
    return this.master.get(symbol);
  }

  volume(symbol: string): PriceSeries | undefined {
    return this.volumes.get(symbol);
  }
}

/**
 * Stored series rows of the given symbols (absent symbols have no row). `version` (the series
 * cache's) changes whenever the row is written.
 */
export type SeriesRows = (
  db: Database,
  symbols: string[],
) => Promise<
  Array<{ symbol: string; dates: ArrayLike<number>; values: ArrayLike<number>; version?: string }>
>;

/**
 * Where a market finds its memo (calc's `SeriesSource.memo`) for one fingerprint of its stored
 * series: the same fingerprint, the same series, the same derived values.
 */
export type MarketMemos = (fingerprint: string) => MarketMemo;

/** Straight from PostgreSQL; engine/calculations/series-cache.ts serves the same rows from memory. */
export const readSeriesRows: SeriesRows = async (db, symbols) =>
  (await db('price_series').whereIn('symbol', symbols).select('symbol', 'dates', 'values')) as Array<
    { symbol: string } & StoredSeries
  >;

/**
 * The market a calculation sees: the stored series of `symbols`, the account's `CUSTOM:*` indexes
 * and the price series of its `PRIVATE:*` securities, each cut at `date` (YYYYMMDD; null = all).
 *
 * - CUSTOM: PRICE points are prices; RETURN (decimal) and RETURN_100 (percent) are chained into
 *   prices from `base_price` (calc's `pricesFromReturns`). Monthly indexes are used as given, on
 *   their own dates: calc carries a price forward to the next calendar row only.
 * - PRIVATE: `data.prices` is `[[YYYYMMDD, price], …]`; a private security without it has no series.
 * A symbol without data is absent from the map, so calc reports it in `unmapped_tickers`.
 * - The master attributes and volumes of every symbol, and of an option's underlying (§14: an option
 *   is grouped and its liquidity measured by its underlying), come along; volumes are cut at the date.
 */
export async function loadMarket(
  db: Database,
  accountId: string,
  symbols: Iterable<string>,
  date: string | null,
  readRows: SeriesRows = readSeriesRows,
  memos?: MarketMemos,
): Promise<MarketSnapshot> {
  const lastDay = date === null ? null : dayNumber(date);
  const wanted = [...new Set(symbols)];
  const custom = wanted.filter((s) => s.startsWith('CUSTOM:'));
  const privates = wanted.filter((s) => s.startsWith('PRIVATE:'));
  const stored = wanted.filter((s) => !s.startsWith('CUSTOM:') && !s.startsWith('PRIVATE:'));
  const market = new MarketSnapshot();

  const described = [
    ...new Set([...wanted, ...wanted.flatMap((s) => parseOptionSymbol(s)?.underlying ?? [])]),
  ];
  for (const [symbol, attributes] of await masterAttributes(db, described))
    market.master.set(symbol, attributes);
  const volumeSymbols = described.map((s) => `VOL:${s}`);
  if (stored.length + volumeSymbols.length > 0) {
    const rows = await readRows(db, [...stored, ...volumeSymbols]);
    // The memo is shared by every market cut at the same day from the same versions of the same
    // rows; the account's own series (CUSTOM:, PRIVATE:) have no version, so a market with any has none.
    if (memos !== undefined && custom.length + privates.length === 0 && rows.every((r) => r.version)) {
      const versions = rows.map((r) => `${r.symbol}\u0000${r.version!}`).sort();
      market.memo = memos(
        createHash('sha256')
          .update(`${lastDay ?? 'latest'}\u0001${versions.join('\u0001')}`)
          .digest('hex'),
      );
    }
    const priced = new Set(stored);
    for (const row of rows) {
      const series = upTo(row.dates, row.values, lastDay);
      if (row.symbol.startsWith('VOL:') && !priced.has(row.symbol)) {
        market.volumes.set(row.symbol.slice('VOL:'.length), series);
      } else {
        market.set(row.symbol, series);
      }
    }
  }
  if (custom.length + privates.length > 0) {
    const rows = (await db('entities')
      .where({ account_id: accountId })
      .where((q) => {
        if (custom.length > 0) q.orWhere((w) => w.where({ kind: 'custom_index' }).whereIn('id', custom));
        if (privates.length > 0)
          q.orWhere((w) => w.where({ kind: 'private_security' }).whereIn('id', privates));
      })
      .select('kind', 'id', 'body')) as Array<{ kind: string; id: string; body: Record<string, unknown> }>;
    for (const row of rows) {
      if (row.kind === 'custom_index') {
        const points = seriesFromPairs(row.body.data);
        if (!points) continue;
        const series = upTo(points.dates, points.values, lastDay);
        const type = row.body.data_type ?? 'PRICE';
        const base = typeof row.body.base_price === 'number' ? row.body.base_price : 1;
        market.set(
          row.id,
          type === 'RETURN' || type === 'RETURN_100' ? pricesFromReturns(series, type, base) : series,
        );
      } else {
        const data = row.body.data as Record<string, unknown> | undefined;
        const points = seriesFromPairs(data?.prices);
        if (points) market.set(row.id, upTo(points.dates, points.values, lastDay));
      }
    }
  }
  return market;
}
