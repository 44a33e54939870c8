import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ErrorBody } from '../schemas/common';
import { StorableJson } from '../../engine/store/field-schemas';

export const DOCS_PREFIX = '/v2/docs';

/**
 * A route schema's key for the body as the document states it, where the route validates the body
 * itself to word each refusal (the webhook): the document shows this schema in place of `body`.
 */
export const DOCUMENT_BODY = 'x-document-body';

/** The OpenAPI document is generated from the route schemas, so it cannot drift from the code. */
export default fp(
  async function openapi(app: FastifyInstance, options: { version: string }) {
    app.addSchema(ErrorBody);
    app.addSchema(StorableJson);
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
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
      transform: ({ schema, url }) => {
        const documentBody = (schema as Record<string, unknown> | undefined)?.[DOCUMENT_BODY];
        const shown = documentBody === undefined ? schema : { ...schema, body: documentBody };
        return {
          // The pages outside /v2 (a file's raw bytes, a report page) are addresses handed out in
          // objects, not operations of the API, whose server URL ends with the version segment.
          schema: (url.startsWith('/v2/') ? shown : { ...shown, hide: true }) as never,
          url: url.startsWith('/v2/') ? url.slice(3) : url,
        };
      },
    });
    await app.register(swaggerUi, { routePrefix: DOCS_PREFIX });
    app.get('/v2/openapi.json', { config: { auth: 'optional' }, schema: { hide: true } }, async () =>
      optionalBodies(
        documentRequired(noProtoKeys(openApi31Tuples(structuredClone(app.swagger()) as OpenApiDocument))),
      ),
    );
  },
  { name: 'openapi' },
);

type OpenApiDocument = {
  paths?: Record<
    string,
    Record<
      string,
      {
        requestBody?: { required?: boolean; content?: Record<string, { schema?: unknown }> };
        'x-body-optional'?: boolean;
      }
    >
  >;
  components?: { schemas?: Record<string, unknown> };
};

/**
 * A form the route reads itself (a multipart upload's part, streamed) is all optional to request
 * validation, which sees no body; the fields every part needs are required in the document.
 */
function documentRequired(document: OpenApiDocument): OpenApiDocument {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const media of Object.values(operation.requestBody?.content ?? {})) {
        const schema = media.schema as Record<string, unknown> | undefined;
        if (schema && Array.isArray(schema['x-document-required'])) {
          schema.required = schema['x-document-required'];
          delete schema['x-document-required'];
        }
      }
    }
  }
  return document;
}

/** No object key named `__proto__`, in a schema's own words. */
const NOT_PROTO = { not: { const: '__proto__' } };

const JSON_VALUE_REF = '#/components/schemas/JsonValue';
/** Any JSON value without a `__proto__` key at any depth: what a free-form value may hold. */
const JsonValue = {
  title: 'JsonValue',
  description: 'Any JSON value; no object in it has a key named __proto__.',
  propertyNames: NOT_PROTO,
  additionalProperties: { $ref: JSON_VALUE_REF },
  items: { $ref: JSON_VALUE_REF },
};
const COMPOSED = ['$ref', 'anyOf', 'allOf', 'oneOf', 'const', 'enum', 'not'];

/**
 * The JSON body parser refuses a key named `__proto__` at any depth (prototype poisoning): "Request
 * body is not valid JSON". The document states it on every object of a JSON request body (and in
 * the named schemas those bodies refer to, StorableJson), and a free-form value (an object's extra
 * keys, an ignored field of any shape) is a JsonValue, the same rule at every depth: so a body it
 * accepts is one the parser reads. Only the served document carries it: the parser has refused such a body before any
 * schema runs.
 */
function noProtoKeys(document: OpenApiDocument): OpenApiDocument {
  // JsonValue states the rule itself.
  const seen = new Set<object>([JsonValue]);
  const guard = (node: unknown): void => {
    if (node === null || typeof node !== 'object' || seen.has(node)) return;
    seen.add(node);
    if (Array.isArray(node)) {
      node.forEach(guard);
      return;
    }
    const schema = node as Record<string, unknown>;
    if (typeof schema.$ref === 'string') {
      // A named schema a body refers to (StorableJson) is guarded where it is defined.
      guard(document.components?.schemas?.[schema.$ref.replace('#/components/schemas/', '')]);
      return;
    }
    const types = [schema.type].flat();
    const anyShape = schema.type === undefined && !COMPOSED.some((key) => key in schema);
    if (schema.type === undefined || types.includes('object')) {
      schema.propertyNames =
        schema.propertyNames === undefined ? NOT_PROTO : { allOf: [schema.propertyNames, NOT_PROTO] };
      // A free-form value (an extra key's, an ignored field's) may hold objects at any depth.
      if (schema.additionalProperties === undefined || schema.additionalProperties === true) {
        schema.additionalProperties = { $ref: JSON_VALUE_REF };
      }
    }
    if ((anyShape || types.includes('array')) && (schema.items === undefined || schema.items === true)) {
      schema.items = { $ref: JSON_VALUE_REF };
    }
    for (const key of ['items', 'additionalProperties']) guard(schema[key]);
    for (const key of ['anyOf', 'allOf', 'oneOf', 'prefixItems']) guard(schema[key]);
    for (const inner of Object.values((schema.properties ?? {}) as Record<string, unknown>)) guard(inner);
  };
  document.components = { ...document.components, schemas: { ...document.components?.schemas, JsonValue } };
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      guard(operation.requestBody?.content?.['application/json']?.schema);
    }
  }
  return document;
}

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
 * The route schemas are JSON Schema draft 7, which OpenAPI 3.1 (JSON Schema 2020-12) reads alike but
 * for tuples: draft 7's `items: [a, b]` with `additionalItems: false` is 2020-12's
 * `prefixItems: [a, b]` with `items: false`. Rewritten on a copy of the document, never on the
 * schemas the validator compiled.
 */
function openApi31Tuples<T>(node: T): T {
  if (Array.isArray(node)) {
    node.forEach(openApi31Tuples);
  } else if (node !== null && typeof node === 'object') {
    const schema = node as Record<string, unknown>;
    if (Array.isArray(schema.items)) {
      schema.prefixItems = schema.items;
      schema.items = schema.additionalItems === false ? false : {};
      delete schema.additionalItems;
    }
    Object.values(schema).forEach(openApi31Tuples);
  }
  return node;
}
