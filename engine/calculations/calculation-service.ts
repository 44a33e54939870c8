import {
  AGGREGATIONS,
  type Aggregation,
  CalcInputError,
  type FilterExpression,
  parseFilter,
  reportRiskAttribution,
  reportStressTest,
  CONFIDENCE_TAILS,
  MAX_PROJECTIONS,
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
} from '../../calc';
import { referenceBackend } from '../../calc/backends/reference';
import { recordAudit } from '../store/audit-trail';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import { findEntity } from '../store/entity-store';
import { checkDate, checkWorkspaceName } from '../store/entity-fields';
import { InvalidInput } from '../platform/errors';
import { PORTFOLIO } from '../kinds/portfolio';
import { seriesCacheOf } from './series-cache';
import { StageTimer } from './stage-timing';
import { checkCurrency, checkNlv, checkSecurities, type Security } from '../kinds/security-positions';

/** The spec's allowed values (calc/ accepts more; the API offers exactly these). */
export const HORIZONS = [1, 5, 20, 60] as const;
export const SAMPLINGS = [1, 5] as const;
export const HALF_LIVES = [0, 2, 6, 12, 24, 48] as const;
export const CONFIDENCES = Object.keys(CONFIDENCE_TAILS) as Confidence[];
export const RISK_MEASURES: readonly RiskMeasure[] = ['vol', 'var', 'cvar'];
/** §14: re-exported so the API's schema lists exactly what the reporting step groups by. */
export { AGGREGATIONS };
/** calc's limit, re-exported for the API's schema (api/ imports only types from calc/). */
export { MAX_PROJECTIONS };

/** The audit trail's entity type for a calculation run (the spec lists none for calculations). */
export const CALCULATION_ENTITY = 'Calculation';

export type CalculationKind = 'stress_test' | 'risk_attribution';

/** The request body as received: every field is checked here, with messages naming the parameter. */
export type CalculationBody = Record<string, unknown>;

const given = (value: unknown) => value !== undefined && value !== null;

function oneOf<T>(value: unknown, allowed: readonly T[], parameter: string, fallback: T): T {
  if (value === undefined) return fallback;
  if (!allowed.includes(value as T)) {
    throw new InvalidInput(
      `${parameter} must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}.`,
    );
  }
  return value as T;
}

export interface PortfolioDefaults {
  id: string;
  name: string;
  workspace: string | null;
  securities: unknown;
  date: string | null;
  base_currency: string;
  nlv: number | null;
}

