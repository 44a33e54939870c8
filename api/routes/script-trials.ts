import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { WORKER_TEMPLATE, WORKER_TEMPLATE_ID_PREFIX } from '../../engine/kinds/worker-template';
import type { Database } from '../../engine/platform/database';
import { NotFound, ServiceUnavailable } from '../../engine/platform/errors';
import { recordAudit } from '../../engine/store/audit-trail';
import { checkWorkspaceName } from '../../engine/store/entity-fields';
import { findEntity } from '../../engine/store/entity-store';
import { EntityId, StoredJson, StoredObject, WorkspaceParam } from '../../engine/store/field-schemas';
import type { ScriptTrialInput } from '../../engine/workflows/script-trial';
import type { WorkflowRunner } from '../../engine/workflows/workflow-runner';
import { errorResponses } from '../schemas/common';

const TrialReply = Type.Object({
  trial: Type.Object({
    status: Type.String({ description: 'COMPLETED or ERROR, as a step’s.' }),
    result: Type.Unknown({ description: 'What main returned (null on ERROR).' }),
    error_message: Type.Union([Type.String(), Type.Null()]),
    logs: Type.Array(Type.Unknown(), { description: 'The script’s console lines.' }),
    duration: Type.Number({ description: 'Wall-clock seconds.' }),
    cpu_time: Type.Number({ description: 'CPU seconds.' }),
  }),
});

const common = {
  script_inputs: Type.Optional(
    StoredObject({}, { description: 'The form values, as a step’s script_inputs (default {}).' }),
  ),
  inputs: Type.Optional(StoredJson({ description: 'What the step receives as args.inputs (default null).' })),
  workspace: WorkspaceParam,
};

const description =
  'Extension (the web console’s "Try it"): runs the script once in a worker’s sandbox, with a step’s ' +
  'limits, and answers its result and log lines. No run and no step is recorded; the try is an ' +
  'EXECUTE audit record on WorkerTemplate, and the script’s SDK calls take effect as the caller’s. ' +
  'JavaScript and TypeScript.';

/** POST /worker_templates/try (a draft's source) and /worker_templates/{id}/try (a published template). */
const scriptTrialRoutes: FastifyPluginAsyncTypebox<{ db: Database; workflows: WorkflowRunner }> = async (
  app,
  { db, workflows },
) => {
  const config = { auditEntity: 'WorkerTemplate', auditOperation: 'EXECUTE' } as const;
  const tags = ['Worker templates'];

  async function run(
    request: FastifyRequest,
    trial: Omit<ScriptTrialInput, 'principal' | 'workspace'>,
    name: string,
    id: string | null,
  ) {
    if (!workflows.tryScript) throw new ServiceUnavailable('Try it needs a worker: none is reachable here.');
    const actor = request.actor;
    const body = request.body as { workspace?: string };
    const workspace = checkWorkspaceName(body.workspace);
    await recordAudit(db, actor, {
      operation: 'EXECUTE',
      activity:
        id === null ? 'Tried a draft script in the sandbox' : `Tried worker template ${name} in the sandbox`,
      entityId: id ?? 'draft',
      entityType: 'WorkerTemplate',
      entityName: id === null ? 'draft script' : name,
      workspace,
    });
    const outcome = await workflows.tryScript({ ...trial, principal: actor.principal, workspace });
    return { trial: outcome };
  }

  app.get(
    '/worker_templates/:id/versions',
    {
      config: { auditEntity: 'WorkerTemplate' },
      schema: {
        tags,
        summary: 'The published versions of a worker template, newest first (extension)',
        description:
          'Extension: each version whose code changed, with its runtime and when it was published; with ' +
          '`version`, that one version with its `script`. Kept since this service version; a template ' +
          'published earlier starts with the version it had then.',
        params: Type.Object({ id: EntityId(WORKER_TEMPLATE_ID_PREFIX) }),
        querystring: Type.Object({
          // Versions are PostgreSQL integers: a larger number is a 400, not a failed query.
          version: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 2_147_483_647,
              description: 'One version, with its script.',
            }),
          ),
        }),
        response: {
          200: Type.Object({
            versions: Type.Array(
              Type.Object({
                version: Type.Integer(),
                script_runtime: Type.Union([Type.String(), Type.Null()]),
                published: Type.String({ description: 'ISO 8601, UTC.' }),
                script: Type.Optional(Type.String()),
              }),
            ),
          }),
          ...errorResponses(404),
        },
      },
    },
    async (request) => {
      const template = await findEntity(db, request.principal!.accountId, WORKER_TEMPLATE, request.params.id);
      const q = db('worker_template_versions')
        .where({ account_id: template.accountId, template_id: template.id })
        .orderBy('version', 'desc');
      const one = request.query.version;
      const rows = (await (one === undefined
        ? q.select('version', 'script_runtime', 'published_at')
        : q.where({ version: one }).select('version', 'script_runtime', 'published_at', 'script'))) as Array<{
        version: number;
        script_runtime: string | null;
        published_at: Date;
        script?: string;
      }>;
      if (one !== undefined && rows.length === 0) {
        throw new NotFound(`Worker template ${template.id} has no version ${one} on record.`);
      }
      return {
        versions: rows.map((row) => ({
          version: row.version,
          script_runtime: row.script_runtime,
          published: row.published_at.toISOString(),
          ...(row.script !== undefined ? { script: row.script } : {}),
        })),
      };
    },
  );

  app.post(
    '/worker_templates/try',
    {
      config,
      schema: {
        tags,
        summary: 'Try a draft script once in the sandbox (extension)',
        description,
        body: Type.Object(
          {
            script: Type.String({
              minLength: 1,
              maxLength: 65536,
              description: 'The source, defining main(args).',
            }),
            script_runtime: Type.Optional(
              Type.Union([Type.Literal('javascript'), Type.Literal('typescript')], {
                description: 'Default javascript.',
              }),
            ),
            ...common,
          },
          { additionalProperties: false },
        ),
        response: { 200: TrialReply, ...errorResponses(400, 503) },
      },
    },
    async (request) => {
      const { body } = request;
      return run(
        request,
        {
          templateId: null,
          script: body.script,
          scriptRuntime: body.script_runtime ?? 'javascript',
          scriptInputs: (body.script_inputs ?? {}) as Record<string, unknown>,
          inputs: body.inputs ?? null,
        },
        'a draft script',
        null,
      );
    },
  );

  app.post(
    '/worker_templates/:id/try',
    {
      config,
      schema: {
        tags,
        summary: 'Try a worker template once in the sandbox (extension)',
        description,
        params: Type.Object({ id: EntityId(WORKER_TEMPLATE_ID_PREFIX) }),
        body: Type.Object(common, { additionalProperties: false }),
        response: { 200: TrialReply, ...errorResponses(400, 404, 503) },
      },
    },
    async (request) => {
      const template = await findEntity(db, request.principal!.accountId, WORKER_TEMPLATE, request.params.id);
      const { body } = request;
      return run(
        request,
        {
          templateId: template.id,
          script: null,
          scriptRuntime: null,
          scriptInputs: (body.script_inputs ?? {}) as Record<string, unknown>,
          inputs: body.inputs ?? null,
        },
        template.name,
        template.id,
      );
    },
  );
};

export default scriptTrialRoutes;
