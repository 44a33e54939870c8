/**
 * The step from securities and series to a factor model with exposures (methodology §1–§3): classify
 * each position, load its market window and FX route, estimate the model, price options (§11).
 * The request it starts from is normalised in calculation-request.ts.
 */
import {
  blackScholes,
  blackScholesDelta,
  impliedVolatility,
  surfaceVolatility,
  type VolatilitySurface,
} from './black-scholes';
import { type DriverInput, driverVariance, estimateFactorModel, type FactorModel } from './estimation';
import {
  defaultMultiplier,
  fxRateAt,
  instrumentTypeOf,
  marginTraded,
  type ModelledPosition,
  type OptionSymbol,
  parseOptionSymbol,
  positionFacts,
  quantityIsAmount,
  type ReferenceSource,
} from './instruments';
import { CALL, LINEAR, PUT, type ScenarioLines } from './kernels/line-pricing';
import {
  countPresent,
  dayNumber,
  loadWindow,
  type MarketWindow,
  MIN_RETURNS,
  remember,
  type SeriesSource,
} from './market-data';
import type { InstrumentType, PositionFacts } from './position-facts';
import type { PositionExposure } from './simulation';
import { check, type CalcSecurity, type NormalisedCommon } from './calculation-request';
import { decadesOf, OVERFLOW, overflowError, type Suspect } from './figures';
import { CalcInputError } from './input-error';

/** An option position's Black–Scholes terms at the calculation date (§11). */
export interface OptionTerms {
  readonly right: 'C' | 'P';
  /** Underlying price S. */
  readonly spot: number;
  readonly strike: number;
  /** (expiry − date) in calendar days / 365, at least 0. */
  readonly years: number;
  readonly volatility: number;
  /** Where σ came from. */
  readonly volatilitySource: 'volatility_surface' | 'market_price' | 'ewma';
  /** P0 = BS(S, K, T, σ), or the market price when σ was implied from it. */
  readonly price: number;
  /** Δ_BS at the date. */
  readonly delta: number;
}

/** A mapped position as the model prices it. */
export interface BookPosition {
  readonly id: string;
  /** Its index in the request's securities (errors name `securities[index]`). */
  readonly index: number;
  /** Driver of the security (an option's underlying), or −1 for cash. */
  readonly primary: number;
  /** FX driver CCY→base (§10), or −1 in the base currency. */
  readonly fx: number;
  /** v_i in base currency: quantity × price × multiplier × fx (quantity × fx for amounts, §9). */
  readonly value: number;
  /** Scale on its line: v_i, or q·m·fx for an option. */
  readonly scale: number;
  /** Linear exposure for the analytic vol (§8): v_i, or the delta-adjusted q·m·fx·Δ·S of an option. */
  readonly linear: number;
  readonly option: OptionTerms | null;
}

export interface PreparedPortfolio {
  readonly window: MarketWindow;
  readonly projection: readonly string[];
  readonly model: FactorModel;
  /**
   * Symbols of the model's drivers: first the `heldDrivers` the book needs (its securities, option
   * underlyings and FX drivers, named `FX:CCYBASE` even when computed by inversion or through USD),
   * then the extra ones asked for.
   */
  readonly driverSymbols: readonly string[];
  readonly driverIndex: ReadonlyMap<string, number>;
  readonly heldDrivers: number;
  /** Mapped positions in request order. */
  readonly book: readonly BookPosition[];
  /** What the reporting step (§14, §15) reads of each mapped position, in the order of `book`. */
  readonly facts: readonly PositionFacts[];
  /** Σ of the linear exposures touching each held driver (a foreign position touches two). */
  readonly driverExposure: Float64Array;
  readonly nlv: number;
  readonly unmapped: readonly string[];
  /** The calculation date as a day number. */
  readonly anchorDay: number;
}

