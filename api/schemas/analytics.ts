import { type TSchema, Type } from '@sinclair/typebox';
import { CONFIDENCES, HORIZONS } from '../../engine/calculations/calculation-service';
import {
  MAX_HISTORICAL_DAYS,
  MAX_STRESS_VALUES,
  MIN_HISTORICAL_DAYS,
  SENSITIVITY_TYPES,
} from '../../engine/calculations/analytics';
import { commonFields } from './calculation';
import {
  CurrencyCode,
  datePattern,
  EntityId,
  LooseBoolean,
  NullableDate,
  StorableText,
} from '../../engine/store/field-schemas';
import {
  DEFAULT_BENCHMARK,
  MAX_PROJECTION_TICKERS,
  OUTPUT_TYPES,
  PERIODICITIES,
  TE_DAYS,
  TE_DECAY_DEFAULT,
  TE_WEEKS,
} from '../../engine/calculations/book-analytics';
import { PORTFOLIO } from '../../engine/kinds/portfolio';
import { SECURITIES_MAX } from '../../engine/kinds/security-positions';
import { SECURITIES_MAX_WITH_NLV, SecurityInput } from '../../engine/kinds/security-schemas';

/**
 * Bodies and responses of the analytics beside the stress test (calc-methodology §16–§19), with the
 * field names the Python clients send. The common fields are the two simulated calculations' own;
 * what a schema cannot state (a portfolio that exists, 3000 securities only with nlv) is checked by
 * the engine, which also checks the same bodies for the workers' SDK.
 */

function choice<T extends string | number>(values: readonly T[], description: string) {
  const options: TSchema[] = [...values.map((value) => Type.Literal(value)), Type.Null()];
  return Type.Optional(Type.Union(options, { description }));
}

function looseBoolean(description: string) {
  return Type.Optional(
    Type.Union([...LooseBoolean.anyOf, Type.Null()], { 'x-rule': 'true or false (or null)', description }),
  );
}

