/**
 * The request parameters both calculations share (spec "Calculations", named as on the wire so an
 * endpoint passes its validated body through), their limits and defaults, and their normalisation:
 * every value the model relies on checked before any market data is read (methodology §6, §13).
 */
import { checkSurface, type VolatilitySurface } from './black-scholes';
import { CalcInputError } from './input-error';
import { type Sampling } from './market-data';
import { type Seed, seedFromNumber, seedFromRequest } from './random';

/** Tail fraction by confidence (§6). */
export const CONFIDENCE_TAILS = {
  '1sigma': 0.158655,
  '2sigma': 0.0227501,
  '3sigma': 0.0013499,
  '85%': 0.15,
  '90%': 0.1,
  '95%': 0.05,
  '97%': 0.03,
  '99%': 0.01,
} as const;
export type Confidence = keyof typeof CONFIDENCE_TAILS;

/** The word that names the residual in every result array. */
export const RESIDUAL = 'residual';

/** One element of an `ev`, `cvar_neg`, `cvar_pos` or `mctr` array. */
export interface ProjectionValue {
  /** A projection symbol or `residual`. */
  projection: string;
  value: number;
}

export const MAX_PROJECTIONS = 15;
/**
 * The largest relative move of a price the API takes, as a stress (§18) or a shock (§7): +10,000%, a
 * price 101 times its own. Far past any market's, and small enough that a book's P&L under it stays
 * a finite number unless the book is itself near the range of a double (figures.ts).
 */
export const MAX_RELATIVE_MOVE = 100;
/** A RATE:/SPREAD: shock moves its level by magnitude × 100 points (§12): at most 1,000 either way. */
export const MAX_LEVEL_SHOCK = 10;
export const MAX_HORIZON = 1260;
export const DEFAULT_PATHS = 100_000;

/** A position as the spec's Security object has it; fields the model does not use are ignored. */
export interface CalcSecurity {
  readonly id: string;
  readonly symbol: string;
  readonly quantity: number;
  /** Unit price in local currency; null = the series' latest price on or before the date. */
  readonly market_price?: number | null;
  readonly multiplier?: number | null;
  /** Units of base currency per unit of the position's currency; null = the FX rate at the date (§9). */
  readonly fx_rate?: number | null;
  /** ISO 4217 currency of the position (§9); null = the master's, else the base currency. */
  readonly currency?: string | null;
  /** Free text the reporting step can group and filter by (§14, §15). */
  readonly label?: string | null;
}

/** §13: a view on one symbol's price at `years` from now, as a discrete distribution of targets. */
export interface Forecast {
  readonly symbol: string;
  readonly years: number;
  readonly targets: readonly number[];
  readonly probabilities: readonly number[];
}

export interface CommonRequest {
  readonly securities: readonly CalcSecurity[];
  /** ISO 4217 code every exposure and result is expressed in (§9); default USD. */
  readonly base_currency?: string | null;
  /** §11: volatility surfaces by underlying; an option on another underlying uses its implied or EWMA vol. */
  readonly volatility_surface?: readonly VolatilitySurface[] | null;
  /** §13: views that shift the mean of a symbol's invariant. */
  readonly forecasts?: readonly Forecast[] | null;
  /** §13: centre every driver on its EWMA mean invariant (default false: zero-centred). */
  readonly drift?: boolean | null;
  /** `YYYYMMDD`; null = the latest date of the first projection's series. */
  readonly date?: string | null;
  readonly nlv?: number | null;
  readonly sampling?: Sampling;
  readonly projection?: readonly string[];
  readonly volatility_half_life?: number;
  readonly correlation_half_life?: number;
}

/** Internal options: never part of the public request. */
export interface CalcOptions {
  /** Default 100,000. */
  readonly paths?: number;
  /** Default: derived from the request (`seedFromRequest`). */
  readonly seed?: Seed | number;
  /** false switches the distress regime off (π_d = 0), for closed-form tests. Default true. */
  readonly distress?: boolean;
  readonly onAllocate?: (what: string, elements: number) => void;
}

export interface NormalisedCommon {
  securities: CalcSecurity[];
  base_currency: string;
  date: string | null;
  nlv: number | null;
  sampling: Sampling;
  projection: string[];
  volatility_half_life: number;
  correlation_half_life: number;
  volatility_surface: VolatilitySurface[];
  forecasts: Forecast[];
  drift: boolean;
}

