/**
 * The `wasm` backend (WebAssembly SIMD kernel, its own generator; methodology §5): the committed
 * module is the build of its source; the generator passes moments, tail frequencies at the §6
 * confidences, a Kolmogorov–Smirnov test and independence checks; results are the same bits for any
 * thread count; and every reported figure agrees with the reference within 3 Monte Carlo standard
 * errors, the standard error estimated from the reference's own independent batches, on synthetic
 * books with every instrument and on real-data scenarios.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { SimulationBackend } from '../../calc/backends/backend';
import { createBackend } from '../../calc/backends/choose';
import { normalCdf } from '../../calc/black-scholes';
import { QUANTILE_BINS, quantileTable, WasmKernel } from '../../calc/kernels/wasm-kernel';
import { dayNumber, formatDay } from '../../calc/market-data';
import type { CalcSecurity } from '../../calc/calculation-request';
import { inverseNormalCdf, seedFromNumber } from '../../calc/random';
import { prepareRiskAttribution } from '../../calc/risk-attribution';
import {
  lineBetas,
  type PathSetResult,
  type Scenario,
  type SimulationResult,
  simulate,
} from '../../calc/simulation';
import { prepareStressTest } from '../../calc/stress-test';
import { realMarket } from './support/market-csv';
import { normalsScenario } from './support/scenarios';

const ROOT = path.join(__dirname, '..', '..');

test('the committed kernel module is the build of calc/wasm/assembly/kernel.ts', () => {
  // Exits 1 (and execFileSync throws) when a rebuild differs from calc/wasm/kernel-module.ts. No install
  // step rewrites that file (it is only built by `npm run build:wasm`), so a stale module fails CI.
  const out = execFileSync(process.execPath, [path.join(ROOT, 'calc/wasm/build.mjs'), '--check'], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  expect(out).toBe('');
});

function drawNormals(paths: number, seed: number): Float64Array {
  const scale = 0.01;
  const { loss } = new WasmKernel(normalsScenario(scale), seedFromNumber(seed)).pass1(0, paths);
  return loss.map((l) => Math.log1p(l) / scale);
}

describe('generator (counter hash + f32 normal quantile)', () => {
  test('the quantile table: every one of the 2^23 q within 1.5e-5 of the reference Φ⁻¹, bins of one or two q exact', () => {
    // The kernel's arithmetic in f32 (Math.fround), on the table the host writes into its memory.
    const table = quantileTable();
    const word = new Float32Array(1);
    const bits = new Uint32Array(word.buffer);
    const hits = new Uint32Array(QUANTILE_BINS);
    const worst = new Float64Array(QUANTILE_BINS);
    // Global lookups are slow in jest's sandbox: bind what the loop calls.
    const { fround, abs } = Math;
    const quantile = inverseNormalCdf;
    let maxError = 0;
    for (let m = 0; m < 8388608; m++) {
      word[0] = m + 0.5;
      const bin = (bits[0]! >>> 17) - 8064;
      const z = fround(fround(table[2 * bin + 1]! * fround(bits[0]! & 0x1ffff)) + table[2 * bin]!);
      const error = abs(z - quantile((m + 0.5) * 5.9604644775390625e-8));
      hits[bin]!++;
      if (error > worst[bin]!) worst[bin] = error;
      if (error > maxError) maxError = error;
    }
    expect(maxError).toBeLessThan(1.5e-5);
    for (let bin = 0; bin < QUANTILE_BINS; bin++) {
      // One or two q in a bin: the line passes through them (f32 rounding of z ≤ 5.8 only).
      if (hits[bin]! > 0 && hits[bin]! <= 2) expect(worst[bin]).toBeLessThan(1e-6);
    }
    // Every q lands in a bin of the table's range.
    expect(hits.reduce((a, b) => a + b, 0)).toBe(2 ** 23);
  });

  const N = 1_000_000;
  const z = drawNormals(N, 7);

  test('moments of 10⁶ normals: mean 0, variance 1, skewness 0, kurtosis 3 (within 4 standard errors)', () => {
    let [m1, m2, m3, m4] = [0, 0, 0, 0];
    for (const v of z) {
      m1 += v;
      m2 += v * v;
      m3 += v * v * v;
      m4 += v * v * v * v;
    }
    [m1, m2, m3, m4] = [m1 / N, m2 / N, m3 / N, m4 / N];
    expect(Math.abs(m1)).toBeLessThan(4 * Math.sqrt(1 / N));
    expect(Math.abs(m2 - 1)).toBeLessThan(4 * Math.sqrt(2 / N));
    expect(Math.abs(m3)).toBeLessThan(4 * Math.sqrt(15 / N));
    expect(Math.abs(m4 - 3)).toBeLessThan(4 * Math.sqrt(96 / N));
  });

  test.each([
    ['1sigma', 0.158655],
    ['2sigma', 0.0227501],
    ['3sigma', 0.0013499],
    ['85%', 0.15],
    ['90%', 0.1],
    ['95%', 0.05],
    ['97%', 0.03],
    ['99%', 0.01],
  ])('tail frequency at %s (%f) on both sides within 4 binomial standard errors', (_, tail) => {
    // The quantile by bisection on the reference's Φ.
    let [lo, hi] = [-10, 0];
    for (let i = 0; i < 100; i++) {
      const mid = (lo + hi) / 2;
      if (normalCdf(mid) < tail) lo = mid;
      else hi = mid;
    }
    const q = (lo + hi) / 2;
    let below = 0;
    let above = 0;
    for (const v of z) {
      if (v < q) below++;
      if (v > -q) above++;
    }
    const se = Math.sqrt((tail * (1 - tail)) / N);
    expect(Math.abs(below / N - tail)).toBeLessThan(4 * se);
    expect(Math.abs(above / N - tail)).toBeLessThan(4 * se);
  });

  test('Kolmogorov–Smirnov against Φ: D below the 1% critical value 1.628/√N', () => {
    const sorted = Float64Array.from(z).sort();
    let d = 0;
    for (let i = 0; i < N; i++) {
      const f = normalCdf(sorted[i]!);
      d = Math.max(d, Math.abs(f - i / N), Math.abs((i + 1) / N - f));
    }
    expect(d).toBeLessThan(1.628 / Math.sqrt(N));
    // The test can fail: a 2% scale error is rejected.
    let wrong = 0;
    for (let i = 0; i < N; i += 1) {
      const f = normalCdf(sorted[i]! * 1.02);
      wrong = Math.max(wrong, Math.abs(f - i / N), Math.abs((i + 1) / N - f));
    }
    expect(wrong).toBeGreaterThan(1.628 / Math.sqrt(N));
  });

  test('dimensions, neighbouring paths and seeds are uncorrelated; a seed changes every number', () => {
    const n = 200_000;
    // Two factors with an identity root: driver 0 reads dimension 0, driver 1 dimension 1.
    const two = (exposure: number[]): Scenario => ({
      k: 2,
      regimes: [{ probability: 1, mean: new Float64Array(2), root: Float64Array.from([0.01, 0, 0, 0.01]) }],
      beta: Float64Array.from([1, 0, 0, 1]),
      residualSd: Float64Array.from([0, 0]),
      exposure: Float64Array.from(exposure),
      pinned: null,
    });
    const a = new WasmKernel(two([1, 0]), seedFromNumber(3)).pass1(0, n).loss;
    const b = new WasmKernel(two([0, 1]), seedFromNumber(3)).pass1(0, n).loss;
    const other = new WasmKernel(two([1, 0]), seedFromNumber(4)).pass1(0, n).loss;
    const corr = (x: ArrayLike<number>, y: ArrayLike<number>, shift = 0) => {
      let [sxy, sxx, syy] = [0, 0, 0];
      for (let i = 0; i + shift < x.length; i++) {
        sxy += x[i]! * y[i + shift]!;
        sxx += x[i]! * x[i]!;
        syy += y[i + shift]! * y[i + shift]!;
      }
      return sxy / Math.sqrt(sxx * syy);
    };
    const bound = 4 / Math.sqrt(n);
    expect(Math.abs(corr(a, b))).toBeLessThan(bound);
    expect(Math.abs(corr(a, a, 1))).toBeLessThan(bound);
    expect(Math.abs(corr(a, a, 4))).toBeLessThan(bound);
    expect(Math.abs(corr(a, other))).toBeLessThan(bound);
    let same = 0;
    for (let i = 0; i < n; i++) if (a[i] === other[i]) same++;
    expect(same).toBeLessThan(n / 1000);
  });

  test('the regime uniform picks a 10% regime 10% of the time (within 4 standard errors)', () => {
    const n = 400_000;
    const s: Scenario = {
      ...normalsScenario(0),
      regimes: [
        { probability: 0.1, mean: Float64Array.from([0.001]), root: Float64Array.from([0]) },
        { probability: 0.9, mean: Float64Array.from([0]), root: Float64Array.from([0]) },
      ],
    };
    const { loss } = new WasmKernel(s, seedFromNumber(5)).pass1(0, n);
    const share = loss.filter((l) => l > 0).length / n;
    expect(Math.abs(share - 0.1)).toBeLessThan(4 * Math.sqrt(0.09 / n));
  });
});

const SETS = ['ev', 'cvarNeg', 'cvarPos', 'var'] as const;

function expectBitwise(actual: SimulationResult, expected: SimulationResult): void {
  expect(actual.tailCount).toBe(expected.tailCount);
  for (const set of SETS) {
    expect(actual[set]?.portfolio).toBe(expected[set]?.portfolio);
    expect(Array.from(actual[set]?.means ?? [])).toEqual(Array.from(expected[set]?.means ?? []));
  }
}

/**
 * Σ over lines of exposure·(Σ_j B_lj·mean(G·f_j) + mean(residual term)): what the reported components
 * add up to, in money, for one set. Only the per-path f32 rounding of G·x = unit separates it from
 * the set's mean L.
 */
