/**
 * Marginal tracking error (methodology §20): how far a book strays from a benchmark book, and which
 * symbols cause it. Active weights per symbol over the union of both books, one common sample of
 * returns (every row of the window present), equal or EWMA weights, and the exact Euler split of TE
 * into each symbol's contribution. Σ is never formed: the active return series carries it.
 */
import { type CalcOptions, type CalcSecurity, check } from './calculation-request';
import { prepareBook } from './exposure';
import { CalcInputError } from './input-error';
import {
  countPresent,
  formatDay,
  remember,
  returnGrid,
  type SeriesSource,
  toDaySeries,
  windowReturns,
} from './market-data';
import { binaryScale, blameOverflow, checkFigures } from './figures';
import { bookSuspects, fxRouteReturns, fxRouteSymbols, type PreparedPortfolio } from './portfolio-model';

/** Bound once: under jest's vm sandbox every global lookup in a hot loop costs ~25×. */
const { sqrt } = Math;

export const TE_DAYS = { min: 20, max: 5040, default: 252 } as const;
export const TE_WEEKS = { min: 12, max: 1008, default: 52 } as const;
export const TE_DECAY_DEFAULT = 0.94;
/** The calendar of §20's returns. */
export const TE_CALENDAR = 'IND:SPX';

/** A book as §20 and §21 take it inline (an id is resolved to this by the caller). */
export interface BookInput {
  readonly securities: readonly CalcSecurity[];
  /** `YYYYMMDD`, null = the latest. Used for portfolio1 only. */
  readonly date?: string | null;
  /** Default USD. Used for portfolio1 only. */
  readonly base_currency?: string | null;
  readonly nlv?: number | null;
}

export interface TrackingErrorRequest {
  readonly portfolio1: BookInput;
  /** The benchmark, valued at portfolio1's date and base currency. */
  readonly portfolio2: BookInput;
  readonly weekly?: boolean;
  readonly nDays?: number;
  readonly nWeeks?: number;
  readonly EWMA?: boolean;
  readonly exponential_decay?: number | null;
}

export interface TrackingErrorElement {
  /** The symbol's first position's id in portfolio1, else in portfolio2. */
  id: string;
  symbol: string;
  /** w1 − w2. */
  weight_active: number;
  /** ∂TE/∂w_a, annualised. */
  mte: number;
  /** weight_active × mte; the elements sum to te. */
  cte: number;
}

/** The `marginal_tracking_error` object of §20. */
export interface TrackingErrorResult {
  date: string;
  base_currency: string;
  weekly: boolean;
  observations: number;
  unmapped_tickers: string[];
  te: number;
  results: TrackingErrorElement[];
}

interface Normalised {
  weekly: boolean;
  n: number;
  decay: number | null;
}

function wholeIn(value: unknown, range: { min: number; max: number }): boolean {
  return Number.isInteger(value) && (value as number) >= range.min && (value as number) <= range.max;
}

function normalise(request: TrackingErrorRequest): Normalised {
  const weekly = request.weekly ?? false;
  check(typeof weekly === 'boolean', 'weekly', 'must be true or false.');
  const ewma = request.EWMA ?? false;
  check(typeof ewma === 'boolean', 'EWMA', 'must be true or false.');
  const nDays = request.nDays ?? TE_DAYS.default;
  check(wholeIn(nDays, TE_DAYS), 'nDays', `must be a whole number from ${TE_DAYS.min} to ${TE_DAYS.max}.`);
  const nWeeks = request.nWeeks ?? TE_WEEKS.default;
  check(
    wholeIn(nWeeks, TE_WEEKS),
    'nWeeks',
    `must be a whole number from ${TE_WEEKS.min} to ${TE_WEEKS.max}.`,
  );
  const decay = request.exponential_decay ?? TE_DECAY_DEFAULT;
  check(
    typeof decay === 'number' && decay > 0 && decay < 1,
    'exponential_decay',
    'must be a number greater than 0 and less than 1 (equal weights are EWMA false).',
  );
  return { weekly, n: weekly ? nWeeks : nDays, decay: ewma ? decay : null };
}

