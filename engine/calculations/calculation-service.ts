/**
 * The calculation service. Its bodies arrive validated at the edge (the route's schema; a worker's SDK
 * call validated with the same one, calculation-schemas.ts), so here they are typed and never checked
 * again: defaults are applied, a stored portfolio fills what the body leaves out, and only what no
 * schema states is checked (a portfolio that exists, the positions' limit with nlv and distinct ids,
 * the filter's grammar); calc/ checks the rules across a forecast's or a surface's arrays and what
 * needs market data. docs/architecture.md follows one parameter, `projection`, from the route down.
 */
import {
  type Aggregation,
  CalcInputError,
  type FilterExpression,
  parseFilter,
  reportRiskAttribution,
  reportStressTest,
  parseOptionSymbol,
  prepareRiskAttribution,
  prepareStressTest,
  type CalcOptions,
  type CalcSecurity,
  type Confidence,
  type RiskAttributionResult,
  type RiskMeasure,
  type SimulationBackend,
  type StressTestRequest,
  type StressTestResult,
  nonFinitePath,
  OVERFLOW,
} from '../../calc';
import { referenceBackend } from '../../calc/backends/reference';
import { recordAudit } from '../store/audit-trail';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import { findEntity } from '../store/entity-store';
import { checkWorkspaceName } from '../store/entity-fields';
import { InvalidInput } from '../platform/errors';
import { PORTFOLIO } from '../kinds/portfolio';
import { seriesCacheOf } from './series-cache';
import { StageTimer } from './stage-timing';
import { type PositionInput, positionsOf, type Security } from '../kinds/security-positions';
import type { CalculationBody, RiskAttributionBody, StressTestBody } from './calculation-schemas';

/** The audit trail's entity type for a calculation run (the spec lists none for calculations). */
export const CALCULATION_ENTITY = 'Calculation';

export type CalculationKind = 'stress_test' | 'risk_attribution';

export interface PortfolioDefaults {
  id: string;
  name: string;
  workspace: string | null;
  /** As the portfolio kind stored them: checked when written (engine/kinds/portfolio.ts). */
  securities: readonly PositionInput[];
  date: string | null;
  base_currency: string;
  nlv: number | null;
}

/** A stored portfolio's book (its 404 when unknown), or null when no id is given. */
export async function portfolioDefaults(
  db: Database,
  accountId: string,
  portfolioId: string | null | undefined,
  workspace: unknown,
): Promise<PortfolioDefaults | null> {
  if (portfolioId === undefined || portfolioId === null) return null;
  const record = await findEntity(db, accountId, PORTFOLIO, portfolioId, checkWorkspaceName(workspace));
  return {
    id: record.id,
    name: record.name,
    workspace: record.workspace,
    securities: (record.body.securities ?? []) as PositionInput[],
    date: record.date,
    base_currency: typeof record.body.base_currency === 'string' ? record.body.base_currency : 'USD',
    nlv: typeof record.body.nlv === 'number' ? record.body.nlv : null,
  };
}

export interface CheckedRequest {
  portfolio: PortfolioDefaults | null;
  securities: Security[];
  common: {
    securities: CalcSecurity[];
    base_currency: string;
    date: string | null;
    nlv: number | null;
    /** §11, §13: their rules across fields (a grid matching its axes, probabilities summing to 1) are calc/'s. */
    volatility_surface: StressTestRequest['volatility_surface'];
    forecasts: StressTestRequest['forecasts'];
    drift: boolean;
    sampling: 1 | 5;
    projection: string[];
    volatility_half_life: number;
    correlation_half_life: number;
  };
  horizon: number | null;
  /** §14: how the reported results are grouped. */
  aggregation: Aggregation;
  /** §15: which positions are reported (parsed before any market data is read); null for all. */
  filter: FilterExpression | null;
  shock: string;
  magnitude: number;
  confidence: Confidence;
  risk_measure: RiskMeasure;
}

/**
 * A validated calculation body made ready to run: defaults applied, the filter parsed (a malformed
 * one is a 400 naming the position of the error), the positions checked where no schema can (their
 * limit with nlv, distinct ids). With `portfolio_id`, the portfolio's securities, date, base currency
 * and nlv fill in whatever the body leaves out (a body value wins, so a stored book can be re-dated).
 */
