import type { Knex } from 'knex';
import type { Database } from '../platform/database';
import { InvalidInput } from '../platform/errors';
import type { Actor } from '../platform/principal';
import type { LagTolerantReads } from '../platform/read-replica';
import { readPageAudited, recordPageViewed } from './audit-trail';
import { normaliseTag } from './entity-fields';
import {
  type EntityKind,
  type EntityRow,
  isKindId,
  readableAccounts,
  scopeWorkspace,
  toRecord,
} from './entity-store';
import { type Filter, type ListQuery, type ListRequest, type OrderKey, parseListQuery } from './list-query';
import { firstPageBatched, ROW_COLUMNS } from './list-batch';
import { decodeKeysetToken, encodeKeysetToken, likePrefix } from './page-token';

/** Lists of stored entities: the query language (list-query.ts) compiled to SQL, with keyset paging over any order. */

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

/** The order of a list: the query's keys (or most recent first), ending in `id` so it is total. */
function listOrder(kind: EntityKind, query: ListQuery): OrderKey[] {
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
  return order;
}

/** The rows of `kind` the caller may read that match the query's filters and period. */
function candidateRows(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  query: ListQuery,
  workspace: string | null,
): Knex.QueryBuilder {
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
  return candidates;
}

/** The timestamp column of an order on one timestamp (then `id`, same direction), which the index serves. */
function timeColumnOrder(order: OrderKey[], query: ListQuery): 'created_at' | 'updated_at' | undefined {
  const time = TIME_PROPERTIES[order[0]!.property];
  const fastPath =
    time !== undefined &&
    order.length === 2 &&
    order[1]!.property === 'id' &&
    order[0]!.descending === order[1]!.descending &&
    query.distinctOn.length === 0;
  return fastPath ? time : undefined;
}

/**
 * The row's columns, its body without the fields a list leaves out (a portfolio's securities, a
 * datastore's data): PostgreSQL drops them, so they are neither sent nor parsed.
 */
function rowColumns(db: Database, omit: string[]): Array<string | Knex.Raw> {
  return [...ROW_COLUMNS, omit.length > 0 ? db.raw('body - ?::text[] as body', [omit]) : 'body'];
}

/** Raw columns and a row comparison: the planner walks the created_at index instead of sorting. */
function timeOrderedStatement(
  db: Database,
  candidates: Knex.QueryBuilder,
  time: 'created_at' | 'updated_at',
  descending: boolean,
  cursor: string[] | null,
  columns: Array<string | Knex.Raw>,
): Knex.QueryBuilder {
  const direction = descending ? 'desc' : 'asc';
  const statement = candidates.select(
    ...columns,
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
  return statement;
}

/** Any other order: every key a jsonb expression, compared after the cursor as a keyset condition. */
function keyOrderedStatement(
  db: Database,
  kind: EntityKind,
  candidates: Knex.QueryBuilder,
  order: OrderKey[],
  distinctOn: ListQuery['distinctOn'],
  cursor: string[] | null,
  columns: Array<string | Knex.Raw>,
): Knex.QueryBuilder {
  const keys = order.map((key) => ({ ...keyExpression(kind, key.property), descending: key.descending }));
  candidates.select(...columns, ...keys.map((key, i) => db.raw(`${key.sql} as __k${i}`, key.bindings)));
  if (distinctOn.length) {
    // Rank within each distinct value over the whole candidate set, before any cursor applies:
    // the representative of a value is then the same row on every page.
    const partition = distinctOn.map((p) => keyExpression(kind, p));
    const orderSql = keys.map((k) => `${k.sql} ${k.descending ? 'DESC' : 'ASC'}`).join(', ');
    candidates.select(
      db.raw(
        `row_number() over (partition by ${partition.map((p) => p.sql).join(', ')} order by ${orderSql}) as __rank`,
        [...partition.flatMap((p) => p.bindings), ...keys.flatMap((k) => k.bindings)],
      ),
    );
  }
  const outerKeys = keys.map((key, i) => ({ sql: `__k${i}`, descending: key.descending }));
  const statement = db
    .from(candidates.as('candidates'))
    .select('*', ...outerKeys.map((key, i) => db.raw(`${key.sql}::text as __c${i}`)));
  if (distinctOn.length) statement.where('__rank', 1);
  if (cursor) {
    const condition = keysetCondition(outerKeys, cursor);
    statement.whereRaw(condition.sql, condition.bindings);
  }
  for (const key of outerKeys) statement.orderByRaw(`${key.sql} ${key.descending ? 'DESC' : 'ASC'}`);
  return statement;
}

type ListedRow = EntityRow & Record<string, unknown>;

/** What the VIEW record of a page says. */
function viewEntry(kind: EntityKind, query: ListQuery, workspace: string | null) {
  return {
    entityType: kind.entityType,
    noun: `${kind.noun} records`,
    workspace: kind.scope === 'workspace' && !query.json ? workspace : null,
    pageSize: query.pageSize,
  };
}

/** A value the client wrote that PostgreSQL cannot compare is the client's error, not ours. */
async function refusingIncomparable<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (isDataException(error)) {
      throw new InvalidInput('The query or page_token holds a value the database cannot compare.');
    }
    throw error;
  }
}