/** Instrument types the methodology gives no repricing for: refused, never priced as a stock. */
const NOT_MODELLED: ReadonlyMap<string, string> = new Map([
  ['RATE', 'a rate level is a shock or projection (§12), not a position with a value'],
  ['SPREAD', 'a spread level is a shock or projection (§12), not a position with a value'],
  ['SWAP', 'swaps have no repricing in the methodology'],
  ['FX_FORWARD', 'FX forwards have no repricing in the methodology'],
]);

/** What a security is, before any market data (§9). */
export interface Classified {
  readonly type: InstrumentType;
  readonly currency: string;
  readonly option: OptionSymbol | null;
  /** Symbol of its driver (itself, or an option's underlying); null for cash. */
  readonly driverSymbol: string | null;
}

/** §9's classification of `securities[i]`; a position the model cannot price is refused naming it. */
export function classify(security: CalcSecurity, i: number, base: string, market: SeriesSource): Classified {
  const reference = market as ReferenceSource;
  const attributes = reference.attributes?.(security.symbol) ?? {};
  const type = instrumentTypeOf(security.symbol, attributes);
  const refused = NOT_MODELLED.get(type);
  check(
    refused === undefined,
    `securities[${i}].symbol`,
    `${security.symbol} is a ${type} position: ${refused}.`,
  );
  const isOption = type === 'EQUITY_OPTION' || type === 'FUTURE_OPTION' || type === 'FX_OPTION';
  const option = isOption ? parseOptionSymbol(security.symbol) : null;
  check(
    !isOption || option !== null,
    `securities[${i}].symbol`,
    `${security.symbol} is a ${type} position but not of the form "UNDERLYING YYYYMMDD C|P<strike>".`,
  );
  let cash: string | null = null;
  if (type === 'CASH') {
    cash = security.symbol.slice(security.symbol.indexOf(':') + 1).toUpperCase();
    check(/^[A-Z]{3}$/.test(cash), `securities[${i}].symbol`, 'a cash position is CASH:<ISO 4217 code>.');
  }
  const master =
    typeof attributes.currency === 'string' && /^[A-Za-z]{3}$/.test(attributes.currency)
      ? attributes.currency.toUpperCase()
      : null;
  // §9: the position's currency, else the master's, else the base; cash is in the currency it names.
  const currency = security.currency ?? cash ?? master ?? base;
  return {
    type,
    currency,
    option,
    driverSymbol: type === 'CASH' ? null : (option?.underlying ?? security.symbol),
  };
}

/** The pairs whose series give CCY→base: direct, inverse, and both legs through USD (§9). */
export function fxRouteSymbols(currency: string, base: string): string[] {
  return [
    `FX:${currency}${base}`,
    `FX:${base}${currency}`,
    `FX:${currency}USD`,
    `FX:USD${currency}`,
    `FX:USD${base}`,
    `FX:${base}USD`,
  ];
}

/**
 * Window log-returns of the rate CCY→base (§9, §10): `FX:CCYBASE`, else the negated returns of
 * `FX:BASECCY`, else the sum of the two legs through USD (each direct or negated). `returnsOf` gives
 * a pair's window returns when it has enough of them; the sum through USD needs `minPresent`. Null
 * when no route has enough returns.
 */
export function fxRouteReturns(
  returnsOf: (symbol: string) => Float64Array | undefined,
  currency: string,
  base: string,
  minPresent: number = MIN_RETURNS,
): Float64Array | null {
  const leg = (from: string, to: string): Float64Array | null => {
    if (from === to) return null;
    const direct = returnsOf(`FX:${from}${to}`);
    if (direct !== undefined) return direct;
    const inverse = returnsOf(`FX:${to}${from}`);
    return inverse === undefined ? null : inverse.map((r) => -r);
  };
  const single = leg(currency, base);
  if (single !== null) return single;
  if (currency === 'USD' || base === 'USD') return null;
  const toUsd = leg(currency, 'USD');
  const fromUsd = leg('USD', base);
  if (toUsd === null || fromUsd === null) return null;
  const sum = toUsd.map((r, t) => r + fromUsd[t]!);
  return countPresent(sum) >= minPresent ? sum : null;
}

