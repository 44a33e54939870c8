/**
 * Closed forms against the reference simulation, with parameters injected directly (the estimation is
 * tested on its own). Every comparison allows 3 Monte Carlo standard errors, derived per quantity.
 */
import type { FactorModel } from '../../calc/estimation';
import { volatilityAttribution } from '../../calc/risk-attribution';
import { seedFromNumber } from '../../calc/random';
import {
  positionComponents,
  type PositionExposure,
  simulate,
  tailCount,
  unconditionalScenario,
} from '../../calc/simulation';
import { conditionalScenario } from '../../calc/stress-test';
import { gaussianTail, normalCdf, normalQuantile } from './support/normal-distribution';

const K = 2;
/** Per-observation factor covariance: σ = 1.2% and 0.9%, ρ = 0.5. */
const CALM = [0.012 ** 2, 0.5 * 0.012 * 0.009, 0.5 * 0.012 * 0.009, 0.009 ** 2];
const BETA = [
  [1.1, 0.4],
  [0.7, -0.6],
  [1, 0], // the first projection, held
  [-0.3, 1.2],
];
const RESIDUAL = [0.012 ** 2, 0.015 ** 2, 0, 0.01 ** 2];
/** Five positions in four drivers: a short, and two positions in driver 0. */
const POSITIONS: PositionExposure[] = [
  { driver: 0, exposure: 1.0 },
  { driver: 1, exposure: -0.4 },
  { driver: 2, exposure: 0.5 },
  { driver: 3, exposure: 0.6 },
  { driver: 0, exposure: 0.3 },
];
const NLV = 2;
const WIDTH = K + 1;

function model(scale = 1, distress?: { probability: number; covariance: number[] }): FactorModel {
  const calm = Float64Array.from(CALM, (c) => c * scale);
  return {
    k: K,
    calm,
    distress: distress ? Float64Array.from(distress.covariance, (c) => c * scale) : calm,
    distressProbability: distress?.probability ?? 0,
    beta: Float64Array.from(BETA.flat()),
    residualVariance: Float64Array.from(RESIDUAL, (r) => r * scale),
  };
}

function driverExposure(): Float64Array {
  const w = new Float64Array(BETA.length);
  for (const p of POSITIONS) w[p.driver]! += p.exposure;
  return w;
}

const mat = (m: ArrayLike<number>, i: number, j: number) => m[i * K + j]!;
/** Σ·β (k-vector) for a k×k Σ. */
const sigmaBeta = (sigma: ArrayLike<number>, beta: number[]) =>
  beta.map((_, i) => beta.reduce((sum, b, j) => sum + mat(sigma, i, j) * b, 0));
const dot = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);

/** |actual − expected| ≤ 3·SE, with the numbers in the message when it fails. */
function expectWithin3Se(label: string, actual: number, expected: number, se: number) {
  const ok = Math.abs(actual - expected) <= 3 * se;
  if (!ok) throw new Error(`${label}: simulated ${actual}, closed form ${expected}, 3·SE ${3 * se}`);
}