/** Refuses `parameter` with `message` (a 400 naming it) unless `condition` holds. */
export function check(condition: boolean, parameter: string, message: string): asserts condition {
  if (!condition) throw new CalcInputError(parameter, message);
}

function optionalFinite(value: unknown, parameter: string): number | null {
  if (value === undefined || value === null) return null;
  check(typeof value === 'number' && Number.isFinite(value), parameter, 'must be a finite number or null.');
  return value;
}

function optionalCurrency(value: unknown, parameter: string): string | null {
  if (value === undefined || value === null) return null;
  check(typeof value === 'string' && /^[A-Za-z]{3}$/.test(value), parameter, 'must be an ISO 4217 code.');
  return value.toUpperCase();
}

function optionalLabel(value: unknown, parameter: string): string | null {
  if (value === undefined || value === null) return null;
  check(typeof value === 'string', parameter, 'must be a string.');
  return value;
}

function numberArray(value: unknown, parameter: string): number[] {
  check(
    Array.isArray(value) && value.every((x) => typeof x === 'number' && Number.isFinite(x)),
    parameter,
    'must be an array of finite numbers.',
  );
  return [...(value as number[])];
}

/** Probabilities may miss 1 by this much (§13). */
export const PROBABILITY_TOLERANCE = 1e-9;

/** §13: lengths match, targets > 0, probabilities ≥ 0 summing to 1 within 1e-9, years > 0. */
function normaliseForecasts(value: unknown): Forecast[] {
  if (value === undefined || value === null) return [];
  check(Array.isArray(value), 'forecasts', 'must be an array of forecast objects.');
  return (value as unknown[]).map((raw, i) => {
    const where = `forecasts[${i}]`;
    check(raw !== null && typeof raw === 'object' && !Array.isArray(raw), where, 'must be an object.');
    const item = raw as Record<string, unknown>;
    check(typeof item.symbol === 'string' && item.symbol !== '', `${where}.symbol`, 'must be a symbol.');
    check(
      typeof item.years === 'number' && Number.isFinite(item.years) && item.years > 0,
      `${where}.years`,
      'must be a number of years greater than 0.',
    );
    const targets = numberArray(item.targets, `${where}.targets`);
    check(targets.length >= 1, `${where}.targets`, 'must hold at least one target price.');
    check(
      targets.every((t) => t > 0),
      `${where}.targets`,
      'must be prices greater than 0.',
    );
    const probabilities = numberArray(item.probabilities, `${where}.probabilities`);
    check(
      probabilities.length === targets.length,
      `${where}.probabilities`,
      `must hold one probability per target (${targets.length}), got ${probabilities.length}.`,
    );
    check(
      probabilities.every((p) => p >= 0),
      `${where}.probabilities`,
      'must be probabilities ≥ 0.',
    );
    const total = probabilities.reduce((a, b) => a + b, 0);
    check(
      Math.abs(total - 1) <= PROBABILITY_TOLERANCE,
      `${where}.probabilities`,
      `must sum to 1 (within ${PROBABILITY_TOLERANCE}), got ${total}.`,
    );
    return { symbol: item.symbol, years: item.years, targets, probabilities };
  });
}

function normaliseSurfaces(value: unknown): VolatilitySurface[] {
  if (value === undefined || value === null) return [];
  check(Array.isArray(value), 'volatility_surface', 'must be an array of surfaces.');
  const seen = new Set<string>();
  return (value as unknown[]).map((raw, i) => {
    const where = `volatility_surface[${i}]`;
    check(raw !== null && typeof raw === 'object' && !Array.isArray(raw), where, 'must be an object.');
    const item = raw as Record<string, unknown>;
    check(typeof item.symbol === 'string' && item.symbol !== '', `${where}.symbol`, 'must be a symbol.');
    check(!seen.has(item.symbol), `${where}.symbol`, `repeats ${item.symbol}.`);
    seen.add(item.symbol);
    const rows = item.volatilities;
    check(Array.isArray(rows), `${where}.volatilities`, 'must be a 2-D array of volatilities.');
    const surface: VolatilitySurface = {
      symbol: item.symbol,
      time_to_expiration: numberArray(item.time_to_expiration, `${where}.time_to_expiration`),
      moneyness: numberArray(item.moneyness, `${where}.moneyness`),
      volatilities: (rows as unknown[]).map((row, r) => numberArray(row, `${where}.volatilities[${r}]`)),
    };
    checkSurface(surface, where);
    return surface;
  });
}

