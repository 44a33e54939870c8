import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/db/database';
import { listEntities, viewEntity } from '../../engine/entities/entity-store';
import {
  createReport,
  deleteReport,
  reportKind,
  SHARE_SECONDS_DEFAULT,
  SHARE_SECONDS_MAX,
  shareReport,
  shareView,
  updateReport,
} from '../../engine/reports/report-store';
import { IdParams, WorkspaceParam } from '../schemas/fields';
import { errorResponses, Timestamp } from '../schemas/common';
import { listQuerystring, listReply, listRequest, Nullable } from '../schemas/entity-lists';

const ReportWidget = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    absolute_url: Type.String(),
    relative_url: Type.String({ description: '/report/<uid>/widget/<widget id>/light' }),
  },
  { $id: 'ReportWidget', title: 'ReportWidget' },
);

const Authorization = Type.Union([Type.Literal('PRIVATE'), Type.Literal('PUBLIC')]);

const reportProperties = {
  id: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  date: Type.String({ description: 'YYYYMMDD; the creation day unless given.' }),
  data: Type.Array(Type.Unknown(), { description: 'Report content.' }),
  authorization: Authorization,
  url: Type.String({ description: 'Web address of the report (same as absolute_url).' }),
  absolute_url: Type.String(),
  relative_url: Type.String({ description: '/report/<uid>/light' }),
  workspace: Type.String(),
  link_uid: Nullable(Type.String()),
  created: Timestamp,
  updated: Timestamp,
  version: Type.String(),
};

const Report = Type.Object(
  {
    ...reportProperties,
    widgets: Type.Array(Type.Ref('ReportWidget'), { description: 'Left out of lists.' }),
  },
  { $id: 'Report', title: 'Report' },
);

const SharedReport = Type.Object(
  {
    ...reportProperties,
    widgets: Type.Null(),
    shared_url: Type.String({
      description: '<absolute_url>?token=<url_token>: opens the report until it expires.',
    }),
    url_token: Type.String({ description: 'Shown once; the service keeps only its digest.' }),
    expires_after: Type.Integer({ description: 'Seconds the link stays valid.' }),
    date_time: Type.String({ description: 'When the link was made: YYYYMMDD HH:MM:SS, UTC.' }),
  },
  {
    $id: 'SharedReport',
    title: 'SharedReport',
    description: 'The addresses end in the theme segment of skin_theme (/light or /dark).',
  },
);

const workspaceField = WorkspaceParam;

// Request bodies are validated in the engine (with messages naming the field); the schema documents them.
const ReportBody = Type.Object({
  name: Type.Optional(Type.Unknown({ description: 'REQUIRED on create. 1 to 200 characters.' })),
  description: Type.Optional(Type.Unknown({ description: 'Up to 500 characters; #hashtags become tags.' })),
  tags: Type.Optional(Type.Unknown({ description: 'Array of strings (or a space-separated string).' })),
  date: Type.Optional(Type.Unknown({ description: 'YYYYMMDD; default the creation day.' })),
  data: Type.Optional(Type.Unknown({ description: 'Array: the report content. Default [].' })),
  widgets: Type.Optional(
    Type.Unknown({
      description:
        'Array of objects with `name` (REQUIRED) and `id` (generated when missing). Default []. ' +
        'The report page draws `type` `table` (`columns`, `rows`), `bar` (`labels` with `values`, or ' +
        '`series: [{name, values}]`), `line` (`x` with `series` or `values`; null leaves a gap) and `text` ' +
        '(`text`); optional `description`, `format` (number, percent, currency, plain), `currency`, ' +
        '`decimals` (0-8). Widgets of these types are checked; other types are stored as sent.',
    }),
  ),
  authorization: Type.Optional(Type.Unknown({ description: 'PRIVATE (default) or PUBLIC.' })),
  link_uid: Type.Optional(
    Type.Unknown({ description: 'Caller-chosen identifier linking related entities.' }),
  ),
  workspace: workspaceField,
});