/** The page (one row more than asked, to know whether another follows) and its VIEW record, in one statement. */
function readPage(
  db: Database,
  statement: Knex.QueryBuilder,
  actor: Actor,
  kind: EntityKind,
  query: ListQuery,
  workspace: string | null,
): Promise<ListedRow[]> {
  return refusingIncomparable(() =>
    readPageAudited<ListedRow>(
      db,
      statement.limit(query.pageSize + 1),
      actor,
      viewEntry(kind, query, workspace),
    ),
  );
}

/** The views of a page, and the cursor of its last row when more rows follow. */
function pageOf(
  kind: EntityKind,
  rows: ListedRow[],
  query: ListQuery,
  order: OrderKey[],
  signature: string,
  whole: boolean,
): ListResult {
  const page = rows.slice(0, query.pageSize);
  const last = page[page.length - 1];
  const next =
    rows.length > query.pageSize && last
      ? encodeKeysetToken({ order: signature, keys: order.map((_, i) => last[`__c${i}`] as string) })
      : null;
  const items = page.map((row) => {
    const view = kind.view(toRecord(row));
    if (!whole) for (const field of kind.listOmit) delete view[field];
    return applyProjection(view, query.projection);
  });
  return { items, next_page_token: next };
}

/** A first page in the default order, without filters, of the caller's own account. */
function batchable(
  db: Database,
  actor: Actor,
  kind: EntityKind,
  query: ListQuery,
  cursor: string[] | null,
  whole: boolean,
): boolean {
  return (
    !db.isTransaction &&
    !whole &&
    cursor === null &&
    query.order.length === 0 &&
    !query.json &&
    query.id === null &&
    query.tags.length === 0 &&
    query.linkUid === null &&
    query.namePrefix === null &&
    query.filters.length === 0 &&
    query.period === null &&
    query.distinctOn.length === 0 &&
    readableAccounts(kind, actor.principal.accountId).length === 1
  );
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
  /**
   * `whole`: keep the fields lists leave out (a datastore's data, a portfolio's securities), for the
   * SDK's queries without a projection, which answer whole entities as retrieve does. `reads`: where
   * the page may be read (a replica, for a caller that has not just written); the primary otherwise.
   */
  options: { whole?: boolean; reads?: LagTolerantReads } = {},
): Promise<ListResult> {
  const query = parseListQuery(request, { isId: (value) => isKindId(kind, value), hasDate: kind.hasDate });
  const workspace = scopeWorkspace(kind, request.workspace);
  const order = listOrder(kind, query);
  const signature = order.map((key) => (key.descending ? '-' : '') + key.property).join(',');
  const cursor = decodeKeysetToken(request.page_token, signature, order.length);
  const whole = options.whole === true;
  const statementOn = (source: Database) => {
    const candidates = candidateRows(source, actor, kind, query, workspace);
    const time = timeColumnOrder(order, query);
    const columns = rowColumns(source, whole ? [] : kind.listOmit);
    return time !== undefined
      ? timeOrderedStatement(source, candidates, time, order[0]!.descending, cursor, columns)
      : keyOrderedStatement(source, kind, candidates, order, query.distinctOn, cursor, columns);
  };
  const read = () => readPage(db, statementOn(db), actor, kind, query, workspace);
  // The default first page, the one most lists ask for, is read in a batch with the others of this
  // turn (list-batch.ts): one statement and one commit for all of them.
  const onPrimary = async () =>
    batchable(db, actor, kind, query, cursor, whole)
      ? ((await firstPageBatched(
          db,
          kind,
          {
            accountId: actor.principal.accountId,
            workspace: kind.scope === 'workspace' ? workspace : null,
            pageSize: query.pageSize,
            actor,
          },
          read,
        )) as ListedRow[])
      : await read();
  const reads = db.isTransaction ? undefined : options.reads;
  if (reads === undefined) return pageOf(kind, await onPrimary(), query, order, signature, whole);
  let readOnReplica = false;
  const rows = await reads.read(actor.principal, async (source, onReplica) => {
    readOnReplica = onReplica;
    if (!onReplica) return onPrimary();
    return refusingIncomparable(
      async () => (await statementOn(source).limit(query.pageSize + 1)) as ListedRow[],
    );
  });
  // A replica takes no writes: the page's VIEW record goes to the primary once the page is read.
  if (readOnReplica) await recordPageViewed(db, rows, actor, viewEntry(kind, query, workspace));
  return pageOf(kind, rows, query, order, signature, whole);
}
