import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { describeSimulationEngine, type SimulationEngine } from '../../engine/calculations/simulation-engine';

export const SERVICE_NAME = 'Portfolio Analytics Service';

const HealthCheck = Type.Object({
  api_status: Type.Literal('OK'),
  version: Type.Literal('v2'),
  name: Type.String(),
  calculation_backend: Type.Object(
    {
      name: Type.String({ description: 'reference, typed, threads or gpujs.' }),
      detail: Type.String({ description: 'Thread count, or the gpu.js mode (webgpu, webasm, cpu).' }),
      chosen_by: Type.String({
        description:
          'probe (CALC_BACKEND=auto: the installation’s first process timed the candidates and every process uses its choice) or configured.',
      }),
      chosen_at: Type.Optional(
        Type.String({ format: 'date-time', description: 'When the installation’s probe chose the backend.' }),
      ),
      probe_ms: Type.Record(Type.String(), Type.Union([Type.Number(), Type.String()]), {
        description: 'The start-up probe’s best time per candidate, or why one was skipped.',
      }),
    },
    { description: 'Extension: the Monte Carlo backend this API process runs calculations on.' },
  ),
});

const REFERENCE = {
  name: 'reference',
  detail: 'plain TypeScript, 1 thread',
  chosen_by: 'configured',
  probe_ms: {},
};

const healthCheckRoutes: FastifyPluginAsyncTypebox<{ simulation: SimulationEngine | null }> = async (
  app,
  { simulation },
) => {
  const calculationBackend = simulation ? describeSimulationEngine(simulation) : REFERENCE;
  app.get(
    '/health_check',
    {
      config: { auth: 'optional' },
      schema: {
        tags: ['Service'],
        summary: 'Service health',
        description: 'Needs no credentials, so load balancers and probes can call it.',
        security: [],
        response: { 200: HealthCheck },
      },
    },
    async () => ({
      api_status: 'OK' as const,
      version: 'v2' as const,
      name: SERVICE_NAME,
      calculation_backend: calculationBackend,
    }),
  );
};

export default healthCheckRoutes;
