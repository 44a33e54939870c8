import { marketGeneration, SeriesCache } from '../../engine/calculations/series-cache';
import { mergeSeries, readSeriesRows } from '../../engine/market-data/price-store';
import { useTestApp } from '../support/use-test-app';

/**
 * The in-memory cache of stored series (engine/calculations/series-cache.ts) on a real PostgreSQL:
 * it answers what PostgreSQL holds, sees every write (also one in the same millisecond, of the same
 * length), keeps within its bound, and still answers a read larger than its bound.
 */
describe('series cache', () => {
  const h = useTestApp();
  const days = [19000, 19001, 19002];

  test('answers the stored rows; a rewrite is seen on the next read; arrays travel only when changed', async () => {
    await mergeSeries(h.db, 'AAA', { dates: days, values: [1, 2, 3] }, 'test');
    await mergeSeries(h.db, 'BBB', { dates: days, values: [4, 5, 6] }, 'test');
    const cache = new SeriesCache(1000);
    const plain = (rows: Array<{ symbol: string; dates: ArrayLike<number>; values: ArrayLike<number> }>) =>
      rows
        .map((r) => ({ symbol: r.symbol, dates: Array.from(r.dates), values: Array.from(r.values) }))
        .sort((a, b) => a.symbol.localeCompare(b.symbol));
    const first = await cache.read(h.db, ['AAA', 'BBB', 'NONE']);
    expect(plain(first)).toEqual(plain(await readSeriesRows(h.db, ['AAA', 'BBB', 'NONE'])));
    expect(cache.size()).toEqual({ series: 2, points: 6, derived: 0 });

    // Two writes of the same length in quick succession: each is a new row version (xmin).
    await mergeSeries(h.db, 'AAA', { dates: days, values: [1, 2, 30] }, 'test');
    await mergeSeries(h.db, 'AAA', { dates: days, values: [1, 2, 31] }, 'test');
    const second = await cache.read(h.db, ['AAA', 'BBB']);
    expect(plain(second)).toEqual([
      { symbol: 'AAA', dates: days, values: [1, 2, 31] },
      { symbol: 'BBB', dates: days, values: [4, 5, 6] },
    ]);
    // BBB was not rewritten: the very arrays of the first read.
    expect(second.find((r) => r.symbol === 'BBB')!.values).toBe(
      first.find((r) => r.symbol === 'BBB')!.values,
    );
    expect(second.find((r) => r.symbol === 'AAA')!.values).not.toBe(
      first.find((r) => r.symbol === 'AAA')!.values,
    );
  });

  test('bounded: the least recently read go first; a read larger than the bound is still whole', async () => {
    for (const symbol of ['C1', 'C2', 'C3'])
      await mergeSeries(h.db, symbol, { dates: days, values: [1, 1, 1] }, 'test');
    const cache = new SeriesCache(6);
    await cache.read(h.db, ['C1']);
    await cache.read(h.db, ['C2']);
    await cache.read(h.db, ['C1']);
    await cache.read(h.db, ['C3']);
    expect(cache.size()).toEqual({ series: 2, points: 6, derived: 0 });
    const all = await cache.read(h.db, ['C1', 'C2', 'C3']);
    expect(all.map((r) => r.symbol).sort()).toEqual(['C1', 'C2', 'C3']);
    expect(cache.size().points).toBeLessThanOrEqual(6);
  });

  test('a whole market is kept while the market generation stands; any write of prices or the master moves it', async () => {
    await mergeSeries(h.db, 'G1', { dates: days, values: [1, 2, 3] }, 'test');
    const cache = new SeriesCache(1000);
    const first = await cache.market(h.db, h.account.accountId, ['G1'], null);
    expect(Array.from(first.get('G1')!.values)).toEqual([1, 2, 3]);
    expect(await cache.market(h.db, h.account.accountId, ['G1'], null)).toBe(first);

    const generation = await marketGeneration(h.db);
    await mergeSeries(h.db, 'G1', { dates: days, values: [1, 2, 4] }, 'test');
    expect(await marketGeneration(h.db)).not.toBe(generation);
    const second = await cache.market(h.db, h.account.accountId, ['G1'], null);
    expect(second).not.toBe(first);
    expect(Array.from(second.get('G1')!.values)).toEqual([1, 2, 4]);

    // A master attribute alone (a sector) is part of the market too.
    await h.db('securities_master').where({ symbol: 'G1' }).update({ sector: 'Energy' });
    const third = await cache.market(h.db, h.account.accountId, ['G1'], null);
    expect(third).not.toBe(second);
    expect(third.attributes('G1')?.sector).toBe('Energy');
    expect(await cache.market(h.db, h.account.accountId, ['G1'], null)).toBe(third);
  });
});
