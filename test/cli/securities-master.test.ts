import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Database } from '../../engine/platform/database';
import { parseSecuritiesCsv } from '../../engine/market-data/securities-master';
import { createTestDatabase } from '../support/test-database';
import { pas } from '../support/pas-cli';

describe('pas market securities (the securities master)', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  let temp: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
    temp = mkdtempSync(path.join(tmpdir(), 'pas-master-'));
  });
  afterAll(async () => {
    rmSync(temp, { recursive: true, force: true });
    await database.drop();
  });

  const master = async (symbol: string) =>
    (await db('securities_master').where({ symbol }).first()) as Record<string, unknown> | undefined;

  test('parsing: bad rows are reported with their line, not dropped silently', () => {
    const parsed = parseSecuritiesCsv(
      [
        'Symbol,Name,Currency,Country,Sector,Industry',
        'AAPL,"Apple, Inc.",USD,US,Information Technology,Hardware',
        ',No symbol,USD,US,,',
        'JPM,JPMorgan Chase,usd,US,Financials,Banks',
        'XOM,Exxon Mobil,USD,USA,Energy,Oil',
        'AAPL,Apple again,USD,US,,',
        'WMT,Walmart',
        '',
      ].join('\n'),
    );
    expect(parsed.rows).toEqual([
      {
        symbol: 'AAPL',
        fields: { name: 'Apple, Inc.', currency: 'USD', country: 'US', sector: 'Information Technology' },
        attributes: { industry: 'Hardware' },
      },
    ]);
    expect(parsed.extraColumns).toEqual(['industry']);
    expect(parsed.badRows).toEqual([
      { line: 3, message: 'has no symbol.' },
      { line: 4, message: 'currency "usd" is not a 3-letter ISO 4217 code such as USD.' },
      { line: 5, message: 'country "USA" is not a 2-letter ISO 3166 code such as US.' },
      { line: 6, message: 'repeats the symbol AAPL.' },
      { line: 7, message: 'has 2 cells, the header has 6.' },
    ]);
    expect(() => parseSecuritiesCsv('name,currency\nApple,USD')).toThrow(/symbol column/);
  });

  test('import creates, re-import changes nothing, a narrower file updates one column only', async () => {
    const file = path.join(temp, 'master.csv');
    writeFileSync(
      file,
      [
        'symbol,name,currency,instrument_type,exchange,country,sector,industry',
        'AAPL,Apple Inc.,USD,Common Stock,XNAS,US,Information Technology,Hardware',
        'IND:SPX,S&P 500 Index,USD,Index,,US,,',
        'JPM,JPMorgan Chase & Co.,USD,Common Stock,XNYS,US,Financials,Banks',
        'BAD,Bad,dollars,Common Stock,,US,,',
      ].join('\n'),
    );
    const first = pas(database.url, 'market', 'securities', file, '--json');
    expect(first.status).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      rows: 4,
      created: 3,
      updated: 0,
      extra_columns: ['industry'],
      bad_rows: [{ line: 5 }],
    });
    expect(first.stderr).toContain('line 5: currency "dollars" is not a 3-letter ISO 4217 code');
    expect(await master('AAPL')).toMatchObject({
      name: 'Apple Inc.',
      currency: 'USD',
      instrument_type: 'Common Stock',
      exchange: 'XNAS',
      country: 'US',
      sector: 'Information Technology',
      attributes: { industry: 'Hardware' },
    });
    expect(await master('BAD')).toBeUndefined();

    const again = pas(database.url, 'market', 'securities', file, '--json');
    expect(JSON.parse(again.stdout)).toMatchObject({ created: 0, updated: 3 });
    expect(await master('AAPL')).toMatchObject({ name: 'Apple Inc.', attributes: { industry: 'Hardware' } });

    const narrow = path.join(temp, 'sectors.csv');
    writeFileSync(narrow, 'symbol,sector,gics\nAAPL,Technology,45\n');
    expect(pas(database.url, 'market', 'securities', narrow).status).toBe(0);
    expect(await master('AAPL')).toMatchObject({
      name: 'Apple Inc.',
      exchange: 'XNAS',
      sector: 'Technology',
      attributes: { industry: 'Hardware', gics: '45' },
    });

    const shown = pas(database.url, 'market', 'show', 'AAPL', 'NOPE', '--json');
    expect(shown.status).toBe(0);
    expect(JSON.parse(shown.stdout)).toEqual([
      expect.objectContaining({ symbol: 'AAPL', sector: 'Technology' }),
    ]);
    expect(shown.stderr).toContain('NOPE: not in the securities master');
  });

  test('a file without a symbol column stops with a clear message and changes nothing', () => {
    const file = path.join(temp, 'nosymbol.csv');
    writeFileSync(file, 'name,currency\nApple,USD\n');
    const result = pas(database.url, 'market', 'securities', file);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('needs a header line with a symbol column');
  });
});
