/**
 * Sensitivities (methodology §18): each position's Black–Scholes Greek, per unit or as a notional in
 * base currency, and the P&L ÷ NLV of a full revaluation when each position's underlying moves by a
 * set of relative stresses. Options use the σ and T of §11 (surface, implied, else EWMA), so the
 * Greeks belong to the very prices the other calculations use.
 */
import { type ReportOptions, reportResults } from './aggregation';
import { reportedIds } from './filter';
import { blackScholes } from './black-scholes';
import { prepareBook, WHOLE_BOOK } from './exposure';
import { blackScholesGreeks, type Greeks, SENSITIVITY_TYPES, type SensitivityType } from './greeks';
import { CalcInputError } from './input-error';
import type { SeriesSource } from './market-data';
import { blameOverflow, checkFigures, decadesOf, overflowError } from './figures';
import { type BookPosition, bookSuspects, type PreparedPortfolio } from './portfolio-model';
import type { CalcOptions, CommonRequest } from './calculation-request';

export interface SensitivityRequest extends CommonRequest {
  /** Default `delta`. */
  readonly sensitivity_type?: SensitivityType;
  /** Default false: the per-unit Greek. */
  readonly compute_notional?: boolean;
}

/** The `sensitivity` object of §18. */
export interface SensitivityResult {
  unmapped_tickers: string[];
  sensitivity_type: SensitivityType;
  compute_notional: boolean;
  /** Per position or group; a group's value is null for per-unit Greeks (they do not add up). */
  results: { id: string; value: number | null }[];
  /** Sum of the reported notional values; null for per-unit Greeks. */
  total: number | null;
}

export interface UnderlyingStressRequest extends SensitivityRequest {
  /** 1 to 20 relative moves of each position's underlying, each > −1. */
  readonly stress_values: readonly number[];
}

export interface StressValue {
  stress: number;
  value: number;
}

/** The `underlying_stress_sensitivity` object of §18. */
export interface UnderlyingStressResult {
  unmapped_tickers: string[];
  results: { id: string; values: StressValue[] }[];
  /** Over the reported positions. */
  total: StressValue[];
}

export const MAX_STRESS_VALUES = 20;

/** A linear instrument's Greeks per unit: Δ = 1, the rest 0. */
const LINEAR_GREEKS: Greeks = { delta: 1, gamma: 0, vega: 0, theta: 0 };

export function positionGreeks(position: BookPosition): Greeks {
  const o = position.option;
  return o === null ? LINEAR_GREEKS : blackScholesGreeks(o.right, o.spot, o.strike, o.years, o.volatility);
}

/**
 * A Greek in base currency: q·m·fx × (Δ·S, the delta-notional; Γ·S²·0.01, the change of the
 * delta-notional for a 1 % move; vega; θ). A linear position's delta-notional is its value v_i.
 */
export function notionalGreek(position: BookPosition, type: SensitivityType): number {
  const o = position.option;
  if (o === null) return type === 'delta' ? position.linear : 0;
  const greeks = positionGreeks(position);
  const scale = position.scale;
  switch (type) {
    case 'delta':
      return scale * greeks.delta * o.spot;
    case 'gamma':
      return scale * greeks.gamma * o.spot * o.spot * 0.01;
    case 'vega':
      return scale * greeks.vega;
    case 'theta':
      return scale * greeks.theta;
  }
}

function checkType(value: unknown): SensitivityType {
  if (value === undefined || value === null) return 'delta';
  if (!SENSITIVITY_TYPES.includes(value as SensitivityType)) {
    throw new CalcInputError('sensitivity_type', `must be one of ${SENSITIVITY_TYPES.join(', ')}.`);
  }
  return value as SensitivityType;
}

function checkNotional(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw new CalcInputError('compute_notional', 'must be true or false.');
  return value;
}

export function sensitivityOf(
  prepared: PreparedPortfolio,
  type: SensitivityType,
  computeNotional: boolean,
  report: ReportOptions = WHOLE_BOOK,
): SensitivityResult {
  const perPosition: { id: string; value: number | null }[] = prepared.book.map((position) => ({
    id: position.id,
    value: computeNotional ? notionalGreek(position, type) : positionGreeks(position)[type],
  }));
  const results = reportResults(perPosition, prepared.facts, report, (id, members) => ({
    id,
    value: computeNotional ? members.reduce((sum, m) => sum + m.value!, 0) : null,
  }));
  let total: number | null = null;
  if (computeNotional) {
    // Position by position over the reported ones, so the total is the same for every aggregation.
    const reported = reportedIds(report.filter, prepared.facts);
    total = perPosition.reduce((sum, r) => (reported.has(r.id) ? sum + r.value! : sum), 0);
  }
  return checkFigures(
    {
      unmapped_tickers: [...prepared.unmapped],
      sensitivity_type: type,
      compute_notional: computeNotional,
      results,
      total,
    },
    () => greekBlame(prepared, perPosition, type, computeNotional),
  );
}

/**
 * A Greek past ±1.8e308 (a vanishing σ·√T makes Γ and θ grow without bound, a huge book its
 * notionals): the position whose own Greek is not finite, else the largest of those summed.
 */
