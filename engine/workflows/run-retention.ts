import { setTimeout as delay } from 'node:timers/promises';
import type { Knex } from 'knex';
import type { Database } from '../platform/database';
import { NotFound } from '../platform/errors';
import { runHistoryRemoved } from '../platform/metrics';
import type { AuditSource } from '../platform/principal';
import { recordAudit } from '../store/audit-trail';

/**
 * Run history retention: finished runs older than a cutoff leave the database with their steps
 * (`worker_executions`) and SDK journal (`sdk_calls`), and webhook payloads received before it go
 * too (they are not tied to a run: a triggered run keeps its own copy in `parameters`).
 *
 * A run is removed only when nothing can still need it:
 * - it has finished (SUCCEEDED, FAILED or the reserved CANCELED) and ended before the cutoff;
 * - no run names it in `retry_of` (a retry, running or not, points at the run it re-ran; the
 *   failed run goes once its retries have gone, oldest link last);
 * - none of its steps is still RUNNING and it has no start request in the outbox (its Temporal
 *   workflow may still be writing: the interpreter closes the run as its very last act);
 * - its failure alert is not still waiting to be sent (run_alerts PENDING or SENDING).
 *
 * It works in short transactions of at most `batchSize` runs, each one statement, so the API and
 * the workers never wait on it: a batch locks its runs FOR UPDATE SKIP LOCKED, passing over any
 * row a writer holds (a retry being recorded, an alert being marked), and takes them next time.
 * Between batches it pauses, so a large backlog drains without hogging the database.
 */

/** The statuses a run never leaves: CANCELED is reserved by the spec and never written, but final. */
export const FINISHED_RUN_STATUSES = ['SUCCEEDED', 'FAILED', 'CANCELED'] as const;

export const PURGE_BATCH_SIZE = 500;
export const PURGE_PAUSE_MS = 100;

/** Rows removed, per table. */
export interface RunHistoryCounts {
  workflow_executions: number;
  worker_executions: number;
  sdk_calls: number;
  webhook_payloads: number;
}

export const HISTORY_TABLES = [
  'workflow_executions',
  'worker_executions',
  'sdk_calls',
  'webhook_payloads',
] as const satisfies ReadonlyArray<keyof RunHistoryCounts>;

export const noRows = (): RunHistoryCounts => ({
  workflow_executions: 0,
  worker_executions: 0,
  sdk_calls: 0,
  webhook_payloads: 0,
});

/** Who removes the history, for the audit trail: the retention job, or an operator's command. */
export interface PurgeActor {
  source: AuditSource;
  /** Shown as the audit record's user e-mail where the source is a person's (`PLATFORM`). */
  userEmail: string;
  /** Said in the record's activity: `the run retention job (RUN_RETENTION_DAYS=90)`. */
  label: string;
}

export interface RunHistoryScope {
  /** Runs that ended, and payloads received, strictly before this instant. */
  before: Date;
  /** Only this account's history; all accounts when absent. */
  accountId?: string | null;
}

export interface PurgeResult {
  before: Date;
  removed: RunHistoryCounts;
  /** The same, per account that lost any row. */
  accounts: Map<string, RunHistoryCounts>;
  batches: number;
  /** Stopped by `signal` before the history was drained. */
  interrupted: boolean;
}

type SqlPart = { sql: string; bindings: Knex.RawBinding[] };

/**
 * Run `alias` has finished before `before` and nothing still works on it: no step RUNNING, no start
 * request waiting, no failure alert to send. The status list is spelled out in the text: the partial
 * index workflow_executions_finished is only used when it matches word for word.
 */
function finishedAndIdleSql(alias: string, before: Date): SqlPart {
  const statuses = FINISHED_RUN_STATUSES.map((status) => `'${status}'`).join(', ');
  return {
    sql: `${alias}.run_status IN (${statuses}) AND ${alias}.ended_at < ?
    AND NOT EXISTS (SELECT 1 FROM worker_executions w
                     WHERE w.workflow_execution_id = ${alias}.id AND w.status = 'RUNNING')
    AND NOT EXISTS (SELECT 1 FROM workflow_run_outbox o WHERE o.execution_id = ${alias}.id)
    AND NOT EXISTS (SELECT 1 FROM run_alerts a
                     WHERE a.execution_id = ${alias}.id AND a.status IN ('PENDING', 'SENDING'))`,
    bindings: [before],
  };
}

function withAccount(part: SqlPart, alias: string, accountId: string | null | undefined): SqlPart {
  if (!accountId) return part;
  return { sql: `${part.sql} AND ${alias}.account_id = ?`, bindings: [...part.bindings, accountId] };
}

