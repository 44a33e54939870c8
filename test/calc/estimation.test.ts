import fc from 'fast-check';
import {
  decayFactor,
  distressMask,
  estimateFactorModel,
  ewmaWeights,
  weightedCorrelation,
  weightedVariance,
} from '../../calc/estimation';
import { clipToPsd, symmetricEigen, symmetricPseudoInverse } from '../../calc/linear-algebra';
import { normalAt, seedFromNumber } from '../../calc/random';
import { naiveCorrelation, naiveModel, naiveVariance, naiveWeights } from './support/naive-estimates';

/** Correlated factor and security returns with gaps (NaN) in everything but the first factor. */
function returns(length: number, k: number, securities: number, seed = 3) {
  const s = seedFromNumber(seed);
  const factors = Array.from({ length: k }, () => new Float64Array(length));
  const stocks = Array.from({ length: securities }, () => new Float64Array(length));
  for (let t = 0; t < length; t++) {
    const common = normalAt(s, t, 0);
    // Volatility clustering so the weighting matters.
    const vol = 0.01 * (1 + 0.8 * Math.sin(t / 50) ** 2);
    factors.forEach((f, j) => (f[t] = vol * (0.6 * common + 0.8 * normalAt(s, t, 1 + j)) * (1 + j / 4)));
    stocks.forEach((r, i) => {
      let x = 0.012 * normalAt(s, t, 50 + i);
      factors.forEach((f, j) => (x += ((i + j) % 3) * 0.4 * f[t]! - (j === 1 ? 0.3 : 0) * f[t]!));
      r[t] = x;
    });
  }
  const gap = (a: Float64Array, every: number, offset: number) => {
    for (let t = offset; t < length; t += every) a[t] = NaN;
  };
  factors.slice(1).forEach((f, j) => gap(f, 37 + j, 5 + j));
  stocks.forEach((r, i) => gap(r, 11 + i, i));
  return { factors, stocks };
}

const close = (actual: number, expected: number, relative: number, absolute = 0) =>
  Math.abs(actual - expected) <= relative * Math.abs(expected) + absolute;

describe('EWMA estimates match a direct double-loop computation to 1e-10', () => {
  const { factors, stocks } = returns(1260, 3, 6);

  test.each([
    [2, 6, 1],
    [0, 0, 1],
    [6, 48, 1],
    [12, 2, 5],
    [48, 0, 5],
  ])('volatility half-life %i, correlation half-life %i, sampling %i', (vhl, chl, sampling) => {
    const s = sampling as 1 | 5;
    const length = sampling === 5 ? 252 : 1260;
    const f = factors.map((x) => x.subarray(1260 - length));
    const r = stocks.map((x) => x.subarray(1260 - length));
    const wv = ewmaWeights(length, vhl, s);
    const wc = ewmaWeights(length, chl, s);
    const nwv = naiveWeights(length, vhl, sampling);
    const nwc = naiveWeights(length, chl, sampling);
    for (const a of [...f, ...r]) {
      expect(close(Math.sqrt(weightedVariance(a, wv)), Math.sqrt(naiveVariance(a, nwv)), 1e-10)).toBe(true);
      for (const b of f)
        expect(close(weightedCorrelation(a, b, wc), naiveCorrelation(a, b, nwc), 0, 1e-10)).toBe(true);
    }

    const model = estimateFactorModel({
      factorReturns: f,
      drivers: r.map((returns) => ({ returns })),
      sampling: s,
      volatilityHalfLife: vhl,
      correlationHalfLife: chl,
      distress: false,
    });
    const naive = naiveModel(f, r, vhl, chl, sampling);
    for (let i = 0; i < 3; i++) {
      for (let j = 0; j < 3; j++) {
        expect(close(model.calm[i * 3 + j]!, naive.factorCovariance[i]![j]!, 1e-10)).toBe(true);
      }
    }
    naive.betas.forEach((beta, d) => {
      beta.forEach((b, j) => expect(Math.abs(model.beta[d * 3 + j]! - b)).toBeLessThan(1e-10));
      expect(close(model.residualVariance[d]!, naive.residualVariance[d]!, 1e-10)).toBe(true);
    });
  });

  test('the weight halves every H = months·21/s observations, newest last', () => {
    const w = ewmaWeights(300, 2, 1);
    expect(w[299]).toBe(1);
    expect(w[299 - 42]).toBeCloseTo(0.5, 14);
    // s = 5: H = 2·21/5 = 8.4 observations.
    expect(decayFactor(2, 5) ** 8.4).toBeCloseTo(0.5, 14);
    expect(Array.from(ewmaWeights(5, 0, 1))).toEqual([1, 1, 1, 1, 1]);
  });
});