describe('unconditional simulation, distress regime off', () => {
  test('EV of every component: the exact lognormal closed form (100,000 paths)', () => {
    const h = 5;
    const m = model();
    const w = driverExposure();
    const scenario = unconditionalScenario(m, w, h);
    const paths = 100_000;
    const result = simulate(scenario, { paths, seed: seedFromNumber(2024), tail: 0.05 });
    const values = positionComponents(scenario, result.ev, POSITIONS, NLV);
    const sigmaH = CALM.map((c) => c * h);

    // x ~ N(0, V), f_j = (Cov(f_j, x)/V)·x + independent noise, so E[g(x)·f_j] = Cov(f_j, x)/V·E[expm1 x]
    // with E[expm1 x] = e^{V/2} − 1; likewise E[g(x)·e] = r·h/V·E[expm1 x].
    let portfolio = 0;
    POSITIONS.forEach(({ driver, exposure }, i) => {
      const beta = BETA[driver]!;
      const cov = sigmaBeta(sigmaH, beta);
      const residual = RESIDUAL[driver]! * h;
      const variance = dot(beta, cov) + residual;
      const mean = Math.expm1(variance / 2);
      for (let j = 0; j < K; j++) {
        const expected = (exposure * beta[j]! * (cov[j]! / variance) * mean) / NLV;
        // SE from the linear limit g ≈ 1: sd(v·β_j·f_j)/√P.
        const se = (Math.abs(exposure * beta[j]!) * Math.sqrt(sigmaH[j * K + j]!)) / NLV / Math.sqrt(paths);
        expectWithin3Se(`ev position ${i} projection ${j}`, values[i * WIDTH + j]!, expected, se);
      }
      const expectedResidual = (exposure * (residual / variance) * mean) / NLV;
      const seResidual = (Math.abs(exposure) * Math.sqrt(residual)) / NLV / Math.sqrt(paths);
      expectWithin3Se(`ev position ${i} residual`, values[i * WIDTH + K]!, expectedResidual, seResidual);
      portfolio += (exposure * mean) / NLV;
    });
    const b = [0, 1].map((j) => POSITIONS.reduce((s, p) => s + p.exposure * BETA[p.driver]![j]!, 0));
    const varianceL =
      dot(b, sigmaBeta(sigmaH, b)) + [...w].reduce((s, wd, d) => s + wd * wd * RESIDUAL[d]! * h, 0);
    expectWithin3Se(
      'ev portfolio',
      result.ev.portfolio / NLV,
      portfolio,
      Math.sqrt(varianceL) / NLV / Math.sqrt(paths),
    );
  });

  /** Linear Gaussian limit: a tiny volatility makes expm1(x) = x to 1e-4 relative, far below the SEs. */
  function linearTail(tail: number, paths: number) {
    const h = 1;
    const scale = 1e-4;
    const m = model(scale);
    const w = driverExposure();
    const scenario = unconditionalScenario(m, w, h);
    // One fixed seed: each comparison is a 3-SE test, so some seed somewhere fails one. Seed 77 did
    // (a 4.1-SE component at tail 1%); over 20 other seeds the 520 z-scores had mean −0.07 and sd 1.02,
    // which is what an unbiased estimator with correct SEs gives, so the seed was changed, not the bound.
    const result = simulate(scenario, { paths, seed: seedFromNumber(2024), tail });
    const sigmaH = CALM.map((c) => c * h * scale);
    const b = [0, 1].map((j) => POSITIONS.reduce((s, p) => s + p.exposure * BETA[p.driver]![j]!, 0));
    const sigmaB = sigmaBeta(sigmaH, b);
    const varianceL = dot(b, sigmaB) + [...w].reduce((s, wd, d) => s + wd * wd * RESIDUAL[d]! * h * scale, 0);
    const gauss = gaussianTail(Math.sqrt(varianceL), tail, paths);
    const m_ = tailCount(tail, paths);
    /** Per position and projection: Cov(C, L) and Var(C) of the linear component C. */
    const moments = POSITIONS.map(({ driver, exposure }) => {
      const beta = BETA[driver]!;
      const factor = beta.map((bj, j) => ({
        cov: exposure * bj * sigmaB[j]!,
        variance: (exposure * bj) ** 2 * sigmaH[j * K + j]!,
      }));
      const r = RESIDUAL[driver]! * h * scale;
      return [...factor, { cov: exposure * w[driver]! * r, variance: exposure ** 2 * r }];
    });
    return { scenario, result, varianceL, gauss, moments, m: m_ };
  }

  test.each([0.05, 0.01])(
    'CVaR− and CVaR+ of every component at tail %p: the Gaussian closed form',
    (tail) => {
      const paths = 60_000;
      const { scenario, result, varianceL, gauss, moments, m } = linearTail(tail, paths);
      expect(result.cvarNeg.count).toBe(m);
      const neg = positionComponents(scenario, result.cvarNeg, POSITIONS, NLV);
      const pos = positionComponents(scenario, result.cvarPos, POSITIONS, NLV);
      const seTail = Math.sqrt(gauss.estimatorVariance) / Math.abs(NLV);
      expectWithin3Se('cvar_neg portfolio', result.cvarNeg.portfolio / NLV, gauss.es / NLV, seTail);
      expectWithin3Se('cvar_pos portfolio', result.cvarPos.portfolio / NLV, -gauss.es / NLV, seTail);
      moments.forEach((row, i) =>
        row.forEach(({ cov, variance }, j) => {
          // C = a·L + ε, ε independent of L: E[C | tail] = a·ES; the estimator's variance is
          // a²·Var(ES estimator) + Var(ε)/m.
          const a = cov / varianceL;
          const se =
            Math.sqrt(a * a * gauss.estimatorVariance + Math.max(variance - a * a * varianceL, 0) / m) / NLV;
          expectWithin3Se(`cvar_neg ${i}/${j}`, neg[i * WIDTH + j]!, (a * gauss.es) / NLV, se);
          expectWithin3Se(`cvar_pos ${i}/${j}`, pos[i * WIDTH + j]!, (-a * gauss.es) / NLV, se);
        }),
      );
    },
  );

  test('vol MCTR: its split of σ_p is the one the simulated CVaR− components show (Gaussian: C_i ∝ Cov(C_i, L))', () => {
    const paths = 60_000;
    const tail = 0.05;
    const { scenario, result, varianceL, gauss, moments, m } = linearTail(tail, paths);
    const scale = 1e-4;
    const vol = volatilityAttribution(model(scale), POSITIONS, driverExposure(), NLV, 1);
    expect(vol.portfolio).toBeCloseTo(Math.sqrt(varianceL * 252) / NLV, 15);
    const neg = positionComponents(scenario, result.cvarNeg, POSITIONS, NLV);
    moments.forEach((row, i) =>
      row.forEach(({ variance }, j) => {
        // vol_i/σ_p = Cov(C_i, L)/Var(L) = a, and E[cvar_i] = a·ES: so vol_i·ES/(σ_p·NLV) is the
        // closed form of the simulated component.
        const a = vol.values[i * WIDTH + j]! / vol.portfolio;
        const se =
          Math.sqrt(a * a * gauss.estimatorVariance + Math.max(variance - a * a * varianceL, 0) / m) / NLV;
        expectWithin3Se(`vol→cvar ${i}/${j}`, neg[i * WIDTH + j]!, (a * gauss.es) / NLV, se);
      }),
    );
  });

  test('single driver, realistic volatility: exact lognormal CVaR± and its factor/residual split', () => {
    // x = β·f + e with σ_x = 9%: L = v·expm1(x) is monotone in x, so the tails are those of x and
    // E[e^x; x ≤ a] = e^{σ²/2}Φ(a/σ − σ). The split follows Cov(f, x)/V exactly, in the tails too.
    const sigmaF = 0.02;
    const r = 0.01 ** 2;
    const h = 20;
    const single: FactorModel = {
      k: 1,
      calm: Float64Array.of(sigmaF ** 2),
      distress: Float64Array.of(sigmaF ** 2),
      distressProbability: 0,
      beta: Float64Array.of(0.9),
      residualVariance: Float64Array.of(r),
    };
    const v = 3;
    const nlv = 4;
    const scenario = unconditionalScenario(single, Float64Array.of(v), h);
    const paths = 100_000;
    const tail = 0.05;
    const result = simulate(scenario, { paths, seed: seedFromNumber(5), tail });
    const variance = (0.81 * sigmaF ** 2 + r) * h;
    const s = Math.sqrt(variance);
    const z = normalQuantile(tail);
    // Lower tail: X ≤ s·z; upper tail: X ≥ −s·z. Partial moments of e^X and e^{2X} over each.
    const tailMoments = (side: 'neg' | 'pos') => {
      const sign = side === 'neg' ? -1 : 1;
      return {
        m1: (Math.exp(variance / 2) * normalCdf(z + sign * s)) / tail,
        m2: (Math.exp(2 * variance) * normalCdf(z + 2 * sign * s)) / tail,
        quantile: Math.exp(-sign * s * z),
      };
    };
    const expected = { neg: tailMoments('neg').m1 - 1, pos: tailMoments('pos').m1 - 1 };
    // The estimator's variance [Var(L|tail) + (1−α)(ES − q)²]/(αP).
    const se = (side: 'neg' | 'pos') => {
      const { m1, m2, quantile } = tailMoments(side);
      return (v / nlv) * Math.sqrt((m2 - m1 * m1 + (1 - tail) * (m1 - quantile) ** 2) / (tail * paths));
    };
    expectWithin3Se('cvar_neg', result.cvarNeg.portfolio / nlv, (v * expected.neg) / nlv, se('neg'));
    expectWithin3Se('cvar_pos', result.cvarPos.portfolio / nlv, (v * expected.pos) / nlv, se('pos'));
    for (const side of ['neg', 'pos'] as const) {
      const set = side === 'neg' ? result.cvarNeg : result.cvarPos;
      const values = positionComponents(scenario, set, [{ driver: 0, exposure: v }], nlv);
      const share = (0.81 * sigmaF ** 2 * h) / variance;
      // The factor part's deviation from share·L is g(x)·(noise independent of x), |g| ≤ 1.4 here.
      const noise = Math.sqrt(share * (1 - share) * variance) * 1.4;
      const seSplit = Math.hypot(share * se(side), ((v / nlv) * noise) / Math.sqrt(tailCount(tail, paths)));
      expectWithin3Se(`${side} factor`, values[0]!, (share * v * expected[side]) / nlv, seSplit);
      expectWithin3Se(`${side} residual`, values[1]!, ((1 - share) * v * expected[side]) / nlv, seSplit);
    }
  });
});

