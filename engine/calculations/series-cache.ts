import type { Database } from '../platform/database';
import type { MarketMemo } from '../../calc';
import { loadMarket, type MarketSnapshot, type SeriesRows } from '../market-data/price-store';

/**
 * The stored price series the analytics read, kept in memory between requests. Reading 3000 series
 * from PostgreSQL costs seconds (every float8[] travels and is parsed as text), far more than the
 * analytics themselves, and the series change only when prices are imported.
 *
 * Never stale: each read first asks PostgreSQL for the version of every wanted row — its `xmin`
 * (the transaction that wrote it, new on every write) and `updated_at` — an index scan that returns
 * no arrays, and fetches the arrays only of the rows it does not hold at that version. An import in
 * another process (the CLI, another replica) is therefore seen by the next read, with no message
 * between processes. A deleted row is simply not returned.
 *
 * Bounded: at most `maxPoints` stored points (dates and values, 12 bytes each) are kept; the least
 * recently read series go first.
 */
export class SeriesCache {
  private readonly entries = new Map<string, { version: string; dates: Int32Array; values: Float64Array }>();
  private points = 0;
  /** Whole markets of recent requests (stored series only), with the generation they were read at. */
  private readonly markets = new Map<string, { generation: string; market: MarketSnapshot }>();
  /** calc's derived values (windows, factor models) per fingerprint + key, least recently used first. */
  private readonly derived = new Map<string, unknown>();

  constructor(
    readonly maxPoints: number,
    /** How many derived values are kept (an L window of returns is about 30 MB). */
    readonly maxDerived: number = MEMO_ENTRIES,
  ) {}

  /**
   * The memo of the markets whose stored series have `fingerprint` (loadMarket's hash of their
   * versions and cut-off day): a new version of any series is a new fingerprint, so nothing derived
   * from old prices is ever returned for new ones; old entries age out.
   */
  readonly memo = (fingerprint: string): MarketMemo => ({
    get: (key) => {
      const full = `${fingerprint}\u0002${key}`;
      const value = this.derived.get(full);
      if (value !== undefined) {
        this.derived.delete(full);
        this.derived.set(full, value);
      }
      return value;
    },
    set: (key, value) => {
      const full = `${fingerprint}\u0002${key}`;
      this.derived.delete(full);
      this.derived.set(full, value);
      for (const oldest of this.derived.keys()) {
        if (this.derived.size <= this.maxDerived) break;
        this.derived.delete(oldest);
      }
    },
  });

  /** The cache's rows of `symbols`. The arrays are shared with the cache: read them, never write them. */
  readonly read: SeriesRows = async (db, symbols) => {
    if (symbols.length === 0) return [];
    const version = db.raw(`xmin::text || '/' || (extract(epoch from updated_at) * 1e6)::bigint as version`);
    const versions = (await db('price_series')
      .whereIn('symbol', symbols)
      .select('symbol', version)) as Array<{
      symbol: string;
      version: string;
    }>;
    // Taken before anything is stored: storing may evict what this very read needs.
    const found = new Map<string, { dates: Int32Array; values: Float64Array }>();
    const missing: string[] = [];
    for (const v of versions) {
      const entry = this.entries.get(v.symbol);
      if (entry?.version !== v.version) {
        missing.push(v.symbol);
        continue;
      }
      found.set(v.symbol, entry);
      // Most recently read last: Map order is the eviction order.
      this.entries.delete(v.symbol);
      this.entries.set(v.symbol, entry);
    }
    if (missing.length > 0) {
      const rows = (await db('price_series')
        .whereRaw('symbol = any(?)', [missing])
        .select('symbol', 'dates', 'values', version)) as Array<{
        symbol: string;
        dates: number[];
        values: number[];
        version: string;
      }>;
      for (const row of rows)
        found.set(row.symbol, this.store(row.symbol, row.version, row.dates, row.values));
    }
    return versions.flatMap(({ symbol, version: current }) => {
      const series = found.get(symbol);
      // A row deleted between the two queries is absent, as it would be from one query a moment later.
      return series === undefined ? [] : [{ symbol, version: current, ...series }];
    });
  };

  /**
   * `loadMarket` through this cache, and the whole market of a request kept while the market
   * generation (one row, moved by every committed write of prices or the master) stays the same: a
   * request on the same symbols and date then reads one small row from PostgreSQL, not 6000 versions.
   * The generation is read before the market, so a write that commits in between is read again next
   * time, never missed. A market with the account's own series (CUSTOM:, PRIVATE:) is read every time.
   */
  async market(
    db: Database,
    accountId: string,
    symbols: readonly string[],
    date: string | null,
  ): Promise<MarketSnapshot> {
    if (symbols.some((s) => s.startsWith('CUSTOM:') || s.startsWith('PRIVATE:'))) {
      return loadMarket(db, accountId, symbols, date, this.read, this.memo);
    }
    const generation = await marketGeneration(db);
    const key = `${date ?? 'latest'}\u0000${symbols.join('\u0000')}`;
    const known = this.markets.get(key);
    if (known?.generation === generation) {
      this.markets.delete(key);
      this.markets.set(key, known);
      return known.market;
    }
    const market = await loadMarket(db, accountId, symbols, date, this.read, this.memo);
    this.markets.delete(key);
    this.markets.set(key, { generation, market });
    for (const oldest of this.markets.keys()) {
      if (this.markets.size <= MARKETS_KEPT) break;
      this.markets.delete(oldest);
    }
    return market;
  }

  /** How many series and points it holds, and derived values (for tests and the health of the bound). */
  size(): { series: number; points: number; derived: number } {
    return { series: this.entries.size, points: this.points, derived: this.derived.size };
  }

  private store(
    symbol: string,
    version: string,
    dates: number[],
    values: number[],
  ): { dates: Int32Array; values: Float64Array } {
    const series = { dates: Int32Array.from(dates), values: Float64Array.from(values) };
    const previous = this.entries.get(symbol);
    if (previous !== undefined) {
      this.points -= previous.dates.length;
      this.entries.delete(symbol);
    }
    if (dates.length > this.maxPoints) return series;
    this.entries.set(symbol, { version, ...series });
    this.points += dates.length;
    for (const [oldest, entry] of this.entries) {
      if (this.points <= this.maxPoints) break;
      this.entries.delete(oldest);
      this.points -= entry.dates.length;
    }
    return series;
  }
}

/**
 * 20 million points (240 MB) per process: the 3000 × 15 book of the benchmark with five years of
 * daily prices is 3.8 million; the whole shared market history is under 1 million.
 */
export const SERIES_CACHE_POINTS = 20_000_000;

/** Whole request markets kept per process (they share the cache's arrays: a few MB each at L). */
export const MARKETS_KEPT = 4;

/**
 * The market generation (migration 20261126030000_market_generation): a number that moves with every
 * committed write of stored prices or the securities master, in any process.
 */
export async function marketGeneration(db: Database): Promise<string> {
  const row = (await db('market_generation').where({ id: 1 }).first('value')) as
    { value: string | number } | undefined;
  return String(row?.value ?? 'none');
}

/** Derived values kept per process: a window and a model per recent request shape. */
export const MEMO_ENTRIES = 8;

const caches = new WeakMap<Database, SeriesCache>();

/** The process's cache for one database (a test process may hold several databases). */
export function seriesCacheOf(db: Database): SeriesCache {
  let cache = caches.get(db);
  if (cache === undefined) {
    cache = new SeriesCache(SERIES_CACHE_POINTS);
    caches.set(db, cache);
  }
  return cache;
}
