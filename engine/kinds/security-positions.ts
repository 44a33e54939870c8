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

export function checkCurrency(value: unknown, where = 'base_currency'): string {
  if (typeof value !== 'string' || !/^[A-Z]{3}$/.test(value)) {
    throw new InvalidInput(`${where} must be a 3-letter ISO 4217 currency code.`);
  }
  return value;
}

export function checkNlv(value: unknown): number | null {
  return optionalNumber(value, 'nlv');
}

/**
 * Validates a list of security positions: `id`, `symbol`, `quantity` required; defaults filled;
 * unknown keys dropped; at most 250 positions, or 3000 when `nlv` is supplied.
 */
export function checkSecurities(value: unknown, nlv: number | null): Security[] {
  if (!Array.isArray(value)) throw new InvalidInput('securities must be an array of security objects.');
  const limit = nlv === null ? SECURITIES_MAX : SECURITIES_MAX_WITH_NLV;
  if (value.length > limit) {
    throw new InvalidInput(
      nlv === null
        ? `At most ${SECURITIES_MAX} securities are allowed without nlv (up to ${SECURITIES_MAX_WITH_NLV} with nlv), got ${value.length}.`
        : `At most ${SECURITIES_MAX_WITH_NLV} securities are allowed, got ${value.length}.`,
    );
  }
  const seen = new Set<string>();
  return value.map((raw, index) => {
    const where = `securities[${index}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw))
      throw new InvalidInput(`${where} must be an object.`);
    const item = raw as Record<string, unknown>;
    if (typeof item.id !== 'string' || item.id === '')
      throw new InvalidInput(`${where}.id is required (a string).`);
    if (seen.has(item.id)) throw new InvalidInput(`${where}.id "${item.id}" is used by another security.`);
    seen.add(item.id);
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
    const security: Security = {
      id: item.id,
      symbol: item.symbol,
      quantity: item.quantity,
      label: optionalString(item.label, `${where}.label`) ?? '',
      cost_price: null,
      market_price: null,
      currency,
      fx_rate: null,
      multiplier: null,
      unrealized_pl: null,
      unrealized_pl_in_base: null,
      isin,
      status: status as Security['status'],
      exchange: optionalString(item.exchange, `${where}.exchange`),
      name: optionalString(item.name, `${where}.name`),
      extra_data: extra as Record<string, unknown> | null,
    };
    for (const field of NUMBER_FIELDS) security[field] = optionalNumber(item[field], `${where}.${field}`);
    return security;
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
