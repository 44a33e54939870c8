import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { readOneAudited, readPageAudited, recordAudit } from './audit-trail';
import type { Actor } from '../platform/principal';
import { type EntityKey, viewOneBatched } from './view-batch';
import type { Database } from '../platform/database';
import { Conflict, InvalidInput, NotFound } from '../platform/errors';
import { type IdKind, isId, newId } from '../platform/ids';
import { type Filter, type ListQuery, type ListRequest, type OrderKey, parseListQuery } from './list-query';
import { decodeKeysetToken, encodeKeysetToken, epochSeconds, likePrefix } from './page-token';
import {
  checkDate,
  checkDescription,
  checkLinkUid,
  checkName,
  checkWorkspaceName,
  hashtagsIn,
  normaliseTag,
  normaliseTags,
} from './entity-fields';
import { checkStorableFields } from './storable-json';

/** One stored resource kind: how it is identified, scoped, shown and audited. */
export interface EntityKind {
  kind: string;
  /** `entity_type` in the audit trail. */
  entityType: string;
  /** Readable noun for messages and audit activities ("portfolio", "custom index"). */
  noun: string;
  scope: 'workspace' | 'account';
  /** Generated ids use this prefix; null when the client names the object (a symbol). */
  idPrefix: IdKind | null;
  /** Symbol-keyed kinds: the pattern a symbol must match. */
  symbolPattern?: RegExp;
  /** The property that holds the identifier in responses: `id`, or `symbol`. */
  idField: 'id' | 'symbol';
  hasDate: boolean;
  /** The response object of one stored record (every field, list omissions applied separately). */
  view(record: EntityRecord): Record<string, unknown>;
  /** Fields left out of list responses (for example a portfolio's securities). */
  listOmit: string[];
  /**
   * Large fields kept in audit snapshots only as a digest (`{sha256, bytes}`), so a 100,000-point
   * series or a 1 MB script is not stored twice more on every update.
   */
  auditDigest?: string[];
  /**
   * An account whose records of this kind every account may read (find, view, list) but only that
   * account may change: the service's own account, for the built-in worker templates.
   */
  sharedAccountId?: string;
}

export interface EntityRecord {
  accountId: string;
  kind: string;
  id: string;
  workspace: string | null;
  name: string;
  description: string | null;
  tags: string[];
  linkUid: string | null;
  date: string | null;
  body: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
  version: number;
}

interface EntityRow {
  account_id: string;
  kind: string;
  id: string;
  workspace: string | null;
  name: string;
  description: string | null;
  tags: string[];
  link_uid: string | null;
  date: string | null;
  body: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
  version: number;
}

function toRecord(row: EntityRow): EntityRecord {
  return {
    accountId: row.account_id,
    kind: row.kind,
    id: row.id,
    workspace: row.workspace,
    name: row.name,
    description: row.description,
    tags: row.tags,
    linkUid: row.link_uid,
    date: row.date,
    body: row.body ?? {},
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    version: row.version,
  };
}

/** The fields every resource shares, as the API shows them. */
export function commonView(record: EntityRecord): Record<string, unknown> {
  return {
    id: record.id,
    name: record.name,
    description: record.description,
    tags: record.tags,
    created: epochSeconds(record.createdAt),
    updated: epochSeconds(record.updatedAt),
    version: String(record.version),
  };
}

export interface EntityInput {
  /** Symbol-keyed kinds only. */
  id?: string;
  workspace?: unknown;
  name: unknown;
  description?: unknown;
  tags?: unknown;
  linkUid?: unknown;
  date?: unknown;
  body: Record<string, unknown>;
}

export interface EntityChanges {
  name?: unknown;
  description?: unknown;
  tags?: unknown;
  linkUid?: unknown;
  date?: unknown;
  body?: Record<string, unknown>;
}

function scopeWorkspace(kind: EntityKind, workspace: unknown): string | null {
  return kind.scope === 'workspace' ? checkWorkspaceName(workspace) : null;
}