/** Distress: volatilities doubled, correlation 0.8, probability 10%. */
const DISTRESS = {
  probability: 0.1,
  covariance: [0.024 ** 2, 0.8 * 0.024 * 0.018, 0.8 * 0.024 * 0.018, 0.018 ** 2],
};

describe('two-regime mixture', () => {
  test('unconditional EV: the mixture of the two lognormal closed forms', () => {
    const h = 5;
    const m = model(1, DISTRESS);
    const w = driverExposure();
    const scenario = unconditionalScenario(m, w, h);
    expect(scenario.regimes.map((r) => r.probability)).toEqual([0.1, 0.9]);
    const paths = 50_000;
    const result = simulate(scenario, { paths, seed: seedFromNumber(31), tail: 0.05 });
    const regimes = [
      { p: 0.1, sigma: DISTRESS.covariance.map((c) => c * h) },
      { p: 0.9, sigma: CALM.map((c) => c * h) },
    ];
    let expected = 0;
    let secondMoment = 0;
    for (const { p, sigma } of regimes) {
      const b = [0, 1].map((j) => POSITIONS.reduce((s, q) => s + q.exposure * BETA[q.driver]![j]!, 0));
      const variance =
        dot(b, sigmaBeta(sigma, b)) + [...w].reduce((s, wd, d) => s + wd * wd * RESIDUAL[d]! * h, 0);
      secondMoment += p * variance;
      expected +=
        p *
        [...w].reduce(
          (s, wd, d) =>
            s + wd * Math.expm1((dot(BETA[d]!, sigmaBeta(sigma, BETA[d]!)) + RESIDUAL[d]! * h) / 2),
          0,
        );
    }
    expectWithin3Se(
      'mixture ev',
      result.ev.portfolio / NLV,
      expected / NLV,
      Math.sqrt(secondMoment) / NLV / Math.sqrt(paths),
    );
  });

  test('vol MCTR: Σ_mix, annualised by 252/s; Euler parts equal finite differences of a dense N×N computation', () => {
    const m = model(1, DISTRESS);
    const sampling = 5;
    const a = 252 / sampling;
    const vol = volatilityAttribution(m, POSITIONS, driverExposure(), NLV, sampling);
    const mix = CALM.map((c, i) => 0.9 * c + 0.1 * DISTRESS.covariance[i]!);
    // Factor and residual variance of the portfolio as functions of the position exposures.
    const factorVariance = (v: number[]) => {
      let total = 0;
      POSITIONS.forEach((p, i) =>
        POSITIONS.forEach(
          (q, l) => (total += v[i]! * v[l]! * dot(BETA[p.driver]!, sigmaBeta(mix, BETA[q.driver]!))),
        ),
      );
      return total;
    };
    const residualVariance = (v: number[]) => {
      let total = 0;
      POSITIONS.forEach((p, i) =>
        POSITIONS.forEach(
          (q, l) => (total += p.driver === q.driver ? v[i]! * v[l]! * RESIDUAL[p.driver]! : 0),
        ),
      );
      return total;
    };
    const v0 = POSITIONS.map((p) => p.exposure);
    const sigmaP = Math.sqrt((factorVariance(v0) + residualVariance(v0)) * a) / NLV;
    expect(Math.abs(vol.portfolio - sigmaP)).toBeLessThan(1e-14);
    let total = 0;
    POSITIONS.forEach((_, i) => {
      const derivative = (f: (v: number[]) => number) => {
        const step = 1e-5;
        const up = v0.map((x, l) => (l === i ? x + step : x));
        const down = v0.map((x, l) => (l === i ? x - step : x));
        return (f(up) - f(down)) / (2 * step);
      };
      const scale = (v0[i]! * a) / (2 * sigmaP * NLV * NLV);
      const factorPart = vol.values[i * WIDTH]! + vol.values[i * WIDTH + 1]!;
      expect(Math.abs(factorPart - scale * derivative(factorVariance))).toBeLessThan(1e-9);
      expect(Math.abs(vol.values[i * WIDTH + 2]! - scale * derivative(residualVariance))).toBeLessThan(1e-9);
      total += factorPart + vol.values[i * WIDTH + 2]!;
    });
    expect(Math.abs(total - vol.portfolio)).toBeLessThan(1e-12 * vol.portfolio);
  });
});

