import path from 'node:path';
import { importMarketCsv } from '../../engine/market-data/csv-import';
import { createTestAccount, type TestAccount } from '../support/test-app';
import { useTestApp } from '../support/use-test-app';

const MARKET = path.resolve(__dirname, '..', '..', '..', 'shared', 'data', 'market');

/**
 * POST /v2/market_data/symbols_*: what the PyPI clients' MarketData helpers post, answered from the
 * stored securities master and prices; symbols_check agrees with a calculation's unmapped_tickers.
 */
describe('market data', () => {
  const h = useTestApp({
    setUp: async ({ db }) => {
      await importMarketCsv(db, path.join(MARKET, 'sp500_index_1990_2022.csv'));
      await importMarketCsv(db, path.join(MARKET, 'us_stocks_daily.csv'), {
        columns: ['AAPL', 'JPM', 'META'],
      });
    },
  });
  let other: TestAccount;
  const custom = 'CUSTOM:MDTEST';

  beforeAll(async () => {
    other = await createTestAccount(h.db);
    // Three points: known and priced, never 60 returns, so a calculation leaves it unmapped.
    const res = await h.call('POST', '/v2/custom_indexes', {
      symbol: custom,
      name: 'Short index',
      data: [
        ['20221223', 1],
        ['20221227', 1.01],
        ['20221228', 1.02],
      ],
    });
    expect(res.statusCode).toBe(200);
  });

  const post = (method: string, body: object, who?: TestAccount) =>
    h.call('POST', `/v2/market_data/${method}`, body, who);

  test('symbols_search: by symbol start, priced ones first, limited', async () => {
    const res = await post('symbols_search', { query: 'AAP', user_id: 1, time_zone: 'UTC' });
    expect(res.statusCode).toBe(200);
    const found = res.json().symbols_search;
    expect(found[0]).toMatchObject({ symbol: 'AAPL', priced: true });
    const all = await post('symbols_search', { query: 'a', limit: 1 });
    expect(all.json().symbols_search).toHaveLength(1);
  });

  test('symbols_check agrees with a calculation’s unmapped_tickers at the same date', async () => {
    const securities = [
      { id: 'a', symbol: 'AAPL', quantity: 10 },
      { id: 'b', symbol: 'NOPE', quantity: 1 },
      { id: 'c', symbol: 'AAPL 20230317 C130', quantity: 1, market_price: 5 },
      { id: 'd', symbol: custom, quantity: 1 },
      { id: 'e', symbol: 'META', quantity: 1 },
    ];
    for (const date of ['20221228', '20120601']) {
      const check = await post('symbols_check', { securities, date });
      expect(check.statusCode).toBe(200);
      const calc = await h.call('POST', '/v2/calculations/exposure', { securities, date });
      expect(calc.statusCode).toBe(200);
      const body = check.json().symbols_check;
      expect([...body.unmapped_tickers].sort()).toEqual([...calc.json().exposure.unmapped_tickers].sort());
      const bySymbol = Object.fromEntries(
        body.results.map((r: { symbol: string }) => [r.symbol, r]),
      ) as Record<string, Record<string, unknown>>;
      expect(bySymbol.AAPL).toMatchObject({ known: true, priced: true, mapped: true, reason: null });
      expect(bySymbol.NOPE).toMatchObject({ known: false, priced: false, mapped: false });
      expect(bySymbol.NOPE!.reason).toMatch(/unknown symbol/);
      expect(bySymbol['AAPL 20230317 C130']).toMatchObject({ known: true, mapped: true });
      expect(bySymbol[custom]).toMatchObject({ known: true, mapped: false });
      if (date === '20221228') {
        expect(bySymbol.AAPL!.price).toBeCloseTo(124.7283706665039, 9);
        expect(bySymbol[custom]).toMatchObject({ priced: true, price: 1.02 });
      } else {
        // META listed in 2012-05-18: priced on 2012-06-01, not 60 returns yet.
        expect(bySymbol.META).toMatchObject({ known: true, priced: true, mapped: false });
        expect(bySymbol.META!.reason).toMatch(/not enough history/);
        expect(bySymbol[custom]).toMatchObject({ priced: false });
      }
    }
  });

  test('symbols_check with plain symbols; another account’s CUSTOM: symbol is unknown to it', async () => {
    const mine = await post('symbols_check', { symbols: [custom], date: '20221228' });
    expect(mine.json().symbols_check.results[0]).toMatchObject({ symbol: custom, known: true });
    const theirs = await post('symbols_check', { symbols: [custom], date: '20221228' }, other);
    expect(theirs.statusCode).toBe(200);
    expect(theirs.json().symbols_check.results[0]).toMatchObject({
      known: false,
      priced: false,
      mapped: false,
    });
  });

  test('symbols_price: the last price on or before the date; null when none', async () => {
    const res = await post('symbols_price', { symbols: ['AAPL', 'NOPE', custom], date: '20221225' });
    expect(res.statusCode).toBe(200);
    const prices = res.json().symbols_price;
    expect(prices.AAPL.date).toBe('20221223');
    expect(prices.AAPL.price).toBeCloseTo(130.48780822753906, 9);
    expect(prices.NOPE).toBeNull();
    expect(prices[custom]).toEqual({ date: '20221223', price: 1 });
    const theirs = await post('symbols_price', { symbols: [custom] }, other);
    expect(theirs.json().symbols_price[custom]).toBeNull();
  });

  test('symbols_historical: the stored pairs in the period; symbols_real_time_prices: the latest', async () => {
    const res = await post('symbols_historical', {
      symbols: ['AAPL', 'NOPE'],
      start_date: '20221223',
      end_date: '20221228',
    });
    expect(res.statusCode).toBe(200);
    const history = res.json().symbols_historical;
    expect(history.AAPL.map((p: [string, number]) => p[0])).toEqual(['20221223', '20221227', '20221228']);
    expect(history.NOPE).toEqual([]);
    const latest = await post('symbols_real_time_prices', { symbols: ['AAPL'] });
    expect(latest.statusCode).toBe(200);
    expect(latest.json().symbols_real_time_prices.AAPL.date).toBe('20241129');
  });

  test.each([
    ['symbols_search', {}],
    ['symbols_search', { query: 'A', limit: 0 }],
    ['symbols_check', {}],
    ['symbols_check', { symbols: ['AAPL'], date: '20221301' }],
    ['symbols_check', { symbols: [] }],
    ['symbols_price', { symbols: Array.from({ length: 101 }, (_, i) => `S${i}`) }],
    ['symbols_price', { symbols: ['tab\there'] }],
    ['symbols_price', { symbols: ['   '] }],
    ['symbols_price', { symbols: ['\u3000\u00a0'] }],
    ['symbols_price', { symbols: ['AAPL\u007f'] }],
    ['symbols_check', { symbols: [' '] }],
    ['symbols_historical', { symbols: ['AAPL'], start_date: '20221228', end_date: '20221201' }],
    ['symbols_historical', { symbols: 'AAPL' }],
  ])('%s with bad input %j → 400 {code, message}', async (method, body) => {
    const res = await post(method, body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ code: 400, message: expect.any(String) });
  });

  test('without credentials → 401', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/v2/market_data/symbols_price',
      payload: { symbols: ['AAPL'] },
    });
    expect(res.statusCode).toBe(401);
  });
});
