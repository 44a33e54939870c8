import type { Knex } from 'knex';
import { type Actor, recordAudit } from '../audit/audit-trail';
import type { Database } from '../db/database';
import { Conflict, InvalidInput, NotFound } from '../errors';
import { type IdKind, isId, newId } from '../ids';
import {
  type Filter,
  type ListQuery,
  type ListRequest,
  type OrderKey,
  parseListQuery,
} from '../lists/list-query';
import { epochSeconds } from '../lists/page-token';
import {
  checkDate,
  checkDescription,
  checkLinkUid,
  checkName,
  checkWorkspaceName,
  normaliseTags,
} from './entity-fields';

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
  q.where({ account_id: accountId, kind: kind.kind, id });
  if (kind.scope === 'workspace') q.where({ workspace });
  return q;
}

function auditSnapshot(kind: EntityKind, record: EntityRecord): Record<string, unknown> {
  return { ...kind.view(record), workspace: record.workspace ?? undefined };
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

/** Reads one record of the caller's account; another account's is simply not found. */
export async function findEntity(
  db: Database,
  accountId: string,
  kind: EntityKind,
  id: string,
  workspace?: unknown,
): Promise<EntityRecord> {
  const row = (await whereOne(
    db('entities').first(),
    accountId,
    kind,
    id,
    scopeWorkspace(kind, workspace),
  )) as EntityRow | undefined;
  if (!row) throw notFound(kind, id);
  return toRecord(row);
}

export async function viewEntity(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  id: string,
  workspace?: unknown,
): Promise<EntityRecord> {
  const record = await findEntity(db, actor.principal.accountId, kind, id, workspace);
  await recordAudit(db, actor, {
    operation: 'VIEW',
    activity: `Viewed ${kind.noun} ${record.name}`,
    entityId: record.id,
    entityType: kind.entityType,
    entityName: record.name,
    workspace: record.workspace,
  });
  return record;
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
      update.tags = normaliseTags(changes.tags !== undefined ? changes.tags : before.tags, description);
    }
    if (changes.linkUid !== undefined) update.link_uid = checkLinkUid(changes.linkUid);
    if (changes.date !== undefined && kind.hasDate) update.date = checkDate(changes.date);
    if (changes.body !== undefined) update.body = JSON.stringify(changes.body);
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
const TIME_PROPERTIES: Record<string, string> = {
  created: 'created_at',
  created_on: 'created_at',
  updated: 'updated_at',
  updated_on: 'updated_at',
};

function resolveProperty(kind: EntityKind, property: string): string {
  return property === 'symbol' && kind.idField === 'symbol' ? 'id' : property;
}

/**
 * Every order key becomes a non-null jsonb expression, so one comparison rule (jsonb ordering)
 * serves text, numbers, timestamps (as epoch numbers) and body properties alike in the keyset.
 */
function orderExpression(kind: EntityKind, property: string): { sql: string; bindings: Knex.RawBinding[] } {
  const name = resolveProperty(kind, property);
  if (TIME_PROPERTIES[name])
    return { sql: `to_jsonb(extract(epoch from ${TIME_PROPERTIES[name]}))`, bindings: [] };
  if (COLUMN_PROPERTIES[name])
    return { sql: `to_jsonb(coalesce(${COLUMN_PROPERTIES[name]}, ''))`, bindings: [] };
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

function applyFilter(q: Knex.QueryBuilder, kind: EntityKind, filter: Filter): void {
  const name = resolveProperty(kind, filter.property);
  const { operator, value } = filter;
  const list = operator === 'IN' || operator === 'NOT_IN';
  if (name === 'tags') {
    const values = (list ? (value as unknown[]) : [value]).map((v) => String(v));
    if (operator === '=' || operator === 'IN') q.whereRaw('tags && ?::text[]', [values]);
    else if (operator === '!=' || operator === 'NOT_IN') q.whereRaw('NOT (tags && ?::text[])', [values]);
    else throw new InvalidInput('tags can only be filtered with =, !=, IN or NOT_IN.');
    return;
  }
  if (TIME_PROPERTIES[name]) {
    const values = list ? (value as unknown[]) : [value];
    for (const v of values) {
      if (typeof v !== 'number')
        throw new InvalidInput(`${filter.property} is compared with epoch seconds (a number).`);
    }
    const column = TIME_PROPERTIES[name];
    if (list) {
      const sql = `extract(epoch from date_trunc('second', ${column})) ${operator === 'IN' ? '=' : '<>'} ${operator === 'IN' ? 'ANY' : 'ALL'}(?::float8[])`;
      q.whereRaw(sql, [values as Knex.RawBinding]);
    } else {
      q.whereRaw(`${column} ${SQL_OPERATORS[operator]} to_timestamp(?)`, [value as number]);
    }
    return;
  }
  // Everything else compares as jsonb, so numbers order numerically and strings lexically.
  const { sql, bindings } = orderExpression(kind, name);
  if (list) {
    const values = (value as unknown[]).map((v) => JSON.stringify(v ?? null));
    q.whereRaw(`${sql} ${operator === 'IN' ? '= ANY' : '<> ALL'}(?::jsonb[])`, [...bindings, values]);
  } else {
    q.whereRaw(`${sql} ${SQL_OPERATORS[operator]} ?::jsonb`, [...bindings, JSON.stringify(value ?? null)]);
  }
}

interface Cursor {
  values: unknown[];
}

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor.values), 'utf8').toString('base64url');
}

function decodeCursor(token: string | null | undefined, keys: number): Cursor | null {
  if (!token) return null;
  try {
    const values: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (Array.isArray(values) && values.length === keys) return { values };
  } catch {
    // fall through
  }
  throw new InvalidInput(
    'Invalid page_token: pass the next_page_token of the previous response unchanged, with the same query.',
  );
}

