import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AUDIT_OPERATIONS } from '../../engine/store/audit-trail';
import { AUDIT_SOURCES } from '../../engine/platform/principal';
import { getAuditLog, listAuditLogs } from '../../engine/store/audit-log-queries';
import type { Database } from '../../engine/platform/database';
import { type LagTolerantReads, primaryReads } from '../../engine/platform/read-replica';
import { errorResponses, NextPageToken, PageSize, PageToken, Timestamp } from '../schemas/common';
import { DATE_PATTERN, PeriodBound } from '../../engine/store/field-schemas';

const NullableString = Type.Union([Type.String(), Type.Null()]);

// Enums are documented with `enum` on a plain string rather than a union of literals: the
// serializer then writes whatever an old row holds instead of failing a read of the trail.
const AuditLog = Type.Object(
  {
    id: Type.String({ description: 'Prefix audl_.' }),
    created: Timestamp,
    updated: Type.Integer({ description: 'Always equal to created: records never change.' }),
    activity: Type.String({ description: 'Readable description of the action.' }),
    operation: Type.String({ enum: [...AUDIT_OPERATIONS] }),
    source: Type.String({ enum: [...AUDIT_SOURCES] }),
    status: Type.String({ enum: ['SUCCESS', 'ERROR', 'DENIED'] }),
    entity_id: NullableString,
    entity_type: NullableString,
    entity_name: NullableString,
    workspace: NullableString,
    workflow_id: NullableString,
    workflow_name: NullableString,
    workflow_execution_id: NullableString,
    user_email: Type.Union([Type.String(), Type.Null()], {
      description: 'The acting user; "System" for WORKER, WORKFLOW_BRIDGE, SCHEDULER and INTEGRATION.',
    }),
    proxy_admin_email: NullableString,
    credential_id: Type.Union([Type.String(), Type.Null()], {
      description: 'Account SID of an API key, client id for OAuth 2.0.',
    }),
    credential_type: Type.Union([Type.String({ enum: ['API_KEY', 'OAUTH2'] }), Type.Null()]),
    ip: NullableString,
    user_agent: NullableString,
    user_agent_pretty: Type.String(),
    location: Type.Object(
      { country: Type.String(), region: Type.String(), city: Type.String(), cityLatLong: Type.String() },
      { description: 'Each part is an empty string when it cannot be determined.' },
    ),
    viewed_ids: Type.Union([Type.Array(Type.String()), Type.Null()], {
      description: 'Identifiers returned by a batch VIEW; otherwise null.',
    }),
  },
  { $id: 'AuditLog', title: 'AuditLog' },
);

/** A free-form object: snapshots hold whichever entity the record is about. */
const FieldMap = (description: string) => Type.Record(Type.String(), Type.Unknown(), { description });

const AuditLogDetail = Type.Object(
  {
    entity: Type.Ref('AuditLog'),
    diff_formatted: Type.Object(
      {
        added: FieldMap('Fields present only after the action, with their values.'),
        removed: FieldMap('Fields present only before the action, with their values.'),
        modified: Type.Record(Type.String(), Type.Object({ before: Type.Unknown(), after: Type.Unknown() }), {
          description: 'Top-level fields whose value changed; a changed nested value is shown whole.',
        }),
      },
      { description: 'Top-level fields of before and after compared by value.' },
    ),
    before: FieldMap('The object before the action, without sensitive fields; {} when there was none.'),
    after: FieldMap('The object after the action, without sensitive fields; {} when there is none.'),
  },
  { $id: 'AuditLogDetail', title: 'AuditLogDetail' },
);

const PERIOD = 'YYYYMMDD or "YYYYMMDD HH:MM:SS" (URL-encode the space), UTC, inclusive.';
/**
 * The audit trail's period bound: the list filters' rule (PeriodBound), in two steps so that each
 * message names the value given: a day and a time in the format, then a real time of day.
 */