export async function checkCalculationRequest(
  db: Database,
  accountId: string,
  kind: CalculationKind,
  body: CalculationBody,
  workspace: unknown,
): Promise<CheckedRequest> {
  const portfolio = await portfolioDefaults(db, accountId, body.portfolio_id, body.workspace ?? workspace);
  const text = body.filter ?? '';
  const filter = text.trim() === '' ? null : asInvalidInput(() => parseFilter(text));
  const nlv = body.nlv ?? portfolio?.nlv ?? null;
  // The schema requires securities unless portfolio_id is given, and a stored portfolio has its list.
  const securities = positionsOf(body.securities ?? portfolio?.securities ?? [], nlv);
  const stress = kind === 'stress_test';
  return {
    portfolio,
    securities,
    common: {
      securities: securities.map(calcSecurity),
      base_currency: body.base_currency ?? portfolio?.base_currency ?? 'USD',
      date: body.date ?? portfolio?.date ?? null,
      nlv,
      volatility_surface: body.volatility_surface ?? null,
      forecasts: body.forecasts ?? null,
      drift: looseBoolean(body.drift, false),
      sampling: body.sampling ?? 1,
      projection: body.projection ?? ['IND:SPX'],
      volatility_half_life: body.volatility_half_life ?? 2,
      correlation_half_life: body.correlation_half_life ?? 6,
    },
    // null (a stress test's own choice): the smallest horizon in which the magnitude is observable.
    horizon: body.horizon === undefined ? 5 : body.horizon,
    aggregation: body.aggregation ?? 'position',
    filter,
    shock: stress ? (body.shock ?? 'IND:SPX') : 'IND:SPX',
    magnitude: stress ? body.magnitude! : NaN,
    confidence: body.confidence ?? '95%',
    risk_measure: stress ? 'vol' : (body.risk_measure ?? 'vol'),
  };
}

/** A checked position as calc/ takes it (the fields the model reads). */
export function calcSecurity(s: Security): CalcSecurity {
  return {
    id: s.id,
    symbol: s.symbol,
    quantity: s.quantity,
    market_price: s.market_price,
    multiplier: s.multiplier,
    fx_rate: s.fx_rate,
    currency: s.currency,
    label: s.label,
  };
}

/** Python clients send booleans as "True"/"False", which the schemas allow (LooseBoolean): a conversion. */
export function looseBoolean<T>(value: boolean | string | null | undefined, fallback: T): boolean | T {
  if (value === undefined || value === null) return fallback;
  return typeof value === 'boolean' ? value : /^(true|1)$/i.test(value);
}

/** calc/ names the parameter it cannot compute with; the client sees it as a 400 like any other. */
export function asInvalidInput<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (error instanceof CalcInputError) throw new InvalidInput(error.message);
    throw error;
  }
}

/** Every number a request gives, by its wire name (`securities[0].quantity`), in body order. */
function requestNumbers(value: unknown, path: string, out: Array<[string, number]>): void {
  if (typeof value === 'number') out.push([path, value]);
  else if (Array.isArray(value)) value.forEach((item, i) => requestNumbers(item, `${path}[${i}]`, out));
  else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      requestNumbers(item, path === '' ? key : `${path}.${key}`, out);
    }
  }
}

/**
 * The last line before a result is answered: a figure that is not a finite number (JSON would write
 * null where the response schema says number) is refused with a 400, never sent. calc/ checks its
 * own figures and names the input to blame (calc/figures.ts), so this is reached only by what slips
 * past them (a backend computing in f32, say): it names the request's most extreme number, the one
 * farthest from 1 in decades, as the likeliest cause. `stored` are the positions a stored portfolio
 * supplied (named as the body's would be).
 */
