import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { dayNumber, positionFacts } from '../../calc';
import type { Database } from '../../engine/platform/database';
import { parseMarketCsv } from '../../engine/market-data/csv-import';
import { loadMarket } from '../../engine/market-data/price-store';
import { parseSecuritiesCsv } from '../../engine/market-data/securities-master';
import { pas } from '../support/pas-cli';
import { createTestAccount } from '../support/test-app';
import { createTestDatabase } from '../support/test-database';

/** The README's example files (written for the repository, not copies of the shared data). */
const FIXTURES = path.resolve(__dirname, '..', 'fixtures', 'market');
const fixture = (name: string) => path.join(FIXTURES, name);

describe('market data for FX, rates, spreads, volumes and the §14 master attributes', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Database;
  let temp: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = database.db;
    temp = mkdtempSync(path.join(tmpdir(), 'pas-fixtures-'));
  });
  afterAll(async () => {
    rmSync(temp, { recursive: true, force: true });
    await database.drop();
  });

  const series = async (symbol: string) =>
    (await db('price_series').where({ symbol }).first('dates', 'values')) as
      { dates: number[]; values: number[] } | undefined;

  test('FX rates: the fixture imports as FX:* series; a second import changes nothing', async () => {
    const first = pas(database.url, 'market', 'import', fixture('fx_rates.csv'), '--json');
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    const summary = JSON.parse(first.stdout);
    expect(summary.symbols).toEqual([
      { symbol: 'FX:EURUSD', column: 'FX:EURUSD', kind: 'fx', points: 8, added: 8, total: 8 },
      { symbol: 'FX:USDJPY', column: 'FX:USDJPY', kind: 'fx', points: 8, added: 8, total: 8 },
      { symbol: 'FX:GBPUSD', column: 'FX:GBPUSD', kind: 'fx', points: 8, added: 8, total: 8 },
    ]);
    expect(summary).toMatchObject({ rows: 8, first_date: '20240102', last_date: '20240111', bad_rows: [] });
    const before = await series('FX:EURUSD');
    expect(before!.values).toEqual([1.094, 1.092, 1.095, 1.094, 1.095, 1.093, 1.097, 1.097]);
    const again = pas(database.url, 'market', 'import', fixture('fx_rates.csv'));
    expect(again.status).toBe(0);
    expect(again.stdout).toMatch(/^ +FX:EURUSD +FX:EURUSD — 8 FX rates, 0 new, 8 stored$/m);
    expect(await series('FX:EURUSD')).toEqual(before);
  });

  test('rates and spreads: levels in percent, stored as given', async () => {
    const res = pas(database.url, 'market', 'import', fixture('rates_and_spreads.csv'), '--json');
    expect(res.status).toBe(0);
    const summary = JSON.parse(res.stdout);
    expect(summary.symbols.map((s: { symbol: string; kind: string }) => [s.symbol, s.kind])).toEqual([
      ['RATE:US10Y', 'rate'],
      ['RATE:US2Y', 'rate'],
      ['SPREAD:IGOAS', 'spread'],
      ['SPREAD:HYOAS', 'spread'],
    ]);
    expect((await series('RATE:US10Y'))!.values[0]).toBe(3.95);
    expect((await series('SPREAD:IGOAS'))!.values.at(-1)).toBe(1.01);
  });

  test('an OHLCV file: --column picks the price, its Volume column lands as VOL:<symbol>', async () => {
    const args = ['--column', 'Adj Close', '--map', 'Adj Close=ACME', '--json'];
    const res = pas(database.url, 'market', 'import', fixture('acme_ohlcv.csv'), ...args);
    expect(res.status).toBe(0);
    expect(JSON.parse(res.stdout).symbols).toEqual([
      { symbol: 'ACME', column: 'Adj Close', kind: 'price', points: 8, added: 8, total: 8 },
      { symbol: 'VOL:ACME', column: 'Volume', kind: 'volume', points: 8, added: 8, total: 8 },
    ]);
    expect((await series('ACME'))!.values[0]).toBe(50.2);
    // A zero volume (a halted day) is a volume, not a bad row.
    expect((await series('VOL:ACME'))!.values).toEqual([
      1250000, 1410000, 980000, 1120000, 1305000, 0, 1510000, 1190000,
    ]);
    expect(await series('Open')).toBeUndefined();
    const again = pas(database.url, 'market', 'import', fixture('acme_ohlcv.csv'), ...args);
    expect(JSON.parse(again.stdout).symbols.map((s: { added: number }) => s.added)).toEqual([0, 0]);
  });

  test('a wide volumes file: VOL:* columns, an empty cell is a missing volume', async () => {
    const res = pas(database.url, 'market', 'import', fixture('volumes.csv'), '--json');
    expect(res.status).toBe(0);
    const summary = JSON.parse(res.stdout);
    expect(summary.symbols).toEqual([
      // The ACME volumes were imported from the OHLCV file already: same values, nothing new.
      { symbol: 'VOL:ACME', column: 'VOL:ACME', kind: 'volume', points: 8, added: 0, total: 8 },
      { symbol: 'VOL:GLOBEX', column: 'VOL:GLOBEX', kind: 'volume', points: 7, added: 7, total: 7 },
    ]);
    expect(summary.bad_rows).toEqual([]);
  });

  test('values a kind does not allow are bad rows with their line; the other cells still load', () => {
    const parsed = parseMarketCsv(
      [
        'date,FX:EURUSD,RATE:JP10Y,VOL:ACME,ACME',
        '2024-01-02,1.09,-0.05,100,10',
        '2024-01-03,0,0,-5,0',
        '2024-01-04,-1.1,0.1,7,abc',
      ].join('\n'),
    );
    expect(parsed.badRows).toEqual([
      {
        line: 3,
        message:
          'FX:EURUSD is not a positive FX rate: "0"; VOL:ACME is not a volume (≥ 0): "-5"; ACME is not a positive price: "0"',
      },
      { line: 4, message: 'FX:EURUSD is not a positive FX rate: "-1.1"; ACME is not a number: "abc"' },
    ]);
    // A negative rate level is a level like any other (percent, changes in points).
    expect(parsed.series.get('RATE:JP10Y')!.values).toEqual([-0.05, 0, 0.1]);
    expect(parsed.series.get('VOL:ACME')!.values).toEqual([100, 7]);
    expect(parsed.series.get('FX:EURUSD')!.values).toEqual([1.09]);
  });

  test('malformed FX symbols and an ambiguous Volume column stop the import with a message', () => {
    const badPair = path.join(temp, 'bad-pair.csv');
    writeFileSync(badPair, 'date,FX:EUR\n2024-01-02,1.09\n');
    const res = pas(database.url, 'market', 'import', badPair);
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('Column "FX:EUR": FX:EUR is not an FX pair: write FX:EURUSD');
    expect(() => parseMarketCsv('date,A,B,Volume\n2024-01-02,1,2,3')).toThrow(
      'The Volume column holds the volumes of one price column, and the file has 2: name its symbol with --map Volume=VOL:<symbol>.',
    );
    // Mapped by hand, a Volume column is any other column.
    const mapped = parseMarketCsv('date,A,B,Volume\n2024-01-02,1,2,3', { map: { Volume: 'VOL:B' } });
    expect([...mapped.series.keys()]).toEqual(['A', 'B', 'VOL:B']);
  });

  test('the securities master fixture: §14 attributes typed, extra columns kept, re-import idempotent', async () => {
    const first = pas(database.url, 'market', 'securities', fixture('securities.csv'), '--json');
    expect(first.status).toBe(0);
    // ACME is in the master already (its prices were imported above): it is updated, not created.
    expect(JSON.parse(first.stdout)).toMatchObject({
      created: 2,
      updated: 1,
      bad_rows: [],
      extra_columns: [
        'gics_sector',
        'security_type_refined',
        'market_cap',
        'rating',
        'duration',
        'dividend_yield',
        'esg_score',
        'industry',
      ],
    });
    const row = async (symbol: string) =>
      (await db('securities_master').where({ symbol }).first()) as Record<string, unknown>;
    const acme = await row('ACME');
    expect(acme).toMatchObject({ currency: 'USD', instrument_type: 'EQUITY', country: 'US' });
    expect(acme.attributes).toEqual({
      gics_sector: 'Industrials',
      market_cap: 250e9,
      dividend_yield: 1.8,
      esg_score: 62.5,
      industry: 'Machinery',
    });
    expect((await row('INITECH31')).attributes).toEqual({
      gics_sector: 'Financials',
      security_type_refined: 'Corporate bond',
      rating: 'BBB-',
      duration: 5.2,
    });
    const again = pas(database.url, 'market', 'securities', fixture('securities.csv'), '--json');
    expect(JSON.parse(again.stdout)).toMatchObject({ created: 0, updated: 3, bad_rows: [] });
    expect(await row('ACME')).toEqual(acme);
  });

  test('malformed §14 attributes are bad rows naming the column', () => {
    const parsed = parseSecuritiesCsv(
      [
        'symbol,market_cap,rating,duration,dividend_yield,esg_score',
        'A,1e9,AA+,2,1.5,50',
        'B,-3,,,,',
        'C,,A plus,,,',
        'D,,,ten,,',
        'E,,,,-1,',
        'F,,,,,101',
      ].join('\n'),
    );
    expect(parsed.rows).toEqual([
      {
        symbol: 'A',
        fields: {},
        attributes: { market_cap: 1e9, rating: 'AA+', duration: 2, dividend_yield: 1.5, esg_score: 50 },
      },
    ]);
    expect(parsed.badRows).toEqual([
      { line: 3, message: 'market_cap "-3" is not a market capitalisation in USD (≥ 0).' },
      { line: 4, message: 'rating "A plus" is not a credit rating such as AA+, Baa2 or BBB-.' },
      { line: 5, message: 'duration "ten" is not a duration in years (≥ 0).' },
      { line: 6, message: 'dividend_yield "-1" is not a dividend yield in percent (≥ 0).' },
      { line: 7, message: 'esg_score "101" is not an ESG score from 0 to 100.' },
    ]);
  });

  test('loadMarket hands calc/ the attributes and volumes: an option reads its underlying', async () => {
    const { accountId } = await createTestAccount(db);
    const market = await loadMarket(db, accountId, ['ACME', 'GLOBEX', 'ACME 20240621 C55'], '20240110');
    // Volumes are not risk drivers: they stay out of the series map.
    expect([...market.keys()]).toEqual(['ACME']);
    expect(market.attributes('GLOBEX')).toMatchObject({ currency: 'EUR', country: 'DE', market_cap: 8.5e9 });
    expect(market.attributes('NOPE')).toBeUndefined();
    // Cut at the date: the 20240111 volume is not seen.
    expect(Array.from(market.volume('ACME')!.values)).toEqual([
      1250000, 1410000, 980000, 1120000, 1305000, 0, 1510000,
    ]);
    const facts = positionFacts(
      [
        { id: 'a', symbol: 'ACME', quantity: 1000, exposure: 51_000 },
        { id: 'o', symbol: 'ACME 20240621 C55', quantity: 2, exposure: 600 },
        { id: 'g', symbol: 'GLOBEX', quantity: 10, exposure: 1000 },
      ],
      market,
      'USD',
      dayNumber('20240110'),
    );
    const acmeMean = (1250000 + 1410000 + 980000 + 1120000 + 1305000 + 0 + 1510000) / 7;
    expect(facts.map((f) => [f.id, f.currency, f.adv20])).toEqual([
      ['a', 'USD', acmeMean],
      ['o', 'USD', acmeMean],
      ['g', 'EUR', (310000 + 295000 + 402000 + 388000 + 351000 + 344000) / 6],
    ]);
    expect(facts[1]!.attributes).toMatchObject({ sector: 'Industrials', market_cap: 250e9 });
  });
});
