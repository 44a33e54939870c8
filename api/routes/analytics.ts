import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { SimulationBackend } from '../../calc';
import { type AnalyticsKind, runAnalyticsCalculation } from '../../engine/calculations/analytics';
import { type BookKind, runBookCalculation } from '../../engine/calculations/book-analytics';
import { CALCULATION_ENTITY } from '../../engine/calculations/calculation-service';
import type { Database } from '../../engine/platform/database';
import { CALCULATION_BODIES, type CalculationBodyOf } from '../../engine/calculations/calculation-schemas';
import {
  Backtest,
  BacktestStatisticsResult,
  MarginalTrackingError,
  Exposure,
  ParametricRiskAttribution,
  Properties,
  Sensitivity,
  UnderlyingStressSensitivity,
} from '../schemas/analytics';
import { errorResponses } from '../schemas/common';
import { WorkspaceParam } from '../../engine/store/field-schemas';
import { plainJsonSerializer, serverTiming, timedCalculation } from '../http/server-timing';

const WorkspaceQuery = Type.Object({ workspace: WorkspaceParam });
const tags = ['Calculations'];
// Failed runs are audited as EXECUTE on a Calculation, like the successful ones.
const config = { auditEntity: CALCULATION_ENTITY, auditOperation: 'EXECUTE' } as const;

/**
 * Each endpoint of calc-methodology §16–§21: its response object (under its own key); its body is
 * CALCULATION_BODIES[kind], the schema a worker's SDK call is validated with too.
 */
const ENDPOINTS: ReadonlyArray<{
  kind: AnalyticsKind | BookKind;
  summary: string;
  response: TSchema;
  /** §20–§21 take whole books (the clients' own bodies). */
  books?: true;
}> = [
  {
    kind: 'exposure',
    summary: 'Exposure: each position’s notional and delta-adjusted exposure; long, short, gross and net',
    response: Exposure,
  },
  {
    kind: 'parametric_risk_attribution',
    summary: 'Parametric risk attribution: volatility, VaR and CVaR from the covariance, split by Euler',
    response: ParametricRiskAttribution,
  },
  {
    kind: 'sensitivity',
    summary: 'Sensitivity: each position’s Black–Scholes delta, gamma, vega or theta',
    response: Sensitivity,
  },
  {
    kind: 'underlying_stress_sensitivity',
    summary: 'Underlying stress sensitivity: P&L of a full revaluation when each underlying moves',
    response: UnderlyingStressSensitivity,
  },
  {
    kind: 'properties',
    summary: 'Properties: exposure, betas, risk and Greeks of the portfolio in one object',
    response: Properties,
  },
  {
    kind: 'marginal_tracking_error',
    summary: 'Marginal tracking error: TE of a book against a benchmark book, and each symbol’s share of it',
    response: MarginalTrackingError,
    books: true,
  },
  {
    kind: 'backtest',
    summary: 'Backtest: buy and hold of the book over a date range, its indexed series and statistics',
    response: Backtest,
    books: true,
  },
  {
    kind: 'backtest_statistics',
    summary: 'Backtest statistics: the backtest’s statistics (output_type summary by default)',
    response: BacktestStatisticsResult,
    books: true,
  },
];

/** `backend` simulates the Monte Carlo figures of properties (var, cvar), as for risk attribution. */
const analyticsRoutes: FastifyPluginAsyncTypebox<{ db: Database; backend?: SimulationBackend }> = async (
  app,
  { db, backend },
) => {
  serverTiming(app);
  for (const endpoint of ENDPOINTS) {
    app.addSchema(endpoint.response);
    app.post(
      `/calculations/${endpoint.kind}`,
      {
        config,
        serializerCompiler: plainJsonSerializer,
        schema: {
          tags,
          summary: endpoint.summary,
          body: CALCULATION_BODIES[endpoint.kind],
          querystring: WorkspaceQuery,
          response: {
            200: Type.Object({ [endpoint.kind]: Type.Ref(endpoint.response.$id!) }),
            ...errorResponses(400, 404, 413),
          },
        },
      },
      async (request, reply) => ({
        [endpoint.kind]: await timedCalculation(request, reply, (timer) => {
          const workspace = (request.query as { workspace?: string }).workspace;
          // Fastify has validated the body with CALCULATION_BODIES[endpoint.kind].
          return endpoint.books
            ? runBookCalculation(
                db,
                request.actor,
                endpoint.kind as BookKind,
                request.body as CalculationBodyOf<BookKind>,
                workspace,
                timer,
              )
            : runAnalyticsCalculation(
                db,
                request.actor,
                endpoint.kind as AnalyticsKind,
                request.body as CalculationBodyOf<AnalyticsKind>,
                workspace,
                {},
                backend,
                timer,
              );
        }),
      }),
    );
  }
};

export default analyticsRoutes;
