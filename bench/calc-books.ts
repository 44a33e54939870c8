/**
 * The synthetic books of the calculation benchmarks (bench/calc.bench.ts, bench/gpu.bench.ts): a
 * synthetic market and a long/short book of M (250 × 1), MX (M with options and EUR positions) or
 * L (3000 × 15) at 100,000 paths, and the stress test and cvar risk attribution prepared on it. Only
 * calc/ and the synthetic market helper: the GPU check's bundle carries this file.
 */
import { performance } from 'node:perf_hooks';
import type { CalcSecurity } from '../calc/calculation-request';
import { formatDay } from '../calc/market-data';
import { prepareRiskAttribution } from '../calc/risk-attribution';
import type { Scenario, SimulationOptions, SimulationResult } from '../calc/simulation';
import { prepareStressTest } from '../calc/stress-test';
import { syntheticMarket } from '../test/calc/support/synthetic-market';

export const PATHS = 100_000;

export interface Size {
  readonly label: string;
  readonly securities: number;
  readonly projections: number;
  /** 20 % options and 30 % foreign (EUR) positions. */
  readonly mixed?: boolean;
}
export const SIZES: Size[] = [
  { label: 'M', securities: 250, projections: 1 },
  { label: 'MX', securities: 250, projections: 1, mixed: true },
  { label: 'L', securities: 3000, projections: 15 },
];

export interface Prepared {
  readonly name: string;
  readonly scenario: Scenario;
  readonly simulation: SimulationOptions;
  readonly finish: (result: SimulationResult) => unknown;
}

/** A synthetic market and a long/short book of `securities` stocks on `projections` factors. */
export function syntheticBook(size: Size) {
  const factors = Array.from({ length: size.projections }, (_, j) => ({
    symbol: `IND:F${j}`,
    vol: 0.008 + 0.0005 * j,
  }));
  const stocks = Array.from({ length: size.securities }, (_, i) => ({
    symbol: `S${i}`,
    beta: factors.map((_, j) => (j === 0 ? 0.6 + ((i * 7) % 11) / 10 : (((i + j) * 13) % 9) / 20 - 0.2)),
    residualVol: 0.01 + ((i * 3) % 7) / 1000,
  }));
  const market = syntheticMarket({
    days: 700,
    factors,
    correlation: 0.3,
    stocks: [
      ...stocks,
      { symbol: 'FX:EURUSD', beta: factors.map((_, j) => (j === 0 ? 0.1 : 0)), residualVol: 0.005 },
    ],
    turbulence: [{ from: 300, to: 360, multiplier: 2.5 }],
  });
  const expiry = formatDay(market.days[market.days.length - 1]! + 90);
  const securities: CalcSecurity[] = stocks.map((s, i) => {
    const quantity = (i % 10 === 0 ? -1 : 1) * (10 + (i % 50));
    if (!size.mixed) return { id: `p${i}`, symbol: s.symbol, quantity };
    const values = market.source.get(s.symbol)!.values;
    const strike = Math.round(values[values.length - 1]!);
    // Every 5th position an option (calls and puts, 20 %); 3 in 10 positions in EUR (30 %).
    if (i % 5 === 2)
      return { id: `p${i}`, symbol: `${s.symbol} ${expiry} ${i % 2 ? 'C' : 'P'}${strike}`, quantity };
    return {
      id: `p${i}`,
      symbol: s.symbol,
      quantity,
      ...([0, 1, 3].includes(i % 10) ? { currency: 'EUR' } : {}),
    };
  });
  const projection = factors.map((f) => f.symbol);
  return { market, securities, projection };
}

/** The stress test and cvar risk attribution of the synthetic book, estimated once. */
export function prepare(size: Size): { calcs: Prepared[]; seconds: number } {
  const { market, securities, projection } = syntheticBook(size);
  const started = performance.now();
  const stress = prepareStressTest(
    { securities, date: market.lastDate, projection, shock: 'IND:F0', magnitude: -0.1, horizon: 20 },
    market.source,
    { paths: PATHS },
  );
  const risk = prepareRiskAttribution(
    { securities, date: market.lastDate, projection, risk_measure: 'cvar', confidence: '95%' },
    market.source,
    { paths: PATHS },
  );
  if (risk.kind !== 'simulation') throw new Error('cvar risk attribution must simulate');
  const seconds = (performance.now() - started) / 1000;
  return {
    calcs: [
      { name: 'stress_test', ...stress },
      { name: 'risk_attribution cvar', ...risk },
    ],
    seconds,
  };
}
