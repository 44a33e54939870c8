/**
 * The calculation request bodies, field by field (spec: Calculations, Calculation parameter types;
 * model: calc-methodology.md), declared once. The API validates a request with them (each route's
 * `body`), and every caller without a route validates with the same compiled schemas and words
 * (`validateCalculationBody`: a worker's sdk.runStressTest, symbols_check's book). The engine then
 * takes the body typed and checks only what no schema states: see calculation-service.ts. Every
 * optional field also takes null, meaning its default, as the Python clients send it.
 */
import { type Static, type TObject, type TSchema, Type } from '@sinclair/typebox';
import {
  AGGREGATIONS,
  CONFIDENCE_TAILS,
  type Confidence,
  MAX_HISTORICAL_DAYS,
  MAX_LEVEL_SHOCK,
  MAX_PROJECTIONS,
  MAX_RELATIVE_MOVE,
  MAX_STRESS_VALUES,
  MIN_HISTORICAL_DAYS,
  type RiskMeasure,
  SENSITIVITY_TYPES,
} from '../../calc';
import { DEFAULT_BENCHMARK, MAX_PROJECTION_TICKERS, OUTPUT_TYPES, PERIODICITIES } from '../../calc/backtest';
import { TE_DAYS, TE_DECAY_DEFAULT, TE_WEEKS } from '../../calc/tracking-error';
import { bodyValidator } from '../platform/schema-validator';
import {
  CurrencyCode,
  datePattern,
  EntityId,
  LooseBoolean,
  NullableDate,
  StorableText,
  WorkspaceParam,
} from '../store/field-schemas';
import { PORTFOLIO } from '../kinds/portfolio';
import { SECURITIES_MAX, SECURITIES_MAX_WITH_NLV } from '../kinds/security-positions';
import { SecurityInput } from '../kinds/security-schemas';

/** The spec's allowed values (calc/ accepts more; the API offers exactly these). */
export const HORIZONS = [1, 5, 20, 60] as const;
export const SAMPLINGS = [1, 5] as const;
export const HALF_LIVES = [0, 2, 6, 12, 24, 48] as const;
export const CONFIDENCES = Object.keys(CONFIDENCE_TAILS) as Confidence[];
export const RISK_MEASURES: readonly RiskMeasure[] = ['vol', 'var', 'cvar'];

/** A choice among constants, or null for the default. */
function choice<T extends string | number>(values: readonly T[], description: string) {
  return Type.Optional(
    Type.Union([...values.map((value) => Type.Literal(value)), Type.Null()], { description }),
  );
}

function nullable<T extends TSchema>(schema: T, description: string) {
  return Type.Optional(Type.Union([schema, Type.Null()], { description }));
}

function looseBoolean(description: string) {
  return Type.Optional(
    Type.Union([...LooseBoolean.anyOf, Type.Null()], { 'x-rule': 'true or false (or null)', description }),
  );
}

const Symbol = (description: string) => StorableText({ minLength: 1, maxLength: 200, description });

/**
 * A body: its fields, then the rules across them that a schema can state, each in the words the
 * service has always answered (`x-message`). allOf checks its schemas in order, so every field's own
 * rules come first, as when the engine checked these: a rule beside `properties` would run before them.
 */
function body<T extends TObject>(fields: T, rules: TSchema[], description: string) {
  return Type.Intersect([fields, ...rules], { description });
}

/** `field` given (not null), or one of `instead`. */
function requiredUnless(field: string, instead: string[], message: string) {
  const given = (name: string) => ({
    type: 'object',
    required: [name],
    properties: { [name]: { not: { type: 'null' } } },
  });
  return Type.Unsafe<unknown>({ anyOf: [field, ...instead].map(given), 'x-message': message });
}

const SECURITIES_UNLESS_PORTFOLIO_ID = requiredUnless(
  'securities',
  ['portfolio_id'],
  'securities is required unless portfolio_id is given.',
);

/** Bounds that keep one request's work finite; the model itself needs far fewer points. */
export const FORECAST_TARGETS_MAX = 100;
export const SURFACE_AXIS_MAX = 100;

