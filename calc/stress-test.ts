/**
 * The stress test (methodology §7): the portfolio's P&L distribution conditional on the shocked
 * security moving by `magnitude` over the horizon, decomposed by projection (§6).
 */
import { driverVariance, type FactorModel } from './estimation';
import { CalcInputError } from './input-error';
import type { PositionFacts } from './position-facts';
import { psdRoot } from './linear-algebra';
import { extremeMoves, isLevelSeries, MIN_RETURNS, toDaySeries, type SeriesSource } from './market-data';
import { blameOverflow, checkFigures, type Suspect } from './figures';
import { bookLines, bookSuspects, forecastSuspects, meanShift, preparePortfolio } from './portfolio-model';
import {
  type CalcOptions,
  checkHorizon,
  type CommonRequest,
  type Confidence,
  MAX_HORIZON,
  normaliseCommon,
  type NormalisedCommon,
  type ProjectionValue,
  RESIDUAL,
  resolvePaths,
  resolveSeed,
  tailOf,
} from './calculation-request';
import {
  positionComponents,
  type Regime,
  type Scenario,
  simulate,
  type SimulationOptions,
  type SimulationResult,
} from './simulation';

export interface StressTestRequest extends CommonRequest {
  /** Days; default 5; null = the smallest horizon whose dynamic range holds the magnitude. */
  readonly horizon?: number | null;
  /** Default `IND:SPX`. */
  readonly shock?: string;
  /** Decimal shock (−10% is −0.10). */
  readonly magnitude: number;
  /** Default `95%`. */
  readonly confidence?: Confidence;
}

export interface StressTestSecurityResult {
  id: string;
  ev: ProjectionValue[];
  cvar_neg: ProjectionValue[];
  cvar_pos: ProjectionValue[];
}

/** The spec's `stress_test` object. */
export interface StressTestResult {
  magnitude: number;
  extrapolated: boolean;
  out_of_range: boolean;
  implied_magnitudes: number[];
  results: StressTestSecurityResult[];
  dynamic_range: [number, number];
  unmapped_tickers: string[];
  implied_horizon: number;
}

/** Horizon search (§7): from the smallest multiple of s that is at least 5 days. */
export const MIN_SEARCH_HORIZON = 5;

/**
 * A move of the invariant (log-return, or points for a rate or spread) as a magnitude, and back:
 * e^x − 1 and ln(1 + m), or x / 100 and m × 100 (§12: levels are in percent, magnitudes in decimals).
 */
export function toMagnitude(x: number, levels: boolean): number {
  return levels ? x / 100 : Math.expm1(x);
}
export function fromMagnitude(magnitude: number, levels: boolean): number {
  return levels ? magnitude * 100 : Math.log1p(magnitude);
}

/** [m(−2σ√(h/s)), m(+2σ√(h/s))], σ per observation, m the magnitude of an invariant move. */
export function dynamicRange(
  sigma: number,
  horizon: number,
  sampling: number,
  levels = false,
): [number, number] {
  const spread = 2 * sigma * Math.sqrt(horizon / sampling);
  return [toMagnitude(-spread, levels), toMagnitude(spread, levels)];
}

/** The smallest h ≥ 5, a multiple of s, whose dynamic range holds the magnitude; capped at 1260. */
export function searchHorizon(sigma: number, magnitude: number, sampling: number, levels = false): number {
  const first = Math.ceil(MIN_SEARCH_HORIZON / sampling) * sampling;
  for (let h = first; h <= MAX_HORIZON; h += sampling) {
    const [lo, hi] = dynamicRange(sigma, h, sampling, levels);
    if (lo <= magnitude && magnitude <= hi) return h;
  }
  return Math.floor(MAX_HORIZON / sampling) * sampling;
}

export interface ShockConditioning {
  /** Regimes with their posterior probabilities and the conditional mean and root of f. */
  regimes: Regime[];
  /** Σ_r p_r · E[f | x_s = c, r]. */
  mean: Float64Array;
}

