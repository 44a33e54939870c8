/**
 * Reads of one stored object by id, with their VIEW records, batched: the reads that reach the
 * database in one event-loop turn go as one statement that finds every requested row and inserts
 * the VIEW record of each one found (a data-modifying CTE, as `readOneAudited` does for one read).
 * Each read and its record still commit together, before the reply, in that statement's
 * transaction; a batch of n reads costs one round trip and one commit instead of n. Rows are
 * matched to their requests by position, on the full key (account, kind, id, and workspace where
 * the kind has one), so a request only ever gets the row its own key names.
 *
 * Should a batch fail (say, one request's text is refused), every read in it is retried on its
 * own, so one bad request cannot fail the others.
 */
import type { Database } from '../platform/database';
import { runPreparedSql } from '../platform/prepared-statements';
import { auditRow, readOneAudited } from './audit-trail';
import type { Actor } from '../platform/principal';
import type { Knex } from 'knex';

/** The key of one entity read: the primary key, plus the workspace for workspace-scoped kinds. */
export interface EntityKey {
  readonly accountId: string;
  readonly kind: string;
  readonly id: string;
  /** null: the kind has no workspace, any row of the key matches. */
  readonly workspace: string | null;
}

interface Pending {
  readonly key: EntityKey;
  readonly actor: Actor;
  readonly entry: { entityType: string; activityPrefix: string };
  /** The single-read statement, for the retry on its own. */
  readonly alone: () => Knex.QueryBuilder;
  resolve(row: Record<string, unknown> | undefined): void;
  reject(error: unknown): void;
}

/** Reads per statement; more wait for the next. */
const MAX_BATCH = 256;

/**
 * Audit columns the batch fills from each request (the rest come from the row found); the list
 * batch (list-batch.ts) fills the same ones, but for the entity type, which it has per kind.
 */
export const REQUEST_COLUMNS = [
  ['id', 'text'],
  ['account_id', 'text'],
  ['user_id', 'text'],
  ['created_at', 'timestamptz'],
  ['source', 'text'],
  ['status', 'text'],
  ['entity_type', 'text'],
  ['workflow_id', 'text'],
  ['workflow_name', 'text'],
  ['workflow_execution_id', 'text'],
  ['user_email', 'text'],
  ['proxy_admin_email', 'text'],
  ['credential_id', 'text'],
  ['credential_type', 'text'],
  ['ip', 'text'],
  ['user_agent', 'text'],
  ['user_agent_pretty', 'text'],
  ['location', 'jsonb'],
] as const;

const KEY_PARAMS = 5; // pos, account_id, kind, id, workspace
const PREFIX_PARAM = KEY_PARAMS + REQUEST_COLUMNS.length + 1;

const SQL = `WITH req AS (
  SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::text[])
    AS r(pos, account_id, kind, id, workspace)
), found AS (
  SELECT r.pos AS __batch_pos, e.* FROM req r JOIN entities e
    ON e.account_id = r.account_id AND e.kind = r.kind AND e.id = r.id
   AND (r.workspace IS NULL OR e.workspace = r.workspace)
), logged AS (
  INSERT INTO audit_logs (${REQUEST_COLUMNS.map(([c]) => `"${c}"`).join(', ')},
      operation, activity, entity_id, entity_name, workspace)
  SELECT ${REQUEST_COLUMNS.map(([c], i) => (c === 'location' ? `a.c${i}::jsonb` : `a.c${i}`)).join(', ')},
      'VIEW', a.prefix || f.name, f.id, f.name, f.workspace
  FROM found f JOIN unnest($1::int[], ${REQUEST_COLUMNS.map(
    ([, type], i) => `$${KEY_PARAMS + 1 + i}::${type === 'jsonb' ? 'text' : type}[]`,
  ).join(', ')}, $${PREFIX_PARAM}::text[])
    AS a(pos, ${REQUEST_COLUMNS.map((_, i) => `c${i}`).join(', ')}, prefix)
    ON a.pos = f.__batch_pos
)
SELECT * FROM found`;

const queues = new WeakMap<Database, Pending[]>();

/**
 * Finds the row of `key` and writes `<activityPrefix><name>` as its VIEW record, in a batch with the
 * other reads of this turn; resolves with the row, or undefined (and no record) when none is found.
 * `alone` builds the same read as a query, used when the batch fails.
 */
export function viewOneBatched<Row>(
  db: Database,
  key: EntityKey,
  actor: Actor,
  entry: { entityType: string; activityPrefix: string },
  alone: () => Knex.QueryBuilder,
): Promise<Row | undefined> {
  return new Promise<Row | undefined>((resolve, reject) => {
    let queue = queues.get(db);
    if (queue === undefined) {
      queue = [];
      queues.set(db, queue);
    }
    if (queue.length === 0) setImmediate(() => flush(db));
    queue.push({
      key,
      actor,
      entry,
      alone,
      resolve: resolve as Pending['resolve'],
      reject,
    });
  });
}

function flush(db: Database): void {
  const queue = queues.get(db);
  if (!queue || queue.length === 0) return;
  const batch = queue.splice(0, MAX_BATCH);
  if (queue.length > 0) setImmediate(() => flush(db));
  // Whatever goes wrong, every request of the batch gets an answer: none is left waiting.
  runBatch(db, batch).catch((error: unknown) => batch.forEach((p) => p.reject(error)));
}

async function runBatch(db: Database, batch: Pending[]): Promise<void> {
  const keys: unknown[][] = Array.from({ length: KEY_PARAMS }, () => []);
  const columns: unknown[][] = REQUEST_COLUMNS.map(() => []);
  const prefixes: string[] = [];
  batch.forEach((p, pos) => {
    keys[0]!.push(pos);
    keys[1]!.push(p.key.accountId);
    keys[2]!.push(p.key.kind);
    keys[3]!.push(p.key.id);
    keys[4]!.push(p.key.workspace);
    const row = auditRow(p.actor, {
      operation: 'VIEW',
      activity: '',
      entityId: null,
      entityType: p.entry.entityType,
    });
    REQUEST_COLUMNS.forEach(([column], i) => columns[i]!.push(row[column] ?? null));
    prefixes.push(p.entry.activityPrefix);
  });
  let rows: Array<Record<string, unknown>>;
  try {
    rows = (await runPreparedSql(db, SQL, [...keys, ...columns, prefixes])) as Array<Record<string, unknown>>;
  } catch {
    // One statement for all failed: each read on its own, so a bad one fails alone.
    await Promise.all(
      batch.map((p) =>
        Promise.resolve()
          .then(() => readOneAudited<Record<string, unknown>>(db, p.alone(), p.actor, p.entry))
          .then(p.resolve, p.reject),
      ),
    );
    return;
  }
  const byPos = new Map<number, Record<string, unknown>>();
  for (const row of rows) {
    const pos = Number(row.__batch_pos);
    delete row.__batch_pos;
    byPos.set(pos, row);
  }
  batch.forEach((p, pos) => p.resolve(byPos.get(pos)));
}