export const Forecast = Type.Object(
  {
    symbol: Symbol('REQUIRED. The forecast security (a position’s symbol).'),
    years: Type.Number({
      exclusiveMinimum: 0,
      'x-rule': 'a number of years greater than 0',
      description: 'REQUIRED. Timeframe of the targets, in years (> 0).',
    }),
    targets: Type.Array(
      Type.Number({ exclusiveMinimum: 0, 'x-rule': 'a price greater than 0', description: 'A price.' }),
      {
        minItems: 1,
        maxItems: FORECAST_TARGETS_MAX,
        description: `REQUIRED. Target prices at that horizon (1 to ${FORECAST_TARGETS_MAX}).`,
      },
    ),
    // One per target, summing to 1: a rule across fields, checked by calc/ (calculation-request.ts).
    probabilities: Type.Array(
      Type.Number({ minimum: 0, maximum: 1, 'x-rule': 'a probability from 0 to 1' }),
      {
        minItems: 1,
        maxItems: FORECAST_TARGETS_MAX,
        description: 'REQUIRED. One per target, each from 0 to 1, summing to 1.',
      },
    ),
  },
  {
    description:
      'A view on one security: its expected log-return is Σ p·ln(target/price) over `years` (calc-methodology §13).',
  },
);

export const VolatilitySurface = Type.Object(
  {
    symbol: Symbol('REQUIRED. The underlying whose options this surface prices.'),
    // Ascending axes and a grid matching them: rules across items and fields, checked by calc/.
    time_to_expiration: Type.Array(Type.Number({ minimum: 0, 'x-rule': 'a number of years, 0 or more' }), {
      minItems: 1,
      maxItems: SURFACE_AXIS_MAX,
      description: 'REQUIRED. Years, ascending.',
    }),
    moneyness: Type.Array(Type.Number({ exclusiveMinimum: 0, 'x-rule': 'a ratio K/S greater than 0' }), {
      minItems: 1,
      maxItems: SURFACE_AXIS_MAX,
      description: 'REQUIRED. Strike over spot (K/S), ascending.',
    }),
    volatilities: Type.Array(
      Type.Array(Type.Number({ exclusiveMinimum: 0, 'x-rule': 'an annualised volatility greater than 0' }), {
        minItems: 1,
        maxItems: SURFACE_AXIS_MAX,
      }),
      {
        minItems: 1,
        maxItems: SURFACE_AXIS_MAX,
        description: 'REQUIRED. One row per time to expiration, one column per moneyness (annualised).',
      },
    ),
  },
  { description: 'Implied volatilities of one underlying, interpolated bilinearly (calc-methodology §11).' },
);

const volatilityHalfLife = choice(HALF_LIVES, `Months, default 2: ${HALF_LIVES.join(', ')} (0: no decay).`);
const sampling = choice(SAMPLINGS, '1 (daily, default) or 5 (weekly, non-overlapping).');