const AuditPeriodBound = (description: string) =>
  Type.String({
    allOf: [
      {
        pattern: `^${DATE_PATTERN}(?: [0-9]{2}:[0-9]{2}:[0-9]{2})?$`,
        'x-message': '{field} must be YYYYMMDD or "YYYYMMDD HH:MM:SS" (UTC), got "{value}".',
      },
      { pattern: PeriodBound.pattern, 'x-message': '{field} has an invalid time of day: "{value}".' },
    ],
    description,
  });
const AuditListQuery = Type.Object({
  start: Type.Optional(AuditPeriodBound(`Earliest record time: ${PERIOD}`)),
  end: Type.Optional(AuditPeriodBound(`Latest record time: ${PERIOD}`)),
  date_time: Type.Optional(AuditPeriodBound(`Sets start and end to the same value: ${PERIOD}`)),
  page_size: Type.Optional(PageSize),
  page_token: Type.Optional(PageToken),
});

const AuditLogList = Type.Object({
  audit_logs: Type.Array(Type.Ref('AuditLog')),
  next_page_token: NextPageToken,
});

// Failed reads are recorded by the error handler under this entity type (DENIED for 403).
const audit = { auditEntity: 'AuditLog', auditOperation: 'VIEW' } as const;

/**
 * Read-only by construction: only GET routes exist, so any other method is a 404. The lists may lag
 * a little (read from a replica unless the caller has just written); a record by id is read on the
 * primary.
 */
const auditLogRoutes: FastifyPluginAsyncTypebox<{ db: Database; reads?: LagTolerantReads }> = async (
  app,
  { db, reads = primaryReads(db) },
) => {
  app.addSchema(AuditLog);
  app.addSchema(AuditLogDetail);

  app.get(
    '/audit_logs',
    {
      config: audit,
      schema: {
        tags: ['Audit logs'],
        summary: 'List audit records, most recent first (own records; the owner sees the whole account)',
        description: 'Needs the permission VIEW USER or VIEW ALL USERS.',
        querystring: AuditListQuery,
        response: { 200: AuditLogList, ...errorResponses(400, 403) },
      },
    },
    async (request) =>
      reads.read(request.actor.principal, (source) =>
        listAuditLogs(source, request.actor.principal, 'own', {
          start: request.query.start,
          end: request.query.end,
          dateTime: request.query.date_time,
          pageSize: request.query.page_size,
          pageToken: request.query.page_token,
        }),
      ),
  );

  // Declared before `/audit_logs/:id`; the router also ranks a static segment above a parameter,
  // so `all` is never taken for an id.
  app.get(
    '/audit_logs/all',
    {
      config: audit,
      schema: {
        tags: ['Audit logs'],
        summary: 'List every audit record of the account, most recent first',
        description: 'Needs the permission VIEW ALL USERS.',
        querystring: AuditListQuery,
        response: { 200: AuditLogList, ...errorResponses(400, 403) },
      },
    },
    async (request) =>
      reads.read(request.actor.principal, (source) =>
        listAuditLogs(source, request.actor.principal, 'account', {
          start: request.query.start,
          end: request.query.end,
          dateTime: request.query.date_time,
          pageSize: request.query.page_size,
          pageToken: request.query.page_token,
        }),
      ),
  );

  app.get(
    '/audit_logs/:id',
    {
      config: audit,
      schema: {
        tags: ['Audit logs'],
        summary: 'Retrieve one audit record with its before/after snapshots and their diff',
        description:
          'Needs the permission VIEW USER or VIEW ALL USERS. A record the caller may not see is a 404.',
        params: Type.Object({ id: Type.String({ description: 'Audit record id (prefix audl_).' }) }),
        response: { 200: Type.Ref('AuditLogDetail'), ...errorResponses(403, 404) },
      },
    },
    async (request) => getAuditLog(db, request.actor.principal, request.params.id),
  );
};

export default auditLogRoutes;