const {
  portfolio_id,
  securities,
  date,
  base_currency,
  nlv,
  sampling,
  aggregation,
  projection,
  volatility_half_life,
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
        maxItems: 15,
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

const confidence = choice(CONFIDENCES, `Default 95%: ${CONFIDENCES.join(', ')}.`);

export const ExposureBody = Type.Object(
  { ...book, sampling, projection: calendarProjection },
  { description: 'securities is required unless portfolio_id.' },
);

export const ParametricRiskAttributionBody = Type.Object(
  {
    ...book,
    sampling,
    projection,
    volatility_half_life,
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
  },
  { description: 'securities is required unless portfolio_id.' },
);

const sensitivityFields = {
  sensitivity_type: choice(SENSITIVITY_TYPES, 'delta (default), gamma, vega or theta.'),
  compute_notional: looseBoolean(
    'Default false: the Greek per unit. True: in base currency, q·m·fx × (Δ·S | Γ·S²·0.01 | vega | θ), summed per group and in total.',
  ),
};

export const SensitivityBody = Type.Object(
  { ...book, projection: calendarProjection, ...sensitivityFields },
  { description: 'securities is required unless portfolio_id.' },
);

export const UnderlyingStressSensitivityBody = Type.Object(
  {
    ...book,
    projection: calendarProjection,
    ...sensitivityFields,
    stress_values: Type.Array(
      Type.Number({ exclusiveMinimum: -1, 'x-rule': 'a relative move greater than -1' }),
      {
        minItems: 1,
        maxItems: MAX_STRESS_VALUES,
        description: `REQUIRED. 1 to ${MAX_STRESS_VALUES} relative moves of each position's underlying, each > -1 (e.g. [-0.1, 0, 0.1]).`,
      },
    ),
  },
  { description: 'stress_values is required, and securities unless portfolio_id.' },
);

export const PropertiesBody = Type.Object(
  {
    ...book,
    sampling,
    projection,
    volatility_half_life,
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
  },
  { description: 'securities is required unless portfolio_id.' },
);

// ------------------------------------------------------------------------------------------------ responses

const Unmapped = Type.Array(Type.String(), { description: 'Symbols without market data.' });
const ProjectionValues = Type.Array(
  Type.Object({
    projection: Type.String({ description: 'A projection symbol or the word residual.' }),
    value: Type.Number(),
  }),
);

export const Exposure = Type.Object(
  {
    nlv: Type.Number({ description: 'The NLV every fraction is of (supplied, or the cash-settled values).' }),
    base_currency: Type.String(),
    unmapped_tickers: Unmapped,
    results: Type.Array(
      Type.Object({
        id: Type.String({ description: 'Position id, or the group label.' }),
        notional: Type.Number({ description: 'Value in base currency (an option at its premium).' }),
        delta_notional: Type.Number({
          description: 'Delta-adjusted exposure in base currency (q·m·fx·Δ·S for an option).',
        }),
        exposure: Type.Number({ description: 'delta_notional / nlv.' }),
      }),
    ),
    long: Type.Number({ description: 'Σ of the reported positions’ positive exposures.' }),
    short: Type.Number({ description: 'Σ of their negative exposures (≤ 0).' }),
    gross: Type.Number({ description: 'long − short.' }),
    net: Type.Number({ description: 'long + short.' }),
  },
  { $id: 'Exposure', title: 'Exposure' },
);

export const ParametricRiskAttribution = Type.Object(
  {
    unmapped_tickers: Unmapped,
    volatility: Type.Number({ description: 'Annualised volatility of P&L / nlv.' }),
    var: Type.Number({
      description: 'Value at risk over one sampling interval, a negative fraction of nlv.',
    }),
    cvar: Type.Number({ description: 'Conditional value at risk over one sampling interval (negative).' }),
    confidence: Type.String(),
    results: Type.Array(
      Type.Object({
        id: Type.String(),
        volatility: ProjectionValues,
        var: ProjectionValues,
        cvar: ProjectionValues,
      }),
      {
        description: 'Euler components; over every position and projection they sum to the portfolio figure.',
      },
    ),
    notes: Type.Array(Type.String()),
  },
  { $id: 'ParametricRiskAttribution', title: 'ParametricRiskAttribution' },
);

export const Sensitivity = Type.Object(
  {
    unmapped_tickers: Unmapped,
    sensitivity_type: Type.String(),
    compute_notional: Type.Boolean(),
    results: Type.Array(
      Type.Object({
        id: Type.String(),
        value: Type.Union([Type.Number(), Type.Null()], {
          description: 'Null for a group of per-unit Greeks (they do not add up).',
        }),
      }),
    ),
    total: Type.Union([Type.Number(), Type.Null()], {
      description: 'Sum of the reported notional values; null for per-unit Greeks.',
    }),
  },
  { $id: 'Sensitivity', title: 'Sensitivity' },
);

const StressValues = Type.Array(Type.Object({ stress: Type.Number(), value: Type.Number() }));

export const UnderlyingStressSensitivity = Type.Object(
  {
    unmapped_tickers: Unmapped,
    results: Type.Array(Type.Object({ id: Type.String(), values: StressValues }), {
      description: 'P&L / nlv of a full revaluation at S·(1 + stress), per position or group.',
    }),
    total: StressValues,
  },
  { $id: 'UnderlyingStressSensitivity', title: 'UnderlyingStressSensitivity' },
);

export const Properties = Type.Object(
  {
    nlv: Type.Number(),
    base_currency: Type.String(),
    unmapped_tickers: Unmapped,
    long: Type.Number(),
    short: Type.Number(),
    gross: Type.Number(),
    net: Type.Number(),
    betas: ProjectionValues,
    volatility: Type.Number({ description: 'Annualised (risk attribution vol).' }),
    var: Type.Number({ description: 'Monte Carlo VaR at horizon and confidence (risk attribution var).' }),
    cvar: Type.Number({ description: 'Monte Carlo CVaR (risk attribution cvar).' }),
    parametric_var: Type.Number({ description: 'Parametric VaR scaled to the horizon by √(h/s).' }),
    parametric_cvar: Type.Number(),
    delta: Type.Number({ description: 'Σ delta-notional in base currency.' }),
    gamma: Type.Number(),
    vega: Type.Number(),
    theta: Type.Number(),
  },
  { $id: 'Properties', title: 'Properties' },
);

// ------------------------------------------------------------------------------- §20, §21: whole books

const PortfolioRef = EntityId(
  PORTFOLIO.idPrefix!,
  'A stored portfolio (its securities, date, base_currency and nlv).',
);

/** A book given inline, as the clients send it. */
const InlineBook = Type.Object(
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

const BookRef = (description: string) =>
  Type.Union([PortfolioRef, InlineBook], {
    'x-rule': 'a portfolio id or an object with securities',
    description,
  });

const nullableNumber = (schema: TSchema, description: string) =>
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

export const BacktestBody = Type.Object(
  {
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
  },
  { description: 'The book: portfolio, or portfolio_id or securities.' },
);

const Nullable = (schema: TSchema) => Type.Union([schema, Type.Null()]);

export const MarginalTrackingError = Type.Object(
  {
    date: Type.String({ description: 'YYYYMMDD: the last calendar day on or before portfolio1’s date.' }),
    base_currency: Type.String(),
    weekly: Type.Boolean(),
    observations: Type.Integer({ description: 'n: the returns in the window.' }),
    unmapped_tickers: Unmapped,
    te: Type.Number({ description: 'Annualised tracking error √A·sqrt(w_aᵀΣw_a).' }),
    results: Type.Array(
      Type.Object({
        id: Type.String({ description: 'The symbol’s first position in portfolio1, else in portfolio2.' }),
        symbol: Type.String(),
        weight_active: Type.Number({ description: 'w1 − w2 (fractions of each book’s NLV).' }),
        mte: Type.Number({ description: 'Marginal tracking error A·(Σw_a)_k / TE.' }),
        cte: Type.Number({ description: 'weight_active × mte; they sum to te.' }),
      }),
    ),
  },
  { $id: 'MarginalTrackingError', title: 'MarginalTrackingError' },
);

const PeriodReturn = Type.Object({ date: Type.String(), return: Type.Number() });

const BacktestStatistics = Type.Object({
  total_return: Type.Number(),
  annualized_return: Type.Number(),
  volatility: Type.Number(),
  sharpe: Nullable(Type.Number()),
  sortino: Nullable(Type.Number()),
  max_drawdown: Type.Number({ description: '≤ 0, on the sampled series.' }),
  max_drawdown_peak: Nullable(Type.String()),
  max_drawdown_trough: Nullable(Type.String()),
  beta: Nullable(Type.Number()),
  alpha: Nullable(Type.Number()),
  correlation: Nullable(Type.Number()),
  tracking_error: Nullable(Type.Number()),
  information_ratio: Nullable(Type.Number()),
  hit_rate: Type.Number({ description: 'The fraction of periods with a positive return.' }),
  best_period: PeriodReturn,
  worst_period: PeriodReturn,
  benchmark: Nullable(
    Type.Object({
      total_return: Type.Number(),
      annualized_return: Type.Number(),
      volatility: Type.Number(),
      max_drawdown: Type.Number(),
    }),
  ),
  projections: Type.Array(
    Type.Object({
      symbol: Type.String(),
      beta: Nullable(Type.Number()),
      correlation: Nullable(Type.Number()),
    }),
  ),
});

const BacktestSeries = Type.Object({
  dates: Type.Array(Type.String(), { description: 't_0 … t_n, YYYYMMDD.' }),
  portfolio: Type.Array(Type.Number(), { description: '100·NAV(t_k)/NAV(t_0).' }),
  benchmark: Nullable(Type.Array(Type.Number())),
  returns: Type.Array(Type.Number()),
  benchmark_returns: Nullable(Type.Array(Type.Number())),
  rf_returns: Type.Array(Type.Number()),
  projections: Type.Array(Type.Object({ symbol: Type.String(), values: Type.Array(Type.Number()) })),
});

const backtestFields = {
  start: Type.String({ description: 't_0, YYYYMMDD.' }),
  end: Type.String({ description: 't_n, YYYYMMDD.' }),
  periodicity: Type.Union(PERIODICITIES.map((p) => Type.Literal(p))),
  periods: Type.Integer(),
  base_currency: Type.String(),
  nlv: Type.Number({ description: 'NAV(t_0): the 100 of the indexed series.' }),
  benchmark_ticker: Nullable(Type.String()),
  rfrate_ticker: Nullable(Type.String()),
  unmapped_tickers: Unmapped,
  statistics: BacktestStatistics,
  series: Type.Optional(BacktestSeries),
};

export const Backtest = Type.Object(backtestFields, { $id: 'Backtest', title: 'Backtest' });
export const BacktestStatisticsResult = Type.Object(backtestFields, {
  $id: 'BacktestStatistics',
  title: 'BacktestStatistics',
});