function greekBlame(
  prepared: PreparedPortfolio,
  perPosition: readonly { value: number | null }[],
  type: SensitivityType,
  computeNotional: boolean,
): CalcInputError {
  let worst = 0;
  for (let i = 0; i < perPosition.length; i++) {
    const value = perPosition[i]!.value!;
    if (!Number.isFinite(value)) {
      worst = i;
      break;
    }
    if (Math.abs(value) > Math.abs(perPosition[worst]!.value!)) worst = i;
  }
  const position = prepared.book[worst]!;
  const value = perPosition[worst]!.value!;
  const o = position.option;
  const terms =
    o === null
      ? ''
      : ` (Black–Scholes at S = ${o.spot}, K = ${o.strike}, T = ${o.years} years, σ = ${o.volatility} from ${o.volatilitySource})`;
  const what = `${position.id}'s ${type}${computeNotional ? ' in base currency' : ' per unit'} is ${value}${terms}`;
  return overflowError(
    `securities[${position.index}]`,
    Number.isFinite(value) ? `${what}, and the positions' add up past ±1.8e308` : what,
  );
}

export function runSensitivity(
  request: SensitivityRequest,
  market: SeriesSource,
  options: CalcOptions = {},
  report: ReportOptions = WHOLE_BOOK,
): SensitivityResult {
  const type = checkType(request.sensitivity_type);
  const computeNotional = checkNotional(request.compute_notional);
  const { prepared } = prepareBook(request, market, options);
  return sensitivityOf(prepared, type, computeNotional, report);
}

export function checkStressValues(value: unknown): number[] {
  if (
    !Array.isArray(value) ||
    value.length < 1 ||
    value.length > MAX_STRESS_VALUES ||
    !value.every((s) => typeof s === 'number' && Number.isFinite(s) && s > -1)
  ) {
    throw new CalcInputError(
      'stress_values',
      `must hold 1 to ${MAX_STRESS_VALUES} relative moves, each a number greater than -1 (-0.1 for -10%).`,
    );
  }
  return [...(value as number[])];
}

/**
 * P&L of a full revaluation at S·(1 + s), everything else fixed. An option is repriced by
 * Black–Scholes at the same T and σ, against its Black–Scholes value at S (not its market price), so
 * a zero stress is exactly zero even when σ was implied from the price to 1e-10. A linear position
 * (stock, FX pair, fund, bond amount) moves v_i·s. Cash has no underlying price: 0.
 */
export function stressPnl(position: BookPosition, stress: number): number {
  const o = position.option;
  if (o !== null) {
    const now = blackScholes(o.right, o.spot, o.strike, o.years, o.volatility);
    const moved = blackScholes(o.right, o.spot * (1 + stress), o.strike, o.years, o.volatility);
    return position.scale * (moved - now);
  }
  if (position.primary < 0) return 0;
  return position.value * stress;
}

export function underlyingStressOf(
  prepared: PreparedPortfolio,
  stresses: readonly number[],
  report: ReportOptions = WHOLE_BOOK,
): UnderlyingStressResult {
  const perPosition = prepared.book.map((position) => ({
    id: position.id,
    // + 0: a short position's zero P&L is 0, not −0.
    values: stresses.map((stress) => ({ stress, value: stressPnl(position, stress) / prepared.nlv + 0 })),
  }));
  const sum = (id: string, members: readonly { values: StressValue[] }[]) => ({
    id,
    values: stresses.map((stress, j) => ({
      stress,
      value: members.reduce((total, m) => total + m.values[j]!.value, 0),
    })),
  });
  const results = reportResults(perPosition, prepared.facts, report, sum);
  const reported = reportedIds(report.filter, prepared.facts);
  return checkFigures(
    {
      unmapped_tickers: [...prepared.unmapped],
      results,
      total: sum(
        'total',
        perPosition.filter((p) => reported.has(p.id)),
      ).values,
    },
    (path) => stressBlame(prepared, stresses, Number(/(?:values|total)\[(\d+)\]/.exec(path)?.[1] ?? 0)),
  );
}

/**
 * A P&L past ±1.8e308: the stress, or the book when its money or its fractions of NLV weigh more.
 * Each position moves by at most |q·m·fx|·max(S·(1 + s), K) (its value × s when linear), so a stress
 * up to MAX / (2·max(C, C / |NLV|)) − 1 keeps every figure finite, C the sum of those sizes at s = 0.
 */
function stressBlame(prepared: PreparedPortfolio, stresses: readonly number[], j: number): CalcInputError {
  const stress = stresses[j]!;
  let size = 0;
  for (const position of prepared.book) {
    const o = position.option;
    if (o !== null) size += Math.abs(position.scale) * Math.max(o.spot, o.strike);
    else if (position.primary >= 0) size += Math.abs(position.value);
  }
  const bound = Number.MAX_VALUE / (2 * Math.max(size, size / Math.abs(prepared.nlv))) - 1;
  return blameOverflow([
    {
      parameter: `stress_values[${j}]`,
      decades: decadesOf(1 + Math.abs(stress)),
      why: `a move of ${stress} takes the P&L of positions worth ${size} in all past ±1.8e308; at most ${bound.toPrecision(3)} for this book`,
    },
    ...bookSuspects(prepared),
  ]);
}

export function runUnderlyingStressSensitivity(
  request: UnderlyingStressRequest,
  market: SeriesSource,
  options: CalcOptions = {},
  report: ReportOptions = WHOLE_BOOK,
): UnderlyingStressResult {
  checkType(request.sensitivity_type);
  checkNotional(request.compute_notional);
  const stresses = checkStressValues(request.stress_values);
  const { prepared } = prepareBook(request, market, options);
  return underlyingStressOf(prepared, stresses, report);
}
