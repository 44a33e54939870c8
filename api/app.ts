import compress from '@fastify/compress';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Config } from '../engine/config';
import type { Database } from '../engine/db/database';
import { randomAlphanumeric } from '../engine/ids';
import type { WorkflowRunner } from '../engine/workflows/workflow-runner';
import authentication from './http/authentication';
import errorHandler from './http/error-handler';
import openapi from './http/openapi';
import requestEncoding from './http/request-encoding';
import requestTiming from './http/request-timing';
import healthCheckRoutes from './routes/health-check';
import oauthTokenRoutes from './routes/oauth-token';
import portfolioRoutes from './routes/portfolios';
import workflowRoutes from './routes/workflows';
import workspaceRoutes from './routes/workspaces';

export const API_VERSION = '2.0.0';

export interface AppDependencies {
  config: Pick<Config, 'rateLimitPerMinute' | 'maxPayloadBytes' | 'logLevel' | 'trustProxy'>;
  db: Database;
  workflows: WorkflowRunner;
  logger?: FastifyServerOptions['logger'];
}

/** Never let a credential reach the log: the webhook's `key` rides on the query string. */
function redactedUrl(url: string): string {
  return url.replace(/([?&]key=)[^&]*/gi, '$1[REDACTED]');
}

export async function buildApp(deps: AppDependencies): Promise<FastifyInstance> {
  const app = Fastify({
    logger: deps.logger ?? {
      level: deps.config.logLevel,
      serializers: {
        req: (req: { method: string; url: string; ip?: string }) => ({
          method: req.method,
          url: redactedUrl(req.url),
          ip: req.ip,
        }),
      },
    },
    bodyLimit: deps.config.maxPayloadBytes,
    genReqId: () => 'req_' + randomAlphanumeric(25),
    trustProxy: deps.config.trustProxy,
    ajv: {
      customOptions: { coerceTypes: 'array', useDefaults: true, removeAdditional: false, allErrors: false },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  await app.register(requestTiming);
  await app.register(errorHandler, { db: deps.db, maxPayloadBytes: deps.config.maxPayloadBytes });
  await app.register(authentication, { db: deps.db, rateLimitPerMinute: deps.config.rateLimitPerMinute });
  await app.register(requestEncoding, { maxPayloadBytes: deps.config.maxPayloadBytes });
  await app.register(compress, {
    global: true,
    globalDecompression: false,
    encodings: ['gzip'],
    threshold: 0,
  });
  await app.register(openapi, { version: API_VERSION });

  await app.register(
    async (v2) => {
      await v2.register(healthCheckRoutes);
      await v2.register(oauthTokenRoutes, { db: deps.db });
      await v2.register(workspaceRoutes, { db: deps.db });
      await v2.register(portfolioRoutes, { db: deps.db });
      await v2.register(workflowRoutes, { db: deps.db, workflows: deps.workflows });
    },
    { prefix: '/v2' },
  );
  return app;
}
