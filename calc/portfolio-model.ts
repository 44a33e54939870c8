/**
 * What both calculations share: the request parameters (spec "Calculations", named as on the wire so
 * an endpoint passes its validated body through), their defaults, and the step from securities and
 * series to a factor model with exposures (methodology §1–§3, §6).
 */
import { type DriverInput, estimateFactorModel, type FactorModel } from './estimation';
import { CalcInputError } from './input-error';
import { instrumentTypeOf, positionFacts, type ReferenceSource } from './instruments';
import { loadWindow, type MarketWindow, MIN_RETURNS, type Sampling, type SeriesSource } from './market-data';
import { type Seed, seedFromNumber, seedFromRequest } from './random';
import type { PositionFacts } from './position-facts';
import type { PositionExposure } from './simulation';

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
  /** To the base currency; null = 1 (FX risk itself comes with a later issue). */
  readonly fx_rate?: number | null;
  /** ISO 4217 currency of the position (§9); null = the master's, else the base currency. */
  readonly currency?: string | null;
  /** Free text the reporting step can group and filter by (§14, §15). */
  readonly label?: string | null;
}

export interface CommonRequest {
  readonly securities: readonly CalcSecurity[];
  /** ISO 4217 code every exposure and result is expressed in (§9); default USD. */
  readonly base_currency?: string | null;
  /**
   * §11 and §13 parameters the model does not compute yet: accepted in the types so the endpoint
   * can pass its body through, refused by `normaliseCommon` when set (never silently ignored).
   */
  readonly volatility_surface?: unknown;
  readonly forecasts?: unknown;
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
}