/** The runs a batch may remove now (alias `e`): finished and idle, and no run retries them. */
export function removableRunsSql(scope: RunHistoryScope): SqlPart {
  const own = finishedAndIdleSql('e', scope.before);
  return withAccount(
    {
      sql: `${own.sql}
    AND NOT EXISTS (SELECT 1 FROM workflow_executions r WHERE r.retry_of = e.id)`,
      bindings: own.bindings,
    },
    'e',
    scope.accountId,
  );
}

/**
 * The runs a whole purge removes (alias `e`): finished and idle, and so is every retry that follows
 * them (retry_of is unique, so the retries of a run form one chain). A batch removes the newest
 * link first (removableRunsSql); an archive holds the whole chain.
 */
export function purgeableRunsSql(scope: RunHistoryScope): SqlPart {
  const own = finishedAndIdleSql('e', scope.before);
  const later = finishedAndIdleSql('x', scope.before);
  return withAccount(
    {
      sql: `${own.sql}
    AND NOT EXISTS (
      WITH RECURSIVE retries(id) AS (
        SELECT r.id FROM workflow_executions r WHERE r.retry_of = e.id
        UNION ALL
        SELECT r.id FROM workflow_executions r JOIN retries ON r.retry_of = retries.id
      )
      SELECT 1 FROM retries JOIN workflow_executions x ON x.id = retries.id
       WHERE NOT coalesce(${later.sql}, false))`,
      bindings: [...own.bindings, ...later.bindings],
    },
    'e',
    scope.accountId,
  );
}

/** The payloads `scope` may remove (alias `p`). */
export function removablePayloadsSql(scope: RunHistoryScope): SqlPart {
  const bindings: Knex.RawBinding[] = [scope.before];
  let sql = 'p.received_at < ?';
  if (scope.accountId) {
    sql += ' AND p.account_id = ?';
    bindings.push(scope.accountId);
  }
  return { sql, bindings };
}

type AccountCounts = Map<string, RunHistoryCounts>;

function add(into: AccountCounts, accountId: string, table: keyof RunHistoryCounts, n: number): void {
  const counts = into.get(accountId) ?? noRows();
  counts[table] += n;
  into.set(accountId, counts);
}

/**
 * Refusals a batch is tried again after: a retry recorded between the batch's snapshot and its lock
 * (retry_of's foreign key; the next snapshot sees the retry and leaves its run), or a deadlock with
 * a writer, which PostgreSQL breaks by failing one side.
 */
const RETRYABLE = new Set(['23503', '40P01']);

/**
 * Removes one batch of runs with their steps and SDK calls, in one statement (one short
 * transaction); `ids` narrows it to those runs (an archive's). Answers the rows removed per account.
 *
 * A retry recorded in the instant between this statement's snapshot and its lock makes the
 * database refuse the delete (retry_of's foreign key): nothing is removed, and drainInBatches tries
 * again.
 */
export async function removeRunBatch(
  db: Database,
  scope: RunHistoryScope,
  limit: number,
  ids?: readonly string[],
): Promise<AccountCounts> {
  const removable = removableRunsSql(scope);
  const only = ids ? ' AND e.id = ANY(?::text[])' : '';
  const rows = (
    await db.raw(
      `WITH picked AS (
         SELECT e.id FROM workflow_executions e
          WHERE ${removable.sql}${only}
          ORDER BY e.ended_at
          LIMIT ?
          FOR UPDATE OF e SKIP LOCKED
       ), steps AS (
         DELETE FROM worker_executions w USING picked WHERE w.workflow_execution_id = picked.id
         RETURNING w.id, w.account_id
       ), calls AS (
         DELETE FROM sdk_calls c USING steps WHERE c.worker_execution_id = steps.id
         RETURNING steps.account_id
       ), runs AS (
         DELETE FROM workflow_executions e USING picked WHERE e.id = picked.id
         RETURNING e.account_id
       )
       SELECT account_id, 'workflow_executions' AS table_name, count(*)::int AS n FROM runs GROUP BY 1
       UNION ALL SELECT account_id, 'worker_executions', count(*)::int FROM steps GROUP BY 1
       UNION ALL SELECT account_id, 'sdk_calls', count(*)::int FROM calls GROUP BY 1`,
      [...removable.bindings, ...(ids ? [ids as string[]] : []), limit],
    )
  ).rows as Array<{ account_id: string; table_name: keyof RunHistoryCounts; n: number }>;
  const counts: AccountCounts = new Map();
  for (const row of rows) add(counts, row.account_id, row.table_name, row.n);
  return counts;
}

