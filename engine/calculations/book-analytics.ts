/**
 * The calculations on whole books (methodology §20, §21): marginal tracking error of one book against
 * another, and the buy-and-hold backtest with its statistics. Their bodies are the clients' own
 * (`portfolio1`/`portfolio2`, `portfolio`, `backtest_*`), validated at the edge with their schemas
 * (calculation-schemas.ts); here a book is resolved (a stored portfolio, its 404) and its positions
 * checked where no schema can (their limit with nlv, distinct ids). The market, the audit record and
 * the Server-Timing stages are the calculations' own. The routes and the workers' SDK both go through
 * `runBookCalculation`.
 */
import {
  type BacktestRequest,
  DEFAULT_BENCHMARK,
  MAX_PROJECTION_TICKERS,
  OUTPUT_TYPES,
  PERIODICITIES,
  runBacktest,
} from '../../calc/backtest';
import {
  type BookInput,
  runMarginalTrackingError,
  TE_CALENDAR,
  TE_DAYS,
  TE_DECAY_DEFAULT,
  TE_WEEKS,
} from '../../calc/tracking-error';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import { InvalidInput } from '../platform/errors';
import { type PositionInput, positionsOf, type Security } from '../kinds/security-positions';
import {
  asInvalidInput,
  auditCalculation,
  calcSecurity,
  finiteResult,
  looseBoolean,
  portfolioDefaults,
  type PortfolioDefaults,
  symbolsFor,
} from './calculation-service';
import type { BacktestBody, InlineBook, MarginalTrackingErrorBody } from './calculation-schemas';
import { seriesCacheOf } from './series-cache';
import { StageTimer } from './stage-timing';

/** The model's limits and choices, as the API's schemas state them (api/ imports only types from calc/). */
export {
  DEFAULT_BENCHMARK,
  MAX_PROJECTION_TICKERS,
  OUTPUT_TYPES,
  PERIODICITIES,
  TE_DAYS,
  TE_DECAY_DEFAULT,
  TE_WEEKS,
};

export const BOOK_KINDS = ['marginal_tracking_error', 'backtest', 'backtest_statistics'] as const;
export type BookKind = (typeof BOOK_KINDS)[number];

const NOUNS: Record<BookKind, string> = {
  marginal_tracking_error: 'marginal tracking error',
  backtest: 'backtest',
  backtest_statistics: 'backtest statistics',
};

/** A book made ready: its stored portfolio (when named by id) and its positions as calc/ takes them. */
interface CheckedBook {
  portfolio: PortfolioDefaults | null;
  securities: Security[];
  book: BookInput;
}

/** Prefixes a refusal of a book's own field with the book's name (portfolio2.securities[0]…). */
function within<T>(field: string, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof InvalidInput) throw new InvalidInput(`${field}.${error.message}`);
    throw error;
  }
}

function bookOf(
  portfolio: PortfolioDefaults | null,
  securities: Security[],
  rest: Omit<BookInput, 'securities'>,
) {
  return {
    portfolio,
    securities,
    book: {
      securities: securities.map(calcSecurity),
      ...rest,
    },
  };
}

/** `field`: a portfolio id (its 404 when unknown) or an inline `{securities, date, base_currency, nlv}`. */
async function checkBook(
  db: Database,
  accountId: string,
  field: string,
  value: string | InlineBook,
  workspace: unknown,
): Promise<CheckedBook> {
  if (typeof value === 'string') {
    const stored = (await portfolioDefaults(db, accountId, value, workspace))!;
    const securities = within(field, () => positionsOf(stored.securities, stored.nlv));
    return bookOf(stored, securities, {
      date: stored.date,
      base_currency: stored.base_currency,
      nlv: stored.nlv,
    });
  }
  const nlv = value.nlv ?? null;
  return bookOf(
    null,
    within(field, () => positionsOf(value.securities, nlv)),
    { date: value.date ?? null, base_currency: value.base_currency ?? 'USD', nlv },
  );
}

/**
 * The book of a backtest: `portfolio`, or `portfolio_id` | `securities` with the common fields (the
 * schema allows no other combination).
 */