function isKindId(kind: EntityKind, value: string): boolean {
  if (kind.idPrefix) return isId(kind.idPrefix, value);
  return kind.symbolPattern ? kind.symbolPattern.test(value) : false;
}

function notFound(kind: EntityKind, id: string): NotFound {
  const noun = kind.noun.charAt(0).toUpperCase() + kind.noun.slice(1);
  return new NotFound(`${noun} ${id} not found.`);
}

function whereOne(
  q: Knex.QueryBuilder,
  accountId: string,
  kind: EntityKind,
  id: string,
  workspace: string | null,
) {
  // An id of the wrong shape names nothing (and may hold text PostgreSQL refuses, such as NUL).
  if (!isKindId(kind, id)) throw notFound(kind, id);
  q.where({ account_id: accountId, kind: kind.kind, id });
  if (kind.scope === 'workspace') q.where({ workspace });
  return q;
}

function auditSnapshot(kind: EntityKind, record: EntityRecord): Record<string, unknown> {
  const snapshot: Record<string, unknown> = {
    ...kind.view(record),
    workspace: record.workspace ?? undefined,
  };
  for (const field of kind.auditDigest ?? []) {
    if (snapshot[field] === undefined || snapshot[field] === null) continue;
    const text = JSON.stringify(snapshot[field]);
    snapshot[field] = {
      sha256: createHash('sha256').update(text).digest('hex'),
      bytes: Buffer.byteLength(text),
    };
  }
  return snapshot;
}

export async function createEntity(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  input: EntityInput,
): Promise<EntityRecord> {
  const workspace = scopeWorkspace(kind, input.workspace);
  let id: string;
  if (kind.idPrefix) {
    id = newId(kind.idPrefix);
  } else {
    if (typeof input.id !== 'string' || !kind.symbolPattern?.test(input.id)) {
      throw new InvalidInput(`symbol must match ${kind.symbolPattern?.source ?? 'the symbol pattern'}.`);
    }
    id = input.id;
  }
  const description = checkDescription(input.description);
  checkStorableFields(input.body);
  const now = new Date();
  return db.transaction(async (trx) => {
    const [row] = (await trx('entities')
      .insert({
        account_id: actor.principal.accountId,
        kind: kind.kind,
        id,
        workspace,
        name: checkName(input.name),
        description,
        tags: normaliseTags(input.tags, description),
        link_uid: checkLinkUid(input.linkUid),
        date: kind.hasDate ? checkDate(input.date) : null,
        body: JSON.stringify(input.body),
        created_at: now,
        updated_at: now,
      })
      .onConflict(['account_id', 'kind', 'id'])
      .ignore()
      .returning('*')) as EntityRow[];
    if (!row) throw new Conflict(`A ${kind.noun} with ${kind.idField} ${id} already exists.`);
    const record = toRecord(row);
    await recordAudit(trx, actor, {
      operation: 'CREATE',
      activity: `Created ${kind.noun} ${record.name}`,
      entityId: record.id,
      entityType: kind.entityType,
      entityName: record.name,
      workspace: record.workspace,
      after: auditSnapshot(kind, record),
    });
    return record;
  });
}

/** The accounts whose records of `kind` the caller reads: its own, and the kind's shared one. */
function readableAccounts(kind: EntityKind, accountId: string): string[] {
  return kind.sharedAccountId && kind.sharedAccountId !== accountId
    ? [accountId, kind.sharedAccountId]
    : [accountId];
}

/**
 * Reads one record of the caller's account (or of the kind's shared account); another account's is
 * simply not found.
 */
/** The statement that finds one record of `kind` readable by `accountId`. */
function entityQuery(
  db: Database,
  accountId: string,
  kind: EntityKind,
  id: string,
  workspace?: unknown,
): Knex.QueryBuilder {
  const accounts = readableAccounts(kind, accountId);
  const q = db('entities');
  if (accounts.length === 1) {
    whereOne(q, accountId, kind, id, scopeWorkspace(kind, workspace));
  } else {
    if (!isKindId(kind, id)) throw notFound(kind, id);
    // The caller's own record wins should the shared account hold the same id.
    q.whereIn('account_id', accounts)
      .where({ kind: kind.kind, id })
      .orderByRaw('account_id = ? desc', [accountId]);
    if (kind.scope === 'workspace') q.where({ workspace: scopeWorkspace(kind, workspace) });
  }
  return q;
}