/** The fields every calculation body of §1–§19 shares (each analytics body takes a part of them). */
export const commonFields = {
  portfolio_id: nullable(
    EntityId(PORTFOLIO.idPrefix!),
    'A stored portfolio: its securities, date, base_currency and nlv are used where the body leaves them out.',
  ),
  // More than 250 positions only with nlv, and distinct ids: rules across fields and items, checked
  // by the engine (positionsOf), where a stored portfolio's securities meet the body's nlv.
  securities: nullable(
    Type.Array(SecurityInput, { maxItems: SECURITIES_MAX_WITH_NLV }),
    `REQUIRED unless portfolio_id. Security objects; at most ${SECURITIES_MAX}, or ${SECURITIES_MAX_WITH_NLV} when nlv is given.`,
  ),
  date: Type.Optional(NullableDate),
  base_currency: nullable(
    CurrencyCode,
    'ISO 4217, default USD (or the portfolio’s). Positions in other currencies carry FX risk; a currency with no FX series is listed in unmapped_tickers.',
  ),
  nlv: nullable(
    Type.Number(),
    'Net liquidation value; default null (the sum of the cash-settled positions’ values).',
  ),
  sampling,
  aggregation: choice(
    AGGREGATIONS,
    'Default position (one result per position); otherwise one result per group (calc-methodology §14), its id the group label, each the exact sum of its positions, sorted by label with Unclassified (attribute missing) last.',
  ),
  projection: nullable(
    Type.Array(Symbol('A factor security.'), { minItems: 1, maxItems: MAX_PROJECTIONS, uniqueItems: true }),
    `Factor securities, default ["IND:SPX"], 1 to ${MAX_PROJECTIONS}, each once.`,
  ),
  volatility_half_life: volatilityHalfLife,
  correlation_half_life: choice(HALF_LIVES, `Months, default 6: ${HALF_LIVES.join(', ')} (0: no decay).`),
  // The grammar, with nested parentheses, is more than a pattern states: parsed by the engine.
  filter: nullable(
    StorableText({ maxLength: 2000 }),
    "Filter expression (calc-methodology §15), default null (the whole portfolio): calls combined with and, or, not(…) and parentheses, e.g. exposure('long') and not(currency('foreign securities')). Functions: currency('foreign securities'|'domestic securities'), exposure('long'|'short'), type('equity option long delta'|'equity option short delta'|'future option long delta'|'future option short delta'|'foreign equity long'|'foreign equity short'|'us equity long'|'us equity short'|'fx forward'|'fx option long delta'|'fx option short delta'), liquidity('0-5%'|'5-25%'|'25-50%'|'50-100%'|'100-300%'|'>300%'). The calculation runs on the whole portfolio and reports the matching positions (or their groups); no match reports every position. A malformed expression is a 400 naming the position of the error.",
  ),
  forecasts: nullable(
    Type.Array(Forecast, { maxItems: SECURITIES_MAX_WITH_NLV }),
    'Views on securities’ returns; default none.',
  ),
  volatility_surface: nullable(
    Type.Array(VolatilitySurface, { maxItems: SECURITIES_MAX_WITH_NLV }),
    'Option volatilities per underlying; default none (implied from market_price, else historical).',
  ),
  drift: Type.Optional(
    Type.Union([...LooseBoolean.anyOf, Type.Null()], {
      'x-rule': 'true or false (or null)',
      description:
        'Default false (zero-centred). True: every driver drifts at its EWMA mean (calc-methodology §13).',
    }),
  ),
  workspace: WorkspaceParam,
};

const StressTestFields = Type.Object({
  ...commonFields,
  horizon: choice(
    HORIZONS,
    'Days: 1, 5 (default), 20, 60, or null (the smallest horizon in which the magnitude is observable).',
  ),
  shock: nullable(Symbol('A symbol.'), 'The shocked security, default IND:SPX.'),
  magnitude: Type.Number({
    description: `REQUIRED. Decimal shock greater than -1 and at most ${MAX_RELATIVE_MOVE} (-0.10 for -10%); for a RATE:/SPREAD: shock an absolute move of magnitude × 100 points, from -${MAX_LEVEL_SHOCK} to ${MAX_LEVEL_SHOCK}.`,
  }),
  confidence: choice(CONFIDENCES, `Default 95%: ${CONFIDENCES.join(', ')}.`),
});

/**
 * The largest move a price takes (a relative move of at most MAX_RELATIVE_MOVE), as its own rule
 * beside "greater than -1" (allOf), so each is refused in its own words.
 */
const atMostRelativeMove = (what: string) => ({
  maximum: MAX_RELATIVE_MOVE,
  'x-rule': `${what} of at most ${MAX_RELATIVE_MOVE} (+10,000%)`,
});

/**
 * A price cannot fall by 100%, nor rise past +10,000%; a rate or spread moves by magnitude × 100
 * points either way (§12), at most 1,000. Bounded so that the shock's P&L is a number (§7; calc/
 * refuses naming magnitude a book it would still overflow, calc/figures.ts).
 */
const MAGNITUDE_OF_THE_SHOCK = Type.Unsafe<unknown>({
  if: {
    type: 'object',
    required: ['shock'],
    properties: { shock: { type: 'string', pattern: '^(RATE|SPREAD):' } },
  },
  then: {
    type: 'object',
    properties: {
      magnitude: {
        type: 'number',
        minimum: -MAX_LEVEL_SHOCK,
        maximum: MAX_LEVEL_SHOCK,
        'x-rule': `from -${MAX_LEVEL_SHOCK} to ${MAX_LEVEL_SHOCK} for a RATE: or SPREAD: shock (at most 1,000 points either way)`,
      },
    },
  },
  else: {
    type: 'object',
    properties: {
      magnitude: {
        type: 'number',
        exclusiveMinimum: -1,
        'x-rule': 'a decimal shock greater than -1 (-0.10 for -10%)',
        allOf: [atMostRelativeMove('a decimal shock')],
      },
    },
  },
});