function componentTotal(scenario: Scenario, set: PathSetResult): number {
  const { k } = scenario;
  const beta = lineBetas(scenario);
  const exposure = scenario.lines?.exposure ?? scenario.exposure;
  let total = 0;
  for (let l = 0; l < exposure.length; l++) {
    let sum = set.means[l * (k + 1) + k]!;
    for (let j = 0; j < k; j++) sum += beta[l * k + j]! * set.means[l * (k + 1) + j]!;
    total += exposure[l]! * sum;
  }
  return total;
}

/** Reported figures flattened (finish()'s output), one array per run. */
type Figures = number[];

/**
 * Compares the backend with the reference on one prepared calculation: B reference batches with
 * independent seeds give the standard error of one P-path run per figure; the backend's P-path
 * figures must lie within 3·SE·√(1 + 1/B) of the batches' mean (the mean carries SE/√B of its own).
 */
async function expectWithinMonteCarloError(
  backend: SimulationBackend,
  prepared: {
    scenario: Scenario;
    simulation: { paths: number; seed: unknown; tail: number; varBand?: boolean };
    figures: (result: SimulationResult) => Figures;
  },
  paths: number,
  batches = 20,
): Promise<{ worst: number; figures: number }> {
  const options = { ...prepared.simulation, paths } as Parameters<typeof simulate>[1];
  const runs = Array.from({ length: batches }, (_, b) =>
    prepared.figures(simulate(prepared.scenario, { ...options, seed: seedFromNumber(1000 + b) })),
  );
  const result = await backend.simulate(prepared.scenario, { ...options, seed: seedFromNumber(77) });
  const actual = prepared.figures(result);
  // Components add up to each set's portfolio mean (f32 rounding only).
  for (const set of SETS) {
    const s = result[set];
    if (!s) continue;
    const total = componentTotal(prepared.scenario, s);
    expect(Math.abs(total - s.portfolio)).toBeLessThanOrEqual(2e-5 * Math.max(1, Math.abs(s.portfolio)));
  }
  // With n figures, even exact agreement puts about 0.27%·n of them beyond 3 SE by chance, and the SE
  // itself is estimated from B batches. So: at most the binomial share of exceedances beyond 3 SE
  // (expected + 3·√expected + 1), and none beyond the Bonferroni bound for a 1% family-wise risk.
  const n = actual.length;
  let bound = 3;
  while (2 * (1 - normalCdf(bound)) > 0.01 / n) bound += 0.01;
  let beyond3 = 0;
  let worst = 0;
  actual.forEach((value, i) => {
    const samples = runs.map((r) => r[i]!);
    const mean = samples.reduce((a, b) => a + b, 0) / batches;
    const sd = Math.sqrt(samples.reduce((a, b) => a + (b - mean) ** 2, 0) / (batches - 1));
    const se = sd * Math.sqrt(1 + 1 / batches);
    // Figures that do not vary (a pinned driver's exact move) must agree to f32 rounding.
    const floor = 1e-5 * Math.max(1e-6, Math.abs(mean));
    const diff = Math.abs(value - mean);
    if (diff > Math.max(3 * se, floor)) beyond3++;
    const at = { figure: i, value, mean, sd };
    expect({ ...at, within: diff <= Math.max(bound * se, floor) }).toEqual({ ...at, within: true });
    if (se > 0) worst = Math.max(worst, diff / se);
  });
  const expected = 0.0027 * n;
  expect(beyond3).toBeLessThanOrEqual(Math.floor(expected + 3 * Math.sqrt(expected) + 1));
  return { worst, figures: actual.length };
}