/** Estimation choices beyond the common request: parametric `historical_days` and `exponential_decay` (§17). */
export interface EstimationChoices {
  /** Window length in observations, replacing the §1 window. */
  readonly windowReturns?: number;
  /** λ replacing both half-lives. */
  readonly decay?: number;
}

/**
 * Window returns → factor model for every driver the book needs (plus `extraSymbols`, e.g. the
 * shock), and each position's value, line and linear exposure (§9–§11). A position whose driver, FX
 * driver or option underlying lacks data is listed in `unmapped`; a projection without enough data
 * is an input error.
 */
export function preparePortfolio(
  common: NormalisedCommon,
  market: SeriesSource,
  extraSymbols: readonly string[],
  distress: boolean,
  estimation: EstimationChoices = {},
): PreparedPortfolio {
  const { projection, base_currency: base } = common;
  const classified = common.securities.map((security, i) => classify(security, i, base, market));
  const foreign = [...new Set(classified.map((c) => c.currency).filter((c) => c !== base))];
  const symbols = [
    ...projection,
    ...classified.flatMap((c) => (c.driverSymbol === null ? [] : [c.driverSymbol])),
    ...foreign.flatMap((currency) => fxRouteSymbols(currency, base)),
    ...extraSymbols,
  ];
  // Derived from the series alone: kept in the market's memo under every other input (exact reuse).
  const windowKey = JSON.stringify([
    'window',
    [...new Set(symbols)],
    common.date,
    common.sampling,
    estimation.windowReturns ?? null,
  ]);
  const window = remember(market, windowKey, () =>
    loadWindow(market, symbols, common.date, common.sampling, estimation.windowReturns),
  );
  for (const symbol of projection) {
    check(
      window.returns.has(symbol),
      'projection',
      `${symbol} has no price series or fewer than ${MIN_RETURNS} returns in the window.`,
    );
  }
  const anchorDay = window.calendar.anchorDay;
  const fxSymbol = (currency: string) => `FX:${currency}${base}`;
  const driverReturns = new Map(window.returns);
  for (const currency of foreign) {
    const returns = fxRouteReturns((symbol) => window.returns.get(symbol), currency, base);
    if (returns !== null) driverReturns.set(fxSymbol(currency), returns);
    else driverReturns.delete(fxSymbol(currency));
  }

  const driverSymbols: string[] = [];
  const driverIndex = new Map<string, number>();
  const addDriver = (symbol: string): number => {
    const known = driverIndex.get(symbol);
    if (known !== undefined) return known;
    driverIndex.set(symbol, driverSymbols.length);
    driverSymbols.push(symbol);
    return driverSymbols.length - 1;
  };

  // Which positions can be priced: their driver and FX driver have returns, and a price and rate exist.
  interface Pending {
    readonly index: number;
    readonly primary: number;
    readonly fx: number;
    readonly fxRate: number;
    readonly multiplier: number;
  }
  const pending: Pending[] = [];
  const unmapped: string[] = [];
  let valued = 0;
  common.securities.forEach((security, i) => {
    const c = classified[i]!;
    const fxRate =
      security.fx_rate ?? (c.currency === base ? 1 : (fxRateAt(market, c.currency, base, anchorDay) ?? NaN));
    const multiplier = security.multiplier ?? defaultMultiplier(c.type);
    const hasDriver = c.driverSymbol === null || driverReturns.has(c.driverSymbol);
    const hasFx = c.currency === base || driverReturns.has(fxSymbol(c.currency));
    const spot = c.driverSymbol === null ? NaN : (window.latestPrices.get(c.driverSymbol) ?? NaN);
    if (!hasDriver || !hasFx || !Number.isFinite(fxRate) || (c.option !== null && !Number.isFinite(spot))) {
      unmapped.push(security.symbol);
      // An unmapped position still has a value when it has a price and a rate: it counts in the NLV.
      const price = quantityIsAmount(c.type)
        ? 1
        : c.option !== null
          ? (security.market_price ?? NaN)
          : (security.market_price ?? spot);
      const value = security.quantity * price * (quantityIsAmount(c.type) ? 1 : multiplier) * fxRate;
      if (Number.isFinite(value) && !marginTraded(c.type)) valued += value;
      return;
    }
    const primary = c.driverSymbol === null ? -1 : addDriver(c.driverSymbol);
    const fx = c.currency === base ? -1 : addDriver(fxSymbol(c.currency));
    pending.push({ index: i, primary, fx, fxRate, multiplier });
  });
  const heldDrivers = driverSymbols.length;
  for (const symbol of extraSymbols) if (window.returns.has(symbol)) addDriver(symbol);

  const factorPosition = new Map(projection.map((symbol, j) => [symbol, j]));
  const drivers: DriverInput[] = driverSymbols.map((symbol) => {
    const factor = factorPosition.get(symbol);
    return factor !== undefined ? { factor } : { returns: driverReturns.get(symbol)! };
  });
  const modelKey = JSON.stringify([
    'model',
    windowKey,
    base,
    projection,
    driverSymbols,
    common.sampling,
    common.volatility_half_life,
    common.correlation_half_life,
    distress,
    estimation.decay ?? null,
  ]);
  const model = remember(market, modelKey, () =>
    estimateFactorModel({
      factorReturns: projection.map((symbol) => window.returns.get(symbol)!),
      drivers,
      sampling: common.sampling,
      volatilityHalfLife: common.volatility_half_life,
      correlationHalfLife: common.correlation_half_life,
      distress,
      ...(estimation.decay === undefined ? {} : { decay: estimation.decay }),
    }),
  );

  const surfaces = new Map(common.volatility_surface.map((surface) => [surface.symbol, surface]));
  const book: BookPosition[] = [];
  const modelled: ModelledPosition[] = [];
  const driverExposure = new Float64Array(heldDrivers);
  for (const { index, primary, fx, fxRate, multiplier } of pending) {
    const security = common.securities[index]!;
    const c = classified[index]!;
    const where = `securities[${index}]`;
    let value: number;
    let scale: number;
    let linear: number;
    let option: OptionTerms | null = null;
    if (c.option !== null) {
      option = optionTerms(c.option, security, where, {
        spot: window.latestPrices.get(c.driverSymbol!)!,
        anchorDay,
        surface: surfaces.get(c.option.underlying),
        ewma: () => Math.sqrt((driverVariance(model, primary, 'calm') * TRADING_DAYS) / common.sampling),
      });
      scale = security.quantity * multiplier * fxRate;
      value = scale * option.price;
      linear = scale * option.delta * option.spot;
    } else if (quantityIsAmount(c.type)) {
      value = scale = linear = security.quantity * fxRate;
    } else {
      const price = security.market_price ?? window.latestPrices.get(c.driverSymbol!) ?? NaN;
      value = scale = linear = security.quantity * price * multiplier * fxRate;
    }
    check(Number.isFinite(value), 'securities', `${security.id} has no price to value it.`);
    // Finite inputs whose product is not: a value of its own, past the range of a double.
    if (!Number.isFinite(linear)) {
      throw overflowError(
        where,
        `${security.id}'s delta-adjusted exposure (quantity × multiplier × fx_rate × Δ × S) is ${linear}`,
      );
    }
    if (!marginTraded(c.type)) valued += value;
    if (primary >= 0) driverExposure[primary]! += linear;
    if (fx >= 0) driverExposure[fx]! += linear;
    book.push({ id: security.id, index, primary, fx, value, scale, linear, option });
    modelled.push({ ...security, currency: c.currency, exposure: value, deltaExposure: linear });
  }
  if (common.nlv === null && !Number.isFinite(valued)) {
    throw new CalcInputError(
      'nlv',
      `the cash-settled positions' values add up past ±1.8e308, so the figures would overflow: supply nlv.`,
    );
  }
  const nlv = common.nlv ?? valued;
  check(Number.isFinite(nlv) && nlv !== 0, 'nlv', 'is zero: supply nlv to express results as its fractions.');
  checkFractions(book, nlv, common.nlv !== null);
  return {
    window,
    projection,
    model,
    driverSymbols,
    driverIndex,
    heldDrivers,
    book,
    facts: positionFacts(modelled, market, base, anchorDay),
    driverExposure,
    nlv,
    unmapped: [...new Set(unmapped)],
    anchorDay,
  };
}

