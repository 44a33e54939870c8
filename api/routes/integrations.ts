import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { Database } from '../../engine/db/database';
import { listEntities, viewEntity } from '../../engine/entities/entity-store';
import { InvalidInput } from '../../engine/errors';
import { INTEGRATION } from '../../engine/integrations/integration-kind';
import { createIntegration, deleteIntegration } from '../../engine/integrations/integration-store';
import { receiveWebhook } from '../../engine/integrations/webhook-receiver';
import type { WorkflowRunner } from '../../engine/workflows/workflow-runner';
import { Description, IdParams, Name, Tags } from '../schemas/fields';
import { errorResponses, Timestamp } from '../schemas/common';
import { listQuerystring, listReply, listRequest, Nullable } from '../schemas/entity-lists';

const Integration = Type.Object(
  {
    id: Type.String({ description: 'intg_ plus 25 letters or digits.' }),
    name: Type.String(),
    description: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    type: Type.String({ description: 'WEBHOOK (the only type for now).' }),
    webhook_path: Nullable(
      Type.String({
        description:
          'Where the webhook receives payloads, relative to the server: POST it with an Authorization ' +
          'header, or append ?key=<AUTH_TOKEN> (that URL is then a secret).',
      }),
    ),
    created: Timestamp,
    updated: Timestamp,
    version: Type.String(),
  },
  { $id: 'Integration', title: 'Integration' },
);

const IntegrationBody = Type.Object({
  name: Name,
  description: Type.Optional(Type.Union([Description, Type.Null()])),
  tags: Type.Optional(Tags),
  type: Type.Union([Type.Literal('WEBHOOK')], {
    'x-rule': 'one of WEBHOOK',
    description: 'WEBHOOK (the only type for now).',
  }),
});

const IdParam = IdParams('integration');
const IntegrationReply = Type.Object({ integration: Type.Ref('Integration') });
const tags = ['Integrations'];
const config = { auditEntity: 'Integration' } as const;
const EXTENSION =
  'Extension: the interface has no way to manage integrations. Integrations are account-scoped: ' +
  'seen from every workspace, and a workflow of any workspace may be triggered by one; `workspace` is ignored.';

const integrationRoutes: FastifyPluginAsyncTypebox<{ db: Database; workflows: WorkflowRunner }> = async (
  app,
  { db, workflows },
) => {
  app.addSchema(Integration);

  app.post(
    '/integrations',
    {
      config,
      schema: {
        tags,
        summary: 'Create an integration (extension)',
        description: EXTENSION,
        body: IntegrationBody,
        response: { 200: IntegrationReply, ...errorResponses(400) },
      },
    },
    async (request) => ({
      integration: INTEGRATION.view(await createIntegration(db, request.actor, request.body)),
    }),
  );

  app.get(
    '/integrations',
    {
      config,
      schema: {
        tags,
        summary: 'List integrations, most recent first (extension)',
        description: EXTENSION,
        querystring: listQuerystring(false),
        response: { 200: listReply('integrations', Integration), ...errorResponses(400) },
      },
    },
    async (request) => {
      const { items, next_page_token } = await listEntities(
        db,
        request.actor,
        INTEGRATION,
        listRequest(request.query),
      );
      return { integrations: items, next_page_token };
    },
  );

  app.get(
    '/integrations/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Retrieve an integration (extension)',
        description: EXTENSION,
        params: IdParam,
        response: { 200: IntegrationReply, ...errorResponses(400, 404) },
      },
    },
    async (request) => ({
      integration: INTEGRATION.view(await viewEntity(db, request.actor, INTEGRATION, request.params.id)),
    }),
  );

  app.delete(
    '/integrations/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete an integration and its stored payloads (extension)',
        description:
          EXTENSION +
          ' Refused with 409 while a workflow (enabled or not) has a FILE_RECEIVED trigger naming it.',
        params: IdParam,
        response: {
          200: Type.Object({
            integration: Type.Object({ deleted: Type.Boolean(), id: Type.String(), name: Type.String() }),
          }),
          ...errorResponses(400, 404, 409),
        },
      },
    },
    async (request) => ({ integration: await deleteIntegration(db, request.actor, request.params.id) }),
  );

  await app.register(webhookRoute, { db, workflows });
};

/**
 * The webhook lives in a plugin of its own: its body parsers keep the JSON text exactly as sent
 * (it is stored verbatim) and answer 400, not 415, to any other content type, as the interface asks.
 */
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
        tags,
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
        body: Type.Unknown({
          description:
            'REQUIRED. A JSON object with at least one key (no fixed schema); lists, empty objects, scalars ' +
            'and non-JSON bodies are refused with 400.',
        }),
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

export default integrationRoutes;
