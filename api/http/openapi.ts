import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ErrorBody } from '../schemas/common';

export const DOCS_PREFIX = '/v2/docs';

/** The OpenAPI document is generated from the route schemas, so it cannot drift from the code. */
export default fp(
  async function openapi(app: FastifyInstance, options: { version: string }) {
    app.addSchema(ErrorBody);
    await app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: {
          title: 'Portfolio Analytics Service',
          version: options.version,
          description:
            'Self-hosted implementation of the Portfolio Analytics Service interface, API version v2. ' +
            'Creates answer 200; every error is `{code, message}`. Routes marked "Extension" go beyond the interface. ' +
            'Request bodies may be gzip-compressed (`Content-Encoding: gzip`); the maximum payload size applies ' +
            'to the inflated body.',
        },
        servers: [{ url: '/v2' }],
        components: {
          securitySchemes: {
            apiKeyBearer: {
              type: 'http',
              scheme: 'bearer',
              description: 'API key as `Bearer <ACCOUNT_SID>:<AUTH_TOKEN>`, or an OAuth 2.0 access token.',
            },
            apiKeyBasic: {
              type: 'http',
              scheme: 'basic',
              description: 'API key pair as HTTP Basic credentials.',
            },
            oauth2: {
              type: 'oauth2',
              flows: { clientCredentials: { tokenUrl: '/v2/oauth/token', scopes: {} } },
            },
          },
        },
        security: [{ apiKeyBearer: [] }, { apiKeyBasic: [] }, { oauth2: [] }],
      },
      transform: ({ schema, url }) => ({
        schema: schema as never,
        // Paths are documented relative to the server URL, which ends with the version segment.
        url: url.startsWith('/v2/') ? url.slice(3) : url,
      }),
    });
    await app.register(swaggerUi, { routePrefix: DOCS_PREFIX });
    app.get('/v2/openapi.json', { config: { auth: 'optional' }, schema: { hide: true } }, async () =>
      app.swagger(),
    );
  },
  { name: 'openapi' },
);
