import { createHash, randomBytes } from 'node:crypto';
import { recordAudit } from '../store/audit-trail';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import {
  commonView,
  createEntity,
  deleteEntity,
  type EntityKind,
  type EntityRecord,
  findEntity,
  updateEntity,
} from '../store/entity-store';
import { todayYYYYMMDD } from '../store/entity-fields';
import { InvalidInput, NotFound } from '../platform/errors';
import { randomAlphanumeric } from '../platform/ids';
import { checkStorableFields } from '../store/storable-json';
import type { ReportAuthorization } from '../kinds/report-template';
import { readWidget } from './report-rendering/widget-format';
import type { ReportCreateBody, ReportUpdateBody, WidgetBody } from './report-schemas';

export const SKIN_THEMES = ['Light', 'Dark'] as const;
export type SkinTheme = (typeof SKIN_THEMES)[number];

export const SHARE_SECONDS_DEFAULT = 3600;
/** A share link is a bearer secret: it must not live for ever. */
export const SHARE_SECONDS_MAX = 30 * 24 * 3600;
/**
 * An expired link's digest is kept this long after it expires, so its holder is told the link
 * expired (410) rather than that it never existed (404); then housekeeping drops it.
 */
export const EXPIRED_SHARE_RETENTION_SECONDS = 30 * 24 * 3600;
/** Report uids are generated as 32 letters and digits; anything else names no report. */
const REPORT_UID = /^[A-Za-z0-9]{1,64}$/;

/** Derived on every read from the report's uid; stored copies would go stale. */
const DERIVED_WIDGET_FIELDS = ['absolute_url', 'relative_url'];

const KIND = 'report';

export interface StoredWidget extends Record<string, unknown> {
  id: string;
  name: string;
}

function themeSegment(theme: SkinTheme): string {
  return theme.toLowerCase();
}

function reportPath(uid: string, theme: SkinTheme): string {
  return `/report/${uid}/${themeSegment(theme)}`;
}

function widgetPath(uid: string, widgetId: string, theme: SkinTheme): string {
  return `/report/${uid}/widget/${widgetId}/${themeSegment(theme)}`;
}

function urlsOf(publicUrl: string, record: EntityRecord, theme: SkinTheme) {
  const relative = reportPath(record.body.uid as string, theme);
  return { url: publicUrl + relative, absolute_url: publicUrl + relative, relative_url: relative };
}

function baseView(publicUrl: string, record: EntityRecord, theme: SkinTheme): Record<string, unknown> {
  return {
    ...commonView(record),
    // Reports always carry a day; a record written without one describes the day it was made.
    date: record.date ?? todayYYYYMMDD(record.createdAt),
    data: record.body.data ?? [],
    authorization: record.body.authorization ?? 'PRIVATE',
    ...urlsOf(publicUrl, record, theme),
    workspace: record.workspace,
    link_uid: record.linkUid,
  };
}

/**
 * The report kind: its views carry absolute addresses, so it is built once per service base URL
 * (`publicUrl`, without the `/v2` segment).
 */
export function reportKind(publicUrl: string): EntityKind {
  return {
    kind: KIND,
    entityType: 'Report',
    noun: 'report',
    scope: 'workspace',
    idPrefix: 'report',
    idField: 'id',
    hasDate: true,
    listOmit: ['widgets'],
    auditDigest: ['data'],
    view: (record: EntityRecord) => {
      const uid = record.body.uid as string;
      const widgets = (record.body.widgets as StoredWidget[] | undefined) ?? [];
      return {
        ...baseView(publicUrl, record, 'Light'),
        widgets: widgets.map((widget) => {
          const relative = widgetPath(uid, widget.id, 'Light');
          return {
            id: widget.id,
            name: widget.name,
            absolute_url: publicUrl + relative,
            relative_url: relative,
          };
        }),
      };
    },
  };
}