/** A book priced as §16 prices it, at portfolio1's date and base currency; errors name the book. */
function valueBook(
  name: 'portfolio1' | 'portfolio2',
  book: BookInput,
  date: string | null,
  base: string | null,
  market: SeriesSource,
  options: CalcOptions,
): PreparedPortfolio {
  check(
    book !== null && typeof book === 'object' && Array.isArray(book.securities),
    name,
    'must be a portfolio id or an object with securities.',
  );
  try {
    return prepareBook(
      {
        securities: book.securities,
        date,
        base_currency: base,
        nlv: book.nlv ?? null,
        projection: [TE_CALENDAR],
      },
      market,
      options,
    ).prepared;
  } catch (error) {
    if (error instanceof CalcInputError) {
      throw new CalcInputError(`${name}.${error.parameter}`, error.message.slice(error.parameter.length + 2));
    }
    throw error;
  }
}

/** ω_t: 1/n, or λ^(T−t) normalised (newest last). */
export function observationWeights(n: number, decay: number | null): Float64Array {
  const weights = new Float64Array(n);
  if (decay === null) return weights.fill(1 / n);
  let total = 0;
  let w = 1;
  for (let t = n - 1; t >= 0; t--) {
    weights[t] = w;
    total += w;
    w *= decay;
  }
  for (let t = 0; t < n; t++) weights[t]! /= total;
  return weights;
}

/** What each position of a book contributes: its symbol's series key and its weight. */
interface Holding {
  readonly id: string;
  readonly symbol: string;
  /** The symbol's invariant in base: its driver's returns plus its FX driver's (null: none). */
  readonly driver: string | null;
  readonly currency: string | null;
  readonly weight: number;
}

function holdings(prepared: PreparedPortfolio, base: string): Holding[] {
  return prepared.book.map((position, i) => {
    const facts = prepared.facts[i]!;
    return {
      id: position.id,
      symbol: facts.symbol,
      driver: position.primary < 0 ? null : prepared.driverSymbols[position.primary]!,
      currency: position.fx < 0 || facts.currency === base ? null : facts.currency,
      weight: position.linear / prepared.nlv,
    };
  });
}

/** A figure past ±1.8e308: the book whose weights (fractions of its NLV) are the larger. */
function trackingErrorBlame(book1: PreparedPortfolio, book2: PreparedPortfolio) {
  return blameOverflow([...bookSuspects(book1, 'portfolio1.'), ...bookSuspects(book2, 'portfolio2.')]);
}

/** Σ_t ω_t·a_t·b_t. */
function weightedDot(a: Float64Array, b: Float64Array, weights: Float64Array): number {
  let sum = 0;
  for (let t = 0; t < weights.length; t++) sum += weights[t]! * a[t]! * b[t]!;
  return sum;
}

