import type { Actor, AuditSource } from '../platform/principal';
import type { Knex } from 'knex';
import type { Database } from '../platform/database';
import { runPrepared } from '../platform/prepared-statements';
import { newId } from '../platform/ids';
import { prettyUserAgent } from './user-agent';

export const AUDIT_OPERATIONS = [
  'CREATE',
  'UPDATE',
  'DELETE',
  'EXECUTE',
  'CLONE',
  'SHARE',
  'VIEW',
  'LOGIN',
  'LOGOUT',
] as const;
export type AuditOperation = (typeof AUDIT_OPERATIONS)[number];

export type AuditStatus = 'SUCCESS' | 'ERROR' | 'DENIED';

export interface AuditEntry {
  operation: AuditOperation;
  activity: string;
  entityId: string | null;
  entityType: string | null;
  entityName?: string | null;
  workspace?: string | null;
  status?: AuditStatus;
  viewedIds?: string[] | null;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/** Automatic actions carry the word System instead of a person's e-mail. */
const SYSTEM_SOURCES: ReadonlySet<AuditSource> = new Set([
  'WORKER',
  'WORKFLOW_BRIDGE',
  'SCHEDULER',
  'INTEGRATION',
]);

/** ERROR and DENIED exist only for people acting through the platform or the API. */
const HUMAN_SOURCES: ReadonlySet<AuditSource> = new Set(['PLATFORM', 'API']);

/**
 * Fields that hold secrets: a name that is, or ends in, token, secret, password, … (`auth_token`,
 * `webhook_token`, `client_secret`). Matched on whole words so user data such as `tokenizer` survives.
 */
const SENSITIVE_KEY =
  /(^|_)(token|token_hash|secret|secret_hash|password|credentials?|env_vars|authorization|api_key)$/i;

/** Drops sensitive fields (at any depth) before a snapshot is kept in the trail. */
export function withoutSensitiveFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSensitiveFields);
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    // fromEntries (not assignment) keeps a field literally named __proto__ as data.
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => !SENSITIVE_KEY.test(key))
        .map(([key, inner]) => [key, withoutSensitiveFields(inner)]),
    );
  }
  return value;
}

const EMPTY_LOCATION = { country: '', region: '', city: '', cityLatLong: '' };

function snapshot(value: Record<string, unknown> | null | undefined): string | null {
  return value ? JSON.stringify(withoutSensitiveFields(value)) : null;
}

/** PostgreSQL text cannot hold U+0000; a client's header can (through a test injector, say). */
function withoutNul<T extends string | null>(text: T): T {
  return (text !== null && text.includes('\0') ? text.replaceAll('\0', '') : text) as T;
}

export function auditRow(actor: Actor, entry: AuditEntry): Record<string, unknown> {
  const status = HUMAN_SOURCES.has(actor.source) ? (entry.status ?? 'SUCCESS') : 'SUCCESS';
  return {
    id: newId('auditLog'),
    account_id: actor.principal.accountId,
    user_id: actor.principal.userId,
    created_at: new Date(),
    activity: entry.activity,
    operation: entry.operation,
    source: actor.source,
    status,
    entity_id: entry.entityId,
    entity_type: entry.entityType,
    entity_name: entry.entityName ?? null,
    workspace: entry.workspace ?? null,
    workflow_id: actor.workflow?.id ?? null,
    workflow_name: actor.workflow?.name ?? null,
    workflow_execution_id: actor.workflow?.executionId ?? null,
    user_email: SYSTEM_SOURCES.has(actor.source) ? 'System' : actor.principal.userEmail,
    proxy_admin_email: actor.proxyAdminEmail ?? null,
    credential_id: actor.principal.credentialId,
    credential_type: actor.principal.credentialType,
    ip: withoutNul(actor.ip),
    user_agent: withoutNul(actor.userAgent),
    user_agent_pretty: withoutNul(prettyUserAgent(actor.userAgent)),
    location: JSON.stringify(EMPTY_LOCATION),
    viewed_ids: entry.viewedIds ? JSON.stringify(entry.viewedIds) : null,
    before: snapshot(entry.before),
    after: snapshot(entry.after),
  };
}

/**
 * Appends one immutable record. Pass the transaction that made the change, so a change and its
 * record commit (or roll back) together.
 */
export async function recordAudit(db: Database, actor: Actor, entry: AuditEntry): Promise<string> {
  const row = auditRow(actor, entry);
  await db('audit_logs').insert(row);
  return row.id as string;
}

/** Column types, for parameters that INSERT … SELECT cannot infer. */
const NON_TEXT_COLUMNS: Record<string, string> = {
  created_at: 'timestamptz',
  location: 'jsonb',
  viewed_ids: 'jsonb',
  before: 'jsonb',
  after: 'jsonb',
};

/**
 * SQL over the CTE `found` (`found.name`, …) that fills an audit column from what the read found:
 * its text, with `?` for each of its bindings.
 */
interface FoundSql {
  sql: string;
  bindings: Knex.RawBinding[];
}
type FromFound = Partial<
  Record<'activity' | 'entity_id' | 'entity_name' | 'workspace' | 'viewed_ids', FoundSql>
