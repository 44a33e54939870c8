import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../engine/platform/database';
import type { LagTolerantReads } from '../../engine/platform/read-replica';
import { listRoute, retrieveRoute } from '../http/entity-routes';
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
import { ReportCreate, ReportUpdate } from '../../engine/reports/report-schemas';
import { IdParams, WorkspaceParam } from '../../engine/store/field-schemas';
import { errorResponses, Timestamp } from '../schemas/common';
import { listQuerystring, Nullable } from '../schemas/entity-lists';

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

// 1 to 2592000 (30 days), digit by digit.
const ExpiresAfterText = Type.String({
  pattern: '^([1-9][0-9]{0,5}|1[0-9]{6}|2[0-4][0-9]{5}|25[0-8][0-9]{4}|2591[0-9]{3}|2592000)$',
  'x-rule': `a whole number of seconds from 1 to ${SHARE_SECONDS_MAX} (30 days)`,
});
const ExpiresAfter = Type.Union(
  [Type.Integer({ minimum: 1, maximum: SHARE_SECONDS_MAX }), ExpiresAfterText, Type.Null()],
  {
    'x-rule': `a whole number of seconds from 1 to ${SHARE_SECONDS_MAX} (30 days)`,
    description: `Seconds, as a string (or a number): 1 to ${SHARE_SECONDS_MAX}. Default "${SHARE_SECONDS_DEFAULT}".`,
  },
);
const SkinTheme = Type.String({
  pattern: '^([Dd][Aa][Rr][Kk]|[Ll][Ii][Gg][Hh][Tt])?$',
  'x-rule': 'Dark or Light',
  description: 'Dark or Light (default), any letter case.',
});
const shareTerms = {
  expires_after: Type.Optional(ExpiresAfter),
  skin_theme: Type.Optional(Type.Union([SkinTheme, Type.Null()], { 'x-rule': 'Dark or Light' })),
  workspace: workspaceField,
};
// The terms may come in the body or on the query string (the body wins); the body may be absent.
const ShareBody = Type.Union([Type.Object(shareTerms), Type.Null()]);
const ShareQuery = Type.Object({
  expires_after: Type.Optional(ExpiresAfterText),
  skin_theme: Type.Optional(SkinTheme),
  workspace: workspaceField,
});

const IdParam = IdParams('report');
const WorkspaceQuery = Type.Object({ workspace: workspaceField });
const ReportReply = Type.Object({ report: Type.Ref('Report') });
const tags = ['Reports'];
const config = { auditEntity: 'Report' } as const;

const reportRoutes: FastifyPluginAsyncTypebox<{
  db: Database;
  reads?: LagTolerantReads;
  publicUrl: string;
}> = async (app, { db, reads, publicUrl }) => {
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
        body: ReportCreate,
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

  listRoute(app, db, {
    tags,
    summary: 'List reports (without widgets), most recent first',
    config,
    errors: errorResponses(400),
    kind: REPORT,
    path: '/reports',
    plural: 'reports',
    item: Report,
    querystring: listQuerystring(true, REPORT.hasDate),
    reads,
  });

  retrieveRoute(app, db, {
    tags,
    summary: 'Retrieve a report, with its widgets',
    config,
    errors: errorResponses(400, 404),
    kind: REPORT,
    path: '/reports',
    key: 'report',
    params: IdParam,
    querystring: WorkspaceQuery,
    reply: ReportReply,
  });

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
        body: ReportUpdate,
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
        'x-body-optional': true,
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
