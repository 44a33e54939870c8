/**
 * Symbology (§9) and the per-position facts the model hands the reporting step (calc/position-facts.ts):
 * one per reported position, in the order of `results`, with exposures the simulation used.
 */
import {
  averageDailyVolume,
  defaultMultiplier,
  fxRateAt,
  instrumentTypeOf,
  parseOptionSymbol,
  type ReferenceSource,
} from '../../calc/instruments';
import type { PriceSeries } from '../../calc/market-data';
import type { AttributeValue } from '../../calc/position-facts';
import { prepareRiskAttribution, runRiskAttribution } from '../../calc/risk-attribution';
import { prepareStressTest, runStressTest } from '../../calc/stress-test';
import { fixtureMarket } from './support/fixture-market';

const { source, date, securities, days } = fixtureMarket();
const projection = ['IND:SPX', 'IND:F2'];

describe('symbology', () => {
  test('an option symbol: underlying, expiry, right and strike', () => {
    expect(parseOptionSymbol('AAPL 20230120 C150')).toEqual({
      underlying: 'AAPL',
      expiry: '20230120',
      right: 'C',
      strike: 150,
    });
    expect(parseOptionSymbol('BRK.B 20240315 P412.5')).toMatchObject({ right: 'P', strike: 412.5 });
    for (const bad of [
      'AAPL',
      'AAPL 2023012 C150',
      'AAPL 20230120 X150',
      'AAPL 20230120 C0',
      'AAPL  20230120 C1',
    ]) {
      expect(parseOptionSymbol(bad)).toBeNull();
    }
  });

  test.each([
    ['AAPL', 'EQUITY'],
    ['IND:SPX', 'INDEX'],
    ['CUSTOM:MINE', 'CUSTOM'],
    ['PRIVATE:X', 'PRIVATE'],
    ['FX:EURUSD', 'FX'],
    ['RATE:US10Y', 'RATE'],
    ['SPREAD:IGOAS', 'SPREAD'],
    ['CASH:JPY', 'CASH'],
    ['AAPL 20230120 C150', 'EQUITY_OPTION'],
  ])('%s is %s by its form', (symbol, type) => {
    expect(instrumentTypeOf(symbol)).toBe(type);
  });

  test('the master’s instrument_type wins over the form (any case); an unknown one does not', () => {
    expect(instrumentTypeOf('SPY', { instrument_type: 'etf' })).toBe('ETF');
    expect(instrumentTypeOf('SPY', { instrument_type: 'Exchange traded' })).toBe('EQUITY');
    expect(defaultMultiplier('EQUITY_OPTION')).toBe(100);
    expect(defaultMultiplier('EQUITY')).toBe(1);
  });

  test('adv20: the mean of the last 20 volumes on or before the day, nothing after', () => {
    const volumeDays = Int32Array.from({ length: 30 }, (_, i) => 100 + i);
    const values = Float64Array.from({ length: 30 }, (_, i) => (i === 25 ? NaN : 1000 * (i + 1)));
    // On day 127 (index 27): the last 20 usable are indices 27..7 without 25, i.e. 27..6 less 25.
    const used = Array.from({ length: 28 }, (_, i) => i)
      .filter((i) => i !== 25)
      .slice(-20);
    const expected = used.reduce((s, i) => s + 1000 * (i + 1), 0) / 20;
    expect(averageDailyVolume({ days: volumeDays, values }, 127)).toBe(expected);
    expect(averageDailyVolume({ days: volumeDays, values }, 99)).toBeNull();
    expect(averageDailyVolume({ days: volumeDays, values }, 102)).toBe((1000 + 2000 + 3000) / 3);
  });
});

/** The fixture market plus a securities master and volumes for AAA. */
function referenceSource(extra: Record<string, Record<string, AttributeValue>> = {}): ReferenceSource {
  const master: Record<string, Record<string, AttributeValue>> = {
    AAA: { sector: 'Technology', country: 'US', market_cap: 2.5e12, currency: 'USD' },
    BBB: { instrument_type: 'ETF', sector: 'Financials' },
    ...extra,
  };
  const volume: PriceSeries = { dates: days, values: Float64Array.from(days, (_, i) => 1000 + i) };
  return {
    get: (symbol) => source.get(symbol),
    attributes: (symbol) => master[symbol],
    volume: (symbol) => (symbol === 'AAA' ? volume : undefined),
  };
}

