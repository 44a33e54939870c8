import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { describeSimulationEngine, type SimulationEngine } from '../../engine/calculations/simulation-engine';
import type { Database } from '../../engine/platform/database';
import { databaseHealth, type TemporalHealth } from '../../engine/platform/dependency-health';
import type { ReadReplica } from '../../engine/platform/read-replica';

export const SERVICE_NAME = 'Portfolio Analytics Service';

const Dependency = Type.Object({
  status: Type.Union([Type.Literal('up'), Type.Literal('down')]),
  detail: Type.String(),
});

const HealthCheck = Type.Object({
  api_status: Type.Union([Type.Literal('OK'), Type.Literal('DEGRADED')], {
    description: 'DEGRADED, with status 503, when a dependency other than database_replica is down.',
  }),
  version: Type.Literal('v2'),
  name: Type.String(),
  calculation_backend: Type.Object(
    {
      name: Type.String({ description: 'reference, typed, threads, wasm or gpujs.' }),
      detail: Type.String({ description: 'Thread count, or the gpu.js mode (webgpu, webasm, cpu).' }),
      gpu_adapter: Type.Optional(
        Type.Object(
          {
            vendor: Type.String(),
            architecture: Type.String(),
            device: Type.String(),
            description: Type.String(),
          },
          {
            description: 'The GPU the gpujs backend computes on (WebGPU’s adapter info); absent on the CPU.',
          },
        ),
      ),
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
  dependencies: Type.Object(
    {
      database: Dependency,
      database_replica: Type.Optional(
        Type.Object(Dependency.properties, {
          description:
            'The read replica (DATABASE_READ_URL), absent without one. Down (unreachable, promoted, or ' +
            'lagging too far) it leaves the API OK: lists then read from the primary.',
        }),
      ),
      temporal: Type.Optional(Dependency),
      workers: Type.Optional(Dependency),
      calculation_backend: Dependency,
    },
    {
      description:
        'Extension: each dependency, checked on this request (temporal and workers: the task queue ' +
        'pollers Temporal reports; absent where the process has no Temporal client to ask).',
    },
  ),
});

const REFERENCE = {
  name: 'reference',
  detail: 'plain TypeScript, 1 thread',
  chosen_by: 'configured',
  probe_ms: {},
};

const healthCheckRoutes: FastifyPluginAsyncTypebox<{
  simulation: SimulationEngine | null;
  db: Database;
  replica: ReadReplica | null;
  temporalHealth: (() => Promise<TemporalHealth>) | null;
}> = async (app, { simulation, db, replica, temporalHealth }) => {
  const calculationBackend = simulation ? describeSimulationEngine(simulation) : REFERENCE;
  app.get(
    '/health_check',
    {
      // Probes and balancers call it every few seconds: its requests are not logged (warnings are).
      logLevel: 'warn',
      config: { auth: 'optional', anonymousRateLimit: false },
      schema: {
        tags: ['Service'],
        summary: 'Service health',
        description: 'Needs no credentials, so load balancers and probes can call it.',
        security: [],
        // A 503 is the health object with api_status DEGRADED, or {code, message} when credentials were
        // sent and could not be checked (the database is down).
        response: {
          200: HealthCheck,
          503: Type.Union([HealthCheck, Type.Object({ code: Type.Integer(), message: Type.String() })]),
        },
      },
    },
    async (_request, reply) => {
      const [database, databaseReplica, temporal] = await Promise.all([
        databaseHealth(db),
        replica?.health() ?? null,
        temporalHealth?.() ?? null,
      ]);
      const dependencies = {
        database,
        ...(temporal ?? {}),
        calculation_backend: {
          status: 'up' as const,
          detail: `${calculationBackend.name} (${calculationBackend.detail})`,
        },
      };
      const down = Object.values(dependencies).some((dependency) => dependency.status === 'down');
      // Reported, not counted: without the replica the primary serves its reads.
      return reply.code(down ? 503 : 200).send({
        api_status: down ? ('DEGRADED' as const) : ('OK' as const),
        version: 'v2' as const,
        name: SERVICE_NAME,
        calculation_backend: calculationBackend,
        dependencies: databaseReplica ? { ...dependencies, database_replica: databaseReplica } : dependencies,
      });
    },
  );
};

export default healthCheckRoutes;
