/**
 * Symbology and the per-position facts the reporting step reads (methodology §9, §11, §14, §15).
 * What a symbol's form says about the instrument, and `positionFacts`, which the model fills once per
 * mapped position (calc/position-facts.ts is the contract with aggregation and filters).
 */
import { type DaySeries, latestPrice, type PriceSeries, type SeriesSource, toDaySeries } from './market-data';
import type { AttributeValue, InstrumentType, PositionFacts } from './position-facts';

/**
 * A series source that also knows the securities master and daily volumes. Both are optional: a
 * source without them gives every position empty attributes and a null adv20.
 */
export interface ReferenceSource extends SeriesSource {
  /** Securities-master attributes of a symbol, lower-case keys (currency, instrument_type, sector…). */
  attributes?(symbol: string): Readonly<Record<string, AttributeValue>> | undefined;
  /** Daily volumes of a symbol (`VOL:<symbol>` or a price file's volume column), undefined when none. */
  volume?(symbol: string): PriceSeries | undefined;
}

/** An equity option as its symbol spells it (§9): `AAPL 20230120 C150`. */
export interface OptionSymbol {
  readonly underlying: string;
  /** `YYYYMMDD`. */
  readonly expiry: string;
  readonly right: 'C' | 'P';
  readonly strike: number;
}

const OPTION_SYMBOL = /^(\S+) (\d{8}) ([CP])(\d+(?:\.\d+)?)$/;

/** The option a symbol names, or null when it is not of the option form. */
export function parseOptionSymbol(symbol: string): OptionSymbol | null {
  const match = OPTION_SYMBOL.exec(symbol);
  if (!match) return null;
  const strike = Number(match[4]);
  if (!(strike > 0)) return null;
  return { underlying: match[1]!, expiry: match[2]!, right: match[3] as 'C' | 'P', strike };
}

const PREFIX_TYPES: ReadonlyArray<[string, InstrumentType]> = [
  ['IND:', 'INDEX'],
  ['CUSTOM:', 'CUSTOM'],
  ['PRIVATE:', 'PRIVATE'],
  ['FX:', 'FX'],
  ['RATE:', 'RATE'],
  ['SPREAD:', 'SPREAD'],
  ['CASH:', 'CASH'],
];

const INSTRUMENT_TYPES: ReadonlySet<string> = new Set<InstrumentType>([
  'EQUITY',
  'ETF',
  'FUND',
  'INDEX',
  'CUSTOM',
  'PRIVATE',
  'FX',
  'FX_FORWARD',
  'FX_OPTION',
  'RATE',
  'SPREAD',
  'CASH',
  'EQUITY_OPTION',
  'FUTURE',
  'FUTURE_OPTION',
  'FIXED_INCOME',
  'SWAP',
  'OTHER',
]);

/**
 * §9: the master's `instrument_type` when it names one of ours (any case), else the symbol's form;
 * a plain ticker is an equity.
 */
export function instrumentTypeOf(
  symbol: string,
  attributes: Readonly<Record<string, AttributeValue>> = {},
): InstrumentType {
  const fromMaster = attributes.instrument_type;
  if (typeof fromMaster === 'string' && INSTRUMENT_TYPES.has(fromMaster.toUpperCase())) {
    return fromMaster.toUpperCase() as InstrumentType;
  }
  if (parseOptionSymbol(symbol) !== null) return 'EQUITY_OPTION';
  for (const [prefix, type] of PREFIX_TYPES) if (symbol.startsWith(prefix)) return type;
  return 'EQUITY';
}

/** §9: 100 for options, 1 otherwise, when the request gives no `multiplier`. */
export function defaultMultiplier(type: InstrumentType): number {
  return type === 'EQUITY_OPTION' || type === 'FUTURE_OPTION' || type === 'FX_OPTION' ? 100 : 1;
}

/** §9: instruments whose `quantity` is already an amount in their currency (v = quantity × fx). */
export function quantityIsAmount(type: InstrumentType): boolean {
  return type === 'FIXED_INCOME' || type === 'FUND' || type === 'SWAP' || type === 'CASH';
}