/** The request fields this resource reads; other keys of a body are ignored, never checked. */
function knownFields(input: ReportUpdateBody): ReportUpdateBody {
  const { name, description, tags, date, data, widgets, authorization, workspace, link_uid } = input;
  return { name, description, tags, date, data, widgets, authorization, workspace, link_uid };
}

/**
 * What the schema's patterns cannot refuse before anything is stored: text with an unpaired
 * surrogate (no UTF-8 spelling; a surrogate range is more than the Python `re` the patterns are
 * written for reads) and JSON nested past JSON_DEPTH_MAX levels, anywhere in the fields this
 * resource reads. PostgreSQL would refuse either with a 500; this answers a 400 naming the field.
 */
function checkStorable(input: ReportUpdateBody): void {
  checkStorableFields(knownFields(input));
}

/**
 * The widgets as stored: each `id` generated when missing, and ids unique within the report
 * because they address the widget's page. Other keys are kept as the client sent them, less the
 * addresses derived on every read; a widget of a type the report page draws (`table`, `bar`,
 * `line`, `text`) must hold what that drawing needs. The schema (report-schemas.ts) has checked
 * each widget's shape.
 */
export function checkWidgets(widgets: WidgetBody[]): StoredWidget[] {
  const seen = new Set<string>();
  return widgets.map((given, index) => {
    const where = `widgets[${index}]`;
    const widget: Record<string, unknown> = { ...given };
    for (const field of DERIVED_WIDGET_FIELDS) delete widget[field];
    const id = given.id ? given.id : randomAlphanumeric(25);
    if (seen.has(id)) throw new InvalidInput(`${where}.id "${id}" is used by another widget.`);
    seen.add(id);
    const checked = { ...widget, id, name: given.name };
    readWidget(checked, where); // throws InvalidInput naming the field; stored as sent otherwise
    return checked;
  });
}

/** PRIVATE or PUBLIC as stored: the schema takes either in any letter case. */
function storedAuthorization(value: string): ReportAuthorization {
  return value.toUpperCase() as ReportAuthorization;
}

/** A report's date is the day it describes: the creation day (UTC) unless the client names one. */
function reportDate(value: string | null | undefined): string {
  return value ?? todayYYYYMMDD();
}

/** A create body the route's schema (ReportCreate) has accepted, or validateReportBody. */
export async function createReport(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  input: ReportCreateBody,
): Promise<EntityRecord> {
  checkStorable(input);
  return createEntity(db, actor, kind, {
    workspace: input.workspace,
    name: input.name,
    description: input.description,
    tags: input.tags,
    date: reportDate(input.date),
    linkUid: input.link_uid,
    body: {
      // The uid addresses the report's page; unlike the id it can be handed out in a URL.
      uid: randomAlphanumeric(32),
      data: input.data ?? [],
      widgets: checkWidgets(input.widgets ?? []),
      authorization: input.authorization === undefined ? 'PRIVATE' : storedAuthorization(input.authorization),
    },
  });
}

/**
 * An update body the route's schema (ReportUpdate) has accepted, or validateReportBody. Every
 * field optional; description and link_uid given as null clear, tags and date as null keep.
 */
export async function updateReport(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  id: string,
  input: ReportUpdateBody,
): Promise<EntityRecord> {
  checkStorable(input);
  const changes: Record<string, unknown> = {};
  if (input.data !== undefined) changes.data = input.data;
  if (input.widgets !== undefined) changes.widgets = checkWidgets(input.widgets);
  if (input.authorization !== undefined) changes.authorization = storedAuthorization(input.authorization);
  return updateEntity(db, actor, kind, id, input.workspace, (current) => ({
    name: input.name,
    description: input.description,
    tags: input.tags ?? undefined,
    date: input.date ?? undefined,
    linkUid: input.link_uid,
    body: { ...current.body, ...changes },
  }));
}

/**
 * Deleting a report also revokes every share link of it. The links are expired rather than
 * dropped, so their holders read "expired" (410), not "never existed"; housekeeping drops them later.
 */