export async function findEntity(
  db: Database,
  accountId: string,
  kind: EntityKind,
  id: string,
  workspace?: unknown,
): Promise<EntityRecord> {
  const row = (await entityQuery(db, accountId, kind, id, workspace).first()) as EntityRow | undefined;
  if (!row) throw notFound(kind, id);
  return toRecord(row);
}

/** Finds a record and writes its VIEW record in the same statement (one round trip). */
export async function viewEntity(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  id: string,
  workspace?: unknown,
): Promise<EntityRecord> {
  const entry = { entityType: kind.entityType, activityPrefix: `Viewed ${kind.noun} ` };
  const accountId = actor.principal.accountId;
  const statement = () => entityQuery(db, accountId, kind, id, workspace);
  // Outside a transaction, a read of the caller's own account joins this turn's batch.
  const row =
    db.isTransaction || readableAccounts(kind, accountId).length > 1
      ? await readOneAudited<EntityRow>(db, statement(), actor, entry)
      : await viewOneBatched<EntityRow>(
          db,
          batchKey(accountId, kind, id, workspace),
          actor,
          entry,
          statement,
        );
  if (!row) throw notFound(kind, id);
  return toRecord(row);
}

/** The batch key of one read (the checks `whereOne` makes, first). */
function batchKey(accountId: string, kind: EntityKind, id: string, workspace: unknown): EntityKey {
  const scope = scopeWorkspace(kind, workspace);
  if (!isKindId(kind, id)) throw notFound(kind, id);
  return { accountId, kind: kind.kind, id, workspace: scope };
}

/**
 * Read-modify-write under a row lock: two concurrent updates of one object serialise, so neither
 * silently overwrites the other. `change` sees the current record and returns what to change.
 */
export async function updateEntity(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  id: string,
  workspace: unknown,
  change: (current: EntityRecord) => EntityChanges | Promise<EntityChanges>,
  audit: { operation?: 'UPDATE' | 'SHARE'; activity?: string } = {},
): Promise<EntityRecord> {
  const scope = scopeWorkspace(kind, workspace);
  return db.transaction(async (trx) => {
    const row = (await whereOne(
      trx('entities').forUpdate().first(),
      actor.principal.accountId,
      kind,
      id,
      scope,
    )) as EntityRow | undefined;
    if (!row) throw notFound(kind, id);
    const before = toRecord(row);
    const changes = await change(before);
    const description =
      changes.description !== undefined ? checkDescription(changes.description) : before.description;
    const update: Record<string, unknown> = { updated_at: new Date(), version: before.version + 1 };
    if (changes.name !== undefined) update.name = checkName(changes.name);
    if (changes.description !== undefined) update.description = description;
    if (changes.tags !== undefined || changes.description !== undefined) {
      // Tags that came from the old description's hashtags go when the description changes.
      const oldHashtags = new Set(hashtagsIn(before.description).map(normaliseTag));
      const kept =
        changes.tags !== undefined ? changes.tags : before.tags.filter((tag) => !oldHashtags.has(tag));
      update.tags = normaliseTags(kept, description);
    }
    if (changes.linkUid !== undefined) update.link_uid = checkLinkUid(changes.linkUid);
    if (changes.date !== undefined && kind.hasDate) update.date = checkDate(changes.date);
    if (changes.body !== undefined) {
      checkStorableFields(changes.body);
      update.body = JSON.stringify(changes.body);
    }
    const [updated] = (await whereOne(trx('entities'), actor.principal.accountId, kind, id, scope)
      .update(update)
      .returning('*')) as EntityRow[];
    const after = toRecord(updated!);
    await recordAudit(trx, actor, {
      operation: audit.operation ?? 'UPDATE',
      activity: audit.activity ?? `Updated ${kind.noun} ${after.name}`,
      entityId: after.id,
      entityType: kind.entityType,
      entityName: after.name,
      workspace: after.workspace,
      before: auditSnapshot(kind, before),
      after: auditSnapshot(kind, after),
    });
    return after;
  });
}

