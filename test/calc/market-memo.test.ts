import type { MarketMemo, PriceSeries, SeriesSource } from '../../calc/market-data';
import { runExposure } from '../../calc/exposure';
import { runParametricRiskAttribution } from '../../calc/parametric-risk';
import { runProperties } from '../../calc/properties';
import { runRiskAttribution } from '../../calc/risk-attribution';
import { runStressTest } from '../../calc/stress-test';
import { syntheticMarket } from './support/synthetic-market';

/**
 * `SeriesSource.memo` (the engine gives one per version of the stored series): the window of
 * returns and the factor model kept there are reused only under a key naming every other input, so
 * an answer with the memo, first or from memory, equals the answer without it, whatever the mix of
 * requests that filled it.
 */
describe('market memo', () => {
  const factors = [
    { symbol: 'IND:F0', vol: 0.01 },
    { symbol: 'IND:F1', vol: 0.008 },
  ];
  const stocks = Array.from({ length: 6 }, (_, i) => ({
    symbol: `S${i}`,
    beta: [0.5 + i / 5, i % 2 ? 0.3 : -0.2],
    residualVol: 0.01 + i / 1000,
  }));
  const market = syntheticMarket({
    days: 400,
    factors,
    correlation: 0.3,
    stocks: [...stocks, { symbol: 'FX:EURUSD', beta: [0.1, 0], residualVol: 0.005 }],
    turbulence: [{ from: 200, to: 230, multiplier: 2.5 }],
  });
  const securities = stocks.map((s, i) => ({
    id: `p${i}`,
    symbol: s.symbol,
    quantity: (i % 3 === 0 ? -1 : 1) * (10 + i),
    ...(i === 4 ? { currency: 'EUR' } : {}),
  }));
  const date = market.lastDate;

  function withMemo(): { source: SeriesSource; memo: Map<string, unknown> } {
    const memo = new Map<string, unknown>();
    const store: MarketMemo = { get: (k) => memo.get(k), set: (k, v) => void memo.set(k, v) };
    const series: ReadonlyMap<string, PriceSeries> = market.source;
    return { source: { get: (s) => series.get(s), memo: store }, memo };
  }

  const requests: Array<[string, (source: SeriesSource) => unknown]> = [
    ['vol', (m) => runRiskAttribution({ securities, date, projection: ['IND:F0', 'IND:F1'] }, m)],
    [
      'vol, another volatility half-life',
      (m) =>
        runRiskAttribution(
          { securities, date, projection: ['IND:F0', 'IND:F1'], volatility_half_life: 12 },
          m,
        ),
    ],
    [
      'vol, another correlation half-life',
      (m) =>
        runRiskAttribution(
          { securities, date, projection: ['IND:F0', 'IND:F1'], correlation_half_life: 24 },
          m,
        ),
    ],
    [
      'vol, weekly',
      (m) => runRiskAttribution({ securities, date, projection: ['IND:F0', 'IND:F1'], sampling: 5 }, m),
    ],
    [
      'vol, no distress regime',
      (m) =>
        runRiskAttribution({ securities, date, projection: ['IND:F0', 'IND:F1'] }, m, { distress: false }),
    ],
    [
      'parametric, decay',
      (m) =>
        runParametricRiskAttribution(
          { securities, date, projection: ['IND:F0', 'IND:F1'], exponential_decay: 0.97 },
          m,
        ),
    ],
    [
      'parametric, window',
      (m) =>
        runParametricRiskAttribution(
          { securities, date, projection: ['IND:F0', 'IND:F1'], historical_days: 120 },
          m,
        ),
    ],
    [
      'parametric',
      (m) => runParametricRiskAttribution({ securities, date, projection: ['IND:F0', 'IND:F1'] }, m),
    ],
    [
      'cvar',
      (m) =>
        runRiskAttribution({ securities, date, projection: ['IND:F1', 'IND:F0'], risk_measure: 'cvar' }, m, {
          paths: 2000,
        }),
    ],
    [
      'stress',
      (m) =>
        runStressTest(
          { securities, date, projection: ['IND:F0'], shock: 'S2', magnitude: -0.05, horizon: 5 },
          m,
          { paths: 2000 },
        ),
    ],
    ['exposure', (m) => runExposure({ securities, date, projection: ['IND:F1'] }, m)],
    ['properties', (m) => runProperties({ securities, date, projection: ['IND:F0'] }, m, { paths: 2000 })],
    [
      'earlier date',
      (m) => runRiskAttribution({ securities, date: '20000901', projection: ['IND:F0', 'IND:F1'] }, m),
    ],
  ];

  test('every answer with the memo (cold, then from memory, in any order) equals the answer without it', () => {
    const plain = requests.map(([, run]) => run(market.source));
    const { source, memo } = withMemo();
    expect(requests.map(([, run]) => run(source))).toEqual(plain);
    expect(memo.size).toBeGreaterThan(4);
    // From memory, in reverse order.
    const again = [...requests].reverse().map(([, run]) => run(source));
    expect(again.reverse()).toEqual(plain);
    // The answers differ between requests: a key that forgot an input would make two of them equal.
    for (let i = 0; i < plain.length; i++)
      for (let j = i + 1; j < plain.length; j++) expect(plain[i]).not.toEqual(plain[j]);
  });
});
