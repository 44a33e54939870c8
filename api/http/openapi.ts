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
      recordLinks(
        optionalBodies(
          documentRequired(noProtoKeys(openApi31Tuples(structuredClone(app.swagger()) as OpenApiDocument))),
        ),
      ),
    );
  },
  { name: 'openapi' },
);

type OpenApiOperation = {
  parameters?: Array<{ name: string; in: string }>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: unknown }> };
  responses?: Record<
    string,
    { content?: Record<string, { schema?: unknown }>; links?: Record<string, Link> }
  >;
  'x-body-optional'?: boolean;
};
type OpenApiDocument = {
  paths?: Record<string, Record<string, OpenApiOperation>>;
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

/** An OpenAPI link: the operation it leads to, and where each of its parameters comes from. */
interface Link {
  operationRef: string;
  parameters: Record<string, string>;
  requestBody?: Record<string, string>;
  description: string;
}

/**
 * The record collections: an answer `{<key>: {<field>, …}}` names one record, and `<field>` is the
 * `{id}` of `<path>/{id}` and of the paths below it.
 */
const RECORDS: ReadonlyArray<{ path: string; key: string; field: string }> = [
  { path: '/workspaces', key: 'workspace', field: 'name' },
  { path: '/secrets', key: 'secret', field: 'id' },
  { path: '/portfolios', key: 'portfolio', field: 'id' },
  { path: '/datastores', key: 'datastore', field: 'id' },
  { path: '/report_templates', key: 'report_template', field: 'id' },
  { path: '/custom_indexes', key: 'custom_index', field: 'symbol' },
  { path: '/private_securities', key: 'private_security', field: 'symbol' },
  { path: '/worker_templates', key: 'worker_template', field: 'id' },
  { path: '/user_apps', key: 'user_app', field: 'id' },
  { path: '/integrations', key: 'integration', field: 'id' },
  { path: '/reports', key: 'report', field: 'id' },
  { path: '/workflows', key: 'workflow', field: 'id' },
  { path: '/files', key: 'file', field: 'id' },
];

/**
 * Operations below a record that only some records have: a link promises its target exists for the
 * record it names (a 404 there, after a create, is a fault to schemathesis's stateful phase).
 */
const NOT_EVERY_RECORD = new Set([
  // Only a TIME_BASED workflow has a schedule; any other answers 404.
  'get /workflows/{id}/schedule',
]);

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/**
 * Links (OpenAPI `links`), which a client or schemathesis's stateful phase follows from one answer
 * to the next request: an answer that names a record (a create's, a retrieve's, an update's) leads to
 * the operations on that record, and a delete's to its retrieve (which must then be a 404); a run's
 * answer leads to the retry of that execution. Each parameter comes from a field every such answer
 * has and never null (`alwaysPresent`): an answer that may lack the record (a file upload's staged
 * part) links nowhere, so no link fills a path with a missing value. The record's workspace goes
 * where the target reads it: in the JSON body where the body may name one (it wins over the query
 * string's; the generated body is merged with it), else on the query string.
 */
function recordLinks(document: OpenApiDocument): OpenApiDocument {
  const paths = document.paths ?? {};
  const link = (
    source: { path: string; method: string; status: string },
    target: { path: string; method: string },
    parameters: Record<string, string>,
    workspace: string | null,
    description: string,
  ): void => {
    const from = paths[source.path]?.[source.method]?.responses?.[source.status];
    const to = paths[target.path]?.[target.method];
    const answer = from?.content?.['application/json']?.schema;
    if (!from || !to) return;
    const present = (expression: string) =>
      !expression.startsWith('$response.body#/') ||
      alwaysPresent(document, answer, expression.slice('$response.body#/'.length).split('/')) !== null;
    const linked = { ...parameters };
    let requestBody: Record<string, string> | undefined;
    if (workspace !== null && present(workspace)) {
      const body = resolved(document, to.requestBody?.content?.['application/json']?.schema);
      if (body?.properties && 'workspace' in (body.properties as object)) {
        // The body's workspace wins over the query string's, so it goes there. schemathesis takes a 404
        // after a create for a fault when the link filled every parameter but the body: a create
        // leads only where the link addresses the record outside the body.
        if (source.method === 'post' && !source.path.includes('{')) return;
        requestBody = { workspace };
      } else if (to.parameters?.some((p) => p.in === 'query' && p.name === 'workspace')) {
        linked['query.workspace'] = workspace;
      }
    }
    if (!Object.values(linked).every(present)) return;
    const name = `${target.method}${target.path}`.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+/g, '_');
    from.links = {
      ...from.links,
      [name]: {
        operationRef: `#/paths/${target.path.replace(/~/g, '~0').replace(/\//g, '~1')}/${target.method}`,
        parameters: linked,
        ...(requestBody ? { requestBody } : {}),
        description,
      },
    };
  };

  for (const { path, key, field } of RECORDS) {
    const item = `${path}/{id}`;
    const id = `$response.body#/${key}/${field}`;
    const workspace = `$response.body#/${key}/workspace`;
    const targets = Object.entries(paths).flatMap(([target, operations]) =>
      (target === item || target.startsWith(`${item}/`)) && !/\{(?!id\})/.test(target)
        ? Object.keys(operations)
            .filter((method) => METHODS.includes(method) && !NOT_EVERY_RECORD.has(`${method} ${target}`))
            .map((method) => ({ path: target, method }))
        : [],
    );
    const sources = [
      { path, method: 'post' },
      { path: item, method: 'get' },
      { path: item, method: 'put' },
    ];
    for (const source of sources) {
      for (const status of Object.keys(paths[source.path]?.[source.method]?.responses ?? {})) {
        if (!status.startsWith('2')) continue;
        for (const target of targets) {
          if (target.path === source.path && target.method === source.method) continue;
          link({ ...source, status }, target, { 'path.id': id }, workspace, `The ${key} this answer names.`);
        }
      }
    }
    for (const status of Object.keys(paths[item]?.delete?.responses ?? {})) {
      if (!status.startsWith('2')) continue;
      link(
        { path: item, method: 'delete', status },
        { path: item, method: 'get' },
        { 'path.id': id },
        null,
        `The ${key} just deleted: no longer found.`,
      );
    }
  }

  const execution = '$response.body#/workflow_execution';
  for (const source of ['/workflows/{id}/run', '/workflows/{id}/workflow_executions/{execution_id}/retry']) {
    link(
      { path: source, method: 'post', status: '202' },
      { path: '/workflows/{id}/workflow_executions/{execution_id}/retry', method: 'post' },
      { 'path.id': `${execution}/workflow_id`, 'path.execution_id': `${execution}/id` },
      `${execution}/workspace`,
      'The retry of the execution this answer names (a 409 unless it FAILED).',
    );
  }
  return document;
}

