import { dayNumber, formatDay, type PriceSeries } from '../../calc/market-data';
import { runRiskAttribution } from '../../calc/risk-attribution';
import { runStressTest, type StressTestRequest } from '../../calc/stress-test';
import { CalcInputError } from '../../calc/input-error';
import { fixtureMarket } from './support/fixture-market';

const { source, date, securities } = fixtureMarket();
const projection = ['IND:SPX', 'IND:F2'];
const options = { paths: 4000 };

/** Every value dated after `cutoff` replaced (and new dates appended after the end); earlier ones kept. */
function rewriteAfter(market: Map<string, PriceSeries>, cutoff: string): Map<string, PriceSeries> {
  const day = dayNumber(cutoff);
  const out = new Map<string, PriceSeries>();
  for (const [symbol, series] of market) {
    const dates = Array.from(series.dates as Int32Array);
    const values = Array.from(series.values);
    dates.forEach((d, i) => {
      if (d > day) values[i] = i % 7 === 0 ? NaN : values[i]! * (0.3 + ((i * 7919) % 13) / 5);
    });
    const last = dates[dates.length - 1]!;
    dates.push(last + 3, last + 4);
    values.push(1e6, 0.001);
    out.set(symbol, { dates: Int32Array.from(dates), values: Float64Array.from(values) });
  }
  return out;
}

function calculations(market: Map<string, PriceSeries>) {
  const stress = (extra: Partial<StressTestRequest>) =>
    runStressTest({ securities, date, projection, magnitude: -0.08, ...extra }, market, options);
  return {
    stressProjection: stress({}),
    stressStockSearch: stress({ shock: 'BBB', horizon: null, sampling: 5 }),
    vol: runRiskAttribution({ securities, date, projection, risk_measure: 'vol' }, market, options),
    cvar: runRiskAttribution(
      { securities, date, projection, risk_measure: 'cvar', horizon: 20 },
      market,
      options,
    ),
    var: runRiskAttribution({ securities, date, projection, risk_measure: 'var' }, market, options),
  };
}

describe('no look-ahead', () => {
  const original = calculations(source);

  test('rewriting every price after the date changes nothing, bit for bit', () => {
    expect(calculations(rewriteAfter(source, date))).toStrictEqual(original);
  });

  test('rewriting the prices from the day before the date does change the results (the test can fail)', () => {
    const dayBefore = formatDay(dayNumber(date) - 1);
    const changed = calculations(rewriteAfter(source, dayBefore));
    expect(changed.stressProjection).not.toStrictEqual(original.stressProjection);
    expect(changed.vol).not.toStrictEqual(original.vol);
  });
});

describe('determinism', () => {
  const request: StressTestRequest = { securities, date, projection, magnitude: -0.08, shock: 'BBB' };

  test('the same request gives identical numbers; key order in the request does not matter', () => {
    const first = runStressTest(request, source, options);
    const reordered = Object.fromEntries(Object.entries(request).reverse()) as unknown as StressTestRequest;
    expect(runStressTest(reordered, source, options)).toStrictEqual(first);
    expect(runStressTest({ ...request, horizon: 5, confidence: '95%' }, source, options)).toStrictEqual(
      first,
    );
  });

  test('series dated by YYYYMMDD strings give the same numbers as day numbers', () => {
    const strings = new Map(
      [...source].map(([symbol, series]) => [
        symbol,
        { dates: Array.from(series.dates as Int32Array, (d) => formatDay(d)), values: series.values },
      ]),
    );
    expect(runStressTest(request, strings, options)).toStrictEqual(runStressTest(request, source, options));
  });

  test('a different seed or a different request draws different numbers', () => {
    const first = runStressTest(request, source, options);
    const seeded = runStressTest(request, source, { ...options, seed: 42 });
    expect(seeded.results[0]!.ev).not.toStrictEqual(first.results[0]!.ev);
    expect(runStressTest(request, source, { ...options, seed: 42 })).toStrictEqual(seeded);
    // Changing one quantity moves the seed: the shared security's numbers change too.
    const other = runStressTest(
      { ...request, securities: securities.map((s) => (s.id === 'd' ? { ...s, quantity: 61 } : s)) },
      source,
      options,
    );
    expect(other.results[0]!.ev[2]).not.toStrictEqual(first.results[0]!.ev[2]);
  });
});

describe('input errors', () => {
  test.each([
    [{ shock: 'NOPE' }, 'shock'],
    [{ shock: 'LATE' }, 'shock'],
    [{ projection: ['IND:SPX', 'NOPE'] }, 'projection'],
    [{ projection: [] }, 'projection'],
    [{ magnitude: -1 }, 'magnitude'],
    [{ horizon: 0 }, 'horizon'],
    [{ sampling: 2 }, 'sampling'],
    [{ confidence: '96%' }, 'confidence'],
    [{ nlv: 0 }, 'nlv'],
    [{ date: '1999-01-01' }, 'date'],
    [{ date: '19990101' }, 'date'],
  ])('%j → CalcInputError naming %s', (patch, parameter) => {
    const request = { securities, date, projection, magnitude: -0.1, ...patch } as StressTestRequest;
    let error: unknown;
    try {
      runStressTest(request, source, { paths: 10 });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(CalcInputError);
    expect((error as CalcInputError).parameter).toBe(parameter);
  });
});