export async function deleteEntity(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  id: string,
  workspace?: unknown,
): Promise<EntityRecord> {
  const scope = scopeWorkspace(kind, workspace);
  return db.transaction(async (trx) => {
    const [row] = (await whereOne(trx('entities'), actor.principal.accountId, kind, id, scope)
      .delete()
      .returning('*')) as EntityRow[];
    if (!row) throw notFound(kind, id);
    const record = toRecord(row);
    await recordAudit(trx, actor, {
      operation: 'DELETE',
      activity: `Deleted ${kind.noun} ${record.name}`,
      entityId: record.id,
      entityType: kind.entityType,
      entityName: record.name,
      workspace: record.workspace,
      before: auditSnapshot(kind, record),
    });
    return record;
  });
}

// ---------------------------------------------------------------------------------------------
// Lists: the query language compiled to SQL, with keyset paging over any order.

const COLUMN_PROPERTIES: Record<string, string> = {
  id: 'id',
  name: 'name',
  description: 'description',
  workspace: 'workspace',
  link_uid: 'link_uid',
  date: 'date',
};
const TIME_PROPERTIES: Record<string, 'created_at' | 'updated_at'> = {
  created: 'created_at',
  created_on: 'created_at',
  updated: 'updated_at',
  updated_on: 'updated_at',
};

/** The one name of a property: `symbol` is the id of symbol-keyed kinds, `*_on` the timestamps. */
function resolveProperty(kind: EntityKind, property: string): string {
  if (property === 'symbol' && kind.idField === 'symbol') return 'id';
  if (property === 'created_on') return 'created';
  if (property === 'updated_on') return 'updated';
  return property;
}

interface SqlExpression {
  sql: string;
  bindings: Knex.RawBinding[];
}

/**
 * Every order key becomes a non-null jsonb expression, so one comparison rule (jsonb ordering)
 * serves text, numbers, timestamps and body properties alike in ORDER BY and in the keyset
 * condition. A missing value is jsonb null, which sorts below every other value. Timestamps are
 * whole microseconds (a jsonb integer), exact in a cursor, where epoch seconds with a fraction are not.
 */
function keyExpression(kind: EntityKind, property: string): SqlExpression {
  const name = resolveProperty(kind, property);
  const time = TIME_PROPERTIES[name];
  if (time) return { sql: `to_jsonb((extract(epoch from ${time}) * 1000000)::bigint)`, bindings: [] };
  const column = COLUMN_PROPERTIES[name];
  if (column) return { sql: `coalesce(to_jsonb(${column}), 'null'::jsonb)`, bindings: [] };
  if (name === 'version') return { sql: 'to_jsonb(version)', bindings: [] };
  if (name === 'tags') return { sql: 'to_jsonb(tags)', bindings: [] };
  return { sql: `coalesce(body #> ?::text[], 'null'::jsonb)`, bindings: [name.split('.')] };
}

const SQL_OPERATORS: Record<string, string> = {
  '=': '=',
  '!=': '<>',
  '<': '<',
  '<=': '<=',
  '>': '>',
  '>=': '>=',
};

/** The API shows `version` as a string and `date` as YYYYMMDD text: accept either spelling. */
function comparable(name: string, value: unknown): unknown {
  if (name === 'version' && typeof value === 'string' && /^\d{1,9}$/.test(value)) return Number(value);
  if (name === 'date' && typeof value === 'number' && Number.isInteger(value)) return String(value);
  return value;
}

