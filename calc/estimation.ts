/**
 * Estimation (methodology §2–§4): EWMA volatilities and correlations with two half-lives, the top-down
 * projection on the factor securities, and the distress regime.
 *
 * Only the k×k factor matrix, the k factor covariances of each security and its variance are ever
 * formed: O(T·N·k) time, O(N·k) memory, never the N×N covariance.
 */
import { clipToPsd, quadraticForm, symmetricPseudoInverse } from './linear-algebra';
import type { Sampling } from './market-data';

// Bound once: under jest's vm sandbox every global lookup (Math, Number) in a hot loop costs ~25×.
const { sqrt } = Math;
const { isNaN } = Number;

/** Trading days per month in H = half_life_months × 21 / s. */
export const DAYS_PER_MONTH = 21;
/** Rolling window and percentile that define distress observations (§4). */
export const DISTRESS_ROLLING_OBSERVATIONS = 21;
export const DISTRESS_PERCENTILE = 0.9;
/**
 * Factor directions whose correlation-matrix eigenvalue is below this fraction of the largest are
 * dropped from the beta solve (pseudo-inverse). A well-conditioned factor set is solved exactly; two
 * projections that are copies of each other (SPY and the S&P index) share the beta instead of getting
 * huge opposite ones. 1e-10 is where a double-precision solve has already lost most of its digits.
 */
export const PSEUDO_INVERSE_TOLERANCE = 1e-10;

/** λ = 2^(−1/H), H = months × 21 / s observations; half-life 0 = equal weights (λ = 1). */
export function decayFactor(halfLifeMonths: number, sampling: Sampling): number {
  if (halfLifeMonths === 0) return 1;
  return Math.pow(2, -1 / ((halfLifeMonths * DAYS_PER_MONTH) / sampling));
}

/** w_t = λ^(T−1−t), newest last with weight 1; not normalised (that happens over present values). */
export function ewmaWeights(length: number, halfLifeMonths: number, sampling: Sampling): Float64Array {
  const lambda = decayFactor(halfLifeMonths, sampling);
  const w = new Float64Array(length);
  for (let t = 0; t < length; t++) w[t] = Math.pow(lambda, length - 1 - t);
  return w;
}

/** w_t = λ^(T−1−t) for a given λ in (0, 1] (§17 `exponential_decay`), newest last with weight 1. */
export function decayWeights(length: number, lambda: number): Float64Array {
  const w = new Float64Array(length);
  for (let t = 0; t < length; t++) w[t] = Math.pow(lambda, length - 1 - t);
  return w;
}

/** Zero-mean weighted variance Σw·r² / Σw over the observations present (non-NaN, weight > 0). */
export function weightedVariance(r: Float64Array, w: Float64Array): number {
  let sum = 0;
  let weight = 0;
  for (let t = 0; t < r.length; t++) {
    const x = r[t]!;
    if (isNaN(x)) continue;
    sum += w[t]! * x * x;
    weight += w[t]!;
  }
  return weight > 0 ? sum / weight : 0;
}

/** Weighted mean Σw·r / Σw over the observations present (§13 drift); 0 with none. */
export function weightedMean(r: Float64Array, w: Float64Array): number {
  let sum = 0;
  let weight = 0;
  for (let t = 0; t < r.length; t++) {
    const x = r[t]!;
    if (isNaN(x)) continue;
    sum += w[t]! * x;
    weight += w[t]!;
  }
  return weight > 0 ? sum / weight : 0;
}

/** Zero-mean weighted correlation over the observations both series have; 0 without variance. */
export function weightedCorrelation(a: Float64Array, b: Float64Array, w: Float64Array): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let t = 0; t < a.length; t++) {
    const x = a[t]!;
    const y = b[t]!;
    if (isNaN(x) || isNaN(y)) continue;
    const wt = w[t]!;
    ab += wt * x * y;
    aa += wt * x * x;
    bb += wt * y * y;
  }
  return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}

/**
 * Σ w·x² of a series with no missing observation, or null when one is missing. When neither series
 * of a pair misses one, every observation is a common one, so `weightedCorrelation`'s two sums of
 * squares are these, computed once per series instead of once per pair: the same operations in the
 * same order, hence the same bits, for a third of the work of an estimation at 3000 × 15.
 */
function completeSquares(r: Float64Array, w: Float64Array): number | null {
  let sum = 0;
  for (let t = 0; t < r.length; t++) {
    const x = r[t]!;
    if (isNaN(x)) return null;
    sum += w[t]! * x * x;
  }
  return sum;
}