export const StressTestBody = body(
  StressTestFields,
  [SECURITIES_UNLESS_PORTFOLIO_ID, MAGNITUDE_OF_THE_SHOCK],
  `magnitude is required, and securities unless portfolio_id; magnitude is greater than -1 and at most ${MAX_RELATIVE_MOVE}, or from -${MAX_LEVEL_SHOCK} to ${MAX_LEVEL_SHOCK} when shock is a RATE: or SPREAD: symbol.`,
);
export type StressTestBody = Static<typeof StressTestBody>;

export const RiskAttributionBody = body(
  Type.Object({
    ...commonFields,
    horizon: Type.Optional(
      Type.Union(
        HORIZONS.map((h) => Type.Literal(h)),
        { description: 'Days: 1, 5 (default), 20, 60.' },
      ),
    ),
    risk_measure: choice(RISK_MEASURES, 'vol (default, annualised volatility), var or cvar.'),
    confidence: choice(CONFIDENCES, `Tail of var and cvar, default 95%: ${CONFIDENCES.join(', ')}.`),
  }),
  [SECURITIES_UNLESS_PORTFOLIO_ID],
  'securities is required unless portfolio_id.',
);
export type RiskAttributionBody = Static<typeof RiskAttributionBody>;

/**
 * What the engine reads of a body of §1–§19: each of those bodies is one (each declares these
 * fields or a part of them, with these types).
 */
export type CalculationBody = Partial<StressTestBody> & Pick<RiskAttributionBody, 'risk_measure'>;

// ------------------------------------------------------------------------ §16–§19: the analytics

const {
  portfolio_id,
  securities,
  date,
  base_currency,
  nlv,
  aggregation,
  projection,
  correlation_half_life,
  filter,
  forecasts,
  volatility_surface,
  drift,
  workspace,
} = commonFields;

const book = {
  portfolio_id,
  securities,
  date,
  base_currency,
  nlv,
  aggregation,
  filter,
  volatility_surface,
  workspace,
};

/** Only the calendar: exposure and sensitivities model no risk. */
const calendarProjection = Type.Optional(
  Type.Union(
    [
      Type.Array(StorableText({ minLength: 1, maxLength: 200, description: 'A security.' }), {
        minItems: 1,
        maxItems: MAX_PROJECTIONS,
        uniqueItems: true,
      }),
      Type.Null(),
    ],
    {
      description:
        'Default ["IND:SPX"]. Only its first symbol is used, for the calendar of dates (and the EWMA volatility of options priced without a surface or market price).',
    },
  ),
);

/** An option priced without a surface or a market price takes its underlying's EWMA volatility. */
const optionVolatility = {
  sampling: choice(
    SAMPLINGS,
    '1 (daily, default) or 5 (weekly): the returns of the EWMA volatility of options priced without a surface or market price.',
  ),
  volatility_half_life: choice(
    HALF_LIVES,
    `Months, default 2: ${HALF_LIVES.join(', ')} (0: no decay), of the EWMA volatility of options priced without a surface or market price.`,
  ),
};

const confidence = choice(CONFIDENCES, `Default 95%: ${CONFIDENCES.join(', ')}.`);

export const ExposureBody = body(
  Type.Object({ ...book, ...optionVolatility, projection: calendarProjection }),
  [SECURITIES_UNLESS_PORTFOLIO_ID],
  'securities is required unless portfolio_id.',
);
export type ExposureBody = Static<typeof ExposureBody>;