function applyFilter(q: Knex.QueryBuilder, kind: EntityKind, filter: Filter): void {
  const name = resolveProperty(kind, filter.property);
  // Account-scoped objects are seen identically from every workspace: a workspace filter is moot.
  if (name === 'workspace' && kind.scope === 'account') return;
  const { operator } = filter;
  const list = operator === 'IN' || operator === 'NOT_IN';
  const values = list ? (filter.value as unknown[]) : [filter.value];
  if (name === 'tags') {
    if (!['=', '!=', 'IN', 'NOT_IN'].includes(operator)) {
      throw new InvalidInput('tags can only be filtered with =, !=, IN or NOT_IN.');
    }
    const tags = values.map((v) => {
      if (typeof v !== 'string' && typeof v !== 'number')
        throw new InvalidInput('tags are compared with strings.');
      // Compared with tags as they are stored.
      return normaliseTag(String(v));
    });
    const has = operator === '=' || operator === 'IN';
    q.whereRaw(has ? 'tags && ?::text[]' : 'NOT (tags && ?::text[])', [tags]);
    return;
  }
  const time = TIME_PROPERTIES[name];
  if (time) {
    for (const v of values) {
      if (typeof v !== 'number') {
        throw new InvalidInput(`${filter.property} is compared with epoch seconds (a number).`);
      }
    }
    // Clients see whole seconds (`created: 1700000000`); they compare with what they saw, so
    // `['created', '=', 1700000000]` matches a row created at 1700000000.123.
    const seconds = `floor(extract(epoch from ${time}))`;
    if (list) {
      q.whereRaw(`${seconds} ${operator === 'IN' ? '= ANY' : '<> ALL'}(?::numeric[])`, [values.map(String)]);
    } else {
      q.whereRaw(`${seconds} ${SQL_OPERATORS[operator]} ?::numeric`, [String(filter.value)]);
    }
    return;
  }
  // Everything else compares as jsonb, so numbers compare numerically and strings as text.
  const { sql, bindings } = keyExpression(kind, name);
  const json = values.map((v) => JSON.stringify(comparable(name, v)));
  if (list) {
    q.whereRaw(`${sql} ${operator === 'IN' ? '= ANY' : '<> ALL'}(?::jsonb[])`, [...bindings, json]);
  } else if (operator === '=' || operator === '!=') {
    q.whereRaw(`${sql} ${SQL_OPERATORS[operator]} ?::jsonb`, [...bindings, json[0]!]);
  } else {
    // jsonb orders across types (null < strings < numbers); a range only means something within
    // one type, so `['nlv', '>', 0]` leaves out a null nlv rather than ranking it.
    q.whereRaw(
      `(jsonb_typeof(${sql}) = jsonb_typeof(?::jsonb) AND ${sql} ${SQL_OPERATORS[operator]} ?::jsonb)`,
      [...bindings, json[0]!, ...bindings, json[0]!],
    );
  }
}

/** `(k1, k2, …) after (v1, v2, …)` for keys with mixed directions, as an OR of prefixes. */
function keysetCondition(keys: Array<{ sql: string; descending: boolean }>, texts: string[]): SqlExpression {
  const clauses: string[] = [];
  const bindings: Knex.RawBinding[] = [];
  keys.forEach((key, i) => {
    const parts: string[] = [];
    for (let j = 0; j < i; j++) {
      parts.push(`${keys[j]!.sql} = ?::jsonb`);
      bindings.push(texts[j]!);
    }
    parts.push(`${key.sql} ${key.descending ? '<' : '>'} ?::jsonb`);
    bindings.push(texts[i]!);
    clauses.push(`(${parts.join(' AND ')})`);
  });
  return { sql: `(${clauses.join(' OR ')})`, bindings };
}

// Microseconds of 0001-01-01 and 9999-12-31T23:59:59.999999, the timestamps a literal can spell.
const MICROS_MIN = -62_135_596_800_000_000n;
const MICROS_MAX = 253_402_300_799_999_999n;