>;

/**
 * A read and its VIEW record in one statement: a data-modifying CTE inserts the record from the rows
 * the read found, so the read costs one round trip and its record is committed before the reply, as
 * with a separate insert. `from` is the (already filtered) source the insert selects from.
 *
 * The statement is composed as one flat text (the read's own SQL from knex, the rest written here),
 * not as nested knex raws: knex's formatting of nested raws was a tenth of a list request's CPU.
 */
async function readWithAudit<Row>(
  db: Database,
  found: Knex.QueryBuilder | Knex.Raw,
  actor: Actor,
  entry: AuditEntry,
  from: FoundSql,
  fromFound: FromFound,
): Promise<Row[]> {
  const row = auditRow(actor, entry);
  const read = found.toSQL();
  const bindings: Knex.RawBinding[] = [...(read.bindings as Knex.RawBinding[])];
  const columns = Object.keys(row);
  const values = columns.map((column) => {
    const computed = fromFound[column as keyof FromFound];
    if (computed) {
      bindings.push(...computed.bindings);
      return computed.sql;
    }
    bindings.push(row[column] as Knex.RawBinding);
    return `?::${NON_TEXT_COLUMNS[column] ?? 'text'}`;
  });
  bindings.push(...from.bindings);
  const sql =
    `WITH found AS (SELECT f.*, row_number() OVER () AS __audit_pos FROM (${read.sql}) AS f), logged AS (` +
    `INSERT INTO audit_logs (${columns.map((c) => `"${c}"`).join(', ')}) ` +
    `SELECT ${values.join(', ')} FROM ${from.sql}) SELECT * FROM found ORDER BY __audit_pos`;
  const rows = (await runPrepared(db, db.raw(sql, bindings))) as Array<Row & { __audit_pos?: unknown }>;
  for (const r of rows) delete r.__audit_pos;
  return rows;
}

/**
 * Reads at most one row with `statement` (its `id`, `name` and `workspace` name the record) and
 * writes `Viewed <noun> <name>` for it in the same statement; nothing is written when none is found.
 */
export async function readOneAudited<Row>(
  db: Database,
  statement: Knex.QueryBuilder,
  actor: Actor,
  entry: { entityType: string; activityPrefix: string },
): Promise<Row | undefined> {
  const [row] = await readWithAudit<Row>(
    db,
    statement.limit(1),
    actor,
    { operation: 'VIEW', activity: '', entityId: null, entityType: entry.entityType },
    { sql: 'found', bindings: [] },
    {
      activity: { sql: '?::text || found.name', bindings: [entry.activityPrefix] },
      entity_id: { sql: 'found.id', bindings: [] },
      entity_name: { sql: 'found.name', bindings: [] },
      workspace: { sql: 'found.workspace', bindings: [] },
    },
  );
  return row;
}

/**
 * Reads a page (`statement`, ordered, with one extra row that only says a next page exists) and
 * writes `Listed <n> <noun>` with the ids of the first `pageSize` rows in the same statement; nothing
 * is written for an empty page.
 */
export async function readPageAudited<Row>(
  db: Database,
  statement: Knex.QueryBuilder,
  actor: Actor,
  entry: { entityType: string; noun: string; workspace: string | null; pageSize: number; idColumn?: string },
): Promise<Row[]> {
  const id = entry.idColumn ?? 'id';
  return readWithAudit<Row>(
    db,
    statement,
    actor,
    {
      operation: 'VIEW',
      activity: '',
      entityId: null,
      entityType: entry.entityType,
      workspace: entry.workspace,
    },
    {
      sql:
        `(SELECT count(*) AS n, jsonb_agg(page."${id.replace(/"/g, '""')}" ORDER BY page.__audit_pos) AS ids ` +
        'FROM (SELECT * FROM found WHERE __audit_pos <= ?) AS page) AS found WHERE found.n > 0',
      bindings: [entry.pageSize],
    },
    {
      activity: { sql: "'Listed ' || found.n || ' ' || ?::text", bindings: [entry.noun] },
      viewed_ids: { sql: 'found.ids', bindings: [] },
    },
  );
}

/**
 * The record readPageAudited writes, for a page read where nothing can be written (a read replica):
 * `Listed <n> <noun>` with the ids of the first `pageSize` rows, written on `db` after the read;
 * nothing for an empty page.
 */
export async function recordPageViewed(
  db: Database,
  rows: ReadonlyArray<Record<string, unknown>>,
  actor: Actor,
  entry: { entityType: string; noun: string; workspace: string | null; pageSize: number; idColumn?: string },
): Promise<void> {
  const page = rows.slice(0, entry.pageSize);
  if (page.length === 0) return;
  const id = entry.idColumn ?? 'id';
  await recordAudit(db, actor, {
    operation: 'VIEW',
    activity: `Listed ${page.length} ${entry.noun}`,
    entityId: null,
    entityType: entry.entityType,
    workspace: entry.workspace,
    viewedIds: page.map((row) => String(row[id])),
  });
}
