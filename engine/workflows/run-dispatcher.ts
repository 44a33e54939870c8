import type { Knex } from 'knex';
import type { Database } from '../platform/database';
import type { InterpreterInput } from './run-input';
import type { WorkflowRunner } from './workflow-runner';

/**
 * The run outbox (migrations/20261124020000_run_outbox.ts): a run request records its execution and
 * its start request in one transaction, and a dispatcher hands the request to Temporal and deletes
 * it. An accepted run is therefore never lost (the row waits out a Temporal outage or a dead API)
 * and never started twice (the Temporal workflow id is the execution id, and the runner treats
 * "already started" as success, so a second dispatch of the same row is a no-op).
 *
 * Several dispatchers (API replicas, the request that wrote the row) may run at once: a claim takes
 * rows with `FOR UPDATE SKIP LOCKED` and moves their `available_at` ahead by a lease, so two never
 * dispatch the same row at the same time, and a dispatcher that dies mid-claim lets the lease lapse.
 */
const OUTBOX = 'workflow_run_outbox';

/** Longer than a start may take (the runner's deadline), so a live claim never lapses. */
const LEASE_SECONDS = 30;
/**
 * How long the request that wrote a row holds it for its own start (longer than the runner's 5 s
 * deadline, so a dispatcher never overlaps a live start): the row is written claimed, and the
 * request starts it without a claim round trip. A request that dies first leaves a row that any
 * dispatcher takes once this has passed.
 */
const WRITER_HOLD_SECONDS = 10;
/**
 * How long a row handed to a worker (engine/workflows/run-handoff.ts) waits for one to claim it before
 * the request that wrote it starts the run itself. A listening worker claims it within milliseconds
 * of the commit; this only matters when none does (workers stopping, a notification lost).
 */
export const HANDOFF_HOLD_MS = 250;
/** Retries back off from 250 ms up to this, so a returning Temporal is noticed within seconds. */
const MAX_BACKOFF_MS = 2_000;

/**
 * Writes a run's start request, claimed by the writer (its first attempt): the writer then calls
 * `dispatchEnqueuedRun` after its commit. Handed off (`handoff`), the row is for a listening worker
 * to claim (its insert notifies `pas_run_start`), held for the writer only HANDOFF_HOLD_MS.
 */
export async function enqueueRun(
  trx: Knex.Transaction | Database,
  input: InterpreterInput,
  handoff = false,
): Promise<void> {
  await runOutboxInsert(trx, input, handoff);
}

/** The insert of `enqueueRun`, to run inside a caller's statement (a data-modifying CTE). */
export function runOutboxInsert(
  db: Knex.Transaction | Database,
  input: InterpreterInput,
  handoff = false,
): Knex.QueryBuilder {
  return db(OUTBOX).insert({
    execution_id: input.executionId,
    input: JSON.stringify(input),
    attempts: 1,
    available_at: db.raw('now() + make_interval(secs => ?)', [
      handoff ? HANDOFF_HOLD_MS / 1000 : WRITER_HOLD_SECONDS,
    ]),
    ...(handoff ? { handoff: true } : {}),
  });
}

interface ClaimedRun {
  execution_id: string;
  input: InterpreterInput;
  attempts: number;
  run_status: string | null;
}

/**
 * Claims due rows (all of them, or the one of `executionId`); `handedOff`: the row of `executionId`
 * if it is handed off and no one has claimed it yet, due or not (a worker answering its notice).
 */
async function claim(
  db: Database,
  limit: number,
  executionId: string | null,
  handedOff = false,
): Promise<ClaimedRun[]> {
  const which = handedOff ? 'handoff AND attempts = 1' : 'available_at <= now()';
  const { rows } = (await db.raw(
    `UPDATE ${OUTBOX} o
        SET available_at = now() + make_interval(secs => ?), attempts = o.attempts + 1
      WHERE o.execution_id IN (
              SELECT execution_id FROM ${OUTBOX}
               WHERE ${which} ${executionId === null ? '' : 'AND execution_id = ?'}
               ORDER BY available_at
               LIMIT ?
               FOR UPDATE SKIP LOCKED)
  RETURNING o.execution_id, o.input, o.attempts,
            (SELECT e.run_status FROM workflow_executions e WHERE e.id = o.execution_id) AS run_status`,
    executionId === null ? [LEASE_SECONDS, limit] : [LEASE_SECONDS, executionId, limit],
  )) as { rows: ClaimedRun[] };
  return rows;
}

export type DispatchOutcome = 'started' | 'retry' | 'skipped';

