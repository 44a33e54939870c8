import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/db/database';
import { listEntities, viewEntity } from '../../engine/entities/entity-store';
import {
  createReportTemplate,
  deleteReportTemplate,
  REPORT_TEMPLATE,
  updateReportTemplate,
} from '../../engine/reports/report-template-store';
import { Description, IdParams, Name, Tags, WorkspaceParam } from '../schemas/fields';
import { errorResponses, Timestamp } from '../schemas/common';
import { listQuerystring, listReply, listRequest, Nullable } from '../schemas/entity-lists';

const AdvancedSetting = Type.Record(Type.String(), Type.Unknown(), {
  description: 'A setting: `variant` and `select` with `value` and `label`.',
});

const ReportTemplate = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    description: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    status: Type.String({ description: 'OK.' }),
    authorization: Type.Union([Type.Literal('PRIVATE'), Type.Literal('PUBLIC')]),
    categories: Type.Array(Type.String()),
    workspace: Type.String(),
    layout: Type.Array(Type.Unknown(), { description: 'Left out of lists.' }),
    global_parameters: Type.Object(
      { advanced_settings: Type.Optional(Type.Record(Type.String(), AdvancedSetting)) },
      {
        additionalProperties: true,
        description: 'Left out of lists. Holds advanced_settings (for example confidence).',
      },
    ),
    created: Timestamp,
    updated: Timestamp,
    version: Type.String(),
  },
  { $id: 'ReportTemplate', title: 'ReportTemplate' },
);

const workspaceField = WorkspaceParam;

const reportTemplateFields = {
  name: Name,
  description: Type.Optional(Type.Union([Description, Type.Null()])),
  tags: Type.Optional(Tags),
  authorization: Type.Optional(
    Type.String({
      pattern: '^([Pp][Rr][Ii][Vv][Aa][Tt][Ee]|[Pp][Uu][Bb][Ll][Ii][Cc])$',
      'x-rule': 'PRIVATE or PUBLIC',
      description: 'PRIVATE (default) or PUBLIC, any letter case.',
    }),
  ),
  categories: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
      description: 'Array of strings. Default [].',
    }),
  ),
  layout: Type.Optional(Type.Array(Type.Unknown(), { description: 'Array. Default [].' })),
  global_parameters: Type.Optional(
    Type.Object(
      {
        advanced_settings: Type.Optional(
          Type.Union(
            [
              Type.Record(
                Type.String(),
                Type.Record(Type.String(), Type.Unknown(), {
                  'x-rule': 'an object (with variant and select)',
                }),
              ),
              Type.Null(),
            ],
            {
              'x-rule': 'an object of setting objects',
            },
          ),
        ),
      },
      { description: 'Object; `advanced_settings`, when given, maps names to setting objects. Default {}.' },
    ),
  ),
  workspace: workspaceField,
};
const ReportTemplateCreate = Type.Object(reportTemplateFields, { description: 'name is required.' });
const ReportTemplateUpdate = Type.Partial(Type.Object(reportTemplateFields), {
  description: 'Every field optional.',
});

const IdParam = IdParams('reportTemplate');
const WorkspaceQuery = Type.Object({ workspace: workspaceField });
const ReportTemplateReply = Type.Object({ report_template: Type.Ref('ReportTemplate') });
const tags = ['Report templates'];
const config = { auditEntity: 'ReportTemplate' } as const;
const extension = 'Extension: the interface has no way to publish report templates; this one does.';

const reportTemplateRoutes: FastifyPluginAsyncTypebox<{ db: Database }> = async (app, { db }) => {
  app.addSchema(ReportTemplate);

  app.post(
    '/report_templates',
    {
      config,
      schema: {
        tags,
        summary: 'Create a report template (Extension)',
        description: extension,
        body: ReportTemplateCreate,
        querystring: WorkspaceQuery,
        response: { 200: ReportTemplateReply, ...errorResponses(400) },
      },
    },
    async (request) => {
      const { body } = request;
      const record = await createReportTemplate(db, request.actor, {
        ...body,
        workspace: body.workspace ?? request.query.workspace,
      });
      return { report_template: REPORT_TEMPLATE.view(record) };
    },
  );

  app.get(
    '/report_templates',
    {
      config,
      schema: {
        tags,
        summary: 'List report templates (without layout and global_parameters), most recent first',
        querystring: listQuerystring(true),
        response: { 200: listReply('report_templates', ReportTemplate), ...errorResponses(400) },
      },
    },
    async (request) => {
      const { items, next_page_token } = await listEntities(
        db,
        request.actor,
        REPORT_TEMPLATE,
        listRequest(request.query),
      );
      return { report_templates: items, next_page_token };
    },
  );

  app.get(
    '/report_templates/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Retrieve a report template, with layout and global_parameters',
        params: IdParam,
        querystring: WorkspaceQuery,
        response: { 200: ReportTemplateReply, ...errorResponses(400, 404) },
      },
    },
    async (request) => ({
      report_template: REPORT_TEMPLATE.view(
        await viewEntity(db, request.actor, REPORT_TEMPLATE, request.params.id, request.query.workspace),
      ),
    }),
  );

  app.put(
    '/report_templates/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Update a report template (Extension; every field optional)',
        description: extension,
        params: IdParam,
        body: ReportTemplateUpdate,
        querystring: WorkspaceQuery,
        response: { 200: ReportTemplateReply, ...errorResponses(400, 404) },
      },
    },
    async (request) => {
      const { body } = request;
      const record = await updateReportTemplate(db, request.actor, request.params.id, {
        ...body,
        workspace: body.workspace ?? request.query.workspace,
      });
      return { report_template: REPORT_TEMPLATE.view(record) };
    },
  );

  app.delete(
    '/report_templates/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a report template',
        params: IdParam,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({
            report_template: Type.Object({ deleted: Type.Boolean(), id: Type.String(), name: Type.String() }),
          }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => ({
      report_template: await deleteReportTemplate(
        db,
        request.actor,
        request.params.id,
        request.query.workspace,
      ),
    }),
  );
};

export default reportTemplateRoutes;