/** Removes one batch of webhook payloads (narrowed to `ids` when given); answers them per account. */
export async function removePayloadBatch(
  db: Database,
  scope: RunHistoryScope,
  limit: number,
  ids?: readonly string[],
): Promise<AccountCounts> {
  const removable = removablePayloadsSql(scope);
  const only = ids ? ' AND p.id = ANY(?::text[])' : '';
  const rows = (
    await db.raw(
      `WITH picked AS (
         SELECT p.id FROM webhook_payloads p
          WHERE ${removable.sql}${only}
          ORDER BY p.received_at
          LIMIT ?
          FOR UPDATE SKIP LOCKED
       ), gone AS (
         DELETE FROM webhook_payloads w USING picked WHERE w.id = picked.id RETURNING w.account_id
       )
       SELECT account_id, count(*)::int AS n FROM gone GROUP BY 1`,
      [...removable.bindings, ...(ids ? [ids as string[]] : []), limit],
    )
  ).rows as Array<{ account_id: string; n: number }>;
  const counts: AccountCounts = new Map();
  for (const row of rows) add(counts, row.account_id, 'webhook_payloads', row.n);
  return counts;
}

/** Adds a batch's counts to the pass's, and to the Prometheus counter as it goes. */
function tally(into: AccountCounts, batch: AccountCounts): number {
  let runsAndPayloads = 0;
  for (const [accountId, counts] of batch) {
    for (const table of HISTORY_TABLES) {
      if (counts[table] === 0) continue;
      add(into, accountId, table, counts[table]);
      runHistoryRemoved.inc({ table }, counts[table]);
    }
    runsAndPayloads += counts.workflow_executions + counts.webhook_payloads;
  }
  return runsAndPayloads;
}

export function totalOf(accounts: AccountCounts): RunHistoryCounts {
  const total = noRows();
  for (const counts of accounts.values()) for (const table of HISTORY_TABLES) total[table] += counts[table];
  return total;
}

export interface BatchPacing {
  batchSize?: number;
  /** Pause between two batches (ms). */
  pauseMs?: number;
  /** Stops the work between two batches (a process shutting down). */
  signal?: AbortSignal;
}

/**
 * Runs `batch` until it removes nothing more. A batch the database refused (see RETRYABLE) is tried
 * again after the pause, a few times in a row at most. Answers whether `signal` stopped it first.
 */
export async function drainInBatches(
  batch: () => Promise<AccountCounts>,
  into: AccountCounts,
  pacing: BatchPacing,
  onBatch: () => void,
): Promise<boolean> {
  let refused = 0;
  for (;;) {
    if (pacing.signal?.aborted) return true;
    let removed = -1;
    try {
      removed = tally(into, await batch());
      refused = 0;
    } catch (error) {
      if (!RETRYABLE.has(String((error as { code?: unknown }).code)) || ++refused > 3) throw error;
    }
    onBatch();
    if (removed === 0) return false;
    await delay(pacing.pauseMs ?? PURGE_PAUSE_MS);
  }
}

/** The cutoff, as the trail says it. */
const instant = (at: Date) => at.toISOString();

/** `3 workflow execution(s), 9 worker execution(s), …`: what a pass or an archive holds. */
export function describeCounts(counts: RunHistoryCounts): string {
  return (
    `${counts.workflow_executions} workflow execution(s), ${counts.worker_executions} worker execution(s), ` +
    `${counts.sdk_calls} SDK call(s), ${counts.webhook_payloads} webhook payload(s)`
  );
}

/**
 * One DELETE record per account that lost history: what went, up to when, who removed it (and the
 * archive that holds it, if any). The trail is where an account's owner learns that old runs are
 * gone; written after the batches, once per pass, not once per batch.
 */
export async function auditRemovedHistory(
  db: Database,
  actor: PurgeActor,
  before: Date,
  accounts: AccountCounts,
  archive?: { file: string; sha256: string },
): Promise<void> {
  for (const [accountId, counts] of accounts) {
    await recordAudit(
      db,
      {
        principal: {
          accountId,
          userId: '',
          userEmail: actor.userEmail,
          isOwner: false,
          permissions: [],
          credentialId: '',
          credentialType: 'API_KEY',
        },
        source: actor.source,
        ip: null,
        userAgent: null,
      },
      {
        operation: 'DELETE',
        activity: `Removed run history finished before ${instant(before)} (${actor.label}): ${describeCounts(counts)}`,
        entityId: null,
        entityType: 'WorkflowExecution',
        after: { before: instant(before), removed: counts, ...(archive ? { archive } : {}) },
      },
    );
  }
}

