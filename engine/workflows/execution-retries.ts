import { recordAudit } from '../store/audit-trail';
import type { Actor } from '../platform/principal';
import type { Database } from '../platform/database';
import { Conflict, InvalidInput } from '../platform/errors';
import { newId } from '../platform/ids';
import { parsePeriod } from '../store/period';
import { workflowExecutionOf } from './execution-queries';
import {
  insertWorkflowExecution,
  runDefinitionOf,
  type Trigger,
  type WorkerExecutionRow,
  type WorkflowExecutionRow,
} from './execution-records';
import { localStepsOf } from './local-steps';
import { enqueueRun } from './run-dispatcher';
import type { InterpreterInput } from './run-input';
import { type WorkflowRunner } from './workflow-runner';
import { dispatchSoon } from './run-workflow';
import { workersListen } from './run-handoff';
import { findWorkflow, type StoredWorkflow } from './workflow-store';

/**
 * Re-running a failed execution from its failed step. A retry is a new execution of the definition
 * the failed one ran (not the workflow as edited since), with the same parameters. Every worker
 * execution that COMPLETED in the failed run is copied into the retry before it starts, result and
 * all (`reused_from` names the original): the interpreter walks the graph as usual, and each
 * copied step answers its recorded outcome as a retried activity would, without running its
 * script again, so its effects are not made twice. The failed worker, the branches it stopped and
 * everything after them run anew.
 */

/** The most executions one bulk retry starts: each is a transaction and a Temporal start. */
export const RETRY_BATCH_MAX = 50;

const UNIQUE_VIOLATION = '23505';

function alreadyRetried(failedId: string, retryId: string): Conflict {
  return new Conflict(
    `Workflow execution ${failedId} was already retried as ${retryId}; retry that one if it failed too.`,
  );
}

/** The trail's line for a retry: an EXECUTE of the new execution that names the one it re-runs. */
function retryActivity(workflow: StoredWorkflow, failedId: string): string {
  return `Started workflow execution of ${workflow.name}, retrying ${failedId} from its failed step`;
}

/** One COMPLETED step of the failed run, as a step of the retry (a new id, the same outcome). */
function reusedStep(step: WorkerExecutionRow, retry: WorkflowExecutionRow, now: Date) {
  return {
    id: newId('workerExecution'),
    account_id: step.account_id,
    workflow_execution_id: retry.id,
    workflow_id: retry.workflow_id,
    workflow_name: retry.workflow_name,
    worker_id: step.worker_id,
    worker_name: step.worker_name,
    worker_type: step.worker_type,
    trigger: retry.trigger,
    status: 'COMPLETED',
    parallel_index: step.parallel_index,
    // When and how long the result took to compute: it was computed then, not now.
    created_at: step.created_at,
    started_at: step.started_at,
    ended_at: step.ended_at,
    duration: step.duration,
    cpu_time: step.cpu_time,
    updated_at: now,
    result: JSON.stringify(step.result ?? null),
    input_params: step.input_params === null ? null : JSON.stringify(step.input_params),
    logs: JSON.stringify(step.logs ?? []),
    error_message: null,
    reused_from: step.id,
  };
}

async function retryOne(
  db: Database,
  runner: WorkflowRunner,
  actor: Actor,
  workflow: StoredWorkflow,
  failed: WorkflowExecutionRow,
  trigger: Trigger,
): Promise<WorkflowExecutionRow> {
  if (failed.run_status !== 'FAILED') {
    throw new Conflict(
      `Workflow execution ${failed.id} is ${failed.run_status}: only a FAILED execution can be retried.`,
    );
  }
  const earlier = (await db('workflow_executions').where({ retry_of: failed.id }).first('id')) as
    { id: string } | undefined;
  if (earlier) throw alreadyRetried(failed.id, earlier.id);
  const definition = (await runDefinitionOf(db, failed)) ?? (await runner.startedDefinition(failed.id));
  if (definition === null) {
    throw new Conflict(
      `Workflow execution ${failed.id} cannot be retried: the definition it ran is no longer known ` +
        '(recorded before retries were possible, and past Temporal’s retention). Run the workflow again.',
    );
  }
  const completed = (await db('worker_executions')
    .where({ workflow_execution_id: failed.id, status: 'COMPLETED' })
    .orderBy([{ column: 'created_at' }, { column: 'parallel_index' }])) as WorkerExecutionRow[];
  const localSteps = await localStepsOf(db, workflow.accountId, definition.workers);
  let retry: WorkflowExecutionRow;
  let enqueued: InterpreterInput | undefined;
  // Started by a listening worker, for Temporal's eager start (run-handoff.ts), as a new run is.
  const handoff = workersListen(db);
  try {
    retry = await db.transaction(async (trx) => {
      const row = await insertWorkflowExecution(trx, {
        accountId: workflow.accountId,
        workflowId: workflow.id,
        workflowName: workflow.name,
        workspace: workflow.workspace,
        trigger,
        startedWorkerId: definition.plan.starterId,
        enderWorkerId: definition.plan.enderId,
        parameters: failed.parameters,
        userId: actor.principal.userId,
        credentialId: actor.principal.credentialId,
        credentialType: actor.principal.credentialType,
        definition,
        retryOf: failed.id,
      });
      const now = new Date();
      if (completed.length > 0) {
        await trx('worker_executions').insert(completed.map((step) => reusedStep(step, row, now)));
      }
      await recordAudit(trx, actor, {
        operation: 'EXECUTE',
        activity: retryActivity(workflow, failed.id),
        entityId: row.id,
        entityType: 'WorkflowExecution',
        entityName: workflow.name,
        workspace: workflow.workspace,
      });
      // Its start request goes to the run outbox in the same transaction, as for every run: a retry
      // accepted while Temporal is down starts when it answers, never twice.
      enqueued = {
        executionId: row.id,
        accountId: workflow.accountId,
        workflowId: workflow.id,
        workflowName: workflow.name,
        workspace: workflow.workspace,
        trigger,
        workers: definition.workers,
        plan: definition.plan,
        localSteps,
        retryOf: failed.id,
      };
      await enqueueRun(trx, enqueued, handoff);
      return row;
    });
  } catch (error) {
    // Another request retried it between the check and the insert (retry_of is unique).
    if ((error as { code?: unknown }).code === UNIQUE_VIOLATION) {
      const winner = (await db('workflow_executions').where({ retry_of: failed.id }).first('id')) as
        { id: string } | undefined;
      if (winner) throw alreadyRetried(failed.id, winner.id);
    }
    throw error;
  }
  await dispatchSoon(db, runner, enqueued!, 'behind-reply', handoff);
  return retry;
}