/** The largest of a position's sizes in base currency: its value and its delta-adjusted exposure. */
function sizeOf(position: BookPosition): number {
  return Math.max(Math.abs(position.value), Math.abs(position.linear));
}

/** `x` rounded up to 3 significant digits, as a message shows a bound. */
function upTo3(x: number): string {
  const rounded = Number(x.toPrecision(3));
  return String(rounded >= x ? rounded : Number((x * (1 + 5e-3)).toPrecision(3)));
}

/**
 * Every figure is a fraction of the NLV: an NLV so small that the positions' fractions of it add up
 * past ±1.8e308 is refused naming nlv and the least it can be for this book.
 */
function checkFractions(book: readonly BookPosition[], nlv: number, supplied: boolean): void {
  // Σ |v_i| / |NLV| bounds every fraction, and every sum of them (a group, long, short, gross).
  let fractions = 0;
  let least = 0;
  let largest = 0;
  for (const position of book) {
    fractions += sizeOf(position) / Math.abs(nlv);
    least += sizeOf(position) / Number.MAX_VALUE;
    largest = Math.max(largest, sizeOf(position));
  }
  if (Number.isFinite(fractions)) return;
  throw new CalcInputError(
    'nlv',
    supplied
      ? `${nlv} is too small for the positions' values (up to ${largest} in base currency): |nlv| must be at least ${upTo3(least)}, or as fractions of it ${OVERFLOW}.`
      : `the cash-settled positions' values net to ${nlv}, too small for their values (up to ${largest} in base currency): supply nlv of at least ${upTo3(least)} in size, or as fractions of it ${OVERFLOW}.`,
  );
}