/** `(k1, k2, …) after (v1, v2, …)` for keys with mixed directions, as an OR of prefixes. */
function keysetCondition(
  keys: Array<{ sql: string; bindings: Knex.RawBinding[]; descending: boolean }>,
  values: unknown[],
) {
  const clauses: string[] = [];
  const bindings: Knex.RawBinding[] = [];
  keys.forEach((key, i) => {
    const parts: string[] = [];
    for (let j = 0; j < i; j++) {
      parts.push(`${keys[j]!.sql} = ?::jsonb`);
      bindings.push(...keys[j]!.bindings, JSON.stringify(values[j]) as string);
    }
    parts.push(`${key.sql} ${key.descending ? '<' : '>'} ?::jsonb`);
    bindings.push(...key.bindings, JSON.stringify(values[i]) as string);
    clauses.push(`(${parts.join(' AND ')})`);
  });
  return { sql: `(${clauses.join(' OR ')})`, bindings };
}

function applyProjection(
  view: Record<string, unknown>,
  projection: ListQuery['projection'],
): Record<string, unknown> {
  if (!projection) return view;
  if (projection.mode === 'include') {
    return Object.fromEntries(projection.fields.filter((f) => f in view).map((f) => [f, view[f]]));
  }
  return Object.fromEntries(Object.entries(view).filter(([field]) => !projection.fields.includes(field)));
}

export interface ListResult {
  items: Record<string, unknown>[];
  next_page_token: string | null;
}

/**
 * One list implementation for every kind: most recent first by default, keyset paging (rows
 * inserted or deleted meanwhile neither repeat nor vanish), every `query` mode, period filters.
 */
export async function listEntities(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  request: ListRequest & { workspace?: unknown },
): Promise<ListResult> {
  const query = parseListQuery(request, { isId: (value) => isKindId(kind, value), hasDate: kind.hasDate });
  const workspace = scopeWorkspace(kind, request.workspace);

  const order: OrderKey[] =
    query.order.length > 0 ? [...query.order] : [{ property: 'created', descending: true }];
  if (!order.some((key) => resolveProperty(kind, key.property) === 'id')) {
    order.push({ property: 'id', descending: order[order.length - 1]!.descending });
  }
  const keys = order.map((key) => ({ ...orderExpression(kind, key.property), descending: key.descending }));
  const cursor = decodeCursor(request.page_token, keys.length);

  const inner = db('entities').where({ account_id: actor.principal.accountId, kind: kind.kind });
  // A JSON query scopes by its own filters only (a workspace needs ['workspace', '=', name]).
  if (kind.scope === 'workspace' && !query.json) inner.where({ workspace });
  if (query.id !== null) inner.where({ id: query.id });
  if (query.tags.length) inner.whereRaw('tags @> ?::text[]', [query.tags.map((t) => t.toLowerCase())]);
  if (query.linkUid !== null) inner.where({ link_uid: query.linkUid });
  if (query.namePrefix !== null) {
    inner.whereRaw(`name LIKE ? ESCAPE '\\'`, [query.namePrefix.replace(/[\\%_]/g, (c) => '\\' + c) + '%']);
  }
  for (const filter of query.filters) applyFilter(inner, kind, filter);
  if (query.period) {
    const { start, end, field } = query.period;
    if (field === 'date') {
      if (start) inner.where('date', '>=', start.day);
      if (end) inner.where('date', '<=', end.day);
    } else {
      if (start) inner.where('updated_at', '>=', start.instant);
      if (end) inner.where('updated_at', '<=', end.instant);
    }
  }
  const keyColumns = keys.map((key, i) => db.raw(`${key.sql} as __k${i}`, key.bindings));
  inner.select('*', ...keyColumns);
  if (query.distinctOn.length) {
    const partition = query.distinctOn.map((p) => orderExpression(kind, p));
    const orderSql = keys.map((k) => `${k.sql} ${k.descending ? 'DESC' : 'ASC'}`).join(', ');
    inner.select(
      db.raw(
        `row_number() over (partition by ${partition.map((p) => p.sql).join(', ')} order by ${orderSql}) as __rank`,
        [...partition.flatMap((p) => p.bindings), ...keys.flatMap((k) => k.bindings)],
      ),
    );
  }

  const outer = db.from(inner.as('candidates'));
  if (query.distinctOn.length) outer.where('__rank', 1);
  const outerKeys = keys.map((key, i) => ({
    sql: `__k${i}`,
    bindings: [] as Knex.RawBinding[],
    descending: key.descending,
  }));
  if (cursor) {
    const condition = keysetCondition(outerKeys, cursor.values);
    outer.whereRaw(condition.sql, condition.bindings);
  }
  for (const key of outerKeys) outer.orderByRaw(`${key.sql} ${key.descending ? 'DESC' : 'ASC'}`);
  const rows = (await outer.limit(query.pageSize + 1)) as Array<EntityRow & Record<string, unknown>>;

  const page = rows.slice(0, query.pageSize);
  const last = page[page.length - 1];
  const next =
    rows.length > query.pageSize && last
      ? encodeCursor({ values: keys.map((_, i) => last[`__k${i}`]) })
      : null;
  const items = page.map((row) => {
    const view = kind.view(toRecord(row));
    for (const field of kind.listOmit) delete view[field];
    return applyProjection(view, query.projection);
  });
  if (page.length > 0) {
    await recordAudit(db, actor, {
      operation: 'VIEW',
      activity: `Listed ${page.length} ${kind.noun} records`,
      entityId: null,
      entityType: kind.entityType,
      workspace: kind.scope === 'workspace' && !query.json ? workspace : null,
      viewedIds: page.map((row) => row.id),
    });
  }
  return { items, next_page_token: next };
}