describe('projection', () => {
  const { factors, stocks } = returns(800, 2, 2, 11);
  const input = { sampling: 1 as const, volatilityHalfLife: 2, correlationHalfLife: 6, distress: false };

  test('a projection held in the portfolio has a unit beta and no residual', () => {
    const model = estimateFactorModel({ ...input, factorReturns: factors, drivers: [{ factor: 1 }] });
    expect(Array.from(model.beta)).toEqual([0, 1]);
    expect(model.residualVariance[0]).toBe(0);
  });

  test('a duplicated projection shares the beta (pseudo-inverse) and leaves the residual unchanged', () => {
    const f = factors[0]!;
    const single = estimateFactorModel({ ...input, factorReturns: [f], drivers: [{ returns: stocks[0]! }] });
    const twice = estimateFactorModel({
      ...input,
      factorReturns: [f, f],
      drivers: [{ returns: stocks[0]! }],
    });
    expect(twice.beta[0]).toBeCloseTo(single.beta[0]! / 2, 12);
    expect(twice.beta[1]).toBeCloseTo(single.beta[0]! / 2, 12);
    expect(twice.residualVariance[0]).toBeCloseTo(single.residualVariance[0]!, 15);
  });

  test('a near-copy (correlation 1 − 1e-12) stays finite instead of exploding', () => {
    const f = factors[0]!;
    const copy = f.map((x, t) => x * (1 + 1e-6 * Math.sin(t)));
    const model = estimateFactorModel({
      ...input,
      factorReturns: [f, copy],
      drivers: [{ returns: stocks[0]! }],
    });
    expect(Math.abs(model.beta[0]!) + Math.abs(model.beta[1]!)).toBeLessThan(5);
  });
});

describe('distress regime', () => {
  test('observations at or above the 90th percentile of the RMS over the previous 21 observations (t−21…t−1)', () => {
    const { factors } = returns(1260, 2, 0, 5);
    const first = factors[0]!;
    const mask = distressMask(first);
    const rms: number[] = [];
    for (let t = 21; t < first.length; t++) {
      let sum = 0;
      for (let u = t - 21; u < t; u++) sum += first[u]! ** 2;
      rms.push(Math.sqrt(sum / 21));
    }
    const sorted = [...rms].sort((a, b) => a - b);
    const pos = 0.9 * (sorted.length - 1);
    const threshold =
      sorted[Math.floor(pos)]! + (pos % 1) * (sorted[Math.floor(pos) + 1]! - sorted[Math.floor(pos)]!);
    const expected = [...new Array<number>(21).fill(0), ...rms.map((v) => (v >= threshold ? 1 : 0))];
    expect(Array.from(mask)).toEqual(expected);

    const model = estimateFactorModel({
      factorReturns: factors,
      drivers: [],
      sampling: 1,
      volatilityHalfLife: 2,
      correlationHalfLife: 6,
      distress: true,
    });
    const count = expected.reduce((a, b) => a + b, 0);
    expect(model.distressProbability).toBe(count / 1260);
    expect(model.distressProbability).toBeGreaterThan(0.09);
    expect(model.distressProbability).toBeLessThan(0.11);
    // Σ^d: equal weights over the distress observations, zero mean, pairwise.
    const w = expected;
    const naive = naiveModel(factors, [], 0, 0, 1);
    const vol = factors.map((f) => Math.sqrt(naiveVariance(f, w)));
    const rho = naiveCorrelation(factors[0]!, factors[1]!, w);
    expect(close(model.distress[0]!, vol[0]! ** 2, 1e-10)).toBe(true);
    expect(close(model.distress[1]!, rho * vol[0]! * vol[1]!, 1e-10)).toBe(true);
    expect(close(model.distress[3]!, vol[1]! ** 2, 1e-10)).toBe(true);
    // Distress is more volatile than the whole window.
    expect(vol[0]!).toBeGreaterThan(naive.factorVol[0]!);
  });

  test('switched off: π_d = 0', () => {
    const { factors } = returns(300, 1, 0);
    const model = estimateFactorModel({
      factorReturns: factors,
      drivers: [],
      sampling: 1,
      volatilityHalfLife: 2,
      correlationHalfLife: 6,
      distress: false,
    });
    expect(model.distressProbability).toBe(0);
  });
});

