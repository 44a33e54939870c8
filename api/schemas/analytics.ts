import { type TSchema, Type } from '@sinclair/typebox';
import { PERIODICITIES } from '../../engine/calculations/book-analytics';

/**
 * The responses of the analytics beside the stress test (calc-methodology §16–§21), with the field
 * names the Python clients read. Their request bodies are the engine's (engine/calculations/
 * calculation-schemas.ts), validated with the same schemas for the API and the workers' SDK.
 */

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
