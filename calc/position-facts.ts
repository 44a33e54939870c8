/**
 * What the reporting step (aggregation §14, filter §15) needs to know of each position, computed once
 * by the model (§9–§11) and handed over with the per-position results. The model fills these; the
 * reporting step only reads them, so grouping and filtering never re-derive prices, currencies or deltas.
 */

/** Instrument types of §9 (from the securities master's `instrument_type`, else the symbol's form). */
export type InstrumentType =
  | 'EQUITY'
  | 'ETF'
  | 'FUND'
  | 'INDEX'
  | 'CUSTOM'
  | 'PRIVATE'
  | 'FX'
  | 'FX_FORWARD'
  | 'FX_OPTION'
  | 'RATE'
  | 'SPREAD'
  | 'CASH'
  | 'EQUITY_OPTION'
  | 'FUTURE'
  | 'FUTURE_OPTION'
  | 'FIXED_INCOME'
  | 'SWAP'
  | 'OTHER';

/** A securities-master attribute value (any extra CSV column is an attribute too). */
export type AttributeValue = string | number | null;

export interface PositionFacts {
  /** The position's `id` from the request. */
  readonly id: string;
  readonly symbol: string;
  readonly quantity: number;
  /** The request's `label` (`''` when none). */
  readonly label: string;
  readonly instrumentType: InstrumentType;
  /** `C` or `P` for options, else null. */
  readonly optionRight: 'C' | 'P' | null;
  /** ISO 4217 currency of the position (§9). */
  readonly currency: string;
  /** The calculation's base currency. */
  readonly baseCurrency: string;
  /** v_i in base currency (§9): what the position is worth; 0 for margin-traded positions' NLV share aside. */
  readonly exposure: number;
  /** Delta-adjusted exposure in base currency (§11); equal to `exposure` for linear instruments. */
  readonly deltaExposure: number;
  /** Securities-master attributes of the symbol (for an option: of its underlying), lower-case keys. */
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  /** Mean daily volume of the last 20 days up to the date (§15), or null when there is no volume series. */
  readonly adv20: number | null;
}