/** `weightedCorrelation(a, b, w)` for two complete series whose sums of squares are known. */
function completeCorrelation(
  a: Float64Array,
  b: Float64Array,
  w: Float64Array,
  aa: number,
  bb: number,
): number {
  let ab = 0;
  for (let t = 0; t < a.length; t++) ab += w[t]! * a[t]! * b[t]!;
  return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}

/**
 * Observations at or above the 90th percentile of the first projection's rolling root-mean-square
 * return. The rolling value at t covers the previous 21 observations t−21..t−1 inside the window,
 * never t itself: a day must not classify itself as distressed by its own move (§4). The first 21
 * observations have no value and count as calm; the percentile interpolates linearly between order
 * statistics (numpy's default).
 */
export function distressMask(first: Float64Array): Uint8Array {
  const n = first.length;
  const rms = new Float64Array(n).fill(NaN);
  for (let t = DISTRESS_ROLLING_OBSERVATIONS; t < n; t++) {
    let sum = 0;
    let count = 0;
    for (let u = t - DISTRESS_ROLLING_OBSERVATIONS; u < t; u++) {
      const x = first[u]!;
      if (isNaN(x)) continue;
      sum += x * x;
      count++;
    }
    if (count > 0) rms[t] = sqrt(sum / count);
  }
  const defined = Array.from(rms)
    .filter((x) => !isNaN(x))
    .sort((a, b) => a - b);
  const mask = new Uint8Array(n);
  if (defined.length === 0) return mask;
  const position = DISTRESS_PERCENTILE * (defined.length - 1);
  const lo = Math.floor(position);
  const hi = Math.min(lo + 1, defined.length - 1);
  const threshold = defined[lo]! + (position - lo) * (defined[hi]! - defined[lo]!);
  for (let t = 0; t < n; t++) if (rms[t]! >= threshold) mask[t] = 1;
  return mask;
}

/** A security of the portfolio: its window returns, or the index of the projection it is. */
export type DriverInput = { returns: Float64Array } | { factor: number };

export interface EstimationInput {
  /** Window returns of the projections, first projection first (it defines distress). */
  factorReturns: readonly Float64Array[];
  drivers: readonly DriverInput[];
  sampling: Sampling;
  volatilityHalfLife: number;
  correlationHalfLife: number;
  /** false = no distress regime (π_d = 0): the closed-form tests need a single Gaussian. */
  distress: boolean;
  /**
   * λ of w_t ∝ λ^(T−t) for volatilities and correlations alike (parametric `exponential_decay`, §17);
   * when given it replaces both half-lives. 1 = equal weights.
   */
  decay?: number;
}

/**
 * The estimated model, per sampling observation (scale by h/s for a horizon). It is also the input of
 * the simulation, so a test can build one by hand.
 */
export interface FactorModel {
  /** Number of projections k. */
  readonly k: number;
  /** Calm factor covariance Σ_ff^c (EWMA), k×k row-major, positive semi-definite. */
  readonly calm: Float64Array;
  /** Distress factor covariance Σ_ff^d (equal weights over distress observations). */
  readonly distress: Float64Array;
  /** π_d: share of the window's observations in distress (0 when the regime is off). */
  readonly distressProbability: number;
  /** β, D×k row-major. */
  readonly beta: Float64Array;
  /** r_i = max(σ_i² − β_iᵀ Σ_ff β_i, 0); 0 for a projection held in the portfolio. */
  readonly residualVariance: Float64Array;
  /** EWMA mean invariant of each factor per observation (`volatility_half_life` weights, §13). */
  readonly factorMean?: Float64Array;
  /** EWMA mean invariant of each driver per observation (§13). */
  readonly driverMean?: Float64Array;
}

interface FactorCovariance {
  sigma: Float64Array;
  correlation: Float64Array;
  covariance: Float64Array;
}

/** Σ = D·C·D from per-factor σ and pairwise ρ; clipped to PSD only when pairwise gaps broke it. */
function factorCovariance(
  factors: readonly Float64Array[],
  volWeights: Float64Array,
  corrWeights: Float64Array,
): FactorCovariance {
  const k = factors.length;
  const sigma = new Float64Array(k);
  for (let j = 0; j < k; j++) sigma[j] = sqrt(weightedVariance(factors[j]!, volWeights));
  const correlation = new Float64Array(k * k);
  for (let j = 0; j < k; j++) {
    correlation[j * k + j] = 1;
    for (let l = j + 1; l < k; l++) {
      const rho = weightedCorrelation(factors[j]!, factors[l]!, corrWeights);
      correlation[j * k + l] = rho;
      correlation[l * k + j] = rho;
    }
  }
  const psd = clipToPsd(correlation, k).matrix;
  const covariance = new Float64Array(k * k);
  for (let j = 0; j < k; j++) {
    for (let l = 0; l < k; l++) covariance[j * k + l] = sigma[j]! * psd[j * k + l]! * sigma[l]!;
  }
  return { sigma, correlation, covariance };
}