export function finiteResult<T>(
  kind: string,
  result: T,
  body: unknown,
  stored: readonly Security[] | null = null,
): T {
  const path = nonFinitePath(result);
  if (path === null) return result;
  const numbers: Array<[string, number]> = [];
  requestNumbers(body, '', numbers);
  if (stored !== null) requestNumbers({ securities: stored.map(calcSecurity) }, '', numbers);
  let blamed: [string, number] | null = null;
  let worst = -1;
  for (const [name, value] of numbers) {
    const decades = value === 0 ? 0 : Math.abs(Math.log10(Math.abs(value)));
    if (decades > worst) [blamed, worst] = [[name, value], decades];
  }
  const figure = `${kind}.${path}`;
  throw new InvalidInput(
    blamed === null
      ? `portfolio: its numbers make ${figure} not a finite number: ${OVERFLOW}.`
      : `${blamed[0]}: ${blamed[1]} makes ${figure} not a finite number: ${OVERFLOW}.`,
  );
}

/** The positions a stored portfolio supplied (the body gave none), else null. */
export function storedBook(body: CalculationBody, checked: CheckedRequest): Security[] | null {
  return body.securities === undefined || body.securities === null ? checked.securities : null;
}

/** The EXECUTE audit record of a calculation: `kind` names it when there is no portfolio. */
export async function auditCalculation(
  db: Database,
  actor: Actor,
  noun: string,
  kind: string,
  checked: Pick<CheckedRequest, 'portfolio' | 'securities'>,
): Promise<void> {
  const on = checked.portfolio
    ? `portfolio ${checked.portfolio.name}`
    : `${checked.securities.length} securities`;
  await recordAudit(db, actor, {
    operation: 'EXECUTE',
    activity: `Ran ${noun} on ${on}`,
    // The portfolio is the object acted on when there is one; an ad-hoc book has no identity to name.
    entityId: checked.portfolio?.id ?? null,
    entityType: CALCULATION_ENTITY,
    entityName: checked.portfolio?.name ?? kind,
    workspace: checked.portfolio?.workspace ?? null,
  });
}

/**
 * Every symbol a request reads: projections, positions (an option's underlying), the FX pairs that
 * can take each position currency to the base (direct, inverse, both legs through USD: §9) and, for
 * a stress test, the shock. A position's currency may come from the securities master (§9), so the
 * master's currencies of the held symbols are included.
 */
export async function symbolsOf(
  db: Database,
  checked: CheckedRequest,
  kind: CalculationKind,
): Promise<string[]> {
  const symbols = await symbolsFor(
    db,
    checked.common.base_currency,
    checked.securities,
    checked.common.projection,
  );
  if (kind === 'stress_test') symbols.push(checked.shock);
  return symbols;
}

/**
 * The symbols a book reads in `base`: `leading` first (the calendar's symbol, the projections), then
 * each position's (an option's underlying), then the FX pairs of every position and master currency.
 */
export async function symbolsFor(
  db: Database,
  base: string,
  securities: readonly Pick<Security, 'symbol' | 'currency'>[],
  leading: readonly string[],
): Promise<string[]> {
  const symbols = [...leading];
  const currencies = new Set<string>();
  for (const s of securities) {
    symbols.push(parseOptionSymbol(s.symbol)?.underlying ?? s.symbol);
    const cash = /^CASH:([A-Za-z]{3})$/.exec(s.symbol)?.[1]?.toUpperCase();
    const currency = s.currency ?? cash;
    if (currency !== undefined && currency !== null) currencies.add(currency);
  }
  // One array parameter rather than a placeholder per symbol: an L book names 3000, and a list of
  // 3000 placeholders took 4 to 13 ms to build, send and plan.
  const master = (await db('securities_master')
    .whereRaw('symbol = ANY(?::text[])', [[...new Set(symbols)]])
    .whereNotNull('currency')
    .distinct('currency')) as Array<{ currency: string }>;
  for (const row of master) currencies.add(row.currency.toUpperCase());
  currencies.delete(base);
  for (const c of currencies) {
    symbols.push(
      `FX:${c}${base}`,
      `FX:${base}${c}`,
      `FX:${c}USD`,
      `FX:USD${c}`,
      `FX:USD${base}`,
      `FX:${base}USD`,
    );
  }
  return symbols;
}