/**
 * A book's figures: the portfolio mean of every set, then per line its components (what
 * positionComponents reports, per unit of scale). An option line gives its total instead: its split
 * PnL·β·f/x divides a P&L that does not vanish at x = 0 (time decay, an expired option's premium) by
 * x, so each component has no finite variance and no Monte Carlo standard error to compare with; two
 * reference runs with different seeds differ without bound there too. The total is the line's P&L.
 */
function rawFigures(scenario: Scenario) {
  const beta = lineBetas(scenario);
  const { k } = scenario;
  const option = scenario.lines?.option ?? null;
  return (result: SimulationResult): Figures => {
    const out: number[] = [];
    for (const set of SETS) {
      const s = result[set];
      if (!s) continue;
      out.push(s.portfolio);
      const lines = s.means.length / (k + 1);
      for (let l = 0; l < lines; l++) {
        const parts = [];
        for (let j = 0; j < k; j++) parts.push(beta[l * k + j]! * s.means[l * (k + 1) + j]!);
        parts.push(s.means[l * (k + 1) + k]!);
        if (option !== null && option[l * 6] !== 0) out.push(parts.reduce((a, b) => a + b, 0));
        else out.push(...parts);
      }
    }
    return out;
  };
}

/** Synthetic book with every instrument: linear, foreign, cash, calls and puts, means, pinned. */
function bookScenario(k: number, drivers: number, pinned: boolean): Scenario {
  const root = (scale: number) =>
    new Float64Array(k * k).map((_, i) => {
      const [r, c] = [Math.floor(i / k), i % k];
      return c > r ? 0 : scale * (r === c ? 0.03 : 0.006 * Math.cos(i));
    });
  const mean = (shift: number) => new Float64Array(k).map((_, i) => shift * (1 + 0.1 * i));
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
  add(0, -1, 40, [1, 100, 105, 0.3, 0.25, 4.1]);
  add(1, fxB, -25, [2, 50, 48, 0.5, 0.4, 5.2]);
  add(2, -1, 60, [2, 80, 80, 0, 0.3, 3.5]);
  add(3, fxA, 10, [1, 20, 30, 1.2, 0.5, 1.1]);
  return {
    k,
    regimes: [
      { probability: 0.15, mean: mean(-0.01), root: root(2.5) },
      { probability: 0.85, mean: mean(0.002), root: root(1) },
    ],
    beta: new Float64Array(drivers * k).map((_, i) => 0.3 + 0.9 * Math.abs(Math.sin(i))),
    residualSd: new Float64Array(drivers).map((_, d) => 0.01 + 0.002 * (d % 7)),
    exposure: new Float64Array(drivers),
    pinned: pinned ? { driver: 3, logReturn: -0.08 } : null,
    residualMean: new Float64Array(drivers).map((_, d) => (d % 5 === 0 ? 0.004 * Math.sin(d) : 0)),
    lines: {
      primary: Int32Array.from(primary),
      fx: Int32Array.from(fx),
      exposure: Float64Array.from(exposure),
      option: Float64Array.from(option),
    },
  };
}

