import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Database } from '../../engine/platform/database';
import type { EntityRecord } from '../../engine/store/entity-store';
import {
  findReportByUid,
  openSharedReport,
  recordReportPageView,
  type StoredWidget,
} from '../../engine/reports/report-store';
import {
  PAGE_THEMES,
  type PageTheme,
  type ReportPageModel,
  renderMessagePage,
  renderReportPage,
  renderWidgetPage,
} from '../../engine/reports/report-rendering/report-page';
import { todayYYYYMMDD } from '../../engine/store/entity-fields';
import { describeError } from '../http/error-handler';

/**
 * Nothing on a report page runs or loads: no scripts, no fonts, no images but inline SVG. The
 * policy makes an escaping mistake harmless rather than exploitable.
 */
export const REPORT_PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";
/** A whole report is not meant to be framed; a widget page exists to be embedded. */
const REPORT_FRAMING = "; frame-ancestors 'none'";
export const BASIC_CHALLENGE = 'Basic realm="Portfolio Analytics"';

const PageParams = Type.Object({ uid: Type.String(), theme: Type.String() });
const WidgetPageParams = Type.Object({ uid: Type.String(), widgetId: Type.String(), theme: Type.String() });
const PageQuery = Type.Object({
  token: Type.Optional(Type.String({ description: 'The url_token of a share link.', maxLength: 512 })),
});
const HtmlPage = Type.String({ description: 'text/html page' });

class PageRefusal extends Error {
  constructor(
    readonly status: 404 | 401 | 410,
    readonly title: string,
    readonly detail: string,
  ) {
    super(title);
  }
}

const NOT_FOUND = () =>
  new PageRefusal(404, 'Report not found', 'There is no report at this address, or it is not yours to see.');

function isTheme(value: string): value is PageTheme {
  return (PAGE_THEMES as readonly string[]).includes(value);
}

function pageModel(record: EntityRecord, theme: PageTheme, sharedUntil: Date | null): ReportPageModel {
  return {
    name: record.name,
    description: record.description,
    tags: record.tags,
    date: record.date ?? todayYYYYMMDD(record.createdAt),
    updatedAt: record.updatedAt,
    data: Array.isArray(record.body.data) ? record.body.data : [],
    widgets: Array.isArray(record.body.widgets) ? (record.body.widgets as StoredWidget[]) : [],
    theme,
    sharedUntil,
  };
}

function sendPage(reply: FastifyReply, status: number, page: string, framable = false): FastifyReply {
  return (
    reply
      .code(status)
      .type('text/html; charset=utf-8')
      .header('Cache-Control', 'no-store')
      .header('Content-Security-Policy', REPORT_PAGE_CSP + (framable ? '' : REPORT_FRAMING))
      .header('X-Content-Type-Options', 'nosniff')
      // The address carries the share token: it must not travel on in a Referer.
      .header('Referrer-Policy', 'no-referrer')
      .header('X-Robots-Tag', 'noindex, nofollow')
      .send(page)
  );
}

/**
 * Who may see the page of report `uid`: the holder of a live share token of it, or a user of the
 * report's account (Authorization header: Bearer or Basic). Without credentials the answer is a
 * Basic challenge, so a browser asks for the account SID and token.
 */
async function openReport(
  db: Database,
  request: FastifyRequest,
  uid: string,
  token: string | undefined,
  widgetId?: string,
): Promise<{ record: EntityRecord; sharedUntil: Date | null }> {
  if (token !== undefined) {
    const access = await openSharedReport(db, uid, token);
    if (access.status === 'open') return { record: access.record, sharedUntil: access.expiresAt };
    if (access.status === 'expired') {
      throw new PageRefusal(
        410,
        'This shared link has expired',
        'The link to this report is no longer valid. Ask the person who shared it for a new link.',
      );
    }
    throw new PageRefusal(404, 'Link not found', 'This shared link does not open a report.');
  }
  if (!request.principal) {
    throw new PageRefusal(
      401,
      'Sign in to see this report',
      'Enter your account SID as the user name and your auth token as the password, or open the report through a shared link.',
    );
  }
  // Another account's report answers like a missing one: the page must not confirm it exists.
  const record = await findReportByUid(db, request.principal.accountId, uid);
  if (!record) throw NOT_FOUND();
  if (widgetId === undefined || hasWidget(record, widgetId)) {
    await recordReportPageView(db, request.actor, record, widgetId);
  }
  return { record, sharedUntil: null };
}

function hasWidget(record: EntityRecord, widgetId: string): boolean {
  const widgets = record.body.widgets;
  return Array.isArray(widgets) && widgets.some((widget: StoredWidget) => widget.id === widgetId);
}

/**
 * The report page `GET /report/:uid/:theme` and a widget's page `GET /report/:uid/widget/:widgetId/:theme`
 * (theme `light` or `dark`), outside `/v2`: they are the `url`s the API hands out. Every answer is
 * an HTML page, refusals and errors included, since a person reads it in a browser.
 */
const reportPageRoutes: FastifyPluginAsyncTypebox<{
  db: Database;
  maxPayloadBytes: number;
  publicUrl: string;
}> = async (app, { db, maxPayloadBytes }) => {
  // Errors of these routes (validation, rate limit, a failing database) as pages, not JSON.
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    if (error instanceof PageRefusal) {
      if (error.status === 401) reply.header('WWW-Authenticate', BASIC_CHALLENGE);
      return sendPage(
        reply,
        error.status,
        renderMessagePage({ status: error.status, title: error.title, message: error.detail }),
      );
    }
    const { status, message } = describeError(error, maxPayloadBytes);
    if (status >= 500) request.log.error({ err: error }, 'report page failed');
    return sendPage(
      reply,
      status,
      renderMessagePage({
        status,
        title: status >= 500 ? 'Something went wrong' : 'This page cannot be shown',
        message: status >= 500 ? 'The report could not be shown. Please try again shortly.' : message,
      }),
    );
  });

  // Left out of the OpenAPI document, which describes the JSON API under /v2; the README covers pages.
  const schema = {
    hide: true,
    querystring: PageQuery,
    response: { 200: HtmlPage, 401: HtmlPage, 404: HtmlPage, 410: HtmlPage },
  };
  const config = { auth: 'optional', auditEntity: 'Report' } as const;

  app.get(
    '/report/:uid/:theme',
    {
      config,
      schema: {
        ...schema,
        summary: 'The report as a web page (owner credentials or ?token=<url_token>)',
        params: PageParams,
      },
    },
    async (request, reply) => {
      const { uid, theme } = request.params;
      if (!isTheme(theme)) throw NOT_FOUND();
      const { record, sharedUntil } = await openReport(db, request, uid, request.query.token);
      return sendPage(reply, 200, renderReportPage(pageModel(record, theme, sharedUntil)));
    },
  );

  app.get(
    '/report/:uid/widget/:widgetId/:theme',
    {
      config,
      schema: {
        ...schema,
        summary: "One widget of a report as a web page (the report's access rules)",
        params: WidgetPageParams,
      },
    },
    async (request, reply) => {
      const { uid, widgetId, theme } = request.params;
      if (!isTheme(theme)) throw NOT_FOUND();
      const { record, sharedUntil } = await openReport(db, request, uid, request.query.token, widgetId);
      const page = renderWidgetPage(pageModel(record, theme, sharedUntil), widgetId);
      if (page === null) {
        throw new PageRefusal(404, 'Widget not found', 'This report has no widget at this address.');
      }
      return sendPage(reply, 200, page, true);
    },
  );
};

export default reportPageRoutes;
