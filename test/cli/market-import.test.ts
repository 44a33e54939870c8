import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Database } from '../../engine/platform/database';
import { createTestAccount } from '../support/test-app';
import { createTestDatabase } from '../support/test-database';
import { loadMarket } from '../../engine/market-data/price-store';
import { parseCsvDate } from '../../engine/market-data/csv-import';
import { pas } from '../support/pas-cli';

const ROOT = path.resolve(__dirname, '..', '..');
/** The shared real data, read in place (never copied into the repository). */
const MARKET = path.resolve(ROOT, '..', 'shared', 'data', 'market');

describe('pas market import', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  let temp: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
    temp = mkdtempSync(path.join(tmpdir(), 'pas-market-'));
  });
  afterAll(async () => {
    rmSync(temp, { recursive: true, force: true });
    await database.drop();
  });

  const series = async (symbol: string) =>
    (await db('price_series').where({ symbol }).first('dates', 'values')) as
      { dates: number[]; values: number[] } | undefined;

  test('both date formats parse to the same day; nonsense and impossible dates do not', () => {
    expect(parseCsvDate('2014-01-03')).toBe(parseCsvDate('1/3/2014'));
    expect(parseCsvDate('2014-01-03')).toBe(16073);
    expect(parseCsvDate('2/30/2014')).toBeNull();
    expect(parseCsvDate('2014-13-01')).toBeNull();
    expect(parseCsvDate('yesterday')).toBeNull();
  });

  test('the S&P 500 file lands as IND:SPX; a second import changes nothing', async () => {
    const file = path.join(MARKET, 'sp500_index_1990_2022.csv');
    const first = pas(database.url, 'market', 'import', file, '--json');
    expect(first.status).toBe(0);
    const summary = JSON.parse(first.stdout);
    expect(summary).toMatchObject({
      symbols: [{ symbol: 'IND:SPX', column: 'SP500', added: summary.rows, total: summary.rows }],
      first_date: '19900102',
      last_date: '20221228',
      bad_rows: [],
    });
    expect(summary.rows).toBeGreaterThan(8000);
    // Not a terminal and no --progress: stderr stays clean for scripts.
    expect(first.stderr).toBe('');
    const before = await series('IND:SPX');
    expect(before!.dates).toHaveLength(summary.rows);
    expect(before!.values[0]).toBe(359.69);

    const again = pas(database.url, 'market', 'import', file, '--json', '--progress');
    expect(again.status).toBe(0);
    expect(JSON.parse(again.stdout).symbols[0]).toMatchObject({ added: 0, total: summary.rows });
    expect(again.stderr).toContain('[##############################] 1/1 IND:SPX');
    expect(await series('IND:SPX')).toEqual(before);
  });

  test('the wide stocks file: 19 symbols, empty cells are missing prices, not bad rows', async () => {
    const res = pas(database.url, 'market', 'import', path.join(MARKET, 'us_stocks_daily.csv'));
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(
      /^Imported .*us_stocks_daily\.csv: 19 symbols, \d+ rows, \d+ prices, 19900102 \.\. 20241129, 0 bad rows\./,
    );
    const meta = await series('META');
    const aapl = await series('AAPL');
    // META listed in 2012: its series starts there, AAPL's in 1990.
    expect(meta!.dates.length).toBeLessThan(aapl!.dates.length);
    expect(meta!.values.every(Number.isFinite)).toBe(true);
  });

  test('M/D/YYYY dates and one column of an OHLCV file mapped to a symbol', async () => {
    const res = pas(
      database.url,
      'market',
      'import',
      path.join(MARKET, 'nasdaq_index_daily.csv'),
      '--column',
      'Adj Close',
      '--map',
      'Adj Close=IND:COMP',
      '--date-column',
      'Date',
      '--json',
    );
    expect(res.status).toBe(0);
    const summary = JSON.parse(res.stdout);
    // The file's Volume column comes along as the volumes of the one price column picked.
    expect(summary.symbols).toEqual([
      expect.objectContaining({ symbol: 'IND:COMP', column: 'Adj Close', kind: 'price' }),
      expect.objectContaining({ symbol: 'VOL:IND:COMP', column: 'Volume', kind: 'volume' }),
    ]);
    expect((await series('VOL:IND:COMP'))!.values[0]).toBe(936660000);
    expect(summary).toMatchObject({ first_date: '19990104', last_date: '20181231', bad_rows: [] });
    expect((await series('IND:COMP'))!.values[0]).toBe(2208.050049);
    expect(await series('Open')).toBeUndefined();

    const listed = pas(database.url, 'market', 'symbols', '--json');
    expect(listed.status).toBe(0);
    const symbols = JSON.parse(listed.stdout);
    expect(symbols.map((s: { symbol: string }) => s.symbol)).toEqual(
      expect.arrayContaining(['IND:SPX', 'IND:COMP', 'AAPL', 'XOM']),
    );
    expect(symbols.find((s: { symbol: string }) => s.symbol === 'IND:COMP')).toMatchObject({
      first_date: '19990104',
      last_date: '20181231',
      source: 'nasdaq_index_daily.csv:Adj Close',
    });
  });

  test('bad rows are reported with their line numbers and the good cells still load', async () => {
    const file = path.join(temp, 'bad.csv');
    writeFileSync(
      file,
      [
        'Date,BADX,BADY',
        '2020-01-02,10,20',
        '2020-13-40,11,21',
        '1/6/2020,12,abc',
        '2020-01-07,,22',
        '2020-01-02,13,23',
        '',
        '2020-01-08,1e1,0x10',
      ].join('\n'),
    );
    const res = pas(database.url, 'market', 'import', file, '--json');
    expect(res.status).toBe(0);
    const summary = JSON.parse(res.stdout);
    expect(summary.rows).toBe(6);
    expect(summary.bad_rows).toEqual([
      { line: 3, message: 'unreadable date "2020-13-40"' },
      { line: 4, message: 'BADY is not a number: "abc"' },
      { line: 6, message: 'date 2020-01-02 already on line 2' },
      { line: 8, message: 'BADY is not a number: "0x10"' },
    ]);
    expect(res.stderr).toContain('line 3: unreadable date "2020-13-40"');
    expect((await series('BADX'))!.values).toEqual([10, 12, 10]);
    expect((await series('BADY'))!.values).toEqual([20, 22]);
  });

  test('a re-import with new and corrected dates merges without duplicates', async () => {
    const file = path.join(temp, 'merge.csv');
    writeFileSync(file, 'date,MERGE\n2021-01-04,1\n2021-01-05,2\n');
    expect(pas(database.url, 'market', 'import', file).status).toBe(0);
    writeFileSync(file, 'date,MERGE\n2021-01-05,2.5\n2021-01-06,3\n');
    const res = pas(database.url, 'market', 'import', file, '--json');
    expect(JSON.parse(res.stdout).symbols[0]).toMatchObject({ added: 1, total: 3 });
    expect(await series('MERGE')).toEqual({
      dates: [parseCsvDate('2021-01-04'), parseCsvDate('2021-01-05'), parseCsvDate('2021-01-06')],
      values: [1, 2.5, 3],
    });
  });

  test('wrong options are refused with a message and exit status 1', () => {
    const file = path.join(MARKET, 'vix_daily.csv');
    const noColumn = pas(database.url, 'market', 'import', file, '--column', 'Close');
    expect(noColumn.status).toBe(1);
    expect(noColumn.stderr).toContain('No price column named "Close"');
    const badMap = pas(database.url, 'market', 'import', file, '--map', 'vix');
    expect(badMap.status).toBe(1);
    expect(badMap.stderr).toContain('--map expects COLUMN=SYMBOL');
  });

  test('loadMarket: stored series cut at the date, custom indexes chained, private price series', async () => {
    const { accountId } = await createTestAccount(db);
    await db('entities').insert([
      {
        account_id: accountId,
        kind: 'custom_index',
        id: 'CUSTOM:RET',
        name: 'Returns',
        tags: [],
        body: {
          data_type: 'RETURN_100',
          periodicity: 'M',
          base_price: 100,
          data: [
            ['20200131', 1],
            ['20200228', 10],
            ['20200331', -50],
          ],
        },
        created_at: new Date(),
        updated_at: new Date(),
        version: 1,
      },
      {
        account_id: accountId,
        kind: 'private_security',
        id: 'PRIVATE:FUND',
        name: 'Fund',
        tags: [],
        body: {
          instrument_type: 'EQUITY',
          data: {
            prices: [
              ['20200102', 5],
              ['20200103', 6],
            ],
          },
        },
        created_at: new Date(),
        updated_at: new Date(),
        version: 1,
      },
    ]);
    const market = await loadMarket(
      db,
      accountId,
      ['MERGE', 'CUSTOM:RET', 'PRIVATE:FUND', 'NOPE', 'CUSTOM:OTHER'],
      '20210105',
    );
    expect([...market.keys()].sort()).toEqual(['CUSTOM:RET', 'MERGE', 'PRIVATE:FUND']);
    expect(Array.from(market.get('MERGE')!.values)).toEqual([1, 2.5]);
    expect(Array.from(market.get('CUSTOM:RET')!.values)).toEqual([101, 101 * 1.1, 101 * 1.1 * 0.5]);
    expect(Array.from(market.get('PRIVATE:FUND')!.values)).toEqual([5, 6]);
    // Another account's custom index is not this account's market.
    const other = await createTestAccount(db);
    expect((await loadMarket(db, other.accountId, ['CUSTOM:RET'], null)).size).toBe(0);
  });
});