export const ParametricRiskAttributionBody = body(
  Type.Object({
    ...book,
    sampling,
    projection,
    volatility_half_life: volatilityHalfLife,
    correlation_half_life,
    confidence,
    historical_days: Type.Optional(
      Type.Union(
        [
          Type.Integer({
            minimum: MIN_HISTORICAL_DAYS,
            maximum: MAX_HISTORICAL_DAYS,
            'x-rule': `a whole number of observations from ${MIN_HISTORICAL_DAYS} to ${MAX_HISTORICAL_DAYS}`,
          }),
          Type.Null(),
        ],
        {
          description: `Window length in observations, ${MIN_HISTORICAL_DAYS} to ${MAX_HISTORICAL_DAYS}; default 1260 (sampling 1) or 252 (sampling 5).`,
        },
      ),
    ),
    exponential_decay: Type.Optional(
      Type.Union(
        [
          Type.Number({
            exclusiveMinimum: 0,
            maximum: 1,
            'x-rule': 'a number greater than 0 and at most 1',
          }),
          Type.Null(),
        ],
        {
          description:
            'λ of the weights λ^(T−t) for volatilities and correlations alike (replaces both half-lives); 1 = equal weights.',
        },
      ),
    ),
    use_cashflow: looseBoolean(
      'Default true. No instrument has a cash-flow schedule yet, so it changes nothing (the response says so in notes).',
    ),
  }),
  [SECURITIES_UNLESS_PORTFOLIO_ID],
  'securities is required unless portfolio_id.',
);
export type ParametricRiskAttributionBody = Static<typeof ParametricRiskAttributionBody>;

const sensitivityFields = {
  sensitivity_type: choice(SENSITIVITY_TYPES, 'delta (default), gamma, vega or theta.'),
  compute_notional: looseBoolean(
    'Default false: the Greek per unit. True: in base currency, q·m·fx × (Δ·S | Γ·S²·0.01 | vega | θ), summed per group and in total.',
  ),
};

export const SensitivityBody = body(
  Type.Object({ ...book, ...optionVolatility, projection: calendarProjection, ...sensitivityFields }),
  [SECURITIES_UNLESS_PORTFOLIO_ID],
  'securities is required unless portfolio_id.',
);
export type SensitivityBody = Static<typeof SensitivityBody>;

export const UnderlyingStressSensitivityBody = body(
  Type.Object({
    ...book,
    ...optionVolatility,
    projection: calendarProjection,
    ...sensitivityFields,
    stress_values: Type.Array(
      Type.Number({
        exclusiveMinimum: -1,
        'x-rule': 'a relative move greater than -1',
        allOf: [atMostRelativeMove('a relative move')],
      }),
      {
        minItems: 1,
        maxItems: MAX_STRESS_VALUES,
        description: `REQUIRED. 1 to ${MAX_STRESS_VALUES} relative moves of each position's underlying, each > -1 and ≤ ${MAX_RELATIVE_MOVE} (e.g. [-0.1, 0, 0.1]).`,
      },
    ),
  }),
  [SECURITIES_UNLESS_PORTFOLIO_ID],
  'stress_values is required, and securities unless portfolio_id.',
);
export type UnderlyingStressSensitivityBody = Static<typeof UnderlyingStressSensitivityBody>;

export const PropertiesBody = body(
  Type.Object({
    ...book,
    sampling,
    projection,
    volatility_half_life: volatilityHalfLife,
    correlation_half_life,
    forecasts,
    drift,
    horizon: Type.Optional(
      Type.Union([...HORIZONS.map((h) => Type.Literal(h))], {
        description:
          'Days: 1, 5 (default), 20, 60 (Monte Carlo var and cvar; parametric ones scaled by √(h/s)).',
      }),
    ),
    confidence,
  }),
  [SECURITIES_UNLESS_PORTFOLIO_ID],
  'securities is required unless portfolio_id.',
);
export type PropertiesBody = Static<typeof PropertiesBody>;

// ------------------------------------------------------------------------------- §20, §21: whole books

const PortfolioRef = EntityId(
  PORTFOLIO.idPrefix!,
  'A stored portfolio (its securities, date, base_currency and nlv).',
);

/** A book given inline, as the clients send it. */
export const InlineBook = Type.Object(
  {
    securities: Type.Array(SecurityInput, {
      maxItems: SECURITIES_MAX_WITH_NLV,
      description: `REQUIRED. Security objects; at most ${SECURITIES_MAX}, or ${SECURITIES_MAX_WITH_NLV} when nlv is given.`,
    }),
    date: Type.Optional(NullableDate),
    base_currency: Type.Optional(Type.Union([CurrencyCode, Type.Null()], { description: 'Default USD.' })),
    nlv: Type.Optional(
      Type.Union([Type.Number(), Type.Null()], { description: 'Default: the cash-settled values.' }),
    ),
  },
  { description: 'A book given inline.' },
);
export type InlineBook = Static<typeof InlineBook>;