/** §9: margin-traded instruments count 0 towards a computed NLV. */
export function marginTraded(type: InstrumentType): boolean {
  return type === 'FUTURE' || type === 'FUTURE_OPTION' || type === 'SWAP' || type === 'FX_FORWARD';
}

/** Mean of the last 20 usable daily volumes on or before `day` (§15 `adv20`); null with none. */
export function averageDailyVolume(series: DaySeries, day: number, count = 20): number | null {
  let sum = 0;
  let n = 0;
  for (let i = series.days.length - 1; i >= 0 && n < count; i--) {
    if (series.days[i]! > day) continue;
    const v = series.values[i]!;
    if (!Number.isFinite(v) || v < 0) continue;
    sum += v;
    n++;
  }
  return n === 0 ? null : sum / n;
}

/** What the model knows of a mapped position when it builds its facts. */
export interface ModelledPosition {
  readonly id: string;
  readonly symbol: string;
  readonly quantity: number;
  readonly label?: string | null;
  /** The request's `currency`, if any. */
  readonly currency?: string | null;
  /** v_i in base currency, as the simulation uses it. */
  readonly exposure: number;
  /** Delta-adjusted exposure in base currency (§11); defaults to `exposure` (linear instruments). */
  readonly deltaExposure?: number;
}

/**
 * The facts of each position, in the order given. Attributes of an option are its underlying's
 * (§14); the currency is the request's, else the master's, else the base currency (§9).
 */
export function positionFacts(
  positions: readonly ModelledPosition[],
  source: SeriesSource | ReferenceSource,
  baseCurrency: string,
  anchorDay: number,
): PositionFacts[] {
  const reference = source as ReferenceSource;
  return positions.map((position) => {
    const option = parseOptionSymbol(position.symbol);
    const own = reference.attributes?.(position.symbol) ?? {};
    const attributes =
      option === null ? own : { ...(reference.attributes?.(option.underlying) ?? {}), ...own };
    const instrumentType = instrumentTypeOf(position.symbol, own);
    const masterCurrency = typeof own.currency === 'string' && own.currency !== '' ? own.currency : null;
    const cashCurrency = instrumentType === 'CASH' ? position.symbol.slice('CASH:'.length) : null;
    const volumes = reference.volume?.(option === null ? position.symbol : option.underlying);
    return {
      id: position.id,
      symbol: position.symbol,
      quantity: position.quantity,
      label: position.label ?? '',
      instrumentType,
      optionRight: option?.right ?? null,
      currency: (position.currency ?? cashCurrency ?? masterCurrency ?? baseCurrency).toUpperCase(),
      baseCurrency,
      exposure: position.exposure,
      deltaExposure: position.deltaExposure ?? position.exposure,
      attributes,
      adv20:
        volumes === undefined ? null : averageDailyVolume(toDaySeries(position.symbol, volumes), anchorDay),
    };
  });
}

/**
 * §9: units of `base` for one unit of `currency` at `day`: `FX:CCYBASE`, else 1 / `FX:BASECCY`, else
 * through USD (`FX:CCYUSD` × `FX:USDBASE`, each direct or inverted). Null when none of these has a
 * price on or before the day (the position then goes to unmapped_tickers). Same currency: 1.
 */
export function fxRateAt(source: SeriesSource, currency: string, base: string, day: number): number | null {
  if (currency === base) return 1;
  const direct = (from: string, to: string): number | null => {
    if (from === to) return 1;
    const quoted = source.get(`FX:${from}${to}`);
    if (quoted !== undefined) {
      const price = latestPrice(toDaySeries(`FX:${from}${to}`, quoted), day);
      if (Number.isFinite(price)) return price;
    }
    const inverse = source.get(`FX:${to}${from}`);
    if (inverse !== undefined) {
      const price = latestPrice(toDaySeries(`FX:${to}${from}`, inverse), day);
      if (Number.isFinite(price)) return 1 / price;
    }
    return null;
  };
  const rate = direct(currency, base);
  if (rate !== null) return rate;
  const toUsd = direct(currency, 'USD');
  const fromUsd = direct('USD', base);
  return toUsd === null || fromUsd === null ? null : toUsd * fromUsd;
}