/** A stored portfolio's book (its 404 when unknown), or null when no id is given. */
export async function portfolioDefaults(
  db: Database,
  accountId: string,
  portfolioId: unknown,
  workspace: unknown,
): Promise<PortfolioDefaults | null> {
  if (!given(portfolioId)) return null;
  if (typeof portfolioId !== 'string' || portfolioId === '') {
    throw new InvalidInput('portfolio_id must be a portfolio id (a string).');
  }
  const record = await findEntity(db, accountId, PORTFOLIO, portfolioId, checkWorkspaceName(workspace));
  return {
    id: record.id,
    name: record.name,
    workspace: record.workspace,
    securities: record.body.securities ?? [],
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
    /** §11, §13: checked field by field by calc/ (a 400 naming e.g. forecasts[0].probabilities). */
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
 * Checks a calculation body against the spec: defaults applied, allowed values enforced, the filter
 * parsed (a malformed one is a 400 naming the position of the error). Forecasts and
 * volatility surfaces are checked field by field by calc/. With `portfolio_id`, the portfolio's securities, date, base currency and nlv
 * fill in whatever the body leaves out (a body value wins, so a stored book can be re-dated).
 */
export async function checkCalculationRequest(
  db: Database,
  accountId: string,
  kind: CalculationKind,
  body: CalculationBody,
  workspace: unknown,
): Promise<CheckedRequest> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new InvalidInput('The request body must be a JSON object.');
  }
  const portfolio = await portfolioDefaults(db, accountId, body.portfolio_id, body.workspace ?? workspace);

  let filter: FilterExpression | null = null;
  if (given(body.filter) && body.filter !== '') {
    if (typeof body.filter !== 'string') {
      throw new InvalidInput('filter must be a filter expression (a string).');
    }
    const text = body.filter;
    filter = text.trim() === '' ? null : asInvalidInput(() => parseFilter(text));
  }
  const aggregation = oneOf<Aggregation>(
    body.aggregation ?? undefined,
    AGGREGATIONS,
    'aggregation',
    'position',
  );
  // Python clients send booleans as "True"/"False"; the API's schema allows those forms too.
  const rawDrift = body.drift ?? false;
  const drift =
    typeof rawDrift === 'string' && /^(true|false|1|0)$/i.test(rawDrift)
      ? /^(true|1)$/i.test(rawDrift)
      : rawDrift;
  if (typeof drift !== 'boolean') throw new InvalidInput('drift must be true or false.');
  for (const field of ['forecasts', 'volatility_surface'] as const) {
    if (given(body[field]) && !Array.isArray(body[field])) {
      throw new InvalidInput(`${field} must be an array of objects.`);
    }
  }

  const baseCurrency = given(body.base_currency)
    ? checkCurrency(body.base_currency)
    : (portfolio?.base_currency ?? 'USD');
  const nlv = given(body.nlv) ? checkNlv(body.nlv) : (portfolio?.nlv ?? null);
  const rawSecurities = body.securities ?? portfolio?.securities;
  if (rawSecurities === undefined || rawSecurities === null) {
    throw new InvalidInput('securities is required unless portfolio_id is given.');
  }
  const securities = checkSecurities(rawSecurities, nlv);
  const date = given(body.date) ? checkDate(body.date) : (portfolio?.date ?? null);

  const horizonAllowed: readonly (number | null)[] = kind === 'stress_test' ? [...HORIZONS, null] : HORIZONS;
  const horizon = oneOf<number | null>(body.horizon, horizonAllowed, 'horizon', 5);
  const sampling = oneOf(body.sampling ?? undefined, SAMPLINGS, 'sampling', 1);
  const volatilityHalfLife = oneOf(
    body.volatility_half_life ?? undefined,
    HALF_LIVES,
    'volatility_half_life',
    2,
  );
  const correlationHalfLife = oneOf(
    body.correlation_half_life ?? undefined,
    HALF_LIVES,
    'correlation_half_life',
    6,
  );

  const projection = body.projection ?? ['IND:SPX'];
  if (
    !Array.isArray(projection) ||
    projection.length === 0 ||
    !projection.every((p): p is string => typeof p === 'string' && p !== '')
  ) {
    throw new InvalidInput('projection must be a non-empty array of symbols.');
  }
  if (projection.length > MAX_PROJECTIONS) {
    throw new InvalidInput(`projection holds at most ${MAX_PROJECTIONS} symbols, got ${projection.length}.`);
  }
  if (new Set(projection).size !== projection.length) {
    throw new InvalidInput('projection holds a symbol twice.');
  }

  const confidence = oneOf(body.confidence ?? undefined, CONFIDENCES, 'confidence', '95%');
  let shock = 'IND:SPX';
  let magnitude = NaN;
  let riskMeasure: RiskMeasure = 'vol';
  if (kind === 'stress_test') {
    if (given(body.shock)) {
      if (typeof body.shock !== 'string' || body.shock === '')
        throw new InvalidInput('shock must be a symbol.');
      shock = body.shock;
    }
    if (!given(body.magnitude))
      throw new InvalidInput('magnitude is required (a decimal shock, -0.10 for -10%).');
    if (typeof body.magnitude !== 'number' || !Number.isFinite(body.magnitude)) {
      throw new InvalidInput('magnitude must be a decimal shock greater than -1 (-0.10 for -10%).');
    }
    // A price cannot fall by 100%; a rate or spread moves by magnitude × 100 points either way (§12).
    if (body.magnitude <= -1 && !/^(RATE|SPREAD):/.test(shock)) {
      throw new InvalidInput('magnitude must be a decimal shock greater than -1 (-0.10 for -10%).');
    }
    magnitude = body.magnitude;
  } else {
    riskMeasure = oneOf(body.risk_measure ?? undefined, RISK_MEASURES, 'risk_measure', 'vol');
  }

  return {
    portfolio,
    securities,
    common: {
      securities: securities.map(calcSecurity),
      base_currency: baseCurrency,
      date,
      nlv,
      // Arrays here; calc/ checks every element and answers a CalcInputError naming the field.
      volatility_surface: (body.volatility_surface ?? null) as StressTestRequest['volatility_surface'],
      forecasts: (body.forecasts ?? null) as StressTestRequest['forecasts'],
      drift,
      sampling,
      projection,
      volatility_half_life: volatilityHalfLife,
      correlation_half_life: correlationHalfLife,
    },
    horizon,
    aggregation,
    filter,
    shock,
    magnitude,
    confidence,
    risk_measure: riskMeasure,
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

/** Python clients send booleans as "True"/"False"; the schema allows those forms (LooseBoolean). */
export function looseBoolean<T>(value: unknown, parameter: string, fallback: T): boolean | T {
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false|1|0)$/i.test(value)) return /^(true|1)$/i.test(value);
  throw new InvalidInput(`${parameter} must be true or false.`);
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
 * The request's checks and its market, timed: the body's rules and the symbols it reads (`checks`),
 * then the series from the process's cache, checked against PostgreSQL on every read (`market`).
 */
export async function checkedMarket<Extra = undefined>(
  db: Database,
  actor: Actor,
  kind: CalculationKind,
  body: CalculationBody,
  workspace: unknown,
  timer: StageTimer,
  /** More checks of the body (an analytics kind's own fields), run before any market data is read. */
  extra?: () => Extra,
) {
  const accountId = actor.principal.accountId;
  const { checked, symbols, fields } = await timer.time('checks', async () => {
    const checked = await checkCalculationRequest(db, accountId, kind, body, workspace);
    const fields = extra?.() as Extra;
    return { checked, fields, symbols: await symbolsOf(db, checked, kind) };
  });
  const market = await timer.time('market', () =>
    seriesCacheOf(db).market(db, accountId, symbols, checked.common.date),
  );
  return { checked, market, fields };
}

/**
 * POST /calculations/stress_test: checks, loads the market up to `date`, runs, audits (EXECUTE).
 * `timer` receives each stage's time (the route sends it as Server-Timing).
 */
export async function runStressTestCalculation(
  db: Database,
  actor: Actor,
  body: CalculationBody,
  workspace: unknown,
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
  const computed = await timer.time('simulation', async () =>
    prepared.finish(await backend.simulate(prepared.scenario, prepared.simulation)),
  );
  const result = timer.timeSync('report', () => reportStressTest(computed, prepared.facts, checked));
  await timer.time('audit', () => auditCalculation(db, actor, 'stress test', 'stress_test', checked));
  return result;
}

/** POST /calculations/risk_attribution: the same steps with the unconditional model. */
export async function runRiskAttributionCalculation(
  db: Database,
  actor: Actor,
  body: CalculationBody,
  workspace: unknown,
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
      : await timer.time('simulation', async () =>
          prepared.finish(await backend.simulate(prepared.scenario, prepared.simulation)),
        );
  const result = timer.timeSync('report', () => reportRiskAttribution(computed, prepared.facts, checked));
  await timer.time('audit', () =>
    auditCalculation(db, actor, 'risk attribution', 'risk_attribution', checked),
  );
  return result;
}