const BookRef = (description: string) =>
  Type.Union([PortfolioRef, InlineBook], {
    'x-rule': 'a portfolio id or an object with securities',
    description,
  });

const nullableNumber = <T extends TSchema>(schema: T, description: string) =>
  Type.Optional(Type.Union([schema, Type.Null()], { description }));

export const MarginalTrackingErrorBody = Type.Object(
  {
    portfolio1: BookRef(
      'REQUIRED. The book analysed: a portfolio id or {securities, date, base_currency, nlv}. Its date (null: the latest) and base currency are the calculation’s.',
    ),
    portfolio2: BookRef(
      'REQUIRED. The benchmark book, valued at portfolio1’s date and base currency (its own nlv is used).',
    ),
    weekly: looseBoolean(
      'Default false: daily returns. True: non-overlapping 5-day returns, annualised by 52.',
    ),
    nDays: nullableNumber(
      Type.Integer({
        minimum: TE_DAYS.min,
        maximum: TE_DAYS.max,
        'x-rule': `a whole number from ${TE_DAYS.min} to ${TE_DAYS.max}`,
      }),
      `Daily returns in the window (weekly false), ${TE_DAYS.min}–${TE_DAYS.max}; default ${TE_DAYS.default}.`,
    ),
    nWeeks: nullableNumber(
      Type.Integer({
        minimum: TE_WEEKS.min,
        maximum: TE_WEEKS.max,
        'x-rule': `a whole number from ${TE_WEEKS.min} to ${TE_WEEKS.max}`,
      }),
      `Weekly returns in the window (weekly true), ${TE_WEEKS.min}–${TE_WEEKS.max}; default ${TE_WEEKS.default}.`,
    ),
    EWMA: looseBoolean('Default false: equal weights. True: weights λ^(T−t).'),
    exponential_decay: nullableNumber(
      Type.Number({
        exclusiveMinimum: 0,
        exclusiveMaximum: 1,
        'x-rule': 'a number greater than 0 and less than 1',
      }),
      `λ of the EWMA weights, default ${TE_DECAY_DEFAULT}; checked whenever given, used only with EWMA.`,
    ),
    workspace,
  },
  { description: 'portfolio1 and portfolio2 are required.' },
);
export type MarginalTrackingErrorBody = Static<typeof MarginalTrackingErrorBody>;

const BacktestDate = Type.Union([
  Type.String({
    pattern: `^(?:${datePattern()}|${datePattern('-')})$`,
    'x-rule': 'a date as YYYYMMDD or YYYY-MM-DD',
  }),
  Type.Null(),
]);

const caseless = (word: string) => [...word].map((c) => `[${c.toUpperCase()}${c}]`).join('');

const Ticker = (description: string) =>
  Type.Optional(Type.Union([StorableText({ minLength: 1, maxLength: 200 }), Type.Null()], { description }));

const ignored = (description: string) => Type.Optional(Type.Unknown({ description }));

/** `portfolio` is the whole book: with it, neither portfolio_id nor securities (absent or null). */
const WHOLE_BOOK_ALONE = Type.Unsafe<unknown>({
  anyOf: [
    { type: 'object', properties: { portfolio: { type: 'null' } } },
    { type: 'object', properties: { portfolio_id: { type: 'null' }, securities: { type: 'null' } } },
  ],
  'x-message': 'portfolio is the whole book: do not combine it with portfolio_id or securities.',
});

