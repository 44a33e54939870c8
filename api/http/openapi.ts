import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ErrorBody } from '../schemas/common';
import { StorableJson } from '../../engine/store/field-schemas';

export const DOCS_PREFIX = '/v2/docs';

/** The OpenAPI document is generated from the route schemas, so it cannot drift from the code. */
export default fp(
  async function openapi(app: FastifyInstance, options: { version: string }) {
    app.addSchema(ErrorBody);
    app.addSchema(StorableJson);
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
        // The pages outside /v2 (a file's raw bytes, a report page) are addresses handed out in objects,
        // not operations of the API, whose server URL ends with the version segment.
        schema: (url.startsWith('/v2/') ? schema : { ...schema, hide: true }) as never,
        url: url.startsWith('/v2/') ? url.slice(3) : url,
      }),
    });
    await app.register(swaggerUi, { routePrefix: DOCS_PREFIX });
    app.get('/v2/openapi.json', { config: { auth: 'optional' }, schema: { hide: true } }, async () =>
      optionalBodies(openApi30Bounds(structuredClone(app.swagger()) as OpenApiDocument)),
    );
  },
  { name: 'openapi' },
);

type OpenApiDocument = {
  paths?: Record<
    string,
    Record<string, { requestBody?: { required?: boolean }; 'x-body-optional'?: boolean }>
  >;
};

/**
 * @fastify/swagger marks every declared body required; an operation whose body may be left out (the
 * report share terms can all come on the query string) says so with `x-body-optional` in its schema.
 */
function optionalBodies(document: OpenApiDocument): OpenApiDocument {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      if (operation['x-body-optional'] && operation.requestBody) operation.requestBody.required = false;
    }
  }
  return document;
}

/**
 * The route schemas are JSON Schema (draft 7), where `exclusiveMinimum: 0` is a number; OpenAPI 3.0
 * states the same bound as `minimum: 0, exclusiveMinimum: true`. Rewritten on a copy of the document,
 * never on the schemas the validator compiled.
 */
function openApi30Bounds<T>(node: T): T {
  if (Array.isArray(node)) {
    node.forEach(openApi30Bounds);
  } else if (node !== null && typeof node === 'object') {
    const schema = node as Record<string, unknown>;
    for (const [exclusive, inclusive] of [
      ['exclusiveMinimum', 'minimum'],
      ['exclusiveMaximum', 'maximum'],
    ] as const) {
      if (typeof schema[exclusive] === 'number') {
        schema[inclusive] = schema[exclusive];
        schema[exclusive] = true;
      }
    }
    Object.values(schema).forEach(openApi30Bounds);
  }
  return node;
}