/**
 * Regime posterior p_r ∝ π_r·φ(c; 0, V_r), V_r = (β_sᵀΣ_rβ_s + r_s)·h/s, and within each regime the
 * exact Gaussian conditional of f given x_s = c: mean Σβ_s·c/V, covariance Σ − Σβ_sβ_sᵀΣ/V (Σ at the
 * horizon). Regimes are listed distress first, as in the unconditional scenario.
 */
export function conditionOnShock(
  model: FactorModel,
  shockDriver: number,
  logReturn: number,
  horizonScale: number,
  shift: { factor: Float64Array; residual: Float64Array } | null = null,
): ShockConditioning {
  const { k } = model;
  const beta = model.beta.subarray(shockDriver * k, (shockDriver + 1) * k);
  // §13: with means μ_f and μ_e, x_s has mean m_s = β_s·μ_f + μ_e,s; the conditional is centred on
  // μ_f + Σβ_s·(c − m_s)/V. Zero-centred (no shift) this is the §7 formula.
  const factorMean = shift?.factor ?? new Float64Array(k);
  let shockMean = shift?.residual[shockDriver] ?? 0;
  for (let j = 0; j < k; j++) shockMean += beta[j]! * factorMean[j]!;
  const surprise = logReturn - shockMean;
  const residual = model.residualVariance[shockDriver]! * horizonScale;
  const candidates: { probability: number; covariance: Float64Array }[] = [];
  if (model.distressProbability > 0) {
    candidates.push({ probability: model.distressProbability, covariance: model.distress });
  }
  if (model.distressProbability < 1) {
    candidates.push({ probability: 1 - model.distressProbability, covariance: model.calm });
  }
  const parts = candidates.map(({ probability, covariance }) => {
    const sigma = covariance.map((c) => c * horizonScale);
    const q = new Float64Array(k);
    for (let i = 0; i < k; i++) for (let j = 0; j < k; j++) q[i]! += sigma[i * k + j]! * beta[j]!;
    let variance = residual;
    for (let j = 0; j < k; j++) variance += beta[j]! * q[j]!;
    const logWeight =
      variance > 0
        ? Math.log(probability) - 0.5 * Math.log(variance) - (surprise * surprise) / (2 * variance)
        : -Infinity;
    return { sigma, q, variance, logWeight };
  });
  const top = Math.max(...parts.map((part) => part.logWeight));
  if (!Number.isFinite(top)) throw new CalcInputError('shock', 'has no volatility to condition on.');
  const weights = parts.map((part) => Math.exp(part.logWeight - top));
  const total = weights.reduce((a, b) => a + b, 0);
  const mean = new Float64Array(k);
  const regimes: Regime[] = [];
  parts.forEach(({ sigma, q, variance }, r) => {
    const probability = weights[r]! / total;
    if (!(probability > 0)) return;
    const regimeMean = q.map((value, j) => factorMean[j]! + (value * surprise) / variance);
    const covariance = new Float64Array(k * k);
    for (let i = 0; i < k; i++) {
      for (let j = 0; j < k; j++) covariance[i * k + j] = sigma[i * k + j]! - (q[i]! * q[j]!) / variance;
    }
    for (let j = 0; j < k; j++) mean[j]! += probability * regimeMean[j]!;
    regimes.push({ probability, mean: regimeMean, root: psdRoot(covariance, k) });
  });
  return { regimes, mean };
}

/**
 * The scenario of a stress test from a model: the first `exposure.length` drivers are held; a held
 * shocked driver is pinned to the shock.
 */
export function conditionalScenario(
  model: FactorModel,
  exposure: Float64Array,
  shockDriver: number,
  logReturn: number,
  horizonScale: number,
  shift: { factor: Float64Array; residual: Float64Array } | null = null,
): { scenario: Scenario; conditioning: ShockConditioning } {
  const { k } = model;
  const held = exposure.length;
  const conditioning = conditionOnShock(model, shockDriver, logReturn, horizonScale, shift);
  const scenario: Scenario = {
    k,
    regimes: conditioning.regimes,
    beta: model.beta.slice(0, held * k),
    residualSd: model.residualVariance.slice(0, held).map((r) => Math.sqrt(r * horizonScale)),
    exposure: Float64Array.from(exposure),
    pinned: shockDriver < held ? { driver: shockDriver, logReturn } : null,
    ...(shift === null ? {} : { residualMean: shift.residual.slice(0, held) }),
  };
  return { scenario, conditioning };
}