/** A cursor's whole microseconds as an exact timestamptz literal (a JS Date keeps only milliseconds). */
function timestampLiteral(text: string): string {
  const micros = /^-?\d{1,18}$/.test(text) ? BigInt(text) : null;
  if (micros === null || micros < MICROS_MIN || micros > MICROS_MAX) {
    throw new InvalidInput(
      'Invalid page_token: pass the next_page_token of the previous response unchanged.',
    );
  }
  let millis = micros / 1000n;
  let rest = micros % 1000n;
  if (rest < 0n) {
    rest += 1000n;
    millis -= 1n;
  }
  return new Date(Number(millis)).toISOString().replace('Z', `${String(rest).padStart(3, '0')}Z`);
}

function applyProjection(
  view: Record<string, unknown>,
  projection: ListQuery['projection'],
): Record<string, unknown> {
  if (!projection) return view;
  if (projection.mode === 'include') {
    // Own fields only: `in` would also find `constructor` or `toString` on the prototype.
    return Object.fromEntries(
      projection.fields.filter((f) => Object.hasOwn(view, f)).map((f) => [f, view[f]]),
    );
  }
  return Object.fromEntries(Object.entries(view).filter(([field]) => !projection.fields.includes(field)));
}

/** Values a client wrote that PostgreSQL refuses (a numeric overflow in a forged token, say). */
function isDataException(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('22');
}

export interface ListResult {
  items: Record<string, unknown>[];
  next_page_token: string | null;
}

/**
 * One list implementation for every kind: most recent first by default, keyset paging (rows
 * inserted or deleted meanwhile neither repeat nor vanish), every `query` mode, period filters.
 *
 * The order always ends in `id`, so it is total and the cursor names one position. The default
 * order (and any order on one timestamp) runs on the raw columns, which the
 * `(account_id, kind, workspace, created_at)` index serves; other orders compare jsonb keys.
 * Both write the same cursor: per key, the jsonb text of the last row's value.
 */
