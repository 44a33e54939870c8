import { formatDay } from '../../../calc/market-data';
import type { CalcSecurity } from '../../../calc/calculation-request';
import { syntheticMarket } from './synthetic-market';

/**
 * A small synthetic market for the end-to-end tests: two projections, six stocks (one with gaps, one
 * listed too late to map), turbulent stretches for the distress regime, and 150 business days after
 * the calculation date so look-ahead can be tested.
 */
export function fixtureMarket() {
  const market = syntheticMarket({
    days: 1600,
    factors: [
      { symbol: 'IND:SPX', vol: 0.011 },
      { symbol: 'IND:F2', vol: 0.008 },
    ],
    correlation: 0.4,
    stocks: [
      { symbol: 'AAA', beta: [1.2, 0.3], residualVol: 0.012 },
      {
        symbol: 'BBB',
        beta: [0.8, -0.4],
        residualVol: 0.015,
        gaps: [1300, 1301, 1302, 1303, 1304, 1305, 1306, 1400],
      },
      { symbol: 'CCC', beta: [0.5, 1.1], residualVol: 0.009 },
      { symbol: 'DDD', beta: [1.5, 0], residualVol: 0.02 },
      { symbol: 'EEE', beta: [0.3, 0.2], residualVol: 0.01 },
      { symbol: 'LATE', beta: [1, 0], residualVol: 0.01, listedFrom: 1400 },
    ],
    turbulence: [
      { from: 600, to: 660, multiplier: 2.5 },
      { from: 1250, to: 1290, multiplier: 3 },
    ],
  });
  const date = formatDay(market.days[1449]!);
  const securities: CalcSecurity[] = [
    { id: 'a-long', symbol: 'AAA', quantity: 100 },
    { id: 'b', symbol: 'BBB', quantity: 50, market_price: 80 },
    { id: 'a-short', symbol: 'AAA', quantity: -30 },
    { id: 'c-short', symbol: 'CCC', quantity: -40, multiplier: 2 },
    { id: 'spx', symbol: 'IND:SPX', quantity: 20 },
    { id: 'd', symbol: 'DDD', quantity: 60, fx_rate: 1.1 },
    { id: 'late', symbol: 'LATE', quantity: 10 },
    { id: 'nope', symbol: 'NOPE', quantity: 10, market_price: 5 },
  ];
  return { ...market, date, securities };
}
