import type { Permission, Principal } from '../platform/principal';
import type { Database } from '../platform/database';
import { Forbidden, InvalidInput, NotFound } from '../platform/errors';
import { checkPageSize, decodePageToken, encodePageToken, epochSeconds } from './page-token';
import { parsePeriod } from './period';
import { withoutSensitiveFields } from './audit-trail';
import { prettyUserAgent } from './user-agent';

/**
 * Read side of the audit trail. Nothing here writes: reading the trail records no VIEW entries,
 * because audit records are not objects a user stores, and a VIEW per read would make the trail
 * grow on every read and bury the actions it exists to show. Failed reads (400, 403, 404) are
 * still recorded as ERROR/DENIED by the API's error handler, like every failed action.
 */

export interface AuditLocation {
  country: string;
  region: string;
  city: string;
  cityLatLong: string;
}

export interface AuditLogEntry {
  id: string;
  created: number;
  updated: number;
  activity: string;
  operation: string;
  source: string;
  status: string;
  entity_id: string | null;
  entity_type: string | null;
  entity_name: string | null;
  workspace: string | null;
  workflow_id: string | null;
  workflow_name: string | null;
  workflow_execution_id: string | null;
  user_email: string | null;
  proxy_admin_email: string | null;
  credential_id: string | null;
  credential_type: string | null;
  ip: string | null;
  user_agent: string | null;
  user_agent_pretty: string;
  location: AuditLocation;
  viewed_ids: string[] | null;
}

export type Snapshot = Record<string, unknown>;

export interface AuditDiff {
  added: Snapshot;
  removed: Snapshot;
  modified: Record<string, { before: unknown; after: unknown }>;
}

export interface AuditLogDetail {
  entity: AuditLogEntry;
  diff_formatted: AuditDiff;
  before: Snapshot;
  after: Snapshot;
}

interface AuditLogRow {
  id: string;
  account_id: string;
  user_id: string | null;
  created_at: Date;
  activity: string;
  operation: string;
  source: string;
  status: string;
  entity_id: string | null;
  entity_type: string | null;
  entity_name: string | null;
  workspace: string | null;
  workflow_id: string | null;
  workflow_name: string | null;
  workflow_execution_id: string | null;
  user_email: string | null;
  proxy_admin_email: string | null;
  credential_id: string | null;
  credential_type: string | null;
  ip: string | null;
  user_agent: string | null;
  user_agent_pretty: string | null;
  location: unknown;
  viewed_ids: unknown;
  before: unknown;
  after: unknown;
  /** created_at in whole microseconds since the epoch: the cursor keeps PostgreSQL's precision. */
  created_us: number;
}

export const AUDIT_LOG_NOT_FOUND = 'Audit log not found.';

/**
 * `own`: `GET /audit_logs` — a sub-user sees own records, the account owner every record of the
 * account. `account`: `GET /audit_logs/all` — every record of the account.
 */
export type AuditListScope = 'own' | 'account';

export interface AuditListInput {
  start?: string | null;
  end?: string | null;
  dateTime?: string | null;
  pageSize?: number;
  pageToken?: string | null;
}

const READ_PERMISSIONS: Permission[] = ['VIEW USER', 'VIEW ALL USERS'];

function requireAnyPermission(principal: Principal, needed: Permission[], purpose: string): void {
  if (!needed.some((permission) => principal.permissions.includes(permission))) {
    const names = needed.join(' or ');
    throw new Forbidden(`Forbidden: ${purpose} needs the permission ${names}.`);
  }
}

/** True when the caller reads every record of the account in this scope; else only their own. */
function seesWholeAccount(principal: Principal, scope: AuditListScope | 'retrieve'): boolean {
  if (scope === 'account' || principal.isOwner) return true;
  // A record listed by /audit_logs/all must open by id: whoever holds VIEW ALL USERS may retrieve
  // any record of the account, not only those /audit_logs would list for them.
  return scope === 'retrieve' && principal.permissions.includes('VIEW ALL USERS');
}

function scoped(db: Database, principal: Principal, scope: AuditListScope | 'retrieve') {
  const query = db<AuditLogRow>('audit_logs')
    .select('*', db.raw('(extract(epoch from created_at) * 1000000)::bigint as created_us'))
    .where({ account_id: principal.accountId });
  if (!seesWholeAccount(principal, scope)) query.where({ user_id: principal.userId });
  return query;
}

const EMPTY_LOCATION: AuditLocation = { country: '', region: '', city: '', cityLatLong: '' };

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** Each location part is an empty string when it cannot be determined, never missing. */
function toLocation(value: unknown): AuditLocation {
  if (!value || typeof value !== 'object') return { ...EMPTY_LOCATION };
  const raw = value as Record<string, unknown>;
  return {
    country: text(raw.country),
    region: text(raw.region),
    city: text(raw.city),
    cityLatLong: text(raw.cityLatLong),
  };
}

function toEntry(row: AuditLogRow): AuditLogEntry {
  const created = epochSeconds(row.created_at)!;
  return {
    id: row.id,
    created,
    // Records never change, so the last update is the action itself.
    updated: created,
    activity: row.activity,
    operation: row.operation,
    source: row.source,
    status: row.status,
    entity_id: row.entity_id,
    entity_type: row.entity_type,
    entity_name: row.entity_name,
    workspace: row.workspace,
    workflow_id: row.workflow_id,
    workflow_name: row.workflow_name,
    workflow_execution_id: row.workflow_execution_id,
    user_email: row.user_email,
    proxy_admin_email: row.proxy_admin_email,
    credential_id: row.credential_id,
    credential_type: row.credential_type,
    ip: row.ip,
    user_agent: row.user_agent,
    user_agent_pretty: row.user_agent_pretty ?? prettyUserAgent(row.user_agent),
    location: toLocation(row.location),
    viewed_ids: Array.isArray(row.viewed_ids) ? row.viewed_ids.map(String) : null,
  };
}