export function estimateFactorModel(input: EstimationInput): FactorModel {
  const k = input.factorReturns.length;
  const length = input.factorReturns[0]?.length ?? 0;
  const volWeights =
    input.decay === undefined
      ? ewmaWeights(length, input.volatilityHalfLife, input.sampling)
      : decayWeights(length, input.decay);
  const corrWeights =
    input.decay === undefined ? ewmaWeights(length, input.correlationHalfLife, input.sampling) : volWeights;
  const calm = factorCovariance(input.factorReturns, volWeights, corrWeights);

  let distress = calm.covariance;
  let distressProbability = 0;
  if (input.distress && k > 0) {
    const mask = distressMask(input.factorReturns[0]!);
    let count = 0;
    for (const flag of mask) count += flag;
    // Fewer than two observations cannot make a covariance; the regime then simply never occurs.
    if (count >= 2) {
      const equal = Float64Array.from(mask);
      distress = factorCovariance(input.factorReturns, equal, equal).covariance;
      distressProbability = count / length;
    }
  }

  const inverseCorrelation = symmetricPseudoInverse(calm.correlation, k, PSEUDO_INVERSE_TOLERANCE);
  const beta = new Float64Array(input.drivers.length * k);
  const residualVariance = new Float64Array(input.drivers.length);
  const factorMean = Float64Array.from(input.factorReturns, (r) => weightedMean(r, volWeights));
  const driverMean = new Float64Array(input.drivers.length);
  const rho = new Float64Array(k);
  const factorCompleteSquares = input.factorReturns.map((f) => completeSquares(f, corrWeights));
  input.drivers.forEach((driver, d) => {
    if ('factor' in driver) {
      beta[d * k + driver.factor] = 1;
      driverMean[d] = factorMean[driver.factor]!;
      return;
    }
    driverMean[d] = weightedMean(driver.returns, volWeights);
    const sigma = sqrt(weightedVariance(driver.returns, volWeights));
    const driverSquares = completeSquares(driver.returns, corrWeights);
    for (let j = 0; j < k; j++) {
      const factor = input.factorReturns[j]!;
      const factorSquares = factorCompleteSquares[j]!;
      rho[j] =
        driverSquares === null || factorSquares === null
          ? weightedCorrelation(factor, driver.returns, corrWeights)
          : completeCorrelation(factor, driver.returns, corrWeights, factorSquares, driverSquares);
    }
    // β = Σ_ff⁻¹ Σ_fi = D⁻¹ C⁻¹ ρ σ_i: solved on the correlation scale so factors of very different
    // volatility do not skew the pseudo-inverse's cut-off.
    const b = beta.subarray(d * k, (d + 1) * k);
    for (let j = 0; j < k; j++) {
      let y = 0;
      for (let l = 0; l < k; l++) y += inverseCorrelation[j * k + l]! * rho[l]!;
      b[j] = calm.sigma[j]! > 0 ? (y * sigma) / calm.sigma[j]! : 0;
    }
    residualVariance[d] = Math.max(sigma * sigma - quadraticForm(calm.covariance, b, k), 0);
  });
  return {
    k,
    calm: calm.covariance,
    distress,
    distressProbability,
    beta,
    residualVariance,
    factorMean,
    driverMean,
  };
}

/** Σ_mix = (1−π_d)·Σ_ff^c + π_d·Σ_ff^d per observation (§8). */
export function mixtureCovariance(model: FactorModel): Float64Array {
  const p = model.distressProbability;
  return model.calm.map((c, i) => (1 - p) * c + p * model.distress[i]!);
}

/** Variance per observation of driver d in each regime: β_dᵀ Σ β_d + r_d. */
export function driverVariance(model: FactorModel, d: number, regime: 'calm' | 'distress'): number {
  const b = model.beta.subarray(d * model.k, (d + 1) * model.k);
  return (
    quadraticForm(regime === 'calm' ? model.calm : model.distress, b, model.k) + model.residualVariance[d]!
  );
}
