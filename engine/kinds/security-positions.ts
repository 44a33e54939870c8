import type { Database } from '../platform/database';
import { InvalidInput } from '../platform/errors';

export const SECURITY_STATUSES = ['OK', 'ERROR', 'UNHEALTHY'] as const;
export const SECURITIES_MAX = 250;
export const SECURITIES_MAX_WITH_NLV = 3000;

export interface Security {
  id: string;
  symbol: string;
  quantity: number;
  label: string;
  cost_price: number | null;
  market_price: number | null;
  currency: string | null;
  fx_rate: number | null;
  multiplier: number | null;
  unrealized_pl: number | null;
  unrealized_pl_in_base: number | null;
  isin: string | null;
  status: (typeof SECURITY_STATUSES)[number];
  exchange: string | null;
  name: string | null;
  extra_data: Record<string, unknown> | null;
}

const NUMBER_FIELDS = [
  'cost_price',
  'market_price',
  'fx_rate',
  'multiplier',
  'unrealized_pl',
  'unrealized_pl_in_base',
] as const;

function optionalNumber(value: unknown, where: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new InvalidInput(`${where} must be a number.`);
  return value;
}

function optionalString(value: unknown, where: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw new InvalidInput(`${where} must be a string.`);
  return value;
}

function checkCurrency(value: unknown, where: string): string {
  if (typeof value !== 'string' || !/^[A-Z]{3}$/.test(value)) {
    throw new InvalidInput(`${where} must be a 3-letter ISO 4217 currency code.`);
  }
  return value;
}

/**
 * A position as a request schema accepted it (SecurityInput, StoredSecurityInput), or as a stored
 * portfolio holds it: `id`, `symbol` and `quantity`, every other field optional or null.
 */
export type PositionInput = Pick<Security, 'id' | 'symbol' | 'quantity'> & {
  readonly [K in Exclude<keyof Security, 'id' | 'symbol' | 'quantity'>]?: Security[K] | null;
};

/** At most 250 positions, or 3000 when `nlv` is supplied (the limit follows nlv: a rule across fields). */
function checkCount(count: number, nlv: number | null): void {
  const limit = nlv === null ? SECURITIES_MAX : SECURITIES_MAX_WITH_NLV;
  if (count > limit) {
    throw new InvalidInput(
      nlv === null
        ? `At most ${SECURITIES_MAX} securities are allowed without nlv (up to ${SECURITIES_MAX_WITH_NLV} with nlv), got ${count}.`
        : `At most ${SECURITIES_MAX_WITH_NLV} securities are allowed, got ${count}.`,
    );
  }
}

function checkDistinctId(seen: Set<string>, id: string, index: number): void {
  if (seen.has(id)) throw new InvalidInput(`securities[${index}].id "${id}" is used by another security.`);
  seen.add(id);
}

/** The position with every field the spec defaults filled in, and nothing else. */
function position(item: PositionInput): Security {
  return {
    id: item.id,
    symbol: item.symbol,
    quantity: item.quantity,
    label: item.label ?? '',
    cost_price: item.cost_price ?? null,
    market_price: item.market_price ?? null,
    currency: item.currency ?? null,
    fx_rate: item.fx_rate ?? null,
    multiplier: item.multiplier ?? null,
    unrealized_pl: item.unrealized_pl ?? null,
    unrealized_pl_in_base: item.unrealized_pl_in_base ?? null,
    isin: item.isin ?? null,
    status: item.status ?? 'OK',
    exchange: item.exchange ?? null,
    name: item.name ?? null,
    extra_data: item.extra_data ?? null,
  };
}

/**
 * The positions of a book whose fields a schema has checked: what no schema states is checked here
 * (the limit that follows `nlv`, ids that differ), and defaults are filled, unknown keys dropped.
 */
export function positionsOf(securities: readonly PositionInput[], nlv: number | null): Security[] {
  checkCount(securities.length, nlv);
  const seen = new Set<string>();
  return securities.map((item, index) => {
    checkDistinctId(seen, item.id, index);
    return position(item);
  });
}

/**
 * Validates a list of security positions field by field, then as positionsOf: `id`, `symbol`,
 * `quantity` required; defaults filled; unknown keys dropped; at most 250 positions, or 3000 when
 * `nlv` is supplied.
 */
export function checkSecurities(value: unknown, nlv: number | null): Security[] {
  if (!Array.isArray(value)) throw new InvalidInput('securities must be an array of security objects.');
  checkCount(value.length, nlv);
  const seen = new Set<string>();
  return value.map((raw, index) => {
    const where = `securities[${index}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw))
      throw new InvalidInput(`${where} must be an object.`);
    const item = raw as Record<string, unknown>;
    if (typeof item.id !== 'string' || item.id === '')
      throw new InvalidInput(`${where}.id is required (a string).`);
    checkDistinctId(seen, item.id, index);
    if (typeof item.symbol !== 'string' || item.symbol === '') {
      throw new InvalidInput(`${where}.symbol is required (a string).`);
    }
    if (typeof item.quantity !== 'number' || !Number.isFinite(item.quantity)) {
      throw new InvalidInput(`${where}.quantity is required (a number).`);
    }
    const status = item.status ?? 'OK';
    if (!(SECURITY_STATUSES as readonly unknown[]).includes(status)) {
      throw new InvalidInput(`${where}.status must be one of ${SECURITY_STATUSES.join(', ')}.`);
    }
    const isin = optionalString(item.isin, `${where}.isin`);
    if (isin !== null && !/^[A-Za-z0-9]{12}$/.test(isin)) {
      throw new InvalidInput(`${where}.isin must be 12 letters or digits.`);
    }
    const currency = optionalString(item.currency, `${where}.currency`);
    if (currency !== null) checkCurrency(currency, `${where}.currency`);
    const extra = item.extra_data ?? null;
    if (extra !== null && (typeof extra !== 'object' || Array.isArray(extra))) {
      throw new InvalidInput(`${where}.extra_data must be an object.`);
    }
    const label = optionalString(item.label, `${where}.label`);
    const exchange = optionalString(item.exchange, `${where}.exchange`);
    const name = optionalString(item.name, `${where}.name`);
    const numbers = Object.fromEntries(
      NUMBER_FIELDS.map((field) => [field, optionalNumber(item[field], `${where}.${field}`)]),
    );
    return position({
      id: item.id,
      symbol: item.symbol,
      quantity: item.quantity,
      label,
      currency,
      isin,
      status: status as Security['status'],
      exchange,
      name,
      extra_data: extra as Record<string, unknown> | null,
      ...numbers,
    });
  });
}

/** Fills each security's `name` from the securities master when the symbol is known. */
export async function fillSecurityNames(db: Database, securities: Security[]): Promise<Security[]> {
  const symbols = [...new Set(securities.filter((s) => s.name === null).map((s) => s.symbol))];
  if (symbols.length === 0) return securities;
  const rows = (await db('securities_master')
    .whereIn('symbol', symbols)
    .whereNotNull('name')
    .select('symbol', 'name')) as Array<{
    symbol: string;
    name: string;
  }>;
  const names = new Map(rows.map((row) => [row.symbol, row.name]));
  return securities.map((s) =>
    s.name === null && names.has(s.symbol) ? { ...s, name: names.get(s.symbol)! } : s,
  );
}