export async function listEntities(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  request: ListRequest & { workspace?: unknown },
): Promise<ListResult> {
  const query = parseListQuery(request, { isId: (value) => isKindId(kind, value), hasDate: kind.hasDate });
  const workspace = scopeWorkspace(kind, request.workspace);

  const order: OrderKey[] = (
    query.order.length > 0 ? query.order : [{ property: 'created', descending: true }]
  ).map((key) => ({ ...key, property: resolveProperty(kind, key.property) }));
  for (const key of order) {
    // Their values (a portfolio's securities) would have to travel in every page_token.
    if (kind.listOmit.includes(key.property)) {
      throw new InvalidInput(`query.order: lists cannot be ordered by ${key.property}.`);
    }
  }
  if (!order.some((key) => key.property === 'id')) {
    order.push({ property: 'id', descending: order[order.length - 1]!.descending });
  }
  const signature = order.map((key) => (key.descending ? '-' : '') + key.property).join(',');
  const cursor = decodeKeysetToken(request.page_token, signature, order.length);

  const candidates = db('entities')
    .whereIn('account_id', readableAccounts(kind, actor.principal.accountId))
    .where({ kind: kind.kind });
  // A JSON query scopes by its own filters only (a workspace needs ['workspace', '=', name]).
  if (kind.scope === 'workspace' && !query.json) candidates.where({ workspace });
  if (query.id !== null) candidates.where({ id: query.id });
  if (query.tags.length) candidates.whereRaw('tags @> ?::text[]', [query.tags]);
  if (query.linkUid !== null) candidates.where({ link_uid: query.linkUid });
  if (query.namePrefix !== null) {
    candidates.whereRaw(`name LIKE ? ESCAPE '\\'`, [likePrefix(query.namePrefix)]);
  }
  for (const filter of query.filters) applyFilter(candidates, kind, filter);
  if (query.period) {
    const { start, end, field } = query.period;
    if (field === 'date') {
      if (start) candidates.where('date', '>=', start.day);
      if (end) candidates.where('date', '<=', end.day);
    } else {
      if (start) candidates.where('updated_at', '>=', start.instant);
      // The end is the last millisecond of its second or day; stored times may carry microseconds
      // (10:00:00.999500 is inside "… 10:00:00"), so compare against the next millisecond.
      if (end) candidates.where('updated_at', '<', new Date(end.instant.getTime() + 1));
    }
  }

  const time = TIME_PROPERTIES[order[0]!.property];
  const fastPath =
    time !== undefined &&
    order.length === 2 &&
    order[1]!.property === 'id' &&
    order[0]!.descending === order[1]!.descending &&
    query.distinctOn.length === 0;

  let statement: Knex.QueryBuilder;
  if (fastPath) {
    // Raw columns and a row comparison: the planner walks the created_at index instead of sorting.
    const direction = order[0]!.descending ? 'desc' : 'asc';
    statement = candidates.select(
      '*',
      db.raw(`(extract(epoch from ${time}) * 1000000)::bigint::text as __c0`),
      db.raw('to_jsonb(id)::text as __c1'),
    );
    if (cursor) {
      const id: unknown = JSON.parse(cursor[1]!);
      if (typeof id !== 'string') {
        throw new InvalidInput(
          'Invalid page_token: pass the next_page_token of the previous response unchanged.',
        );
      }
      statement.whereRaw(`(${time}, id) ${direction === 'desc' ? '<' : '>'} (?::timestamptz, ?)`, [
        timestampLiteral(cursor[0]!),
        id,
      ]);
    }
    statement.orderBy([
      { column: time, order: direction },
      { column: 'id', order: direction },
    ]);
  } else {
    const keys = order.map((key) => ({ ...keyExpression(kind, key.property), descending: key.descending }));
    candidates.select('*', ...keys.map((key, i) => db.raw(`${key.sql} as __k${i}`, key.bindings)));
    if (query.distinctOn.length) {
      // Rank within each distinct value over the whole candidate set, before any cursor applies:
      // the representative of a value is then the same row on every page.
      const partition = query.distinctOn.map((p) => keyExpression(kind, p));
      const orderSql = keys.map((k) => `${k.sql} ${k.descending ? 'DESC' : 'ASC'}`).join(', ');
      candidates.select(
        db.raw(
          `row_number() over (partition by ${partition.map((p) => p.sql).join(', ')} order by ${orderSql}) as __rank`,
          [...partition.flatMap((p) => p.bindings), ...keys.flatMap((k) => k.bindings)],
        ),
      );
    }
    const outerKeys = keys.map((key, i) => ({ sql: `__k${i}`, descending: key.descending }));
    statement = db
      .from(candidates.as('candidates'))
      .select('*', ...outerKeys.map((key, i) => db.raw(`${key.sql}::text as __c${i}`)));
    if (query.distinctOn.length) statement.where('__rank', 1);
    if (cursor) {
      const condition = keysetCondition(outerKeys, cursor);
      statement.whereRaw(condition.sql, condition.bindings);
    }
    for (const key of outerKeys) statement.orderByRaw(`${key.sql} ${key.descending ? 'DESC' : 'ASC'}`);
  }

  let rows: Array<EntityRow & Record<string, unknown>>;
  try {
    // The page and its VIEW record (the ids listed) in one statement.
    rows = await readPageAudited<EntityRow & Record<string, unknown>>(
      db,
      statement.limit(query.pageSize + 1),
      actor,
      {
        entityType: kind.entityType,
        noun: `${kind.noun} records`,
        workspace: kind.scope === 'workspace' && !query.json ? workspace : null,
        pageSize: query.pageSize,
      },
    );
  } catch (error) {
    if (isDataException(error)) {
      throw new InvalidInput('The query or page_token holds a value the database cannot compare.');
    }
    throw error;
  }

  const page = rows.slice(0, query.pageSize);
  const last = page[page.length - 1];
  const next =
    rows.length > query.pageSize && last
      ? encodeKeysetToken({ order: signature, keys: order.map((_, i) => last[`__c${i}`] as string) })
      : null;
  const items = page.map((row) => {
    const view = kind.view(toRecord(row));
    for (const field of kind.listOmit) delete view[field];
    return applyProjection(view, query.projection);
  });
  return { items, next_page_token: next };
}
