import { type TSchema, Type } from '@sinclair/typebox';
import { CONFIDENCES, HORIZONS } from '../../engine/calculations/calculation-service';
import {
  MAX_HISTORICAL_DAYS,
  MAX_STRESS_VALUES,
  MIN_HISTORICAL_DAYS,
  SENSITIVITY_TYPES,
} from '../../engine/calculations/analytics';
import { commonFields } from './calculation';
import { LooseBoolean, StorableText } from '../../engine/store/field-schemas';

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