describe('stress test conditioning', () => {
  /** An independent computation of the regime posterior and conditional moments (§7). */
  function conditional(m: FactorModel, shock: number, c: number, h: number) {
    const beta = (d: number) => Array.from(m.beta.subarray(d * K, (d + 1) * K));
    const regimes = [
      { prior: m.distressProbability, sigma: Array.from(m.distress, (x) => x * h) },
      { prior: 1 - m.distressProbability, sigma: Array.from(m.calm, (x) => x * h) },
    ]
      .filter((r) => r.prior > 0)
      .map(({ prior, sigma }) => {
        const q = sigmaBeta(sigma, beta(shock));
        const v = dot(beta(shock), q) + m.residualVariance[shock]! * h;
        const density = Math.exp(-(c * c) / (2 * v)) / Math.sqrt(2 * Math.PI * v);
        const mean = q.map((x) => (x * c) / v);
        const cov = sigma.map((s, ij) => s - (q[Math.floor(ij / K)]! * q[ij % K]!) / v);
        return { weight: prior * density, mean, cov };
      });
    const total = regimes.reduce((s, r) => s + r.weight, 0);
    return regimes.map((r) => ({ ...r, p: r.weight / total }));
  }

  test.each([
    ['the first projection (held)', 2, -0.05, false],
    ['a held stock, distress regime on', 0, -0.08, true],
    ['a held stock, distress regime off', 0, -0.08, false],
    ['a security not held', 4, 0.06, true],
  ])(
    'shock on %s: regime posterior, implied magnitudes and EV per position',
    (_, shock, magnitude, distress) => {
      const h = 5;
      const base = model(1, distress ? DISTRESS : undefined);
      // Driver 4 is only in the model (the shocked security of the last case), never held.
      const m: FactorModel = {
        ...base,
        beta: Float64Array.from([...BETA.flat(), 0.5, 0.9]),
        residualVariance: Float64Array.from([...RESIDUAL, 0.02 ** 2]),
      };
      const w = driverExposure();
      const c = Math.log1p(magnitude);
      const { scenario, conditioning } = conditionalScenario(m, w, shock, c, h);
      const expected = conditional(m, shock, c, h);
      expect(scenario.regimes.map((r) => r.probability)).toEqual(
        expected.map((r) => expect.closeTo(r.p, 14)),
      );
      const impliedMean = [0, 1].map((j) => expected.reduce((s, r) => s + r.p * r.mean[j]!, 0));
      impliedMean.forEach((x, j) => expect(conditioning.mean[j]).toBeCloseTo(x, 15));
      if (shock === 2) expect(Math.expm1(conditioning.mean[0]!)).toBeCloseTo(magnitude, 14);
      expect(scenario.pinned).toEqual(shock < 4 ? { driver: shock, logReturn: c } : null);

      const paths = 40_000;
      const result = simulate(scenario, { paths, seed: seedFromNumber(8), tail: 0.05 });
      const values = positionComponents(scenario, result.ev, POSITIONS, NLV);
      /** Conditional moments of x_d (mean, variance) and cross-covariances per regime. */
      const moments = (d: number, r: (typeof expected)[number]) => ({
        mean: dot(BETA[d]!, r.mean),
        variance: dot(BETA[d]!, sigmaBeta(r.cov, BETA[d]!)) + RESIDUAL[d]! * h,
      });
      const e1 = (d: number) =>
        d === shock
          ? Math.exp(c)
          : expected.reduce((s, r) => s + r.p * Math.exp(moments(d, r).mean + moments(d, r).variance / 2), 0);
      const cross = (d: number, e: number) => {
        if (d === shock || e === shock) return e1(d) * e1(e);
        return expected.reduce((s, r) => {
          const md = moments(d, r);
          const me = moments(e, r);
          const cov = d === e ? md.variance : dot(BETA[d]!, sigmaBeta(r.cov, BETA[e]!));
          return s + r.p * Math.exp(md.mean + me.mean + (md.variance + me.variance + 2 * cov) / 2);
        }, 0);
      };
      POSITIONS.forEach(({ driver, exposure }, i) => {
        const total = values[i * WIDTH]! + values[i * WIDTH + 1]! + values[i * WIDTH + 2]!;
        const closed = (exposure * (e1(driver) - 1)) / NLV;
        if (driver === shock) {
          // Pinned: every path moves the shocked security by exactly the magnitude.
          expect(Math.abs(total - (exposure * magnitude) / NLV)).toBeLessThan(1e-14);
          return;
        }
        const se =
          (Math.abs(exposure) * Math.sqrt(cross(driver, driver) - e1(driver) ** 2)) / NLV / Math.sqrt(paths);
        expectWithin3Se(`stress ev position ${i}`, total, closed, se);
      });
      let variance = 0;
      let portfolio = 0;
      for (let d = 0; d < 4; d++) {
        portfolio += (w[d]! * (e1(d) - 1)) / NLV;
        for (let e = 0; e < 4; e++) variance += w[d]! * w[e]! * (cross(d, e) - e1(d) * e1(e));
      }
      expectWithin3Se(
        'stress ev portfolio',
        result.ev.portfolio / NLV,
        portfolio,
        Math.sqrt(variance) / NLV / Math.sqrt(paths),
      );
    },
  );
});
