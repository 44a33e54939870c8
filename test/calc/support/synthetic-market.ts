import { formatDay, type PriceSeries } from '../../../calc/market-data';
import { normalAt, seedFromNumber } from '../../../calc/random';

export interface SyntheticStock {
  symbol: string;
  beta: number[];
  /** Daily residual volatility. */
  residualVol: number;
  /** First business-day index with a price (default 0). */
  listedFrom?: number;
  /** Business-day indices whose price is missing. */
  gaps?: readonly number[];
}

export interface SyntheticOptions {
  /** Number of business days. */
  days: number;
  /** Factor symbols and daily volatilities; factors are correlated by `correlation`. */
  factors: { symbol: string; vol: number }[];
  correlation: number;
  stocks: SyntheticStock[];
  seed?: number;
  /** Business-day ranges [from, to) where factor volatility is multiplied by `multiplier`. */
  turbulence?: { from: number; to: number; multiplier: number }[];
}

/** Mon–Fri days from 2000-01-03 (a Monday), as day numbers. */
export function businessDays(count: number): Int32Array {
  const out = new Int32Array(count);
  let day = 10959; // 2000-01-03
  for (let i = 0; i < count; i++) {
    out[i] = day;
    day += (day + 4) % 7 === 5 ? 3 : 1; // (day + 4) % 7: 0 = Sunday (1970-01-01 was a Thursday), 5 = Friday
  }
  return out;
}

/**
 * Prices from a Gaussian factor model with known parameters: f_t = L·z (equicorrelated factors),
 * stock returns β·f + σ_e·ε. Deterministic (normals from calc/random with a fixed seed).
 */
export function syntheticMarket(options: SyntheticOptions): {
  source: Map<string, PriceSeries>;
  days: Int32Array;
  lastDate: string;
} {
  const seed = seedFromNumber(options.seed ?? 7);
  const k = options.factors.length;
  const days = businessDays(options.days);
  const rho = options.correlation;
  // Equicorrelation: f_j = σ_j (√ρ·c + √(1−ρ)·z_j) with a common c.
  const factorReturns = options.factors.map(() => new Float64Array(options.days));
  for (let t = 0; t < options.days; t++) {
    const common = normalAt(seed, t, 0);
    const scale = options.turbulence?.find((s) => t >= s.from && t < s.to)?.multiplier ?? 1;
    options.factors.forEach(({ vol }, j) => {
      factorReturns[j]![t] =
        scale * vol * (Math.sqrt(rho) * common + Math.sqrt(1 - rho) * normalAt(seed, t, 1 + j));
    });
  }
  const source = new Map<string, PriceSeries>();
  const toSeries = (returns: (t: number) => number, listedFrom = 0, gaps: readonly number[] = []) => {
    const values = new Float64Array(options.days);
    let level = 100;
    for (let t = 0; t < options.days; t++) {
      level *= Math.exp(returns(t));
      values[t] = t < listedFrom || gaps.includes(t) ? NaN : level;
    }
    return { dates: days, values };
  };
  options.factors.forEach(({ symbol }, j) =>
    source.set(
      symbol,
      toSeries((t) => factorReturns[j]![t]!),
    ),
  );
  options.stocks.forEach((stock, s) => {
    source.set(
      stock.symbol,
      toSeries(
        (t) => {
          let x = stock.residualVol * normalAt(seed, t, 100 + s);
          for (let j = 0; j < k; j++) x += (stock.beta[j] ?? 0) * factorReturns[j]![t]!;
          return x;
        },
        stock.listedFrom,
        stock.gaps,
      ),
    );
  });
  return { source, days, lastDate: formatDay(days[days.length - 1]!) };
}
