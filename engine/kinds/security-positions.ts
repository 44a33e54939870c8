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