export async function deleteReport(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  id: string,
  workspace: unknown,
): Promise<{ deleted: true; id: string }> {
  return db.transaction(async (trx) => {
    const record = await deleteEntity(trx, actor, kind, id, workspace);
    const now = new Date();
    await trx('report_shares')
      .where({ account_id: record.accountId, report_id: record.id })
      .where('expires_at', '>', now)
      .update({ expires_at: now });
    return { deleted: true, id: record.id };
  });
}

// ---------------------------------------------------------------------------------------------
// Share links: a random token shown once; only its SHA-256 is stored, so a database leak does not
// hand out live links.

/**
 * A share request as the route's schemas accepted it (ShareBody, ShareQuery): seconds from 1 to 30
 * days as a number or its digits, a theme in any letter case; empty or left out, the defaults.
 */
export interface ShareInput {
  expires_after?: number | string | null;
  skin_theme?: string | null;
  workspace?: string;
}

export interface ReportShare {
  record: EntityRecord;
  urlToken: string;
  expiresAfter: number;
  skinTheme: SkinTheme;
  sharedAt: Date;
  expiresAt: Date;
}

function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The link's lifetime in seconds: the number, or its digits, or the default. */
function expiresAfterOf(value: number | string | null | undefined): number {
  return value === undefined || value === null || value === '' ? SHARE_SECONDS_DEFAULT : Number(value);
}

/** `Dark` or `Light` as stored, from any letter case; default `Light`. */
function skinThemeOf(value: string | null | undefined): SkinTheme {
  return value?.toLowerCase() === 'dark' ? 'Dark' : 'Light';
}

export async function shareReport(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  id: string,
  input: ShareInput,
  now: Date = new Date(),
): Promise<ReportShare> {
  checkStorableFields({ workspace: input.workspace });
  const expiresAfter = expiresAfterOf(input.expires_after);
  const skinTheme = skinThemeOf(input.skin_theme);
  const urlToken = randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + expiresAfter * 1000);
  const record = await db.transaction(async (trx) => {
    const record = await findEntity(trx, actor.principal.accountId, kind, id, input.workspace);
    await trx('report_shares').insert({
      token_hash: hashToken(urlToken),
      account_id: record.accountId,
      report_id: record.id,
      skin_theme: skinTheme,
      created_at: now,
      expires_at: expiresAt,
    });
    // Sharing does not change the report, so no version bump; the trail keeps the terms, never the token.
    await recordAudit(trx, actor, {
      operation: 'SHARE',
      activity: `Shared report ${record.name} for ${expiresAfter} seconds`,
      entityId: record.id,
      entityType: kind.entityType,
      entityName: record.name,
      workspace: record.workspace,
      after: {
        skin_theme: skinTheme,
        expires_after: expiresAfter,
        expires_at: Math.floor(expiresAt.getTime() / 1000),
      },
    });
    return record;
  });
  return { record, urlToken, expiresAfter, skinTheme, sharedAt: now, expiresAt };
}

function yyyymmddHhmmss(instant: Date): string {
  const iso = instant.toISOString();
  return `${iso.slice(0, 10).replace(/-/g, '')} ${iso.slice(11, 19)}`;
}

/** The share response: the report with the share link, its token and terms; addresses use the chosen theme. */
export function shareView(publicUrl: string, share: ReportShare): Record<string, unknown> {
  const view = baseView(publicUrl, share.record, share.skinTheme);
  return {
    ...view,
    shared_url: `${view.absolute_url as string}?token=${share.urlToken}`,
    url_token: share.urlToken,
    expires_after: share.expiresAfter,
    widgets: null,
    date_time: yyyymmddHhmmss(share.sharedAt),
  };
}

/**
 * The report kind without its workspace condition, for lookups by (account, id) alone, which is
 * unique: a share row names no workspace. Only used to find records, never to view them.
 */