/** Microseconds since the epoch as an exact timestamptz literal (a JS Date stops at milliseconds). */
function timestampLiteral(micros: number): string {
  const millis = Math.floor(micros / 1000);
  const extra = String(micros - millis * 1000).padStart(3, '0');
  return new Date(millis).toISOString().replace('Z', `${extra}Z`);
}

function cursorMicros(pageToken: string | null | undefined): { micros: number; id: string } | null {
  const cursor = decodePageToken(pageToken);
  if (!cursor) return null;
  // The token carries fractional milliseconds; rounding recovers the exact microsecond.
  const micros = Math.round(cursor.createdAtMs * 1000);
  // Safe integers of microseconds span the years 1685 to 2255, all valid timestamps.
  if (!Number.isSafeInteger(micros)) {
    throw new InvalidInput(
      'Invalid page_token: pass the next_page_token of the previous response unchanged.',
    );
  }
  return { micros, id: cursor.key };
}

/** `GET /audit_logs` (scope `own`) and `GET /audit_logs/all` (scope `account`), most recent first. */
export async function listAuditLogs(
  db: Database,
  principal: Principal,
  scope: AuditListScope,
  input: AuditListInput,
): Promise<{ audit_logs: AuditLogEntry[]; next_page_token: string | null }> {
  if (scope === 'account') {
    requireAnyPermission(principal, ['VIEW ALL USERS'], "reading every user's audit log");
  } else {
    requireAnyPermission(principal, READ_PERMISSIONS, 'reading the audit log');
  }
  const period = parsePeriod({ start: input.start, end: input.end, dateTime: input.dateTime });
  const pageSize = checkPageSize(input.pageSize);
  const cursor = cursorMicros(input.pageToken);

  const query = scoped(db, principal, scope);
  if (period?.start) query.where('created_at', '>=', period.start.instant);
  // The end bound is the last millisecond of its second or day; rows keep microseconds, so compare
  // against the next millisecond to include e.g. 10:00:00.999500 in an end of "… 10:00:00".
  if (period?.end) query.where('created_at', '<', new Date(period.end.instant.getTime() + 1));
  if (cursor) {
    query.whereRaw('(created_at, id) < (?::timestamptz, ?)', [timestampLiteral(cursor.micros), cursor.id]);
  }
  const rows = (await query
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(pageSize + 1)) as AuditLogRow[];

  const page = rows.slice(0, pageSize);
  const last = page[page.length - 1];
  const next =
    rows.length > pageSize && last
      ? encodePageToken({ createdAtMs: last.created_us / 1000, key: last.id })
      : null;
  return { audit_logs: page.map(toEntry), next_page_token: next };
}

/** A stored snapshot as an object, sensitive fields stripped again in case an old row kept one. */
function toSnapshot(value: unknown): Snapshot {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return {};
  return withoutSensitiveFields(value) as Snapshot;
}

/** Structural equality of JSON values; object key order does not matter (jsonb reorders keys). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, index) => sameJson(item, b[index]))
    );
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  return (
    keys.length === Object.keys(right).length &&
    keys.every((key) => Object.hasOwn(right, key) && sameJson(left[key], right[key]))
  );
}

/**
 * Field-level diff of two snapshots, on top-level fields only: a nested object or array that
 * changed in any way is reported whole under its field, so each key of the diff is a field of the
 * entity as the API shows it. A field holding null counts as present.
 */
export function diffSnapshots(before: Snapshot, after: Snapshot): AuditDiff {
  // Maps are built with fromEntries: a field named "__proto__" (JSON allows it) stays a field.
  const added: Array<[string, unknown]> = [];
  const modified: Array<[string, { before: unknown; after: unknown }]> = [];
  for (const [field, value] of Object.entries(after)) {
    if (!Object.hasOwn(before, field)) added.push([field, value]);
    else if (!sameJson(before[field], value)) modified.push([field, { before: before[field], after: value }]);
  }
  const removed = Object.entries(before).filter(([field]) => !Object.hasOwn(after, field));
  return {
    added: Object.fromEntries(added),
    removed: Object.fromEntries(removed),
    modified: Object.fromEntries(modified),
  };
}

/**
 * `GET /audit_logs/:id`: one record within what the caller may list. `before` and `after` are
 * always objects, `{}` when the action kept no snapshot (a CREATE has no before, a DELETE no after),
 * so a client never has to tell null from empty.
 */
export async function getAuditLog(db: Database, principal: Principal, id: string): Promise<AuditLogDetail> {
  requireAnyPermission(principal, READ_PERMISSIONS, 'reading the audit log');
  const row = (await scoped(db, principal, 'retrieve').where({ id }).first()) as AuditLogRow | undefined;
  // Another user's record is answered like an unknown one, so ids cannot be probed.
  if (!row) throw new NotFound(AUDIT_LOG_NOT_FOUND);
  const before = toSnapshot(row.before);
  const after = toSnapshot(row.after);
  return { entity: toEntry(row), diff_formatted: diffSnapshots(before, after), before, after };
}