/** An account given by id must exist: a typo must not read as "nothing to remove". */
export async function checkAccount(db: Database, accountId: string | null | undefined): Promise<void> {
  if (!accountId) return;
  const found = await db('accounts').where({ id: accountId }).first('id');
  if (!found) throw new NotFound(`Account ${accountId} not found.`);
}

/**
 * Removes the history `scope` covers, in batches (see the top of this file), then writes the
 * audit records. Safe to run in several processes at once: a row is taken by one batch only.
 */
export async function purgeRunHistory(
  db: Database,
  scope: RunHistoryScope,
  actor: PurgeActor,
  pacing: BatchPacing = {},
): Promise<PurgeResult> {
  await checkAccount(db, scope.accountId);
  const limit = pacing.batchSize ?? PURGE_BATCH_SIZE;
  const accounts: AccountCounts = new Map();
  let batches = 0;
  const counted = () => {
    batches += 1;
  };
  let interrupted = await drainInBatches(() => removeRunBatch(db, scope, limit), accounts, pacing, counted);
  if (!interrupted) {
    interrupted = await drainInBatches(() => removePayloadBatch(db, scope, limit), accounts, pacing, counted);
  }
  await auditRemovedHistory(db, actor, scope.before, accounts);
  return { before: scope.before, removed: totalOf(accounts), accounts, batches, interrupted };
}

/** The cutoff of a retention of `days`: that many whole days before `now`. */
export function retentionCutoff(days: number, now: Date = new Date()): Date {
  return new Date(now.getTime() - days * 86_400_000);
}

/** Arbitrary constant naming the advisory lock held by the one process running a retention pass. */
export const RETENTION_LOCK_KEY = 728_204_140;

/**
 * One retention pass, if no other process is running one: the advisory lock is held on a
 * connection of its own for the pass, so a scaled-out deployment (several workers) purges from
 * one place at a time; the others find it taken and skip their turn. Answers null when skipped.
 */
export async function runRetentionPass(
  db: Database,
  days: number,
  pacing: BatchPacing = {},
): Promise<PurgeResult | null> {
  const connection = await db.client.acquireConnection();
  try {
    const [row] = (
      await db.raw('SELECT pg_try_advisory_lock(?) AS locked', [RETENTION_LOCK_KEY]).connection(connection)
    ).rows as Array<{ locked: boolean }>;
    if (!row?.locked) return null;
    try {
      return await purgeRunHistory(
        db,
        { before: retentionCutoff(days) },
        {
          source: 'SCHEDULER',
          userEmail: 'System',
          label: `the run retention job, RUN_RETENTION_DAYS=${days}`,
        },
        pacing,
      );
    } finally {
      await db
        .raw('SELECT pg_advisory_unlock(?)', [RETENTION_LOCK_KEY])
        .connection(connection)
        .catch(() => undefined);
    }
  } finally {
    await db.client.releaseConnection(connection);
  }
}

export interface RunRetention {
  close(): Promise<void>;
}

/** How often a worker runs the pass: hourly is plenty for a retention counted in days. */
export const RETENTION_INTERVAL_MS = 60 * 60_000;

/**
 * The worker's retention job (RUN_RETENTION_DAYS set): a pass shortly after start, then every
 * `intervalMs`. Closing stops a pass between two batches; what it removed so far is audited.
 */
export function startRunRetention(
  db: Database,
  days: number,
  options: BatchPacing & {
    intervalMs?: number;
    firstDelayMs?: number;
    onPass?: (result: PurgeResult) => void;
    onError?: (error: unknown) => void;
  } = {},
): RunRetention {
  const stop = new AbortController();
  let running: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | null = null;
  const pass = () => {
    timer = null;
    running = runRetentionPass(db, days, { ...options, signal: stop.signal })
      .then(
        (result) => {
          if (result) options.onPass?.(result);
        },
        (error: unknown) => options.onError?.(error),
      )
      .finally(() => {
        if (!stop.signal.aborted) schedule(options.intervalMs ?? RETENTION_INTERVAL_MS);
      });
  };
  const schedule = (ms: number) => {
    timer = setTimeout(pass, ms);
    timer.unref();
  };
  schedule(options.firstDelayMs ?? 60_000);
  return {
    async close() {
      stop.abort();
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}

/** The log line of a pass that removed something (or of a command). */
export function describePurge(result: PurgeResult): string {
  return `removed ${describeCounts(result.removed)} finished before ${instant(result.before)}${
    result.interrupted ? ' (stopped before the end: the rest goes next time)' : ''
  }`;
}