/** Defaults applied and every value the model relies on checked. The endpoint checks the spec's enums. */
export function normaliseCommon(request: CommonRequest): NormalisedCommon {
  check(Array.isArray(request.securities), 'securities', 'must be an array.');
  const ids = new Set<string>();
  const securities = request.securities.map((security, i) => {
    const where = `securities[${i}]`;
    check(
      typeof security.id === 'string' && security.id !== '',
      `${where}.id`,
      'must be a non-empty string.',
    );
    check(!ids.has(security.id), `${where}.id`, `duplicates ${security.id}.`);
    ids.add(security.id);
    check(
      typeof security.symbol === 'string' && security.symbol !== '',
      `${where}.symbol`,
      'must be a non-empty string.',
    );
    check(Number.isFinite(security.quantity), `${where}.quantity`, 'must be a finite number.');
    const marketPrice = optionalFinite(security.market_price, `${where}.market_price`);
    const multiplier = optionalFinite(security.multiplier, `${where}.multiplier`);
    const fxRate = optionalFinite(security.fx_rate, `${where}.fx_rate`);
    check(fxRate === null || fxRate > 0, `${where}.fx_rate`, 'must be greater than 0.');
    return {
      id: security.id,
      symbol: security.symbol,
      quantity: security.quantity,
      market_price: marketPrice,
      multiplier,
      fx_rate: fxRate,
      currency: optionalCurrency(security.currency, `${where}.currency`),
      label: optionalLabel(security.label, `${where}.label`),
    };
  });
  const baseCurrency = optionalCurrency(request.base_currency, 'base_currency') ?? 'USD';
  const drift = request.drift ?? false;
  check(typeof drift === 'boolean', 'drift', 'must be true or false.');
  const date = request.date ?? null;
  check(date === null || /^\d{8}$/.test(date), 'date', 'must be YYYYMMDD or null.');
  const sampling = request.sampling ?? 1;
  check(sampling === 1 || sampling === 5, 'sampling', 'must be 1 or 5.');
  const projection = [...(request.projection ?? ['IND:SPX'])];
  check(
    projection.length >= 1 && projection.length <= MAX_PROJECTIONS,
    'projection',
    `must hold 1 to ${MAX_PROJECTIONS} symbols.`,
  );
  check(new Set(projection).size === projection.length, 'projection', 'holds a symbol twice.');
  const volatilityHalfLife = request.volatility_half_life ?? 2;
  const correlationHalfLife = request.correlation_half_life ?? 6;
  for (const [name, value] of [
    ['volatility_half_life', volatilityHalfLife],
    ['correlation_half_life', correlationHalfLife],
  ] as const) {
    check(Number.isFinite(value) && value >= 0, name, 'must be a number of months ≥ 0.');
  }
  return {
    securities,
    base_currency: baseCurrency,
    date,
    nlv: optionalFinite(request.nlv, 'nlv'),
    sampling,
    projection,
    volatility_half_life: volatilityHalfLife,
    correlation_half_life: correlationHalfLife,
    volatility_surface: normaliseSurfaces(request.volatility_surface),
    forecasts: normaliseForecasts(request.forecasts),
    drift,
  };
}

export function checkHorizon(horizon: unknown): number {
  check(
    typeof horizon === 'number' && Number.isInteger(horizon) && horizon >= 1 && horizon <= MAX_HORIZON,
    'horizon',
    `must be an integer number of days from 1 to ${MAX_HORIZON}.`,
  );
  return horizon;
}

export function tailOf(confidence: unknown): number {
  check(
    typeof confidence === 'string' && Object.hasOwn(CONFIDENCE_TAILS, confidence),
    'confidence',
    `must be one of ${Object.keys(CONFIDENCE_TAILS).join(', ')}.`,
  );
  return CONFIDENCE_TAILS[confidence as Confidence];
}

export function resolvePaths(options: CalcOptions): number {
  const paths = options.paths ?? DEFAULT_PATHS;
  check(Number.isInteger(paths) && paths >= 1 && paths <= 0xffffffff, 'paths', 'must be a positive integer.');
  return paths;
}

/** An explicit seed wins; otherwise the hash of the canonical request (same request, same numbers). */
export function resolveSeed(options: CalcOptions, canonicalRequest: unknown): Seed {
  if (options.seed === undefined) return seedFromRequest(canonicalRequest);
  return typeof options.seed === 'number' ? seedFromNumber(options.seed) : options.seed;
}