/**
 * What a book contributes to a figure past ±1.8e308 (figures.ts, `blameOverflow`): its money, named
 * by its largest position (`extraMoneyDecades`: what the calculation multiplies the money by, e.g.
 * log10 of the paths it sums over), and its NLV, by the fractions of it. `prefix` names the book
 * (`portfolio1.`).
 */
export function bookSuspects(
  prepared: Pick<PreparedPortfolio, 'book' | 'nlv'>,
  prefix = '',
  extraMoneyDecades = 0,
): Suspect[] {
  let largest: BookPosition | null = null;
  let total = 0;
  for (const position of prepared.book) {
    total += sizeOf(position);
    if (largest === null || sizeOf(position) > sizeOf(largest)) largest = position;
  }
  if (largest === null) return [];
  const { nlv } = prepared;
  return [
    {
      parameter: `${prefix}securities[${largest.index}]`,
      decades: decadesOf(total) + extraMoneyDecades,
      why: `${largest.id} is worth ${largest.value} in base currency (delta-adjusted ${largest.linear}; quantity × price × multiplier × fx_rate), the book ${Number.isFinite(total) ? total : 'past ±1.8e308'} in all`,
    },
    {
      parameter: `${prefix}nlv`,
      decades: decadesOf(total / nlv),
      why: `${nlv} is small for positions worth ${Number.isFinite(total) ? total : 'past ±1.8e308'} in all`,
    },
  ];
}