/** §20 on two books already resolved to their securities. */
export function runMarginalTrackingError(
  request: TrackingErrorRequest,
  market: SeriesSource,
  options: CalcOptions = {},
): TrackingErrorResult {
  const { weekly, n, decay } = normalise(request);
  const p1 = request.portfolio1;
  const date = p1?.date ?? null;
  const base = p1?.base_currency ?? null;
  const book1 = valueBook('portfolio1', p1, date, base, market, options);
  const book2 = valueBook('portfolio2', request.portfolio2, date, base, market, options);
  const baseCurrency = (base ?? 'USD').toUpperCase();
  const sampling = weekly ? 5 : 1;
  const calendar = book1.window.calendar;
  const grid = returnGrid(calendar, sampling, n);
  const parameter = weekly ? 'nWeeks' : 'nDays';
  check(
    grid.length === n,
    parameter,
    `the ${TE_CALENDAR} calendar holds only ${grid.length} ${weekly ? 'weekly' : 'daily'} returns up to ${formatDay(calendar.anchorDay)}; ask for at most that many.`,
  );

  const held = [...holdings(book1, baseCurrency), ...holdings(book2, baseCurrency)];
  // Every series the books need on the one grid, kept only when complete (one memo entry per request shape).
  const needed = new Set<string>();
  for (const holding of held) {
    if (holding.driver !== null) needed.add(holding.driver);
    if (holding.currency !== null)
      for (const pair of fxRouteSymbols(holding.currency, baseCurrency)) needed.add(pair);
  }
  const symbols = [...needed].sort();
  const completeReturns = remember(
    market,
    JSON.stringify(['te-returns', symbols, calendar.anchorDay, sampling, n]),
    () => {
      const found = new Map<string, Float64Array>();
      for (const symbol of symbols) {
        const raw = market.get(symbol);
        if (raw === undefined) continue;
        const returns = windowReturns(toDaySeries(symbol, raw), calendar, grid);
        if (countPresent(returns) === n) found.set(symbol, returns);
      }
      return found;
    },
  );
  const complete = (symbol: string) => completeReturns.get(symbol);
  const invariant = (holding: Holding): Float64Array | null => {
    const own = holding.driver === null ? new Float64Array(n) : complete(holding.driver);
    if (own === undefined) return null;
    if (holding.currency === null) return own;
    const fx = fxRouteReturns(complete, holding.currency, baseCurrency, n);
    if (fx === null) return null;
    const sum = new Float64Array(n);
    for (let t = 0; t < n; t++) sum[t] = own[t]! + fx[t]!;
    return sum;
  };

  // The union of symbols: portfolio1's in position order, then portfolio2's others.
  interface SymbolRow {
    id: string;
    symbol: string;
    w1: number;
    w2: number;
    x: Float64Array | null;
  }
  const rows = new Map<string, SymbolRow>();
  const add = (holding: Holding, side: 'w1' | 'w2') => {
    let row = rows.get(holding.symbol);
    if (row === undefined) {
      row = { id: holding.id, symbol: holding.symbol, w1: 0, w2: 0, x: invariant(holding) };
      rows.set(holding.symbol, row);
    }
    row[side] += holding.weight;
  };
  held.forEach((holding, i) => add(holding, i < book1.book.length ? 'w1' : 'w2'));

  const unmapped = new Set([...book1.unmapped, ...book2.unmapped]);
  const kept: SymbolRow[] = [];
  for (const row of rows.values()) {
    if (row.x === null) unmapped.add(row.symbol);
    else kept.push(row);
  }

  const weights = observationWeights(n, decay);
  // r_a is squared: it is built from the active weights divided by a power of two near the largest
  // (figures.ts), which changes no bit of te (multiplied back) nor of any mte (a ratio).
  let largest = 0;
  for (const row of kept) largest = Math.max(largest, Math.abs(row.w1 - row.w2));
  const scale = binaryScale(largest);
  const active = new Float64Array(n);
  for (const row of kept) {
    const wa = row.w1 - row.w2;
    if (wa === 0) continue;
    const x = row.x!;
    for (let t = 0; t < n; t++) active[t]! += (wa / scale) * x[t]!;
  }
  const annual = weekly ? 52 : 252;
  const variance = weightedDot(active, active, weights);
  const scaledTe = sqrt(annual) * sqrt(variance);
  const te = scaledTe * scale;
  const results = kept.map((row) => {
    const weightActive = row.w1 - row.w2;
    const mte = scaledTe === 0 ? 0 : (annual * weightedDot(row.x!, active, weights)) / scaledTe;
    return { id: row.id, symbol: row.symbol, weight_active: weightActive, mte, cte: weightActive * mte };
  });
  return checkFigures(
    {
      date: formatDay(calendar.anchorDay),
      base_currency: baseCurrency,
      weekly,
      observations: n,
      unmapped_tickers: [...unmapped],
      te,
      results,
    },
    () => trackingErrorBlame(book1, book2),
  );
}
