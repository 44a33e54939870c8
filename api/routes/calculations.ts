import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  AGGREGATIONS,
  CALCULATION_ENTITY,
  CONFIDENCES,
  HALF_LIVES,
  MAX_PROJECTIONS,
  runRiskAttributionCalculation,
  runStressTestCalculation,
} from '../../engine/calculations/calculation-service';
import type { SimulationBackend } from '../../calc';
import type { Database } from '../../engine/db/database';
import { SECURITIES_MAX, SECURITIES_MAX_WITH_NLV } from '../../engine/portfolios/security-positions';
import { errorResponses } from '../schemas/common';

// Request bodies are validated in the engine (messages name the parameter, `not supported yet` for
// what a later issue brings); the schema documents them. Unknown fields are ignored, as elsewhere.
const doc = (description: string) => Type.Optional(Type.Unknown({ description }));
const commonFields = {
  portfolio_id: doc(
    'A stored portfolio: its securities, date, base_currency and nlv are used where the body leaves them out.',
  ),
  securities: doc(
    `REQUIRED unless portfolio_id. Security objects (id, symbol, quantity, market_price, multiplier, fx_rate, …). ` +
      `At most ${SECURITIES_MAX}, or ${SECURITIES_MAX_WITH_NLV} when nlv is given.`,
  ),
  date: doc('YYYYMMDD, default null (the latest market date). Only prices up to this date are used.'),
  base_currency: doc(
    'Default USD; any ISO 4217 code. Positions in other currencies (their currency, else the master’s, else the base) carry FX risk; a currency with no FX series is listed in unmapped_tickers.',
  ),
  nlv: doc('Net liquidation value; default null (the sum of the positions’ values).'),
  sampling: doc('1 (daily, default) or 5 (weekly, non-overlapping).'),
  aggregation: doc(
    `Default position. One of ${AGGREGATIONS.join(', ')}; only position for now (others: 400 not supported yet).`,
  ),
  projection: doc(`Factor securities, default ["IND:SPX"], at most ${MAX_PROJECTIONS}.`),
  volatility_half_life: doc(`Months, default 2: ${HALF_LIVES.join(', ')}.`),
  correlation_half_life: doc(`Months, default 6: ${HALF_LIVES.join(', ')}.`),
  filter: doc('Filter expression; default null. Not supported yet (400).'),
  volatility_surface: doc(
    'Array of {symbol, time_to_expiration[], moneyness[], volatilities[][]}: prices options on that underlying (bilinear, flat beyond the grid). Without one, an option’s volatility is implied from its market_price, else the underlying’s EWMA volatility.',
  ),
  forecasts: doc(
    'Array of {symbol, years > 0, targets[], probabilities[] (same length, ≥ 0, summing to 1)}: shifts that symbol’s mean by Σp·ln(target/price)·(horizon/252)/years.',
  ),
  drift: doc('Boolean, default false (zero-centred): centre every risk driver on its EWMA mean return.'),
  workspace: doc('Workspace of portfolio_id, default main (also accepted as a query parameter).'),
};
const StressTestBody = Type.Object({
  ...commonFields,
  horizon: doc(
    'Days: 1, 5 (default), 20, 60, or null (the smallest horizon in which the magnitude is observable).',
  ),
  shock: doc('The shocked security, default IND:SPX.'),
  magnitude: doc(
    'REQUIRED. Decimal shock greater than -1 (-0.10 for -10%); for a RATE:/SPREAD: shock an absolute move of magnitude × 100 points, any sign or size.',
  ),
  confidence: doc(`Default 95%: ${CONFIDENCES.join(', ')}.`),
});
const RiskAttributionBody = Type.Object({
  ...commonFields,
  horizon: doc('Days: 1, 5 (default), 20, 60.'),
  risk_measure: doc('vol (default, annualised volatility), var or cvar.'),
  confidence: doc(`Tail of var and cvar, default 95%: ${CONFIDENCES.join(', ')}.`),
});
const WorkspaceQuery = Type.Object({ workspace: Type.Optional(Type.String()) });

const ProjectionValues = Type.Array(
  Type.Object({
    projection: Type.String({ description: 'A projection symbol or the word residual.' }),
    value: Type.Number(),
  }),
);
const StressTest = Type.Object(
  {
    magnitude: Type.Number({ description: 'The shock applied.' }),
    extrapolated: Type.Boolean({ description: 'The magnitude lies outside dynamic_range.' }),
    out_of_range: Type.Boolean({
      description: 'No move this large over the horizon in the shock’s history.',
    }),
    implied_magnitudes: Type.Array(Type.Number(), { description: 'Expected move of each projection.' }),
    results: Type.Array(
      Type.Object({
        id: Type.String(),
        ev: ProjectionValues,
        cvar_neg: ProjectionValues,
        cvar_pos: ProjectionValues,
      }),
      { description: 'One element per mapped security; values are fractions of nlv.' },
    ),
    dynamic_range: Type.Tuple([Type.Number(), Type.Number()], { description: 'Lower and upper bound.' }),
    unmapped_tickers: Type.Array(Type.String(), { description: 'Symbols without market data.' }),
    implied_horizon: Type.Number({ description: 'Days.' }),
  },
  { $id: 'StressTest', title: 'StressTest' },
);
const RiskAttribution = Type.Object(
  {
    unmapped_tickers: Type.Array(Type.String()),
    results: Type.Array(Type.Object({ id: Type.String(), mctr: ProjectionValues })),
  },
  { $id: 'RiskAttribution', title: 'RiskAttribution' },
);

const tags = ['Calculations'];
// Failed runs are audited as EXECUTE on a Calculation, like the successful ones.
const config = { auditEntity: CALCULATION_ENTITY, auditOperation: 'EXECUTE' } as const;

/**
 * `backend` is the process's simulation backend (chosen at start, see engine/calculations/
 * simulation-engine.ts); `threads` keeps the event loop free while paths are simulated.
 */
const calculationRoutes: FastifyPluginAsyncTypebox<{ db: Database; backend?: SimulationBackend }> = async (
  app,
  { db, backend },
) => {
  app.addSchema(StressTest);
  app.addSchema(RiskAttribution);

  app.post(
    '/calculations/stress_test',
    {
      config,
      schema: {
        tags,
        summary: 'Stress test: the portfolio’s P&L given a shock to one security',
        body: StressTestBody,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({ stress_test: Type.Ref('StressTest') }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => ({
      stress_test: await runStressTestCalculation(
        db,
        request.actor,
        request.body,
        request.query.workspace,
        {},
        backend,
      ),
    }),
  );

  app.post(
    '/calculations/risk_attribution',
    {
      config,
      schema: {
        tags,
        summary: 'Risk attribution: each position’s contribution to vol, VaR or CVaR',
        body: RiskAttributionBody,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({ risk_attribution: Type.Ref('RiskAttribution') }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => ({
      risk_attribution: await runRiskAttributionCalculation(
        db,
        request.actor,
        request.body,
        request.query.workspace,
        {},
        backend,
      ),
    }),
  );
};

export default calculationRoutes;
