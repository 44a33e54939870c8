/**
 * Risk attribution (methodology §8): each position's marginal contribution to total risk, split by
 * projection and residual, for `vol` (analytic Euler), `cvar` and `var` (the §6 decomposition on the
 * unconditional simulation). Every mctr array sums over all positions to the portfolio figure.
 */
import { type FactorModel, mixtureCovariance } from './estimation';
import { binaryScale, blameOverflow, checkFigures } from './figures';
import { CalcInputError } from './input-error';
import type { PositionFacts } from './position-facts';
import type { SeriesSource } from './market-data';
import { bookLines, bookSuspects, forecastSuspects, meanShift, preparePortfolio } from './portfolio-model';
import {
  type CalcOptions,
  checkHorizon,
  type CommonRequest,
  type Confidence,
  normaliseCommon,
  type NormalisedCommon,
  type ProjectionValue,
  RESIDUAL,
  resolvePaths,
  resolveSeed,
  tailOf,
} from './calculation-request';
import {
  type PathSetResult,
  type PositionExposure,
  positionComponents,
  type Scenario,
  simulate,
  type SimulationOptions,
  type SimulationResult,
  unconditionalScenario,
} from './simulation';

export type RiskMeasure = 'vol' | 'var' | 'cvar';
export const RISK_MEASURES: readonly RiskMeasure[] = ['vol', 'var', 'cvar'];
/** Observations per year for annualising (§8: × 252/s). */
export const TRADING_DAYS_PER_YEAR = 252;

export interface RiskAttributionRequest extends CommonRequest {
  /** Days; default 5 (used by var and cvar). */
  readonly horizon?: number;
  /** Default `vol`. */
  readonly risk_measure?: RiskMeasure;
  /** Tail for var and cvar; default `95%` (tail 5%). */
  readonly confidence?: Confidence;
}

/** The spec's `risk_attribution` object. */
export interface RiskAttributionResult {
  unmapped_tickers: string[];
  results: { id: string; mctr: ProjectionValue[] }[];
}

export interface VolatilityAttribution {
  /** Annualised volatility of L/NLV. */
  portfolio: number;
  /** Per position, k+1 Euler contributions summing to `portfolio`. */
  values: Float64Array;
}

/**
 * A position for the analytic vol: its driver (−1: none, e.g. cash), its FX driver (absent or −1: the
 * base currency) and its linear exposure (v_i; an option's delta-adjusted exposure).
 */
export interface LinearPosition extends PositionExposure {
  readonly fx?: number;
}

/**
 * Euler decomposition of σ_p, analytic from Σ_mix on the linear exposures. With b = Σ_d w_d·β_d the
 * portfolio's factor exposure (w_d the exposure of driver d), position i of driver d gets
 * v_i·β_dj·(Σ_mix·b)_j·a/(σ_p·NLV²) on projection j and v_i·w_d·r_d·a/(σ_p·NLV²) as residual, a = 252/s.
 * With one position per symbol the residual is the methodology's v_i²·r_i; positions sharing a symbol
 * share its residual, so its variance is (Σv)²·r and is split in proportion to v_i. A foreign
 * position (§10) moves with x_d + x_fx: it gets the sums over both drivers of these terms.
 *
 * The variance is in money² and NLV² divides it: the exposures and the NLV are first divided by
 * powers of two near their sizes (figures.ts, `binaryScale`) and the figures multiplied back, which
 * changes no bit of them, so a book worth 1e200 (or an NLV of 1e-200) squares nothing past the range
 * of a double. A figure that is itself past it is the caller's to refuse.
 */
export function volatilityAttribution(
  model: FactorModel,
  positions: readonly LinearPosition[],
  driverExposure: Float64Array,
  nlv: number,
  sampling: number,
): VolatilityAttribution {
  const { k, beta, residualVariance } = model;
  const annualise = TRADING_DAYS_PER_YEAR / sampling;
  const sigmaMix = mixtureCovariance(model);
  let largest = 0;
  for (const w of driverExposure) largest = Math.max(largest, Math.abs(w));
  for (const { exposure } of positions) largest = Math.max(largest, Math.abs(exposure));
  const money = binaryScale(largest);
  const unit = binaryScale(nlv);
  const scaledNlv = nlv / unit;
  const b = new Float64Array(k);
  driverExposure.forEach((w, d) => {
    for (let j = 0; j < k; j++) b[j]! += (w / money) * beta[d * k + j]!;
  });
  const sigmaB = new Float64Array(k);
  let variance = 0;
  for (let i = 0; i < k; i++) {
    for (let j = 0; j < k; j++) sigmaB[i]! += sigmaMix[i * k + j]! * b[j]!;
    variance += b[i]! * sigmaB[i]!;
  }
  driverExposure.forEach((w, d) => (variance += (w / money) * (w / money) * residualVariance[d]!));
  // σ_p and its parts come out divided by money / unit: multiplied back last, exactly.
  const ratio = money / unit;
  const back =
    ratio > 0 && Number.isFinite(ratio) ? (x: number) => x * ratio : (x: number) => (x / unit) * money;
  const scaled = Math.sqrt(variance * annualise) / Math.abs(scaledNlv);
  const portfolio = back(scaled);
  const values = new Float64Array(positions.length * (k + 1));
  if (portfolio === 0) return { portfolio, values };
  const scale = annualise / (scaled * scaledNlv * scaledNlv);
  positions.forEach(({ driver, exposure, fx = -1 }, i) => {
    const e = exposure / money;
    for (const d of [driver, fx]) {
      if (d < 0) continue;
      for (let j = 0; j < k; j++) values[i * (k + 1) + j]! += e * beta[d * k + j]! * sigmaB[j]! * scale;
      values[i * (k + 1) + k]! += e * (driverExposure[d]! / money) * residualVariance[d]! * scale;
    }
  });
  for (let i = 0; i < values.length; i++) values[i] = back(values[i]!);
  return { portfolio, values };
}