/** The schema `schema` names, following a `$ref` to this document's components. */
function resolved(document: OpenApiDocument, schema: unknown): Record<string, unknown> | undefined {
  let node = schema;
  for (let depth = 0; depth < 10 && node !== null && typeof node === 'object' && '$ref' in node; depth++) {
    const ref = (node as { $ref: unknown }).$ref;
    node =
      typeof ref === 'string'
        ? document.components?.schemas?.[ref.replace('#/components/schemas/', '')]
        : undefined;
  }
  return node !== null && typeof node === 'object' ? (node as Record<string, unknown>) : undefined;
}

/**
 * The schema of the value at `pointer` in every value `schema` allows: there in each (required at
 * every step, in every branch of an anyOf or oneOf), of a type, and never null. Null where some
 * allowed value lacks it or may hold null there.
 */
function alwaysPresent(
  document: OpenApiDocument,
  schema: unknown,
  pointer: readonly string[],
): Record<string, unknown> | null {
  const node = resolved(document, schema);
  if (!node) return null;
  const branches = (node.anyOf ?? node.oneOf) as unknown[] | undefined;
  if (Array.isArray(branches)) {
    const each = branches.map((branch) => alwaysPresent(document, branch, pointer));
    return each.length > 0 && each.every((found) => found !== null) ? each[0]! : null;
  }
  if (pointer.length === 0) {
    const types = [node.type].flat();
    return node.type !== undefined && !types.includes('null') ? node : null;
  }
  const [head, ...rest] = pointer as [string, ...string[]];
  const required = Array.isArray(node.required) && node.required.includes(head);
  const property = (node.properties as Record<string, unknown> | undefined)?.[head];
  return required && property !== undefined ? alwaysPresent(document, property, rest) : null;
}
