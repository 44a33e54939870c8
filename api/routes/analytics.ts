import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { SimulationBackend } from '../../calc';
import { type AnalyticsKind, runAnalyticsCalculation } from '../../engine/calculations/analytics';
import { CALCULATION_ENTITY } from '../../engine/calculations/calculation-service';
import type { Database } from '../../engine/platform/database';
import {
  Exposure,
  ExposureBody,
  ParametricRiskAttribution,
  ParametricRiskAttributionBody,
  Properties,
  PropertiesBody,
  Sensitivity,
  SensitivityBody,
  UnderlyingStressSensitivity,
  UnderlyingStressSensitivityBody,
} from '../schemas/analytics';
import { errorResponses } from '../schemas/common';
import { WorkspaceParam } from '../../engine/store/field-schemas';
import { plainJsonSerializer, serverTiming, timedCalculation } from '../http/server-timing';

const WorkspaceQuery = Type.Object({ workspace: WorkspaceParam });
const tags = ['Calculations'];
// Failed runs are audited as EXECUTE on a Calculation, like the successful ones.
const config = { auditEntity: CALCULATION_ENTITY, auditOperation: 'EXECUTE' } as const;

/** Each endpoint of calc-methodology §16–§19: its body, its response object (under its own key). */
const ENDPOINTS: ReadonlyArray<{
  kind: AnalyticsKind;
  summary: string;
  body: TSchema;
  response: TSchema;
}> = [
  {
    kind: 'exposure',
    summary: 'Exposure: each position’s notional and delta-adjusted exposure; long, short, gross and net',
    body: ExposureBody,
    response: Exposure,
  },
  {
    kind: 'parametric_risk_attribution',
    summary: 'Parametric risk attribution: volatility, VaR and CVaR from the covariance, split by Euler',
    body: ParametricRiskAttributionBody,
    response: ParametricRiskAttribution,
  },
  {
    kind: 'sensitivity',
    summary: 'Sensitivity: each position’s Black–Scholes delta, gamma, vega or theta',
    body: SensitivityBody,
    response: Sensitivity,
  },
  {
    kind: 'underlying_stress_sensitivity',
    summary: 'Underlying stress sensitivity: P&L of a full revaluation when each underlying moves',
    body: UnderlyingStressSensitivityBody,
    response: UnderlyingStressSensitivity,
  },
  {
    kind: 'properties',
    summary: 'Properties: exposure, betas, risk and Greeks of the portfolio in one object',
    body: PropertiesBody,
    response: Properties,
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
          body: endpoint.body,
          querystring: WorkspaceQuery,
          response: {
            200: Type.Object({ [endpoint.kind]: Type.Ref(endpoint.response.$id!) }),
            ...errorResponses(400, 404, 413),
          },
        },
      },
      async (request, reply) => ({
        [endpoint.kind]: await timedCalculation(request, reply, (timer) =>
          runAnalyticsCalculation(
            db,
            request.actor,
            endpoint.kind,
            request.body as Record<string, unknown>,
            (request.query as { workspace?: string }).workspace,
            {},
            backend,
            timer,
          ),
        ),
      }),
    );
  }
};

export default analyticsRoutes;
