import { dayNumber, parseOptionSymbol, runExposure } from '../../calc';
import { loadMarket } from '../market-data/price-store';
import { lastOnOrBefore, optionalDate, requestedSymbols, SYMBOLS_MAX } from '../market-data/symbols';
import type { Database } from '../platform/database';
import { InvalidInput } from '../platform/errors';
import { isPlainObject } from '../platform/plain-object';
import { asInvalidInput, checkCalculationRequest, symbolsOf } from './calculation-service';
import { validateCalculationBody } from './calculation-schemas';

export interface SymbolCheck {
  symbol: string;
  /** In the securities master, one of the account's CUSTOM:/PRIVATE: symbols, or cash. */
  known: boolean;
  /** A price of its driver (an option's underlying) on or before the date. */
  priced: boolean;
  /** What a calculation at the date uses: false exactly when it lists the symbol in unmapped_tickers. */
  mapped: boolean;
  price: number | null;
  price_date: string | null;
  /** Why not mapped; null when mapped. */
  reason: string | null;
}

export interface SymbolsCheckResult {
  date: string | null;
  base_currency: string;
  results: SymbolCheck[];
  unmapped_tickers: string[];
}

/** The book to check: `securities` as sent (id and quantity filled in when absent), or `symbols`. */
function bookOf(body: Record<string, unknown>): Array<Record<string, unknown>> {
  const symbols = requestedSymbols(body);
  if (body.symbols !== undefined && body.symbols !== null) {
    return symbols.map((symbol, i) => ({ id: `s${i + 1}`, symbol, quantity: 1 }));
  }
  const securities = body.securities as unknown[];
  if (securities.length > SYMBOLS_MAX) throw new InvalidInput(`securities holds at most ${SYMBOLS_MAX}.`);
  return securities.map((security, i) => {
    if (!isPlainObject(security)) throw new InvalidInput(`securities[${i}] must be an object.`);
    return { ...security, id: security.id ?? `s${i + 1}`, quantity: security.quantity ?? 1 };
  });
}

/**
 * symbols_check: the book goes through the same steps as a calculation (its checks, the market it
 * loads, the portfolio model's mapping), so `mapped` and `unmapped_tickers` are what a calculation
 * at that date reports. For each symbol it also says whether it is known and priced, and why not.
 */
export async function checkSymbols(
  db: Database,
  accountId: string,
  body: Record<string, unknown>,
  workspace?: unknown,
): Promise<SymbolsCheckResult> {
  const securities = bookOf(body);
  const date = optionalDate(body.date, 'date');
  const projection = typeof body.projection === 'string' ? [body.projection] : (body.projection ?? undefined);
  // The book as a calculation takes it, validated as a calculation's body is (its route's schema only
  // names each position's symbol). The mapping does not depend on nlv; a given one lets a book whose
  // every position is unmapped (no value to sum) still be checked.
  const request = validateCalculationBody('risk_attribution', {
    securities,
    date,
    base_currency: body.base_currency ?? undefined,
    projection,
    nlv: 1,
  });
  const checked = await checkCalculationRequest(db, accountId, 'risk_attribution', request, workspace);
  const market = await loadMarket(
    db,
    accountId,
    await symbolsOf(db, checked, 'risk_attribution'),
    checked.common.date,
  );
  const { unmapped_tickers: unmapped } = asInvalidInput(() => runExposure(checked.common, market));
  const unmappedSet = new Set(unmapped);
  const drivers = checked.securities.map((s) => parseOptionSymbol(s.symbol)?.underlying ?? s.symbol);
  const inMaster = new Set(
    (
      (await db('securities_master').whereIn('symbol', drivers).select('symbol')) as Array<{
        symbol: string;
      }>
    ).map((r) => r.symbol),
  );
  const lastDay = checked.common.date === null ? null : dayNumber(checked.common.date);
  const at = checked.common.date ?? 'the latest date';
  const results = checked.securities.map((security, i): SymbolCheck => {
    const symbol = security.symbol;
    const driver = drivers[i]!;
    const cash = /^CASH:[A-Za-z]{3}$/.test(symbol);
    const mapped = !unmappedSet.has(symbol);
    const known = cash || inMaster.has(driver) || market.has(driver);
    const last = cash ? null : lastOnOrBefore(market.get(driver), lastDay);
    const via = driver === symbol ? '' : ` (an option, priced by its underlying ${driver})`;
    let reason: string | null = null;
    if (!mapped) {
      if (!known) {
        reason = `unknown symbol${via}: not in the securities master nor among the account's symbols.`;
      } else if (!market.has(driver)) reason = `no stored prices${via}.`;
      else if (!last) reason = `no price on or before ${at}${via}.`;
      else {
        reason = `not enough history before ${at} (fewer than 60 returns in the window), or no FX series from its currency to ${checked.common.base_currency}${via}.`;
      }
    }
    return {
      symbol,
      known,
      priced: last !== null,
      mapped,
      price: last?.price ?? null,
      price_date: last?.date ?? null,
      reason,
    };
  });
  return {
    date: checked.common.date,
    base_currency: checked.common.base_currency,
    results,
    unmapped_tickers: unmapped,
  };
}