describe('position facts', () => {
  const market = referenceSource();
  const priceOf = (symbol: string) => source.get(symbol)!.values[1449]!;

  test('one per reported position, in order, with the exposure, attributes, currency and adv20', () => {
    const request = { securities, date, projection, magnitude: -0.1 };
    const prepared = prepareStressTest(request, market, { paths: 2000 });
    const result = runStressTest(request, market, { paths: 2000 });
    expect(prepared.facts.map((f) => f.id)).toEqual(result.results.map((r) => r.id));
    expect(prepared.facts.map((f) => f.id)).toEqual(['a-long', 'b', 'a-short', 'c-short', 'spx', 'd']);
    const byId = new Map(prepared.facts.map((f) => [f.id, f]));
    expect(byId.get('a-long')).toEqual({
      id: 'a-long',
      symbol: 'AAA',
      quantity: 100,
      label: '',
      instrumentType: 'EQUITY',
      optionRight: null,
      currency: 'USD',
      baseCurrency: 'USD',
      exposure: 100 * priceOf('AAA'),
      deltaExposure: 100 * priceOf('AAA'),
      attributes: { sector: 'Technology', country: 'US', market_cap: 2.5e12, currency: 'USD' },
      // Volumes 1000 + i on day i; the date is day 1449, so the last 20 are 1430…1449.
      adv20: 1000 + 1439.5,
    });
    expect(byId.get('b')).toMatchObject({ instrumentType: 'ETF', exposure: 50 * 80, adv20: null });
    expect(byId.get('c-short')!.exposure).toBe(-40 * priceOf('CCC') * 2);
    expect(byId.get('d')!.exposure).toBe(60 * priceOf('DDD') * 1.1);
    expect(byId.get('spx')).toMatchObject({ instrumentType: 'INDEX', attributes: {} });
    // The exposures are the ones the simulation used.
    expect(prepared.facts.reduce((s, f) => s + f.exposure, 0)).toBeCloseTo(
      Array.from(prepared.scenario.exposure).reduce((s, v) => s + v, 0),
      6,
    );
  });

  test('risk attribution hands the same facts, with labels and the base currency', () => {
    const labelled = securities.map((s, i) => ({ ...s, label: `book ${i % 2}`, currency: 'eur' }));
    const prepared = prepareRiskAttribution(
      { securities: labelled, date, projection, base_currency: 'EUR' },
      market,
    );
    expect(prepared.facts.map((f) => [f.id, f.label, f.currency, f.baseCurrency])).toEqual([
      ['a-long', 'book 0', 'EUR', 'EUR'],
      ['b', 'book 1', 'EUR', 'EUR'],
      ['a-short', 'book 0', 'EUR', 'EUR'],
      ['c-short', 'book 1', 'EUR', 'EUR'],
      ['spx', 'book 0', 'EUR', 'EUR'],
      ['d', 'book 1', 'EUR', 'EUR'],
    ]);
  });

  test('a base-currency change leaves a domestic book’s numbers unchanged', () => {
    const eur = securities.map((s) => ({ ...s, currency: 'EUR' }));
    for (const risk_measure of ['vol', 'cvar'] as const) {
      const usd = runRiskAttribution({ securities, date, projection, risk_measure }, market, {
        paths: 4000,
        seed: 7,
      });
      const inEur = runRiskAttribution(
        { securities: eur, date, projection, risk_measure, base_currency: 'EUR' },
        market,
        { paths: 4000, seed: 7 },
      );
      expect(inEur).toEqual(usd);
    }
    const stress = (extra: object, list = securities) =>
      runStressTest({ securities: list, date, projection, magnitude: -0.1, ...extra }, market, {
        paths: 4000,
        seed: 7,
      });
    expect(stress({ base_currency: 'EUR' }, eur)).toEqual(stress({}));
  });
});

describe('what the model gives no repricing for is refused, never priced as a stock', () => {
  const market = referenceSource();
  const run =
    (extra: object, list = securities) =>
    () =>
      runStressTest({ securities: list, date, projection, magnitude: -0.1, ...extra }, market, {
        paths: 100,
      });
  test.each([
    ['a rate', { id: 'r', symbol: 'RATE:US10Y', quantity: 1 }, 'securities[8].symbol'],
    ['a spread', { id: 's', symbol: 'SPREAD:IGOAS', quantity: 1 }, 'securities[8].symbol'],
    ['an option not spelt as one', { id: 'o', symbol: 'OPTX', quantity: 1 }, 'securities[8].symbol'],
  ])('%s', (_, extra, parameter) => {
    const master = referenceSource({ OPTX: { instrument_type: 'EQUITY_OPTION' } });
    expect(() =>
      runStressTest({ securities: [...securities, extra], date, projection, magnitude: -0.1 }, master, {
        paths: 100,
      }),
    ).toThrow(expect.objectContaining({ parameter }));
  });
  test('a foreign position with no FX route is unmapped, not an error', () => {
    const result = run({}, [...securities, { id: 'f', symbol: 'AAA', quantity: 1, currency: 'JPY' }])();
    expect(result.unmapped_tickers).toContain('AAA');
    expect(result.results.map((r) => r.id)).not.toContain('f');
  });
  test('a bad base currency', () => {
    expect(run({ base_currency: 'EURO' })).toThrow(expect.objectContaining({ parameter: 'base_currency' }));
  });
});

describe('FX rates to the base currency (§9)', () => {
  const day = (i: number) => 20_000 + i;
  const series = (...values: number[]): PriceSeries => ({
    dates: Int32Array.from(values, (_, i) => day(i)),
    values: Float64Array.from(values),
  });
  const fx = new Map<string, PriceSeries>([
    ['FX:EURUSD', series(1.1, 1.2, 1.25)],
    ['FX:USDJPY', series(150, 148, 140)],
    ['FX:GBPEUR', series(1.15, NaN, 1.17)],
  ]);
  test.each([
    ['EUR', 'USD', 1, 1.2],
    ['USD', 'EUR', 1, 1 / 1.2],
    ['USD', 'JPY', 2, 140],
    ['JPY', 'USD', 2, 1 / 140],
    ['EUR', 'JPY', 1, 1.2 * 148],
    ['JPY', 'EUR', 2, (1 / 140) * (1 / 1.25)],
    ['GBP', 'EUR', 1, 1.15], // the last price on or before the day
    ['EUR', 'EUR', 0, 1],
  ])('%s → %s on day %i', (from, to, i, expected) => {
    expect(fxRateAt(fx, from, to, day(i))).toBe(expected);
  });
  test('no direct, inverse or USD route, or nothing up to the day: null', () => {
    expect(fxRateAt(fx, 'GBP', 'JPY', day(2))).toBeNull(); // GBP has no USD leg
    expect(fxRateAt(fx, 'CHF', 'USD', day(2))).toBeNull();
    expect(fxRateAt(fx, 'EUR', 'USD', day(-1))).toBeNull();
  });
});
