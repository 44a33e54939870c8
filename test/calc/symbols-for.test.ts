import { symbolsFor } from '../../engine/calculations/calculation-service';
import type { Database } from '../../engine/platform/database';
import { createTestDatabase } from '../support/test-database';

/**
 * The symbols a calculation reads: the book's own, then the FX pairs of the currencies the
 * securities master gives them, read with one array parameter however large the book.
 */
describe('symbolsFor', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  const odd = 'ODD,"SYM{1}\\ ';

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
    await db('securities_master').insert([
      { symbol: odd, currency: 'EUR' },
      { symbol: 'PLAIN', currency: 'gbp' },
      { symbol: 'NOT-IN-THE-BOOK', currency: 'JPY' },
      { symbol: 'NO-CURRENCY', currency: null },
    ]);
  });
  afterAll(async () => {
    await database?.drop();
  });

  test('a 3000-position book with odd characters in a symbol: the master currencies of its symbols only', async () => {
    const book = [
      { symbol: odd, currency: null },
      { symbol: 'PLAIN', currency: null },
      { symbol: 'NO-CURRENCY', currency: null },
      ...Array.from({ length: 3000 }, (_, i) => ({ symbol: `S${i}`, currency: null })),
    ];
    const symbols = await symbolsFor(db, 'USD', book, ['IND:SPX']);
    expect(symbols.slice(0, 4)).toEqual(['IND:SPX', odd, 'PLAIN', 'NO-CURRENCY']);
    expect(symbols).toContain('FX:EURUSD');
    expect(symbols).toContain('FX:GBPUSD');
    expect(symbols.some((symbol) => symbol.includes('JPY'))).toBe(false);
    expect(symbols).toHaveLength(1 + book.length + 2 * 6);
  });
});