export type PreparedRiskAttribution = (
  | { readonly kind: 'analytic'; readonly portfolio: number; readonly result: RiskAttributionResult }
  | {
      readonly kind: 'simulation';
      readonly scenario: Scenario;
      readonly simulation: SimulationOptions;
      readonly nlv: number;
      /** The set whose components are the mctr: cvar_neg for cvar, the VaR band for var. */
      pick(result: SimulationResult): PathSetResult;
      finish(result: SimulationResult): RiskAttributionResult;
    }
) & {
  /** The facts of each position of `results`, in their order, for the reporting step (§14, §15). */
  readonly facts: readonly PositionFacts[];
};

interface NormalisedRiskAttribution extends NormalisedCommon {
  horizon: number;
  risk_measure: RiskMeasure;
  confidence: Confidence;
}

function normalise(request: RiskAttributionRequest): NormalisedRiskAttribution {
  const common = normaliseCommon(request);
  const horizon = checkHorizon(request.horizon ?? 5);
  const riskMeasure = request.risk_measure ?? 'vol';
  if (!RISK_MEASURES.includes(riskMeasure)) {
    throw new CalcInputError('risk_measure', `must be one of ${RISK_MEASURES.join(', ')}.`);
  }
  const confidence = request.confidence ?? '95%';
  tailOf(confidence);
  return {
    ...common,
    horizon,
    risk_measure: riskMeasure,
    confidence,
  };
}

export function prepareRiskAttribution(
  request: RiskAttributionRequest,
  market: SeriesSource,
  options: CalcOptions = {},
): PreparedRiskAttribution {
  const normalised = normalise(request);
  const distress = options.distress ?? true;
  const prepared = preparePortfolio(normalised, market, [], distress);
  // The closures below keep only what they need, not the window of returns.
  const { model, book, nlv, unmapped, driverExposure } = prepared;
  const labels = [...prepared.projection, RESIDUAL];
  const shape = (values: Float64Array): RiskAttributionResult => ({
    unmapped_tickers: [...unmapped],
    results: book.map((position, i) => ({
      id: position.id,
      mctr: labels.map((label, j) => ({ projection: label, value: values[i * labels.length + j]! })),
    })),
  });

  if (normalised.risk_measure === 'vol') {
    const linear = book.map((p) => ({ driver: p.primary, fx: p.fx, exposure: p.linear }));
    const vol = volatilityAttribution(model, linear, driverExposure, nlv, normalised.sampling);
    const result = checkFigures(shape(vol.values), () => blameOverflow(bookSuspects({ book, nlv })));
    return { kind: 'analytic', portfolio: vol.portfolio, result, facts: prepared.facts };
  }
  const paths = resolvePaths(options);
  const seed = resolveSeed(options, {
    calculation: 'risk_attribution',
    request: normalised,
    paths,
    distress,
  });
  const { lines, positions } = bookLines(prepared, normalised.horizon);
  const shift = meanShift(normalised, prepared, normalised.horizon);
  const base = unconditionalScenario(model, driverExposure, normalised.horizon / normalised.sampling);
  const scenario: Scenario = {
    ...base,
    ...(lines === undefined ? {} : { lines }),
    // §13: factor means shift every regime's f, residual means shift e.
    regimes:
      shift === null
        ? base.regimes
        : base.regimes.map((r) => ({ ...r, mean: r.mean.map((m, j) => m + shift.factor[j]!) })),
    ...(shift === null ? {} : { residualMean: shift.residual.slice(0, prepared.heldDrivers) }),
  };
  const isVar = normalised.risk_measure === 'var';
  const simulation: SimulationOptions = {
    paths,
    seed,
    tail: tailOf(normalised.confidence),
    varBand: isVar,
    ...(options.onAllocate ? { onAllocate: options.onAllocate } : {}),
  };
  const pick = (result: SimulationResult): PathSetResult => (isVar ? result.var! : result.cvarNeg);
  // A figure past ±1.8e308: the money summed over the paths, the fractions of NLV, or a forecast's shift.
  const suspects = [
    ...bookSuspects({ book, nlv }, '', Math.log10(paths)),
    ...forecastSuspects(normalised, prepared, normalised.horizon),
  ];
  return {
    kind: 'simulation',
    scenario,
    simulation,
    nlv,
    facts: prepared.facts,
    pick,
    finish: (result) =>
      checkFigures(shape(positionComponents(scenario, pick(result), positions, nlv)), () =>
        blameOverflow(suspects),
      ),
  };
}

/** Risk attribution on the reference simulation (or analytic for vol). */
export function runRiskAttribution(
  request: RiskAttributionRequest,
  market: SeriesSource,
  options: CalcOptions = {},
): RiskAttributionResult {
  const prepared = prepareRiskAttribution(request, market, options);
  if (prepared.kind === 'analytic') return prepared.result;
  return prepared.finish(simulate(prepared.scenario, prepared.simulation));
}
