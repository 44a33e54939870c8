import { Type } from '@sinclair/typebox';
import type { FastifyError, FastifyPluginAsync } from 'fastify';
import type { Database } from '../../engine/platform/database';
import { DomainError } from '../../engine/platform/errors';
import { callSdkFunction, type SdkDependencies } from '../../engine/sdk/sdk-function';
import { parseSdkJson, sdkErrorBody } from '../../engine/sdk/sdk-http';
import type { WorkflowRunner } from '../../engine/workflows/workflow-runner';
import { describeError } from '../http/error-handler';

/**
 * `POST /v1/sdk_function`, outside /v2: everysk-lib's SDK layer. The client sends its call as gzip
 * JSON (`Content-Encoding: gzip`, inflated by request-encoding.ts) labelled `text/html`; this route
 * reads it as JSON whatever the label (engine/sdk/sdk-http.ts, as a worker step's SDK channel does), hands it to the engine (engine/sdk/sdk-function.ts) and
 * answers plain JSON. Errors are the SDK's `{error_message, error_module}`, with the status
 * of the same error on /v2; `error_module` names the client's exception class.
 */

export const SdkError = Type.Object(
  {
    error_message: Type.String({ description: 'What went wrong, safe to show.' }),
    error_module: Type.String({ description: 'The client’s exception class (everysk.core.exceptions).' }),
  },
  { $id: 'SdkError', title: 'SdkError' },
);

const SdkCall = Type.Object(
  {
    class_name: Type.String({
      pattern: '^[A-Za-z_][A-Za-z0-9_]{0,99}$',
      description: 'Portfolio, Query, UserCache, …',
    }),
    method_name: Type.String({
      pattern: '^[A-Za-z_][A-Za-z0-9_]{0,99}$',
      description: 'retrieve, loads, set, …',
    }),
    self_obj: Type.Optional(
      Type.Unknown({ description: 'The object the method is called on (with __class_path__), or null.' }),
    ),
    params: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: 'The arguments; a missing one is {"__undefined__": null}.',
      }),
    ),
  },
  {
    description:
      'Sent gzip-compressed (Content-Encoding: gzip) with Content-Type text/html, as everysk-lib does; plain JSON is accepted too.',
  },
);

const sdkFunction: FastifyPluginAsync<{
  db: Database;
  workflows: WorkflowRunner;
  maxPayloadBytes: number;
  publicUrl: string;
}> = async (app, options) => {
  const deps: SdkDependencies = {
    db: options.db,
    workflows: options.workflows,
    publicUrl: options.publicUrl,
  };
  // The client labels its JSON text/html; in this route only, that label is read as JSON, by the
  // parser a worker step's SDK channel uses too (in place of Fastify's own, in this route only).
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(
    ['application/json', 'text/html', 'text/plain'],
    { parseAs: 'string' },
    (_request, body, done) => {
      try {
        done(null, parseSdkJson(body as string));
      } catch (error) {
        done(error as Error, undefined);
      }
    },
  );
  app.addSchema(SdkError);
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    const { status, message } =
      error instanceof DomainError
        ? { status: error.status, message: error.message }
        : describeError(error, options.maxPayloadBytes, request);
    if (status >= 500) request.log.error({ err: error }, 'sdk_function failed');
    return reply.code(status).send(sdkErrorBody(status, message));
  });

  // everysk-lib posts to /v1/sdk_function; the document lists the same route under /v2, where the
  // contract test reaches it.
  for (const path of ['/v1/sdk_function', '/v2/sdk_function']) {
    app.post(
      path,
      {
        config: { auditEntity: 'SdkFunction' },
        schema: {
          tags: ['SDK'],
          summary: 'One call of everysk-lib’s SDK layer, also at /v1/sdk_function (Extension)',
          description:
            'Entities (Portfolio, Datastore, CustomIndex, PrivateSecurity, UserApp, File, Report: retrieve, create, modify, remove, clone, their *_many forms, save, delete, validate, validate_transient, securities_check), Query (load, loads, page, fetch_ids, fetch_id), Workflow.run and retrieve, with WorkflowExecution.retrieve and WorkerExecution.retrieve (run_and_wait), MarketData.get_historical, UserCache and UserLock. Any other class or method answers 400 saying it is not offered. See docs/clients.md.',
          body: SdkCall,
          response: {
            200: Type.Unknown({
              description: 'The method’s answer as plain JSON (an entity, a list, a value, or null).',
            }),
            ...Object.fromEntries([400, 401, 404, 413, 429].map((status) => [status, Type.Ref('SdkError')])),
          },
        },
      },
      async (request) =>
        callSdkFunction(deps, request.principal!, request.body, 'SDK', {
          ip: request.ip,
          userAgent: request.headers['user-agent'] ?? null,
        }),
    );
  }
};

export default sdkFunction;
