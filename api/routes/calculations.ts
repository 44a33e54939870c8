import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  CALCULATION_ENTITY,
  runRiskAttributionCalculation,
  runStressTestCalculation,
} from '../../engine/calculations/calculation-service';
import type { SimulationBackend } from '../../calc';
import type { Database } from '../../engine/platform/database';
import { RiskAttributionBody, StressTestBody } from '../../engine/calculations/calculation-schemas';
import { errorResponses } from '../schemas/common';
import { WorkspaceParam } from '../../engine/store/field-schemas';
import { plainJsonSerializer, serverTiming, timedCalculation } from '../http/server-timing';

const WorkspaceQuery = Type.Object({ workspace: WorkspaceParam });

const ProjectionValues = Type.Array(
  Type.Object({
    projection: Type.String({ description: 'A projection symbol or the word residual.' }),
    value: Type.Number(),
  }),
);
export const StressTest = Type.Object(
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
export const RiskAttribution = Type.Object(
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
  serverTiming(app);

  app.post(
    '/calculations/stress_test',
    {
      config,
      serializerCompiler: plainJsonSerializer,
      schema: {
        tags,
        summary: 'Stress test: the portfolio’s P&L given a shock to one security',
        body: StressTestBody,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({ stress_test: Type.Ref('StressTest') }),
          ...errorResponses(400, 404, 413),
        },
      },
    },
    async (request, reply) => ({
      stress_test: await timedCalculation(request, reply, (timer) =>
        runStressTestCalculation(
          db,
          request.actor,
          request.body,
          request.query.workspace,
          {},
          backend,
          timer,
        ),
      ),
    }),
  );

  app.post(
    '/calculations/risk_attribution',
    {
      config,
      serializerCompiler: plainJsonSerializer,
      schema: {
        tags,
        summary: 'Risk attribution: each position’s contribution to vol, VaR or CVaR',
        body: RiskAttributionBody,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({ risk_attribution: Type.Ref('RiskAttribution') }),
          ...errorResponses(400, 404, 413),
        },
      },
    },
    async (request, reply) => ({
      risk_attribution: await timedCalculation(request, reply, (timer) =>
        runRiskAttributionCalculation(
          db,
          request.actor,
          request.body,
          request.query.workspace,
          {},
          backend,
          timer,
        ),
      ),
    }),
  );
};

export default calculationRoutes;