/** Trading days per year: annualises an EWMA vol (§11) and turns a horizon into years (T_h). */
const TRADING_DAYS = 252;

/** σ and P0 of an option (§11): the surface, else implied from market_price, else the EWMA vol. */
function optionTerms(
  option: OptionSymbol,
  security: CalcSecurity,
  where: string,
  market: {
    spot: number;
    anchorDay: number;
    surface: VolatilitySurface | undefined;
    ewma: () => number;
  },
): OptionTerms {
  const { spot } = market;
  check(spot > 0, `${where}.symbol`, `${option.underlying} has no positive price to price the option on.`);
  const years = Math.max(dayNumber(option.expiry) - market.anchorDay, 0) / 365;
  let volatility: number;
  let source: OptionTerms['volatilitySource'];
  let price: number;
  if (market.surface !== undefined) {
    volatility = surfaceVolatility(market.surface, years, option.strike / spot);
    source = 'volatility_surface';
    price = blackScholes(option.right, spot, option.strike, years, volatility);
  } else if (security.market_price !== null && security.market_price !== undefined) {
    const implied = impliedVolatility(option.right, spot, option.strike, years, security.market_price);
    check(
      implied !== null,
      `${where}.market_price`,
      `${security.market_price} is outside the Black–Scholes bounds for ${security.symbol} (underlying at ${spot}); no volatility reproduces it.`,
    );
    volatility = implied;
    source = 'market_price';
    price = security.market_price;
  } else {
    volatility = market.ewma();
    source = 'ewma';
    price = blackScholes(option.right, spot, option.strike, years, volatility);
  }
  return {
    right: option.right,
    spot,
    strike: option.strike,
    years,
    volatility,
    volatilitySource: source,
    price,
    delta: blackScholesDelta(option.right, spot, option.strike, years, volatility),
  };
}

/**
 * The lines of a book at a horizon (§9–§11): positions with the same driver, FX driver and option
 * terms share a line. `positions[i].driver` is the line of `book[i]`, `exposure` its scale. A book of
 * base-currency linear positions needs no lines: each driver is its own line (`lines` undefined,
 * `positions[i].driver` its driver), which keeps the blocked per-driver kernels.
 */
export function bookLines(
  prepared: Pick<PreparedPortfolio, 'book'>,
  horizonDays: number,
): { lines: ScenarioLines | undefined; positions: PositionExposure[] } {
  if (prepared.book.every((p) => p.primary >= 0 && p.fx < 0 && p.option === null)) {
    return {
      lines: undefined,
      positions: prepared.book.map((p) => ({ driver: p.primary, exposure: p.scale })),
    };
  }
  const keys = new Map<string, number>();
  const primary: number[] = [];
  const fx: number[] = [];
  const exposure: number[] = [];
  const option: number[] = [];
  let anyOption = false;
  const positions = prepared.book.map((position) => {
    const terms = position.option;
    const later = terms === null ? 0 : Math.max(terms.years - horizonDays / TRADING_DAYS, 0);
    const row =
      terms === null
        ? [LINEAR, 0, 0, 0, 0, 0]
        : [terms.right === 'C' ? CALL : PUT, terms.spot, terms.strike, later, terms.volatility, terms.price];
    const key = `${position.primary}/${position.fx}/${row.join('/')}`;
    let line = keys.get(key);
    if (line === undefined) {
      line = primary.length;
      keys.set(key, line);
      primary.push(position.primary);
      fx.push(position.fx);
      exposure.push(0);
      option.push(...row);
      anyOption ||= terms !== null;
    }
    exposure[line]! += position.scale;
    return { driver: line, exposure: position.scale };
  });
  return {
    lines: {
      primary: Int32Array.from(primary),
      fx: Int32Array.from(fx),
      exposure: Float64Array.from(exposure),
      option: anyOption ? Float64Array.from(option) : null,
    },
    positions,
  };
}

