/**
 * First pages of lists in the default order (most recent first), with their VIEW records, batched
 * as reads by id are (view-batch.ts): the first pages of one kind that reach the database in one
 * event-loop turn go as one statement. Each request's page is a LATERAL subquery over the arrays of
 * the requests' keys (account, workspace, page size), walking the (account, kind, workspace,
 * created_at) index as a single list does; one INSERT writes every non-empty page's record (`Listed
 * <n> <noun>` with the ids on the page). Each page and its record still commit together, before the
 * reply; a batch of n lists costs one round trip and one commit instead of n. Rows are matched to
 * their requests by position.
 *
 * Should a batch fail, every list in it is read again on its own, so one bad request cannot fail
 * the others. Pages after the first (a cursor), other orders and filtered lists are not batched.
 */
import type { Database } from '../platform/database';
import { runPreparedSql } from '../platform/prepared-statements';
import { auditRow } from './audit-trail';
import type { Actor } from '../platform/principal';
import type { EntityKind } from './entity-store';
import { REQUEST_COLUMNS as VIEW_REQUEST_COLUMNS } from './view-batch';

/** What the batch reads for one request. */
export interface FirstPageRequest {
  readonly accountId: string;
  /** The workspace of a workspace-scoped kind; null for an account-scoped one. */
  readonly workspace: string | null;
  readonly pageSize: number;
  readonly actor: Actor;
}

interface Pending extends FirstPageRequest {
  /** The same page read on its own, for the retry. */
  readonly alone: () => Promise<Array<Record<string, unknown>>>;
  resolve(rows: Array<Record<string, unknown>>): void;
  reject(error: unknown): void;
}

/** Lists per statement; more wait for the next. */
const MAX_BATCH = 64;

/** Audit columns filled from each request (the rest are the list's own, the entity type its kind's). */
const REQUEST_COLUMNS = VIEW_REQUEST_COLUMNS.filter(([column]) => column !== 'entity_type');

/** An entity row's columns, but its body (which a list reads without what it leaves out). */
export const ROW_COLUMNS = [
  'account_id',
  'kind',
  'id',
  'workspace',
  'name',
  'description',
  'tags',
  'link_uid',
  'date',
  'created_at',
  'updated_at',
  'version',
];

/**
 * The statement for one kind: $1 positions, $2 accounts, $3 workspaces, $4 limits (page size + 1),
 * $5 page sizes, then the audit columns, then the kind, the body fields lists leave out, the noun,
 * the entity type.
 */
function statementOf(kind: EntityKind): string {
  const base = 6 + REQUEST_COLUMNS.length;
  const [kindParam, omitParam, nounParam, typeParam] = [base, base + 1, base + 2, base + 3];
  const workspaceCondition = kind.scope === 'workspace' ? 'AND e.workspace = r.workspace' : '';
  return `WITH req AS (
  SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::int[], $5::int[])
    AS r(pos, account_id, workspace, lim, page_size)
), found AS (
  SELECT r.pos AS __batch_pos, p.*,
    row_number() OVER (PARTITION BY r.pos ORDER BY p.created_at DESC, p.id DESC) AS __page_pos
  FROM req r CROSS JOIN LATERAL (
    SELECT ${ROW_COLUMNS.map((c) => `e.${c}`).join(', ')}, e.body - $${omitParam}::text[] AS body,
      (extract(epoch from e.created_at) * 1000000)::bigint::text AS __c0, to_jsonb(e.id)::text AS __c1
    FROM entities e
    WHERE e.account_id = r.account_id AND e.kind = $${kindParam}::text ${workspaceCondition}
    ORDER BY e.created_at DESC, e.id DESC
    LIMIT r.lim
  ) p
), pages AS (
  SELECT f.__batch_pos AS pos, count(*) AS n, jsonb_agg(f.id ORDER BY f.__page_pos) AS ids
  FROM found f JOIN req r ON r.pos = f.__batch_pos
  WHERE f.__page_pos <= r.page_size
  GROUP BY f.__batch_pos
), logged AS (
  INSERT INTO audit_logs (${REQUEST_COLUMNS.map(([c]) => `"${c}"`).join(', ')},
      operation, activity, entity_id, entity_name, entity_type, workspace, viewed_ids)
  SELECT ${REQUEST_COLUMNS.map(([c], i) => (c === 'location' ? `a.c${i}::jsonb` : `a.c${i}`)).join(', ')},
      'VIEW', 'Listed ' || p.n || ' ' || $${nounParam}::text, NULL, NULL, $${typeParam}::text,
      ${kind.scope === 'workspace' ? 'r.workspace' : 'NULL'}, p.ids
  FROM pages p JOIN req r ON r.pos = p.pos
  JOIN unnest($1::int[], ${REQUEST_COLUMNS.map(
    ([, type], i) => `$${6 + i}::${type === 'jsonb' ? 'text' : type}[]`,
  ).join(', ')}) AS a(pos, ${REQUEST_COLUMNS.map((_, i) => `c${i}`).join(', ')}) ON a.pos = p.pos
)
SELECT * FROM found ORDER BY __batch_pos, __page_pos`;
}

