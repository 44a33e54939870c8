import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { Database } from '../../engine/platform/database';
import { InvalidInput } from '../../engine/platform/errors';
import { receiveWebhook } from '../../engine/workflows/webhook-receiver';
import type { WorkflowRunner } from '../../engine/workflows/workflow-runner';
import { errorResponses } from '../schemas/common';
import { StoredObject } from '../../engine/store/field-schemas';
import { DOCUMENT_BODY } from '../http/openapi';

/** What a webhook accepts, as the document states it: any JSON object with at least one key. */
const WebhookBody = StoredObject(
  {},
  {
    minProperties: 1,
    description:
      'REQUIRED. A JSON object with at least one key (no fixed schema); lists, empty objects, scalars ' +
      'and non-JSON bodies are refused with 400.',
  },
);

/**
 * The webhook lives in a plugin of its own: its body parsers keep the JSON text exactly as sent
 * (it is stored verbatim) and answer 400, not 415, to any other content type, as the interface asks.
 */
/** The integrations' route beyond CRUD (their CRUD routes follow from the kind's declaration). */
const webhookRoute: FastifyPluginAsyncTypebox<{ db: Database; workflows: WorkflowRunner }> = async (
  app,
  { db, workflows },
) => {
  const rawText = new WeakMap<FastifyRequest, string>();
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    // An empty body is no body (real clients send the header on every request); the receiver refuses it.
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    rawText.set(request, text);
    parseJson(request, text, done);
  });
  app.addContentTypeParser('*', (_request, _payload, done) => {
    done(
      new InvalidInput('The webhook body must be JSON sent with Content-Type: application/json.'),
      undefined,
    );
  });

  app.post(
    '/integrations/:id/webhook',
    {
      config: { auth: 'webhook', auditEntity: 'Integration' },
      schema: {
        tags: ['Integrations'],
        summary: 'Post a payload to a webhook integration',
        description:
          'Stores the JSON object exactly as sent and starts every enabled workflow whose FILE_RECEIVED ' +
          'trigger names the integration (trigger_config.integration_id). Their STARTER receives the script ' +
          'inputs `body` (the posted object) and `date` (when the payload was stored, `YYYY-MM-DD HH:MM:SS` UTC). ' +
          'Credentials: the Authorization header, or else `key=<AUTH_TOKEN>` on the query string (only this ' +
          'endpoint accepts `key`; a present header wins). The answer is 200 once the payload is stored; the ' +
          'message says how many runs started (a run is accepted while the workflow engine is down and starts when it returns).',
        // Any id: an unknown or malformed one is a 404, as the interface says of the webhook.
        params: Type.Object({ id: Type.String() }),
        querystring: Type.Object({
          key: Type.Optional(
            Type.String({ description: 'Auth token of an API key, for senders that cannot set a header.' }),
          ),
        }),
        // Validated by the receiver, which words each refused body (a list, null, an empty object…);
        // the document states the same rule as a schema (api/http/openapi.ts, x-document-body).
        body: Type.Unknown(),
        ...{ [DOCUMENT_BODY]: WebhookBody },
        response: {
          200: Type.Object({ integration_id: Type.String(), message: Type.String() }),
          ...errorResponses(400, 404, 413),
        },
      },
    },
    async (request) => {
      const outcome = await receiveWebhook(db, workflows, request.actor, request.params.id, {
        body: request.body,
        text: rawText.get(request) ?? JSON.stringify(request.body),
      });
      for (const failure of outcome.failed) {
        request.log.warn(
          { err: failure.error, workflowId: failure.workflowId, integrationId: outcome.integrationId },
          'a workflow triggered by a webhook could not start',
        );
      }
      return { integration_id: outcome.integrationId, message: outcome.message };
    },
  );
};

export default webhookRoute;