const REPORT_IN_ANY_WORKSPACE: EntityKind = { ...reportKind(''), scope: 'account' };

/**
 * The report a share token opens, or null when the token is unknown, expired, or its report is
 * gone. For the report page, which answers the token's holder without credentials.
 */
export async function resolveShareToken(
  db: Database,
  token: string,
  now: Date = new Date(),
): Promise<EntityRecord | null> {
  const share = (await db('report_shares')
    .where({ token_hash: hashToken(token) })
    .where('expires_at', '>', now)
    .first()) as { account_id: string; report_id: string } | undefined;
  if (!share) return null;
  try {
    return await findEntity(db, share.account_id, REPORT_IN_ANY_WORKSPACE, share.report_id);
  } catch (error) {
    if (error instanceof NotFound) return null;
    throw error;
  }
}

/**
 * Housekeeping: drops share rows that expired more than EXPIRED_SHARE_RETENTION_SECONDS ago (they
 * open nothing; until then they only tell their holder the link expired). Returns how many went.
 */
export async function pruneExpiredShares(db: Database, now: Date = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - EXPIRED_SHARE_RETENTION_SECONDS * 1000);
  return db('report_shares').where('expires_at', '<=', cutoff).delete();
}

// ---------------------------------------------------------------------------------------------
// The report page (`/report/<uid>/<theme>`): found by its uid, opened by the owner's account or a
// share token.

/** The report with this page uid in the account, or null (a malformed uid names nothing). */
export async function findReportByUid(
  db: Database,
  accountId: string,
  uid: string,
): Promise<EntityRecord | null> {
  if (!REPORT_UID.test(uid)) return null;
  const row = (await db('entities')
    .select('id')
    .where({ account_id: accountId, kind: KIND })
    .whereRaw("body->>'uid' = ?", [uid])
    .first()) as { id: string } | undefined;
  if (!row) return null;
  try {
    return await findEntity(db, accountId, REPORT_IN_ANY_WORKSPACE, row.id);
  } catch (error) {
    if (error instanceof NotFound) return null; // deleted between the two reads
    throw error;
  }
}

export type SharedReportAccess =
  | { status: 'open'; record: EntityRecord; expiresAt: Date }
  /** The link existed: it expired, was revoked, or its report was deleted. */
  | { status: 'expired' }
  /** No such link for this page. */
  | { status: 'unknown' };

/**
 * What a share token opens at the page of report `uid`. A token opens only its own report: at
 * another report's address it is unknown, so it cannot be used to probe other pages.
 */
export async function openSharedReport(
  db: Database,
  uid: string,
  token: string,
  now: Date = new Date(),
): Promise<SharedReportAccess> {
  const share = (await db('report_shares')
    .where({ token_hash: hashToken(token) })
    .first()) as { account_id: string; report_id: string; expires_at: Date } | undefined;
  if (!share) return { status: 'unknown' };
  let record: EntityRecord | null;
  try {
    record = await findEntity(db, share.account_id, REPORT_IN_ANY_WORKSPACE, share.report_id);
  } catch (error) {
    if (!(error instanceof NotFound)) throw error;
    record = null;
  }
  if (record && record.body.uid !== uid) return { status: 'unknown' };
  if (!record || share.expires_at.getTime() <= now.getTime()) return { status: 'expired' };
  return { status: 'open', record, expiresAt: share.expires_at };
}

/** The owner's look at the page is a view like `GET /reports/:id`, so it is in the audit trail. */
export async function recordReportPageView(
  db: Database,
  actor: Actor,
  record: EntityRecord,
  widgetId?: string,
): Promise<void> {
  await recordAudit(db, actor, {
    operation: 'VIEW',
    activity: widgetId
      ? `Viewed widget ${widgetId} of report ${record.name} on its page`
      : `Viewed report ${record.name} on its page`,
    entityId: record.id,
    entityType: 'Report',
    entityName: record.name,
    workspace: record.workspace,
  });
}