const statements = new Map<string, string>();
const queues = new WeakMap<Database, Map<string, Pending[]>>();

/**
 * The first page (page size + 1 rows, for the next-page test) of `kind` for one request, read in a
 * batch with the other first pages of this turn, its VIEW record written in the same statement.
 */
export function firstPageBatched(
  db: Database,
  kind: EntityKind,
  request: FirstPageRequest,
  alone: () => Promise<Array<Record<string, unknown>>>,
): Promise<Array<Record<string, unknown>>> {
  return new Promise((resolve, reject) => {
    let byKind = queues.get(db);
    if (byKind === undefined) {
      byKind = new Map();
      queues.set(db, byKind);
    }
    let queue = byKind.get(kind.kind);
    if (queue === undefined) {
      queue = [];
      byKind.set(kind.kind, queue);
    }
    if (queue.length === 0) setImmediate(() => flush(db, kind));
    queue.push({ ...request, alone, resolve, reject });
  });
}

function flush(db: Database, kind: EntityKind): void {
  const queue = queues.get(db)?.get(kind.kind);
  if (!queue || queue.length === 0) return;
  const batch = queue.splice(0, MAX_BATCH);
  if (queue.length > 0) setImmediate(() => flush(db, kind));
  // Whatever goes wrong, every request of the batch gets an answer: none is left waiting.
  runBatch(db, kind, batch).catch((error: unknown) => batch.forEach((p) => p.reject(error)));
}

async function runBatch(db: Database, kind: EntityKind, batch: Pending[]): Promise<void> {
  let sql = statements.get(kind.kind);
  if (sql === undefined) {
    sql = statementOf(kind);
    statements.set(kind.kind, sql);
  }
  const keys: unknown[][] = [[], [], [], [], []];
  const columns: unknown[][] = REQUEST_COLUMNS.map(() => []);
  batch.forEach((p, pos) => {
    keys[0]!.push(pos);
    keys[1]!.push(p.accountId);
    keys[2]!.push(p.workspace);
    keys[3]!.push(p.pageSize + 1);
    keys[4]!.push(p.pageSize);
    const row = auditRow(p.actor, { operation: 'VIEW', activity: '', entityId: null, entityType: '' });
    REQUEST_COLUMNS.forEach(([column], i) => columns[i]!.push(row[column] ?? null));
  });
  let rows: Array<Record<string, unknown>>;
  try {
    rows = (await runPreparedSql(db, sql, [
      ...keys,
      ...columns,
      kind.kind,
      kind.listOmit,
      `${kind.noun} records`,
      kind.entityType,
    ])) as Array<Record<string, unknown>>;
  } catch {
    // One statement for all failed: each list on its own, so a bad one fails alone.
    await Promise.all(batch.map((p) => Promise.resolve().then(p.alone).then(p.resolve, p.reject)));
    return;
  }
  const byPos = new Map<number, Array<Record<string, unknown>>>();
  for (const row of rows) {
    const pos = Number(row.__batch_pos);
    delete row.__batch_pos;
    delete row.__page_pos;
    let page = byPos.get(pos);
    if (page === undefined) byPos.set(pos, (page = []));
    page.push(row);
  }
  batch.forEach((p, pos) => p.resolve(byPos.get(pos) ?? []));
}