describe('wasm backend', () => {
  const pools = new Map<number, SimulationBackend>();
  beforeAll(async () => {
    for (const threads of [1, 2, 3]) pools.set(threads, await createBackend('wasm', { threads }));
  });
  afterAll(async () => {
    for (const pool of pools.values()) await pool.close();
  });

  test('names itself and its kernel (what the health check shows)', () => {
    expect(pools.get(2)!.name).toBe('wasm');
    expect(pools.get(2)!.detail).toMatch(/^WebAssembly SIMD f32x4 .*, 2 worker_threads/);
  });

  test('same bits for 1, 2 and 3 threads and on a second run; a new seed changes them', async () => {
    const s = bookScenario(3, 20, true);
    const o = { paths: 20_000 + 77, seed: seedFromNumber(9), tail: 0.05, varBand: true };
    const results = await Promise.all([1, 2, 3].map((n) => pools.get(n)!.simulate(s, o)));
    for (const r of results.slice(1)) expectBitwise(r, results[0]!);
    expectBitwise(await pools.get(2)!.simulate(s, o), results[0]!);
    const other = await pools.get(2)!.simulate(s, { ...o, seed: seedFromNumber(10) });
    expect(other.ev.portfolio).not.toBe(results[0]!.ev.portfolio);
  });

  test.each([
    ['every instrument, k = 2, unconditional', bookScenario(2, 24, false), 0.05],
    ['every instrument, k = 15, pinned shock', bookScenario(15, 18, true), 0.1],
  ])('%s: every figure within 3 Monte Carlo standard errors of the reference', async (_, s, tail) => {
    // The book has lines (FX, cash, options): without them the case would test a linear book only.
    expect(s.lines).toBeDefined();
    expect(s.lines!.option).not.toBeNull();
    const prepared = {
      scenario: s,
      simulation: { paths: 0, seed: null, tail, varBand: true },
      figures: rawFigures(s),
    };
    const { figures } = await expectWithinMonteCarloError(pools.get(2)!, prepared, 20_000);
    // 4 sets (ev, cvar_neg, cvar_pos, var), each: the portfolio, k + 1 components for each of the
    // drivers − 2 linear lines and 3 FX or cash lines, one total for each of the 4 options.
    const drivers = s.residualSd.length;
    expect(figures).toBe(4 * (1 + (drivers + 1) * (s.k + 1) + 4));
  });

  describe('real data (../shared/data/market)', () => {
    const market = realMarket();
    const STOCKS = ['AAPL', 'JPM', 'XOM', 'WMT', 'PFE', 'GE'];
    const priceOn = (symbol: string, date: string) => {
      const series = market.get(symbol)!;
      const dates = series.dates as Int32Array;
      let i = dates.length - 1;
      while (dates[i]! > dayNumber(date)) i--;
      return series.values[i]!;
    };
    const portfolio = (date: string): CalcSecurity[] =>
      STOCKS.map((symbol, i) => ({
        id: symbol.toLowerCase(),
        symbol,
        quantity: (i === 4 ? -1 : 1) * Math.round(100_000 / priceOn(symbol, date)),
      }));
    /** The stress test's reported arrays, flattened. */
    const stressFigures =
      (
        finish: (r: SimulationResult) => {
          results: {
            ev: { value: number }[];
            cvar_neg: { value: number }[];
            cvar_pos: { value: number }[];
          }[];
        },
      ) =>
      (r: SimulationResult): Figures =>
        finish(r).results.flatMap((row) => [...row.ev, ...row.cvar_neg, ...row.cvar_pos].map((v) => v.value));

    test.each([
      ['S&P 500 −10% on 20221228 (not held)', '20221228', 'IND:SPX', -0.1],
      ['AAPL −15% on 20191231 (held: pinned)', '20191231', 'AAPL', -0.15],
    ])('stress test, %s', async (_, date, shock, magnitude) => {
      const prepared = prepareStressTest(
        { securities: portfolio(date), date, shock, magnitude, horizon: 20, projection: ['IND:SPX'] },
        market,
        { paths: 20_000 },
      );
      const check = { ...prepared, figures: stressFigures(prepared.finish) };
      const { figures } = await expectWithinMonteCarloError(pools.get(2)!, check, 20_000);
      expect(figures).toBe(STOCKS.length * 3 * 2);
    });

    test('risk attribution cvar 95% and var 99% on 20201231', async () => {
      for (const [measure, confidence] of [
        ['cvar', '95%'],
        ['var', '99%'],
      ] as const) {
        const prepared = prepareRiskAttribution(
          { securities: portfolio('20201231'), date: '20201231', risk_measure: measure, confidence },
          market,
          { paths: 20_000 },
        );
        if (prepared.kind !== 'simulation') throw new Error(`${measure} simulates`);
        const figures = (r: SimulationResult) =>
          prepared.finish(r).results.flatMap((row) => row.mctr.map((v) => v.value));
        const checked = await expectWithinMonteCarloError(pools.get(2)!, { ...prepared, figures }, 20_000);
        // One row per stock: its projection (IND:SPX by default) and residual contributions.
        expect(checked.figures).toBe(STOCKS.length * 2);
      }
    });

    test('a book with options (surface and implied vol), foreign-currency-free, drift and a forecast', async () => {
      const date = '20191231';
      const expiry = formatDay(dayNumber(date) + 90);
      const spot = priceOn('AAPL', date);
      const securities: CalcSecurity[] = [
        ...portfolio(date),
        { id: 'call', symbol: `AAPL ${expiry} C${Math.round(spot * 1.05)}`, quantity: 20 },
        { id: 'put', symbol: `JPM ${expiry} P${Math.round(priceOn('JPM', date))}`, quantity: -15 },
      ];
      const prepared = prepareStressTest(
        {
          securities,
          date,
          shock: 'IND:SPX',
          magnitude: -0.08,
          horizon: 20,
          projection: ['IND:SPX'],
          drift: true,
          forecasts: [{ symbol: 'XOM', years: 1, targets: [60, 80], probabilities: [0.4, 0.6] }],
        },
        market,
        { paths: 20_000 },
      );
      // Options make lines; `lines?.option` alone would pass when lines is undefined.
      expect(prepared.scenario.lines).toBeDefined();
      expect(prepared.scenario.lines!.option).not.toBeNull();
      const check = { ...prepared, figures: stressFigures(prepared.finish) };
      const { figures } = await expectWithinMonteCarloError(pools.get(2)!, check, 20_000);
      // 8 positions (6 stocks, the call, the put) × ev, cvar_neg, cvar_pos × (IND:SPX, residual).
      expect(figures).toBe(8 * 3 * 2);
    });
  });
});