/**
 * §13 at the horizon: with `drift`, the factors' mean is their EWMA mean invariant × h/s and each
 * driver's residual mean its EWMA mean less β·(factor mean), so x_d is centred on its own EWMA mean;
 * a forecast adds μ·(h/252)/years to its symbol's residual, μ = Σ p_k·ln(target_k / P0). Null when
 * neither is asked for (zero-centred). Covers every driver of the model, held or extra.
 */
export function meanShift(
  common: NormalisedCommon,
  prepared: Pick<PreparedPortfolio, 'model' | 'driverSymbols' | 'driverIndex' | 'window'>,
  horizonDays: number,
): { factor: Float64Array; residual: Float64Array } | null {
  const { model } = prepared;
  const { k } = model;
  const drivers = prepared.driverSymbols.length;
  const applies = common.forecasts.filter((f) => prepared.driverIndex.has(f.symbol));
  if (!common.drift && applies.length === 0) return null;
  const scale = horizonDays / common.sampling;
  const factor = new Float64Array(k);
  const residual = new Float64Array(drivers);
  if (common.drift) {
    const factorMean = model.factorMean ?? new Float64Array(k);
    const driverMean = model.driverMean ?? new Float64Array(drivers);
    for (let j = 0; j < k; j++) factor[j] = factorMean[j]! * scale;
    for (let d = 0; d < drivers; d++) {
      let systematic = 0;
      for (let j = 0; j < k; j++) systematic += model.beta[d * k + j]! * factorMean[j]!;
      residual[d] = (driverMean[d]! - systematic) * scale;
    }
  }
  common.forecasts.forEach((forecast, i) => {
    const d = prepared.driverIndex.get(forecast.symbol);
    if (d === undefined) return;
    const now = prepared.window.latestPrices.get(forecast.symbol) ?? NaN;
    check(now > 0, `forecasts[${i}].symbol`, `${forecast.symbol} has no price to measure the targets from.`);
    let mu = 0;
    forecast.targets.forEach((target, t) => (mu += forecast.probabilities[t]! * logRatio(target, now)));
    residual[d]! += (mu * (horizonDays / TRADING_DAYS)) / forecast.years;
  });
  return { factor, residual };
}

/**
 * ln(target / now), the same bits, except where the quotient leaves the range of a double (a target
 * of 5e-324 over a price of 130 is 0, whose log is −Infinity): there ln target − ln now.
 */
function logRatio(target: number, now: number): number {
  const ratio = target / now;
  return ratio >= Number.MIN_VALUE * 2 ** 52 && Number.isFinite(ratio)
    ? Math.log(ratio)
    : Math.log(target) - Math.log(now);
}

/**
 * What each forecast adds to its symbol's mean log-return at the horizon (§13), as a suspect of a
 * figure past ±1.8e308: e^x of a shift of x multiplies the P&L by x / ln 10 decades.
 */
export function forecastSuspects(
  common: Pick<NormalisedCommon, 'forecasts'>,
  prepared: Pick<PreparedPortfolio, 'driverIndex' | 'window'>,
  horizonDays: number,
): Suspect[] {
  return common.forecasts.flatMap((forecast, i) => {
    if (!prepared.driverIndex.has(forecast.symbol)) return [];
    const now = prepared.window.latestPrices.get(forecast.symbol) ?? NaN;
    let mu = 0;
    forecast.targets.forEach((target, t) => (mu += forecast.probabilities[t]! * logRatio(target, now)));
    const shift = (mu * (horizonDays / TRADING_DAYS)) / forecast.years;
    return [
      {
        parameter: `forecasts[${i}]`,
        decades: Math.abs(shift) / Math.LN10,
        why: `its targets over ${forecast.years} years shift ${forecast.symbol}'s log-return at the horizon by ${shift}`,
      },
    ];
  });
}