export const BacktestBody = body(
  Type.Object({
    portfolio: Type.Optional(
      Type.Union([PortfolioRef, InlineBook, Type.Null()], {
        description:
          'The clients’ name for the book: a portfolio id or {securities, date, base_currency, nlv}. Not together with portfolio_id or securities.',
      }),
    ),
    portfolio_id,
    securities,
    date,
    base_currency,
    nlv,
    backtest_date1: Type.Optional({
      ...BacktestDate,
      description: 'Start: YYYYMMDD or YYYY-MM-DD; default backtest_date2 less one year.',
    }),
    backtest_date2: Type.Optional({
      ...BacktestDate,
      description: 'End: YYYYMMDD or YYYY-MM-DD; default date (null: the latest); not after date.',
    }),
    backtest_periodicity: Type.Optional(
      Type.Union(
        [
          Type.String({
            pattern: `^(?:${PERIODICITIES.map(caseless).join('|')})$`,
            'x-rule': 'daily, weekly or monthly (any case)',
          }),
          Type.Null(),
        ],
        { description: 'daily (default), weekly or monthly; any case.' },
      ),
    ),
    backtest_benchmark_ticker: Ticker(
      `Default ${DEFAULT_BENCHMARK} (no benchmark when it has no stored series; its figures are then null).`,
    ),
    backtest_rfrate_ticker: Ticker(
      'Default none (rf = 0). A RATE: symbol is a yield in percent; anything else a price.',
    ),
    projection_tickers: Type.Optional(
      Type.Union(
        [
          Type.Array(StorableText({ minLength: 1, maxLength: 200 }), {
            maxItems: MAX_PROJECTION_TICKERS,
            uniqueItems: true,
          }),
          Type.Null(),
        ],
        { description: `0–${MAX_PROJECTION_TICKERS} symbols: each one’s series, beta and correlation.` },
      ),
    ),
    output_type: Type.Optional(
      Type.Union([...OUTPUT_TYPES.map((t) => Type.Literal(t)), Type.Null()], {
        description:
          'full (the series too; detailed is the same) or summary (statistics only). Default: full for backtest, summary for backtest_statistics.',
      }),
    ),
    user_id: ignored('Ignored (the clients send it).'),
    user_role: ignored('Ignored (the clients send it).'),
    time_zone: ignored('Ignored (the clients send it).'),
    workspace,
  }),
  [
    WHOLE_BOOK_ALONE,
    requiredUnless(
      'securities',
      ['portfolio', 'portfolio_id'],
      'securities is required unless portfolio or portfolio_id is given.',
    ),
  ],
  'The book: portfolio, or portfolio_id or securities.',
);
export type BacktestBody = Static<typeof BacktestBody>;

// ------------------------------------------------------------------------------ one validator each

/** Each calculation's body by the name of its endpoint (POST /calculations/<name>). */
export const CALCULATION_BODIES = {
  stress_test: StressTestBody,
  risk_attribution: RiskAttributionBody,
  exposure: ExposureBody,
  parametric_risk_attribution: ParametricRiskAttributionBody,
  sensitivity: SensitivityBody,
  underlying_stress_sensitivity: UnderlyingStressSensitivityBody,
  properties: PropertiesBody,
  marginal_tracking_error: MarginalTrackingErrorBody,
  backtest: BacktestBody,
  backtest_statistics: BacktestBody,
} as const;
export type CalculationName = keyof typeof CALCULATION_BODIES;
export type CalculationBodyOf<K extends CalculationName> = Static<(typeof CALCULATION_BODIES)[K]>;

const VALIDATORS = Object.fromEntries(
  Object.entries(CALCULATION_BODIES).map(([name, schema]) => [name, bodyValidator(schema)]),
) as Record<CalculationName, (value: unknown) => void>;

/**
 * A body from a caller without a route (a worker's SDK call), validated with the route's schema by
 * the API's validator, so it is refused with the API's own message; typed from then on.
 */
export function validateCalculationBody<K extends CalculationName>(
  name: K,
  value: unknown,
): CalculationBodyOf<K> {
  VALIDATORS[name](value);
  return value as CalculationBodyOf<K>;
}

/**
 * The fields a body's schema declares, and only those. A body may carry other keys (the clients send
 * some), which no schema checked: the engine never reads them.
 */
export function declaredFields<K extends CalculationName>(name: K, value: CalculationBodyOf<K>) {
  const schema: TSchema = CALCULATION_BODIES[name];
  const fields = (schema.allOf?.[0] ?? schema) as TObject;
  const given = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(fields.properties)
      .filter((key) => key in given)
      .map((key) => [key, given[key]]),
  ) as CalculationBodyOf<K>;
}