async function backtestBook(
  db: Database,
  accountId: string,
  body: BacktestBody,
  workspace: unknown,
): Promise<CheckedBook> {
  if (body.portfolio !== undefined && body.portfolio !== null) {
    return checkBook(db, accountId, 'portfolio', body.portfolio, workspace);
  }
  const stored = await portfolioDefaults(db, accountId, body.portfolio_id, workspace);
  const nlv = body.nlv ?? stored?.nlv ?? null;
  const securities: readonly PositionInput[] = body.securities ?? stored?.securities ?? [];
  return bookOf(stored, positionsOf(securities, nlv), {
    date: body.date ?? stored?.date ?? null,
    base_currency: body.base_currency ?? stored?.base_currency ?? 'USD',
    nlv,
  });
}

interface Prepared {
  /** The books, the first being the one the audit record names. */
  books: CheckedBook[];
  /** The symbols besides the books' own that the calculation reads. */
  tickers: string[];
  run: (market: Parameters<typeof runBacktest>[1]) => unknown;
}

type BookBody<K extends BookKind> = K extends 'marginal_tracking_error'
  ? MarginalTrackingErrorBody
  : BacktestBody;

async function prepare<K extends BookKind>(
  db: Database,
  accountId: string,
  kind: K,
  body: BookBody<K>,
  workspace: unknown,
): Promise<Prepared> {
  const space = body.workspace ?? workspace;
  if (kind === 'marginal_tracking_error') {
    const te = body as MarginalTrackingErrorBody;
    const p1 = await checkBook(db, accountId, 'portfolio1', te.portfolio1, space);
    const p2 = await checkBook(db, accountId, 'portfolio2', te.portfolio2, space);
    const request = {
      portfolio1: p1.book,
      portfolio2: p2.book,
      weekly: looseBoolean(te.weekly, undefined),
      EWMA: looseBoolean(te.EWMA, undefined),
      nDays: te.nDays ?? undefined,
      nWeeks: te.nWeeks ?? undefined,
      exponential_decay: te.exponential_decay ?? undefined,
    };
    return {
      books: [p1, p2],
      tickers: [TE_CALENDAR],
      run: (market) => runMarginalTrackingError(request, market),
    };
  }
  const backtest = body as BacktestBody;
  const checked = await backtestBook(db, accountId, backtest, space);
  const request: BacktestRequest = {
    portfolio: checked.book,
    backtest_date1: backtest.backtest_date1 ?? null,
    backtest_date2: backtest.backtest_date2 ?? null,
    backtest_periodicity: backtest.backtest_periodicity ?? null,
    backtest_benchmark_ticker: backtest.backtest_benchmark_ticker ?? null,
    backtest_rfrate_ticker: backtest.backtest_rfrate_ticker ?? null,
    projection_tickers: backtest.projection_tickers ?? [],
    output_type: backtest.output_type ?? null,
  };
  const tickers = [
    request.backtest_benchmark_ticker ?? DEFAULT_BENCHMARK,
    ...(request.backtest_rfrate_ticker === null ? [] : [request.backtest_rfrate_ticker!]),
    ...request.projection_tickers!,
  ];
  return {
    books: [checked],
    tickers,
    run: (market) => runBacktest(request, market, kind === 'backtest' ? 'full' : 'summary'),
  };
}

/**
 * POST /calculations/marginal_tracking_error, /backtest and /backtest_statistics: makes the books
 * ready (`checks`), loads the market up to the book's date (`market`), computes (`estimation`), audits
 * (EXECUTE on a Calculation, naming the first book).
 */
export async function runBookCalculation<K extends BookKind>(
  db: Database,
  actor: Actor,
  kind: K,
  body: BookBody<K>,
  workspace: string | undefined,
  timer: StageTimer = new StageTimer(),
): Promise<unknown> {
  const accountId = actor.principal.accountId;
  const { prepared, symbols } = await timer.time('checks', async () => {
    const prepared = await prepare(db, accountId, kind, body, workspace);
    const first = prepared.books[0]!.book;
    const base = first.base_currency ?? 'USD';
    const symbols = await symbolsFor(
      db,
      base,
      prepared.books.flatMap((b) => b.securities),
      prepared.tickers,
    );
    return { prepared, symbols };
  });
  const date = prepared.books[0]!.book.date ?? null;
  const market = await timer.time('market', () => seriesCacheOf(db).market(db, accountId, symbols, date));
  const first = prepared.books[0]!;
  const result = finiteResult(
    kind,
    await timer.time('estimation', async () => asInvalidInput(() => prepared.run(market))),
    body,
    first.portfolio === null ? null : first.securities,
  );
  await timer.time('audit', () =>
    auditCalculation(db, actor, NOUNS[kind], kind, {
      portfolio: first.portfolio,
      securities: first.securities,
    }),
  );
  return result;
}