function check(condition: boolean, parameter: string, message: string): asserts condition {
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
  // Not yet modelled (§11 surfaces, §13 forecasts and drift): an answer that ignored them would be wrong.
  for (const [name, value] of [
    ['volatility_surface', request.volatility_surface],
    ['forecasts', request.forecasts],
  ] as const) {
    check(value === undefined || value === null, name, 'is not computed by the model yet.');
  }
  check(
    request.drift === undefined || request.drift === null || request.drift === false,
    'drift',
    'is not computed by the model yet.',
  );
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

export interface PreparedPortfolio {
  readonly window: MarketWindow;
  readonly projection: readonly string[];
  readonly model: FactorModel;
  /** Symbols of the model's drivers: first the `heldDrivers` held ones, then the extra ones asked for. */
  readonly driverSymbols: readonly string[];
  readonly driverIndex: ReadonlyMap<string, number>;
  readonly heldDrivers: number;
  /** Mapped positions in request order. */
  readonly positions: readonly (PositionExposure & { readonly id: string })[];
  /** What the reporting step (§14, §15) reads of each mapped position, in the order of `positions`. */
  readonly facts: readonly PositionFacts[];
  /** Σ v of each held driver. */
  readonly driverExposure: Float64Array;
  readonly nlv: number;
  readonly unmapped: readonly string[];
}

/** Instrument types whose invariant the model does not implement yet (§11 options, §12 absolute changes). */
const NOT_MODELLED_YET: ReadonlySet<string> = new Set([
  'EQUITY_OPTION',
  'FUTURE_OPTION',
  'FX_OPTION',
  'FX_FORWARD',
  'RATE',
  'SPREAD',
  'CASH',
  'SWAP',
]);

/**
 * Positions the model would get wrong today are refused, never priced as if they were stocks: options,
 * rates, spreads and cash (§9, §11, §12), and positions in a currency other than the base currency,
 * whose FX risk (§10) is not simulated yet.
 */
function refuseUnmodelled(common: NormalisedCommon, market: SeriesSource): void {
  const reference = market as ReferenceSource;
  common.securities.forEach((security, i) => {
    const attributes = reference.attributes?.(security.symbol) ?? {};
    const type = instrumentTypeOf(security.symbol, attributes);
    check(
      !NOT_MODELLED_YET.has(type),
      `securities[${i}].symbol`,
      `${security.symbol} is a ${type} position, which the model does not compute yet.`,
    );
    const master =
      typeof attributes.currency === 'string' && attributes.currency !== '' ? attributes.currency : null;
    const currency = (security.currency ?? master ?? common.base_currency).toUpperCase();
    check(
      currency === common.base_currency,
      `securities[${i}].currency`,
      `${security.symbol} is in ${currency}, not the base currency ${common.base_currency}: FX risk is not computed yet.`,
    );
  });
}

/**
 * Window returns → factor model for every held symbol (plus `extraSymbols`, e.g. the shock), and the
 * exposures. Unmapped securities drop out; a projection without enough data is an input error.
 */
export function preparePortfolio(
  common: NormalisedCommon,
  market: SeriesSource,
  extraSymbols: readonly string[],
  distress: boolean,
): PreparedPortfolio {
  const { projection } = common;
  refuseUnmodelled(common, market);
  const held = common.securities.map((s) => s.symbol);
  const window = loadWindow(market, [...projection, ...held, ...extraSymbols], common.date, common.sampling);
  for (const symbol of projection) {
    check(
      window.returns.has(symbol),
      'projection',
      `${symbol} has no price series or fewer than ${MIN_RETURNS} returns in the window.`,
    );
  }
  const unmappedSet = new Set(window.unmapped);
  const driverSymbols: string[] = [];
  const driverIndex = new Map<string, number>();
  const addDriver = (symbol: string): void => {
    if (driverIndex.has(symbol) || unmappedSet.has(symbol)) return;
    driverIndex.set(symbol, driverSymbols.length);
    driverSymbols.push(symbol);
  };
  held.forEach(addDriver);
  const heldDrivers = driverSymbols.length;
  extraSymbols.forEach(addDriver);

  const factorPosition = new Map(projection.map((symbol, j) => [symbol, j]));
  const drivers: DriverInput[] = driverSymbols.map((symbol) => {
    const factor = factorPosition.get(symbol);
    return factor !== undefined ? { factor } : { returns: window.returns.get(symbol)! };
  });
  const model = estimateFactorModel({
    factorReturns: projection.map((symbol) => window.returns.get(symbol)!),
    drivers,
    sampling: common.sampling,
    volatilityHalfLife: common.volatility_half_life,
    correlationHalfLife: common.correlation_half_life,
    distress,
  });

  const positions: (PositionExposure & { id: string })[] = [];
  const modelled: Parameters<typeof positionFacts>[0][number][] = [];
  const driverExposure = new Float64Array(heldDrivers);
  let valued = 0;
  for (const security of common.securities) {
    const price = security.market_price ?? window.latestPrices.get(security.symbol) ?? NaN;
    const exposure = security.quantity * price * (security.multiplier ?? 1) * (security.fx_rate ?? 1);
    // An unmapped position still has a value when it has a price: it counts in the NLV.
    if (Number.isFinite(exposure)) valued += exposure;
    const driver = driverIndex.get(security.symbol);
    if (driver === undefined) continue;
    check(Number.isFinite(exposure), 'securities', `${security.id} has no price to value it.`);
    positions.push({ id: security.id, driver, exposure });
    modelled.push({ ...security, exposure });
    driverExposure[driver]! += exposure;
  }
  const nlv = common.nlv ?? valued;
  check(Number.isFinite(nlv) && nlv !== 0, 'nlv', 'is zero: supply nlv to express results as its fractions.');
  const unmapped = [...new Set(held.filter((symbol) => unmappedSet.has(symbol)))];
  return {
    window,
    projection,
    model,
    driverSymbols,
    driverIndex,
    heldDrivers,
    positions,
    facts: positionFacts(modelled, market, common.base_currency, window.calendar.anchorDay),
    driverExposure,
    nlv,
    unmapped,
  };
}
