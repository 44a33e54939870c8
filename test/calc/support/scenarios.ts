/** Synthetic simulation scenarios shared by the backend tests (deterministic, no market data). */
import type { Scenario } from '../../../calc/simulation';

/** A deterministic scenario: k projections, two regimes with non-zero means, optional pinned driver. */
export function scenario(k: number, drivers: number, pinned: boolean): Scenario {
  const root = (scale: number) =>
    new Float64Array(k * k).map((_, i) => {
      const [r, c] = [Math.floor(i / k), i % k];
      return c > r ? 0 : scale * (r === c ? 0.02 : 0.004 * Math.cos(i));
    });
  const mean = (shift: number) => new Float64Array(k).map((_, i) => shift * (1 + 0.1 * i));
  return {
    k,
    regimes: [
      { probability: 0.15, mean: mean(-0.01), root: root(2.5) },
      { probability: 0.85, mean: mean(0.002), root: root(1) },
    ],
    beta: new Float64Array(drivers * k).map((_, i) => 0.3 + 0.9 * Math.abs(Math.sin(i))),
    residualSd: new Float64Array(drivers).map((_, d) => 0.01 + 0.002 * (d % 7)),
    exposure: new Float64Array(drivers).map((_, d) => (d % 9 === 0 ? -1 : 1) * (500 + 37 * d)),
    pinned: pinned ? { driver: 3, logReturn: -0.08 } : null,
  };
}

/**
 * A book with every instrument (§9–§11, §13): linear lines on each driver, foreign lines (the last
 * two drivers are FX drivers), cash in a foreign and in the base currency, calls and puts (one
 * foreign, one expiring inside the horizon), and residual means (drift, forecasts).
 */
export function bookScenario(k: number, drivers: number, pinned: boolean, options = true): Scenario {
  const base = scenario(k, drivers, pinned);
  const [fxA, fxB] = [drivers - 1, drivers - 2];
  const primary: number[] = [];
  const fx: number[] = [];
  const exposure: number[] = [];
  const option: number[] = [];
  const add = (a: number, b: number, v: number, terms = [0, 0, 0, 0, 0, 0]) => {
    primary.push(a);
    fx.push(b);
    exposure.push(v);
    option.push(...terms);
  };
  for (let d = 0; d < drivers - 2; d++)
    add(d, d % 3 === 0 ? fxA : -1, (d % 4 === 0 ? -1 : 1) * (300 + 11 * d));
  add(-1, fxA, 5000);
  add(-1, fxB, -2000);
  add(-1, -1, 1000);
  if (options) {
    add(0, -1, 40, [1, 100, 105, 0.3, 0.25, 4.1]);
    add(1, fxB, -25, [2, 50, 48, 0.5, 0.4, 5.2]);
    add(2, -1, 60, [2, 80, 80, 0, 0.3, 3.5]);
    add(3, fxA, 10, [1, 20, 30, 1.2, 0.5, 1.1]);
  }
  return {
    ...base,
    residualMean: new Float64Array(drivers).map((_, d) => (d % 5 === 0 ? 0.004 * Math.sin(d) : 0)),
    lines: {
      primary: Int32Array.from(primary),
      fx: Int32Array.from(fx),
      exposure: Float64Array.from(exposure),
      option: options ? Float64Array.from(option) : null,
    },
  };
}

/** One factor, one driver with β = 1 and no residual: L = expm1(s·z) per path, so z = log1p(L)/s. */
export function normalsScenario(scale: number): Scenario {
  return {
    k: 1,
    regimes: [{ probability: 1, mean: new Float64Array(1), root: Float64Array.from([scale]) }],
    beta: Float64Array.from([1]),
    residualSd: Float64Array.from([0]),
    exposure: Float64Array.from([1]),
    pinned: null,
  };
}

/**
 * Largest |a − b| over the entries `take` keeps (all by default), relative to the largest |b| of
 * all (components can cancel to ~0).
 */
export function worstRelative(
  actual: Float64Array,
  expected: Float64Array,
  take: (i: number) => boolean = () => true,
): number {
  let scale = 0;
  for (const v of expected) scale = Math.max(scale, Math.abs(v));
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    if (take(i)) worst = Math.max(worst, Math.abs(actual[i]! - expected[i]!));
  }
  return worst / scale;
}
