import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

export const SERVICE_NAME = 'Portfolio Analytics Service';

const HealthCheck = Type.Object({
  api_status: Type.Literal('OK'),
  version: Type.Literal('v2'),
  name: Type.String(),
});

const healthCheckRoutes: FastifyPluginAsyncTypebox = async (app) => {
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
    async () => ({ api_status: 'OK' as const, version: 'v2' as const, name: SERVICE_NAME }),
  );
};

export default healthCheckRoutes;