/**
 * The simulation a caller does not choose: the plain reference model on the event loop. The API and
 * worker processes pass the backend their start-up probe chose (calc/backends/choose.ts); every
 * backend gives the same numbers for the same request (test/calc/backends.test.ts).
 */
const REFERENCE: SimulationBackend = referenceBackend();

/**
 * The request made ready and its market, timed: the body's defaults, its stored portfolio, the rules
 * no schema states and the symbols it reads (`checks`), then the series from the process's cache,
 * checked against PostgreSQL on every read (`market`).
 */
export async function checkedMarket(
  db: Database,
  actor: Actor,
  kind: CalculationKind,
  body: CalculationBody,
  workspace: string | undefined,
  timer: StageTimer,
) {
  const accountId = actor.principal.accountId;
  const { checked, symbols } = await timer.time('checks', async () => {
    const checked = await checkCalculationRequest(db, accountId, kind, body, workspace);
    return { checked, symbols: await symbolsOf(db, checked, kind) };
  });
  const market = await timer.time('market', () =>
    seriesCacheOf(db).market(db, accountId, symbols, checked.common.date),
  );
  return { checked, market };
}

/**
 * POST /calculations/stress_test: checks, loads the market up to `date`, runs, audits (EXECUTE).
 * `timer` receives each stage's time (the route sends it as Server-Timing).
 */
export async function runStressTestCalculation(
  db: Database,
  actor: Actor,
  body: StressTestBody,
  workspace: string | undefined,
  options: CalcOptions = {},
  backend: SimulationBackend = REFERENCE,
  timer: StageTimer = new StageTimer(),
): Promise<StressTestResult> {
  const { checked, market } = await checkedMarket(db, actor, 'stress_test', body, workspace, timer);
  const prepared = timer.timeSync('estimation', () =>
    asInvalidInput(() =>
      prepareStressTest(
        {
          ...checked.common,
          horizon: checked.horizon,
          shock: checked.shock,
          magnitude: checked.magnitude,
          confidence: checked.confidence,
        },
        market,
        options,
      ),
    ),
  );
  // finish refuses figures past ±1.8e308, naming the parameter (calc/figures.ts): a 400 as well.
  const computed = await timer.time('simulation', async () => {
    const simulated = await backend.simulate(prepared.scenario, prepared.simulation);
    return asInvalidInput(() => prepared.finish(simulated));
  });
  const result = timer.timeSync('report', () =>
    finiteResult(
      'stress_test',
      reportStressTest(computed, prepared.facts, checked),
      body,
      storedBook(body, checked),
    ),
  );
  await timer.time('audit', () => auditCalculation(db, actor, 'stress test', 'stress_test', checked));
  return result;
}

/** POST /calculations/risk_attribution: the same steps with the unconditional model. */
export async function runRiskAttributionCalculation(
  db: Database,
  actor: Actor,
  body: RiskAttributionBody,
  workspace: string | undefined,
  options: CalcOptions = {},
  backend: SimulationBackend = REFERENCE,
  timer: StageTimer = new StageTimer(),
): Promise<RiskAttributionResult> {
  const { checked, market } = await checkedMarket(db, actor, 'risk_attribution', body, workspace, timer);
  const prepared = timer.timeSync('estimation', () =>
    asInvalidInput(() =>
      prepareRiskAttribution(
        {
          ...checked.common,
          horizon: checked.horizon ?? 5,
          risk_measure: checked.risk_measure,
          confidence: checked.confidence,
        },
        market,
        options,
      ),
    ),
  );
  const computed =
    prepared.kind === 'analytic'
      ? prepared.result
      : await timer.time('simulation', async () => {
          const simulated = await backend.simulate(prepared.scenario, prepared.simulation);
          return asInvalidInput(() => prepared.finish(simulated));
        });
  const result = timer.timeSync('report', () =>
    finiteResult(
      'risk_attribution',
      reportRiskAttribution(computed, prepared.facts, checked),
      body,
      storedBook(body, checked),
    ),
  );
  await timer.time('audit', () =>
    auditCalculation(db, actor, 'risk attribution', 'risk_attribution', checked),
  );
  return result;
}
