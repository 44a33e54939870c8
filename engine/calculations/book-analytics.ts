/**
 * The calculations on whole books (methodology §20, §21): marginal tracking error of one book against
 * another, and the buy-and-hold backtest with its statistics. Their bodies are the clients' own
 * (`portfolio1`/`portfolio2`, `portfolio`, `backtest_*`), so they are checked here rather than by the
 * common body of §16–§19; the market, the audit record and the Server-Timing stages are the same.
 * The routes and the workers' SDK both go through `runBookCalculation`.
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
import { checkDate } from '../store/entity-fields';
import { checkCurrency, checkNlv, checkSecurities, type Security } from '../kinds/security-positions';
import {
  asInvalidInput,
  auditCalculation,
  calcSecurity,
  type CalculationBody,
  looseBoolean,
  portfolioDefaults,
  type PortfolioDefaults,
  symbolsFor,
} from './calculation-service';
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

const given = (value: unknown) => value !== undefined && value !== null;

/** A book as checked: its stored portfolio (when named by id) and its positions as calc/ takes them. */
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
  value: unknown,
  workspace: unknown,
): Promise<CheckedBook> {
  if (typeof value === 'string' && value !== '') {
    const stored = (await portfolioDefaults(db, accountId, value, workspace))!;
    const securities = within(field, () => checkSecurities(stored.securities, stored.nlv));
    return bookOf(stored, securities, {
      date: stored.date,
      base_currency: stored.base_currency,
      nlv: stored.nlv,
    });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidInput(`${field} must be a portfolio id or an object with securities.`);
  }
  const inline = value as Record<string, unknown>;
  if (!given(inline.securities)) throw new InvalidInput(`${field}.securities is required.`);
  return within(field, () => {
    const nlv = checkNlv(inline.nlv);
    return bookOf(null, checkSecurities(inline.securities, nlv), {
      date: checkDate(inline.date),
      base_currency: given(inline.base_currency) ? checkCurrency(inline.base_currency) : 'USD',
      nlv,
    });
  });
}

function optionalNumber(value: unknown, field: string): number | undefined {
  if (!given(value)) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new InvalidInput(`${field} must be a number.`);
  return value;
}

/** The body of a backtest: the book as `portfolio`, or as `portfolio_id` | `securities` with the common fields. */
async function backtestBook(
  db: Database,
  accountId: string,
  body: CalculationBody,
  workspace: unknown,
): Promise<CheckedBook> {
  if (given(body.portfolio)) {
    if (given(body.portfolio_id) || given(body.securities)) {
      throw new InvalidInput(
        'portfolio is the whole book: do not combine it with portfolio_id or securities.',
      );
    }
    return checkBook(db, accountId, 'portfolio', body.portfolio, workspace);
  }
  const stored = await portfolioDefaults(db, accountId, body.portfolio_id, workspace);
  const nlv = given(body.nlv) ? checkNlv(body.nlv) : (stored?.nlv ?? null);
  const raw = body.securities ?? stored?.securities;
  if (!given(raw))
    throw new InvalidInput('securities is required unless portfolio or portfolio_id is given.');
  return bookOf(stored, checkSecurities(raw, nlv), {
    date: given(body.date) ? checkDate(body.date) : (stored?.date ?? null),
    base_currency: given(body.base_currency)
      ? checkCurrency(body.base_currency)
      : (stored?.base_currency ?? 'USD'),
    nlv,
  });
}

function optionalText(value: unknown, field: string): string | null {
  if (!given(value)) return null;
  if (typeof value !== 'string') throw new InvalidInput(`${field} must be a string.`);
  return value;
}

interface Prepared {
  /** The books, the first being the one the audit record names. */
  books: CheckedBook[];
  /** The symbols besides the books' own that the calculation reads. */
  tickers: string[];
  run: (market: Parameters<typeof runBacktest>[1]) => unknown;
}

async function prepare(
  db: Database,
  accountId: string,
  kind: BookKind,
  body: CalculationBody,
  workspace: unknown,
): Promise<Prepared> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new InvalidInput('The request body must be a JSON object.');
  }
  const space = body.workspace ?? workspace;
  if (kind === 'marginal_tracking_error') {
    for (const field of ['portfolio1', 'portfolio2']) {
      if (!given(body[field]))
        throw new InvalidInput(`${field} is required: a portfolio id or an object with securities.`);
    }
    const p1 = await checkBook(db, accountId, 'portfolio1', body.portfolio1, space);
    const p2 = await checkBook(db, accountId, 'portfolio2', body.portfolio2, space);
    const request = {
      portfolio1: p1.book,
      portfolio2: p2.book,
      weekly: looseBoolean(body.weekly, 'weekly', undefined),
      EWMA: looseBoolean(body.EWMA, 'EWMA', undefined),
      nDays: optionalNumber(body.nDays, 'nDays'),
      nWeeks: optionalNumber(body.nWeeks, 'nWeeks'),
      exponential_decay: optionalNumber(body.exponential_decay, 'exponential_decay'),
    };
    return {
      books: [p1, p2],
      tickers: [TE_CALENDAR],
      run: (market) => runMarginalTrackingError(request, market),
    };
  }
  const checked = await backtestBook(db, accountId, body, space);
  const projections = body.projection_tickers ?? [];
  if (!Array.isArray(projections) || !projections.every((p) => typeof p === 'string')) {
    throw new InvalidInput('projection_tickers must be an array of symbols.');
  }
  const request: BacktestRequest = {
    portfolio: checked.book,
    backtest_date1: optionalText(body.backtest_date1, 'backtest_date1'),
    backtest_date2: optionalText(body.backtest_date2, 'backtest_date2'),
    backtest_periodicity: optionalText(body.backtest_periodicity, 'backtest_periodicity'),
    backtest_benchmark_ticker: optionalText(body.backtest_benchmark_ticker, 'backtest_benchmark_ticker'),
    backtest_rfrate_ticker: optionalText(body.backtest_rfrate_ticker, 'backtest_rfrate_ticker'),
    projection_tickers: projections as string[],
    output_type: optionalText(body.output_type, 'output_type'),
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
 * POST /calculations/marginal_tracking_error, /backtest and /backtest_statistics: checks the body
 * (`checks`), loads the market up to the book's date (`market`), computes (`estimation`), audits
 * (EXECUTE on a Calculation, naming the first book).
 */
export async function runBookCalculation(
  db: Database,
  actor: Actor,
  kind: BookKind,
  body: CalculationBody,
  workspace: unknown,
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
  const result = await timer.time('estimation', async () => asInvalidInput(() => prepared.run(market)));
  const first = prepared.books[0]!;
  await timer.time('audit', () =>
    auditCalculation(db, actor, NOUNS[kind], kind, {
      portfolio: first.portfolio,
      securities: first.securities,
    }),
  );
  return result;
}