const shareTerms = {
  expires_after: Type.Optional(
    Type.Unknown({
      description: `Seconds, as a string (or a number): 1 to ${SHARE_SECONDS_MAX}. Default "${SHARE_SECONDS_DEFAULT}".`,
    }),
  ),
  skin_theme: Type.Optional(Type.Unknown({ description: 'Dark or Light (default).' })),
  workspace: workspaceField,
};
// The terms may come in the body or on the query string (the body wins); the body may be absent.
const ShareBody = Type.Union([Type.Object(shareTerms), Type.Null()]);
const ShareQuery = Type.Object({
  expires_after: Type.Optional(Type.String()),
  skin_theme: Type.Optional(Type.String()),
  workspace: workspaceField,
});

const IdParam = IdParams('report');
const WorkspaceQuery = Type.Object({ workspace: workspaceField });
const ReportReply = Type.Object({ report: Type.Ref('Report') });
const tags = ['Reports'];
const config = { auditEntity: 'Report' } as const;

const reportRoutes: FastifyPluginAsyncTypebox<{ db: Database; publicUrl: string }> = async (
  app,
  { db, publicUrl },
) => {
  const REPORT = reportKind(publicUrl);
  app.addSchema(ReportWidget);
  app.addSchema(Report);
  app.addSchema(SharedReport);

  app.post(
    '/reports',
    {
      config,
      schema: {
        tags,
        summary: 'Create a report (Extension)',
        description: 'Extension: the interface has no way to create reports; this stores one for the API.',
        body: ReportBody,
        querystring: WorkspaceQuery,
        response: { 200: ReportReply, ...errorResponses(400) },
      },
    },
    async (request) => {
      const { body } = request;
      const record = await createReport(db, request.actor, REPORT, {
        ...body,
        workspace: body.workspace ?? request.query.workspace,
      });
      return { report: REPORT.view(record) };
    },
  );

  app.get(
    '/reports',
    {
      config,
      schema: {
        tags,
        summary: 'List reports (without widgets), most recent first',
        querystring: listQuerystring(true),
        response: { 200: listReply('reports', Report), ...errorResponses(400) },
      },
    },
    async (request) => {
      const { items, next_page_token } = await listEntities(
        db,
        request.actor,
        REPORT,
        listRequest(request.query),
      );
      return { reports: items, next_page_token };
    },
  );

  app.get(
    '/reports/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Retrieve a report, with its widgets',
        params: IdParam,
        querystring: WorkspaceQuery,
        response: { 200: ReportReply, ...errorResponses(400, 404) },
      },
    },
    async (request) => ({
      report: REPORT.view(
        await viewEntity(db, request.actor, REPORT, request.params.id, request.query.workspace),
      ),
    }),
  );

  app.put(
    '/reports/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Update a report (Extension; every field optional)',
        description:
          'Extension: the interface does not list it; the published Python client saves reports with it.',
        params: IdParam,
        body: ReportBody,
        querystring: WorkspaceQuery,
        response: { 200: ReportReply, ...errorResponses(400, 404) },
      },
    },
    async (request) => {
      const { body } = request;
      const record = await updateReport(db, request.actor, REPORT, request.params.id, {
        ...body,
        workspace: body.workspace ?? request.query.workspace,
      });
      return { report: REPORT.view(record) };
    },
  );

  app.post(
    '/reports/:id/share',
    {
      config: { ...config, auditOperation: 'SHARE' },
      schema: {
        tags,
        summary: 'Share a report through a link that expires',
        params: IdParam,
        body: ShareBody,
        querystring: ShareQuery,
        response: {
          200: Type.Object({ report: Type.Ref('SharedReport') }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => {
      const body = request.body ?? {};
      const share = await shareReport(db, request.actor, REPORT, request.params.id, {
        expires_after: body.expires_after ?? request.query.expires_after,
        skin_theme: body.skin_theme ?? request.query.skin_theme,
        workspace: body.workspace ?? request.query.workspace,
      });
      return { report: shareView(publicUrl, share) };
    },
  );

  app.delete(
    '/reports/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a report (its share links stop working)',
        params: IdParam,
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({ report: Type.Object({ deleted: Type.Boolean(), id: Type.String() }) }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => ({
      report: await deleteReport(db, request.actor, REPORT, request.params.id, request.query.workspace),
    }),
  );
};

export default reportRoutes;