/**
 * `POST /workflows/:id/workflow_executions/:execution_id/retry`: 404 for an unknown workflow or an
 * execution that is not one of its runs (another account's included), 409 unless it is FAILED and
 * not yet retried.
 */
export async function retryExecution(
  db: Database,
  runner: WorkflowRunner,
  actor: Actor,
  input: { workflowId: string; executionId: string; workspace?: unknown; trigger: Trigger },
): Promise<WorkflowExecutionRow> {
  const workflow = await findWorkflow(db, actor.principal.accountId, input.workflowId, input.workspace);
  const failed = await workflowExecutionOf(
    db,
    workflow.accountId,
    workflow.id,
    input.executionId,
    workflow.workspace,
  );
  return retryOne(db, runner, actor, workflow, failed, input.trigger);
}

export interface BulkRetry {
  /** The retries started by this call, oldest failed execution first. */
  started: WorkflowExecutionRow[];
  /** Failed executions of the batch that cannot be retried, and why. */
  skipped: Array<{ workflow_execution_id: string; message: string }>;
  /** FAILED executions of the period still without a retry after this call (the skipped included). */
  remaining: number;
}

/**
 * `POST /workflows/:id/retry_failed`: retries the FAILED executions of the workflow started
 * (`created`) in the period and not retried yet, oldest first, at most `limit` per call. Calling
 * again goes on where the last call stopped: the retried ones have their retry and are not picked
 * again. A period is required, in the list endpoints' format (start, end, date_time; UTC, inclusive).
 */
export async function retryFailedExecutions(
  db: Database,
  runner: WorkflowRunner,
  actor: Actor,
  input: {
    workflowId: string;
    workspace?: unknown;
    start?: string | null;
    end?: string | null;
    dateTime?: string | null;
    limit?: number;
    trigger: Trigger;
  },
): Promise<BulkRetry> {
  const workflow = await findWorkflow(db, actor.principal.accountId, input.workflowId, input.workspace);
  const period = parsePeriod({ start: input.start, end: input.end, dateTime: input.dateTime });
  if (period === null) {
    throw new InvalidInput('Give the period whose failed executions to retry: start, end or date_time.');
  }
  const limit = input.limit ?? RETRY_BATCH_MAX;
  if (!Number.isInteger(limit) || limit < 1 || limit > RETRY_BATCH_MAX) {
    throw new InvalidInput(`limit must be an integer from 1 to ${RETRY_BATCH_MAX}.`);
  }
  const candidates = () => {
    const q = db('workflow_executions as e')
      .where({
        'e.account_id': workflow.accountId,
        'e.workflow_id': workflow.id,
        'e.workspace': workflow.workspace,
        'e.run_status': 'FAILED',
      })
      .whereNotExists(db('workflow_executions as r').select(db.raw('1')).whereRaw('r.retry_of = e.id'));
    if (period.start) q.where('e.created_at', '>=', period.start.instant);
    if (period.end) q.where('e.created_at', '<=', period.end.instant);
    return q;
  };
  const batch = (await candidates()
    .select('e.*')
    .orderBy([
      { column: 'e.created_at', order: 'asc' },
      { column: 'e.id', order: 'asc' },
    ])
    .limit(limit)) as WorkflowExecutionRow[];
  const result: BulkRetry = { started: [], skipped: [], remaining: 0 };
  for (const failed of batch) {
    try {
      result.started.push(await retryOne(db, runner, actor, workflow, failed, input.trigger));
    } catch (error) {
      // Retried meanwhile, or its definition is lost: said in the answer; the others go on.
      if (!(error instanceof Conflict)) throw error;
      result.skipped.push({ workflow_execution_id: failed.id, message: error.message });
    }
  }
  const [counted] = (await candidates().count({ count: '*' })) as Array<{ count: string | number }>;
  result.remaining = Number(counted?.count ?? 0);
  return result;
}
