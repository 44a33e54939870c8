import { PORTFOLIO } from '../../engine/kinds/portfolio';
import { type TSchema, Type } from '@sinclair/typebox';
import {
  AGGREGATIONS,
  CONFIDENCES,
  HALF_LIVES,
  HORIZONS,
  MAX_PROJECTIONS,
  RISK_MEASURES,
  SAMPLINGS,
} from '../../engine/calculations/calculation-service';
import { SECURITIES_MAX } from '../../engine/kinds/security-positions';
import {
  CurrencyCode,
  EntityId,
  LooseBoolean,
  NullableDate,
  StorableText,
  WorkspaceParam,
} from '../../engine/store/field-schemas';
import { SECURITIES_MAX_WITH_NLV, SecurityInput } from '../../engine/kinds/security-schemas';

/**
 * The calculation request bodies, field by field (spec: Calculations, Calculation parameter types;
 * model: calc-methodology.md). Every optional field also takes null, meaning its default, as the
 * Python clients send it. What a schema cannot state stays in the engine, which also checks the same
 * body for workflow steps (sdk.runStressTest): 3000 securities only with nlv, distinct position ids,
 * probabilities summing to 1, a surface's grid matching its axes, an existing portfolio.
 */

/** A choice among constants, or null for the default. */
function choice<T extends string | number>(values: readonly T[], description: string, nullable = true) {
  const options: TSchema[] = values.map((value) => Type.Literal(value));
  if (nullable) options.push(Type.Null());
  return Type.Optional(Type.Union(options, { description }));
}

function nullable(schema: TSchema, description: string) {
  return Type.Optional(Type.Union([schema, Type.Null()], { description }));
}

const Symbol = (description: string) => StorableText({ minLength: 1, maxLength: 200, description });

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

/** The fields every calculation body shares (also those of api/schemas/analytics.ts). */
export const commonFields = {
  portfolio_id: nullable(
    EntityId(PORTFOLIO.idPrefix!),
    'A stored portfolio: its securities, date, base_currency and nlv are used where the body leaves them out.',
  ),
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
  sampling: choice(SAMPLINGS, '1 (daily, default) or 5 (weekly, non-overlapping).'),
  aggregation: choice(
    AGGREGATIONS,
    'Default position (one result per position); otherwise one result per group (calc-methodology §14), its id the group label, each the exact sum of its positions, sorted by label with Unclassified (attribute missing) last.',
  ),
  projection: nullable(
    Type.Array(Symbol('A factor security.'), { minItems: 1, maxItems: MAX_PROJECTIONS, uniqueItems: true }),
    `Factor securities, default ["IND:SPX"], 1 to ${MAX_PROJECTIONS}, each once.`,
  ),
  volatility_half_life: choice(HALF_LIVES, `Months, default 2: ${HALF_LIVES.join(', ')} (0: no decay).`),
  correlation_half_life: choice(HALF_LIVES, `Months, default 6: ${HALF_LIVES.join(', ')} (0: no decay).`),
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

export const StressTestBody = Type.Object(
  {
    ...commonFields,
    horizon: choice(
      HORIZONS,
      'Days: 1, 5 (default), 20, 60, or null (the smallest horizon in which the magnitude is observable).',
    ),
    shock: nullable(Symbol('A symbol.'), 'The shocked security, default IND:SPX.'),
    // Greater than -1 for a relative shock; a RATE:/SPREAD: shock is an absolute move of any size, so the
    // bound depends on the shocked symbol and stays in the engine.
    magnitude: Type.Number({
      description:
        'REQUIRED. Decimal shock greater than -1 (-0.10 for -10%); for a RATE:/SPREAD: shock an absolute move of magnitude × 100 points, any sign or size.',
    }),
    confidence: choice(CONFIDENCES, `Default 95%: ${CONFIDENCES.join(', ')}.`),
  },
  { description: 'magnitude is required, and securities unless portfolio_id.' },
);

export const RiskAttributionBody = Type.Object(
  {
    ...commonFields,
    horizon: choice(HORIZONS, 'Days: 1, 5 (default), 20, 60.', false),
    risk_measure: choice(RISK_MEASURES, 'vol (default, annualised volatility), var or cvar.'),
    confidence: choice(CONFIDENCES, `Tail of var and cvar, default 95%: ${CONFIDENCES.join(', ')}.`),
  },
  { description: 'securities is required unless portfolio_id.' },
);
