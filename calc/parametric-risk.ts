/**
 * Parametric risk attribution (methodology §17): volatility, VaR and CVaR of L/NLV from the factor
 * model's mixture covariance (§3, §8) on the linear (delta-adjusted) exposures, with no simulation,
 * and their exact Euler split by position, projection and residual.
 */
import { type ReportOptions, reportResults, sumValues } from './aggregation';
import { normalCdf } from './black-scholes';
import { WHOLE_BOOK } from './exposure';
import { CalcInputError } from './input-error';
import { MIN_RETURNS, type SeriesSource } from './market-data';
import { blameOverflow, checkFigures } from './figures';
import { bookSuspects, preparePortfolio, type PreparedPortfolio } from './portfolio-model';
import {
  type CalcOptions,
  type CommonRequest,
  type Confidence,
  normaliseCommon,
  type NormalisedCommon,
  type ProjectionValue,
  RESIDUAL,
  tailOf,
} from './calculation-request';
import { inverseNormalCdf } from './random';
import { TRADING_DAYS_PER_YEAR, volatilityAttribution } from './risk-attribution';

export const MIN_HISTORICAL_DAYS = MIN_RETURNS;
export const MAX_HISTORICAL_DAYS = 5040;

export interface ParametricRequest extends CommonRequest {
  /** Default `95%`. */
  readonly confidence?: Confidence;
  /** Window length in observations (60–5040); default the §1 window. */
  readonly historical_days?: number | null;
  /** λ in (0, 1]; replaces both half-lives. */
  readonly exponential_decay?: number | null;
  /** Default true; changes nothing yet (no instrument has a cash-flow schedule). */
  readonly use_cashflow?: boolean | null;
}

export interface ParametricElement {
  id: string;
  volatility: ProjectionValue[];
  var: ProjectionValue[];
  cvar: ProjectionValue[];
}

/** The `parametric_risk_attribution` object of §17. Losses are negative. */
export interface ParametricResult {
  unmapped_tickers: string[];
  /** Annualised σ_p·√(252/s). */
  volatility: number;
  /** −z_c·σ_p over one sampling interval. */
  var: number;
  /** −φ(z_c)/(1−c)·σ_p over one sampling interval. */
  cvar: number;
  confidence: Confidence;
  results: ParametricElement[];
  notes: string[];
}

/**
 * z_c = Φ⁻¹(c) and the CVaR multiple φ(z_c)/(1 − c) of a confidence (§17). The sigma levels are
 * c = Φ(1), Φ(2), Φ(3), so z is exactly 1, 2, 3; the percentages are c itself.
 */
export function confidenceLevel(confidence: Confidence): { c: number; z: number; cvarMultiple: number } {
  tailOf(confidence);
  const sigma = /^([123])sigma$/.exec(confidence);
  let c: number;
  let z: number;
  let tail: number;
  if (sigma) {
    z = Number(sigma[1]);
    c = normalCdf(z);
    // Φ(−z), not 1 − Φ(z): keeps the tail's digits at 3 sigma.
    tail = normalCdf(-z);
  } else {
    c = Number.parseFloat(confidence) / 100;
    z = inverseNormalCdf(c);
    tail = 1 - c;
  }
  const density = Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);
  return { c, z, cvarMultiple: density / tail };
}

interface NormalisedParametric {
  common: NormalisedCommon;
  confidence: Confidence;
  historicalDays: number | undefined;
  decay: number | undefined;
  useCashflow: boolean;
}

function normalise(request: ParametricRequest): NormalisedParametric {
  const common = normaliseCommon(request);
  const confidence = request.confidence ?? '95%';
  tailOf(confidence);
  const days = request.historical_days ?? undefined;
  if (
    days !== undefined &&
    !(Number.isInteger(days) && days >= MIN_HISTORICAL_DAYS && days <= MAX_HISTORICAL_DAYS)
  ) {
    throw new CalcInputError(
      'historical_days',
      `must be a whole number of observations from ${MIN_HISTORICAL_DAYS} to ${MAX_HISTORICAL_DAYS}.`,
    );
  }
  const decay = request.exponential_decay ?? undefined;
  if (decay !== undefined && !(typeof decay === 'number' && decay > 0 && decay <= 1)) {
    throw new CalcInputError(
      'exponential_decay',
      'must be a number greater than 0 and at most 1 (1: equal weights).',
    );
  }
  const useCashflow = request.use_cashflow ?? true;
  if (typeof useCashflow !== 'boolean') throw new CalcInputError('use_cashflow', 'must be true or false.');
  return { common, confidence, historicalDays: days, decay, useCashflow };
}

export const CASHFLOW_NOTE =
  'use_cashflow changes nothing yet: no instrument of the model has a cash-flow schedule, so every position is mapped by its own price series.';

/**
 * The Euler split of σ_p per interval (§17), scaled into the three measures. `volatility` is the §8
 * analytic vol on the same model, so it equals `risk_attribution` with `risk_measure: vol`.
 */
export function parametricOf(
  prepared: PreparedPortfolio,
  sampling: number,
  confidence: Confidence,
  report: ReportOptions = WHOLE_BOOK,
): Omit<ParametricResult, 'notes'> {
  const { model, book, nlv, driverExposure } = prepared;
  const linear = book.map((p) => ({ driver: p.primary, fx: p.fx, exposure: p.linear }));
  const vol = volatilityAttribution(model, linear, driverExposure, nlv, sampling);
  const root = Math.sqrt(TRADING_DAYS_PER_YEAR / sampling);
  const { z, cvarMultiple } = confidenceLevel(confidence);
  const varScale = -z / root;
  const cvarScale = -cvarMultiple / root;
  const labels = [...prepared.projection, RESIDUAL];
  const width = labels.length;
  const measure = (i: number, scale: number) =>
    labels.map((projection, j) => ({ projection, value: vol.values[i * width + j]! * scale }));
  const perPosition = book.map((position, i) => ({
    id: position.id,
    volatility: measure(i, 1),
    var: measure(i, varScale),
    cvar: measure(i, cvarScale),
  }));
  const results = reportResults(perPosition, prepared.facts, report, (id, members) => ({
    id,
    volatility: sumValues(members.map((m) => m.volatility)),
    var: sumValues(members.map((m) => m.var)),
    cvar: sumValues(members.map((m) => m.cvar)),
  }));
  return checkFigures(
    {
      unmapped_tickers: [...prepared.unmapped],
      volatility: vol.portfolio,
      var: vol.portfolio * varScale,
      cvar: vol.portfolio * cvarScale,
      confidence,
      results,
    },
    () => blameOverflow(bookSuspects(prepared)),
  );
}

/** The prepared book of §17: the factor model on the request's window and weights. */
export function prepareParametric(
  request: ParametricRequest,
  market: SeriesSource,
  options: CalcOptions = {},
): { normalised: NormalisedParametric; prepared: PreparedPortfolio } {
  const normalised = normalise(request);
  const prepared = preparePortfolio(normalised.common, market, [], options.distress ?? true, {
    ...(normalised.historicalDays === undefined ? {} : { windowReturns: normalised.historicalDays }),
    ...(normalised.decay === undefined ? {} : { decay: normalised.decay }),
  });
  return { normalised, prepared };
}

export function runParametricRiskAttribution(
  request: ParametricRequest,
  market: SeriesSource,
  options: CalcOptions = {},
  report: ReportOptions = WHOLE_BOOK,
): ParametricResult {
  const { normalised, prepared } = prepareParametric(request, market, options);
  return {
    ...parametricOf(prepared, normalised.common.sampling, normalised.confidence, report),
    notes: [CASHFLOW_NOTE],
  };
}