export interface PreparedStressTest {
  /** What the simulation (reference or kernel) runs. */
  readonly scenario: Scenario;
  readonly simulation: SimulationOptions;
  readonly nlv: number;
  /** The facts of each position of `results`, in their order, for the reporting step (§14, §15). */
  readonly facts: readonly PositionFacts[];
  /** Turns a simulation of `scenario` into the spec's object. */
  finish(result: SimulationResult): StressTestResult;
}

interface NormalisedStressTest extends NormalisedCommon {
  horizon: number | null;
  shock: string;
  magnitude: number;
  confidence: Confidence;
}

function normalise(request: StressTestRequest): NormalisedStressTest {
  const common = normaliseCommon(request);
  const horizon = request.horizon === undefined ? 5 : request.horizon;
  if (horizon !== null) checkHorizon(horizon);
  const shock = request.shock ?? 'IND:SPX';
  if (typeof shock !== 'string' || shock === '') throw new CalcInputError('shock', 'must be a symbol.');
  const { magnitude } = request;
  if (typeof magnitude !== 'number' || !Number.isFinite(magnitude)) {
    throw new CalcInputError('magnitude', 'must be a finite decimal.');
  }
  // A price cannot fall by 100%; a rate or spread moves by magnitude × 100 points, either way (§12).
  if (!isLevelSeries(shock) && magnitude <= -1) {
    throw new CalcInputError('magnitude', 'must be a finite decimal greater than −1.');
  }
  const confidence = request.confidence ?? '95%';
  tailOf(confidence);
  return { ...common, horizon, shock, magnitude, confidence };
}