async function dispatchClaimed(
  db: Database,
  runner: WorkflowRunner,
  run: ClaimedRun,
  afterStart: (deleted: Promise<void>) => Promise<void> = (deleted) => deleted,
): Promise<DispatchOutcome> {
  // A run that already ended (the row outlived its start, or an operator closed the run) is not
  // started again, even after Temporal has forgotten the first start (namespace retention).
  if (run.run_status !== 'RUNNING') {
    await db(OUTBOX).where({ execution_id: run.execution_id }).delete();
    return 'skipped';
  }
  try {
    await runner.start(run.input);
  } catch (error) {
    const backoffMs = Math.min(MAX_BACKOFF_MS, 250 * 2 ** Math.min(run.attempts - 1, 10));
    await db(OUTBOX)
      .where({ execution_id: run.execution_id })
      .update({
        available_at: db.raw('now() + make_interval(secs => ?)', [backoffMs / 1000]),
        last_error: error instanceof Error ? error.message.slice(0, 1000) : String(error),
      });
    return 'retry';
  }
  await afterStart(
    db(OUTBOX)
      .where({ execution_id: run.execution_id })
      .delete()
      .then(() => undefined),
  );
  return 'started';
}

/**
 * Starts a run whose start request the caller has just committed with `enqueueRun` (so it holds the
 * row: no claim round trip, and the run is RUNNING). Resolves once Temporal has the start (or
 * refused it): the row's delete goes on behind it, since a row that outlives a start only makes a
 * later dispatch find the run already started and delete it. Never throws: whatever fails is
 * retried by a dispatcher.
 */
export async function dispatchEnqueuedRun(
  db: Database,
  runner: WorkflowRunner,
  input: InterpreterInput,
): Promise<DispatchOutcome> {
  try {
    return await dispatchClaimed(
      db,
      runner,
      { execution_id: input.executionId, input, attempts: 1, run_status: 'RUNNING' },
      async (deleted) => {
        deleted.catch(() => undefined);
      },
    );
  } catch {
    return 'retry';
  }
}

/**
 * Dispatches one run now, if it is still waiting and no one else holds it (the request that wrote
 * it calls this right after its commit). Never throws: whatever fails is retried by a dispatcher.
 */
export async function dispatchRun(
  db: Database,
  runner: WorkflowRunner,
  executionId: string,
): Promise<DispatchOutcome> {
  try {
    const [run] = await claim(db, 1, executionId);
    return run ? await dispatchClaimed(db, runner, run) : 'skipped';
  } catch {
    return 'retry';
  }
}

/**
 * Starts a run handed off to workers (`runOutboxInsert(…, true)`), if no one has claimed it yet: the
 * worker that hears of it calls this with its eager runner. Never throws.
 */
export async function dispatchHandedOff(
  db: Database,
  runner: WorkflowRunner,
  executionId: string,
): Promise<DispatchOutcome> {
  try {
    const [run] = await claim(db, 1, executionId, true);
    return run ? await dispatchClaimed(db, runner, run) : 'skipped';
  } catch {
    return 'retry';
  }
}

/** Dispatches up to `limit` runs that are due, one claim at a time; answers what happened. */
export async function dispatchDueRuns(
  db: Database,
  runner: WorkflowRunner,
  limit = 50,
): Promise<Record<DispatchOutcome, number>> {
  const counts: Record<DispatchOutcome, number> = { started: 0, retry: 0, skipped: 0 };
  const claimed = await claim(db, limit, null);
  for (const run of claimed) {
    const outcome = await dispatchClaimed(db, runner, run);
    counts[outcome] += 1;
    // Temporal refused one: the others would wait out the same outage one deadline each. Release
    // them for the next round instead of holding their lease for 30 s.
    if (outcome === 'retry') {
      const rest = claimed.slice(claimed.indexOf(run) + 1).map((r) => r.execution_id);
      if (rest.length > 0) {
        await db(OUTBOX).whereIn('execution_id', rest).update({ available_at: db.fn.now() });
      }
      counts.retry += rest.length;
      break;
    }
  }
  return counts;
}

export interface RunDispatcher {
  /** Resolves when the loop has stopped (a round in progress finishes first). */
  stop(): Promise<void>;
}

/**
 * The dispatch loop: every `intervalMs` it starts the runs that are due. The API process runs it
 * (runs are accepted there, and every replica may run it: claims skip each other's rows); the
 * request that writes a run dispatches it at once, so the loop only picks up what that could not
 * start (Temporal down, the process died after the commit).
 */
export function startRunDispatcher(
  db: Database,
  runner: WorkflowRunner,
  options: { intervalMs?: number; onError?: (error: unknown) => void } = {},
): RunDispatcher {
  const intervalMs = options.intervalMs ?? 1_000;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let round: Promise<void> = Promise.resolve();
  const tick = () => {
    round = dispatchDueRuns(db, runner).then(
      () => undefined,
      (error: unknown) => options.onError?.(error),
    );
    void round.then(() => {
      if (!stopped) timer = setTimeout(tick, intervalMs);
    });
  };
  timer = setTimeout(tick, 0);
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await round;
    },
  };
}