describe('linear algebra', () => {
  const symmetric = (n: number, values: number[]) => {
    const a = new Float64Array(n * n);
    let v = 0;
    for (let i = 0; i < n; i++)
      for (let j = i; j < n; j++) a[i * n + j] = a[j * n + i] = values[v++ % values.length]!;
    return a;
  };

  test('Jacobi eigen-decomposition: A·V = V·Λ and VᵀV = I (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 15 }),
        fc.array(fc.double({ min: -10, max: 10, noNaN: true }), { minLength: 1, maxLength: 120 }),
        (n, values) => {
          const a = symmetric(n, values);
          const { values: lambda, vectors: v } = symmetricEigen(a, n);
          let norm = 0;
          for (const x of a) norm = Math.max(norm, Math.abs(x));
          for (let i = 0; i < n; i++) {
            for (let j = 0; j < n; j++) {
              let av = 0;
              let vtv = 0;
              for (let l = 0; l < n; l++) {
                av += a[i * n + l]! * v[l * n + j]!;
                vtv += v[l * n + i]! * v[l * n + j]!;
              }
              expect(Math.abs(av - v[i * n + j]! * lambda[j]!)).toBeLessThanOrEqual(1e-12 * (norm + 1) * n);
              expect(Math.abs(vtv - (i === j ? 1 : 0))).toBeLessThanOrEqual(1e-12 * n);
            }
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  test('an indefinite pairwise correlation matrix is clipped to the nearest PSD one; a PSD one is kept', () => {
    const indefinite = Float64Array.from([1, 0.9, -0.9, 0.9, 1, 0.9, -0.9, 0.9, 1]);
    const { matrix, clipped } = clipToPsd(indefinite, 3);
    expect(clipped).toBe(true);
    expect(Math.min(...symmetricEigen(matrix, 3).values)).toBeGreaterThan(-1e-14);
    const psd = Float64Array.from([2, 0.5, 0.5, 1]);
    expect(clipToPsd(psd, 2)).toEqual({ matrix: psd, clipped: false });
  });

  test('the pseudo-inverse of a well-conditioned matrix is its inverse', () => {
    const a = Float64Array.from([4, 1, 0.5, 1, 3, 0.2, 0.5, 0.2, 2]);
    const inv = symmetricPseudoInverse(a, 3, 1e-10);
    for (let i = 0; i < 3; i++) {
      for (let j = 0; j < 3; j++) {
        let x = 0;
        for (let l = 0; l < 3; l++) x += a[i * 3 + l]! * inv[l * 3 + j]!;
        expect(x).toBeCloseTo(i === j ? 1 : 0, 14);
      }
    }
  });
});