export function prepareStressTest(
  request: StressTestRequest,
  market: SeriesSource,
  options: CalcOptions = {},
): PreparedStressTest {
  const normalised = normalise(request);
  const distress = options.distress ?? true;
  const paths = resolvePaths(options);
  const seed = resolveSeed(options, { calculation: 'stress_test', request: normalised, paths, distress });
  const { shock, magnitude, sampling } = normalised;

  const shockRaw = market.get(shock);
  if (shockRaw === undefined) throw new CalcInputError('shock', `unknown symbol ${shock}.`);
  const prepared = preparePortfolio(normalised, market, [shock], distress);
  const { model, projection } = prepared;
  const shockDriver = prepared.driverIndex.get(shock);
  if (shockDriver === undefined) {
    throw new CalcInputError('shock', `${shock} has fewer than ${MIN_RETURNS} returns in the window.`);
  }

  const pi = model.distressProbability;
  const sigma = Math.sqrt(
    (1 - pi) * driverVariance(model, shockDriver, 'calm') +
      pi * driverVariance(model, shockDriver, 'distress'),
  );
  const levels = isLevelSeries(shock);
  const horizon = normalised.horizon ?? searchHorizon(sigma, magnitude, sampling, levels);
  const range = dynamicRange(sigma, horizon, sampling, levels);
  const extrapolated = magnitude < range[0] || magnitude > range[1];
  const moves = extremeMoves(toDaySeries(shock, shockRaw), prepared.window.calendar.anchorDay, horizon);
  // No h-day move in the history at all: nothing vouches for the magnitude.
  const outOfRange = moves === null || magnitude < moves.worst || magnitude > moves.best;

  // c of §7: ln(1 + magnitude), or magnitude × 100 points for a rate or spread (§12).
  const logReturn = fromMagnitude(magnitude, levels);
  const shift = meanShift(normalised, prepared, horizon);
  // A forecast over a vanishing number of years can shift the shocked security's mean past what the
  // conditioning squares (its surprise c − m_s, §13): refused naming it, not as "no volatility".
  const shockShift = shift === null ? [] : [...shift.factor, shift.residual[shockDriver]!];
  if (!shockShift.every((x) => Number.isFinite(x * x))) {
    throw blameOverflow([...forecastSuspects(normalised, prepared, horizon), ...bookSuspects(prepared)]);
  }
  const conditional = conditionalScenario(
    model,
    prepared.driverExposure,
    shockDriver,
    logReturn,
    horizon / sampling,
    shift,
  );
  const { conditioning } = conditional;
  const { lines, positions } = bookLines(prepared, horizon);
  const scenario: Scenario = { ...conditional.scenario, ...(lines === undefined ? {} : { lines }) };
  const { k } = model;
  const simulation: SimulationOptions = {
    paths,
    seed,
    tail: tailOf(normalised.confidence),
    ...(options.onAllocate ? { onAllocate: options.onAllocate } : {}),
  };
  // The closure below keeps only what it needs, not the window of returns.
  const { nlv, unmapped, book } = prepared;
  // A figure past ±1.8e308: the moves the shock implies, the money summed over the paths, the
  // fractions of NLV, or a forecast's shift, whichever weighs the most decades.
  const suspects = [
    shockSuspect(model, prepared.heldDrivers, shockDriver, conditioning.mean, normalised, horizon),
    ...bookSuspects({ book, nlv }, '', Math.log10(paths)),
    ...forecastSuspects(normalised, prepared, horizon),
  ];
  const projectionLevels = projection.map(isLevelSeries);
  const labels = [...projection, RESIDUAL];
  const asValues = (values: Float64Array, i: number): ProjectionValue[] =>
    labels.map((label, j) => ({ projection: label, value: values[i * (k + 1) + j]! }));

  return {
    scenario,
    simulation,
    nlv,
    facts: prepared.facts,
    finish(result) {
      const ev = positionComponents(scenario, result.ev, positions, nlv);
      const cvarNeg = positionComponents(scenario, result.cvarNeg, positions, nlv);
      const cvarPos = positionComponents(scenario, result.cvarPos, positions, nlv);
      return checkFigures<StressTestResult>(
        {
          magnitude,
          extrapolated,
          out_of_range: outOfRange,
          implied_magnitudes: Array.from(conditioning.mean, (m, j) => toMagnitude(m, projectionLevels[j]!)),
          results: book.map((position, i) => ({
            id: position.id,
            ev: asValues(ev, i),
            cvar_neg: asValues(cvarNeg, i),
            cvar_pos: asValues(cvarPos, i),
          })),
          dynamic_range: [range[0], range[1]],
          unmapped_tickers: [...unmapped],
          implied_horizon: horizon,
        },
        () => blameOverflow(suspects),
      );
    },
  };
}

/**
 * The magnitude as a suspect: the largest log-return it implies at the horizon, of a projection
 * (its implied magnitude is e^x − 1) or a held security (its P&L scales by e^x), in decades.
 */
function shockSuspect(
  model: FactorModel,
  held: number,
  shockDriver: number,
  factorMean: Float64Array,
  request: Pick<NormalisedStressTest, 'magnitude' | 'shock'>,
  horizon: number,
): Suspect {
  const { k, beta } = model;
  let largest = 0;
  for (const m of factorMean) largest = Math.max(largest, Math.abs(m));
  for (let d = 0; d < held; d++) {
    let x = 0;
    for (let j = 0; j < k; j++) x += beta[d * k + j]! * factorMean[j]!;
    largest = Math.max(largest, Math.abs(d === shockDriver ? fromMagnitude(request.magnitude, false) : x));
  }
  return {
    parameter: 'magnitude',
    decades: largest / Math.LN10,
    why: `a shock of ${request.magnitude} to ${request.shock} implies log-returns of up to ${largest.toPrecision(3)} over ${horizon} days`,
  };
}

/** The stress test on the reference simulation. */
export function runStressTest(
  request: StressTestRequest,
  market: SeriesSource,
  options: CalcOptions = {},
): StressTestResult {
  const prepared = prepareStressTest(request, market, options);
  return prepared.finish(simulate(prepared.scenario, prepared.simulation));
}
